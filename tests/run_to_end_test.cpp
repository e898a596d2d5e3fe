// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// run_to_end.hpp: a turn run to its end by async_run_to_end (callback, use_awaitable,
// deferred, as_tuple, use_future on another thread, a bound cancellation slot) and by the
// blocking run_to_end: the stored events, the final answer, the failure with its words;
// the time limit; what a cancelled or failed turn leaves in the store.
#include <libretto/runner/run_to_end.hpp>

#include <libretto/agent/llm_agent.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/memory_store.hpp>
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/store/memory_artifact_service.hpp>
#include <libretto/tool/artifact_tools.hpp>
#include <libretto/tool/memory_tools.hpp>
#include <libretto/compaction/sliding_window.hpp>
#include <libretto/store/any_memory_service.hpp>
#include <libretto/store/in_memory_memory_service.hpp>
#include <libretto/store/conversation_key.hpp>
#include <libretto/runner/detail/conversation_clock.hpp>
#include <libretto/tool/function_tool.hpp>

#include <boost/asio/strand.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/describe.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;
using namespace std::chrono_literals;
using reply = lb::scripted_reply;

struct add_args {
    int a;
    int b;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))
int add(add_args x) { return x.a + x.b; }

struct wait_args {
    int ms;
};
BOOST_DESCRIBE_STRUCT(wait_args, (), (ms))
// A tool that takes its time: the turn is still running when a time limit or a
// cancellation comes.
asio::awaitable<json::value> slow(wait_args a) {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(a.ms));
    co_await t.async_wait(asio::use_awaitable);
    co_return json::value("done");
}

using agent_type = lb::llm_agent<lb::scripted_model>;

/// A runner over a memory_store with an agent on a script.
struct world {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    lb::scripted_model model;
    agent_type agent;
    lb::runner<agent_type, lb::memory_store> runner;

    explicit world(std::vector<reply> replies)
        : model(io.get_executor(), std::move(replies)),
          agent(lb::llm_agent_options<lb::scripted_model>{
              .name = "assistant",
              .model = model,
              .tools = lb::tools(lb::function_tool("add", "Adds", add), lb::function_tool("slow", "Waits", slow)),
              .retry = {.max_attempts = 1}}),
          runner(agent, store) {}

    static lb::run_options session(std::string id = "s1") {
        lb::run_options o;
        o.app = "app";
        o.user = "u1";
        o.session = std::move(id);
        return o;
    }

    /// What the store holds for session `id`.
    std::vector<lb::event> stored(std::string id = "s1") {
        std::optional<lb::session> s;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                lb::session_key key{"app", "u1", id};
                auto get = store.async_get(std::move(key), lb::get_options{}, asio::use_awaitable);
                s = co_await std::move(get);
            },
            asio::detached);
        io.restart();
        io.run();
        return s ? std::vector<lb::event>(s->events.begin(), s->events.end()) : std::vector<lb::event>{};
    }
};

/// Runs `io` until `done`, for callback-token cases.
void run_until(asio::io_context& io, const bool& done) {
    io.restart();
    while (!done && io.run_one() > 0) {
    }
    BOOST_REQUIRE(done);
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_to_end_suite)

BOOST_AUTO_TEST_CASE(a_plain_turn_with_a_callback) {
    world w({reply::text("Hello there").in_chunks(3)});
    bool done = false;
    boost::system::error_code ec_seen = lb::errc::io_error; // overwritten by the completion
    lb::turn_result r;
    int partials = 0;
    lb::run_to_end_options o;
    o.on_event = [&](const lb::event& e) { partials += e.partial ? 1 : 0; };
    lb::async_run_to_end(w.runner, world::session(), "hi", std::move(o),
                         [&](boost::system::error_code ec, lb::turn_result res) {
                             ec_seen = ec;
                             r = std::move(res);
                             done = true;
                         });
    BOOST_TEST(!done); // never completes inside the initiating function
    run_until(w.io, done);
    BOOST_TEST(!ec_seen);
    BOOST_TEST(r.ok());
    BOOST_TEST(r.message().empty());
    BOOST_TEST(partials == 3);                 // on_event sees the partials ...
    BOOST_REQUIRE_EQUAL(r.events.size(), 1u); // ... the result keeps the stored events only
    BOOST_TEST(r.events[0].text() == "Hello there");
    BOOST_TEST(r.events[0].sequence == 2); // the user message is 1
    BOOST_TEST(r.final_answer == "Hello there");
    BOOST_REQUIRE(r.final_event() != nullptr);
    BOOST_TEST(r.final_event()->id == r.events[0].id);
    auto st = w.stored();
    BOOST_REQUIRE_EQUAL(st.size(), 2u);
    BOOST_TEST(st[1].id == r.events[0].id);
}

BOOST_AUTO_TEST_CASE(a_tool_turn_blocking) {
    world w({reply::tool_call("add", {{"a", 2}, {"b", 3}}).with_text("Adding."), reply::text("5")});
    lb::turn_result r = lb::run_to_end(w.runner, world::session(), "2 + 3?");
    BOOST_TEST(r.ok());
    BOOST_REQUIRE_EQUAL(r.events.size(), 3u);
    BOOST_TEST(r.events[0].has_tool_calls());
    BOOST_TEST(r.events[0].text() == "Adding.");
    BOOST_REQUIRE_EQUAL(r.events[1].tool_responses().size(), 1u);
    BOOST_TEST(r.events[1].tool_responses().front().result == json::value(5));
    BOOST_TEST(r.events[2].text() == "5");
    BOOST_TEST(r.final_answer == "5"); // not "Adding.": a call is no final response
    BOOST_TEST(r.events[2].sequence == 4);
    BOOST_TEST(w.model.request_count() == 2u);
    // The same runner, a second turn of the session: blocking again, the io_context reused.
    w.model.then(reply::text("again"));
    lb::turn_result r2 = lb::run_to_end(w.runner, world::session(), "once more");
    BOOST_TEST(r2.ok());
    BOOST_TEST(r2.final_answer == "again");
    BOOST_TEST(r2.events.at(0).sequence == 6);
}

BOOST_AUTO_TEST_CASE(a_failing_model_is_an_error_with_its_words) {
    world w({reply::auth_failed("invalid API key (401)")});
    lb::turn_result r = lb::run_to_end(w.runner, world::session(), "hi");
    BOOST_TEST(!r.ok());
    BOOST_TEST((r.error == lb::errc::auth_failed));
    BOOST_TEST(r.message() == "model call of agent 'assistant' failed: authentication failed: invalid API key (401)");
    BOOST_TEST(r.final_answer.empty());
    BOOST_TEST(r.final_event() == nullptr);
    // The error event is stored, and in the result.
    BOOST_REQUIRE_EQUAL(r.events.size(), 1u);
    BOOST_TEST(r.events[0].error().has_value());
    auto st = w.stored();
    BOOST_REQUIRE_EQUAL(st.size(), 2u);
    BOOST_TEST(st[1].id == r.events[0].id);
}

BOOST_AUTO_TEST_CASE(a_failing_turn_is_an_error_with_the_runners_words) {
    world w({reply::text("never")});
    lb::run_options bad = world::session("a/b");
    lb::turn_result r = lb::run_to_end(w.runner, std::move(bad), "hi");
    BOOST_TEST((r.error == lb::errc::invalid_argument));
    BOOST_TEST(r.message().starts_with("libretto::runner: run_options.session 'a/b'"), r.message());
    BOOST_TEST(r.message().find("[libretto:") == std::string::npos); // the code's own words are not repeated
    BOOST_TEST(r.events.empty());
    BOOST_TEST(w.model.request_count() == 0u);
}

BOOST_AUTO_TEST_CASE(max_steps_is_a_limit_exceeded_error) {
    world w({reply::tool_call("add", {{"a", 1}, {"b", 1}}), reply::tool_call("add", {{"a", 1}, {"b", 1}})});
    // A one-step agent of its own on the same model.
    agent_type one(lb::llm_agent_options<lb::scripted_model>{
        .name = "assistant", .model = w.model, .tools = lb::tools(lb::function_tool("add", "Adds", add)), .max_steps = 1});
    lb::runner runner{one, w.store};
    lb::turn_result r = lb::run_to_end(runner, world::session(), "loop");
    BOOST_TEST((r.error == lb::errc::limit_exceeded));
    BOOST_TEST(r.message() == "agent 'assistant' reached max_steps (1) without a final answer");
    BOOST_TEST(r.events.size() == 3u); // the call, its response, the error event
}

BOOST_AUTO_TEST_CASE(the_time_limit_cancels_the_turn_and_keeps_what_was_stored) {
    world w({reply::tool_call("slow", {{"ms", 10'000}}), reply::text("too late")});
    lb::run_to_end_options o;
    o.time_limit = 100ms;
    const auto t0 = std::chrono::steady_clock::now();
    lb::turn_result r = lb::run_to_end(w.runner, world::session(), "wait", std::move(o));
    const auto took = std::chrono::steady_clock::now() - t0;
    BOOST_TEST((r.error == lb::errc::limit_exceeded));
    BOOST_TEST(r.message() == "run_to_end: the turn's time limit (100 ms) passed; the turn was cancelled");
    BOOST_TEST((took >= 100ms));
    BOOST_TEST((took < 5s));
    BOOST_REQUIRE_EQUAL(r.events.size(), 1u); // the call was stored before the limit
    BOOST_TEST(r.events[0].has_tool_calls());
    auto st = w.stored();
    BOOST_REQUIRE_EQUAL(st.size(), 2u); // the user message and the call: nothing lost
    BOOST_TEST(st[1].id == r.events[0].id);
    BOOST_TEST(w.model.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(a_time_limit_that_does_not_pass_changes_nothing) {
    world w({reply::text("quick")});
    lb::run_to_end_options o;
    o.time_limit = 10s;
    const auto t0 = std::chrono::steady_clock::now();
    lb::turn_result r = lb::run_to_end(w.runner, world::session(), "hi", std::move(o));
    BOOST_TEST(r.ok());
    BOOST_TEST(r.final_answer == "quick");
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5s)); // the timer does not hold the turn
}

BOOST_AUTO_TEST_CASE(a_negative_time_limit_is_refused_and_the_turn_never_starts) {
    world w({reply::text("never asked")});
    lb::run_to_end_options o;
    o.time_limit = -5ms;
    lb::turn_result r = lb::run_to_end(w.runner, world::session(), "hi", std::move(o));
    BOOST_TEST((r.error == lb::errc::invalid_argument));
    BOOST_TEST(r.message() == "run_to_end: options.time_limit is negative (-5 ms); zero means no limit");
    BOOST_TEST(r.events.empty());
    BOOST_TEST(w.model.request_count() == 0u);
    BOOST_TEST(w.stored().empty()); // not even the user's message: the turn did not run
}

BOOST_AUTO_TEST_CASE(a_time_limit_beyond_a_century_is_no_limit) {
    // milliseconds::max() once overflowed the timer's nanoseconds (UB) and ended the turn at once.
    for (auto limit : {std::chrono::milliseconds::max(), std::chrono::milliseconds(std::chrono::hours(24 * 36525 + 1))}) {
        world w({reply::text("quick")});
        lb::run_to_end_options o;
        o.time_limit = limit;
        lb::turn_result r = lb::run_to_end(w.runner, world::session(), "hi", std::move(o));
        BOOST_TEST(r.ok(), r.message());
        BOOST_TEST(r.final_answer == "quick");
    }
}

BOOST_AUTO_TEST_CASE(cancellation_through_a_bound_slot) {
    world w({reply::tool_call("slow", {{"ms", 10'000}}), reply::text("too late")});
    asio::cancellation_signal cancel;
    bool done = false;
    boost::system::error_code ec_seen;
    lb::turn_result r;
    lb::async_run_to_end(w.runner, world::session(), "wait",
                         asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code ec, lb::turn_result res) {
                             ec_seen = ec;
                             r = std::move(res);
                             done = true;
                         }));
    asio::steady_timer later(w.io, 50ms);
    later.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::terminal); });
    const auto t0 = std::chrono::steady_clock::now();
    run_until(w.io, done);
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5s));
    BOOST_TEST((ec_seen == lb::errc::cancelled));
    BOOST_TEST((r.error == lb::errc::cancelled));
    BOOST_TEST(r.message() == "run_to_end: the turn was cancelled");
    BOOST_REQUIRE_EQUAL(r.events.size(), 1u);
    BOOST_TEST(w.stored().size() == 2u);
    // A later turn of the session runs: the cancelled one released it.
    w.model.then(reply::text("after"));
    lb::turn_result again = lb::run_to_end(w.runner, world::session(), "again");
    BOOST_TEST(again.ok(), again.message());
}

BOOST_AUTO_TEST_CASE(a_signal_after_the_end_changes_nothing) {
    world w({reply::text("done")});
    asio::cancellation_signal cancel;
    bool done = false;
    lb::turn_result r;
    lb::async_run_to_end(w.runner, world::session(), "hi",
                         asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code, lb::turn_result res) {
                             r = std::move(res);
                             done = true;
                         }));
    run_until(w.io, done);
    cancel.emit(asio::cancellation_type::terminal); // the slot was cleared: nothing runs
    w.io.restart();
    w.io.run();
    BOOST_TEST(r.ok());
    BOOST_TEST(r.final_answer == "done");
}

BOOST_AUTO_TEST_CASE(use_awaitable_and_the_default_token) {
    world w({reply::text("one"), reply::text("two"), reply::auth_failed("no key")});
    std::vector<std::string> answers;
    std::optional<boost::system::error_code> thrown;
    std::string thrown_words;
    asio::co_spawn(
        w.io,
        [&]() -> asio::awaitable<void> {
            lb::run_options o1 = world::session();
            auto op1 = lb::async_run_to_end(w.runner, std::move(o1), "first", asio::use_awaitable);
            lb::turn_result r1 = co_await std::move(op1);
            answers.push_back(r1.final_answer);
            // The default token (asio::deferred), awaited; the stream form.
            lb::event_stream turn = w.runner.run(world::session(), "second");
            auto op2 = lb::async_run_to_end(std::move(turn));
            lb::turn_result r2 = co_await std::move(op2);
            answers.push_back(r2.final_answer);
            // A failure throws error_with_diagnostics: the code and the words.
            try {
                lb::run_options o3 = world::session();
                auto op3 = lb::async_run_to_end(w.runner, std::move(o3), "third", asio::use_awaitable);
                co_await std::move(op3);
            } catch (const lb::error_with_diagnostics& e) {
                thrown = e.code();
                thrown_words = e.get_diagnostics().message();
            }
        },
        asio::detached);
    w.io.run();
    BOOST_TEST((answers == std::vector<std::string>{"one", "two"}));
    BOOST_REQUIRE(thrown.has_value());
    BOOST_TEST((*thrown == lb::errc::auth_failed));
    BOOST_TEST(thrown_words == "model call of agent 'assistant' failed: authentication failed: no key");
}

BOOST_AUTO_TEST_CASE(as_tuple_keeps_the_result_of_a_failed_turn) {
    world w({reply::tool_call("add", {{"a", 1}, {"b", 2}}), reply::auth_failed("expired key")});
    std::optional<std::tuple<boost::system::error_code, lb::turn_result>> got;
    asio::co_spawn(
        w.io,
        [&]() -> asio::awaitable<void> {
            lb::run_options o = world::session();
            auto op = lb::async_run_to_end(w.runner, std::move(o), "1 + 2", asio::as_tuple(asio::deferred));
            got = co_await std::move(op);
        },
        asio::detached);
    w.io.run();
    BOOST_REQUIRE(got.has_value());
    auto& [ec, r] = *got;
    BOOST_TEST((ec == lb::errc::auth_failed));
    BOOST_TEST((r.error == ec));
    BOOST_TEST(r.message() == "model call of agent 'assistant' failed: authentication failed: expired key");
    BOOST_REQUIRE_EQUAL(r.events.size(), 3u); // the call, the response, the error event
    BOOST_TEST(r.events[1].tool_responses().front().result == json::value(3));
}

BOOST_AUTO_TEST_CASE(deferred_launched_later_with_a_callback) {
    world w({reply::text("later")});
    auto op = lb::async_run_to_end(w.runner, world::session(), "hi", asio::deferred);
    w.io.restart();
    w.io.run(); // nothing started yet
    BOOST_TEST(w.model.request_count() == 0u);
    bool done = false;
    lb::turn_result r;
    std::move(op)([&](boost::system::error_code, lb::turn_result res) {
        r = std::move(res);
        done = true;
    });
    run_until(w.io, done);
    BOOST_TEST(r.final_answer == "later");
}

BOOST_AUTO_TEST_CASE(use_future_on_another_thread) {
    world w({reply::text("from the future"), reply::bad_response("garbage")});
    lb::run_options o1 = world::session();
    std::future<lb::turn_result> ok = lb::async_run_to_end(w.runner, std::move(o1), "hi", asio::use_future);
    lb::run_options o2 = world::session("s2");
    std::future<lb::turn_result> bad = lb::async_run_to_end(w.runner, std::move(o2), "hi", asio::use_future);
    std::thread t([&] { w.io.run(); });
    lb::turn_result r = ok.get();
    BOOST_TEST(r.final_answer == "from the future");
    try {
        bad.get();
        BOOST_FAIL("the failed turn's future did not throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::bad_response));
    }
    t.join();
}

BOOST_AUTO_TEST_CASE(blocking_on_a_thread_pool_executor) {
    // Not an io_context: run_to_end waits for the turn, which the pool runs.
    asio::thread_pool pool(1);
    auto strand = asio::make_strand(pool.get_executor());
    lb::memory_store store{strand};
    lb::scripted_model model{strand, {reply::text("pooled")}};
    agent_type agent(lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model});
    lb::runner runner{agent, store};
    lb::turn_result r = lb::run_to_end(runner, world::session(), "hi");
    BOOST_TEST(r.ok(), r.message());
    BOOST_TEST(r.final_answer == "pooled");
    pool.join();
}

BOOST_AUTO_TEST_CASE(an_exception_that_is_not_a_system_error_is_unexpected_exception) {
    world w({reply::text("x").in_chunks(2), reply::text("next turn")});
    lb::run_to_end_options o;
    o.on_event = [](const lb::event&) { throw std::logic_error("a bug in on_event"); };
    lb::turn_result r = lb::run_to_end(w.runner, world::session(), "hi", std::move(o));
    BOOST_TEST((r.error == lb::errc::unexpected_exception));
    BOOST_TEST(r.message() == "a bug in on_event");
    BOOST_TEST(r.events.empty()); // thrown at the first (partial) event
    // The turn was cancelled with the stream: the session is free for the next one.
    lb::turn_result next = lb::run_to_end(w.runner, world::session(), "again");
    BOOST_TEST(next.ok(), next.message());
}

BOOST_AUTO_TEST_SUITE_END()

// Silent turns (run_options::silent_token): over a memory_store (the runner takes the agent's
// events inside its emit()) and over an any_store (the runner reads the agent's stream).
namespace {

template <class Store>
struct silent_world {
    asio::io_context io;
    lb::memory_store memory{io.get_executor()};
    Store store;
    lb::scripted_model model;
    agent_type agent;
    lb::runner<agent_type, Store> runner;

    explicit silent_world(std::vector<reply> replies)
        : store(memory), model(io.get_executor(), std::move(replies)),
          agent(lb::llm_agent_options<lb::scripted_model>{
              .name = "assistant", .model = model, .tools = lb::tools(lb::function_tool("add", "Adds", add)),
              .retry = {.max_attempts = 1}}),
          runner(agent, store) {}

    struct outcome {
        lb::turn_result result;
        std::vector<lb::event> partials; // as the caller saw them
    };
    outcome turn(std::string text, std::string token = "NO_REPLY") {
        lb::run_options o = world::session();
        o.silent_token = std::move(token);
        outcome out;
        lb::run_to_end_options ro;
        ro.on_event = [&](const lb::event& e) {
            if (e.partial) out.partials.push_back(e);
        };
        out.result = lb::run_to_end(runner, std::move(o), std::move(text), std::move(ro));
        return out;
    }
    std::vector<lb::event> stored() {
        std::optional<lb::session> s;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                lb::session_key key{"app", "u1", "s1"};
                auto get = memory.async_get(std::move(key), lb::get_options{}, asio::use_awaitable);
                s = co_await std::move(get);
            },
            asio::detached);
        io.restart();
        io.run();
        return s ? std::vector<lb::event>(s->events.begin(), s->events.end()) : std::vector<lb::event>{};
    }
};

std::string partial_text(const std::vector<lb::event>& partials) {
    std::string t;
    for (const auto& e : partials) t += e.text();
    return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(silent_turns)

using stores = std::tuple<lb::memory_store, lb::any_store>; // copies of a memory_store share its sessions

BOOST_AUTO_TEST_CASE_TEMPLATE(a_silent_reply_is_stored_marked_and_not_delivered, Store, stores) {
    silent_world<Store> w({reply::text("NO_REPLY").with_thinking("nothing to say").in_chunks(3), reply::text("  no_reply \n")});
    auto a = w.turn("background job done");
    BOOST_TEST(a.result.ok(), a.result.message());
    BOOST_TEST(a.result.events.empty());        // nothing yielded
    BOOST_TEST(a.partials.empty());             // nothing leaked mid-turn, thinking included
    BOOST_TEST(a.result.final_answer.empty());
    auto b = w.turn("another job"); // the whole reply is the token, in any case, white space around it
    BOOST_TEST(b.result.events.empty());
    auto st = w.stored();
    BOOST_REQUIRE_EQUAL(st.size(), 4u);
    BOOST_TEST(st[1].text() == "NO_REPLY");
    BOOST_TEST(st[1].metadata.at("silent") == true);
    BOOST_TEST(st[1].sequence == 2);
    BOOST_TEST(st[3].text() == "  no_reply \n");
    BOOST_TEST(st[3].metadata.at("silent") == true);
    BOOST_TEST(!st[0].metadata.contains("silent"));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(partials_are_held_while_the_reply_could_be_the_token, Store, stores) {
    // "NO_RE" could still become NO_REPLY: held; "AD it" makes it "NO_READ it": both go out
    // as one partial, then the answer.
    silent_world<Store> w({reply::text("NO_READ it").in_chunks(2)});
    auto a = w.turn("go");
    BOOST_TEST(a.result.ok(), a.result.message());
    BOOST_REQUIRE_EQUAL(a.partials.size(), 1u);
    BOOST_TEST(a.partials[0].text() == "NO_READ it");
    BOOST_REQUIRE_EQUAL(a.result.events.size(), 1u);
    BOOST_TEST(a.result.final_answer == "NO_READ it");
    BOOST_TEST(a.partials[0].id == a.result.events[0].id);
    BOOST_TEST(!a.result.events[0].metadata.contains("silent"));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_reply_that_only_begins_with_the_token_is_delivered_whole, Store, stores) {
    // Its partials are not shown (they begin with the token), its final event is.
    silent_world<Store> w({reply::text("no_reply needed, but: done").in_chunks(4), reply::text("Hello there").in_chunks(3)});
    auto a = w.turn("go");
    BOOST_TEST(a.partials.empty());
    BOOST_REQUIRE_EQUAL(a.result.events.size(), 1u);
    BOOST_TEST(a.result.final_answer == "no_reply needed, but: done");
    // An ordinary reply streams as ever: the first chunk already differs from the token.
    auto b = w.turn("hi");
    BOOST_TEST(partial_text(b.partials) == "Hello there");
    BOOST_TEST(b.partials.size() == 3u);
    BOOST_TEST(b.result.final_answer == "Hello there");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_tool_turn_ending_silently, Store, stores) {
    silent_world<Store> w({reply::tool_call("add", {{"a", 2}, {"b", 3}}), reply::text("NO_REPLY").in_chunks(2)});
    auto a = w.turn("add quietly");
    BOOST_TEST(a.result.ok(), a.result.message());
    BOOST_REQUIRE_EQUAL(a.result.events.size(), 2u); // the call and its result, not the silent answer
    BOOST_TEST(a.result.events[0].has_tool_calls());
    BOOST_TEST(a.result.events[1].tool_responses().size() == 1u);
    BOOST_TEST(a.partials.empty());
    auto st = w.stored();
    BOOST_REQUIRE_EQUAL(st.size(), 4u);
    BOOST_TEST(st[3].metadata.at("silent") == true);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(without_a_token_nothing_is_silent, Store, stores) {
    silent_world<Store> w({reply::text("NO_REPLY").in_chunks(2), reply::text("hello")});
    auto a = w.turn("go", "");
    BOOST_TEST(a.partials.size() == 2u);
    BOOST_TEST(a.result.final_answer == "NO_REPLY");
    BOOST_TEST(!w.stored().at(1).metadata.contains("silent"));
    // A blank token is no token: the reply is delivered (an empty one once made all silent).
    auto b = w.turn("again", " \n");
    BOOST_TEST(b.result.final_answer == "hello", b.result.message());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(white_space_around_the_token_is_ignored, Store, stores) {
    silent_world<Store> w({reply::text("no_reply").in_chunks(2)});
    auto a = w.turn("go", " NO_REPLY\n");
    BOOST_TEST(a.result.ok(), a.result.message());
    BOOST_TEST(a.result.events.empty());
    BOOST_TEST(a.partials.empty());
    BOOST_TEST(w.stored().at(1).metadata.at("silent") == true);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(silent_reply_rules) {
    using lb::detail::is_silent_reply;
    BOOST_TEST(is_silent_reply("NO_REPLY", "NO_REPLY"));
    BOOST_TEST(is_silent_reply(" no_Reply\n", "NO_REPLY"));
    BOOST_TEST(!is_silent_reply("NO_REPLY.", "NO_REPLY"));
    BOOST_TEST(!is_silent_reply("NO_REPL", "NO_REPLY"));
    BOOST_TEST(!is_silent_reply("", "NO_REPLY"));
    BOOST_TEST(!is_silent_reply("", ""));
    BOOST_TEST(!is_silent_reply("anything", ""));
    // White space around the token is the caller's, not part of it (" NO_REPLY" once
    // matched nothing, since the reply is trimmed); a blank token matches nothing.
    BOOST_TEST(is_silent_reply("NO_REPLY", " NO_REPLY\n"));
    BOOST_TEST(!is_silent_reply(" ", " "));
    BOOST_TEST(!is_silent_reply("", " \t"));
    lb::detail::silent_reply_filter padded(" NO_REPLY ");
    lb::event part = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("NO_"));
    part.partial = true;
    BOOST_TEST(!padded.partial(std::move(part)).has_value()); // held: it could still be the token
    lb::detail::silent_reply_filter blank("  ");
    lb::event shown = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("hello"));
    shown.partial = true;
    BOOST_TEST(blank.partial(std::move(shown)).has_value()); // nothing is silent
    lb::event whole = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text(""));
    BOOST_TEST(!blank.silent_final(whole));
}

// ---- conversation turns: keys, the index, resets (docs/sessions.md) -------------------------

BOOST_AUTO_TEST_SUITE(conversation_resets)

BOOST_AUTO_TEST_CASE(posix_time_zones_and_the_daily_boundary) {
    using lb::detail::boost_tz_from_posix;
    std::string why;
    BOOST_TEST(boost_tz_from_posix("UTC0", why) == "STD+00:00:00");
    BOOST_TEST(boost_tz_from_posix("CET-1CEST,M3.5.0,M10.5.0/3", why) == "STD+01:00:00DST,M3.5.0,M10.5.0/3");
    BOOST_TEST(boost_tz_from_posix("EST5EDT4,M3.2.0,M11.1.0", why) == "STD-05:00:00DST+01:00:00,M3.2.0,M11.1.0");
    BOOST_TEST(boost_tz_from_posix("<+0530>-5:30", why) == "STD+05:30:00");
    BOOST_TEST(boost_tz_from_posix("Europe/Oslo", why).empty());
    BOOST_TEST(!why.empty());
    BOOST_TEST(boost_tz_from_posix("CET", why).empty());
    BOOST_TEST(why.find("hours") != std::string::npos, why);
    BOOST_TEST(boost_tz_from_posix("UTC0,M3.5.0", why).empty());

    lb::reset_policy p;
    p.daily_at_hour = 4;
    p.time_zone = "CET-1CEST,M3.5.0,M10.5.0/3";
    auto clock = lb::detail::make_conversation_clock(p);
    // 2026-07-01 12:00 UTC (14:00 CEST): the boundary is 04:00 CEST = 02:00 UTC that day.
    const double noon_july = 1782907200;
    BOOST_TEST(clock->last_boundary(noon_july) == noon_july - 10 * 3600);
    // 2026-01-15 02:00 UTC (03:00 CET): before 04:00, so the previous day's 03:00 UTC.
    const double jan = 1768442400;
    BOOST_TEST(clock->last_boundary(jan) == jan - 23 * 3600);
    // The boundary itself counts as passed.
    BOOST_TEST(clock->last_boundary(noon_july - 10 * 3600) == noon_july - 10 * 3600);
    lb::conversation_entry e;
    e.started_at = noon_july - 11 * 3600; // before the boundary
    e.last_interaction_at = noon_july - 60;
    BOOST_TEST(clock->stale_reason(e, noon_july) == "daily");
    e.started_at = noon_july - 9 * 3600;
    BOOST_TEST(clock->stale_reason(e, noon_july) == "");
    // Both expired: the one that expired first.
    lb::reset_policy both = p;
    both.idle = std::chrono::minutes(60);
    auto clock2 = lb::detail::make_conversation_clock(both);
    e.started_at = noon_july - 30 * 3600;
    e.last_interaction_at = noon_july - 29 * 3600; // idle since 28 h ago, before the boundary
    BOOST_TEST(clock2->stale_reason(e, noon_july) == "idle");
    e.last_interaction_at = noon_july - 2 * 3600; // idle expired 1 h ago, after the boundary
    BOOST_TEST(clock2->stale_reason(e, noon_july) == "daily");
}

BOOST_AUTO_TEST_SUITE_END()

// ---- artifacts in turns: the tools, artifact_delta, file parts (docs/artifacts.md) ----------

namespace {

struct artifact_world {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    lb::memory_artifact_service files; // copies share: the test reads what the tools wrote
    lb::any_artifact_service artifacts{io.get_executor(), files};
    lb::scripted_model model;
    agent_type agent;
    lb::runner<agent_type, lb::memory_store> runner;

    static lb::runner_options options(lb::any_artifact_service* a) {
        lb::runner_options o;
        o.artifacts = a;
        return o;
    }
    artifact_world(std::vector<reply> replies, bool with_service = true, lb::artifact_tools_options to = {})
        : model(io.get_executor(), std::move(replies)),
          agent(lb::llm_agent_options<lb::scripted_model>{
              .name = "writer", .model = model, .tools = lb::artifact_tools(to), .retry = {.max_attempts = 1}}),
          runner(agent, store, options(with_service ? &artifacts : nullptr)) {}

    lb::turn_result turn(std::string text, std::string session = "s1") {
        return lb::run_to_end(runner, lb::run_options("app", "u1", std::move(session)), std::move(text));
    }
    std::vector<lb::event> stored(const std::string& id = "s1") {
        std::optional<lb::session> s;
        BOOST_TEST_REQUIRE(!store.get({"app", "u1", id}, {}, s));
        return s ? std::vector<lb::event>(s->events.begin(), s->events.end()) : std::vector<lb::event>{};
    }
};

const lb::file_part* file_in(const lb::llm_request& r) {
    for (const auto& m : r.messages)
        for (const auto& p : m.parts)
            if (const auto* f = std::get_if<lb::file_part>(&p)) return f;
    return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(artifacts_in_turns)

BOOST_AUTO_TEST_CASE(a_saved_artifact_is_in_the_delta_and_a_loaded_one_in_the_next_request) {
    artifact_world w({reply::tool_call("save_artifact", {{"name", "report.md"}, {"content", "# Q3\nAll good."}, {"mime_type", "text/markdown"}}),
                      reply::tool_call("load_artifact", {{"name", "report.md"}}), reply::text("Saved and read back.")});
    auto r = w.turn("Write the report, then read it.");
    BOOST_TEST(r.ok(), r.message());
    auto events = w.stored();
    // user, call, response (save), call, response (load), answer
    BOOST_REQUIRE_EQUAL(events.size(), 6u);
    BOOST_TEST(events[2].actions.artifact_delta.at("report.md") == 0);
    BOOST_TEST(events[2].tool_responses().front().result.at("version") == 0);
    std::optional<lb::artifact> saved;
    BOOST_TEST_REQUIRE(!w.artifacts.load({"app", "u1", "s1", "report.md"}, std::nullopt, saved));
    BOOST_TEST_REQUIRE(saved.has_value());
    BOOST_TEST(saved->data == "# Q3\nAll good.");
    BOOST_TEST(saved->info.mime_type == "text/markdown");
    // The load's response carries the file; the model's next request shows it.
    BOOST_TEST(events[4].actions.artifact_delta.empty());
    auto requests = w.model.requests();
    BOOST_REQUIRE_EQUAL(requests.size(), 3u);
    const lb::file_part* f = file_in(requests[2]);
    BOOST_TEST_REQUIRE(f != nullptr);
    BOOST_TEST(f->name.value_or("") == "report.md");
    BOOST_TEST(f->mime_type.value_or("") == "text/markdown");
    BOOST_TEST(f->inline_bytes.value_or("") == "IyBRMwpBbGwgZ29vZC4="); // base64 of "# Q3\nAll good."
    BOOST_TEST(!file_in(requests[1])); // not before it was loaded
}

BOOST_AUTO_TEST_CASE(a_large_artifact_goes_by_reference_and_user_artifacts_cross_sessions) {
    lb::artifact_tools_options to;
    to.inline_limit = 8;
    artifact_world w({reply::tool_call("save_artifact", {{"name", "user:notes.txt"}, {"content", "more than eight bytes"}}),
                      reply::text("ok"), reply::tool_call("load_artifact", {{"name", "user:notes.txt"}, {"version", 0}}),
                      reply::tool_call("list_artifacts"), reply::text("done")},
                     true, to);
    BOOST_TEST(w.turn("note it").ok());
    auto r = w.turn("read it in another session", "s2");
    BOOST_TEST(r.ok(), r.message());
    auto requests = w.model.requests();
    BOOST_REQUIRE_EQUAL(requests.size(), 5u);
    const lb::file_part* f = file_in(requests[3]);
    BOOST_TEST_REQUIRE(f != nullptr);
    BOOST_TEST(f->uri.value_or("") == "artifact://user:notes.txt/0");
    BOOST_TEST(!f->inline_bytes.has_value());
    auto events = w.stored("s2");
    BOOST_TEST(events[2].tool_responses().front().result.at("attached") == "reference");
    BOOST_TEST(events[4].tool_responses().front().result == lb::json::array{"user:notes.txt"});
}

BOOST_AUTO_TEST_CASE(artifact_tool_failures_are_tool_errors_the_model_reads) {
    artifact_world w({reply::tool_call("load_artifact", {{"name", "missing.txt"}}),
                      reply::tool_call("load_artifact", {{"name", "../etc/passwd"}}),
                      reply::tool_call("save_artifact", {{"name", "a.txt"}, {"content", "x"}}), reply::text("gave up")});
    BOOST_TEST(w.turn("try").ok());
    auto events = w.stored();
    BOOST_REQUIRE_EQUAL(events.size(), 8u);
    auto error_of = [&](std::size_t i) { return events[i].tool_responses().front().error.value_or(""); };
    BOOST_TEST(error_of(2).find("no artifact named 'missing.txt'") != std::string::npos, error_of(2));
    BOOST_TEST(error_of(4).find("contains '..'") != std::string::npos, error_of(4));
    BOOST_TEST(events[6].actions.artifact_delta.at("a.txt") == 0);
    // Without a service: the save is an error naming what is missing.
    artifact_world none({reply::tool_call("save_artifact", {{"name", "a.txt"}, {"content", "x"}}), reply::text("no")}, false);
    BOOST_TEST(none.turn("try").ok());
    auto ev = none.stored();
    BOOST_TEST(ev[2].tool_responses().front().error.value_or("").find("no artifact service") != std::string::npos);
    BOOST_TEST(ev[2].actions.artifact_delta.empty());
}

namespace {

// A service whose list fails with its own words.
struct failing_list_service : lb::memory_artifact_service {
    failing_list_service() : lb::memory_artifact_service() {}
    boost::system::error_code artifact_list(const std::string&, const std::string&, const std::string&,
                                            std::vector<std::string>& names, lb::diagnostics* diag) {
        names.clear();
        if (diag) diag->assign("the artifact disk is on fire");
        return lb::errc::io_error;
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(list_artifacts_failures_name_what_went_wrong) {
    // Without a service: the tool error says so, not only "invalid argument".
    artifact_world none({reply::tool_call("list_artifacts"), reply::text("no")}, false);
    BOOST_TEST(none.turn("list").ok());
    auto ev = none.stored();
    BOOST_REQUIRE_EQUAL(ev.size(), 4u);
    const std::string without = ev[2].tool_responses().front().error.value_or("");
    BOOST_TEST(without.find("no artifact service") != std::string::npos, without);
    // A failing service: the tool error carries the service's words.
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    failing_list_service failing;
    lb::any_artifact_service artifacts{io.get_executor(), failing};
    lb::scripted_model model(io.get_executor(), {reply::tool_call("list_artifacts"), reply::text("no")});
    agent_type agent(lb::llm_agent_options<lb::scripted_model>{
        .name = "writer", .model = model, .tools = lb::artifact_tools(), .retry = {.max_attempts = 1}});
    lb::runner_options o;
    o.artifacts = &artifacts;
    lb::runner<agent_type, lb::memory_store> runner(agent, store, o);
    BOOST_TEST(lb::run_to_end(runner, lb::run_options("app", "u1", "s1"), "list").ok());
    std::optional<lb::session> s;
    BOOST_TEST_REQUIRE(!store.get({"app", "u1", "s1"}, {}, s));
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u);
    const std::string failed = s->events[2].tool_responses().front().error.value_or("");
    BOOST_TEST(failed.find("the artifact disk is on fire") != std::string::npos, failed);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- memory in turns: memorize, preload, load_memory (docs/memory.md) ------------------------

namespace {

struct memory_world {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    lb::in_memory_memory_service recall; // copies share: the test reads what the runner added
    lb::any_memory_service memory{io.get_executor(), recall};
    lb::scripted_model model;
    agent_type agent;
    lb::runner<agent_type, lb::memory_store> runner;

    static lb::runner_options options(lb::any_memory_service* m, std::size_t preload) {
        lb::runner_options o;
        o.memory = m;
        o.memory_preload = preload;
        return o;
    }
    memory_world(std::vector<reply> replies, std::size_t preload = 0, bool with_service = true)
        : model(io.get_executor(), std::move(replies)),
          agent(lb::llm_agent_options<lb::scripted_model>{.name = "assistant",
                                                          .instruction = "You are a cook.",
                                                          .model = model,
                                                          .tools = lb::tools(lb::load_memory_tool(3)),
                                                          .retry = {.max_attempts = 1}}),
          runner(agent, store, options(with_service ? &memory : nullptr, preload)) {}

    lb::turn_result turn(std::string text, std::string session) {
        return lb::run_to_end(runner, lb::run_options("app", "u1", std::move(session)), std::move(text));
    }
    std::vector<lb::memory_entry> search(std::string text) {
        lb::memory_query q;
        q.app_name = "app";
        q.user_id = "u1";
        q.text = std::move(text);
        std::vector<lb::memory_entry> out;
        BOOST_TEST_REQUIRE(!recall.memory_search(q, out));
        return out;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(memory_in_turns)

BOOST_AUTO_TEST_CASE(turns_are_memorized_and_recalled_in_other_sessions) {
    memory_world w({reply::text("Noted: vegetarian, no mushrooms."), reply::text("A vegetarian risotto without mushrooms.")}, 5);
    BOOST_TEST(w.turn("I am vegetarian and I hate mushrooms.", "monday").ok());
    auto found = w.search("mushrooms");
    BOOST_REQUIRE_EQUAL(found.size(), 2u); // the user's message and the reply
    BOOST_TEST(found[0].session_id == "monday");
    auto r = w.turn("What should I cook tonight? Something vegetarian.", "tuesday");
    BOOST_TEST(r.ok(), r.message());
    auto requests = w.model.requests();
    BOOST_REQUIRE_EQUAL(requests.size(), 2u);
    const std::string& instruction = requests[1].system_instruction;
    BOOST_TEST(instruction.starts_with("You are a cook."), instruction);
    BOOST_TEST(instruction.find("<past_conversations>") != std::string::npos, instruction);
    BOOST_TEST(instruction.find("user: I am vegetarian and I hate mushrooms.") != std::string::npos, instruction);
    BOOST_TEST(requests[0].system_instruction == "You are a cook."); // nothing to recall on monday
    // Tuesday's turn is remembered too.
    BOOST_TEST(w.search("tonight").size() == 1u);
}

// Compaction summaries written during a turn are memorized with their range.
BOOST_AUTO_TEST_CASE(compaction_summaries_are_memorized_with_their_range) {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    lb::in_memory_memory_service recall;
    lb::any_memory_service memory{io.get_executor(), recall};
    lb::scripted_model model(io.get_executor(), {reply::text("a1"), reply::text("a2"), reply::text("a3"), reply::text("a4")});
    agent_type agent(lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model, .retry = {.max_attempts = 1}});
    lb::runner_options o;
    o.memory = &memory;
    lb::runner<agent_type, lb::memory_store, lb::sliding_window> runner(agent, store, o, lb::sliding_window{2, 0});
    for (const char* q : {"q1 ALPHA", "q2", "q3 BRAVO", "q4"})
        BOOST_TEST(lb::run_to_end(runner, lb::run_options("app", "u1", "s1"), q).ok());
    lb::memory_query q;
    q.app_name = "app";
    q.user_id = "u1";
    q.text = "alpha";
    std::vector<lb::memory_entry> found;
    BOOST_TEST_REQUIRE(!recall.memory_search(q, found));
    std::size_t summaries = 0;
    for (const auto& e : found)
        if (e.metadata.contains("compaction")) {
            ++summaries;
            const auto& range = e.metadata.at("compaction").as_object();
            BOOST_TEST(range.at("first_sequence").as_int64() >= 1);
            BOOST_TEST(range.at("last_sequence").as_int64() >= range.at("first_sequence").as_int64());
        }
    BOOST_TEST(summaries >= 1u);
    BOOST_TEST(found.size() > summaries); // the user's own message too
}

BOOST_AUTO_TEST_CASE(the_model_searches_memory_with_load_memory) {
    memory_world w({reply::text("Lisbon in May sounds lovely."), reply::tool_call("load_memory", {{"query", "where trip"}}),
                    reply::text("You were going to Lisbon.")});
    BOOST_TEST(w.turn("Our trip is to Lisbon in May.", "s1").ok());
    BOOST_TEST(w.turn("Where was our trip again?", "s2").ok());
    std::optional<lb::session> s2;
    BOOST_TEST_REQUIRE(!w.store.get({"app", "u1", "s2"}, {}, s2));
    const auto& response = s2->events[2].tool_responses().front();
    BOOST_TEST(!response.error.has_value());
    const auto& hits = response.result.as_array();
    BOOST_REQUIRE(!hits.empty());
    BOOST_TEST(hits.size() <= 3u); // load_memory_tool(3)
    BOOST_TEST(hits[0].at("text").as_string().find("trip") != std::string::npos);
    BOOST_TEST(hits[0].at("session_id") == "s1");
    // Without a memory service: a tool error naming what is missing.
    memory_world none({reply::tool_call("load_memory", {{"query", "trip"}}), reply::text("no")}, 0, false);
    BOOST_TEST(none.turn("remember?", "s1").ok());
    std::optional<lb::session> s;
    BOOST_TEST_REQUIRE(!none.store.get({"app", "u1", "s1"}, {}, s));
    BOOST_TEST(s->events[2].tool_responses().front().error.value_or("").find("no memory service") != std::string::npos);
}

// load_memory_tool's limit is a search's (1 to 1000), checked when the tool is made, not at
// every call.
BOOST_AUTO_TEST_CASE(load_memory_tool_refuses_a_limit_out_of_range) {
    for (std::size_t bad : {std::size_t(0), std::size_t(1001), std::size_t(-1)}) {
        try {
            (void)lb::load_memory_tool(bad);
            BOOST_ERROR("load_memory_tool(" << bad << ") was accepted");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument), e.what());
            const std::string what = e.what();
            BOOST_TEST(what.find("limit") != std::string::npos, what);
            BOOST_TEST(what.find("1 to 1000") != std::string::npos, what);
        }
    }
    BOOST_CHECK_NO_THROW((void)lb::load_memory_tool(1));
    BOOST_CHECK_NO_THROW((void)lb::load_memory_tool(1000));
}

BOOST_AUTO_TEST_CASE(a_memory_preload_past_the_search_limit_is_refused_by_the_runner) {
    // It used to fail every turn with words instead ("recalling memory ... limit is 1001").
    for (std::size_t bad : {std::size_t(1001), std::size_t(-1)}) {
        try {
            memory_world w({}, bad);
            BOOST_ERROR("memory_preload " << bad << " was accepted");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument), e.what());
            BOOST_TEST(std::string(e.what()).find("runner_options::memory_preload is " + std::to_string(bad) + " (0 to 1000)") !=
                           std::string::npos,
                       e.what());
        }
    }
    BOOST_CHECK_NO_THROW(memory_world({}, 1000));
}

BOOST_AUTO_TEST_SUITE_END()
