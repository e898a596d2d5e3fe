// The session-store conformance suite: the same cases against every store.
//
// A backend test file defines a fixture type F with
//   using store_type = ...;
//   static constexpr bool persistent = ...;   // data outlives the store object
//   store_type open(asio::any_io_executor);   // a store on the fixture's data (call twice:
//                                              // two instances on the same data)
// and instantiates the suite with LIBRETTO_STORE_CONFORMANCE(F).
#ifndef LIBRETTO_TESTS_STORE_CONFORMANCE_HPP
#define LIBRETTO_TESTS_STORE_CONFORMANCE_HPP

#include <libretto/store/session_store.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/transcript.hpp>

#include "../sign_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <functional>
#include <limits>
#include <variant>
#include <set>
#include <string>
#include <vector>

namespace conformance {

namespace asio = boost::asio;
namespace lb = libretto;
using boost::system::error_code;

/// Runs `f()` (an awaitable) to completion on a fresh io_context; rethrows its exception.
template <class F>
void run(F f) {
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, f(io.get_executor()), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

inline lb::create_options create_opts(std::string app, std::string user, std::string id = {}, lb::json::object state = {}) {
    lb::create_options o;
    o.app_name = std::move(app);
    o.user_id = std::move(user);
    o.session_id = std::move(id);
    o.state = std::move(state);
    return o;
}

inline lb::session_key key_of(const lb::session& s) { return {s.app_name, s.user_id, s.id}; }

inline lb::event text_event(std::string text, double ts = 0) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "agent", lb::content::from_text(std::move(text)));
    if (ts != 0) e.timestamp = ts;
    return e;
}

// Every co_await below has a named operand: g++ 12 double-destroys aggregate
// temporaries built inside a co_await expression (TOOLCHAIN.md).

template <class Store>
asio::awaitable<lb::session> create(Store& st, std::string app, std::string user, std::string id = {}) {
    lb::create_options o = create_opts(std::move(app), std::move(user), std::move(id));
    auto op = st.async_create(std::move(o), asio::use_awaitable);
    co_return co_await std::move(op);
}

template <class Store>
asio::awaitable<lb::session> create_with(Store& st, lb::create_options o) {
    auto op = st.async_create(std::move(o), asio::use_awaitable);
    co_return co_await std::move(op);
}

template <class Store>
asio::awaitable<error_code> create_ec(Store& st, lb::create_options o) {
    auto op = st.async_create(std::move(o), asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<std::optional<lb::session>> get(Store& st, lb::session_key k, lb::get_options o) {
    auto op = st.async_get(std::move(k), std::move(o), asio::use_awaitable);
    co_return co_await std::move(op);
}

template <class Store>
asio::awaitable<std::optional<lb::session>> get(Store& st, const lb::session& s) {
    lb::get_options o;
    lb::session_key k = key_of(s);
    co_return co_await get(st, std::move(k), o);
}

template <class Store>
asio::awaitable<std::optional<lb::session>> get(Store& st, std::string app, std::string user, std::string id) {
    lb::session_key k{std::move(app), std::move(user), std::move(id)};
    lb::get_options o;
    co_return co_await get(st, std::move(k), o);
}

template <class Store>
asio::awaitable<error_code> get_ec(Store& st, std::string app, std::string user, std::string id) {
    lb::session_key k{std::move(app), std::move(user), std::move(id)};
    lb::get_options o;
    auto op = st.async_get(std::move(k), std::move(o), asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<lb::list_page> list(Store& st, lb::list_options o) {
    auto op = st.async_list(std::move(o), asio::use_awaitable);
    co_return co_await std::move(op);
}

template <class Store>
asio::awaitable<error_code> list_ec(Store& st, lb::list_options o) {
    auto op = st.async_list(std::move(o), asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<void> remove(Store& st, std::string app, std::string user, std::string id) {
    lb::session_key k{std::move(app), std::move(user), std::move(id)};
    auto op = st.async_delete(std::move(k), asio::use_awaitable);
    co_await std::move(op);
}

template <class Store>
asio::awaitable<error_code> append_ec(Store& st, lb::session& s, lb::event& e) {
    auto op = st.async_append(s, std::move(e), asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<error_code> append_text_ec(Store& st, lb::session& s, std::string text) {
    lb::event e = text_event(std::move(text));
    co_return co_await append_ec(st, s, e);
}

template <class Store>
asio::awaitable<std::int64_t> append(Store& st, lb::session& s, lb::event& e) {
    auto op = st.async_append(s, std::move(e), asio::use_awaitable);
    co_return co_await std::move(op);
}

template <class Store>
asio::awaitable<std::int64_t> append_text(Store& st, lb::session& s, std::string text, double ts = 0) {
    lb::event e = text_event(std::move(text), ts);
    co_return co_await append(st, s, e);
}

template <class Store>
asio::awaitable<std::vector<std::string>> texts_of(Store& st, const lb::session& s, lb::get_options o) {
    lb::session_key k = key_of(s);
    auto g = co_await get(st, std::move(k), std::move(o));
    std::vector<std::string> out;
    if (g)
        for (const auto& e : g->events) out.push_back(e.text());
    co_return out;
}

// The same with the caller's diagnostics, which the operation fills when it fails.

template <class Store>
asio::awaitable<error_code> create_ec(Store& st, lb::create_options o, lb::diagnostics& d) {
    auto op = st.async_create(std::move(o), d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<error_code> get_ec(Store& st, std::string app, std::string user, std::string id, lb::diagnostics& d) {
    lb::session_key k{std::move(app), std::move(user), std::move(id)};
    lb::get_options o;
    auto op = st.async_get(std::move(k), std::move(o), d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<error_code> list_ec(Store& st, lb::list_options o, lb::diagnostics& d) {
    auto op = st.async_list(std::move(o), d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<error_code> append_ec(Store& st, lb::session& s, lb::event& e, lb::diagnostics& d) {
    auto op = st.async_append(s, std::move(e), d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<error_code> append_text_ec(Store& st, lb::session& s, std::string text, lb::diagnostics& d) {
    lb::event e = text_event(std::move(text));
    co_return co_await append_ec(st, s, e, d);
}

// ---- compactions: refused when bad, and what a context load reads -------------------------

inline lb::event compaction_event(std::int64_t first, std::int64_t last, std::string summary) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "compaction");
    e.actions.compaction = lb::event_compaction{first, last, 0, 0, std::move(summary), last - first + 1};
    return e;
}

/// An append with the caller's diagnostics: its code (the message is in `d`).
template <class Store>
asio::awaitable<error_code> append_diagnosed(Store& st, lb::session& s, lb::event& e, lb::diagnostics& d) {
    auto op = st.async_append(s, std::move(e), d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<std::vector<std::int64_t>> sequences_of(Store& st, const lb::session& s, lb::get_options o) {
    lb::session_key k = key_of(s);
    auto g = co_await get(st, std::move(k), std::move(o));
    std::vector<std::int64_t> out;
    if (g)
        for (const auto& e : g->events) out.push_back(e.sequence);
    co_return out;
}

inline lb::get_options context_load(bool with_newest_range = false) {
    lb::get_options o;
    o.context_only = true;
    o.with_newest_range = with_newest_range;
    return o;
}

/// A reversed range, one starting before 1, one ending past the last stored event, an empty
/// or blank summary: each append fails with invalid_argument and a message naming the
/// field, and nothing is stored (the caller's copy and a second instance see 3 events).
template <class Fixture>
void bad_compactions_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        auto s = co_await create(st, "app", "u1", "bad-compactions");
        for (int i = 1; i <= 3; ++i) co_await append_text(st, s, "e" + std::to_string(i));
        struct bad {
            std::int64_t first, last;
            const char* summary;
            const char* names;
        };
        const bad cases[] = {
            {0, 2, "s", "actions.compaction.first_sequence is 0"},
            {-4, 2, "s", "actions.compaction.first_sequence is -4"},
            {3, 2, "s", "actions.compaction.first_sequence 3 is after last_sequence 2"},
            {2, 4, "s", "actions.compaction.last_sequence 4 is past the session's last stored sequence 3"},
            {1, 9, "s", "actions.compaction.last_sequence 9 is past"},
            {1, 3, "", "actions.compaction.summary is empty"},
            {1, 3, " \n\t", "actions.compaction.summary holds only whitespace"},
        };
        for (const auto& b : cases) {
            BOOST_TEST_CONTEXT("range " << b.first << ".." << b.last << " summary '" << b.summary << "'") {
                lb::event e = compaction_event(b.first, b.last, b.summary);
                lb::diagnostics d;
                const error_code ec = co_await append_diagnosed(st, s, e, d);
                BOOST_TEST((ec == lb::errc::invalid_argument));
                BOOST_TEST(d.message().find(b.names) != std::string::npos, d.message());
                BOOST_TEST(s.last_sequence == 3);
                BOOST_TEST(s.events.size() == 3u);
            }
        }
        auto st2 = fx.open(ex); // nothing reached the stored data either
        auto g = co_await get(st2, s);
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST(g->last_sequence == 3);
        BOOST_TEST(g->events.size() == 3u);
        // The boundary: a range ending at the last stored event is fine, and so is what follows.
        lb::event ok = compaction_event(1, 3, "summary of 1-3");
        BOOST_TEST(co_await append(st, s, ok) == 4);
        BOOST_TEST(co_await append_text(st, s, "e5") == 5);
        // A batch: a compaction may cover events of the same batch stored before it, never
        // one after it; a refused batch stores nothing.
        using Store = std::decay_t<decltype(st)>;
        if constexpr (requires(Store & x, lb::session & y, std::vector<lb::event> v) {
                          x.async_append_batch(y, std::move(v), asio::use_awaitable);
                      }) {
            std::vector<lb::event> batch{text_event("e6"), text_event("e7"), compaction_event(5, 7, "5-7")};
            auto op = st.async_append_batch(s, std::move(batch), asio::use_awaitable);
            BOOST_TEST(co_await std::move(op) == 8);
            std::vector<lb::event> ahead{text_event("e9"), compaction_event(9, 10, "9-10"), text_event("e10")};
            auto op2 = st.async_append_batch(s, std::move(ahead), asio::as_tuple(asio::use_awaitable));
            auto refused = co_await std::move(op2);
            BOOST_TEST((std::get<0>(refused) == lb::errc::invalid_argument));
            BOOST_TEST(s.last_sequence == 8);
            auto g2 = co_await get(st2, s);
            BOOST_TEST(g2->last_sequence == 8);
        }
    });
}

/// A state key that is empty or a scope prefix alone ("app:" was stored as the app's empty
/// key) is refused in a delta and in an initial state, naming it; nothing is stored. A
/// batch holding such an event stores none of its events.
template <class Fixture>
void bad_state_keys_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        auto s = co_await create(st, "app", "u1", "bad-keys");
        co_await append_text(st, s, "e1");
        const std::pair<const char*, const char*> cases[] = {
            {"", "actions.state_delta: a state key is empty"},
            {"app:", "actions.state_delta: state key 'app:' names a scope but no key"},
            {"user:", "state key 'user:' names a scope but no key"},
            {"temp:", "state key 'temp:' names a scope but no key"},
        };
        for (const auto& [key, names] : cases) {
            BOOST_TEST_CONTEXT("key '" << key << "'") {
                lb::event e = text_event("x");
                e.actions.state_delta["fine"] = 1;
                e.actions.state_delta[key] = 2;
                lb::diagnostics d;
                const error_code ec = co_await append_diagnosed(st, s, e, d);
                BOOST_TEST((ec == lb::errc::invalid_argument));
                BOOST_TEST(d.message().find(names) != std::string::npos, d.message());
                BOOST_TEST(s.last_sequence == 1);
                BOOST_TEST(!s.state.contains("fine"));
                lb::json::object init;
                init[key] = 1;
                lb::create_options o = create_opts("app", "u1", std::string("c-") + (*key ? key : "empty"), init);
                const error_code cec = co_await create_ec(st, o);
                BOOST_TEST((cec == lb::errc::invalid_argument));
            }
        }
        // Keys that only look close are keys like any other.
        lb::event ok = text_event("y");
        ok.actions.state_delta["app:x"] = 1;
        ok.actions.state_delta["apps:"] = 2;
        ok.actions.state_delta[" "] = 3;
        BOOST_TEST(co_await append(st, s, ok) == 2);
        auto g = co_await get(st, s);
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST(g->last_sequence == 2);
        BOOST_TEST(g->state.at("apps:") == 2);
        BOOST_TEST(!g->state.contains(""));
        BOOST_TEST(!g->state.contains("app:"));
        lb::list_options lo;
        lo.app_name = "app";
        auto page = co_await list(st, lo);
        BOOST_TEST(page.sessions.size() == 1u); // no c-... session was created
        using Store = std::decay_t<decltype(st)>;
        if constexpr (requires(Store & x, lb::session & y, std::vector<lb::event> v) {
                          x.async_append_batch(y, std::move(v), asio::use_awaitable);
                      }) {
            lb::event bad = text_event("z");
            bad.actions.state_delta["user:"] = 1;
            std::vector<lb::event> batch{text_event("w"), std::move(bad)};
            auto op = st.async_append_batch(s, std::move(batch), asio::as_tuple(asio::use_awaitable));
            auto refused = co_await std::move(op);
            BOOST_TEST((std::get<0>(refused) == lb::errc::invalid_argument));
            auto g2 = co_await get(st, s);
            BOOST_TEST(g2->last_sequence == 2);
        }
    });
}

/// A NaN from_timestamp is refused by every store (back ends once disagreed: no events
/// from memory_store and PostgreSQL, all from jsonl_store and SQLite); infinities select
/// none and all.
template <class Fixture>
void nan_from_timestamp_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        auto s = co_await create(st, "app", "u1", "times");
        co_await append_text(st, s, "e1", 100);
        co_await append_text(st, s, "e2", 200);
        lb::session_key k{"app", "u1", "times"};
        lb::get_options o;
        o.from_timestamp = std::numeric_limits<double>::quiet_NaN();
        lb::diagnostics d;
        auto op = st.async_get(k, o, d, asio::as_tuple(asio::use_awaitable));
        auto [ec, got] = co_await std::move(op);
        BOOST_TEST((ec == lb::errc::invalid_argument), ec.message());
        BOOST_TEST(!got.has_value());
        BOOST_TEST(d.message().find("get_options::from_timestamp is NaN") != std::string::npos, d.message());
        o.from_timestamp = std::numeric_limits<double>::infinity();
        auto none = co_await get(st, k, o);
        BOOST_REQUIRE(none.has_value());
        BOOST_TEST(none->events.empty());
        o.from_timestamp = -std::numeric_limits<double>::infinity();
        auto all = co_await get(st, k, o);
        BOOST_REQUIRE(all.has_value());
        BOOST_TEST(all->events.size() == 2u);
        o.from_timestamp = 150.0;
        auto later = co_await get(st, k, o);
        BOOST_REQUIRE(later.has_value());
        BOOST_TEST(later->events.size() == 1u);
    });
}

/// context_only reads the summaries a view shows and what they leave out, never the
/// events they cover; the same from a second instance (what the store keeps about its
/// compactions survives it).
template <class Fixture>
void context_load_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        using v = std::vector<std::int64_t>;
        auto st = fx.open(ex);
        v r;
        lb::get_options context = context_load(), with_newest = context_load(true), plain;
        // A rolling summary: 14 of 1..12 subsumes 11 of 1..6. Read: 13, 14, 15.
        auto rolling = co_await create(st, "app", "u1", "rolling");
        for (int i = 1; i <= 10; ++i) co_await append_text(st, rolling, "e" + std::to_string(i), i);
        lb::event c1 = compaction_event(1, 6, "s1-6");
        co_await append(st, rolling, c1);
        co_await append_text(st, rolling, "e12", 12);
        co_await append_text(st, rolling, "e13", 13);
        lb::event c2 = compaction_event(1, 12, "s1-12");
        co_await append(st, rolling, c2);
        co_await append_text(st, rolling, "e15", 15);
        auto st2 = fx.open(ex);
        r = co_await sequences_of(st, rolling, context);
        BOOST_TEST(r == (v{13, 14, 15}), boost::test_tools::per_element());
        r = co_await sequences_of(st2, rolling, context);
        BOOST_TEST(r == (v{13, 14, 15}), boost::test_tools::per_element());
        // Combined with the other filters.
        lb::get_options o = context_load();
        o.num_recent_events = 2;
        r = co_await sequences_of(st2, rolling, o);
        BOOST_TEST(r == (v{14, 15}), boost::test_tools::per_element());
        o = context_load();
        o.from_sequence = 14;
        r = co_await sequences_of(st2, rolling, o);
        BOOST_TEST(r == (v{14, 15}), boost::test_tools::per_element());
        o = context_load();
        o.from_timestamp = 13.5; // the summary's timestamp is its append time (now)
        r = co_await sequences_of(st2, rolling, o);
        BOOST_TEST(r == (v{14, 15}), boost::test_tools::per_element());
        o.num_recent_events = 0;
        r = co_await sequences_of(st2, rolling, o);
        BOOST_TEST(r.empty());

        // Ranges that follow each other (a sliding window without overlap): both summaries
        // stay, with what neither covers. with_newest_range adds the newest one's events.
        auto window = co_await create(st, "app", "u1", "window");
        for (int i = 1; i <= 4; ++i) co_await append_text(st, window, "w" + std::to_string(i));
        lb::event w1 = compaction_event(1, 4, "w1-4");
        co_await append(st, window, w1); // 5
        co_await append_text(st, window, "w6");
        co_await append_text(st, window, "w7");
        lb::event w2 = compaction_event(6, 7, "w6-7");
        co_await append(st, window, w2); // 8
        co_await append_text(st, window, "w9");
        r = co_await sequences_of(st2, window, context);
        BOOST_TEST(r == (v{5, 8, 9}), boost::test_tools::per_element());
        r = co_await sequences_of(st2, window, with_newest);
        BOOST_TEST(r == (v{5, 6, 7, 8, 9}), boost::test_tools::per_element());
        // A later range over both (1..7) subsumes them: 5 is covered now; 8 (after 1..7)
        // is still read, the view drops it as subsumed.
        lb::event w3 = compaction_event(1, 7, "w1-7");
        co_await append(st, window, w3); // 10
        r = co_await sequences_of(st2, window, context);
        BOOST_TEST(r == (v{8, 9, 10}), boost::test_tools::per_element());
        r = co_await sequences_of(st2, window, with_newest);
        BOOST_TEST(r == (v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), boost::test_tools::per_element());

        // A gap between ranges is read. Of two identical ranges both events lie after the
        // range, so both are read (the view shows the later).
        auto gap = co_await create(st, "app", "u1", "gap");
        for (int i = 1; i <= 6; ++i) co_await append_text(st, gap, "g" + std::to_string(i));
        lb::event g1 = compaction_event(3, 4, "g3-4 first");
        co_await append(st, gap, g1); // 7
        lb::event g2 = compaction_event(3, 4, "g3-4 again");
        co_await append(st, gap, g2); // 8
        r = co_await sequences_of(st2, gap, context);
        BOOST_TEST(r == (v{1, 2, 5, 6, 7, 8}), boost::test_tools::per_element());
        // A summary of 1..6 hides the rest but leaves 7 and 8 (after its range) visible.
        lb::event g3 = compaction_event(1, 6, "g1-6");
        co_await append(st, gap, g3); // 9
        r = co_await sequences_of(st2, gap, context);
        BOOST_TEST(r == (v{7, 8, 9}), boost::test_tools::per_element());
        // Without context_only, a get is unchanged: every event.
        r = co_await sequences_of(st2, gap, plain);
        BOOST_TEST(r.size() == 9u);
    });
}

// ---- signed transcripts -------------------------------------------------------------------
// A signed, chained transcript goes into the store and comes back out of a second instance
// verifying (temp: keys dropped, numbers of every kind, a compaction event); a chain
// continued from a tail loaded by that instance verifies whole; each kind of tampering with
// the stored events is reported at the right event with the right reason.

inline lb::event signed_case_event(int i) {
    lb::event e;
    switch (i) {
    case 1: e = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("Weather in Oslo?")); break;
    case 2: {
        lb::content c;
        lb::json::object args;
        args["city"] = "Oslo";
        args["big"] = std::int64_t{9007199254740993}; // beyond 2^53: kept exact
        args["huge"] = std::uint64_t{18446744073709551615ull};
        args["ratio"] = 0.1;
        c.parts.emplace_back(lb::tool_call_part{"c1", "weather", std::move(args), {}});
        e = lb::event::make(lb::event_type::agent_message, "assistant", std::move(c));
        e.usage = lb::usage{120, 8, "m-1"};
        break;
    }
    case 3: {
        lb::content c;
        lb::json::object result;
        result["temp_c"] = -3.25;
        result["sky"] = "clear \xe2\x98\x80 \"sunny\"\n";
        c.parts.emplace_back(lb::tool_response_part{"c1", "weather", std::move(result), std::nullopt, {}});
        e = lb::event::make(lb::event_type::tool_response, "assistant", std::move(c));
        e.actions.state_delta["city"] = "Oslo";
        e.actions.state_delta["temp:scratch"] = 1; // never stored, not signed
        e.actions.state_delta["user:lang"] = "nb";
        e.actions.state_delta["app:calls"] = 1;
        break;
    }
    case 4:
        e = lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text("Clear, -3.25 C."));
        e.metadata["score"] = 1e-7;
        e.metadata["whole"] = 2.0;
        break;
    case 5:
        e = lb::event::make(lb::event_type::agent_message, "compaction", lb::content::from_text("summary"));
        e.actions.compaction = lb::event_compaction{2, 3, 1.5, 2.5, "summary", 2};
        break;
    default: e = lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text("m" + std::to_string(i))); break;
    }
    e.invocation_id = "inv-1";
    return e;
}

template <class Store>
asio::awaitable<void> append_signed(Store& st, lb::session& s, lb::event e) {
    const sign_test::checksum_signer signer;
    lb::chain_event(s, e);
    signer.sign_event(e);
    const std::int64_t expected = e.sequence;
    const std::int64_t seq = co_await append(st, s, e);
    BOOST_TEST(seq == expected); // signed with the sequence the store assigns
}

inline lb::transcript_report verify_checksums(const lb::session& s, lb::transcript_options o = {}) {
    sign_test::checksum_verifier v;
    return lb::verify_transcript(s, v, std::move(o));
}

template <class Fixture>
void signed_transcript_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        auto s = co_await create(st, "app", "u1", "signed");
        for (int i = 1; i <= 5; ++i) co_await append_signed(st, s, signed_case_event(i));
        BOOST_TEST(verify_checksums(s).ok, verify_checksums(s).message);

        auto st2 = fx.open(ex); // a second instance on the same data
        lb::get_options tail_only;
        tail_only.context_only = true;
        lb::session_key k = key_of(s);
        auto tail = co_await get(st2, std::move(k), tail_only);
        BOOST_REQUIRE(tail.has_value());
        // The compaction covers 2..3: event 1 stays (no summary stands for it), 2 and 3 are not read.
        BOOST_REQUIRE_EQUAL(tail->events.size(), 3u);
        BOOST_TEST(tail->events[0].sequence == 1);
        BOOST_TEST(tail->events[1].sequence == 4);
        lb::session after_summary = *tail; // a context load has gaps: verify its contiguous tail
        after_summary.events.erase(after_summary.events.begin(), after_summary.events.begin() + 1);
        lb::transcript_options as_tail;
        as_tail.first_sequence = 0;
        BOOST_TEST(verify_checksums(after_summary, as_tail).ok);
        for (int i = 6; i <= 7; ++i) co_await append_signed(st2, *tail, signed_case_event(i));

        auto g = co_await get(st2, s);
        BOOST_REQUIRE(g.has_value());
        BOOST_REQUIRE_EQUAL(g->events.size(), 7u);
        BOOST_TEST(!g->events[2].actions.state_delta.contains("temp:scratch"));
        BOOST_TEST((g->events[5].prev_signature == g->events[4].signature));
        const auto ok = verify_checksums(*g);
        BOOST_TEST(ok.ok, ok.message);
        BOOST_TEST(ok.checked == 7u);

        struct tamper {
            const char* what;
            std::function<void(std::vector<lb::event>&)> edit;
            std::size_t index;
            lb::transcript_fault reason;
        };
        const tamper cases[] = {
            {"text", [](auto& ev) { std::get<lb::text_part>(ev[3].content.parts[0]).text = "Warm and sunny."; }, 3,
             lb::transcript_fault::bad_signature},
            {"tool result", [](auto& ev) { std::get<lb::tool_response_part>(ev[2].content.parts[0]).result = "forged"; }, 2,
             lb::transcript_fault::bad_signature},
            {"state_delta", [](auto& ev) { ev[2].actions.state_delta["city"] = "Bergen"; }, 2,
             lb::transcript_fault::bad_signature},
            {"tool args", [](auto& ev) { std::get<lb::tool_call_part>(ev[1].content.parts[0]).args["big"] = std::int64_t{9007199254740992}; }, 1,
             lb::transcript_fault::bad_signature},
            {"sequence", [](auto& ev) { ev[4].sequence = 50; }, 4, lb::transcript_fault::bad_signature},
            {"delete", [](auto& ev) { ev.erase(ev.begin() + 3); }, 3, lb::transcript_fault::missing_event},
            {"swap", [](auto& ev) { std::swap(ev[1], ev[2]); }, 1, lb::transcript_fault::reordered},
        };
        for (const auto& t : cases) {
            BOOST_TEST_CONTEXT(t.what) {
                lb::session bad = *g;
                std::vector<lb::event> edited = bad.events.to_vector();
                t.edit(edited);
                bad.events = lb::event_list(std::move(edited));
                const auto r = verify_checksums(bad);
                BOOST_TEST(!r.ok);
                BOOST_TEST(r.index == t.index);
                BOOST_TEST(r.reason == t.reason);
            }
        }
    });
}

/// get_options::with_initial_state returns the session-scope state the session was created
/// with (no app:, user: or temp: keys), whatever the events changed since; a get without
/// it returns none. The same from a second instance (a persistent store reads it back
/// from its data), combined with the event filters, and {} for a session created without
/// state.
template <class Fixture>
void initial_state_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        lb::json::object init;
        init["a"] = 1;
        init["b"] = lb::json::object{{"x", true}};
        init["app:shared"] = 2;
        init["user:u"] = 3;
        init["temp:t"] = 4;
        lb::create_options co = create_opts("app", "u1", "initial", init);
        auto s = co_await create_with(st, std::move(co));
        BOOST_TEST(s.initial_state.empty()); // only a get with the flag fills it
        lb::event e1 = text_event("e1", 1);
        e1.actions.state_delta["a"] = 5;
        e1.actions.state_delta["c"] = "new";
        co_await append(st, s, e1);
        lb::event e2 = text_event("e2", 2);
        e2.actions.state_delta["b"] = nullptr;
        e2.actions.state_delta["app:shared"] = 7;
        co_await append(st, s, e2);
        co_await append_text(st, s, "e3", 3);

        lb::json::object expected;
        expected["a"] = 1;
        expected["b"] = lb::json::object{{"x", true}};
        lb::session_key k = key_of(s);
        lb::get_options plain;
        auto g = co_await get(st, k, plain);
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST(g->initial_state.empty());
        BOOST_TEST(g->state.at("a").as_int64() == 5);
        BOOST_TEST(!g->state.contains("b"));

        lb::get_options with;
        with.with_initial_state = true;
        auto w = co_await get(st, k, with);
        BOOST_REQUIRE(w.has_value());
        BOOST_TEST((w->initial_state == expected), lb::json::serialize(w->initial_state));
        BOOST_TEST(w->events.size() == 3u);
        BOOST_TEST(w->state.at("a").as_int64() == 5); // the current state is unchanged
        BOOST_TEST(w->state.at("app:shared").as_int64() == 7);

        auto st2 = fx.open(ex); // a second instance on the same data
        auto w2 = co_await get(st2, k, with);
        BOOST_REQUIRE(w2.has_value());
        BOOST_TEST((w2->initial_state == expected), lb::json::serialize(w2->initial_state));
        auto g2 = co_await get(st2, k, plain);
        BOOST_REQUIRE(g2.has_value());
        BOOST_TEST(g2->initial_state.empty());

        // With the event filters: the same initial state, only the selected events.
        lb::get_options filtered = context_load();
        filtered.num_recent_events = 1;
        filtered.with_initial_state = true;
        auto f = co_await get(st2, k, filtered);
        BOOST_REQUIRE(f.has_value());
        BOOST_TEST((f->initial_state == expected), lb::json::serialize(f->initial_state));
        BOOST_REQUIRE_EQUAL(f->events.size(), 1u);
        BOOST_TEST(f->events[0].text() == "e3");
        lb::event c = compaction_event(1, 2, "s1-2");
        co_await append(st, s, c);
        auto fc = co_await get(st2, k, filtered);
        BOOST_REQUIRE(fc.has_value());
        BOOST_TEST((fc->initial_state == expected), lb::json::serialize(fc->initial_state));
        BOOST_REQUIRE_EQUAL(fc->events.size(), 1u);
        BOOST_TEST(fc->last_sequence == 4);
        lb::get_options none;
        none.num_recent_events = 0;
        none.with_initial_state = true;
        auto n = co_await get(st2, k, none);
        BOOST_REQUIRE(n.has_value());
        BOOST_TEST(n->events.empty());
        BOOST_TEST((n->initial_state == expected), lb::json::serialize(n->initial_state));

        // A session created without state: {}.
        auto bare = co_await create(st, "app", "u1", "bare");
        co_await append_text(st, bare, "x");
        lb::session_key bk = key_of(bare);
        auto b = co_await get(st2, bk, with);
        BOOST_REQUIRE(b.has_value());
        BOOST_TEST(b->initial_state.empty());
        BOOST_TEST(b->state.at("app:shared").as_int64() == 7);
    });
}

} // namespace conformance

#include "readback_cases.hpp"

// clang-format off
#define LIBRETTO_STORE_CONFORMANCE(F) \
BOOST_FIXTURE_TEST_SUITE(conformance_##F, F) \
\
BOOST_AUTO_TEST_CASE(create_with_given_and_generated_ids) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto a = co_await create(st, "app", "u1", "s1"); \
        BOOST_TEST(a.id == "s1"); BOOST_TEST(a.app_name == "app"); BOOST_TEST(a.user_id == "u1"); \
        BOOST_TEST(a.events.empty()); BOOST_TEST(a.last_sequence == 0); \
        auto b = co_await create(st, "app", "u1"); \
        BOOST_TEST(b.id.size() == 36u); BOOST_TEST(b.id != a.id); \
        auto c = co_await create(st, "app", "u1"); \
        BOOST_TEST(c.id != b.id); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(duplicate_id_fails_with_already_exists) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        lb::json::object st1; st1["k"] = 1; \
        lb::create_options o = create_opts("app", "u1", "dup", st1); \
        co_await create_with(st, o); \
        BOOST_TEST(co_await create_ec(st, o) == lb::errc::already_exists); \
        auto s = co_await get(st, "app", "u1", "dup"); \
        BOOST_REQUIRE(s.has_value()); BOOST_TEST(s->state.at("k").as_int64() == 1); \
        /* The same id for another user is a different session. */ \
        o.user_id = "u2"; \
        BOOST_TEST(co_await create_ec(st, o) == error_code{}); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(invalid_ids_are_rejected_and_nothing_is_created) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        std::vector<std::string> bad; \
        bad.push_back(""); bad.push_back("a/b"); bad.push_back("a\\b"); bad.push_back(".."); bad.push_back("x..y"); \
        bad.push_back(std::string("a\0b", 3)); bad.push_back("tab\there"); bad.push_back("nl\n"); \
        bad.push_back(std::string(129, 'x')); bad.push_back("."); \
        /* Not UTF-8: a lone continuation byte, FF, a truncated sequence, an overlong form, a surrogate. */ \
        bad.push_back("a\x80"); bad.push_back("\xff"); bad.push_back("ab\xe2\x82"); bad.push_back("\xc0\xaf"); \
        bad.push_back("x\xed\xa0\x80y"); \
        for (const auto& id : bad) { \
            BOOST_TEST_CONTEXT("id of " << id.size() << " bytes") { \
                lb::create_options o = create_opts("app", "u1", id); \
                if (!id.empty()) BOOST_TEST(co_await create_ec(st, o) == lb::errc::invalid_argument); \
                o = create_opts(id, "u1", "s"); \
                BOOST_TEST(co_await create_ec(st, o) == lb::errc::invalid_argument); \
                o = create_opts("app", id, "s"); \
                BOOST_TEST(co_await create_ec(st, o) == lb::errc::invalid_argument); \
                BOOST_TEST(co_await get_ec(st, "app", "u1", id) == lb::errc::invalid_argument); \
                BOOST_TEST(co_await get_ec(st, "app", id, "s") == lb::errc::invalid_argument); \
                lb::session ghost; ghost.app_name = "app"; ghost.user_id = "u1"; ghost.id = id; \
                BOOST_TEST(co_await append_text_ec(st, ghost, "x") == lb::errc::invalid_argument); \
                BOOST_TEST(ghost.events.empty()); \
            } \
        } \
        /* Well-formed multi-byte ids are ids like any other. */ \
        lb::create_options utf8 = create_opts("app", "u1", "caf\xc3\xa9-\xf0\x9f\x8e\xb5"); \
        BOOST_TEST(co_await create_ec(st, utf8) == error_code{}); \
        lb::create_options longest = create_opts("app", "u1", std::string(128, 'x')); \
        BOOST_TEST(co_await create_ec(st, longest) == error_code{}); \
        lb::list_options lo; lo.app_name = "app"; \
        auto page = co_await list(st, lo); \
        BOOST_TEST(page.sessions.size() == 2u); \
        BOOST_TEST(co_await get_ec(st, "app", "u1", "../etc") == lb::errc::invalid_argument); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(get_missing_session_is_empty) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await get(st, "app", "u1", "nope"); \
        BOOST_TEST(!s.has_value()); \
        co_await create(st, "app", "u1", "s1"); \
        auto other_user = co_await get(st, "app", "u2", "s1"); \
        BOOST_TEST(!other_user.has_value()); \
        auto other_app = co_await get(st, "app2", "u1", "s1"); \
        BOOST_TEST(!other_app.has_value()); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(append_assigns_increasing_sequences_and_get_returns_them) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await create(st, "app", "u1", "s1"); \
        for (int i = 1; i <= 5; ++i) { \
            auto seq = co_await append_text(st, s, "m" + std::to_string(i)); \
            BOOST_TEST(seq == i); \
            BOOST_TEST(s.last_sequence == i); \
        } \
        BOOST_TEST(s.events.size() == 5u); \
        auto g = co_await get(st, s); \
        BOOST_REQUIRE(g.has_value()); \
        BOOST_REQUIRE_EQUAL(g->events.size(), 5u); \
        for (int i = 0; i < 5; ++i) { \
            BOOST_TEST(g->events[i].sequence == i + 1); \
            BOOST_TEST(g->events[i].text() == "m" + std::to_string(i + 1)); \
            BOOST_TEST(g->events[i].session_id == "s1"); \
            BOOST_TEST((g->events[i] == s.events[i])); \
        } \
        BOOST_TEST(g->last_sequence == 5); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(changing_a_returned_session_changes_nothing_stored) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await create(st, "app", "u1", "s1"); \
        co_await append_text(st, s, "first"); \
        co_await append_text(st, s, "second"); \
        auto g1 = co_await get(st, s); \
        BOOST_REQUIRE(g1.has_value()); \
        /* Both the appender's copy and a loaded copy are edited in place... */ \
        s.events.modify(0).content = lb::content::from_text("edited by the appender"); \
        g1->events.modify_back().content = lb::content::from_text("edited by a reader"); \
        g1->events.modify_back().sequence = 99; \
        BOOST_TEST(s.events[1].text() == "second"); \
        /* ...and the store, and every other copy, still have what was appended. */ \
        auto g2 = co_await get(st, s); \
        BOOST_REQUIRE(g2.has_value()); \
        BOOST_REQUIRE_EQUAL(g2->events.size(), 2u); \
        BOOST_TEST(g2->events[0].text() == "first"); \
        BOOST_TEST(g2->events[1].text() == "second"); \
        BOOST_TEST(g2->events[1].sequence == 2); \
        BOOST_TEST(g1->events[0].text() == "first"); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(partial_events_are_never_stored) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await create(st, "app", "u1", "s1"); \
        auto p = text_event("chunk"); p.partial = true; p.actions.state_delta["k"] = 1; \
        auto seq = co_await append(st, s, p); \
        BOOST_TEST(seq == 0); BOOST_TEST(s.events.empty()); BOOST_TEST(!s.state.contains("k")); \
        BOOST_TEST(s.last_sequence == 0); \
        auto g = co_await get(st, s); \
        BOOST_TEST(g->events.empty()); BOOST_TEST(!g->state.contains("k")); \
        co_await append_text(st, s, "real"); \
        BOOST_TEST(s.last_sequence == 1); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(state_scopes_temp_app_user_and_null_deletes) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        lb::json::object init; init["a"] = 1; init["temp:gone"] = 1; init["app:theme"] = "dark"; \
        lb::create_options o = create_opts("app", "u1", "s1", init); \
        auto s = co_await create_with(st, o); \
        BOOST_TEST(s.state.contains("a")); BOOST_TEST(!s.state.contains("temp:gone")); \
        BOOST_TEST(s.state.at("app:theme").as_string() == "dark"); \
        auto e = text_event("x"); \
        e.actions.state_delta["temp:scratch"] = 42; \
        e.actions.state_delta["user:name"] = "Ada"; \
        e.actions.state_delta["app:version"] = 2; \
        e.actions.state_delta["b"] = true; \
        e.actions.state_delta["a"] = nullptr; \
        co_await append(st, s, e); \
        /* The caller sees everything, temp included; its delta keeps no temp key. */ \
        BOOST_TEST(s.state.at("temp:scratch").as_int64() == 42); \
        BOOST_TEST(!s.state.contains("a")); \
        BOOST_TEST(!s.events.back().actions.state_delta.contains("temp:scratch")); \
        auto g = co_await get(st, s); \
        BOOST_TEST(!g->state.contains("temp:scratch")); \
        BOOST_TEST(!g->state.contains("a")); \
        BOOST_TEST(g->state.at("b").as_bool()); \
        BOOST_TEST(g->state.at("user:name").as_string() == "Ada"); \
        BOOST_TEST(g->state.at("app:version").as_int64() == 2); \
        BOOST_TEST(!g->events.back().actions.state_delta.contains("temp:scratch")); \
        BOOST_TEST(g->events.back().actions.state_delta.contains("a")); \
        /* Shared scopes reach the user's other sessions and the app's other users. */ \
        auto s2 = co_await create(st, "app", "u1", "s2"); \
        BOOST_TEST(s2.state.at("user:name").as_string() == "Ada"); \
        BOOST_TEST(s2.state.at("app:version").as_int64() == 2); \
        BOOST_TEST(!s2.state.contains("b")); \
        auto s3 = co_await create(st, "app", "u2", "s3"); \
        BOOST_TEST(!s3.state.contains("user:name")); \
        BOOST_TEST(s3.state.at("app:theme").as_string() == "dark"); \
        auto other = co_await create(st, "other", "u1", "s4"); \
        BOOST_TEST(other.state.empty()); \
        /* Deleting a shared key through another session. */ \
        auto d = text_event("y"); d.actions.state_delta["app:theme"] = nullptr; \
        co_await append(st, s3, d); \
        auto g1 = co_await get(st, s); \
        BOOST_TEST(!g1->state.contains("app:theme")); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(get_options_select_events) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await create(st, "app", "u1", "s1"); \
        for (int i = 1; i <= 5; ++i) co_await append_text(st, s, "e" + std::to_string(i), i); \
        using v = std::vector<std::string>; \
        v r; \
        lb::get_options o; \
        o.num_recent_events = 3; r = co_await texts_of(st, s, o); \
        BOOST_TEST(r == (v{"e3", "e4", "e5"}), boost::test_tools::per_element()); \
        o.num_recent_events = 0; r = co_await texts_of(st, s, o); BOOST_TEST(r.empty()); \
        o.num_recent_events = 50; r = co_await texts_of(st, s, o); BOOST_TEST(r.size() == 5u); \
        o = {}; o.from_timestamp = 4.0; r = co_await texts_of(st, s, o); \
        BOOST_TEST(r == (v{"e4", "e5"}), boost::test_tools::per_element()); \
        o.from_timestamp = 50.0; r = co_await texts_of(st, s, o); BOOST_TEST(r.empty()); \
        o = {}; o.from_sequence = 2; r = co_await texts_of(st, s, o); \
        BOOST_TEST(r == (v{"e2", "e3", "e4", "e5"}), boost::test_tools::per_element()); \
        o.num_recent_events = 1; r = co_await texts_of(st, s, o); \
        BOOST_TEST(r == (v{"e5"}), boost::test_tools::per_element()); \
        o = {}; o.from_timestamp = 2.0; o.num_recent_events = 2; r = co_await texts_of(st, s, o); \
        BOOST_TEST(r == (v{"e4", "e5"}), boost::test_tools::per_element()); \
        /* No compaction yet: the whole session. */ \
        o = {}; o.context_only = true; r = co_await texts_of(st, s, o); BOOST_TEST(r.size() == 5u); \
        auto c = text_event("summary", 6); c.actions.compaction = lb::event_compaction{1, 3, 1, 3, "s1-3", 3}; \
        co_await append(st, s, c); \
        co_await append_text(st, s, "e7", 7); \
        auto c2 = text_event("summary2", 8); c2.actions.compaction = lb::event_compaction{2, 4, 2, 4, "s2-4", 3}; \
        co_await append(st, s, c2); \
        co_await append_text(st, s, "e9", 9); \
        /* Both summaries are shown (neither range contains the other): they and what */ \
        /* their ranges (1..4) leave out. */ \
        r = co_await texts_of(st, s, o); \
        BOOST_TEST(r == (v{"e5", "summary", "e7", "summary2", "e9"}), boost::test_tools::per_element()); \
        lb::session_key k = key_of(s); \
        auto tail = co_await get(st, k, o); \
        BOOST_TEST(tail->last_sequence == 9); \
        BOOST_TEST(tail->events.front().sequence == 5); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(list_filters_orders_and_pages) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        for (int i = 0; i < 7; ++i) { \
            auto s = co_await create(st, "app", i < 5 ? "u1" : "u2", "s" + std::to_string(i)); \
            co_await append_text(st, s, "hello", 100.0 + i); \
        } \
        co_await create(st, "other", "u1", "x"); \
        lb::list_options lo; lo.app_name = "app"; \
        auto all = co_await list(st, lo); \
        BOOST_REQUIRE_EQUAL(all.sessions.size(), 7u); \
        BOOST_TEST(all.next_page_token.empty()); \
        for (std::size_t i = 0; i < 7; ++i) { \
            BOOST_TEST(all.sessions[i].id == "s" + std::to_string(6 - i)); /* newest first */ \
            BOOST_TEST(all.sessions[i].events.empty()); \
        } \
        lo.user_id = "u2"; \
        auto u2 = co_await list(st, lo); \
        BOOST_TEST(u2.sessions.size() == 2u); \
        lo.user_id.reset(); lo.page_size = 3; \
        std::vector<std::string> seen; \
        for (int pages = 0; pages < 10; ++pages) { \
            auto p = co_await list(st, lo); \
            BOOST_TEST(p.sessions.size() <= 3u); \
            for (auto& s : p.sessions) seen.push_back(s.id); \
            if (p.next_page_token.empty()) break; \
            lo.page_token = p.next_page_token; \
        } \
        BOOST_TEST(seen.size() == 7u); \
        BOOST_TEST(std::set<std::string>(seen.begin(), seen.end()).size() == 7u); \
        BOOST_TEST(seen.front() == "s6"); BOOST_TEST(seen.back() == "s0"); \
        lo.page_token = "garbage"; \
        BOOST_TEST(co_await list_ec(st, lo) == lb::errc::invalid_argument); \
        /* Numbers no token holds: a NaN cursor would end the listing early, inf restart it. */ \
        for (std::string bad_token : {"nan|u1/s1", "inf|u1/s1", "-inf|s1", "1e999|s1", "|s1", "5|"}) { \
            lo.page_token = bad_token; \
            const bool refused = co_await list_ec(st, lo) == lb::errc::invalid_argument; \
            BOOST_TEST(refused, bad_token); \
        } \
        lo.page_token.clear(); lo.page_size = 0; \
        BOOST_TEST(co_await list_ec(st, lo) == lb::errc::invalid_argument); \
        lo.page_size = 10; lo.app_name = "nobody"; \
        auto none = co_await list(st, lo); \
        BOOST_TEST(none.sessions.empty()); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(pages_keep_sessions_of_different_users_with_one_id_and_one_time) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        /* Three users each have a session "same", last updated at the same time, and */ \
        /* one newer and one older session around them: a page boundary between two */ \
        /* "same" sessions must not skip or repeat one. */ \
        for (const char* u : {"u3", "u1", "u2"}) { \
            auto s = co_await create(st, "app", u, "same"); \
            co_await append_text(st, s, "hello", 200.0); \
        } \
        auto newer = co_await create(st, "app", "u1", "newer"); \
        co_await append_text(st, newer, "hello", 300.0); \
        auto older = co_await create(st, "app", "u9", "older"); \
        co_await append_text(st, older, "hello", 100.0); \
        for (std::size_t size : {1u, 2u, 3u}) { \
            lb::list_options lo; lo.app_name = "app"; lo.page_size = size; \
            std::vector<std::string> seen; \
            for (int pages = 0; pages < 10; ++pages) { \
                auto p = co_await list(st, lo); \
                for (auto& s : p.sessions) seen.push_back(s.user_id + "/" + s.id); \
                if (p.next_page_token.empty()) break; \
                lo.page_token = p.next_page_token; \
            } \
            BOOST_TEST(seen == (std::vector<std::string>{"u1/newer", "u1/same", "u2/same", "u3/same", "u9/older"}), \
                       boost::test_tools::per_element()); \
        } \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(delete_is_idempotent_and_keeps_shared_state) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await create(st, "app", "u1", "s1"); \
        auto e = text_event("x"); e.actions.state_delta["user:lang"] = "nb"; e.actions.state_delta["app:n"] = 1; \
        co_await append(st, s, e); \
        co_await remove(st, "app", "u1", "s1"); \
        co_await remove(st, "app", "u1", "s1"); \
        co_await remove(st, "app", "u1", "never"); \
        auto gone = co_await get(st, s); \
        BOOST_TEST(!gone.has_value()); \
        auto again = co_await create(st, "app", "u1", "s1"); \
        BOOST_TEST(again.events.empty()); \
        BOOST_TEST(again.state.at("user:lang").as_string() == "nb"); \
        BOOST_TEST(again.state.at("app:n").as_int64() == 1); \
        auto g = co_await get(st, again); \
        BOOST_TEST(g->events.empty()); \
        /* The old copy cannot write into the new session. */ \
        auto ec = co_await append_text_ec(st, s, "late"); \
        BOOST_TEST((ec == lb::errc::stale_session || ec == lb::errc::not_found)); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(append_to_missing_session_fails) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        lb::session ghost; ghost.app_name = "app"; ghost.user_id = "u1"; ghost.id = "ghost"; \
        BOOST_TEST(co_await append_text_ec(st, ghost, "x") == lb::errc::not_found); \
        ghost.id = "../x"; \
        BOOST_TEST(co_await append_text_ec(st, ghost, "x") == lb::errc::invalid_argument); \
        BOOST_TEST(ghost.events.empty()); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(stale_session_is_rejected_and_writes_nothing) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto st = this->open(ex); \
        auto s = co_await create(st, "app", "u1", "s1"); \
        auto copy = co_await get(st, s); \
        co_await append_text(st, s, "first"); \
        auto e = text_event("stale"); e.actions.state_delta["k"] = 1; \
        BOOST_TEST(co_await append_ec(st, *copy, e) == lb::errc::stale_session); \
        BOOST_TEST(copy->events.empty()); BOOST_TEST(!copy->state.contains("k")); \
        auto g = co_await get(st, s); \
        BOOST_REQUIRE_EQUAL(g->events.size(), 1u); BOOST_TEST(!g->state.contains("k")); \
        /* A reload continues. */ \
        BOOST_TEST(co_await append_text_ec(st, *g, "second") == error_code{}); \
        BOOST_TEST(g->last_sequence == 2); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(concurrent_writers_from_one_revision_exactly_one_wins) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        auto a = this->open(ex); \
        auto b = this->open(ex); /* a second instance on the same data */ \
        auto s = co_await create(a, "app", "u1", "race"); \
        for (int round = 0; round < 8; ++round) { \
            auto c1 = co_await get(a, s); \
            auto c2 = co_await get(b, s); \
            error_code e1, e2; int done = 0; \
            auto w1 = [&]() -> asio::awaitable<void> { e1 = co_await append_text_ec(a, *c1, "a" + std::to_string(round)); ++done; }; \
            auto w2 = [&]() -> asio::awaitable<void> { e2 = co_await append_text_ec(b, *c2, "b" + std::to_string(round)); ++done; }; \
            asio::co_spawn(ex, w1(), asio::detached); \
            asio::co_spawn(ex, w2(), asio::detached); \
            asio::steady_timer t(ex); \
            while (done < 2) { t.expires_after(std::chrono::milliseconds(1)); co_await t.async_wait(asio::use_awaitable); } \
            BOOST_TEST_CONTEXT("round " << round) { \
                BOOST_TEST(((!e1) != (!e2))); \
                BOOST_TEST((e1 == lb::errc::stale_session || e2 == lb::errc::stale_session)); \
            } \
        } \
        auto g = co_await get(a, s); \
        BOOST_TEST(g->events.size() == 8u); \
        for (std::size_t i = 0; i < g->events.size(); ++i) BOOST_TEST(g->events[i].sequence == static_cast<std::int64_t>(i + 1)); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(data_survives_reopen) { \
    using namespace conformance; \
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> { \
        lb::session s; \
        { \
            auto st = this->open(ex); \
            s = co_await create(st, "app", "u1", "keep"); \
            auto e = text_event("kept"); e.actions.state_delta["user:x"] = 1; \
            co_await append(st, s, e); \
        } \
        auto st2 = this->open(ex); \
        auto g = co_await get(st2, s); \
        BOOST_REQUIRE(g.has_value()); \
        BOOST_REQUIRE_EQUAL(g->events.size(), 1u); \
        BOOST_TEST((g->events[0] == s.events[0])); \
        BOOST_TEST(g->state.at("user:x").as_int64() == 1); \
        BOOST_TEST(co_await append_text_ec(st2, *g, "more") == error_code{}); \
        BOOST_TEST(g->last_sequence == 2); \
    }); \
} \
\
BOOST_AUTO_TEST_CASE(signed_transcript_round_trips_and_tampering_is_detected) { \
    conformance::signed_transcript_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(bad_compactions_are_refused_and_nothing_is_stored) { \
    conformance::bad_compactions_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(bad_state_keys_are_refused_and_nothing_is_stored) { \
    conformance::bad_state_keys_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(a_nan_from_timestamp_is_refused) { \
    conformance::nan_from_timestamp_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(context_only_reads_the_shown_summaries_and_what_they_leave_out) { \
    conformance::context_load_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(initial_state_is_kept) { \
    conformance::initial_state_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(values_no_json_text_holds_are_refused_and_the_deepest_allowed_read_back) { \
    conformance::unreadable_values_are_refused_case(*this); \
} \
\
BOOST_AUTO_TEST_CASE(what_append_acknowledges_a_fresh_store_reads_back_equal) { \
    conformance::acknowledged_is_readable_case(*this, 2026, 90); \
} \
\
BOOST_AUTO_TEST_SUITE_END()
// clang-format on

#endif
