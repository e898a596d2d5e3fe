// The conformance suite against postgres_store, on the PostgreSQL server the ctest fixture
// starts (tests/pg_test_server.hpp). Each fixture gets its own schema; each open() is a new
// store with its own connection pool, so the concurrency case races two pools through the
// server's row locks.
#include <libretto/store/postgres_store.hpp>

#include "../pg_test_server.hpp"
#include "conversation_conformance.hpp"
#include "index_conformance.hpp"
#include "store_conformance.hpp"

#include <libretto/store/postgres_session_index.hpp>

#include <string>

namespace {

static_assert(libretto::session_store<libretto::postgres_store>);

struct postgres_fixture {
    using store_type = libretto::postgres_store;
    [[maybe_unused]] static constexpr bool persistent = true;

    std::string conninfo = pg_test::conninfo();
    std::string schema = pg_test::fresh_schema("conformance");

    ~postgres_fixture() { pg_test::drop_schema(schema); }

    libretto::postgres_store open(boost::asio::any_io_executor ex) {
        libretto::postgres_store_options o;
        o.conninfo = conninfo;
        o.schema = schema;
        return libretto::postgres_store(std::move(ex), std::move(o));
    }
};

// The index in the store's schema (where it is meant to live).
struct postgres_index_fixture : postgres_fixture {
    using index_type = libretto::postgres_session_index;
    libretto::postgres_session_index open() { return libretto::postgres_session_index({.conninfo = conninfo, .schema = schema}); }
};

// A store and its index in one schema, for the conversation suite.
struct postgres_conversation_fixture : postgres_fixture {
    libretto::postgres_session_index open_index() {
        return libretto::postgres_session_index({.conninfo = conninfo, .schema = schema});
    }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(postgres_fixture)
LIBRETTO_INDEX_CONFORMANCE(postgres_index_fixture)
LIBRETTO_CONVERSATION_CONFORMANCE(postgres_conversation_fixture)

BOOST_AUTO_TEST_SUITE(postgres_session_index_specific)

using index_conformance::entry;
namespace lb = libretto;

// One schema: the store's tables and the index's table, created in either order.
BOOST_AUTO_TEST_CASE(the_index_lives_in_the_store_schema) {
    postgres_index_fixture f;
    lb::diagnostics d;
    auto ix = f.open(); // the index first: the store still creates its tables
    BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message());
    conformance::run([&](boost::asio::any_io_executor ex) -> boost::asio::awaitable<void> {
        auto store = f.postgres_fixture::open(ex);
        auto create = store.async_create(conformance::create_opts("app", "u1", "s1"), boost::asio::use_awaitable);
        lb::session s = co_await std::move(create);
        BOOST_TEST(s.id == "s1");
    });
    auto again = f.open();
    auto g = index_conformance::get(again, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->session_id == "s1");
}

// An entry edited into something unreadable: every call that reads it fails with
// corrupt_data naming the key and what is wrong; the other rows still read.
BOOST_AUTO_TEST_CASE(a_corrupt_row_is_reported_never_skipped) {
    postgres_index_fixture f;
    auto ix = f.open();
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!ix.index_put(entry("good", "s1"), &d), d.message());
    BOOST_TEST_REQUIRE(!ix.index_put(entry("bad", "s2"), &d), d.message());
    pg_test::exec("UPDATE " + f.schema + ".session_index SET entry = '{\"x\":' WHERE conv_key = 'bad'");
    std::vector<lb::conversation_entry> listed;
    BOOST_TEST(ix.index_list(index_conformance::query(), listed, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'bad'") != std::string::npos, d.message());
    BOOST_TEST(d.message().find("not valid JSON") != std::string::npos, d.message());
    BOOST_TEST(listed.empty());
    std::optional<lb::conversation_entry> out;
    BOOST_TEST(ix.index_get("app", "bad", out, &d) == lb::errc::corrupt_data);
    lb::conversation_patch p;
    p.add_input_tokens = 1;
    lb::conversation_entry patched;
    BOOST_TEST(ix.index_patch("app", "bad", p, patched, &d) == lb::errc::corrupt_data);
    BOOST_TEST(index_conformance::get(ix, "good").has_value()); // the failed patch rolled back
    pg_test::exec("UPDATE " + f.schema + ".session_index SET entry = '{\"app_name\":\"app\",\"key\":7}' "
                  "WHERE conv_key = 'bad'");
    BOOST_TEST(ix.index_get("app", "bad", out, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'bad'") != std::string::npos, d.message());
    BOOST_TEST(d.message().find("key: ") != std::string::npos, d.message());
    BOOST_TEST_REQUIRE(!ix.index_put(entry("bad", "s3"), &d), d.message()); // a put repairs it
    BOOST_TEST(index_conformance::list(ix, index_conformance::query()).size() == 2u);
}

// The server ends the index's connection (a restart, an idle timeout): the next call
// reconnects once and succeeds.
BOOST_AUTO_TEST_CASE(a_dropped_connection_is_reset_once) {
    postgres_index_fixture f;
    const std::string app_name = "index_" + f.schema;
    std::string conninfo = f.conninfo;
    if (conninfo.find("://") != std::string::npos)
        conninfo += (conninfo.find('?') != std::string::npos ? "&" : "?") + ("application_name=" + app_name);
    else
        conninfo += " application_name=" + app_name;
    lb::postgres_session_index ix({.conninfo = conninfo, .schema = f.schema});
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message());
    const auto kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + app_name + "'";
    BOOST_TEST(pg_test::query_value(kill) == "t");
    auto g = index_conformance::get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    pg_test::query_value(kill);
    lb::conversation_patch p;
    p.add_input_tokens = 3;
    lb::conversation_entry out;
    BOOST_TEST_REQUIRE(!ix.index_patch("app", "k", p, out, &d), d.message());
    BOOST_TEST(out.input_tokens == 3);
}

// Configuration errors and an unreachable server: error_with_diagnostics, saying why.
BOOST_AUTO_TEST_CASE(bad_options_are_refused) {
    auto refused = [](lb::postgres_session_index_options o) {
        try {
            lb::postgres_session_index ix(std::move(o));
        } catch (const lb::error_with_diagnostics& x) {
            return std::pair(x.code(), x.get_diagnostics().message());
        }
        return std::pair(boost::system::error_code(), std::string());
    };
    auto [ec, why] = refused({.conninfo = pg_test::conninfo(), .schema = "Bad-Name"});
    BOOST_TEST(ec == lb::errc::invalid_argument);
    BOOST_TEST(why.find("Bad-Name") != std::string::npos, why);
    std::tie(ec, why) = refused({.conninfo = ""});
    BOOST_TEST(ec == lb::errc::invalid_argument);
    std::tie(ec, why) = refused({.conninfo = "host=127.0.0.1 port=1 connect_timeout=2"});
    BOOST_TEST(ec == lb::errc::io_error);
    BOOST_TEST(why.find("cannot connect") != std::string::npos, why);
}

BOOST_AUTO_TEST_SUITE_END()
