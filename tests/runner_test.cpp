// runner/runner.hpp: one turn of a session (store, agent, stream), serialisation, resume,
// cancellation, errors. Most cases run against memory_store and jsonl_store.
#include <libretto/runner/runner.hpp>
#include <libretto/runner/rewind.hpp>

#include <libretto/agent/llm_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/tool/function_tool.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include "runner_test_support.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;
namespace json = boost::json;
using namespace std::chrono_literals;

// ---- test agents ------------------------------------------------------------------------

lb::event make_event(const lb::invocation_context& ctx, std::string author, lb::content c,
                     lb::event_type t = lb::event_type::agent_message) {
    lb::event e = lb::event::make(t, std::move(author), std::move(c));
    e.invocation_id = ctx.invocation_id();
    e.branch = ctx.branch();
    return e;
}

struct leaf {
    std::string name_;
    std::string_view name() const { return name_; }
    std::string_view description() const { return "a test agent"; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
};

/// Emits a fixed list of steps.
struct step {
    std::string text;
    bool partial = false;
    json::object delta{};
    std::optional<std::string> transfer{};
};
struct script_agent : leaf {
    std::vector<step> steps;
    lb::event_stream run(lb::invocation_context ctx) const {
        std::vector<lb::event> v;
        for (const auto& s : steps) {
            lb::event e = make_event(ctx, name_, lb::content::from_text(s.text));
            e.partial = s.partial;
            e.actions.state_delta = s.delta;
            e.actions.transfer_to_agent = s.transfer;
            v.push_back(std::move(e));
        }
        return lb::make_stream(ctx.get_executor(), std::move(v));
    }
};

/// Emits n events on a rendezvous stream, each saying how many events ctx.session() holds
/// and whether the state has key "temp:t".
struct history_agent : leaf {
    int n = 3;
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, int n, lb::event_writer out) {
        for (int i = 0; i < n; ++i) {
            std::string text = "seen " + std::to_string(ctx.session().events.size());
            if (ctx.session().state.contains("temp:t")) text += " temp";
            if (ctx.state().contains("temp:t")) text += " ctx-temp";
            lb::event e = make_event(ctx, name, lb::content::from_text(std::move(text)));
            co_await out.emit(std::move(e));
        }
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        int n;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, n, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        lb::stream_options so;
        so.capacity = 0;
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx), name_, n}, so);
    }
};

/// Emits n events on a rendezvous stream and keeps, after each emit, the node the context's
/// session holds for it.
struct node_agent : leaf {
    int n = 2;
    std::shared_ptr<std::vector<lb::event_list::pointer_type>> seen = std::make_shared<std::vector<lb::event_list::pointer_type>>();
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, int n,
                                      std::shared_ptr<std::vector<lb::event_list::pointer_type>> seen, lb::event_writer out) {
        for (int i = 0; i < n; ++i) {
            lb::event e = make_event(ctx, name, lb::content::from_text("n" + std::to_string(i)));
            co_await out.emit(std::move(e));
            const lb::event_list& evs = ctx.session().events;
            seen->push_back(evs.shared(evs.size() - 1));
        }
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        int n;
        std::shared_ptr<std::vector<lb::event_list::pointer_type>> seen;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, n, seen, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        lb::stream_options so;
        so.capacity = 0;
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx), name_, n, seen}, so);
    }
};

/// Emits n events on a stream with room for 16 (so an ordinary consumer may lag behind)
/// and records, after each emit(), whether the writer said the consumer takes items inside
/// emit() and whether ctx.session() then held the event, stored (a sequence). With
/// `on_strand` its stream runs on a strand of the context's executor instead.
struct inline_probe_agent : leaf {
    int n = 3;
    bool on_strand = false;
    struct record {
        bool consumed_on_emit = false;
        bool stored = false;
    };
    std::shared_ptr<std::vector<record>> seen = std::make_shared<std::vector<record>>();
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, int n,
                                      std::shared_ptr<std::vector<record>> seen, lb::event_writer out) {
        for (int i = 0; i < n; ++i) {
            lb::event e = make_event(ctx, name, lb::content::from_text("p" + std::to_string(i)));
            const std::string id = e.id;
            co_await out.emit(std::move(e));
            const lb::event_list& evs = ctx.session().events;
            const bool stored = !evs.empty() && evs.back().id == id && evs.back().sequence > 0;
            seen->push_back({out.consumed_on_emit(), stored});
        }
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        int n;
        std::shared_ptr<std::vector<record>> seen;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, n, seen, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        lb::stream_options so;
        so.capacity = 16;
        lb::event_stream::executor_type ex = ctx.get_executor();
        if (on_strand) ex = asio::make_strand(ex);
        return lb::event_stream(ex, producer{std::move(ctx), name_, n, seen}, so);
    }
};

/// "start", a wait, "end"; logs "<session>:start" / "<session>:end" as it runs.
struct slow_agent : leaf {
    std::vector<std::string>* log = nullptr;
    std::chrono::milliseconds wait{20};
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, std::vector<std::string>* log,
                                      std::chrono::milliseconds wait, lb::event_writer out) {
        log->push_back(ctx.session_id() + ":start");
        lb::event a = make_event(ctx, name, lb::content::from_text("start"));
        co_await out.emit(std::move(a));
        asio::steady_timer timer(ctx.get_executor());
        timer.expires_after(wait);
        co_await timer.async_wait(asio::use_awaitable);
        log->push_back(ctx.session_id() + ":end");
        lb::event b = make_event(ctx, name, lb::content::from_text("end"));
        co_await out.emit(std::move(b));
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        std::vector<std::string>* log;
        std::chrono::milliseconds wait;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, log, wait, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx), name_, log, wait});
    }
};

/// Requests a tool call (never answered), then waits 10 s; records how the wait ended.
struct hanging_agent : leaf {
    std::shared_ptr<std::string> outcome = std::make_shared<std::string>();
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, std::shared_ptr<std::string> outcome,
                                      lb::event_writer out) {
        lb::content c;
        c.parts.emplace_back(lb::tool_call_part{"call_h", "slow_tool", {}, {}});
        lb::event call = make_event(ctx, name, std::move(c));
        co_await out.emit(std::move(call));
        lb::event p = make_event(ctx, name, lb::content::from_text("thinking..."));
        p.partial = true;
        co_await out.emit(std::move(p));
        asio::steady_timer timer(ctx.get_executor());
        timer.expires_after(10s);
        *outcome = "waiting";
        try {
            co_await timer.async_wait(asio::use_awaitable);
            *outcome = "timer expired";
        } catch (const boost::system::system_error&) {
            *outcome = "cancelled";
            throw;
        }
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        std::shared_ptr<std::string> outcome;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, outcome, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx), name_, outcome});
    }
};

/// One event, then an exception.
struct throwing_agent : leaf {
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, lb::event_writer out) {
        lb::event e = make_event(ctx, name, lb::content::from_text("before"));
        co_await out.emit(std::move(e));
        throw std::runtime_error("boom");
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx), name_});
    }
};

/// Pauses on long-running call "lr1" until a response for it is in the session, then
/// answers with the response's result.
struct pausing_agent : leaf {
    lb::event_stream run(lb::invocation_context ctx) const {
        std::vector<lb::event> v;
        const lb::tool_response_part* answer = nullptr;
        for (const auto& e : ctx.session().events)
            for (const auto& r : e.tool_responses())
                if (r.tool_call_id == "lr1" && e.invocation_id == ctx.invocation_id()) answer = &r;
        if (!answer) {
            ctx.long_running_tool_ids().insert("lr1");
            lb::content c;
            c.parts.emplace_back(lb::tool_call_part{"lr1", "approve", {{"amount", 10}}, {}});
            lb::event call = make_event(ctx, name_, std::move(c));
            const bool pause = ctx.should_pause_invocation(call);
            v.push_back(std::move(call));
            if (!pause) v.push_back(make_event(ctx, name_, lb::content::from_text("did not pause")));
        } else {
            std::string text = "approved: " + json::serialize(answer->result) + " input: " + ctx.input_content().value_or("?");
            v.push_back(make_event(ctx, name_, lb::content::from_text(std::move(text))));
        }
        return lb::make_stream(ctx.get_executor(), std::move(v));
    }
};

/// A parent with two children, for transfer.
struct router_agent : leaf {
    std::vector<lb::any_agent> children;
    std::vector<lb::agent_ref> sub_agents() const {
        std::vector<lb::agent_ref> v;
        for (const auto& c : children) v.push_back(c.ref());
        return v;
    }
    lb::event_stream run(lb::invocation_context ctx) const {
        std::vector<lb::event> v;
        lb::event e = make_event(ctx, name_, lb::content::from_text("handing over to helper"));
        e.actions.transfer_to_agent = "helper";
        v.push_back(std::move(e));
        return lb::make_stream(ctx.get_executor(), std::move(v));
    }
};

/// Appends to its own session through a second copy (as another process would), then
/// emits an event: the runner's append of it is stale.
struct intruder_agent : leaf {
    lb::memory_store* store = nullptr;
    static asio::awaitable<void> body(lb::invocation_context ctx, std::string name, lb::memory_store* store,
                                      lb::event_writer out) {
        lb::session_key k{ctx.app_name(), ctx.user_id(), ctx.session_id()};
        auto get = store->async_get(std::move(k), lb::get_options{}, asio::use_awaitable);
        std::optional<lb::session> other = co_await std::move(get);
        lb::event theirs = lb::event::make(lb::event_type::agent_message, "other-process", lb::content::from_text("x"));
        auto append = store->async_append(*other, std::move(theirs), asio::use_awaitable);
        co_await std::move(append);
        lb::event mine = make_event(ctx, name, lb::content::from_text("mine"));
        co_await out.emit(std::move(mine));
    }
    struct producer {
        lb::invocation_context ctx;
        std::string name;
        lb::memory_store* store;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, name, store, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx), name_, store});
    }
};

// ---- llm_agent pieces --------------------------------------------------------------------

struct add_args {
    int a;
    int b;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))
int add(add_args x) { return x.a + x.b; }

struct booking_args {
    std::string city;
};
BOOST_DESCRIBE_STRUCT(booking_args, (), (city))
json::value ask_approval(booking_args) { return nullptr; } // the answer comes later, from a human

static_assert(lb::agent<script_agent>);
static_assert(lb::agent<history_agent>);
static_assert(lb::agent<slow_agent>);
static_assert(lb::agent<hanging_agent>);
static_assert(lb::agent<throwing_agent>);
static_assert(lb::agent<pausing_agent>);
static_assert(lb::agent<router_agent>);
static_assert(lb::agent<intruder_agent>);

// ---- a store that fails ----------------------------------------------------------------

/// Forwards to `Inner`, but the `fail_at`-th append (1-based) fails with `code`, and says so
/// in the caller's diagnostics ("failing_store: append <n> failed on purpose").
template <class Inner>
struct failing_store {
    using executor_type = typename Inner::executor_type;
    Inner* inner;
    int fail_at = 0;
    lb::errc code = lb::errc::io_error;
    int appends = 0;

    executor_type get_executor() const { return inner->get_executor(); }
    template <asio::completion_token_for<lb::create_signature> Token = lb::default_completion_token_t>
    auto async_create(lb::create_options o, lb::diagnostics& d, Token&& t = {}) {
        return inner->async_create(std::move(o), d, std::forward<Token>(t));
    }
    template <asio::completion_token_for<lb::get_signature> Token = lb::default_completion_token_t>
    auto async_get(lb::session_key k, lb::get_options o, lb::diagnostics& d, Token&& t = {}) {
        return inner->async_get(std::move(k), std::move(o), d, std::forward<Token>(t));
    }
    template <asio::completion_token_for<lb::list_signature> Token = lb::default_completion_token_t>
    auto async_list(lb::list_options o, lb::diagnostics& d, Token&& t = {}) {
        return inner->async_list(std::move(o), d, std::forward<Token>(t));
    }
    template <asio::completion_token_for<lb::delete_signature> Token = lb::default_completion_token_t>
    auto async_delete(lb::session_key k, lb::diagnostics& d, Token&& t = {}) {
        return inner->async_delete(std::move(k), d, std::forward<Token>(t));
    }
    template <asio::completion_token_for<lb::append_signature> Token = lb::default_completion_token_t>
    auto async_append(lb::session& s, lb::event e, lb::diagnostics& d, Token&& t = {}) {
        return asio::async_initiate<Token, lb::append_signature>(
            [this](auto h, lb::session* s, lb::event e, lb::diagnostics* d) {
                if (++appends == fail_at) {
                    d->assign("failing_store: append " + std::to_string(appends) + " failed on purpose");
                    auto ex = inner->get_executor();
                    asio::post(ex, asio::append(std::move(h), make_error_code(code), std::int64_t{0}));
                    return;
                }
                inner->async_append(*s, std::move(e), *d, std::move(h));
            },
            t, &s, std::move(e), &d);
    }
};
static_assert(lb::session_store<failing_store<lb::memory_store>>);

// ---- a compaction strategy and a signer, to see the runner's hooks ---------------------

/// Plans a summary of everything but the turn's last two events, every turn, rolling up the
/// previous one (its range starts where the newest summary's starts).
struct every_turn_compaction {
    std::optional<lb::compaction_plan> plan(const lb::session_view& v) const {
        const auto& ev = v.session.events;
        if (ev.size() < 3) return std::nullopt;
        std::int64_t first = ev.front().sequence;
        for (std::size_t i = ev.size(); i-- > 0;)
            if (ev[i].is_compaction()) {
                first = ev[i].actions.compaction->first_sequence;
                break;
            }
        return lb::compaction_plan{first, ev[ev.size() - 3].sequence};
    }
    asio::awaitable<std::optional<lb::event>> async_compact(const lb::session_view& v, lb::compaction_plan p) const {
        lb::event e = lb::event::make(lb::event_type::agent_message, "compaction",
                                      lb::content::from_text("summary of " + std::to_string(p.first_sequence) + ".." +
                                                             std::to_string(p.last_sequence)));
        lb::event_compaction c;
        c.first_sequence = p.first_sequence;
        c.last_sequence = p.last_sequence;
        c.summary = e.text();
        c.event_count = static_cast<std::int64_t>(v.session.events.size()) - 2;
        e.actions.compaction = c;
        co_return e;
    }
};
static_assert(lb::compaction_strategy<every_turn_compaction>);

/// Plans, every turn, a summary of what no compaction covers yet except the turn's last two
/// events: ranges follow each other, so a load from the newest compaction on leaves the
/// older events out (sliding_window's behaviour without overlap).
struct incremental_compaction {
    std::optional<lb::compaction_plan> plan(const lb::session_view& v) const {
        const auto& ev = v.session.events;
        if (ev.size() < 3) return std::nullopt;
        std::int64_t first = ev.front().sequence;
        for (std::size_t i = ev.size(); i-- > 0;)
            if (ev[i].is_compaction()) {
                first = ev[i].actions.compaction->last_sequence + 1;
                break;
            }
        const std::int64_t last = ev[ev.size() - 3].sequence;
        if (last < first) return std::nullopt;
        return lb::compaction_plan{first, last};
    }
    asio::awaitable<std::optional<lb::event>> async_compact(const lb::session_view& v, lb::compaction_plan p) const {
        every_turn_compaction summary;
        auto op = summary.async_compact(v, p);
        std::optional<lb::event> e = co_await std::move(op);
        co_return e;
    }
};
static_assert(lb::compaction_strategy<incremental_compaction>);

struct counting_signer {
    std::shared_ptr<int> n = std::make_shared<int>(0);
    std::string_view did() const { return "did:test"; }
    void sign_event(lb::event& e) const {
        e.signature = "sig" + std::to_string(++*n);
        e.signer_did = "did:test";
    }
};
static_assert(lb::signer<counting_signer>);

/// A model that asks for approval of a booking in Oslo, then answers; an llm_agent whose
/// ask_approval tool is long-running (the answer comes later, through resume).
struct approval_setup {
    lb::scripted_model model;
    lb::llm_agent<> agent;
    explicit approval_setup(asio::any_io_executor ex)
        : model(ex, {lb::scripted_reply::tool_call("ask_approval", {{"city", "Oslo"}}),
                     lb::scripted_reply::text("Booked Oslo: approved.")}),
          agent({.name = "assistant", .model = model,
                 .tools = lb::tools(lb::function_tool("ask_approval", "Asks a human to approve", ask_approval,
                                                      {.long_running = true}))}) {}
};

// ---- driving turns ---------------------------------------------------------------------

using outcome = runner_support::turn_outcome;
using runner_support::drain;
using runner_support::run_turn;

/// Takes the first event, then drops the stream (destroying it cancels the turn).
asio::awaitable<void> take_one(lb::event_stream s, outcome* out) {
    auto next = s.next();
    std::optional<lb::event> e = co_await std::move(next);
    if (e) out->events.push_back(std::move(*e));
}

template <class Store>
std::optional<lb::session> load(asio::io_context& io, Store& st, std::string session = "s1", lb::get_options go = {}) {
    return runner_support::load_session(io, st, std::move(session), std::move(go));
}

lb::run_options opts(std::string session = "s1") { return runner_support::run_opts(std::move(session)); }

// ---- the stores the cases run against ------------------------------------------------

struct memory_env {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
};

struct jsonl_env {
    asio::io_context io;
    lb::jsonl_store store;
    jsonl_env() : store(io.get_executor(), options()) {}
    static lb::jsonl_store_options options() {
        static int n = 0;
        lb::jsonl_store_options o;
        o.directory = std::filesystem::current_path() / ("runner_sessions_" + std::to_string(++n));
        std::filesystem::remove_all(o.directory);
        return o;
    }
};

using envs = std::tuple<memory_env, jsonl_env>;

} // namespace

BOOST_AUTO_TEST_SUITE(runner)

BOOST_AUTO_TEST_CASE_TEMPLATE(first_turn_creates_the_session_and_stores_everything_in_order, Env, envs) {
    Env env;
    script_agent a;
    a.name_ = "assistant";
    a.steps = {{"Hel", true}, {"lo", true}, {"Hello"}, {"How can I help?"}};
    lb::runner r{a, env.store};
    BOOST_TEST(!load(env.io, env.store).has_value());

    auto got = run_turn(env.io, r.run(opts(), "hi there"));
    BOOST_TEST(!got.error);
    BOOST_TEST(got.texts() == (std::vector<std::string>{"~Hel", "~lo", "Hello", "How can I help?"}));

    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 3u); // user message + two non-partial events
    BOOST_TEST((s->events[0].type == lb::event_type::user_message));
    BOOST_TEST(s->events[0].author == "user");
    BOOST_TEST(s->events[0].text() == "hi there");
    for (std::size_t i = 0; i < s->events.size(); ++i) {
        BOOST_TEST(s->events[i].sequence == static_cast<std::int64_t>(i + 1));
        BOOST_TEST(!s->events[i].partial);
        BOOST_TEST(s->events[i].invocation_id == s->events[0].invocation_id);
        BOOST_TEST(s->events[i].session_id == "s1");
    }
    // What the caller got is what was stored (ids, sequences).
    BOOST_TEST(got.events[2].id == s->events[1].id);
    BOOST_TEST(got.events[2].sequence == 2);
    BOOST_TEST(got.events[3].sequence == 3);
    BOOST_TEST(got.events[0].sequence == 0); // partials: never stored
    BOOST_TEST(r.active_sessions() == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(second_turn_reuses_the_session, Env, envs) {
    Env env;
    history_agent a;
    a.name_ = "h";
    a.n = 2;
    lb::runner r{a, env.store};
    auto t1 = run_turn(env.io, r.run(opts(), "one"));
    BOOST_TEST(!t1.error);
    // The agent sees the user message, then its own first event (mirrored when taken).
    BOOST_TEST(t1.texts() == (std::vector<std::string>{"seen 1", "seen 2"}));
    auto t2 = run_turn(env.io, r.run(opts(), "two"));
    BOOST_TEST(!t2.error);
    BOOST_TEST(t2.texts() == (std::vector<std::string>{"seen 4", "seen 5"}));
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 6u);
    BOOST_TEST(s->events[3].text() == "two");
    BOOST_TEST(s->events[5].sequence == 6);
    BOOST_TEST(s->events[0].invocation_id != s->events[3].invocation_id);
}

// With memory_store the turn's session holds the very node the store keeps: the event the
// agent finds in ctx.session() once its emit returns is the stored one, stamped in place.
BOOST_AUTO_TEST_CASE(the_turn_session_and_memory_store_share_each_stored_node) {
    memory_env env;
    node_agent a;
    a.name_ = "n";
    lb::runner r{a, env.store};
    auto got = run_turn(env.io, r.run(opts(), "go"));
    BOOST_TEST_REQUIRE(!got.error);
    BOOST_REQUIRE(a.seen->size() == 2u);
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE(s->events.size() == 3u);
    for (std::size_t i = 0; i < 2; ++i) {
        const lb::event_list::pointer_type& p = (*a.seen)[i];
        BOOST_TEST(p.get() == &s->events[i + 1]);
        BOOST_TEST(p->sequence == static_cast<std::int64_t>(i + 2));
        BOOST_TEST(p->text() == "n" + std::to_string(i));
        // The caller got its own copy of the stored event.
        BOOST_TEST(&got.events.at(i) != p.get());
        BOOST_TEST(got.events.at(i).id == p->id);
        BOOST_TEST(got.events.at(i).sequence == p->sequence);
    }
}

/// memory_store, counting calls of its asynchronous operations; NeverBlocks false hides its
/// never_blocks constant, so the runner goes through those operations instead.
template <bool NeverBlocks>
struct counting_memory_store : lb::memory_store {
    static constexpr bool never_blocks = NeverBlocks;
    std::shared_ptr<int> async_calls = std::make_shared<int>(0);
    using lb::memory_store::memory_store;
    // The forms without diagnostics (not counted; the runner does not call them). Written
    // out: a using-declaration would bring in the base's diagnostics forms too, which clang
    // finds ambiguous with these.
    template <asio::completion_token_for<lb::get_signature> Token = lb::default_completion_token_t>
    auto async_get(lb::session_key k, lb::get_options o = {}, Token&& token = {}) {
        return lb::memory_store::async_get(std::move(k), std::move(o), std::forward<Token>(token));
    }
    template <asio::completion_token_for<lb::create_signature> Token = lb::default_completion_token_t>
    auto async_create(lb::create_options o, Token&& token = {}) {
        return lb::memory_store::async_create(std::move(o), std::forward<Token>(token));
    }
    template <asio::completion_token_for<lb::get_signature> Token = lb::default_completion_token_t>
    auto async_get(lb::session_key k, lb::get_options o, lb::diagnostics& d, Token&& token = {}) {
        ++*async_calls;
        return lb::memory_store::async_get(std::move(k), std::move(o), d, std::forward<Token>(token));
    }
    template <asio::completion_token_for<lb::create_signature> Token = lb::default_completion_token_t>
    auto async_create(lb::create_options o, lb::diagnostics& d, Token&& token = {}) {
        ++*async_calls;
        return lb::memory_store::async_create(std::move(o), d, std::forward<Token>(token));
    }
    template <asio::completion_token_for<lb::append_signature> Token = lb::default_completion_token_t>
    auto async_append(lb::session& s, lb::event e, lb::diagnostics& d, Token&& token = {}) {
        ++*async_calls;
        return lb::memory_store::async_append(s, std::move(e), d, std::forward<Token>(token));
    }
};

BOOST_AUTO_TEST_CASE(a_never_blocking_store_takes_each_event_inside_the_agents_emit) {
    memory_env env;
    inline_probe_agent a;
    a.name_ = "p";
    lb::runner r{a, env.store};
    for (int turn = 0; turn < 2; ++turn) {
        a.seen->clear();
        auto got = run_turn(env.io, r.run(opts(), "go"));
        BOOST_TEST_REQUIRE(!got.error);
        BOOST_TEST(got.texts() == (std::vector<std::string>{"p0", "p1", "p2"}));
        BOOST_REQUIRE(a.seen->size() == 3u);
        for (const auto& rec : *a.seen) {
            BOOST_TEST(rec.consumed_on_emit);
            BOOST_TEST(rec.stored); // stored before emit() returned, though the stream has room
        }
        for (std::size_t i = 0; i < got.events.size(); ++i)
            BOOST_TEST(got.events[i].sequence == static_cast<std::int64_t>(turn * 4 + 2 + i));
    }
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 8u);
}

BOOST_AUTO_TEST_CASE(an_agent_stream_on_another_executor_or_store_goes_through_next) {
    // A stream on a strand (not the runner's executor), and a store that does not declare
    // never_blocks: the runner pulls the events with next(), with the same outcome.
    memory_env env;
    counting_memory_store<false> posted(env.io.get_executor());
    auto check = [&](auto& store, bool on_strand) {
        inline_probe_agent a;
        a.name_ = "p";
        a.on_strand = on_strand;
        lb::runner r{a, store};
        auto got = run_turn(env.io, r.run(opts(), "go"));
        BOOST_TEST_REQUIRE(!got.error);
        BOOST_TEST(got.texts() == (std::vector<std::string>{"p0", "p1", "p2"}));
        BOOST_REQUIRE(a.seen->size() == 3u);
        for (const auto& rec : *a.seen) BOOST_TEST(!rec.consumed_on_emit);
        BOOST_TEST(load(env.io, store)->events.size() == 4u);
    };
    check(env.store, true);
    check(posted, false);
}

BOOST_AUTO_TEST_CASE(a_never_blocking_store_is_called_directly_with_the_same_outcome) {
    static_assert(lb::never_blocking_store<lb::memory_store>);
    static_assert(lb::never_blocking_store<counting_memory_store<true>>);
    static_assert(!lb::never_blocking_store<counting_memory_store<false>>);
    static_assert(!lb::never_blocking_store<lb::jsonl_store>);
    asio::io_context io;
    counting_memory_store<true> direct(io.get_executor());
    counting_memory_store<false> posted(io.get_executor());
    script_agent a;
    a.name_ = "a";
    a.steps = {{"one", false, {{"k", 1}, {"temp:t", 2}}}, {"tw", true}, {"two"}};
    lb::runner r1{a, direct};
    lb::runner r2{a, posted};
    // Three turns: a new session, then the cached session brought up to date twice.
    for (int turn = 0; turn < 3; ++turn) {
        auto g1 = run_turn(io, r1.run(opts(), "hi"));
        auto g2 = run_turn(io, r2.run(opts(), "hi"));
        BOOST_TEST_REQUIRE(!g1.error);
        BOOST_TEST_REQUIRE(!g2.error);
        BOOST_TEST(g1.texts() == g2.texts());
        BOOST_REQUIRE(g1.events.size() == g2.events.size());
        for (std::size_t i = 0; i < g1.events.size(); ++i) {
            BOOST_TEST(g1.events[i].sequence == g2.events[i].sequence);
            BOOST_TEST(g1.events[i].partial == g2.events[i].partial);
            BOOST_TEST(g1.events[i].actions.state_delta == g2.events[i].actions.state_delta);
        }
        BOOST_TEST(g1.events.back().sequence == 3 * (turn + 1));
    }
    BOOST_TEST(*direct.async_calls == 0);
    BOOST_TEST(*posted.async_calls >= 3 * 3); // a get and three appends per turn at least
    auto s1 = load(io, direct);
    auto s2 = load(io, posted);
    BOOST_REQUIRE(s1);
    BOOST_REQUIRE(s2);
    BOOST_TEST(s1->events.size() == 9u);
    BOOST_TEST(s2->events.size() == 9u);
    BOOST_TEST(s1->state == s2->state);
    BOOST_TEST(!s1->state.contains("temp:t"));
}

// With memory_store and an agent over a ready stream nothing in a turn has to wait; the turn
// still passes through the event loop once, so a caller running turns back to back does not
// starve other handlers: one posted before the first turn runs during that turn.
BOOST_AUTO_TEST_CASE(a_turn_that_never_waits_still_lets_other_handlers_run) {
    asio::io_context io;
    lb::memory_store st(io.get_executor());
    script_agent a;
    a.name_ = "a";
    a.steps = {{"one"}, {"two"}};
    lb::runner r{a, st};
    auto other = std::make_shared<bool>(false);
    int seen_after_turn = -1;
    int events = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            asio::post(io, [other] { *other = true; });
            for (int i = 0; i < 3; ++i) {
                lb::event_stream s = r.run(opts(), "hi");
                for (;;) {
                    auto next = s.next();
                    std::optional<lb::event> e = co_await std::move(next);
                    if (!e) break;
                    ++events;
                }
                if (*other && seen_after_turn < 0) seen_after_turn = i;
            }
        },
        asio::detached);
    io.run();
    BOOST_TEST(events == 6);
    BOOST_TEST(seen_after_turn == 0);
}

/// memory_store whose get misses while "another process" creates the session (the first
/// get of all; every get with `vanish`, whose session then never shows up). NeverBlocks
/// false: the runner goes through async_get, which shares the race.
template <bool NeverBlocks>
struct racing_memory_store : lb::memory_store {
    static constexpr bool never_blocks = NeverBlocks;
    using lb::memory_store::memory_store;
    std::shared_ptr<int> gets = std::make_shared<int>(0);
    bool vanish = false;
    boost::system::error_code get(const lb::session_key& k, const lb::get_options& o, std::optional<lb::session>& out,
                                  lb::diagnostics* d = nullptr) const {
        out.reset();
        if ((*gets)++ == 0 || vanish) {
            lb::create_options co;
            co.app_name = k.app_name;
            co.user_id = k.user_id;
            co.session_id = k.session_id;
            lb::session elsewhere;
            (void)const_cast<racing_memory_store*>(this)->lb::memory_store::create(std::move(co), elsewhere);
            return {};
        }
        return lb::memory_store::get(k, o, out, d);
    }
    template <asio::completion_token_for<lb::get_signature> Token = lb::default_completion_token_t>
    auto async_get(lb::session_key k, lb::get_options o, lb::diagnostics& d, Token&& token = {}) {
        return asio::async_initiate<Token, lb::get_signature>(
            [this](auto handler, lb::session_key k, lb::get_options o, lb::diagnostics* d) {
                d->clear();
                std::optional<lb::session> out;
                auto ec = get(k, o, out, d);
                asio::post(get_executor(), asio::append(std::move(handler), ec, std::move(out)));
            },
            token, std::move(k), std::move(o), &d);
    }
};

template <class Store>
void check_session_created_meanwhile() {
    asio::io_context io;
    Store st(io.get_executor());
    script_agent a;
    a.name_ = "a";
    a.steps = {{"hello"}};
    lb::runner r{a, st};
    auto got = run_turn(io, r.run(opts(), "hi"));
    BOOST_TEST(!got.error, got.what());
    BOOST_TEST(got.texts() == (std::vector<std::string>{"hello"}));
    BOOST_TEST(*st.gets == 2); // missed, then read after the create said already_exists
    auto s = load(io, static_cast<lb::memory_store&>(st));
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 2u);

    Store gone(io.get_executor());
    gone.vanish = true;
    lb::runner r2{a, gone};
    auto lost = run_turn(io, r2.run(opts("s2"), "hi"));
    BOOST_TEST((lost.code() == lb::errc::not_found));
    BOOST_TEST(lost.what().find("vanished while it was created") != std::string::npos, lost.what());
    BOOST_TEST(lost.what().find("session 'app/u1/s2'") != std::string::npos, lost.what());
}

BOOST_AUTO_TEST_CASE(a_session_created_by_another_writer_meanwhile_is_read_and_used) {
    check_session_created_meanwhile<racing_memory_store<true>>();
    check_session_created_meanwhile<racing_memory_store<false>>();
}

// A store that completes on another thread (jsonl_store's pool): the failure's own detail
// travels in the turn's own diagnostics, so each turn's error names its own event,
// even when turns of other sessions fail at the same time.
BOOST_AUTO_TEST_CASE(an_async_append_that_fails_names_what_the_store_said_about_it) {
    asio::io_context io;
    lb::jsonl_store_options o = jsonl_env::options();
    o.max_event_bytes = 2048;
    lb::jsonl_store st(io.get_executor(), o);
    static_assert(!lb::never_blocking_store<lb::jsonl_store>);
    // Sizes differ per session, so a message swapped between two turns shows.
    std::vector<script_agent> agents(4);
    std::vector<std::unique_ptr<lb::runner<script_agent, lb::jsonl_store>>> runners;
    std::vector<runner_support::turn_outcome> got(agents.size());
    for (std::size_t i = 0; i < agents.size(); ++i) {
        agents[i].name_ = "a";
        agents[i].steps = {{"fine"}, {std::string(3000 + 1000 * i, 'x')}, {"never"}};
        runners.push_back(std::make_unique<lb::runner<script_agent, lb::jsonl_store>>(agents[i], st));
        asio::co_spawn(io, runner_support::drain(runners[i]->run(opts("s" + std::to_string(i)), "go"), &got[i]),
                       asio::detached);
    }
    io.run();
    io.restart();
    for (std::size_t i = 0; i < agents.size(); ++i) {
        BOOST_TEST_CONTEXT("session s" << i) {
            BOOST_TEST((got[i].code() == lb::errc::oversize));
            const std::string what = got[i].what();
            BOOST_TEST(what.find("storing event 3 of the turn (agent_message by 'a') in session 'app/u1/s" +
                                 std::to_string(i) + "' failed") != std::string::npos,
                       what);
            BOOST_TEST(what.find("(jsonl_store: ") != std::string::npos, what);
            BOOST_TEST(what.find("over max_event_bytes (2048)") != std::string::npos, what);
            // This turn's event: its own size (the text plus the event's other members).
            const std::size_t text = 3000 + 1000 * i;
            const auto at = what.find(" bytes as a line");
            BOOST_REQUIRE(at != std::string::npos);
            const auto from = what.rfind(' ', at - 1) + 1;
            const std::size_t size = std::stoul(what.substr(from, at - from));
            BOOST_TEST(size > text);
            BOOST_TEST(size < text + 1000);
            BOOST_TEST(got[i].texts() == (std::vector<std::string>{"fine"}));
        }
    }
    // What was stored stays: the user message and the first answer of each session.
    for (std::size_t i = 0; i < agents.size(); ++i) {
        auto s = runner_support::load_session(io, st, "s" + std::to_string(i));
        BOOST_REQUIRE(s);
        BOOST_TEST(s->events.size() == 2u);
    }
}

// A failed load names the session and what the store said: here a transcript damaged on
// disk, which jsonl_store reports with its file and line.
BOOST_AUTO_TEST_CASE(a_failed_session_load_names_the_session_and_the_stores_words) {
    const lb::jsonl_store_options o = jsonl_env::options();
    script_agent a;
    a.name_ = "a";
    a.steps = {{"first answer"}};
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), o);
        lb::runner r{a, st};
        auto first = run_turn(io, r.run(opts(), "go"));
        BOOST_TEST_REQUIRE(!first.error, first.what());
    }
    const std::filesystem::path dir = o.directory / "apps" / "app" / "users" / "u1" / "sessions" / "s1";
    const std::filesystem::path transcript = dir / "transcript.jsonl";
    std::string bytes;
    {
        std::ifstream in(transcript, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const auto line2 = bytes.find('\n') + 1; // the user message's line
    BOOST_TEST_REQUIRE(line2 + 20 < bytes.size());
    bytes[line2 + 20] ^= 0x01;
    {
        std::ofstream out(transcript, std::ios::binary | std::ios::trunc);
        out << bytes;
    }
    std::filesystem::remove(dir / "meta.json"); // no checkpoint: the whole file is read
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), o);
    lb::runner r{a, st};
    auto got = run_turn(io, r.run(opts(), "again"));
    BOOST_TEST((got.code() == lb::errc::corrupt_data));
    const std::string what = got.what();
    BOOST_TEST(what.find("loading session 'app/u1/s1' failed: ") != std::string::npos, what);
    BOOST_TEST(what.find("(jsonl_store: ") != std::string::npos, what);
    // The file, line 2 at its first byte, and the cause.
    BOOST_TEST(what.find("transcript.jsonl:2 (byte " + std::to_string(line2) + "): stored data is corrupt (checksum mismatch)") !=
                   std::string::npos,
               what);
    BOOST_TEST(got.events.empty());
}

BOOST_AUTO_TEST_CASE(a_direct_append_that_fails_ends_the_turn_and_keeps_what_was_stored) {
    asio::io_context io;
    lb::memory_store_options mo;
    mo.max_event_bytes = 1024;
    lb::memory_store st(io.get_executor(), mo);
    script_agent a;
    a.name_ = "a";
    a.steps = {{"fine"}, {std::string(4000, 'x')}, {"never"}};
    lb::runner r{a, st};
    auto got = run_turn(io, r.run(opts(), "go"));
    BOOST_TEST((got.code() == lb::errc::oversize));
    BOOST_TEST(got.what().find("storing event 3 of the turn (agent_message by 'a')") != std::string::npos, got.what());
    // The store's own detail: which event, how big, which limit.
    BOOST_TEST(got.what().find("(memory_store: append: ") != std::string::npos, got.what());
    BOOST_TEST(got.what().find("bytes of JSON, over max_event_bytes (1024))") != std::string::npos, got.what());
    BOOST_TEST(got.texts() == (std::vector<std::string>{"fine"}));
    auto s = load(io, st);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 2u);
    BOOST_TEST(s->last_sequence == 2);
    BOOST_TEST(r.active_sessions() == 0u);
    // The next turn starts from the stored session.
    a.steps = {{"again"}};
    auto next = run_turn(io, r.run(opts(), "more"));
    BOOST_TEST(!next.error);
    BOOST_TEST(next.events.at(0).sequence == 4);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(state_deltas_of_the_user_message_and_the_agent_are_applied, Env, envs) {
    Env env;
    script_agent a;
    a.name_ = "a";
    a.steps = {{"noted", false, {{"color", "blue"}, {"user:name", "Ada"}, {"temp:scratch", 1}}}};
    lb::runner r{a, env.store};
    lb::run_options o = opts();
    o.state_delta = {{"topic", "weather"}, {"temp:t", true}};
    auto got = run_turn(env.io, r.run(o, "hi"));
    BOOST_TEST(!got.error);
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->state.at("topic").as_string() == "weather");
    BOOST_TEST(s->state.at("color").as_string() == "blue");
    BOOST_TEST(s->state.at("user:name").as_string() == "Ada");
    BOOST_TEST(!s->state.contains("temp:t"));
    BOOST_TEST(!s->state.contains("temp:scratch"));
    BOOST_TEST(s->events[0].actions.state_delta.contains("topic"));
    BOOST_TEST(!s->events[0].actions.state_delta.contains("temp:t"));
    BOOST_TEST(!got.events[0].actions.state_delta.contains("temp:scratch"));

    // Inside the turn the agent sees the temp: key, in the context's state and the session.
    history_agent h;
    h.name_ = "h";
    h.n = 1;
    lb::runner r2{h, env.store};
    lb::run_options o2 = opts("s2");
    o2.state_delta = {{"temp:t", 1}};
    auto t2 = run_turn(env.io, r2.run(o2, "x"));
    BOOST_TEST(t2.texts() == (std::vector<std::string>{"seen 1 temp ctx-temp"}));
    // A new turn starts without it.
    auto t3 = run_turn(env.io, r2.run(opts("s2"), "y"));
    BOOST_TEST(t3.texts() == (std::vector<std::string>{"seen 3"}));
}

/// root (a router that hands over to "helper"), with children "helper" and "other".
struct router_tree {
    script_agent helper;
    script_agent other;
    router_agent root;
    router_tree() {
        helper.name_ = "helper";
        helper.steps = {{"helper here"}};
        other.name_ = "other";
        other.steps = {{"other here"}};
        root.name_ = "root";
        root.children = {lb::any_agent(helper), lb::any_agent(other)};
    }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(the_transfer_target_runs_the_next_turn, Env, envs) {
    Env env;
    router_tree tree;
    const router_agent& root = tree.root;
    lb::runner r{root, env.store};
    auto t1 = run_turn(env.io, r.run(opts(), "I need help"));
    BOOST_TEST(t1.texts() == (std::vector<std::string>{"handing over to helper"}));
    auto t2 = run_turn(env.io, r.run(opts(), "still there?"));
    BOOST_TEST(t2.texts() == (std::vector<std::string>{"helper here"}));
    BOOST_TEST(t2.events[0].author == "helper");
    auto t3 = run_turn(env.io, r.run(opts(), "and now?"));
    BOOST_TEST(t3.texts() == (std::vector<std::string>{"helper here"}));
    // Another session starts at the root.
    auto t4 = run_turn(env.io, r.run(opts("s2"), "hello"));
    BOOST_TEST(t4.texts() == (std::vector<std::string>{"handing over to helper"}));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_transfer_older_than_the_newest_compaction_still_picks_the_agent, Env, envs) {
    Env env;
    router_tree tree;
    const router_agent& root = tree.root;
    {
        lb::runner r{root, env.store, incremental_compaction{}};
        auto t1 = run_turn(env.io, r.run(opts(), "I need help")); // 1 user, 2 transfer
        BOOST_TEST(t1.texts() == (std::vector<std::string>{"handing over to helper"}));
        auto t2 = run_turn(env.io, r.run(opts(), "two")); // 3, 4; summary 5 of 1..2
        auto t3 = run_turn(env.io, r.run(opts(), "three")); // 6, 7; summary 8 of 3..5
        BOOST_TEST(!t3.error);
        BOOST_TEST(t3.texts().at(0) == "helper here");
        BOOST_REQUIRE(!t3.events.empty());
        const lb::event& summary = t3.events.back();
        BOOST_REQUIRE(summary.is_compaction());
        BOOST_TEST(summary.actions.compaction->first_sequence == 3);
        // The summary names the agent the session had transferred to.
        const json::value* recorded = summary.metadata.if_contains("active_agent");
        BOOST_TEST((recorded && recorded->is_string() && recorded->get_string() == "helper"));
    }
    // What a new runner (another process) loads no longer holds the transfer event (only the
    // two summaries, 5 of 1..2 and 8 of 3..5, and the events after them)...
    lb::get_options go;
    go.context_only = true;
    auto s = load(env.io, env.store, "s1", go);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE(!s->events.empty());
    BOOST_TEST(s->events.front().sequence == 5);
    for (std::size_t i = 0; i < s->events.size(); ++i) BOOST_TEST(!s->events[i].actions.transfer_to_agent);
    // ...and its turn still starts at the agent the session transferred to.
    lb::runner fresh{root, env.store, incremental_compaction{}};
    auto t4 = run_turn(env.io, fresh.run(opts(), "four"));
    BOOST_TEST(!t4.error);
    BOOST_TEST(t4.texts().at(0) == "helper here");
    BOOST_TEST(t4.events.at(0).author == "helper");
    // A session that never transferred records nothing and starts at the root.
    lb::runner r2{root, env.store, incremental_compaction{}};
    auto u1 = run_turn(env.io, r2.run(opts("s2"), "hello"));
    BOOST_TEST(u1.events.at(0).author == "root");
}

BOOST_AUTO_TEST_CASE(the_newest_transfer_wins_over_what_a_compaction_recorded) {
    lb::session s;
    s.events.push_back(lb::event{});
    lb::event summary = lb::event::make(lb::event_type::agent_message, "compaction", lb::content::from_text("sum"));
    summary.actions.compaction = lb::event_compaction{.first_sequence = 1, .last_sequence = 1, .summary = "sum", .event_count = 1};
    summary.metadata["active_agent"] = "billing";
    s.events.push_back(summary);
    BOOST_TEST(lb::detail::last_transfer_target(s) == "billing");
    lb::event later = lb::event::make(lb::event_type::agent_message, "billing");
    later.actions.transfer_to_agent = "support";
    s.events.push_back(later);
    BOOST_TEST(lb::detail::last_transfer_target(s) == "support");
    // A compaction without a record (an older one) is looked past.
    lb::session t;
    lb::event old = lb::event::make(lb::event_type::agent_message, "root");
    old.actions.transfer_to_agent = "sales";
    t.events.push_back(old);
    lb::event bare = summary;
    bare.metadata.clear();
    t.events.push_back(bare);
    BOOST_TEST(lb::detail::last_transfer_target(t) == "sales");
    // A record that is not a string is ignored; an empty session names nobody.
    lb::session u;
    lb::event odd = summary;
    odd.metadata["active_agent"] = 42;
    u.events.push_back(odd);
    BOOST_TEST(lb::detail::last_transfer_target(u).empty());
    BOOST_TEST(lb::detail::last_transfer_target(lb::session{}).empty());
    // A transfer a rewind undid is looked past (and so is the rewind).
    lb::session v = t;
    lb::event moved = lb::event::make(lb::event_type::agent_message, "sales");
    moved.actions.transfer_to_agent = "legal";
    moved.invocation_id = "inv-undone";
    v.events.push_back(moved);
    BOOST_TEST(lb::detail::last_transfer_target(v) == "legal");
    lb::event rewind = lb::event::make(lb::event_type::agent_start, "user");
    rewind.actions.rewind_before_invocation_id = "inv-undone";
    v.events.push_back(rewind);
    BOOST_TEST(lb::detail::last_transfer_target(v) == "sales");
    // record_active_agent keeps a name the event already carries.
    lb::event pre = summary;
    pre.metadata["active_agent"] = "kept";
    lb::detail::record_active_agent(s, pre);
    BOOST_TEST(pre.metadata.at("active_agent").as_string() == "kept");
    lb::event none = bare;
    lb::detail::record_active_agent(lb::session{}, none);
    BOOST_TEST(!none.metadata.contains("active_agent"));
}

BOOST_AUTO_TEST_CASE(a_transfer_to_an_unknown_agent_starts_at_the_root) {
    memory_env env;
    script_agent a;
    a.name_ = "root";
    a.steps = {{"bye", false, {}, std::string("ghost")}};
    lb::runner r{a, env.store};
    run_turn(env.io, r.run(opts(), "1"));
    auto t2 = run_turn(env.io, r.run(opts(), "2"));
    BOOST_TEST(!t2.error);
    BOOST_TEST(t2.events.at(0).author == "root");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(turns_of_one_session_run_one_after_the_other, Env, envs) {
    Env env;
    std::vector<std::string> log;
    slow_agent a;
    a.name_ = "slow";
    a.log = &log;
    a.wait = 150ms;
    lb::runner r{a, env.store};
    outcome o1, o2, o3;
    asio::co_spawn(env.io, drain(r.run(opts("s1"), "first"), &o1), asio::detached);
    asio::co_spawn(env.io, drain(r.run(opts("s1"), "second"), &o2), asio::detached);
    asio::co_spawn(env.io, drain(r.run(opts("s2"), "other session"), &o3), asio::detached);
    env.io.run();
    env.io.restart();
    BOOST_TEST(!o1.error);
    BOOST_TEST(!o2.error);
    BOOST_TEST(!o3.error);
    // s2 overlaps s1; the two s1 turns do not overlap.
    std::vector<std::string> s1;
    for (const auto& l : log)
        if (l.starts_with("s1")) s1.push_back(l);
    BOOST_TEST(s1 == (std::vector<std::string>{"s1:start", "s1:end", "s1:start", "s1:end"}));
    BOOST_REQUIRE(log.size() == 6u);
    // s2 started while the first s1 turn was running.
    auto at = [&](const std::string& x) { return std::find(log.begin(), log.end(), x) - log.begin(); };
    BOOST_TEST(at("s2:start") < at("s1:end"));
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE(s->events.size() == 6u);
    BOOST_TEST(s->events[0].text() == "first");
    BOOST_TEST(s->events[3].text() == "second");
    BOOST_TEST(r.active_sessions() == 0u);
}

BOOST_AUTO_TEST_CASE(many_waiting_turns_run_in_arrival_order) {
    memory_env env;
    history_agent a;
    a.name_ = "h";
    a.n = 1;
    lb::runner r{a, env.store};
    std::vector<outcome> outs(5);
    for (std::size_t i = 0; i < outs.size(); ++i)
        asio::co_spawn(env.io, drain(r.run(opts(), "m" + std::to_string(i)), &outs[i]), asio::detached);
    env.io.run();
    for (std::size_t i = 0; i < outs.size(); ++i) {
        BOOST_TEST(!outs[i].error);
        BOOST_TEST(outs[i].texts() == (std::vector<std::string>{"seen " + std::to_string(2 * i + 1)}));
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(resume_continues_a_paused_invocation, Env, envs) {
    Env env;
    pausing_agent a;
    a.name_ = "approver";
    lb::runner r{a, env.store};
    lb::run_options o = opts();
    o.resumable = true;
    auto t1 = run_turn(env.io, r.run(o, "pay 10"));
    BOOST_TEST(!t1.error);
    BOOST_REQUIRE_EQUAL(t1.events.size(), 1u); // paused on the call
    BOOST_TEST(t1.events[0].has_tool_calls());
    const std::string invocation = t1.events[0].invocation_id;

    lb::run_options ro = opts();
    ro.state_delta = {{"approved_by", "admin"}};
    auto t2 = run_turn(env.io, r.resume(ro, lb::tool_response_part{"lr1", "approve", json::value("yes"), {}, {}}));
    BOOST_TEST(!t2.error, t2.what());
    BOOST_TEST(t2.texts() == (std::vector<std::string>{"approved: \"yes\" input: pay 10"}));
    BOOST_TEST(t2.events.at(0).invocation_id == invocation);

    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u);
    BOOST_TEST((s->events[2].type == lb::event_type::tool_response));
    BOOST_TEST(s->events[2].author == "approver");
    BOOST_TEST(s->events[2].invocation_id == invocation);
    BOOST_TEST(s->state.at("approved_by").as_string() == "admin");
    // Every call has its response: nothing for the view to repair.
    auto view = lb::make_context_view(s->events);
    BOOST_TEST(view.size() == 4u);

    // Answering it again, an unknown call, an unknown session, a wrong invocation id.
    auto again = run_turn(env.io, r.resume(opts(), lb::tool_response_part{"lr1", "approve", json::value("no"), {}, {}}));
    BOOST_TEST((again.code() == lb::errc::already_exists));
    auto unknown = run_turn(env.io, r.resume(opts(), lb::tool_response_part{"nope", "approve", {}, {}, {}}));
    BOOST_TEST((unknown.code() == lb::errc::not_found));
    BOOST_TEST(unknown.what().find("nope") != std::string::npos);
    auto missing = run_turn(env.io, r.resume(opts("s9"), lb::tool_response_part{"lr1", "approve", {}, {}, {}}));
    BOOST_TEST((missing.code() == lb::errc::not_found));
    auto no_parts = run_turn(env.io, r.resume(opts(), lb::content::from_text("hi")));
    BOOST_TEST((no_parts.code() == lb::errc::invalid_argument));

    auto t3 = run_turn(env.io, r.run(o, "pay 20"));
    BOOST_TEST(t3.events.size() == 1u);
    auto renamed = run_turn(env.io, r.resume(opts(), lb::tool_response_part{"lr1", "refund", {}, {}, {}}));
    BOOST_TEST((renamed.code() == lb::errc::invalid_argument));
    BOOST_TEST(renamed.what().find("the response to tool call 'lr1' names tool 'refund', but the call was to 'approve'") !=
                   std::string::npos,
               renamed.what());
    lb::run_options wrong = opts();
    wrong.invocation_id = invocation; // the first invocation, not the one paused now
    auto w = run_turn(env.io, r.resume(wrong, lb::tool_response_part{"lr1", "approve", {}, {}, {}}));
    BOOST_TEST((w.code() == lb::errc::invalid_argument));
    auto s2 = load(env.io, env.store);
    BOOST_TEST(s2->events.size() == 6u); // the failed resumes stored nothing

    // A rewind to before the paused invocation: its call no longer waits for an answer.
    const std::string paused = t3.events[0].invocation_id;
    auto rewind = [](auto& st, std::string id) -> asio::awaitable<lb::rewind_result> {
        auto op = lb::async_rewind_session(st, lb::session_key("app", "u1", "s1"), std::move(id), lb::rewind_options{},
                                           asio::use_awaitable);
        co_return co_await std::move(op);
    };
    std::optional<lb::rewind_result> rw;
    asio::co_spawn(env.io, rewind(env.store, paused), [&](std::exception_ptr e, lb::rewind_result x) {
        BOOST_TEST(!e);
        rw = std::move(x);
    });
    env.io.run();
    env.io.restart();
    BOOST_REQUIRE(rw.has_value());
    auto undone = run_turn(env.io, r.resume(opts(), lb::tool_response_part{"lr1", "approve", json::value("late"), {}, {}}));
    BOOST_TEST((undone.code() == lb::errc::invalid_argument));
    BOOST_TEST(undone.what().find("was undone by the rewind at sequence 7") != std::string::npos, undone.what());
}

BOOST_AUTO_TEST_CASE(resume_inside_a_sequence_continues_the_sequence_where_it_paused) {
    memory_env env;
    script_agent first;
    first.name_ = "first";
    first.steps = {{"first done"}};
    pausing_agent approver;
    approver.name_ = "approver";
    script_agent last;
    last.name_ = "last";
    last.steps = {{"last done"}};
    lb::sequential_agent pipeline{"pipeline", first, approver, last};
    lb::runner r{pipeline, env.store};
    lb::run_options o = opts();
    o.resumable = true;
    auto t1 = run_turn(env.io, r.run(o, "go"));
    BOOST_TEST(!t1.error, t1.what());
    std::vector<std::string> said;
    for (const auto& e : t1.events)
        if (e.type == lb::event_type::agent_message) said.push_back(e.author + ":" + e.text());
    BOOST_TEST(said == (std::vector<std::string>{"first:first done", "approver:"})); // paused: last did not run

    auto t2 = run_turn(env.io, r.resume(opts(), lb::tool_response_part{"lr1", "approve", json::value("ok"), {}, {}}));
    BOOST_TEST(!t2.error, t2.what());
    said.clear();
    for (const auto& e : t2.events)
        if (e.type == lb::event_type::agent_message) said.push_back(e.author + ":" + e.text());
    // The sequence goes on at the paused child; the first child does not run again.
    BOOST_TEST(said == (std::vector<std::string>{"approver:approved: \"ok\" input: go", "last:last done"}));
    for (const auto& e : t2.events) BOOST_TEST(e.invocation_id == t1.events.front().invocation_id);
}

BOOST_AUTO_TEST_CASE(without_resumable_a_long_running_call_does_not_pause) {
    memory_env env;
    pausing_agent a;
    a.name_ = "approver";
    lb::runner r{a, env.store};
    auto t1 = run_turn(env.io, r.run(opts(), "pay 10"));
    BOOST_TEST(t1.texts() == (std::vector<std::string>{"", "did not pause"}));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(cancelling_a_turn_releases_the_session_and_keeps_the_store_consistent, Env, envs) {
    Env env;
    hanging_agent a;
    a.name_ = "hang";
    lb::runner r{a, env.store};

    outcome o;
    asio::cancellation_signal cancel;
    asio::co_spawn(env.io, drain(r.run(opts(), "go"), &o), asio::bind_cancellation_slot(cancel.slot(), asio::detached));
    // Cancel once the turn has yielded its tool call and its partial (the agent is then
    // waiting on its 10 s timer): polled, not after a fixed delay, which a loaded machine
    // (jsonl_store's thread pool) can overrun.
    asio::steady_timer t(env.io);
    std::function<void(boost::system::error_code)> poll = [&](boost::system::error_code) {
        if (o.events.size() >= 2 || o.error) {
            cancel.emit(asio::cancellation_type::terminal);
            return;
        }
        t.expires_after(2ms);
        t.async_wait(poll);
    };
    t.expires_after(2ms);
    t.async_wait(poll);
    const auto started = std::chrono::steady_clock::now();
    env.io.run();
    env.io.restart();
    BOOST_TEST((std::chrono::steady_clock::now() - started < 5s));
    BOOST_TEST((o.code() == lb::errc::cancelled));
    BOOST_TEST(o.texts() == (std::vector<std::string>{"", "~thinking..."}));
    BOOST_TEST(*a.outcome == "cancelled");
    BOOST_TEST(r.active_sessions() == 0u);

    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 2u); // the user message and the call; no partial
    BOOST_TEST(s->events[1].has_tool_calls());
    // The unanswered call is left out of the next model context.
    auto view = lb::make_context_view(s->events);
    BOOST_TEST(view.size() == 1u);

    // The next turn of the session runs normally.
    script_agent b;
    b.name_ = "b";
    b.steps = {{"fine"}};
    lb::runner r2{b, env.store};
    auto next = run_turn(env.io, r2.run(opts(), "again"));
    BOOST_TEST(!next.error);
    BOOST_TEST(next.texts() == (std::vector<std::string>{"fine"}));
    BOOST_TEST(load(env.io, env.store)->events.size() == 4u);
}

BOOST_AUTO_TEST_CASE(dropping_a_turn_stream_mid_way_releases_the_session) {
    memory_env env;
    hanging_agent a;
    a.name_ = "hang";
    lb::runner r{a, env.store};
    outcome o;
    asio::co_spawn(env.io, take_one(r.run(opts(), "go"), &o), asio::detached);
    const auto started = std::chrono::steady_clock::now();
    env.io.run();
    env.io.restart();
    BOOST_TEST((std::chrono::steady_clock::now() - started < 5s));
    BOOST_TEST(o.texts() == (std::vector<std::string>{""}));
    // The caller takes the call event inside the agent's emit of it (the streams hand over
    // inline) and drops the turn there: the agent is cancelled at that emit and never
    // starts its ten-second wait.
    BOOST_TEST(a.outcome->empty());
    BOOST_TEST(r.active_sessions() == 0u);
    BOOST_TEST(load(env.io, env.store)->events.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_turn_waiting_for_the_session_can_be_cancelled) {
    memory_env env;
    std::vector<std::string> log;
    slow_agent a;
    a.name_ = "slow";
    a.log = &log;
    a.wait = 100ms;
    lb::runner r{a, env.store};
    outcome o1, o2, o3;
    asio::cancellation_signal cancel;
    asio::co_spawn(env.io, drain(r.run(opts(), "first"), &o1), asio::detached);
    asio::co_spawn(env.io, drain(r.run(opts(), "second"), &o2), asio::bind_cancellation_slot(cancel.slot(), asio::detached));
    asio::co_spawn(env.io, drain(r.run(opts(), "third"), &o3), asio::detached);
    asio::steady_timer t(env.io);
    t.expires_after(20ms);
    t.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::terminal); });
    env.io.run();
    env.io.restart();
    BOOST_TEST(!o1.error);
    BOOST_TEST((o2.code() == lb::errc::cancelled));
    BOOST_TEST(!o3.error);
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 6u);
    BOOST_TEST(s->events[3].text() == "third");
    BOOST_TEST(r.active_sessions() == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_agent_exception_reaches_the_caller_and_earlier_events_are_kept, Env, envs) {
    Env env;
    throwing_agent a;
    a.name_ = "thrower";
    lb::runner r{a, env.store};
    auto got = run_turn(env.io, r.run(opts(), "go"));
    BOOST_REQUIRE(got.error);
    BOOST_TEST(got.what() == "boom");
    BOOST_TEST(got.texts() == (std::vector<std::string>{"before"}));
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 2u);
    BOOST_TEST(r.active_sessions() == 0u);
    auto again = run_turn(env.io, r.run(opts(), "again"));
    BOOST_TEST(again.what() == "boom");
    BOOST_TEST(load(env.io, env.store)->events.size() == 4u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(bad_ids_fail_with_invalid_argument_and_create_nothing, Env, envs) {
    Env env;
    script_agent a;
    a.name_ = "a";
    a.steps = {{"x"}};
    lb::runner r{a, env.store};
    for (auto bad : {std::string(""), std::string("a/b"), std::string(".."), std::string(200, 'x'), std::string("a\nb")}) {
        lb::run_options o1 = opts();
        o1.app = bad;
        lb::run_options o2 = opts();
        o2.user = bad;
        lb::run_options o3 = opts(bad);
        for (auto* o : {&o1, &o2, &o3}) {
            auto got = run_turn(env.io, r.run(*o, "hi"));
            BOOST_TEST((got.code() == lb::errc::invalid_argument));
            BOOST_TEST(got.events.empty());
            auto shared = run_turn(env.io, r.run_shared(*o, "hi")); // fails as run() does
            BOOST_TEST((shared.copies().code() == lb::errc::invalid_argument));
            BOOST_TEST(shared.nodes.empty());
        }
    }
    auto empty = run_turn(env.io, r.run(opts(), lb::content{}));
    BOOST_TEST((empty.code() == lb::errc::invalid_argument));
    BOOST_TEST((run_turn(env.io, r.run_shared(opts(), lb::content{})).copies().code() == lb::errc::invalid_argument));
    BOOST_TEST((run_turn(env.io, r.resume_shared(opts(), lb::content{})).copies().code() == lb::errc::invalid_argument));
    BOOST_TEST(!load(env.io, env.store).has_value());
    BOOST_TEST(r.active_sessions() == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_failing_append_fails_the_turn_clearly, Env, envs) {
    Env env;
    failing_store<decltype(env.store)> fs{&env.store, 3};
    script_agent a;
    a.name_ = "a";
    a.steps = {{"one"}, {"two"}, {"three"}};
    lb::runner r{a, fs};
    auto got = run_turn(env.io, r.run(opts(), "go"));
    BOOST_TEST((got.code() == lb::errc::io_error));
    BOOST_TEST(got.what().find("storing event 3 of the turn (agent_message by 'a')") != std::string::npos, got.what());
    BOOST_TEST(got.what().find("session 'app/u1/s1'") != std::string::npos);
    // What the store wrote in the turn's diagnostics is in the error.
    BOOST_TEST(got.what().find("(failing_store: append 3 failed on purpose)") != std::string::npos, got.what());
    BOOST_TEST(got.texts() == (std::vector<std::string>{"one"}));
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 2u);
    BOOST_TEST(r.active_sessions() == 0u);
    auto next = run_turn(env.io, r.run(opts(), "again"));
    BOOST_TEST(!next.error);
    BOOST_TEST(load(env.io, env.store)->events.size() == 6u);
}

BOOST_AUTO_TEST_CASE(a_second_writer_makes_the_turn_fail_as_stale) {
    memory_env env;
    intruder_agent a;
    a.name_ = "a";
    a.store = &env.store;
    lb::runner r{a, env.store};
    auto got = run_turn(env.io, r.run(opts(), "go"));
    BOOST_TEST((got.code() == lb::errc::stale_session));
    BOOST_TEST(got.what().find("another writer") != std::string::npos, got.what());
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->events.size() == 2u); // the user message and the other writer's event
    BOOST_TEST(s->events[1].author == "other-process");
    // The next turn loads the session afresh and works.
    script_agent b;
    b.name_ = "b";
    b.steps = {{"ok"}};
    lb::runner r2{b, env.store};
    auto next = run_turn(env.io, r2.run(opts(), "again"));
    BOOST_TEST(!next.error);
    BOOST_TEST(next.events.at(0).sequence == 4);
}

BOOST_AUTO_TEST_CASE(yield_user_message_yields_the_stored_user_event_first) {
    memory_env env;
    script_agent a;
    a.name_ = "a";
    a.steps = {{"answer"}};
    lb::runner r{a, env.store};
    lb::run_options o = opts();
    o.yield_user_message = true;
    auto got = run_turn(env.io, r.run(o, "question"));
    BOOST_REQUIRE_EQUAL(got.events.size(), 2u);
    BOOST_TEST((got.events[0].type == lb::event_type::user_message));
    BOOST_TEST(got.events[0].sequence == 1);
    BOOST_TEST(got.events[0].text() == "question");
}

// run_shared: the same turn as run() (same events, order, sequences, partials), but each
// stored event arrives as the node the turn's session holds; with memory_store, the very
// node the store keeps (no copy). Partial events arrive boxed and are not stored.
BOOST_AUTO_TEST_CASE_TEMPLATE(run_shared_yields_the_stored_events_themselves, Env, envs) {
    Env env;
    const std::vector<lb::scripted_reply> script{lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 3}}),
                                                 lb::scripted_reply::text("2 + 3 = 5").in_chunks(3)};
    // The same script on a fresh model, agent and runner, for session `id`, taken by `take`.
    auto turn = [&](std::string id, auto take) {
        lb::scripted_model m(env.io.get_executor(), script);
        lb::llm_agent<> agent({.name = "assistant", .model = m, .tools = lb::tools(lb::function_tool("add", "Adds", add))});
        lb::runner r{agent, env.store};
        lb::run_options o = opts(std::move(id));
        o.yield_user_message = true;
        auto out = run_turn(env.io, take(r, std::move(o)));
        BOOST_TEST(r.active_sessions() == 0u);
        return out;
    };
    auto shared = turn("shared", [](auto& r, lb::run_options o) { return r.run_shared(std::move(o), "What is 2 + 3?"); });
    BOOST_TEST(!shared.error, shared.copies().what());
    auto copied = turn("copied", [](auto& r, lb::run_options o) { return r.run(std::move(o), "What is 2 + 3?"); });
    BOOST_TEST(!copied.error, copied.what());

    const auto as_copies = shared.copies();
    BOOST_TEST(as_copies.texts() == copied.texts());
    BOOST_REQUIRE_EQUAL(shared.nodes.size(), copied.events.size());
    for (std::size_t i = 0; i < shared.nodes.size(); ++i) {
        BOOST_TEST(shared.nodes[i]->sequence == copied.events[i].sequence);
        BOOST_TEST(shared.nodes[i]->partial == copied.events[i].partial);
        BOOST_TEST((shared.nodes[i]->type == copied.events[i].type));
    }
    BOOST_TEST(shared.nodes.front()->text() == "What is 2 + 3?"); // yield_user_message

    auto s = load(env.io, env.store, "shared");
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u); // user, call, response, answer
    std::size_t stored = 0;
    for (const auto& n : shared.nodes) {
        if (n->partial) {
            BOOST_TEST(n->sequence == 0);
            continue;
        }
        BOOST_REQUIRE(stored < s->events.size());
        const auto& kept = s->events.shared(stored);
        BOOST_TEST(n->id == kept->id);
        BOOST_TEST(n->sequence == kept->sequence);
        BOOST_TEST((*n == *kept));
        if constexpr (std::is_same_v<Env, memory_env>) BOOST_TEST(n.get() == kept.get()); // shared, not copied
        ++stored;
    }
    BOOST_TEST(stored == 4u);
}

// resume_shared continues a paused invocation as resume() does, and a compaction summary is
// yielded too (boxed: the turn's session does not keep it in this form).
BOOST_AUTO_TEST_CASE_TEMPLATE(resume_shared_and_compaction_yield_shared_events, Env, envs) {
    Env env;
    approval_setup setup(env.io.get_executor());
    lb::scripted_model& m = setup.model;
    auto& agent = setup.agent;
    lb::runner r{agent, env.store, every_turn_compaction{}};
    lb::run_options o = opts();
    o.resumable = true;
    auto t1 = run_turn(env.io, r.run_shared(o, "Book Oslo"));
    BOOST_TEST(!t1.error, t1.copies().what());
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE(s->events.size() >= 2u);
    const std::string call_id = s->events[1].tool_calls().front().tool_call_id;

    auto t2 = run_turn(env.io, r.resume_shared(opts(), lb::tool_response_part{call_id, "ask_approval",
                                                                               json::value("approved"), {}, {}}));
    BOOST_TEST(!t2.error, t2.copies().what());
    BOOST_REQUIRE(t2.nodes.size() >= 2u);
    const auto& answer = t2.nodes[t2.nodes.size() - 2]; // the summary follows it
    BOOST_TEST(answer->text() == "Booked Oslo: approved.");
    BOOST_TEST(answer->invocation_id == s->events[1].invocation_id);
    BOOST_TEST(t2.nodes.back()->is_compaction()); // every_turn_compaction: the summary comes last
    auto after = load(env.io, env.store);
    BOOST_REQUIRE(after);
    BOOST_TEST(after->events.back().id == t2.nodes.back()->id);
    BOOST_TEST(after->events.back().sequence == t2.nodes.back()->sequence);
}

BOOST_AUTO_TEST_CASE(duplicate_agent_names_are_rejected) {
    memory_env env;
    script_agent x;
    x.name_ = "same";
    router_agent root;
    root.name_ = "same";
    root.children = {lb::any_agent(x)};
    try {
        lb::runner r{root, env.store};
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("'same'") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(compaction_runs_after_the_turn_and_the_next_turn_loads_from_it, Env, envs) {
    Env env;
    history_agent a;
    a.name_ = "h";
    a.n = 2;
    lb::runner r{a, env.store, every_turn_compaction{}};
    auto t1 = run_turn(env.io, r.run(opts(), "one"));
    BOOST_TEST(!t1.error);
    BOOST_REQUIRE_EQUAL(t1.events.size(), 3u); // two agent events, then the summary
    BOOST_TEST(t1.events[2].is_compaction());
    BOOST_TEST(t1.events[2].text() == "summary of 1..1");
    BOOST_TEST(t1.events[2].sequence == 4);
    // The next turn holds what the context needs: not event 1 (covered), but 2, 3, the
    // summary, and its own user message.
    auto t2 = run_turn(env.io, r.run(opts(), "two"));
    BOOST_TEST(t2.texts().at(0) == "seen 4");
    BOOST_TEST(t2.events.at(2).text() == "summary of 1..5");
    // ...and after that the summary of 1..5 (which subsumes the first) and what follows it.
    lb::get_options go;
    go.context_only = true;
    auto s = load(env.io, env.store, "s1", go);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 3u);
    BOOST_TEST(s->events[0].sequence == 6);
    BOOST_TEST(s->events[2].sequence == 8);
    BOOST_TEST(s->events[2].is_compaction());
}

BOOST_AUTO_TEST_CASE(a_signer_signs_every_stored_event_and_chains_them) {
    memory_env env;
    script_agent a;
    a.name_ = "a";
    a.steps = {{"p", true}, {"one"}, {"two"}};
    counting_signer sg;
    lb::runner r{a, env.store, lb::no_compaction{}, sg};
    auto got = run_turn(env.io, r.run(opts(), "go"));
    BOOST_TEST(!got.error);
    BOOST_TEST(!got.events[0].is_signed()); // the partial
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 3u);
    BOOST_TEST(*s->events[0].signature == "sig1");
    BOOST_TEST(!s->events[0].prev_signature.has_value());
    BOOST_TEST(*s->events[1].prev_signature == "sig1");
    BOOST_TEST(*s->events[2].prev_signature == "sig2");
    BOOST_TEST(s->events[2].signer_did == "did:test");
    BOOST_TEST(*sg.n == 3);
}

BOOST_AUTO_TEST_CASE(the_runner_works_with_any_agent_and_any_store_style_handles) {
    memory_env env;
    script_agent a;
    a.name_ = "a";
    a.steps = {{"hi"}};
    lb::any_agent any = a;
    lb::runner r{any, env.store};
    static_assert(std::is_same_v<decltype(r), lb::runner<lb::any_agent, lb::memory_store>>);
    auto got = run_turn(env.io, r.run(opts(), "x"));
    BOOST_TEST(got.texts() == (std::vector<std::string>{"hi"}));
    BOOST_TEST((r.get_executor() == env.store.get_executor()));
}

// ---- with llm_agent and scripted_model --------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(llm_agent_tool_turns_are_stored_and_the_next_turn_sees_them, Env, envs) {
    Env env;
    lb::scripted_model m(env.io.get_executor(), {lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 3}}),
                                                 lb::scripted_reply::text("2 + 3 = 5").in_chunks(3),
                                                 lb::scripted_reply::text("You asked about 2 + 3.")});
    lb::llm_agent<> agent({.name = "assistant", .instruction = "Be brief.", .model = m,
                           .tools = lb::tools(lb::function_tool("add", "Adds two integers", add))});
    lb::runner r{agent, env.store};
    auto t1 = run_turn(env.io, r.run(opts(), "What is 2 + 3?"));
    BOOST_TEST(!t1.error, t1.what());
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u); // user, call, response, answer
    BOOST_TEST(s->events[1].has_tool_calls());
    BOOST_TEST((s->events[2].type == lb::event_type::tool_response));
    BOOST_TEST(s->events[2].tool_responses().front().result.as_int64() == 5);
    BOOST_TEST(s->events[3].text() == "2 + 3 = 5");
    BOOST_TEST(s->events[3].is_final_response());
    std::size_t partials = 0;
    for (const auto& e : t1.events) partials += e.partial;
    BOOST_TEST(partials == 3u);
    // Step 2's request held the call and its result, once each (no duplicates from the
    // runner's mirror and the agent's own record).
    auto req2 = m.request_at(1);
    BOOST_TEST(req2.messages.size() == 3u);

    auto t2 = run_turn(env.io, r.run(opts(), "What did I ask?"));
    BOOST_TEST(!t2.error, t2.what());
    auto req3 = m.request_at(2);
    BOOST_TEST(req3.messages.size() == 5u); // the whole first turn, then the new question
    BOOST_TEST(req3.messages.back().text() == "What did I ask?");
    BOOST_TEST(load(env.io, env.store)->events.size() == 6u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_llm_calls_of_a_run_bounds_its_model_calls_and_the_error_is_stored, Env, envs) {
    Env env;
    lb::scripted_model m(env.io.get_executor(), {lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 3}}),
                                                 lb::scripted_reply::text("second turn")});
    lb::llm_agent<> agent({.name = "assistant", .model = m, .tools = lb::tools(lb::function_tool("add", "Adds", add))});
    lb::runner r{agent, env.store};
    BOOST_TEST(lb::run_options{}.max_llm_calls == 500u);
    lb::run_options o = opts();
    o.max_llm_calls = 1;
    auto t1 = run_turn(env.io, r.run(std::move(o), "What is 2 + 3?"));
    BOOST_TEST(!t1.error, t1.what());
    BOOST_TEST(m.request_count() == 1u);
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u); // user, call, response, the error
    BOOST_TEST(s->events[3].metadata.at("stop_reason") == json::value("max_llm_calls"));
    BOOST_TEST((lb::agent_error_code(s->events[3]) == lb::errc::limit_exceeded));
    // The budget is per run: the next turn calls the model again.
    auto t2 = run_turn(env.io, r.run(opts(), "Again?"));
    BOOST_TEST(!t2.error, t2.what());
    BOOST_TEST(m.request_count() == 2u);
    BOOST_TEST(load(env.io, env.store)->events.back().text() == "second turn");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(llm_agent_pauses_on_a_long_running_call_and_resume_finishes_it, Env, envs) {
    Env env;
    approval_setup setup(env.io.get_executor());
    lb::scripted_model& m = setup.model;
    auto& agent = setup.agent;
    lb::runner r{agent, env.store};
    lb::run_options o = opts();
    o.resumable = true;
    auto t1 = run_turn(env.io, r.run(o, "Book Oslo"));
    BOOST_TEST(!t1.error, t1.what());
    BOOST_TEST(m.request_count() == 1u);
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 2u); // user, the paused call
    const std::string call_id = s->events[1].tool_calls().front().tool_call_id;

    auto t2 = run_turn(env.io, r.resume(opts(), lb::tool_response_part{call_id, "ask_approval",
                                                                        json::value("approved"), {}, {}}));
    BOOST_TEST(!t2.error, t2.what());
    BOOST_REQUIRE(!t2.events.empty());
    BOOST_TEST(t2.events.back().text() == "Booked Oslo: approved.");
    BOOST_TEST(t2.events.back().invocation_id == s->events[1].invocation_id);
    BOOST_TEST(m.request_count() == 2u);
    auto req = m.request_at(1);
    BOOST_REQUIRE(!req.messages.empty());
    BOOST_TEST(req.messages.back().tool_responses().front().result.as_string() == "approved");
    BOOST_TEST(load(env.io, env.store)->events.size() == 4u);
}

BOOST_AUTO_TEST_CASE(resume_accepts_the_final_answer_after_an_interim_status) {
    // A long-running tool that answers at once with a status ("pending"): that response is
    // stored marked intermediate, and the real answer later still resumes the invocation.
    memory_env env;
    lb::scripted_model m(env.io.get_executor(), {lb::scripted_reply::tool_call("start_job", {{"city", "Oslo"}}),
                                                 lb::scripted_reply::text("Job done.")});
    auto start_job = [](booking_args) -> json::value { return json::value("pending"); };
    lb::llm_agent<> agent({.name = "assistant", .model = m,
                           .tools = lb::tools(lb::function_tool("start_job", "Starts a long job", start_job,
                                                                {.long_running = true}))});
    lb::runner r{agent, env.store};
    lb::run_options o = opts();
    o.resumable = true;
    auto t1 = run_turn(env.io, r.run(o, "Run the job"));
    BOOST_TEST(!t1.error, t1.what());
    auto s = load(env.io, env.store);
    BOOST_REQUIRE(s);
    BOOST_REQUIRE_EQUAL(s->events.size(), 3u); // user, call, interim response; paused
    BOOST_REQUIRE(!s->events[2].tool_responses().empty());
    BOOST_TEST(lb::is_intermediate_response(s->events[2].tool_responses().front()));
    const std::string call_id = s->events[1].tool_calls().front().tool_call_id;
    auto t2 = run_turn(env.io, r.resume(opts(), lb::tool_response_part{call_id, "start_job", json::value("done"), {}, {}}));
    BOOST_TEST(!t2.error, t2.what());
    BOOST_REQUIRE(!t2.events.empty());
    BOOST_TEST(t2.events.back().text() == "Job done.");
    // A second final answer is refused.
    auto again = run_turn(env.io, r.resume(opts(), lb::tool_response_part{call_id, "start_job", json::value("x"), {}, {}}));
    BOOST_TEST((again.code() == lb::errc::already_exists));
}

BOOST_AUTO_TEST_CASE(llm_agent_transfer_and_the_next_turn_starts_at_the_target) {
    memory_env env;
    lb::scripted_model m(env.io.get_executor(),
                         {lb::scripted_reply::tool_call("transfer_to_agent", {{"agent_name", "billing"}}),
                          lb::scripted_reply::text("Billing here: your invoice is paid."),
                          lb::scripted_reply::text("Billing again.")});
    lb::llm_agent<> billing({.name = "billing", .description = "Invoices and payments", .model = m});
    lb::llm_agent<> root({.name = "front_desk", .model = m, .sub_agents = {lb::any_agent(billing)}});
    lb::runner r{root, env.store};
    auto t1 = run_turn(env.io, r.run(opts(), "Is my invoice paid?"));
    BOOST_TEST(!t1.error, t1.what());
    BOOST_REQUIRE(!t1.events.empty());
    BOOST_TEST(t1.events.back().author == "billing");
    BOOST_TEST(t1.events.back().text() == "Billing here: your invoice is paid.");
    auto t2 = run_turn(env.io, r.run(opts(), "Thanks. Anything else?"));
    BOOST_TEST(!t2.error, t2.what());
    BOOST_REQUIRE(!t2.events.empty());
    BOOST_TEST(t2.events.back().author == "billing");
    BOOST_TEST(t2.events.back().text() == "Billing again.");
    BOOST_TEST(m.request_count() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
