// Test support for the agent tests: a context on an io_context and a stand-in for the
// runner that drains an agent's stream the way the runner contract says (docs/agents.md):
// every non-partial event is appended to ctx.session() and its state_delta applied there
// before the next event is asked for.
#ifndef LIBRETTO_TESTS_LLM_AGENT_HARNESS_HPP
#define LIBRETTO_TESTS_LLM_AGENT_HARNESS_HPP

#include <libretto/agent/llm_agent.hpp>
#include <libretto/model/scripted_model.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace harness {

namespace asio = boost::asio;
namespace lb = libretto;
namespace json = boost::json;

/// A root context with the user's message already in its session (as the runner does).
/// `max_llm_calls`: the invocation's budget of model calls (invocation_options' default
/// unless given).
inline lb::invocation_context make_ctx(asio::io_context& io, const std::string& user_text, bool resumable = false,
                                       json::object state = {}, std::optional<std::size_t> max_llm_calls = {}) {
    lb::invocation_options o;
    if (max_llm_calls) o.max_llm_calls = *max_llm_calls;
    o.app_name = "app";
    o.user_id = "u1";
    o.session_id = "s1";
    o.agent_name = "assistant";
    o.executor = io.get_executor();
    o.is_resumable = resumable;
    o.input_content = user_text;
    o.state = std::move(state);
    lb::invocation_context ctx(std::move(o));
    lb::event u = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text(user_text));
    u.invocation_id = ctx.invocation_id();
    u.session_id = ctx.session_id();
    ctx.session().events.push_back(std::move(u));
    return ctx;
}

struct run_result {
    std::vector<lb::event> events; ///< everything the stream yielded, partials included
    std::exception_ptr error;
    double seconds = 0;

    std::vector<const lb::event*> stored() const {
        std::vector<const lb::event*> v;
        for (const auto& e : events)
            if (!e.partial) v.push_back(&e);
        return v;
    }
    std::string stored_texts() const {
        std::string s;
        for (const auto* e : stored()) s += "[" + e->author + ":" + std::string(to_string(e->type)) + ":" + e->text() + "]";
        return s;
    }
};

/// The runner's duty, by hand.
inline void store(lb::invocation_context& ctx, const lb::event& e) {
    if (e.partial) return;
    lb::apply_delta(ctx.session().state, e.actions.state_delta);
    ctx.session().events.push_back(e);
    ctx.session().events.modify_back().sequence = static_cast<std::int64_t>(ctx.session().events.size());
}

inline asio::awaitable<void> consume(lb::event_stream* s, lb::invocation_context* ctx, run_result* r) {
    for (;;) {
        auto next = s->next();
        std::optional<lb::event> e = co_await std::move(next);
        if (!e) break;
        store(*ctx, *e);
        r->events.push_back(std::move(*e));
    }
}

/// Runs `s` to its end on `io`, storing as the runner would.
inline run_result drain(asio::io_context& io, lb::invocation_context& ctx, lb::event_stream s) {
    run_result r;
    auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(io, consume(&s, &ctx, &r), [&r](std::exception_ptr p) { r.error = p; });
    io.run();
    io.restart();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

inline std::string error_text(const std::exception_ptr& p) {
    if (!p) return {};
    try {
        std::rethrow_exception(p);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "?";
    }
}

/// Sleeps `ms` on the current executor (for tools that take time).
inline asio::awaitable<void> sleep_ms(int ms) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(std::chrono::milliseconds(ms));
    co_await t.async_wait(asio::use_awaitable);
}

inline json::object obj(std::string_view text) { return json::parse(text).as_object(); }

} // namespace harness

#endif
