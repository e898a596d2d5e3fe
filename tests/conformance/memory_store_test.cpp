// The conformance suite against memory_store, plus what is particular to it.
#include <libretto/store/any_store.hpp>
#include <libretto/store/memory_store.hpp>

#include "artifact_conformance.hpp"
#include "memory_conformance.hpp"
#include "conversation_conformance.hpp"
#include "rewind_conformance.hpp"
#include "index_conformance.hpp"
#include "store_conformance.hpp"

#include <libretto/store/memory_session_index.hpp>
#include <libretto/store/memory_artifact_service.hpp>
#include <libretto/store/in_memory_memory_service.hpp>

#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include <type_traits>

namespace {

static_assert(libretto::session_store<libretto::memory_store>);

struct memory_fixture {
    using store_type = libretto::memory_store;
    // Copies of a memory_store share their data: the "second instance" is a copy.
    std::optional<libretto::memory_store> first;
    libretto::memory_store open(boost::asio::any_io_executor ex) {
        if (!first) first.emplace(ex);
        return *first;
    }
};

struct memory_index_fixture {
    using index_type = libretto::memory_session_index;
    static constexpr bool persistent = false;
    std::optional<libretto::memory_session_index> first;
    libretto::memory_session_index open() {
        if (!first) first.emplace();
        return *first; // copies share their entries
    }
};

struct memory_artifact_fixture {
    using service_type = libretto::memory_artifact_service;
    static constexpr bool persistent = false;
    std::optional<libretto::memory_artifact_service> first;
    libretto::memory_artifact_service open() {
        if (!first) first.emplace();
        return *first; // copies share their artifacts
    }
    libretto::memory_artifact_service open_limited(std::uint64_t max) {
        return libretto::memory_artifact_service({.max_artifact_bytes = max});
    }
};

struct in_memory_memory_fixture {
    using service_type = libretto::in_memory_memory_service;
    static constexpr bool persistent = false;
    std::optional<libretto::in_memory_memory_service> first;
    libretto::in_memory_memory_service open() {
        if (!first) first.emplace();
        return *first; // copies share their entries
    }
};

// A store and its index, for the conversation suite (each fixture its own data).
struct memory_conversation_fixture {
    using store_type = libretto::memory_store;
    libretto::memory_store open(boost::asio::any_io_executor ex) { return libretto::memory_store(ex); }
    libretto::memory_session_index open_index() { return {}; }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(memory_fixture)
LIBRETTO_INDEX_CONFORMANCE(memory_index_fixture)
LIBRETTO_CONVERSATION_CONFORMANCE(memory_conversation_fixture)
LIBRETTO_REWIND_CONFORMANCE(memory_conversation_fixture)
LIBRETTO_ARTIFACT_CONFORMANCE(memory_artifact_fixture)
LIBRETTO_MEMORY_CONFORMANCE(in_memory_memory_fixture)

BOOST_AUTO_TEST_SUITE(memory_store_specific)

BOOST_AUTO_TEST_CASE(oversize_event_is_rejected) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store_options o;
        o.max_event_bytes = 512;
        libretto::memory_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        BOOST_TEST(co_await append_text_ec(st, s, std::string(1000, 'x')) == libretto::errc::oversize);
        BOOST_TEST(s.events.empty());
        BOOST_TEST(co_await append_text_ec(st, s, "small") == error_code{});
    });
}

// Every refusal writes a message naming what was wrong to the caller's diagnostics: the id
// and why, the session, the sequences of a stale copy, the event and its size.
BOOST_AUTO_TEST_CASE(failures_are_named_in_the_callers_diagnostics) {
    boost::asio::io_context io;
    libretto::memory_store_options mo;
    mo.max_event_bytes = 512;
    libretto::memory_store st(io.get_executor(), mo);
    libretto::diagnostics d;
    auto is = [&](std::string_view whole) { BOOST_TEST(d.message() == whole); };
    auto has = [&](std::string_view part) {
        BOOST_TEST(d.message().find(part) != std::string::npos, "'" << part << "' not in '" << d.message() << "'");
    };
    libretto::session s;
    BOOST_TEST((st.create(conformance::create_opts("app", "a/b", "s"), s, &d) == libretto::errc::invalid_argument));
    is("memory_store: create: user id 'a/b' contains a path separator ('/' or '\\')");
    BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "u", "s"), s, &d));
    BOOST_TEST((st.create(conformance::create_opts("app", "u", "s"), s, &d) == libretto::errc::already_exists));
    is("memory_store: create: session app/u/s exists already");
    std::optional<libretto::session> g;
    BOOST_TEST((st.get({"app", "u", ".."}, {}, g, &d) == libretto::errc::invalid_argument));
    is("memory_store: get: session id '..' contains '..' (or is '.')");
    BOOST_TEST((st.remove({"", "u", "s"}, &d) == libretto::errc::invalid_argument));
    is("memory_store: delete: app name is empty");
    libretto::list_page page;
    libretto::list_options lo;
    lo.app_name = "app";
    lo.page_size = 0;
    BOOST_TEST((st.list(lo, page, &d) == libretto::errc::invalid_argument));
    is("memory_store: list: page_size 0 is not in 1..1000");
    lo.page_size = 10;
    lo.page_token = "not a token";
    BOOST_TEST((st.list(lo, page, &d) == libretto::errc::invalid_argument));
    is("memory_store: list: the page token is not one a list of this app returned");

    std::int64_t seq = 0;
    libretto::session stale = s;
    BOOST_TEST_REQUIRE(!st.append(s, conformance::text_event("one"), seq, &d));
    BOOST_TEST((st.append(stale, conformance::text_event("two"), seq, &d) == libretto::errc::stale_session));
    is("memory_store: append: session app/u/s is at sequence 1, the caller's copy at 0");
    auto big = conformance::text_event(std::string(1000, 'x'));
    big.id = "big-one";
    BOOST_TEST((st.append(s, big, seq, &d) == libretto::errc::oversize));
    has("memory_store: append: event big-one is ");
    has(" bytes of JSON, over max_event_bytes (512)");
    auto foreign = conformance::text_event("elsewhere");
    foreign.session_id = "other";
    BOOST_TEST((st.append(s, foreign, seq, &d) == libretto::errc::invalid_argument));
    has("names session 'other', not app/u/s");
    libretto::session gone = s;
    gone.id = "gone";
    BOOST_TEST((st.append(gone, conformance::text_event("x"), seq, &d) == libretto::errc::not_found));
    has("append: session app/u/gone does not exist");
    std::vector<libretto::event> batch;
    batch.push_back(conformance::text_event("b"));
    BOOST_TEST((st.append_batch(stale, std::move(batch), seq, &d) == libretto::errc::stale_session));
    is("memory_store: append: session app/u/s is at sequence 1, the caller's copy at 0");
    // Without diagnostics the code alone comes back, and nothing else is written anywhere.
    BOOST_TEST((st.append(gone, conformance::text_event("x"), seq) == libretto::errc::not_found));
}

// Two coroutines on one thread whose store operations interleave (A starts, B starts, A
// completes, B completes) each read their own operation's words: nothing is kept per store
// or per thread for the other to overwrite. Through any_store as well.
template <class Store>
void check_interleaved_failures_keep_their_own_words() {
    using namespace conformance;
    boost::asio::io_context io;
    Store st{libretto::memory_store(io.get_executor())};
    std::vector<std::string> order;
    libretto::session s;
    {
        libretto::memory_store* inner = nullptr;
        if constexpr (std::is_same_v<Store, libretto::memory_store>) inner = &st;
        else inner = st.template target<libretto::memory_store>();
        BOOST_TEST_REQUIRE(inner != nullptr);
        BOOST_TEST_REQUIRE(!inner->create(create_opts("app", "u", "s"), s));
        std::int64_t seq = 0;
        BOOST_TEST_REQUIRE(!inner->append(s, text_event("one"), seq));
    }
    // A: an append from a stale copy. B: a get with a bad id.
    auto a = [&]() -> asio::awaitable<void> {
        libretto::session stale = s;
        stale.last_sequence = 0;
        libretto::diagnostics da;
        order.push_back("A starts");
        libretto::event e = text_event("late");
        auto op = st.async_append(stale, std::move(e), da, asio::as_tuple(asio::deferred));
        auto [ec, seq] = co_await std::move(op);
        order.push_back("A completes");
        BOOST_TEST((ec == libretto::errc::stale_session));
        BOOST_TEST(da.message() == "memory_store: append: session app/u/s is at sequence 1, the caller's copy at 0");
    };
    auto b = [&]() -> asio::awaitable<void> {
        libretto::diagnostics db;
        order.push_back("B starts");
        libretto::session_key k{"app", "u/x", "s"};
        libretto::get_options go;
        auto op = st.async_get(std::move(k), go, db, asio::as_tuple(asio::deferred));
        auto [ec, g] = co_await std::move(op);
        order.push_back("B completes");
        BOOST_TEST((ec == libretto::errc::invalid_argument));
        BOOST_TEST(!g.has_value());
        BOOST_TEST(db.message() == "memory_store: get: user id 'u/x' contains a path separator ('/' or '\\')");
    };
    auto fail = [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
    };
    asio::co_spawn(io, a(), fail);
    asio::co_spawn(io, b(), fail);
    io.run();
    BOOST_TEST(order == (std::vector<std::string>{"A starts", "B starts", "A completes", "B completes"}));
}

BOOST_AUTO_TEST_CASE(interleaved_failures_on_one_thread_keep_their_own_words) {
    check_interleaved_failures_keep_their_own_words<libretto::memory_store>();
    check_interleaved_failures_keep_their_own_words<libretto::any_store>();
}

BOOST_AUTO_TEST_CASE(sync_core_matches_async) {
    boost::asio::io_context io;
    libretto::memory_store st(io.get_executor());
    libretto::session s;
    BOOST_TEST(!st.create(conformance::create_opts("app", "u", "s"), s));
    std::int64_t seq = 0;
    BOOST_TEST(!st.append(s, conformance::text_event("x"), seq));
    BOOST_TEST(seq == 1);
    std::optional<libretto::session> g;
    BOOST_TEST(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(g->events.size() == 1u);
}

/// A store used through its synchronous core, with session app/u/s created.
struct sync_store {
    boost::asio::io_context io;
    libretto::memory_store st{io.get_executor()};
    libretto::session s;
    sync_store() { BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "u", "s"), s)); }
};

// append_shared, the synchronous form the runner calls: the node is stamped and kept, and
// every failure leaves the node, the caller's session and the store as they were.
BOOST_FIXTURE_TEST_CASE(append_shared_stamps_and_keeps_the_node_or_leaves_everything_alone, sync_store) {
    static_assert(libretto::memory_store::never_blocks);
    auto node = std::make_shared<libretto::event>(conformance::text_event("one"));
    node->actions.state_delta["temp:t"] = 1;
    node->actions.state_delta["k"] = 2;
    std::int64_t seq = -1;
    BOOST_TEST_REQUIRE(!st.append_shared(s, node, seq));
    BOOST_TEST(seq == 1);
    BOOST_TEST(node->sequence == 1);
    BOOST_TEST(node->session_id == "s");
    BOOST_TEST(!node->actions.state_delta.contains("temp:t"));
    BOOST_TEST_REQUIRE(s.events.size() == 1u);
    BOOST_TEST(&s.events[0] == node.get());
    std::optional<libretto::session> g;
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST_REQUIRE(g->events.size() == 1u);
    BOOST_TEST(&g->events[0] == node.get());
    BOOST_TEST(g->state.at("k") == 2);
    BOOST_TEST(!g->state.contains("temp:t"));

    // A stale session: another append came in since it was loaded.
    libretto::session stale = s;
    BOOST_TEST_REQUIRE(!st.append(s, conformance::text_event("two"), seq));
    auto late = std::make_shared<libretto::event>(conformance::text_event("late"));
    BOOST_TEST(st.append_shared(stale, late, seq) == libretto::errc::stale_session);
    BOOST_TEST(seq == 0);
    BOOST_TEST(late->sequence == 0);
    BOOST_TEST(late->session_id.empty());
    BOOST_TEST(stale.events.size() == 1u);

    // No node; a session the store does not have; an event over the size limit.
    BOOST_TEST(st.append_shared(s, nullptr, seq) == libretto::errc::invalid_argument);
    libretto::session missing = s;
    missing.id = "nope";
    BOOST_TEST(st.append_shared(missing, late, seq) == libretto::errc::not_found);
    libretto::memory_store_options mo;
    mo.max_event_bytes = 256;
    libretto::memory_store small(io.get_executor(), mo);
    libretto::session t;
    BOOST_TEST_REQUIRE(!small.create(conformance::create_opts("app", "u", "t"), t));
    auto big = std::make_shared<libretto::event>(conformance::text_event(std::string(1000, 'x')));
    BOOST_TEST(small.append_shared(t, big, seq) == libretto::errc::oversize);
    BOOST_TEST(big->sequence == 0);
    BOOST_TEST(t.events.empty());

    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(g->events.size() == 2u);
    BOOST_TEST(g->last_sequence == 2);
    BOOST_TEST(late->sequence == 0);
}

// An appended event exists once: the store, the appender's session and every session a
// get returns hold the same node (sessions copy pointers, not events).
BOOST_FIXTURE_TEST_CASE(store_appender_and_readers_share_one_event, sync_store) {
    std::int64_t seq = 0;
    BOOST_TEST_REQUIRE(!st.append(s, conformance::text_event("one"), seq));
    BOOST_TEST_REQUIRE(!st.append_batch(s, {conformance::text_event("two"), conformance::text_event("three")}, seq));
    std::optional<libretto::session> a, b;
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, a));
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, b));
    BOOST_TEST_REQUIRE(a->events.size() == 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        BOOST_TEST(&a->events[i] == &s.events[i]);
        BOOST_TEST(&b->events[i] == &s.events[i]);
    }
    // A change to one copy is made on a copy of the event: the node stays shared by the rest.
    a->events.modify(1).sequence = 42;
    BOOST_TEST(&a->events[1] != &s.events[1]);
    BOOST_TEST(&b->events[1] == &s.events[1]);
    BOOST_TEST(s.events[1].sequence == 2);
    // Deleting the session leaves the copies callers hold intact.
    BOOST_TEST(!st.remove({"app", "u", "s"}));
    BOOST_TEST(b->events[2].text() == "three");
}

// Events are kept in chunks of 8, 8, 16, 32, then 64: selections that start, end or cut across chunk
// boundaries return exactly the events they name, in order, and the caller's copy holds
// every appended event.
BOOST_FIXTURE_TEST_CASE(selections_across_chunk_boundaries, sync_store) {
    constexpr int n = 300;
    for (int i = 1; i <= n; ++i) {
        libretto::event e = conformance::text_event("e" + std::to_string(i), i);
        if (i == 200) e.actions.compaction = libretto::event_compaction{1, 129, 1, 129, "sum", 129};
        std::int64_t seq = 0;
        BOOST_TEST_REQUIRE(!st.append(s, std::move(e), seq));
        BOOST_TEST_REQUIRE(seq == i);
    }
    BOOST_TEST(s.events.size() == static_cast<std::size_t>(n));
    auto seqs = [&](const libretto::get_options& o) {
        std::optional<libretto::session> g;
        BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, o, g));
        std::vector<std::int64_t> out;
        for (const auto& e : g->events) out.push_back(e.sequence);
        return out;
    };
    auto range = [](std::int64_t a, std::int64_t b) {
        std::vector<std::int64_t> v;
        for (auto i = a; i <= b; ++i) v.push_back(i);
        return v;
    };
    libretto::get_options o;
    BOOST_TEST(seqs(o) == range(1, n), boost::test_tools::per_element());
    for (std::int64_t from : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 128, 129, 130, 256, 257, 299, 300}) {
        o = {};
        o.from_sequence = from;
        BOOST_TEST(seqs(o) == range(from, n), boost::test_tools::per_element());
    }
    o = {};
    o.from_sequence = 301;
    BOOST_TEST(seqs(o).empty());
    o = {};
    o.from_sequence = -5;
    BOOST_TEST(seqs(o) == range(1, n), boost::test_tools::per_element());
    for (std::size_t recent : {1u, 8u, 9u, 64u, 65u, 128u, 236u, 237u, 268u, 269u, 299u, 300u, 1000u}) {
        o = {};
        o.num_recent_events = recent;
        const auto first = static_cast<std::int64_t>(n - std::min<std::size_t>(recent, n) + 1);
        BOOST_TEST(seqs(o) == range(first, n), boost::test_tools::per_element());
    }
    o = {};
    o.from_timestamp = 100.0; // timestamps are the sequences
    o.num_recent_events = 70;
    BOOST_TEST(seqs(o) == range(231, n), boost::test_tools::per_element());
    o = {};
    o.context_only = true; // 200 covers 1..129: the rest, across chunks
    BOOST_TEST(seqs(o) == range(130, n), boost::test_tools::per_element());
    libretto::event c = conformance::text_event("sum2", 301);
    c.actions.compaction = libretto::event_compaction{130, 250, 130, 250, "sum2", 121};
    std::int64_t seq = 0;
    BOOST_TEST_REQUIRE(!st.append(s, std::move(c), seq));
    auto shown = range(251, 301); // 1..250 covered; the older summary (200) stays
    shown.insert(shown.begin(), 200);
    BOOST_TEST(seqs(o) == shown, boost::test_tools::per_element());
    // The caller's copy and the store agree event for event.
    std::optional<libretto::session> g;
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST_REQUIRE(g->events.size() == s.events.size());
    for (std::size_t i = 0; i < s.events.size(); ++i) BOOST_TEST_REQUIRE((g->events[i] == s.events[i]));
}

// append_batch: all stored in order with consecutive sequences, or none.
// The store remembers the session its last look-up found. Sessions created in between (the
// maps grow and move their sessions), a session deleted and created again under the same
// id, and ids that differ in one part only must each reach their own session.
BOOST_AUTO_TEST_CASE(appends_reach_their_session_across_creates_deletes_and_similar_ids) {
    boost::asio::io_context io;
    libretto::memory_store st(io.get_executor());
    libretto::session a, b, c;
    BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "u", "s"), a));
    BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "v", "s"), b));   // same session id, other user
    BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app2", "u", "s"), c));  // other app
    std::int64_t seq = 0;
    BOOST_TEST_REQUIRE(!st.append(a, conformance::text_event("a1"), seq));
    BOOST_TEST(seq == 1);
    BOOST_TEST_REQUIRE(!st.append(b, conformance::text_event("b1"), seq));
    BOOST_TEST(seq == 1);
    BOOST_TEST_REQUIRE(!st.append(c, conformance::text_event("c1"), seq));
    BOOST_TEST(seq == 1);
    BOOST_TEST_REQUIRE(!st.append(a, conformance::text_event("a2"), seq));
    BOOST_TEST(seq == 2);
    // Hundreds of sessions for the same user and app: their maps rehash.
    for (int i = 0; i < 500; ++i) {
        libretto::session x;
        BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "u", "x" + std::to_string(i)), x));
        libretto::session y;
        BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "w" + std::to_string(i), "s"), y));
    }
    BOOST_TEST_REQUIRE(!st.append(a, conformance::text_event("a3"), seq));
    BOOST_TEST(seq == 3);
    BOOST_TEST_REQUIRE(!st.append(a, conformance::text_event("a4"), seq));
    BOOST_TEST(seq == 4);
    // Deleted, then created again: the new session starts empty, the old copy is stale.
    BOOST_TEST_REQUIRE(!st.remove({"app", "u", "s"}));
    BOOST_TEST(st.append(a, conformance::text_event("gone"), seq) == libretto::errc::not_found);
    libretto::session a2;
    BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "u", "s"), a2));
    BOOST_TEST(st.append(a, conformance::text_event("stale"), seq) == libretto::errc::stale_session);
    BOOST_TEST_REQUIRE(!st.append(a2, conformance::text_event("new1"), seq));
    BOOST_TEST(seq == 1);
    std::optional<libretto::session> g;
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST_REQUIRE(g->events.size() == 1u);
    BOOST_TEST(g->events[0].text() == "new1");
    BOOST_TEST_REQUIRE(!st.get({"app", "v", "s"}, {}, g));
    BOOST_TEST_REQUIRE(g->events.size() == 1u);
    BOOST_TEST(g->events[0].text() == "b1");
    BOOST_TEST_REQUIRE(!st.get({"app2", "u", "s"}, {}, g));
    BOOST_TEST_REQUIRE(g->events.size() == 1u);
    BOOST_TEST(g->events[0].text() == "c1");
    // A key that was never created is not found, right after a hit.
    BOOST_TEST_REQUIRE(!st.append(a2, conformance::text_event("new2"), seq));
    libretto::session ghost = a2;
    ghost.id = "t";
    BOOST_TEST(st.append(ghost, conformance::text_event("nobody"), seq) == libretto::errc::not_found);
}

BOOST_AUTO_TEST_CASE(append_batch_stores_all_or_nothing) {
    boost::asio::io_context io;
    libretto::memory_store_options mo;
    mo.max_event_bytes = 2048;
    libretto::memory_store st(io.get_executor(), mo);
    libretto::session s;
    BOOST_TEST_REQUIRE(!st.create(conformance::create_opts("app", "u", "s"), s));
    std::int64_t seq = 0;
    BOOST_TEST_REQUIRE(!st.append(s, conformance::text_event("first"), seq));

    std::vector<libretto::event> batch;
    batch.push_back(conformance::text_event("a"));
    batch.back().actions.state_delta["k"] = 1;
    batch.back().actions.state_delta["temp:t"] = 2;
    batch.push_back(conformance::text_event("partial"));
    batch.back().partial = true;
    batch.push_back(conformance::text_event("b"));
    BOOST_TEST(!st.append_batch(s, std::move(batch), seq));
    BOOST_TEST(seq == 3); // the partial one is skipped
    BOOST_TEST_REQUIRE(s.events.size() == 3u);
    BOOST_TEST(s.events[1].text() == "a");
    BOOST_TEST(s.events[1].sequence == 2);
    BOOST_TEST(s.events[2].text() == "b");
    BOOST_TEST(s.events[2].sequence == 3);
    BOOST_TEST(s.last_sequence == 3);
    BOOST_TEST(s.state.at("k").as_int64() == 1);
    BOOST_TEST(s.state.contains("temp:t")); // the caller sees its temp keys; the store drops them
    std::optional<libretto::session> g;
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST_REQUIRE(g->events.size() == 3u);
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST((g->events[i] == s.events[i]));
    BOOST_TEST(!g->state.contains("temp:t"));
    BOOST_TEST(!g->events[1].actions.state_delta.contains("temp:t"));

    // Nothing stored when one event is bad.
    auto two = [](std::string second) {
        std::vector<libretto::event> v;
        v.push_back(conformance::text_event("ok"));
        v.push_back(conformance::text_event(std::move(second)));
        return v;
    };
    BOOST_TEST(st.append_batch(s, two(std::string(4000, 'x')), seq) == libretto::errc::oversize);
    std::vector<libretto::event> foreign = two("y");
    foreign[1].session_id = "another";
    BOOST_TEST(st.append_batch(s, std::move(foreign), seq) == libretto::errc::invalid_argument);
    libretto::session stale = s;
    stale.last_sequence = 2;
    BOOST_TEST(st.append_batch(stale, two("y"), seq) == libretto::errc::stale_session);
    libretto::session missing = s;
    missing.id = "nope";
    BOOST_TEST(st.append_batch(missing, two("y"), seq) == libretto::errc::not_found);
    libretto::session bad = s;
    bad.id = "bad/id";
    BOOST_TEST(st.append_batch(bad, two("y"), seq) == libretto::errc::invalid_argument);
    BOOST_TEST(seq == 0);
    BOOST_TEST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(g->events.size() == 3u);
    BOOST_TEST(s.events.size() == 3u);
    BOOST_TEST(s.last_sequence == 3);

    // An empty batch stores nothing and succeeds.
    BOOST_TEST(!st.append_batch(s, {}, seq));
    BOOST_TEST(seq == 0);
    BOOST_TEST(s.last_sequence == 3);
}

BOOST_AUTO_TEST_CASE(async_append_batch_completes_with_the_last_sequence) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store st(ex);
        auto s = co_await create(st, "app", "u1", "s1");
        std::vector<libretto::event> batch;
        for (int i = 0; i < 20; ++i) batch.push_back(text_event("e" + std::to_string(i)));
        auto op = st.async_append_batch(s, std::move(batch), asio::use_awaitable);
        std::int64_t last = co_await std::move(op);
        BOOST_TEST(last == 20);
        BOOST_TEST(s.events.size() == 20u);
        libretto::session stale = s;
        stale.last_sequence = 1;
        std::vector<libretto::event> more;
        more.push_back(text_event("late"));
        auto failing = st.async_append_batch(stale, std::move(more), asio::as_tuple(asio::use_awaitable));
        auto [ec, seq] = co_await std::move(failing);
        BOOST_TEST(ec == libretto::errc::stale_session);
        BOOST_TEST(seq == 0);
    });
}

// async_append_shared stamps the caller's node during the initiation (before anything is
// posted) and keeps that node: the caller's session and the store share it, with no copy.
BOOST_AUTO_TEST_CASE(async_append_shared_stamps_and_keeps_the_callers_node) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store st(ex);
        auto s = co_await create(st, "app", "u1", "s1");
        auto node = std::make_shared<libretto::event>(text_event("hello"));
        node->actions.state_delta["temp:scratch"] = 1;
        node->actions.state_delta["kept"] = 2;
        auto op = st.async_append_shared(s, node, asio::use_awaitable);
        // Not awaited yet: a deferred-style awaitable has not initiated.
        BOOST_TEST(node->sequence == 0);
        std::int64_t seq = co_await std::move(op);
        BOOST_TEST(seq == 1);
        BOOST_TEST(node->sequence == 1);
        BOOST_TEST(node->session_id == "s1");
        BOOST_TEST(!node->actions.state_delta.contains("temp:scratch"));
        BOOST_TEST(node->actions.state_delta.contains("kept"));
        BOOST_REQUIRE(s.events.size() == 1u);
        BOOST_TEST(&s.events[0] == node.get());
        BOOST_TEST(s.state.at("temp:scratch") == 1); // the caller's session sees temp: keys
        auto get = st.async_get({"app", "u1", "s1"}, {}, asio::use_awaitable); // named: g++ 12
        std::optional<libretto::session> g = co_await std::move(get);
        BOOST_REQUIRE(g);
        BOOST_REQUIRE(g->events.size() == 1u);
        BOOST_TEST(&g->events[0] == node.get());
        BOOST_TEST(!g->state.contains("temp:scratch"));

        // The stamping happens in the initiation: with a callback token, before it returns.
        auto second = std::make_shared<libretto::event>(text_event("second"));
        bool completed = false;
        st.async_append_shared(s, second, [&](error_code ec, std::int64_t n) {
            BOOST_TEST(!ec);
            BOOST_TEST(n == 2);
            completed = true;
        });
        BOOST_TEST(second->sequence == 2);
        BOOST_TEST(s.events.size() == 2u);
        BOOST_TEST(!completed); // the completion is posted, never run inside the initiation
        asio::steady_timer yield_once(ex, std::chrono::milliseconds(1));
        co_await yield_once.async_wait(asio::use_awaitable);
        BOOST_TEST(completed);
    });
}

BOOST_AUTO_TEST_CASE(async_append_of_an_lvalue_stores_a_copy_and_of_an_rvalue_takes_it) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store st(ex);
        auto s = co_await create(st, "app", "u1", "s1");
        // An lvalue: the caller's event stays as it was; the stored copy gets the sequence.
        libretto::event kept = text_event("kept by the caller");
        kept.actions.state_delta["temp:t"] = 1;
        const std::string id = kept.id;
        auto first = st.async_append(s, kept, asio::use_awaitable);
        BOOST_TEST(co_await std::move(first) == 1);
        BOOST_TEST(kept.sequence == 0);
        BOOST_TEST(kept.session_id.empty());
        BOOST_TEST(kept.actions.state_delta.contains("temp:t"));
        BOOST_TEST(kept.text() == "kept by the caller");
        BOOST_REQUIRE(s.events.size() == 1u);
        BOOST_TEST(s.events[0].id == id);
        BOOST_TEST(s.events[0].sequence == 1);
        BOOST_TEST(!s.events[0].actions.state_delta.contains("temp:t"));
        // A const lvalue as well; an rvalue is moved into the store.
        const libretto::event constant = text_event("constant");
        auto second = st.async_append(s, constant, asio::use_awaitable);
        BOOST_TEST(co_await std::move(second) == 2);
        BOOST_TEST(constant.sequence == 0);
        libretto::event moved = text_event("moved");
        auto third = st.async_append(s, std::move(moved), asio::use_awaitable);
        BOOST_TEST(co_await std::move(third) == 3);
        auto get = st.async_get({"app", "u1", "s1"}, {}, asio::use_awaitable); // named: g++ 12
        std::optional<libretto::session> g = co_await std::move(get);
        BOOST_REQUIRE(g);
        BOOST_REQUIRE(g->events.size() == 3u);
        BOOST_TEST(g->events[0].text() == "kept by the caller");
        BOOST_TEST(g->events[1].text() == "constant");
        BOOST_TEST(g->events[2].text() == "moved");
        BOOST_TEST(g->events[2].sequence == 3);
    });
}

BOOST_AUTO_TEST_CASE(async_append_shared_failures_leave_the_node_and_the_store_alone) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store st(ex);
        auto s = co_await create(st, "app", "u1", "s1");
        co_await append_text(st, s, "first");
        libretto::session stale = s;
        co_await append_text(st, s, "second");
        auto node = std::make_shared<libretto::event>(text_event("late"));
        auto op = st.async_append_shared(stale, node, asio::as_tuple(asio::use_awaitable));
        auto [ec, seq] = co_await std::move(op);
        BOOST_TEST(ec == libretto::errc::stale_session);
        BOOST_TEST(seq == 0);
        BOOST_TEST(node->sequence == 0);
        BOOST_TEST(node->session_id.empty());
        BOOST_TEST(stale.events.size() == 1u);

        auto none = st.async_append_shared(s, nullptr, asio::as_tuple(asio::use_awaitable));
        auto [ec2, seq2] = co_await std::move(none);
        BOOST_TEST(ec2 == libretto::errc::invalid_argument);
        BOOST_TEST(seq2 == 0);

        libretto::session missing = s;
        missing.id = "nope";
        auto elsewhere = std::make_shared<libretto::event>(text_event("x"));
        auto op3 = st.async_append_shared(missing, elsewhere, asio::as_tuple(asio::use_awaitable));
        auto [ec3, seq3] = co_await std::move(op3);
        BOOST_TEST(ec3 == libretto::errc::not_found);
        BOOST_TEST(elsewhere->sequence == 0);

        auto get = st.async_get({"app", "u1", "s1"}, {}, asio::use_awaitable); // named: g++ 12
        std::optional<libretto::session> g = co_await std::move(get);
        BOOST_REQUIRE(g);
        BOOST_TEST(g->events.size() == 2u);
        BOOST_TEST(g->last_sequence == 2);
    });
}

// For a coroutine caller (use_awaitable, as_tuple(use_awaitable)) every operation runs when
// co_awaited and resumes the caller without suspending: nothing is posted, so a handler
// posted before has not run yet. Errors still throw system_error (use_awaitable) or come
// first in the tuple. Any other token completes through a post, after the initiation.
BOOST_AUTO_TEST_CASE(awaitable_tokens_complete_without_suspending_and_other_tokens_post) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store st(ex);
        auto posted_ran = std::make_shared<bool>(false); // shared: the handler may outlive the frame
        asio::post(ex, [posted_ran] { *posted_ran = true; });

        auto create_op = st.async_create(create_opts("app", "u1", "s1"), asio::use_awaitable);
        libretto::session s = co_await std::move(create_op);
        auto lazy = st.async_append(s, text_event("lazy"), asio::use_awaitable);
        BOOST_TEST(s.events.size() == 0u); // nothing runs before the co_await
        std::int64_t seq = co_await std::move(lazy);
        BOOST_TEST(seq == 1);
        BOOST_TEST(s.events.size() == 1u);
        auto tuple_op = st.async_append(s, text_event("tuple"), asio::as_tuple(asio::use_awaitable));
        auto [ec, seq2] = co_await std::move(tuple_op);
        BOOST_TEST(!ec);
        BOOST_TEST(seq2 == 2);
        auto batch_op = st.async_append_batch(s, {text_event("b1"), text_event("b2")}, asio::use_awaitable);
        std::int64_t last = co_await std::move(batch_op);
        BOOST_TEST(last == 4);
        auto get_op = st.async_get({"app", "u1", "s1"}, {}, asio::use_awaitable);
        std::optional<libretto::session> g = co_await std::move(get_op);
        BOOST_REQUIRE(g);
        BOOST_TEST(g->events.size() == 4u);
        auto list_op = st.async_list({"app"}, asio::use_awaitable);
        libretto::list_page page = co_await std::move(list_op);
        BOOST_TEST(page.sessions.size() == 1u);

        // Errors: a stale session throws with use_awaitable, is the tuple's code otherwise.
        libretto::session stale = *g;
        auto newer = st.async_append(s, text_event("newer"), asio::use_awaitable);
        co_await std::move(newer);
        auto stale_op = st.async_append(stale, text_event("late"), asio::use_awaitable);
        std::optional<error_code> thrown;
        try {
            co_await std::move(stale_op);
        } catch (const boost::system::system_error& e) {
            thrown = e.code();
        }
        BOOST_TEST((thrown == error_code(libretto::errc::stale_session)));
        auto stale_tuple = st.async_append(stale, text_event("late"), asio::as_tuple(asio::use_awaitable));
        auto [ec3, seq3] = co_await std::move(stale_tuple);
        BOOST_TEST(ec3 == libretto::errc::stale_session);
        BOOST_TEST(seq3 == 0);
        auto delete_op = st.async_delete({"app", "u1", "nobody"}, asio::use_awaitable);
        co_await std::move(delete_op); // idempotent: no error

        BOOST_TEST(!*posted_ran); // not one suspension so far

        // A callback token: the append happens in the initiation, the completion is posted.
        bool completed = false;
        st.async_append(s, text_event("callback"), [&](error_code e, std::int64_t n) {
            BOOST_TEST(!e);
            BOOST_TEST(n == 6);
            completed = true;
        });
        BOOST_TEST(!completed);
        asio::steady_timer yield_once(ex, std::chrono::milliseconds(1));
        co_await yield_once.async_wait(asio::use_awaitable);
        BOOST_TEST(completed);
        BOOST_TEST(*posted_ran);
    });
}

BOOST_AUTO_TEST_SUITE_END()
