// The conversation conformance suite: conversation turns, resets, repairs, rebuilds, forks,
// scheduled runs and maintenance, against every store with its session index. docs/sessions.md.
//
// A backend test file defines a fixture type F with
//   using store_type = ...;
//   store_type open(asio::any_io_executor);   // a store on the fixture's data
//   auto open_index();                         // a session_index model on the same data
// and instantiates the suite with LIBRETTO_CONVERSATION_CONFORMANCE(F).
#ifndef LIBRETTO_TESTS_CONVERSATION_CONFORMANCE_HPP
#define LIBRETTO_TESTS_CONVERSATION_CONFORMANCE_HPP

#include <libretto/agent/llm_agent.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/fork.hpp>
#include <libretto/runner/rewind.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/conversation_key.hpp>
#include <libretto/store/session_index_maintenance.hpp>
#include <libretto/store/session_index_rebuild.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace conversation_conformance {

namespace asio = boost::asio;
namespace lb = libretto;
using reply = lb::scripted_reply;
using agent_type = lb::llm_agent<lb::scripted_model>;

/// Runs `coro` (an awaitable<T>) to its end on `io`; rethrows what it threw.
template <class T>
T run(asio::io_context& io, asio::awaitable<T> coro) {
    std::optional<T> out;
    std::exception_ptr failure;
    asio::co_spawn(io, std::move(coro), [&](std::exception_ptr e, T r) {
        failure = e;
        if (!e) out.emplace(std::move(r));
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*out);
}

/// A runner with a session index over F's store, a scripted model and one agent.
template <class F>
struct world {
    F fixture;
    asio::io_context io;
    typename F::store_type store;
    lb::any_session_index index;
    lb::scripted_model model;
    agent_type agent;
    lb::runner<agent_type, typename F::store_type> runner;

    static lb::runner_options options(lb::any_session_index& ix, lb::reset_policy reset) {
        lb::runner_options o;
        o.index = &ix;
        o.reset = std::move(reset);
        return o;
    }

    explicit world(std::vector<reply> replies, lb::reset_policy reset = {})
        : store(fixture.open(io.get_executor())), index(io.get_executor(), fixture.open_index()),
          model(io.get_executor(), std::move(replies)),
          agent(lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model, .retry = {.max_attempts = 1}}),
          runner(agent, store, options(index, std::move(reset))) {}

    static inline const std::string key = lb::direct_key("assistant");

    lb::turn_result turn(std::string text, bool background = false, bool reset = false) {
        auto o = lb::run_options::in_conversation("app", "u1", key);
        o.background = background;
        o.reset = reset;
        return lb::run_to_end(runner, std::move(o), std::move(text));
    }
    std::optional<lb::conversation_entry> find(const std::string& k) {
        std::optional<lb::conversation_entry> e;
        lb::diagnostics d;
        BOOST_TEST_REQUIRE(!index.get("app", k, e, &d), d.message());
        return e;
    }
    lb::conversation_entry entry(const std::string& k = key) {
        auto e = find(k);
        BOOST_TEST_REQUIRE(e.has_value());
        return *e;
    }
    lb::conversation_entry patch(const lb::conversation_patch& p, const std::string& k = key) {
        lb::conversation_entry out;
        lb::diagnostics d;
        BOOST_TEST_REQUIRE(!index.patch("app", k, p, out, &d), d.message());
        return out;
    }
    std::optional<lb::session> get(const std::string& id, const std::string& user = "u1") {
        return run(io, [](auto& st, lb::session_key k) -> asio::awaitable<std::optional<lb::session>> {
            auto op = st.async_get(std::move(k), lb::get_options{}, asio::use_awaitable);
            co_return co_await std::move(op);
        }(store, lb::session_key{"app", user, id}));
    }
    std::vector<lb::event> stored(const std::string& id) {
        auto s = get(id);
        return s ? std::vector<lb::event>(s->events.begin(), s->events.end()) : std::vector<lb::event>{};
    }
    lb::session create(lb::create_options o) {
        return run(io, [](auto& st, lb::create_options o) -> asio::awaitable<lb::session> {
            auto op = st.async_create(std::move(o), asio::use_awaitable);
            co_return co_await std::move(op);
        }(store, std::move(o)));
    }
    std::int64_t append(lb::session& s, lb::event e) {
        return run(io, [](auto& st, lb::session& s, lb::event e) -> asio::awaitable<std::int64_t> {
            auto op = st.async_append(s, std::move(e), asio::use_awaitable);
            co_return co_await std::move(op);
        }(store, s, std::move(e)));
    }
    std::size_t session_count() {
        return run(io, [](auto& st) -> asio::awaitable<std::size_t> {
            auto op = st.async_list(lb::list_options("app", std::nullopt, 1000), asio::use_awaitable);
            lb::list_page page = co_await std::move(op);
            co_return page.sessions.size();
        }(store));
    }
    lb::fork_result fork(lb::session_key parent, lb::fork_options o, boost::system::error_code* failed = nullptr,
                         lb::diagnostics* d = nullptr) {
        lb::diagnostics own;
        lb::diagnostics& said = d ? *d : own;
        auto [ec, r] = run(io, [](auto& st, lb::session_key parent, lb::fork_options o, lb::diagnostics& said)
                                   -> asio::awaitable<std::tuple<boost::system::error_code, lb::fork_result>> {
            auto op = lb::async_fork_session(st, std::move(parent), std::move(o), said, asio::as_tuple(asio::use_awaitable));
            co_return co_await std::move(op);
        }(store, std::move(parent), std::move(o), said));
        if (failed) *failed = ec;
        else BOOST_TEST(!ec, said.message());
        return std::move(r);
    }
    lb::maintenance_report maintain(lb::maintenance_options o, boost::system::error_code* failed = nullptr,
                                    lb::diagnostics* d = nullptr) {
        lb::diagnostics own;
        lb::diagnostics& said = d ? *d : own;
        auto [ec, r] = run(io, [](auto& st, lb::any_session_index& ix, lb::maintenance_options o, lb::diagnostics& said)
                                   -> asio::awaitable<std::tuple<boost::system::error_code, lb::maintenance_report>> {
            auto op = lb::async_maintain_sessions(st, ix, std::move(o), said, asio::as_tuple(asio::use_awaitable));
            co_return co_await std::move(op);
        }(store, index, std::move(o), said));
        if (failed) *failed = ec;
        else BOOST_TEST(!ec, said.message());
        return std::move(r);
    }
    std::pair<boost::system::error_code, lb::index_rebuild_report> rebuild(std::string app, lb::diagnostics& said) {
        auto [ec, r] = run(io, [](auto& st, lb::any_session_index& ix, std::string app, lb::diagnostics& said)
                                   -> asio::awaitable<std::tuple<boost::system::error_code, lb::index_rebuild_report>> {
            auto op = lb::async_rebuild_session_index(st, ix, std::move(app), said, asio::as_tuple(asio::use_awaitable));
            co_return co_await std::move(op);
        }(store, index, std::move(app), said));
        return {ec, std::move(r)};
    }
};

// A signer for the chain checks: a deterministic "signature" naming the event's sequence.
struct test_signer {
    std::string_view did() const { return "did:test:forks"; }
    void sign_event(lb::event& e) const {
        e.signer_did = std::string(did());
        e.signature = "sig-" + e.session_id + "-" + std::to_string(e.sequence);
    }
};

template <class F>
void case_a_key_keeps_its_session_and_the_entry_counts_the_turns() {
    world<F> w({reply::text("Hi").with_usage(100, 10), reply::text("Again").with_usage(180, 20)});
    const double before = lb::event::now();
    auto a = w.turn("hello");
    BOOST_TEST(a.ok(), a.message());
    lb::conversation_entry e = w.entry();
    BOOST_TEST(!e.session_id.empty());
    BOOST_TEST(e.user_id == "u1");
    BOOST_TEST(e.chat_type == "direct");
    BOOST_TEST(e.started_at >= before);
    BOOST_TEST(e.last_interaction_at >= e.started_at);
    BOOST_TEST(e.input_tokens == 100);
    BOOST_TEST(e.output_tokens == 10);
    BOOST_TEST(e.context_tokens == 100);
    BOOST_TEST(e.last_sequence == 2);
    auto b = w.turn("hello again");
    BOOST_TEST(b.ok(), b.message());
    lb::conversation_entry e2 = w.entry();
    BOOST_TEST(e2.session_id == e.session_id); // the same session
    BOOST_TEST(e2.input_tokens == 280);
    BOOST_TEST(e2.output_tokens == 30);
    BOOST_TEST(e2.total_tokens == 310);
    BOOST_TEST(e2.context_tokens == 180); // the latest request's size
    BOOST_TEST(e2.last_sequence == 4);
    BOOST_TEST(e2.previous.empty());
    auto events = w.stored(e.session_id);
    BOOST_REQUIRE_EQUAL(events.size(), 4u);
    // The session names its conversation in its state (what a rebuild finds it by).
    BOOST_TEST(events[0].actions.state_delta.at("libretto:conversation").as_string() == w.key);
}

template <class F>
void case_an_explicit_reset_starts_a_new_session_and_keeps_the_old_one() {
    world<F> w({reply::text("one").with_usage(50, 5), reply::text("two")});
    BOOST_TEST(w.turn("first").ok());
    const lb::conversation_entry old = w.entry();
    auto r = w.turn("/new", false, true);
    BOOST_TEST(r.ok(), r.message());
    const lb::conversation_entry e = w.entry();
    BOOST_TEST(e.session_id != old.session_id);
    BOOST_TEST(e.input_tokens == 0); // counters restart with the session
    BOOST_TEST(e.last_sequence == 2);
    BOOST_REQUIRE_EQUAL(e.previous.size(), 1u);
    BOOST_TEST(e.previous[0].session_id == old.session_id);
    BOOST_TEST(e.previous[0].reason == "explicit");
    BOOST_TEST(w.stored(old.session_id).size() == 2u); // archived, not deleted
    BOOST_TEST(w.stored(e.session_id).size() == 2u);
}

template <class F>
void case_idle_expiry_resets_and_background_turns_neither_reset_nor_refresh() {
    lb::reset_policy policy;
    policy.idle = std::chrono::minutes(30);
    world<F> w({reply::text("a"), reply::text("b"), reply::text("c"), reply::text("d")}, policy);
    BOOST_TEST(w.turn("first").ok());
    const lb::conversation_entry first = w.entry();
    // Forty minutes without a user: the next background turn still runs in this session and
    // leaves last_interaction_at alone.
    lb::conversation_patch back;
    back.last_interaction_at = lb::event::now() - 40 * 60;
    w.patch(back);
    auto bg = w.turn("heartbeat", true);
    BOOST_TEST(bg.ok(), bg.message());
    lb::conversation_entry after_bg = w.entry();
    BOOST_TEST(after_bg.session_id == first.session_id);
    BOOST_TEST(after_bg.last_interaction_at == *back.last_interaction_at);
    BOOST_TEST(after_bg.last_sequence == 4);
    auto stored = w.stored(first.session_id);
    BOOST_TEST(stored[2].metadata.at("background") == true);
    // The next user turn finds it idle.
    auto u = w.turn("are you there?");
    BOOST_TEST(u.ok(), u.message());
    lb::conversation_entry e = w.entry();
    BOOST_TEST(e.session_id != first.session_id);
    BOOST_REQUIRE_EQUAL(e.previous.size(), 1u);
    BOOST_TEST(e.previous[0].reason == "idle");
    BOOST_TEST(e.last_interaction_at > *back.last_interaction_at);
    // Fresh again: no reset.
    BOOST_TEST(w.turn("still here").ok());
    BOOST_TEST(w.entry().session_id == e.session_id);
}

template <class F>
void case_the_daily_boundary_resets_once() {
    lb::reset_policy policy;
    policy.daily_at_hour = 4;
    policy.time_zone = "CET-1CEST,M3.5.0,M10.5.0/3";
    world<F> w({reply::text("a"), reply::text("b"), reply::text("c")}, policy);
    BOOST_TEST(w.turn("first").ok());
    const auto first = w.entry();
    BOOST_TEST(w.turn("second").ok()); // started after today's boundary: fresh
    BOOST_TEST(w.entry().session_id == first.session_id);
    // Started two days ago (and active a minute ago: daily does not care).
    lb::conversation_entry aged = first;
    aged.started_at -= 2 * 86400;
    aged.last_interaction_at = lb::event::now() - 60;
    BOOST_TEST_REQUIRE(!w.index.put(aged));
    BOOST_TEST(w.turn("good morning").ok());
    const auto e = w.entry();
    BOOST_TEST(e.session_id != first.session_id);
    BOOST_REQUIRE_EQUAL(e.previous.size(), 1u);
    BOOST_TEST(e.previous[0].reason == "daily");
}

// Events stored but the index not updated (a crash between them): the next turn sets the
// entry from the transcript.
template <class F>
void case_an_entry_behind_its_transcript_is_repaired_from_it() {
    world<F> w({reply::text("a").with_usage(10, 1), reply::text("b").with_usage(30, 3)});
    BOOST_TEST(w.turn("first").ok());
    const auto e = w.entry();
    std::optional<lb::session> s = w.get(e.session_id);
    BOOST_TEST_REQUIRE(s.has_value());
    lb::event lost = lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text("unindexed"));
    lost.usage = lb::usage{1000, 100, {}};
    BOOST_TEST_REQUIRE(w.append(*s, lost) == 3);
    BOOST_TEST(w.entry().input_tokens == 10); // the index does not know
    BOOST_TEST(w.turn("second").ok());
    const auto fixed = w.entry();
    BOOST_TEST(fixed.input_tokens == 10 + 1000 + 30);
    BOOST_TEST(fixed.output_tokens == 1 + 100 + 3);
    BOOST_TEST(fixed.last_sequence == 5);
    BOOST_TEST(fixed.session_id == e.session_id);
}

// A reset lands while a turn of the old session runs: the turn's patch is refused as stale,
// its events stay in the (now archived) old session, and the entry is the new session's.
template <class F>
void case_a_reset_racing_a_turn_loses_nothing() {
    world<F>* wp = nullptr;
    std::string new_id;
    world<F> w({reply::text("a"), reply::computed([&](const lb::llm_request&) {
                              lb::conversation_patch p;
                              p.new_session_id = new_id = "reset-by-another-process";
                              p.reset_reason = "explicit";
                              wp->patch(p);
                              return reply::text("late answer").with_usage(7, 7);
                          })});
    wp = &w;
    BOOST_TEST(w.turn("first").ok());
    const auto old = w.entry();
    auto t = w.turn("second");
    BOOST_TEST(t.ok(), t.message());
    const auto e = w.entry();
    BOOST_TEST(e.session_id == new_id);
    BOOST_TEST(e.input_tokens == 0);
    auto events = w.stored(old.session_id);
    BOOST_REQUIRE_EQUAL(events.size(), 4u);
    BOOST_TEST(events[3].text() == "late answer");
}

template <class F>
void case_the_memory_flush_turn_is_silent_background_and_recorded() {
    world<F> w({reply::text("hello"), reply::text("NO_REPLY")});
    BOOST_TEST(w.turn("hi").ok());
    const auto before = w.entry();
    auto o = lb::run_options::in_conversation("app", "u1", w.key);
    o.memory_flush = true;
    auto r = lb::run_to_end(w.runner, std::move(o), "Write anything worth keeping to memory now.");
    BOOST_TEST(r.ok(), r.message());
    BOOST_TEST(r.events.empty()); // silent
    const auto e = w.entry();
    BOOST_TEST(e.memory_flush_at > 0);
    BOOST_TEST(e.memory_flush_compaction_count == 0);
    BOOST_TEST(e.last_interaction_at == before.last_interaction_at);
    auto events = w.stored(e.session_id);
    BOOST_REQUIRE_EQUAL(events.size(), 4u);
    BOOST_TEST(events[2].metadata.at("memory_flush") == true);
    BOOST_TEST(events[3].metadata.at("silent") == true);
}

// The index lost or unreadable: rebuilt from the transcripts, counters, resets and the
// conversation's settings included (when the old index can still be read).
template <class F>
void case_the_index_is_rebuilt_from_the_transcripts() {
    world<F> w({reply::text("a").with_usage(10, 1), reply::text("b").with_usage(20, 2),
                          reply::text("c").with_usage(40, 4), reply::text("d")});
    BOOST_TEST(w.turn("one").ok());
    BOOST_TEST(w.turn("two").ok());
    BOOST_TEST(w.turn("three", false, true).ok()); // a reset: two sessions
    lb::conversation_patch labels;
    labels.labels = std::vector<std::string>{"vip"};
    w.patch(labels);
    const lb::conversation_entry before = w.entry();
    // A plain session without a conversation is left out.
    BOOST_TEST(lb::run_to_end(w.runner, lb::run_options("app", "u1", "plain-session"), "unrelated").ok());
    // Entry lost entirely (its settings too): rebuilt from the sessions.
    BOOST_TEST_REQUIRE(!w.index.erase("app", w.key));
    lb::diagnostics d;
    auto [ec, report] = w.rebuild("app", d);
    BOOST_TEST(!ec, d.message());
    BOOST_TEST(report.conversations == 1u);
    BOOST_TEST(report.sessions_read == 3u);
    lb::conversation_entry e = w.entry();
    BOOST_TEST(e.session_id == before.session_id);
    BOOST_TEST(e.input_tokens == 40);
    BOOST_TEST(e.last_sequence == before.last_sequence);
    BOOST_TEST(e.chat_type == "direct");
    BOOST_REQUIRE_EQUAL(e.previous.size(), 1u);
    BOOST_TEST(e.previous[0].session_id == before.previous[0].session_id);
    BOOST_TEST(e.previous[0].reason == "rebuilt");
    BOOST_TEST(e.labels.empty()); // only the lost entry knew
    // With the old entry readable, its settings stay.
    w.patch(labels);
    auto [ec2, report2] = w.rebuild("app", d);
    BOOST_TEST(!ec2);
    BOOST_TEST(!report2.old_index_unreadable);
    lb::conversation_entry kept = w.entry();
    BOOST_TEST(kept.labels == std::vector<std::string>{"vip"});
    BOOST_REQUIRE_EQUAL(kept.previous.size(), 1u); // the archive as the old entry lists it
    BOOST_TEST(kept.previous[0].reason == "rebuilt");
    // A bad app id.
    auto [ec3, report3] = w.rebuild("a/b", d);
    BOOST_TEST(ec3 == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("app id") != std::string::npos, d.message());
}

// A child from the parent's history: every event copied (same sequences, no signatures),
// then a marker that starts the child's own chain and names the parent; the child's
// conversation is entered with its parent, and the child's turns see the parent's history.
template <class F>
void case_a_fork_copies_the_history_and_names_its_parent() {
    world<F> w({reply::text("Paris"), reply::text("It has 2.1 million people"), reply::text("In the thread: yes")});
    lb::runner<agent_type, typename F::store_type, lb::no_compaction, test_signer> runner(w.agent, w.store);
    lb::run_options parent_turn("app", "u1", "parent");
    BOOST_TEST(lb::run_to_end(runner, parent_turn, "Capital of France?").ok());
    BOOST_TEST(lb::run_to_end(runner, parent_turn, "How big is it?").ok());
    std::optional<lb::session> parent = w.get("parent");
    BOOST_TEST_REQUIRE(parent.has_value());
    BOOST_TEST_REQUIRE(parent->events.back().signature.has_value());

    lb::fork_options o;
    o.child_session_id = "thread-1";
    o.signer = test_signer{};
    o.conversation = "agent:assistant:slack:channel:c1";
    o.index = &w.index;
    lb::fork_result r = w.fork({"app", "u1", "parent"}, std::move(o));
    BOOST_TEST((r.mode == lb::fork_mode::copied));
    BOOST_TEST(r.events_copied == 4u);
    BOOST_TEST(r.parent_sequence == 4);
    BOOST_TEST(r.inherited_tokens > 0);
    std::optional<lb::session> child = w.get("thread-1");
    BOOST_TEST_REQUIRE(child.has_value());
    BOOST_REQUIRE_EQUAL(child->events.size(), 5u);
    for (std::size_t i = 0; i < 4; ++i) {
        BOOST_TEST(child->events[i].sequence == parent->events[i].sequence);
        BOOST_TEST(child->events[i].text() == parent->events[i].text());
        BOOST_TEST(!child->events[i].signature.has_value()); // a signature names the parent's session
    }
    const lb::event& marker = child->events[4];
    BOOST_TEST(marker.author == "libretto");
    BOOST_TEST(marker.metadata.at("fork").at("session_id").as_string() == "parent");
    BOOST_TEST(marker.metadata.at("fork").at("sequence") == 4);
    BOOST_TEST(marker.metadata.at("fork").at("signature").as_string() == *parent->events.back().signature);
    BOOST_TEST(marker.signature.value_or("") == "sig-thread-1-5");
    BOOST_TEST(!marker.prev_signature.has_value()); // a fresh chain
    BOOST_TEST(child->state.at("libretto:fork").at("session_id").as_string() == "parent");
    BOOST_TEST(child->state.at("libretto:conversation").as_string() == "agent:assistant:slack:channel:c1");
    BOOST_TEST(!parent->state.contains("libretto:fork"));
    // Listed as the parent's fork.
    lb::conversation_query q;
    q.app_name = "app";
    q.parent_session_id = "parent";
    std::vector<lb::conversation_entry> forks;
    BOOST_TEST_REQUIRE(!w.index.list(q, forks));
    BOOST_REQUIRE_EQUAL(forks.size(), 1u);
    BOOST_TEST(forks[0].session_id == "thread-1");
    BOOST_TEST(forks[0].chat_type == "channel");
    BOOST_TEST(forks[0].last_sequence == 5);
    // A turn of the child sees the parent's history; its chain continues from the marker.
    BOOST_TEST(lb::run_to_end(runner, lb::run_options("app", "u1", "thread-1"), "Is that the city proper?").ok());
    auto requests = w.model.requests();
    BOOST_REQUIRE_EQUAL(requests.size(), 3u);
    std::string seen;
    for (const auto& m : requests[2].messages) seen += m.text() + "|";
    BOOST_TEST(seen.find("Capital of France?") != std::string::npos, seen);
    BOOST_TEST(seen.find("2.1 million") != std::string::npos, seen);
    BOOST_TEST(seen.find("libretto") == std::string::npos, seen);
    child = w.get("thread-1");
    BOOST_TEST(child->events[5].prev_signature.value_or("") == "sig-thread-1-5");
    // The parent is as it was.
    BOOST_TEST(w.get("parent")->events.size() == 4u);
}

// Too large for the child's window: the child starts isolated (a summary, or nothing)
// instead of failing.
template <class F>
void case_a_fork_too_large_for_the_child_starts_isolated() {
    world<F> w({});
    lb::session s = w.create(lb::create_options("app", "u1", "big"));
    for (int i = 0; i < 40; ++i) {
        auto e = lb::event::make(i % 2 ? lb::event_type::agent_message : lb::event_type::user_message,
                                 i % 2 ? "assistant" : "user",
                                 lb::content::from_text("message " + std::to_string(i) + ": " + std::string(400, 'x')));
        w.append(s, e);
    }
    lb::fork_options o;
    o.max_tokens = 1000; // the history is ~4,000 tokens
    o.child_session_id = "summarized";
    lb::fork_result r = w.fork({"app", "u1", "big"}, o);
    BOOST_TEST((r.mode == lb::fork_mode::summarized));
    BOOST_TEST(r.inherited_tokens > 1000);
    BOOST_TEST(r.events_copied == 0u);
    BOOST_REQUIRE_EQUAL(r.child.events.size(), 2u);
    BOOST_TEST((r.child.events[0].type == lb::event_type::user_message));
    BOOST_TEST(r.child.events[0].text().starts_with("Context from the parent conversation (summary):"));
    BOOST_TEST(r.child.events[0].metadata.at("summary_produced_by").as_string() == "extractive");
    BOOST_TEST(r.child.events[1].metadata.at("fork").at("mode").as_string() == "summarized");
    BOOST_TEST(w.stored("summarized").size() == 2u);

    o.child_session_id = "empty";
    o.when_too_large = lb::fork_isolation::empty;
    lb::fork_result e = w.fork({"app", "u1", "big"}, o);
    BOOST_TEST((e.mode == lb::fork_mode::empty));
    BOOST_REQUIRE_EQUAL(e.child.events.size(), 1u); // the marker alone
    BOOST_TEST(!e.child.events[0].signature.has_value()); // no signer: unsigned

    // With room enough: copied.
    o.child_session_id = "roomy";
    o.max_tokens = 100'000;
    BOOST_TEST((w.fork({"app", "u1", "big"}, o).mode == lb::fork_mode::copied));
    BOOST_TEST(w.stored("roomy").size() == 41u);
}

// A copied child's state: the parent's session keys, with the shared scopes as other
// sessions left them (the copies used to write the parent's old app: and user: values
// again, and into another user's scope); a rewind in the child finds each invocation's
// values before it, as in the parent.
template <class F>
void case_a_fork_leaves_shared_state_alone_and_rewinds_in_the_child() {
    world<F> w({});
    lb::session p = w.create(lb::create_options("app", "u1", "p", {{"mood", "calm"}}));
    auto with = [](std::string invocation, lb::json::object delta) {
        auto e = lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text(invocation));
        e.invocation_id = std::move(invocation);
        e.actions.state_delta = std::move(delta);
        return e;
    };
    w.append(p, with("A", {{"j", 1}, {"mood", "busy"}, {"app:counter", 1}, {"user:pref", "old"}}));
    w.append(p, with("B", {{"j", 2}, {"extra", true}}));
    lb::session other = w.create(lb::create_options("app", "u1", "other"));
    w.append(other, with("O", {{"app:counter", 5}, {"user:pref", "new"}}));

    lb::fork_options o;
    o.child_session_id = "child";
    lb::fork_result r = w.fork({"app", "u1", "p"}, o);
    BOOST_TEST((r.mode == lb::fork_mode::copied));
    std::optional<lb::session> child = w.get("child");
    BOOST_TEST_REQUIRE(child.has_value());
    BOOST_TEST(child->state.at("app:counter") == 5, lb::json::serialize(child->state));
    BOOST_TEST(child->state.at("user:pref") == "new");
    BOOST_TEST(w.get("other")->state.at("app:counter") == 5);
    BOOST_TEST(child->state.at("j") == 2);
    BOOST_TEST(child->state.at("mood") == "busy");
    BOOST_TEST(child->state.at("extra") == true);
    BOOST_TEST(child->events[0].actions.state_delta == (lb::json::object{{"j", 1}, {"mood", "busy"}}));
    BOOST_TEST(child->events.back().actions.state_delta.size() == 1u); // the fork link alone

    // Another user's child: the parent user's user: values stay out of that user's scope.
    o.child_session_id = "child-u2";
    o.child_user_id = "u2";
    w.fork({"app", "u1", "p"}, o);
    std::optional<lb::session> theirs = w.get("child-u2", "u2");
    BOOST_TEST_REQUIRE(theirs.has_value());
    BOOST_TEST(!theirs->state.contains("user:pref"), lb::json::serialize(theirs->state));
    BOOST_TEST(theirs->state.at("j") == 2);

    // Rewinding B in the child puts back what B changed, as in the parent.
    auto rewind = [&](std::string session) {
        return run(w.io, [](auto& st, std::string id) -> asio::awaitable<lb::rewind_result> {
            auto op = lb::async_rewind_session(st, lb::session_key("app", "u1", std::move(id)), "B", lb::rewind_options{},
                                               asio::use_awaitable);
            co_return co_await std::move(op);
        }(w.store, std::move(session)));
    };
    const lb::json::object undo_b{{"j", 1}, {"extra", nullptr}};
    BOOST_TEST(rewind("p").rewind.actions.state_delta == undo_b);
    // In the child the marker came after B, so the rewind undoes it too.
    const lb::json::object undo_b_and_marker{{"j", 1}, {"extra", nullptr}, {"libretto:fork", nullptr}};
    BOOST_TEST(rewind("child").rewind.actions.state_delta == undo_b_and_marker);
    BOOST_TEST(w.get("child")->state.at("j") == 1);
}

template <class F>
void case_bad_forks_are_refused_and_change_nothing() {
    world<F> w({});
    w.create(lb::create_options("app", "u1", "p"));
    boost::system::error_code ec;
    lb::diagnostics d;
    w.fork({"app", "u1", "missing"}, {}, &ec, &d);
    BOOST_TEST(ec == lb::errc::not_found);
    BOOST_TEST(d.message().find("'app/u1/missing'") != std::string::npos, d.message());
    lb::fork_options bad;
    bad.child_session_id = "../x";
    w.fork({"app", "u1", "p"}, bad, &ec, &d);
    BOOST_TEST(ec == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("child's id") != std::string::npos, d.message());
    lb::fork_options no_index;
    no_index.conversation = "agent:a:main";
    w.fork({"app", "u1", "p"}, no_index, &ec, &d);
    BOOST_TEST(ec == lb::errc::invalid_argument);
    lb::fork_options negative;
    negative.max_tokens = -5;
    w.fork({"app", "u1", "p"}, negative, &ec, &d);
    BOOST_TEST(ec == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("fork_options.max_tokens is negative (-5)") != std::string::npos, d.message());
    lb::fork_options same;
    same.child_session_id = "p";
    w.fork({"app", "u1", "p"}, same, &ec, &d);
    BOOST_TEST(ec == lb::errc::invalid_argument);
    lb::fork_options taken; // the child's id is taken: the store refuses the create
    taken.child_session_id = "p";
    taken.child_user_id = "u1";
    w.fork({"app", "u1", "p"}, taken, &ec, &d);
    BOOST_TEST(ec == lb::errc::already_exists);
    BOOST_TEST(d.message().find("creating the child failed") != std::string::npos, d.message());
    BOOST_TEST(w.session_count() == 1u);
}

// A scheduled job's run: a new session every time, inheriting only the safe preferences.
template <class F>
void case_a_scheduled_run_gets_a_new_session_with_the_safe_preferences() {
    world<F> w({reply::text("report 1"), reply::text("report 2")});
    const std::string key = lb::scheduled_job_key("nightly-report");
    auto run = [&] {
        auto o = lb::run_options::in_conversation("app", "u1", key);
        o.scheduled_run = true;
        return lb::run_to_end(w.runner, std::move(o), "Write the nightly report.");
    };
    BOOST_TEST(run().ok());
    std::optional<lb::conversation_entry> first;
    BOOST_TEST_REQUIRE(!w.index.get("app", key, first));
    BOOST_TEST(first->chat_type == "scheduled_job");
    BOOST_TEST(first->last_interaction_at == 0); // nobody typed
    lb::conversation_patch prefs;
    prefs.labels = std::vector<std::string>{"ops"};
    prefs.overrides = lb::conversation_overrides{"small-model", "low", "deliver-to-slack"};
    prefs.metadata["origin"] = "slack:#ops";
    lb::conversation_entry ignored;
    BOOST_TEST_REQUIRE(!w.index.patch("app", key, prefs, ignored));
    BOOST_TEST(run().ok());
    std::optional<lb::conversation_entry> second;
    BOOST_TEST_REQUIRE(!w.index.get("app", key, second));
    BOOST_TEST(second->session_id != first->session_id);
    BOOST_TEST(second->labels == std::vector<std::string>{"ops"});
    BOOST_TEST(second->overrides.model == "small-model");
    BOOST_TEST(second->overrides.thinking_level == "low");
    BOOST_TEST(second->overrides.send_policy.empty()); // delivery is not inherited
    BOOST_TEST(second->metadata.empty());               // nor the origin
    BOOST_REQUIRE_EQUAL(second->previous.size(), 1u);
    BOOST_TEST(second->previous[0].reason == "scheduled_run");
    auto events = w.stored(second->session_id);
    BOOST_REQUIRE_EQUAL(events.size(), 2u);
    BOOST_TEST(events[0].metadata.at("scheduled_run") == true);
    BOOST_TEST(events[0].metadata.at("background") == true);
}

// What maintenance removes, in the seed's order; warn reports exactly what enforce does.
template <class F>
void case_maintenance_prunes_in_order_and_warn_changes_nothing() {
    std::vector<reply> replies;
    for (int i = 0; i < 12; ++i) replies.push_back(reply::text("r" + std::to_string(i)));
    world<F> w(std::move(replies));
    auto turn = [&](const std::string& key, bool reset = false, bool scheduled = false) {
        auto o = lb::run_options::in_conversation("app", "u1", key);
        o.reset = reset;
        o.scheduled_run = scheduled;
        BOOST_TEST(lb::run_to_end(w.runner, std::move(o), "hi").ok());
    };
    const std::string direct = lb::direct_key("assistant");
    const std::string group = lb::group_key("assistant", "telegram", "g1");
    const std::string job = lb::scheduled_job_key("nightly");
    turn(direct);
    turn(direct, true); // an archive
    turn(group);
    turn(group, true);  // an archive of a durable conversation
    turn(job, false, true);
    turn(job, false, true); // a scheduled-run archive
    // An orphan: a session naming a conversation whose entry does not list it.
    w.create(lb::create_options("app", "u1", "ghost", {{"libretto:conversation", "agent:assistant:gone"}}));
    // A session of no conversation: never touched.
    w.create(lb::create_options("app", "u1", "plain"));
    BOOST_TEST(w.session_count() == 8u);

    // Two days on: only the scheduled run's archive is past its retention (24 h).
    lb::maintenance_options o;
    o.app_name = "app";
    o.now = lb::event::now() + 2 * 86400;
    auto soon = w.maintain(o);
    BOOST_REQUIRE_EQUAL(soon.actions.size(), 1u);
    BOOST_TEST((soon.actions[0].what == lb::maintenance_action::kind::remove_archive));
    BOOST_TEST(soon.actions[0].key == job);
    BOOST_TEST(soon.actions[0].reason == "scheduled_retention");
    BOOST_TEST(!soon.applied);
    BOOST_TEST(w.session_count() == 8u); // warn: nothing changed

    // Forty days on: archives and the orphan (retention = prune_after, 30 days), then the
    // stale entries that are not durable (the direct and the scheduled job; not the group).
    o.now = lb::event::now() + 40 * 86400;
    auto plan = w.maintain(o);
    std::vector<std::string> got;
    for (const auto& a : plan.actions) got.push_back(a.reason + ":" + a.key);
    const std::vector<std::string> want{"archive_retention:" + direct, "archive_retention:" + group,
                                        "scheduled_retention:" + job, "archive_retention:agent:assistant:gone",
                                        "prune_after:" + direct, "prune_after:" + job};
    BOOST_TEST(got == want, boost::test_tools::per_element());
    BOOST_TEST(plan.entries_before == 3u);
    BOOST_TEST(plan.entries_after == 1u);
    BOOST_TEST(plan.bytes_after < plan.bytes_before);
    BOOST_TEST(w.session_count() == 8u);
    o.mode = lb::maintenance_mode::enforce;
    auto done = w.maintain(o);
    BOOST_TEST(done.applied);
    std::vector<std::string> did;
    for (const auto& a : done.actions) did.push_back(a.reason + ":" + a.key);
    BOOST_TEST(did == want, boost::test_tools::per_element()); // exactly the plan
    BOOST_TEST(w.session_count() == 2u); // the group's current session and the plain one
    std::optional<lb::conversation_entry> g;
    BOOST_TEST_REQUIRE(!w.index.get("app", group, g));
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->previous.empty());
    std::optional<lb::conversation_entry> gone;
    BOOST_TEST_REQUIRE(!w.index.get("app", direct, gone));
    BOOST_TEST(!gone.has_value());
    std::optional<lb::session> still = w.get("plain");
    BOOST_TEST(still.has_value());
    // Again: nothing left to do.
    BOOST_TEST(w.maintain(o).actions.empty());
}

template <class F>
void case_maintenance_caps_entries_and_bytes() {
    std::vector<reply> replies;
    for (int i = 0; i < 8; ++i) replies.push_back(reply::text(std::string(2000, 'a' + i)));
    world<F> w(std::move(replies));
    auto turn = [&](const std::string& key, bool reset = false) {
        auto o = lb::run_options::in_conversation("app", "u1", key);
        o.reset = reset;
        BOOST_TEST(lb::run_to_end(w.runner, std::move(o), "hi").ok());
    };
    turn("agent:a:one");
    turn("agent:a:two");
    turn("agent:a:three");
    turn("agent:a:three", true);
    lb::maintenance_options o;
    o.app_name = "app";
    o.max_entries = 2;
    o.prune_after_seconds.reset();
    auto capped = w.maintain(o);
    BOOST_REQUIRE_EQUAL(capped.actions.size(), 1u);
    BOOST_TEST(capped.actions[0].key == "agent:a:one"); // the oldest
    BOOST_TEST(capped.actions[0].reason == "max_entries");
    // A byte budget a little under what is there: the archive goes first, then the oldest entry.
    o.max_entries.reset();
    auto plan = w.maintain(o);
    BOOST_TEST(plan.actions.empty());
    o.max_bytes = plan.bytes_before - 100;
    o.high_water_bytes = plan.bytes_before - 100;
    auto budget = w.maintain(o);
    BOOST_REQUIRE_EQUAL(budget.actions.size(), 1u);
    BOOST_TEST((budget.actions[0].what == lb::maintenance_action::kind::remove_archive));
    BOOST_TEST(budget.actions[0].reason == "max_bytes");
    BOOST_TEST(budget.actions[0].bytes > 2000u);
    o.high_water_bytes = budget.bytes_after - 100;
    auto more = w.maintain(o);
    BOOST_REQUIRE_EQUAL(more.actions.size(), 2u);
    BOOST_TEST((more.actions[1].what == lb::maintenance_action::kind::remove_entry));
    BOOST_TEST(more.actions[1].key == "agent:a:one");
    BOOST_TEST(more.bytes_after <= *o.high_water_bytes);
    // Bad options.
    lb::maintenance_options bad;
    bad.app_name = "../etc";
    boost::system::error_code ec;
    lb::diagnostics d;
    w.maintain(bad, &ec, &d);
    BOOST_TEST(ec == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("app id") != std::string::npos, d.message());
    // Durations that would select every entry (or none) and a mark above the budget: refused
    // in either mode, naming the option, and nothing removed.
    const auto sessions_before = w.session_count();
    const auto kept = w.find("agent:a:one");
    BOOST_TEST_REQUIRE(kept.has_value());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<std::pair<std::function<void(lb::maintenance_options&)>, std::string>> bad_options = {
        {[](auto& o) { o.prune_after_seconds = -1; }, "prune_after_seconds is -1, not a finite number of seconds >= 0"},
        {[=](auto& o) { o.prune_after_seconds = nan; }, "prune_after_seconds is nan"},
        {[](auto& o) { o.archive_retention_seconds = -86400; }, "archive_retention_seconds is -86400"},
        {[](auto& o) { o.scheduled_retention_seconds = -std::numeric_limits<double>::infinity(); },
         "scheduled_retention_seconds is -inf"},
        {[=](auto& o) { o.now = nan; }, "now is not a finite number"},
        {[](auto& o) { o.max_bytes = 10; o.high_water_bytes = 11; }, "high_water_bytes (11) is above max_bytes (10)"},
    };
    for (const auto& [set, why] : bad_options)
        for (auto mode : {lb::maintenance_mode::warn, lb::maintenance_mode::enforce}) {
            lb::maintenance_options o;
            o.app_name = "app";
            o.mode = mode;
            set(o);
            boost::system::error_code oec;
            lb::diagnostics od;
            w.maintain(o, &oec, &od);
            BOOST_TEST((oec == lb::errc::invalid_argument), why);
            BOOST_TEST(od.message().find(why) != std::string::npos, od.message());
        }
    BOOST_TEST(w.session_count() == sessions_before);
    BOOST_TEST((w.find("agent:a:one") == kept));
}

template <class F>
void case_bad_conversation_turns_are_refused_with_their_reason() {
    world<F> w({reply::text("a"), reply::text("b")});
    auto both = lb::run_options::in_conversation("app", "u1", w.key);
    both.session = "s1";
    auto r = lb::run_to_end(w.runner, std::move(both), "x");
    BOOST_TEST(r.error == lb::errc::invalid_argument);
    BOOST_TEST(r.message().find("both set") != std::string::npos, r.message());
    auto bad = lb::run_to_end(w.runner, lb::run_options::in_conversation("app", "u1", "agent:a/b"), "x");
    BOOST_TEST(bad.error == lb::errc::invalid_argument);
    BOOST_TEST(bad.message().find("conversation key") != std::string::npos, bad.message());
    auto ctl = lb::run_to_end(w.runner, lb::run_options::in_conversation("app", "u1", "agent:a\n"), "x");
    BOOST_TEST(ctl.error == lb::errc::invalid_argument);
    BOOST_TEST(ctl.message().find("control character") != std::string::npos, ctl.message());
    BOOST_TEST(w.turn("mine").ok());
    auto other_user = lb::run_to_end(w.runner, lb::run_options::in_conversation("app", "u2", w.key), "x");
    BOOST_TEST(other_user.error == lb::errc::invalid_argument);
    BOOST_TEST(other_user.message().find("user 'u1'") != std::string::npos, other_user.message());
    // Without an index.
    lb::runner<agent_type, typename F::store_type> plain(w.agent, w.store);
    auto none = lb::run_to_end(plain, lb::run_options::in_conversation("app", "u1", w.key), "x");
    BOOST_TEST(none.error == lb::errc::invalid_argument);
    BOOST_TEST(none.message().find("runner_options::index") != std::string::npos, none.message());
    // A bad reset policy is refused when the runner is made.
    lb::runner_options ro;
    ro.reset.daily_at_hour = 24;
    BOOST_CHECK_THROW((lb::runner<agent_type, typename F::store_type>(w.agent, w.store, ro)), boost::system::system_error);
    ro.reset.daily_at_hour = 4;
    ro.reset.time_zone = "Europe/Oslo";
    try {
        lb::runner<agent_type, typename F::store_type> r2(w.agent, w.store, ro);
        BOOST_FAIL("an IANA name is not a POSIX TZ string");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(std::string(e.what()).find("POSIX TZ") != std::string::npos, e.what());
    }
    // Nothing stored by the refused turns.
    BOOST_TEST(w.stored(w.entry().session_id).size() == 2u);
}

template <class F>
void case_the_status_comes_from_the_entry() {
    world<F> w({reply::text("a").with_usage(3000, 100)});
    BOOST_TEST(w.turn("hi").ok());
    lb::conversation_entry e = w.entry();
    const double now = e.started_at + 600;
    auto st = lb::conversation_status_of(e, now, 8000);
    BOOST_TEST(st.session_id == e.session_id);
    BOOST_TEST(st.age_seconds == 600);
    BOOST_TEST(st.idle_seconds == now - e.last_interaction_at);
    BOOST_TEST(st.context_tokens == 3000);
    BOOST_TEST(st.context_used == 0.375);
    BOOST_TEST(!st.since_memory_flush_seconds);
    BOOST_TEST(!st.flushed_since_last_compaction);
    BOOST_TEST(st.archived_sessions == 0u);
    BOOST_TEST(lb::conversation_status_of(e, now).context_used == 0); // window unknown
    e.memory_flush_at = now - 5;
    auto flushed = lb::conversation_status_of(e, now);
    BOOST_TEST(flushed.since_memory_flush_seconds.value_or(-1) == 5);
    BOOST_TEST(flushed.flushed_since_last_compaction);
}

} // namespace conversation_conformance

/// The suite `conversation_conformance` for fixture F.
#define LIBRETTO_CONVERSATION_CONFORMANCE(F) \
    BOOST_AUTO_TEST_SUITE(conversation_conformance) \
    BOOST_AUTO_TEST_CASE(a_key_keeps_its_session_and_the_entry_counts_the_turns) { ::conversation_conformance::case_a_key_keeps_its_session_and_the_entry_counts_the_turns<F>(); } \
    BOOST_AUTO_TEST_CASE(an_explicit_reset_starts_a_new_session_and_keeps_the_old_one) { ::conversation_conformance::case_an_explicit_reset_starts_a_new_session_and_keeps_the_old_one<F>(); } \
    BOOST_AUTO_TEST_CASE(idle_expiry_resets_and_background_turns_neither_reset_nor_refresh) { ::conversation_conformance::case_idle_expiry_resets_and_background_turns_neither_reset_nor_refresh<F>(); } \
    BOOST_AUTO_TEST_CASE(the_daily_boundary_resets_once) { ::conversation_conformance::case_the_daily_boundary_resets_once<F>(); } \
    BOOST_AUTO_TEST_CASE(an_entry_behind_its_transcript_is_repaired_from_it) { ::conversation_conformance::case_an_entry_behind_its_transcript_is_repaired_from_it<F>(); } \
    BOOST_AUTO_TEST_CASE(a_reset_racing_a_turn_loses_nothing) { ::conversation_conformance::case_a_reset_racing_a_turn_loses_nothing<F>(); } \
    BOOST_AUTO_TEST_CASE(the_memory_flush_turn_is_silent_background_and_recorded) { ::conversation_conformance::case_the_memory_flush_turn_is_silent_background_and_recorded<F>(); } \
    BOOST_AUTO_TEST_CASE(the_index_is_rebuilt_from_the_transcripts) { ::conversation_conformance::case_the_index_is_rebuilt_from_the_transcripts<F>(); } \
    BOOST_AUTO_TEST_CASE(a_fork_copies_the_history_and_names_its_parent) { ::conversation_conformance::case_a_fork_copies_the_history_and_names_its_parent<F>(); } \
    BOOST_AUTO_TEST_CASE(a_fork_too_large_for_the_child_starts_isolated) { ::conversation_conformance::case_a_fork_too_large_for_the_child_starts_isolated<F>(); } \
    BOOST_AUTO_TEST_CASE(a_fork_leaves_shared_state_alone_and_rewinds_in_the_child) { ::conversation_conformance::case_a_fork_leaves_shared_state_alone_and_rewinds_in_the_child<F>(); } \
    BOOST_AUTO_TEST_CASE(bad_forks_are_refused_and_change_nothing) { ::conversation_conformance::case_bad_forks_are_refused_and_change_nothing<F>(); } \
    BOOST_AUTO_TEST_CASE(a_scheduled_run_gets_a_new_session_with_the_safe_preferences) { ::conversation_conformance::case_a_scheduled_run_gets_a_new_session_with_the_safe_preferences<F>(); } \
    BOOST_AUTO_TEST_CASE(maintenance_prunes_in_order_and_warn_changes_nothing) { ::conversation_conformance::case_maintenance_prunes_in_order_and_warn_changes_nothing<F>(); } \
    BOOST_AUTO_TEST_CASE(maintenance_caps_entries_and_bytes) { ::conversation_conformance::case_maintenance_caps_entries_and_bytes<F>(); } \
    BOOST_AUTO_TEST_CASE(bad_conversation_turns_are_refused_with_their_reason) { ::conversation_conformance::case_bad_conversation_turns_are_refused_with_their_reason<F>(); } \
    BOOST_AUTO_TEST_CASE(the_status_comes_from_the_entry) { ::conversation_conformance::case_the_status_comes_from_the_entry<F>(); } \
    BOOST_AUTO_TEST_SUITE_END()

#endif
