// postgres_store beyond the conformance suite: options, connection failures and timeouts,
// migrations, the connection pool, lost connections, corrupt rows, exact storage, batches.
// Runs against the server the ctest fixture starts (tests/pg_test_server.hpp).
#include <libretto/store/detail/pg_schema.hpp>
#include <libretto/store/postgres_store.hpp>

#include "conformance/store_conformance.hpp"
#include "pg_test_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;
using boost::system::error_code;
using namespace conformance;
using namespace std::chrono_literals;

struct schema_fixture {
    std::string conninfo = pg_test::conninfo();
    std::string schema = pg_test::fresh_schema("pgtest");
    ~schema_fixture() { pg_test::drop_schema(schema); }

    // Tests run in parallel against one server: the application name tells this test's
    // connections apart in pg_stat_activity.
    std::string app_name = schema;

    lb::postgres_store_options options() const {
        lb::postgres_store_options o;
        o.conninfo = conninfo + " application_name=" + app_name;
        o.schema = schema;
        return o;
    }
    lb::postgres_store open(asio::any_io_executor ex) const { return lb::postgres_store(std::move(ex), options()); }
    lb::postgres_store open(asio::any_io_executor ex, lb::postgres_store_options o) const {
        return lb::postgres_store(std::move(ex), std::move(o));
    }
};

asio::awaitable<error_code> open_ec(lb::postgres_store& st, lb::diagnostics& d) {
    auto op = st.async_open(d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

asio::awaitable<error_code> open_ec(lb::postgres_store& st) {
    lb::diagnostics d;
    co_return co_await open_ec(st, d);
}

asio::awaitable<std::tuple<error_code, std::int64_t>> append_batch(lb::postgres_store& st, lb::session& s,
                                                                   std::vector<lb::event> events, lb::diagnostics& d) {
    auto op = st.async_append_batch(s, std::move(events), d, asio::as_tuple(asio::use_awaitable));
    co_return co_await std::move(op);
}

asio::awaitable<std::tuple<error_code, std::int64_t>> append_batch(lb::postgres_store& st, lb::session& s,
                                                                   std::vector<lb::event> events) {
    auto op = st.async_append_batch(s, std::move(events), asio::as_tuple(asio::use_awaitable));
    co_return co_await std::move(op);
}

} // namespace

BOOST_AUTO_TEST_SUITE(postgres_store_options)

BOOST_AUTO_TEST_CASE(rejects_bad_options_before_connecting) {
    asio::io_context io;
    auto make = [&](auto change) {
        lb::postgres_store_options o;
        o.conninfo = "host=127.0.0.1";
        change(o);
        return lb::postgres_store(io.get_executor(), std::move(o));
    };
    auto code_of = [&](auto change) {
        try {
            make(change);
        } catch (const boost::system::system_error& e) {
            return e.code();
        }
        return error_code{};
    };
    BOOST_TEST(code_of([](auto& o) { o.conninfo.clear(); }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.schema = "Bad"; }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.schema = "x; DROP TABLE y"; }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.schema = "9lives"; }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.schema = std::string(64, 'a'); }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.schema = ""; }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.pool_size = 0; }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.pool_size = 101; }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.connect_timeout = std::chrono::milliseconds(-1); }) == lb::errc::invalid_argument);
    BOOST_TEST(code_of([](auto& o) { o.acquire_timeout = std::chrono::milliseconds(-5); }) == lb::errc::invalid_argument);
    BOOST_TEST(!code_of([](auto& o) { o.acquire_timeout = std::chrono::milliseconds::max(); }));
    BOOST_TEST(!code_of([](auto& o) { o.schema = std::string(63, 'a'); }));
    BOOST_TEST(!code_of([](auto& o) { o.schema = "_tenant_42"; }));
    BOOST_TEST(io.run() == 0u); // constructing connects to nothing
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(postgres_store_connections)

BOOST_AUTO_TEST_CASE(refused_connection_is_an_io_error_naming_the_server) {
    // A loopback port nobody listens on: bind one, note it, close it.
    asio::io_context probe;
    asio::ip::tcp::acceptor a(probe, {asio::ip::make_address("127.0.0.1"), 0});
    const auto port = a.local_endpoint().port();
    a.close();
    lb::postgres_store_options o;
    o.conninfo = "host=127.0.0.1 port=" + std::to_string(port) + " user=postgres dbname=x";
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::postgres_store st(ex, o);
        lb::diagnostics diag;
        auto ec = co_await open_ec(st, diag);
        BOOST_TEST(ec == lb::errc::io_error);
        const auto msg = diag.message();
        BOOST_TEST(msg.find("postgres_store: ") == 0u, msg);
        BOOST_TEST(msg.find("cannot connect") != std::string::npos, msg);
        BOOST_TEST(msg.find(std::to_string(port)) != std::string::npos, msg);
        // The operations report the same, and the store stays usable for more attempts.
        lb::diagnostics get_diag;
        auto gec = co_await get_ec(st, "a", "u", "s", get_diag);
        BOOST_TEST(gec == lb::errc::io_error);
        BOOST_TEST(get_diag.message().find("cannot connect") != std::string::npos, get_diag.message());
    });
}

BOOST_AUTO_TEST_CASE(a_server_that_never_answers_hits_connect_timeout) {
    // Accepts TCP connections and never says a word: libpq waits for the server's reply
    // to its startup packet until connect_timeout.
    asio::io_context io;
    asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket held(io);
    silent.async_accept(held, [](error_code) {});
    lb::postgres_store_options o;
    o.conninfo = "host=127.0.0.1 port=" + std::to_string(silent.local_endpoint().port()) + " user=postgres dbname=x";
    o.connect_timeout = 200ms;
    lb::postgres_store st(io.get_executor(), o);
    error_code result = lb::errc::cancelled;
    const auto start = std::chrono::steady_clock::now();
    lb::diagnostics diag;
    st.async_open(diag, [&](error_code ec) {
        result = ec;
        silent.close();
        held.close();
    });
    io.run();
    const auto took = std::chrono::steady_clock::now() - start;
    BOOST_TEST(result == lb::errc::io_error);
    BOOST_TEST(diag.message().find("within 200 ms") != std::string::npos, diag.message());
    BOOST_TEST(took >= 150ms);
    BOOST_TEST(took < 10s);
}

BOOST_FIXTURE_TEST_CASE(a_terminated_idle_connection_is_replaced, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto o = options();
        o.pool_size = 1;
        auto st = open(ex, o);
        auto s = co_await create(st, "app", "u", "s1");
        co_await append_text(st, s, "before");
        // The server ends every connection of this test's application (its pool's one).
        const auto killed = pg_test::query_value("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                      "AND state = 'idle' AND application_name = '" + app_name + "'");
        BOOST_TEST(killed == "t");
        std::this_thread::sleep_for(100ms); // the close reaches our socket
        // A read after the loss works: the dead idle connection is noticed and replaced.
        auto g = co_await get(st, s);
        BOOST_REQUIRE(g);
        BOOST_TEST(g->events.size() == 1u);
        // So does a write.
        auto seq = co_await append_text(st, s, "after");
        BOOST_TEST(seq == 2);
    });
}

BOOST_FIXTURE_TEST_CASE(pool_exhaustion_waits_then_fails_busy, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto o = options();
        o.pool_size = 1;
        o.acquire_timeout = 150ms;
        auto st = open(ex, o);
        auto s = co_await create(st, "app", "u", "s1");
        // Another client locks the session row; our append waits for that lock, holding the
        // pool's only connection.
        std::unique_ptr<PGconn, pg_test::conn_deleter> locker(PQconnectdb(conninfo.c_str()));
        BOOST_REQUIRE(PQstatus(locker.get()) == CONNECTION_OK);
        PQclear(PQexec(locker.get(), ("BEGIN; SELECT 1 FROM " + schema + ".sessions WHERE session_id = 's1' FOR UPDATE")
                                         .c_str()));
        error_code append_result = lb::errc::cancelled;
        std::int64_t append_seq = -1;
        lb::event e = text_event("waits for the row lock");
        st.async_append(s, std::move(e), [&](error_code ec, std::int64_t seq) {
            append_result = ec;
            append_seq = seq;
        });
        // A second operation finds no free connection within acquire_timeout.
        lb::diagnostics diag;
        auto gec = co_await get_ec(st, "app", "u", "s1", diag);
        BOOST_TEST(gec == lb::errc::busy);
        BOOST_TEST(diag.message().find("none of the pool's 1 connections") != std::string::npos, diag.message());
        BOOST_TEST(append_result == lb::errc::cancelled); // still waiting for the lock
        PQclear(PQexec(locker.get(), "COMMIT"));
        // Once the lock is released the append completes.
        asio::steady_timer t(ex);
        for (int i = 0; i < 200 && append_result == lb::errc::cancelled; ++i) {
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(!append_result);
        BOOST_TEST(append_seq == 1);
        BOOST_TEST(s.last_sequence == 1);
    });
}

BOOST_FIXTURE_TEST_CASE(concurrent_operations_share_a_small_pool, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto o = options();
        o.pool_size = 2;
        auto st = open(ex, o);
        // 20 sessions created and appended to at once through 2 connections.
        int done = 0, failures = 0;
        std::vector<lb::session> sessions(20);
        for (int i = 0; i < 20; ++i) {
            st.async_create(create_opts("app", "u" + std::to_string(i % 3), "s" + std::to_string(i)),
                            [&, i](error_code ec, lb::session s) {
                                if (ec) ++failures;
                                sessions[static_cast<std::size_t>(i)] = std::move(s);
                                ++done;
                            });
        }
        asio::steady_timer t(ex);
        while (done < 20) {
            t.expires_after(5ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(failures == 0);
        lb::list_options lo;
        lo.app_name = "app";
        lo.page_size = 100;
        auto page = co_await list(st, lo);
        BOOST_TEST(page.sessions.size() == 20u);
        // At most pool_size connections were opened by this store.
        const auto n = pg_test::query_value("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" +
                                            app_name + "'");
        BOOST_TEST(std::stoi(n) <= 2);
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(postgres_store_schema)

BOOST_FIXTURE_TEST_CASE(creates_the_schema_at_the_latest_version, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        BOOST_TEST(st.found_schema_version() == -1);
        auto ec = co_await open_ec(st);
        BOOST_TEST(!ec);
        BOOST_TEST(st.found_schema_version() == 0);
        BOOST_TEST(pg_test::query_value("SELECT version FROM " + schema + ".schema_version") == "4");
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM pg_indexes WHERE schemaname = '" + schema +
                                        "' AND indexname = 'sessions_by_user'") == "1");
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema +
                                        "' AND tablename = 'compactions'") == "1");
    });
    static_assert(lb::postgres_store::schema_version == 4);
}

BOOST_FIXTURE_TEST_CASE(migrates_a_version_1_schema_keeping_its_data, schema_fixture) {
    // A database as the first release left it: the v1 text, version 1, one session.
    pg_test::exec("CREATE SCHEMA " + schema + "; CREATE TABLE " + schema +
                  ".schema_version (version integer NOT NULL); INSERT INTO " + schema + ".schema_version VALUES (1);" +
                  lb::detail::pg::qualify(lb::detail::pg::migration_v1, schema));
    pg_test::exec("SELECT " + schema + ".libretto_create('app', 'u', 'old', 5.0, '{k}', '{\"1\"}', '{}', '{}', '{}', '{}')");
    lb::event e = text_event("hi", 6.0);
    e.session_id = "old";
    e.sequence = 1;
    std::string data = lb::serialize_event(e);
    for (std::size_t i = data.find('\''); i != std::string::npos; i = data.find('\'', i + 2)) data.insert(i, 1, '\'');
    pg_test::exec("SELECT " + schema + ".libretto_append('app', 'u', 'old', 0, 6.0, 0, '{1}', '{6.0}', ARRAY['" + data +
                  "'], '{}', '{}', '{}', '{}', '{}', '{}')");
    // Compactions as the v1 schema stored them: a valid one (2, of 1..1), a reversed one and
    // one with an empty summary (another tool's): migration 3 indexes only the first.
    auto compaction_row = [&](std::int64_t seq, lb::event_compaction c) {
        lb::event x = lb::event::make(lb::event_type::agent_message, "compaction");
        x.session_id = "old";
        x.sequence = seq;
        x.timestamp = 6.0 + static_cast<double>(seq);
        x.actions.compaction = std::move(c);
        std::string row = lb::serialize_event(x);
        for (std::size_t i = row.find('\''); i != std::string::npos; i = row.find('\'', i + 2)) row.insert(i, 1, '\'');
        pg_test::exec("SELECT " + schema + ".libretto_append('app', 'u', 'old', " + std::to_string(seq - 1) + ", 9.0, 0, '{" +
                      std::to_string(seq) + "}', '{9.0}', ARRAY['" + row + "'], '{}', '{}', '{}', '{}', '{}', '{}')");
    };
    compaction_row(2, lb::event_compaction{1, 1, 0, 0, "hi, summarised", 1});
    compaction_row(3, lb::event_compaction{2, 1, 0, 0, "reversed", 1});
    compaction_row(4, lb::event_compaction{1, 3, 0, 0, "", 3});
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        lb::diagnostics diag;
        auto ec = co_await open_ec(st, diag);
        BOOST_TEST(!ec, diag.message());
        BOOST_TEST(diag.empty());
        BOOST_TEST(st.found_schema_version() == 1);
        BOOST_TEST(pg_test::query_value("SELECT version FROM " + schema + ".schema_version") == "4");
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM pg_indexes WHERE schemaname = '" + schema +
                                        "' AND indexname = 'sessions_by_user'") == "1");
        BOOST_TEST(pg_test::query_value("SELECT string_agg(sequence || ':' || first_sequence || '-' || last_sequence, "
                                        "',') FROM " + schema + ".compactions") == "2:1-1");
        auto g = co_await get(st, "app", "u", "old");
        BOOST_REQUIRE(g);
        BOOST_TEST(g->last_sequence == 4);
        BOOST_REQUIRE(g->events.size() == 4u);
        BOOST_TEST(g->events[0].text() == "hi");
        BOOST_TEST(g->state.at("k") == lb::json::value(1));
        // What a runner loads: the summary of 1..1 and what follows (the bad ones cover nothing).
        lb::get_options o;
        o.context_only = true;
        lb::session_key k{"app", "u", "old"};
        auto op = st.async_get(std::move(k), std::move(o), asio::use_awaitable);
        auto tail = co_await std::move(op);
        BOOST_REQUIRE(tail);
        BOOST_REQUIRE_EQUAL(tail->events.size(), 3u);
        BOOST_TEST(tail->events[0].sequence == 2);
        // Appends maintain the table: a summary containing 1..1 replaces its row.
        auto c = text_event("summary of 1-4", 10.0);
        c.actions.compaction = lb::event_compaction{1, 4, 0, 0, "everything", 4};
        auto ap = st.async_append(*tail, std::move(c), asio::use_awaitable);
        BOOST_TEST(co_await std::move(ap) == 5);
        BOOST_TEST(pg_test::query_value("SELECT string_agg(sequence || ':' || first_sequence || '-' || last_sequence, "
                                        "',') FROM " + schema + ".compactions") == "5:1-4");
        lb::get_options o2;
        o2.context_only = true;
        lb::session_key k2{"app", "u", "old"};
        auto op2 = st.async_get(std::move(k2), std::move(o2), asio::use_awaitable);
        auto only = co_await std::move(op2);
        BOOST_REQUIRE(only);
        BOOST_REQUIRE_EQUAL(only->events.size(), 1u);
        BOOST_TEST(only->events[0].sequence == 5);
    });
}

BOOST_FIXTURE_TEST_CASE(migrates_a_version_3_schema_whose_sessions_have_no_initial_state, schema_fixture) {
    // A database as version 3 left it (the released steps), with a session its
    // libretto_create made.
    pg_test::exec("CREATE SCHEMA " + schema + "; CREATE TABLE " + schema +
                  ".schema_version (version integer NOT NULL); INSERT INTO " + schema + ".schema_version VALUES (3);" +
                  lb::detail::pg::qualify(lb::detail::pg::migration_v1, schema) +
                  lb::detail::pg::qualify(lb::detail::pg::migration_v2, schema) +
                  lb::detail::pg::qualify(lb::detail::pg::migration_v3, schema));
    pg_test::exec("SELECT " + schema + ".libretto_create('app', 'u', 'old', 5.0, '{k}', '{\"1\"}', '{}', '{}', '{}', '{}')");
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        lb::diagnostics diag;
        auto ec = co_await open_ec(st, diag);
        BOOST_TEST(!ec, diag.message());
        BOOST_TEST(st.found_schema_version() == 3);
        BOOST_TEST(pg_test::query_value("SELECT version FROM " + schema + ".schema_version") == "4");
        // One libretto_create left: the new one.
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = "
                                        "p.pronamespace WHERE n.nspname = '" + schema +
                                        "' AND p.proname = 'libretto_create'") == "1");
        lb::get_options with;
        with.with_initial_state = true;
        lb::session_key k{"app", "u", "old"};
        auto g = co_await get(st, k, with);
        BOOST_REQUIRE(g);
        BOOST_TEST(g->initial_state.empty()); // none recorded
        BOOST_TEST(g->state.at("k") == lb::json::value(1));
        BOOST_TEST(co_await append_text(st, *g, "after") == 1);
        // A session created now records it.
        lb::json::object init;
        init["topic"] = "waves";
        init["app:x"] = 1;
        lb::create_options co = create_opts("app", "u", "new", init);
        co_await create_with(st, std::move(co));
        BOOST_TEST(pg_test::query_value("SELECT initial_state FROM " + schema + ".sessions WHERE session_id = 'new'") ==
                   "{\"topic\":\"waves\"}");
        lb::session_key nk{"app", "u", "new"};
        auto n = co_await get(st, nk, with);
        BOOST_REQUIRE(n);
        BOOST_TEST(n->initial_state.size() == 1u);
        BOOST_TEST(n->initial_state.at("topic").as_string() == "waves");
    });
}

BOOST_FIXTURE_TEST_CASE(a_newer_schema_is_refused_and_left_alone, schema_fixture) {
    pg_test::exec("CREATE SCHEMA " + schema + "; CREATE TABLE " + schema +
                  ".schema_version (version integer NOT NULL); INSERT INTO " + schema + ".schema_version VALUES (99);");
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        lb::diagnostics diag;
        auto ec = co_await open_ec(st, diag);
        BOOST_TEST(ec == boost::system::errc::not_supported);
        BOOST_TEST(diag.message().find("version 99") != std::string::npos, diag.message());
        BOOST_TEST(pg_test::query_value("SELECT version FROM " + schema + ".schema_version") == "99");
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema + "'") == "1");
        auto gec = co_await get_ec(st, "a", "u", "s");
        BOOST_TEST(gec == boost::system::errc::not_supported);
    });
}

BOOST_FIXTURE_TEST_CASE(stores_starting_together_migrate_once, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        std::vector<lb::postgres_store> stores;
        for (int i = 0; i < 4; ++i) stores.push_back(open(ex));
        int done = 0, failures = 0;
        for (auto& st : stores)
            st.async_open([&](error_code ec) {
                if (ec) ++failures;
                ++done;
            });
        asio::steady_timer t(ex);
        while (done < 4) {
            t.expires_after(5ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(failures == 0);
        int created = 0;
        for (auto& st : stores) created += st.found_schema_version() == 0;
        BOOST_TEST(created == 1); // the others found it at the latest version
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM " + schema + ".schema_version") == "1");
    });
}

BOOST_FIXTURE_TEST_CASE(schemas_keep_deployments_apart, schema_fixture) {
    const std::string other = pg_test::fresh_schema("pgtest_other");
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto a = open(ex);
        auto o = options();
        o.schema = other;
        auto b = open(ex, o);
        co_await create(a, "app", "u", "same-id");
        auto ec = co_await create_ec(b, create_opts("app", "u", "same-id"));
        BOOST_TEST(!ec);
        auto ga = co_await get(b, "app", "u", "same-id");
        BOOST_TEST(ga.has_value());
    });
    pg_test::drop_schema(other);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(postgres_store_data)

BOOST_FIXTURE_TEST_CASE(events_are_stored_byte_for_byte, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto s = co_await create(st, "app", "u", "s1");
        // Text that stresses the array-literal encoding and JSON escaping.
        const std::string nasty = "quote \" backslash \\ braces {} comma , NULL null \u00e9\u4e2d \t\n end";
        lb::event e = text_event(nasty);
        e.actions.state_delta["k"] = nasty;
        e.actions.state_delta["app:k"] = lb::json::array{1, "two", nullptr, 3.25};
        e.timestamp = 1763700000.123456;
        co_await append(st, s, e);
        const lb::event& stored = s.events.back();
        const std::string expected = lb::serialize_event(stored);
        BOOST_TEST(pg_test::query_value("SELECT data FROM " + schema + ".events WHERE sequence = 1") == expected);
        auto g = co_await get(st, s);
        BOOST_REQUIRE(g);
        BOOST_REQUIRE(g->events.size() == 1u);
        BOOST_TEST((g->events[0] == stored));
        BOOST_TEST(g->events[0].text() == nasty);
        BOOST_TEST(g->events[0].timestamp == 1763700000.123456);
        BOOST_TEST(g->state.at("k") == lb::json::value(nasty));
        BOOST_TEST(g->state.at("app:k") == (lb::json::array{1, "two", nullptr, 3.25}));
    });
}

BOOST_FIXTURE_TEST_CASE(append_batch_is_all_or_nothing, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto s = co_await create(st, "app", "u", "s1");
        std::vector<lb::event> turn;
        turn.push_back(text_event("one"));
        turn.push_back(text_event("streaming chunk"));
        turn.back().partial = true;
        turn.push_back(text_event("two"));
        turn.back().actions.state_delta["n"] = 2;
        auto [ec, last] = co_await append_batch(st, s, std::move(turn));
        BOOST_TEST(!ec);
        BOOST_TEST(last == 2); // the partial event is not stored
        BOOST_TEST(s.last_sequence == 2);
        BOOST_TEST(s.events.size() == 2u);
        BOOST_TEST(s.state.at("n") == lb::json::value(2));

        // A batch with an oversize event stores none of its events.
        auto o = options();
        o.max_event_bytes = 1000;
        auto small = open(ex, o);
        std::vector<lb::event> bad;
        bad.push_back(text_event("fits"));
        bad.push_back(text_event(std::string(2000, 'x')));
        lb::diagnostics diag;
        auto [ec2, last2] = co_await append_batch(small, s, std::move(bad), diag);
        BOOST_TEST(ec2 == lb::errc::oversize);
        BOOST_TEST(last2 == 0);
        BOOST_TEST(diag.message().find("event 1 of the append") != std::string::npos, diag.message());
        BOOST_TEST(s.last_sequence == 2);
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM " + schema + ".events") == "2");

        // A stale batch stores nothing.
        lb::session stale = s;
        stale.last_sequence = 1;
        std::vector<lb::event> late;
        late.push_back(text_event("late 1"));
        late.push_back(text_event("late 2"));
        auto [ec3, last3] = co_await append_batch(st, stale, std::move(late), diag);
        BOOST_TEST(ec3 == lb::errc::stale_session);
        BOOST_TEST(diag.message().find("is at sequence 2, the caller's copy at 1") != std::string::npos, diag.message());
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM " + schema + ".events") == "2");

        // An empty batch (or all partial) stores nothing and succeeds.
        std::vector<lb::event> none;
        auto [ec4, last4] = co_await append_batch(st, s, std::move(none));
        BOOST_TEST(!ec4);
        BOOST_TEST(last4 == 0);
        BOOST_TEST(s.last_sequence == 2);
    });
}

BOOST_FIXTURE_TEST_CASE(invalid_utf8_events_are_refused_before_the_server, schema_fixture) {
    // The server would refuse the text too (a UTF8 database), as an io_error; the store
    // refuses first, naming the event and the byte.
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto s = co_await create(st, "app", "u", "s1");
        co_await append_text(st, s, "one");
        std::vector<lb::event> bad;
        bad.push_back(text_event("fits"));
        bad.push_back(text_event("cut short \xe2\x82"));
        bad.back().actions.state_delta["app:k"] = 1;
        lb::diagnostics diag;
        auto [ec, last] = co_await append_batch(st, s, std::move(bad), diag);
        BOOST_TEST(ec == lb::errc::invalid_argument);
        BOOST_TEST(last == 0);
        BOOST_TEST(diag.message().find("(1 of the append): string is not valid UTF-8 (byte 0xe2 at offset 10)") !=
                       std::string::npos,
                   diag.message());
        BOOST_TEST(s.last_sequence == 1);
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM " + schema + ".events") == "1");
        BOOST_TEST(pg_test::query_value("SELECT count(*) FROM " + schema + ".app_state") == "0");
        BOOST_TEST(co_await get_ec(st, "app", "u", "s1") == error_code{});
    });
}

BOOST_FIXTURE_TEST_CASE(append_to_a_deleted_session_is_not_found, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto s = co_await create(st, "app", "u", "s1");
        co_await remove(st, "app", "u", "s1");
        lb::diagnostics diag;
        auto ec = co_await append_text_ec(st, s, "into the void", diag);
        BOOST_TEST(ec == lb::errc::not_found);
        BOOST_TEST(diag.message().find("app/u/s1 does not exist") != std::string::npos, diag.message());
    });
}

BOOST_FIXTURE_TEST_CASE(corrupt_rows_are_reported_not_skipped, schema_fixture) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto s = co_await create(st, "app", "u", "s1");
        co_await append_text(st, s, "one");
        co_await append_text(st, s, "two");
        pg_test::exec("UPDATE " + schema + ".events SET data = '{\"truncated' WHERE sequence = 2");
        lb::diagnostics diag;
        auto ec = co_await get_ec(st, "app", "u", "s1", diag);
        BOOST_TEST(ec == lb::errc::corrupt_data);
        BOOST_TEST(diag.message().find("event at sequence 2 is corrupt") != std::string::npos, diag.message());
        // Only the intact part requested: fine.
        lb::get_options first;
        first.num_recent_events = 0;
        auto g = co_await get(st, key_of(s), first);
        BOOST_TEST(g.has_value());

        pg_test::exec("UPDATE " + schema + ".events SET data = '" + lb::serialize_event(s.events[0]) +
                      "' WHERE sequence = 2"); // a valid event, but the wrong sequence
        ec = co_await get_ec(st, "app", "u", "s1", diag);
        BOOST_TEST(ec == lb::errc::corrupt_data);
        BOOST_TEST(diag.message().find("says it has sequence 1") != std::string::npos, diag.message());

        pg_test::exec("INSERT INTO " + schema + ".app_state VALUES ('app', 'bad', 'not json')");
        lb::list_options lo;
        lo.app_name = "app";
        auto lec = co_await list_ec(st, lo, diag);
        BOOST_TEST(lec == lb::errc::corrupt_data);
        BOOST_TEST(diag.message().find("'bad' holds invalid JSON") != std::string::npos, diag.message());
    });
}

BOOST_FIXTURE_TEST_CASE(data_outlives_the_store, schema_fixture) {
    lb::session kept;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto s = co_await create(st, "app", "u", "s1");
        lb::event e = text_event("persisted");
        e.actions.state_delta["user:name"] = "Ada";
        co_await append(st, s, e);
        kept = s;
    });
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = open(ex);
        auto g = co_await get(st, kept);
        BOOST_REQUIRE(g);
        BOOST_TEST((g->events == kept.events));
        BOOST_TEST(g->last_sequence == kept.last_sequence);
        BOOST_TEST(g->state.at("user:name") == lb::json::value("Ada"));
        auto other = co_await create(st, "app", "u", "s2");
        BOOST_TEST(other.state.at("user:name") == lb::json::value("Ada"));
    });
}

BOOST_AUTO_TEST_SUITE_END()
