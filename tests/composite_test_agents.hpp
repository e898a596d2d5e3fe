// Scripted leaf agents and helpers shared by the composite-agent tests
// (sequential_agent_test.cpp, parallel_agent_test.cpp, loop_agent_test.cpp).
#ifndef LIBRETTO_TESTS_COMPOSITE_TEST_AGENTS_HPP
#define LIBRETTO_TESTS_COMPOSITE_TEST_AGENTS_HPP

#include <libretto/agent/agent.hpp>
#include <libretto/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <initializer_list>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ctest {

namespace asio = boost::asio;
namespace lb = libretto;
using ms = std::chrono::milliseconds;

/// One scripted event.
struct step {
    std::string text;
    ms at{0};                  ///< emitted not before the run's start + `at`
    bool escalate = false;     ///< the event carries actions.escalate
    bool end_invocation = false; ///< calls ctx.end_invocation() before emitting
    bool fail = false;         ///< throws std::runtime_error instead of emitting
    std::string tool_call_id;  ///< non-empty: the event carries a tool call with this id
};

/// What a leaf observed, shared by every copy of the leaf.
struct probe {
    int runs = 0;
    int finished = 0;
    int cancelled = 0; ///< runs that saw their timer or emit cancelled
    int produced = 0;  ///< events handed to emit()
    std::vector<std::string> branches;    ///< ctx.branch() per run
    std::vector<std::string> agent_names; ///< ctx.agent_name() per run
    std::vector<bool> state_clear;        ///< no agent_state and not end-of-agent at the start of each run
};

/// A leaf that yields its steps. Options act per run (1-based run numbers).
struct leaf {
    std::string name_;
    std::vector<step> steps{};
    int escalate_from_run = 0;      ///< >0: from that run on, the last event escalates
    int end_invocation_on_run = 0;  ///< >0: that run's first event ends the invocation
    bool record_state = false;      ///< stores {"run": n} as its own agent state
    std::shared_ptr<probe> p = std::make_shared<probe>();

    const std::string& name() const { return name_; }
    std::string_view description() const { return "a scripted leaf"; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
    lb::event_stream run(lb::invocation_context ctx) const;
};

inline bool is_cancellation(const boost::system::error_code& ec) {
    return ec == asio::error::operation_aborted || ec == lb::make_error_code(lb::errc::cancelled);
}

inline asio::awaitable<void> leaf_body(const leaf* self, lb::invocation_context ctx, lb::event_writer out) {
    std::shared_ptr<probe> p = self->p;
    const int run_no = ++p->runs;
    p->branches.push_back(ctx.branch());
    p->agent_names.push_back(ctx.agent_name());
    p->state_clear.push_back(ctx.agent_state(self->name_) == nullptr && !ctx.is_end_of_agent(self->name_));
    if (self->record_state) {
        lb::json::object st;
        st["run"] = run_no;
        ctx.set_agent_state(self->name_, std::move(st));
    }
    const auto start = std::chrono::steady_clock::now();
    try {
        for (std::size_t i = 0; i < self->steps.size(); ++i) {
            const step& s = self->steps[i];
            if (s.at.count() > 0) {
                asio::steady_timer t(ctx.get_executor(), start + s.at);
                co_await t.async_wait(asio::use_awaitable);
            }
            if (s.fail) throw std::runtime_error("boom from " + self->name_);
            lb::event e = lb::event::make(lb::event_type::agent_message, self->name_, lb::content::from_text(s.text));
            e.branch = ctx.branch();
            e.invocation_id = ctx.invocation_id();
            if (s.escalate || (self->escalate_from_run > 0 && run_no >= self->escalate_from_run &&
                               i + 1 == self->steps.size()))
                e.actions.escalate = true;
            if (!s.tool_call_id.empty()) {
                lb::tool_call_part call;
                call.tool_call_id = s.tool_call_id;
                call.tool_name = "long_job";
                e.content.parts.push_back(std::move(call));
            }
            if (s.end_invocation || (i == 0 && self->end_invocation_on_run == run_no)) ctx.end_invocation();
            ++p->produced;
            co_await out.emit(std::move(e));
        }
    } catch (const boost::system::system_error& e) {
        if (is_cancellation(e.code())) ++p->cancelled;
        throw;
    }
    ++p->finished;
}

struct leaf_producer {
    const leaf* self;
    lb::invocation_context ctx;
    asio::awaitable<void> operator()(lb::event_writer out) { return leaf_body(self, std::move(ctx), std::move(out)); }
};

inline lb::event_stream leaf::run(lb::invocation_context ctx) const {
    asio::any_io_executor ex = ctx.get_executor();
    return lb::event_stream(std::move(ex), leaf_producer{this, std::move(ctx)});
}

/// `n` immediate steps named "<prefix>0", "<prefix>1", ...
inline std::vector<step> quick_steps(const std::string& prefix, int n) {
    std::vector<step> v;
    for (int i = 0; i < n; ++i) {
        step s;
        s.text = prefix + std::to_string(i);
        v.push_back(std::move(s));
    }
    return v;
}

/// Steps with the given texts, no delay.
inline std::vector<step> texts(std::initializer_list<const char*> ts) {
    std::vector<step> v;
    for (const char* t : ts) {
        step s;
        s.text = t;
        v.push_back(std::move(s));
    }
    return v;
}

inline step at(std::string text, int millis) {
    step s;
    s.text = std::move(text);
    s.at = ms(millis);
    return s;
}

inline lb::invocation_context make_ctx(asio::io_context& io, std::string branch = {}, bool resumable = false) {
    lb::invocation_options o;
    o.executor = io.get_executor();
    o.branch = std::move(branch);
    o.is_resumable = resumable;
    o.session_id = "s1";
    return lb::invocation_context(std::move(o));
}

/// "author:text@branch" (own events of composites: "author:<type>@branch").
inline std::string tag(const lb::event& e) {
    std::string body = e.type == lb::event_type::agent_message ? e.text() : std::string(lb::to_string(e.type));
    return e.author + ":" + body + "@" + e.branch;
}

struct outcome {
    std::vector<lb::event> events;
    std::exception_ptr error;
    std::vector<std::string> tags() const {
        std::vector<std::string> v;
        for (const auto& e : events) v.push_back(tag(e));
        return v;
    }
    /// The message of the error (empty if none).
    std::string what() const {
        if (!error) return {};
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            return e.what();
        }
    }
};

inline asio::awaitable<void> collect(lb::event_stream* s, outcome* out) {
    try {
        for (;;) {
            asio::awaitable<std::optional<lb::event>> next = s->next();
            std::optional<lb::event> e = co_await std::move(next);
            if (!e) break;
            out->events.push_back(std::move(*e));
        }
    } catch (...) {
        out->error = std::current_exception();
    }
}

/// Runs `s` to its end on `io`.
inline outcome drain(asio::io_context& io, lb::event_stream s) {
    outcome o;
    asio::co_spawn(io, collect(&s, &o), asio::detached);
    io.run();
    io.restart();
    return o;
}

template <class A>
outcome run_agent(const A& agent, lb::invocation_context ctx) {
    asio::io_context& io = static_cast<asio::io_context&>(ctx.get_executor().context());
    return drain(io, agent.run(std::move(ctx)));
}

/// Waits `d` on the current executor.
inline asio::awaitable<void> sleep_for(ms d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

/// Reads `first` events, then cancels the stream (if `cancel`); records what arrived.
inline asio::awaitable<void> read_then_cancel(lb::event_stream* s, int first, outcome* out, bool cancel = true) {
    try {
        for (int i = 0; i < first; ++i) {
            asio::awaitable<std::optional<lb::event>> next = s->next();
            std::optional<lb::event> e = co_await std::move(next);
            if (!e) co_return;
            out->events.push_back(std::move(*e));
        }
    } catch (...) {
        out->error = std::current_exception();
        co_return;
    }
    if (cancel) s->cancel();
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline bool has_code(const std::exception_ptr& ep, lb::errc code) {
    try {
        std::rethrow_exception(ep);
    } catch (const boost::system::system_error& e) {
        return e.code() == lb::make_error_code(code);
    } catch (...) {
        return false;
    }
}

} // namespace ctest

#endif
