// runner_options::cached_sessions: a session kept between its turns is brought up to date
// from the store (what other writers appended, a deletion, a compaction) and the agent sees
// exactly what a full load would give it; the cache's bound; refresh_cached_session's checks.
#include <libretto/runner/runner.hpp>
#include <libretto/runner/run_to_end.hpp>

#include <libretto/runner/detail/session_cache.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include "runner_test_support.hpp"

#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;

/// One reply per turn; records the texts and sequences of ctx.session().events it saw.
struct seeing_agent {
    struct seen {
        std::vector<std::string> texts;
        std::vector<std::int64_t> sequences;
        std::int64_t last_sequence = 0;
    };
    std::vector<seen>* log;
    const bool* fail = nullptr; ///< when it points to true, the agent's stream throws
    std::string_view name() const { return "assistant"; }
    std::string_view description() const { return "records what it sees"; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
    lb::event_stream run(lb::invocation_context ctx) const {
        seen s;
        for (const auto& e : ctx.session().events) {
            s.texts.push_back(e.text());
            s.sequences.push_back(e.sequence);
        }
        s.last_sequence = ctx.session().last_sequence;
        log->push_back(std::move(s));
        if (fail && *fail)
            return lb::event_stream(ctx.get_executor(), [](lb::event_writer) -> asio::awaitable<void> {
                throw std::runtime_error("the agent failed");
                co_return;
            });
        std::vector<lb::event> v;
        lb::event e = lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text("ok"));
        e.invocation_id = ctx.invocation_id();
        v.push_back(std::move(e));
        return lb::make_stream(ctx.get_executor(), std::move(v));
    }
};

/// Runs a turn to its end on the runner's io_context (run_to_end); a failure is thrown (an
/// agent's own exception as errc::unexpected_exception, a std::runtime_error too).
template <class Runner>
void turn(asio::io_context&, Runner& r, std::string session, std::string text) {
    lb::turn_result res = lb::run_to_end(r, runner_support::run_opts(std::move(session)), std::move(text));
    if (!res.ok()) throw lb::error_with_diagnostics(res.error, res.diag);
}

template <class Store>
asio::awaitable<void> append_into(Store* st, lb::session_key k, lb::event e) {
    auto get = st->async_get(k, lb::get_options{}, asio::use_awaitable);
    std::optional<lb::session> s = co_await std::move(get);
    auto op = st->async_append(*s, std::move(e), asio::use_awaitable);
    co_await std::move(op);
}

/// Another writer: appends `e` to session s1 outside the runner.
template <class Store>
void append_outside(asio::io_context& io, Store& st, lb::event e) {
    asio::co_spawn(io, append_into(&st, lb::session_key{"app", "u1", "s1"}, std::move(e)), asio::detached);
    io.run();
    io.restart();
}

template <class Store>
asio::awaitable<void> recreate_into(Store* st) {
    auto del = st->async_delete(lb::session_key{"app", "u1", "s1"}, asio::use_awaitable);
    co_await std::move(del);
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u1";
    co.session_id = "s1";
    auto create = st->async_create(std::move(co), asio::use_awaitable);
    lb::session s = co_await std::move(create);
    lb::event e = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("fresh"));
    auto op = st->async_append(s, std::move(e), asio::use_awaitable);
    co_await std::move(op);
}

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
        o.directory = std::filesystem::current_path() / ("runner_cache_sessions_" + std::to_string(++n));
        std::filesystem::remove_all(o.directory);
        return o;
    }
};

using envs = std::tuple<memory_env, jsonl_env>;

using texts = std::vector<std::string>;
using seqs = std::vector<std::int64_t>;

} // namespace

BOOST_AUTO_TEST_SUITE(runner_session_cache)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_cached_session_shows_every_turn_in_order, Env, envs) {
    Env env;
    std::vector<seeing_agent::seen> log;
    seeing_agent agent{&log};
    lb::runner r{agent, env.store};
    BOOST_TEST(r.cached_sessions() == 0u);
    turn(env.io, r, "s1", "one");
    BOOST_TEST(r.cached_sessions() == 1u);
    turn(env.io, r, "s1", "two");
    turn(env.io, r, "s1", "three");
    BOOST_REQUIRE(log.size() == 3u);
    BOOST_TEST(log[2].texts == (texts{"one", "ok", "two", "ok", "three"}), boost::test_tools::per_element());
    BOOST_TEST(log[2].sequences == (seqs{1, 2, 3, 4, 5}), boost::test_tools::per_element());
    BOOST_TEST(log[2].last_sequence == 5);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(another_writers_events_are_read_in, Env, envs) {
    Env env;
    std::vector<seeing_agent::seen> log;
    seeing_agent agent{&log};
    lb::runner r{agent, env.store};
    turn(env.io, r, "s1", "one");
    append_outside(env.io, env.store,
                   lb::event::make(lb::event_type::agent_message, "elsewhere", lb::content::from_text("outside")));
    turn(env.io, r, "s1", "two");
    BOOST_REQUIRE(log.size() == 2u);
    BOOST_TEST(log[1].texts == (texts{"one", "ok", "outside", "two"}), boost::test_tools::per_element());
    BOOST_TEST(log[1].sequences == (seqs{1, 2, 3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_deleted_and_recreated_session_is_loaded_whole, Env, envs) {
    Env env;
    std::vector<seeing_agent::seen> log;
    seeing_agent agent{&log};
    lb::runner r{agent, env.store};
    turn(env.io, r, "s1", "one");
    turn(env.io, r, "s1", "two"); // the cached copy now ends at sequence 4
    asio::co_spawn(env.io, recreate_into(&env.store), asio::detached);
    env.io.run();
    env.io.restart();
    turn(env.io, r, "s1", "three");
    BOOST_REQUIRE(log.size() == 3u);
    BOOST_TEST(log[2].texts == (texts{"fresh", "three"}), boost::test_tools::per_element());
    BOOST_TEST(log[2].sequences == (seqs{1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_compaction_by_another_writer_trims_the_cached_events, Env, envs) {
    Env env;
    std::vector<seeing_agent::seen> log;
    seeing_agent agent{&log};
    lb::runner r{agent, env.store};
    turn(env.io, r, "s1", "one");
    turn(env.io, r, "s1", "two");
    lb::event c = lb::event::make(lb::event_type::agent_message, "compactor", lb::content::from_text("summary"));
    c.actions.compaction = lb::event_compaction{1, 2, 0, 0, "summary of one", 2};
    append_outside(env.io, env.store, std::move(c)); // sequence 5, covers 1..2
    lb::event c2 = lb::event::make(lb::event_type::agent_message, "compactor", lb::content::from_text("summary 2"));
    c2.actions.compaction = lb::event_compaction{3, 4, 0, 0, "summary of two", 2};
    append_outside(env.io, env.store, std::move(c2)); // sequence 6, covers 3..4
    turn(env.io, r, "s1", "three");
    BOOST_REQUIRE(log.size() == 3u);
    // Both summaries stay (neither covers the other); the events they cover go, as from a
    // load (a fresh runner sees the same).
    BOOST_TEST(log[2].sequences == (seqs{5, 6, 7}), boost::test_tools::per_element());
    BOOST_TEST(log[2].texts == (texts{"summary", "summary 2", "three"}), boost::test_tools::per_element());
    lb::runner fresh{agent, env.store};
    turn(env.io, fresh, "s1", "four");
    BOOST_REQUIRE(log.size() == 4u);
    BOOST_TEST(log[3].sequences == (seqs{5, 6, 7, 8, 9}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_cache_is_bounded_and_can_be_disabled) {
    memory_env env;
    std::vector<seeing_agent::seen> log;
    seeing_agent agent{&log};
    lb::runner_options two;
    two.cached_sessions = 2;
    lb::runner r{agent, env.store, two};
    turn(env.io, r, "s1", "a");
    turn(env.io, r, "s2", "b");
    turn(env.io, r, "s3", "c");
    BOOST_TEST(r.cached_sessions() == 2u);
    turn(env.io, r, "s1", "d"); // evicted: loaded whole, same view
    BOOST_TEST(log.back().texts == (texts{"a", "ok", "d"}), boost::test_tools::per_element());

    lb::runner_options none;
    none.cached_sessions = 0;
    lb::runner off{agent, env.store, none};
    turn(env.io, off, "s1", "e");
    turn(env.io, off, "s1", "f");
    BOOST_TEST(off.cached_sessions() == 0u);
    BOOST_TEST(log.back().texts == (texts{"a", "ok", "d", "ok", "e", "ok", "f"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failed_turn_leaves_nothing_cached) {
    memory_env env;
    std::vector<seeing_agent::seen> log;
    bool fail = false;
    seeing_agent agent{&log, &fail};
    lb::runner r{agent, env.store};
    turn(env.io, r, "s1", "one");
    BOOST_TEST(r.cached_sessions() == 1u);
    fail = true;
    BOOST_CHECK_THROW(turn(env.io, r, "s1", "two"), std::runtime_error);
    BOOST_TEST(r.cached_sessions() == 0u); // taken out by the failed turn
    fail = false;
    turn(env.io, r, "s1", "three"); // loaded whole: the failed turn's user message is there
    BOOST_TEST(log.back().texts == (texts{"one", "ok", "two", "three"}), boost::test_tools::per_element());
    BOOST_TEST(r.cached_sessions() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(refresh_cached_session)

namespace {
lb::event ev(std::int64_t seq, std::string id, std::string text = "x") {
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text(std::move(text)));
    e.sequence = seq;
    e.id = std::move(id);
    return e;
}
lb::session sess(std::int64_t last, std::vector<lb::event> events) {
    lb::session s;
    s.id = "s1";
    s.app_name = "app";
    s.user_id = "u1";
    s.last_sequence = last;
    s.events = std::move(events);
    return s;
}
} // namespace

BOOST_AUTO_TEST_CASE(appends_what_follows_and_takes_the_fresh_state) {
    lb::session cached = sess(2, {ev(1, "a"), ev(2, "b")});
    lb::session fresh = sess(4, {ev(2, "b"), ev(3, "c"), ev(4, "d")});
    fresh.state["k"] = 1;
    fresh.last_update_time = 42;
    BOOST_TEST(lb::detail::refresh_cached_session(cached, std::move(fresh)));
    BOOST_REQUIRE(cached.events.size() == 4u);
    BOOST_TEST(cached.events[3].id == "d");
    BOOST_TEST(cached.last_sequence == 4);
    BOOST_TEST(cached.last_update_time == 42);
    BOOST_TEST(cached.state.at("k").as_int64() == 1);
}

BOOST_AUTO_TEST_CASE(nothing_new_is_still_valid) {
    lb::session cached = sess(2, {ev(1, "a"), ev(2, "b")});
    BOOST_TEST(lb::detail::refresh_cached_session(cached, sess(2, {ev(2, "b")})));
    BOOST_TEST(cached.events.size() == 2u);
}

BOOST_AUTO_TEST_CASE(rejects_what_does_not_continue_the_copy) {
    auto cached = [] { return sess(2, {ev(1, "a"), ev(2, "b")}); };
    lb::session c1 = cached();
    BOOST_TEST(!lb::detail::refresh_cached_session(c1, sess(2, {}))); // no events back
    lb::session c2 = cached();
    BOOST_TEST(!lb::detail::refresh_cached_session(c2, sess(2, {ev(2, "other")}))); // another event 2
    lb::session c3 = cached();
    BOOST_TEST(!lb::detail::refresh_cached_session(c3, sess(4, {ev(2, "b"), ev(4, "d")}))); // a gap
    lb::session c4 = cached();
    BOOST_TEST(!lb::detail::refresh_cached_session(c4, sess(3, {ev(2, "b")}))); // last_sequence ahead of events
    lb::session c5 = cached();
    lb::session other = sess(2, {ev(2, "b")});
    other.id = "s2";
    BOOST_TEST(!lb::detail::refresh_cached_session(c5, std::move(other))); // another session
    lb::session empty = sess(0, {});
    BOOST_TEST(!lb::detail::refresh_cached_session(empty, sess(1, {ev(1, "a")}))); // nothing cached
    lb::session stale = sess(3, {ev(1, "a"), ev(2, "b")}); // the copy's revision is past its events
    BOOST_TEST(!lb::detail::refresh_cached_session(stale, sess(3, {ev(3, "c")})));
}

BOOST_AUTO_TEST_CASE(a_compaction_reaching_before_the_copy_needs_a_load_only_for_its_range) {
    lb::event c = ev(5, "e");
    c.actions.compaction = lb::event_compaction{1, 2, 0, 0, "s", 2};
    // A context load needs 3..5 only: the copy has them.
    lb::session cached = sess(4, {ev(3, "c"), ev(4, "d")});
    BOOST_TEST(lb::detail::refresh_cached_session(cached, sess(5, {ev(4, "d"), c})));
    BOOST_TEST(cached.events.size() == 3u);
    BOOST_TEST(cached.last_sequence == 5);
    // With the newest range (sliding_window's overlap) it needs 1 and 2 as well: load again.
    lb::session lacking = sess(4, {ev(3, "c"), ev(4, "d")});
    BOOST_TEST(!lb::detail::refresh_cached_session(lacking, sess(5, {ev(4, "d"), c}), true));
    // A copy that holds covered events drops them.
    lb::session whole = sess(4, {ev(1, "a"), ev(2, "b"), ev(3, "c"), ev(4, "d")});
    BOOST_TEST(lb::detail::refresh_cached_session(whole, sess(5, {ev(4, "d"), c})));
    BOOST_REQUIRE_EQUAL(whole.events.size(), 3u);
    BOOST_TEST(whole.events.front().sequence == 3);
    // A bad compaction (another tool's) drops nothing.
    lb::event bad = ev(5, "e");
    bad.actions.compaction = lb::event_compaction{1, 2, 0, 0, "", 2};
    lb::session kept = sess(4, {ev(1, "a"), ev(2, "b"), ev(3, "c"), ev(4, "d")});
    BOOST_TEST(lb::detail::refresh_cached_session(kept, sess(5, {ev(4, "d"), bad})));
    BOOST_TEST(kept.events.size() == 5u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(session_cache)

BOOST_AUTO_TEST_CASE(take_put_and_eviction) {
    lb::detail::session_cache cache(2);
    BOOST_TEST(!cache.take("a").has_value());
    lb::session a;
    a.id = "a";
    cache.put("a", std::move(a));
    lb::session b;
    b.id = "b";
    cache.put("b", std::move(b));
    BOOST_REQUIRE(cache.take("a").has_value()); // taken out: gone
    BOOST_TEST(!cache.take("a").has_value());
    lb::session a2;
    a2.id = "a2";
    cache.put("a", std::move(a2));
    lb::session c;
    c.id = "c";
    cache.put("c", std::move(c)); // evicts b, the least recently used
    BOOST_TEST(cache.size() == 2u);
    BOOST_TEST(!cache.take("b").has_value());
    auto got = cache.take("a");
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(got->id == "a2");
    lb::session c2;
    c2.id = "c2";
    cache.put("c", std::move(c2)); // replaces
    BOOST_TEST(cache.size() == 1u);
    BOOST_TEST(cache.take("c")->id == "c2");

    lb::detail::session_cache off(0);
    lb::session d;
    off.put("d", std::move(d));
    BOOST_TEST(off.size() == 0u);
    BOOST_TEST(!off.take("d").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
