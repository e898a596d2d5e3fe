// The conformance suite against sqlite_store. Each fixture owns a fresh database file in
// the test's working directory; each open() is a new instance (its own connection and
// worker thread), so the second instance of the concurrency case races through SQLite.
#include <libretto/store/sqlite_store.hpp>

#include "conversation_conformance.hpp"
#include "index_conformance.hpp"
#include "store_conformance.hpp"

#include <libretto/store/sqlite_session_index.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

namespace {

static_assert(libretto::session_store<libretto::sqlite_store>);

struct sqlite_fixture {
    using store_type = libretto::sqlite_store;
    [[maybe_unused]] static constexpr bool persistent = true;

    std::string path;

    sqlite_fixture() {
        static std::atomic<int> counter{0};
        path = "conformance-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".db";
        remove_files();
    }
    ~sqlite_fixture() { remove_files(); }

    libretto::sqlite_store open(boost::asio::any_io_executor ex) {
        libretto::sqlite_store_options o;
        o.path = path;
        return libretto::sqlite_store(std::move(ex), std::move(o));
    }

    void remove_files() const {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
    }
};

// The index in the store's file (where it is meant to live).
struct sqlite_index_fixture : sqlite_fixture {
    using index_type = libretto::sqlite_session_index;
    libretto::sqlite_session_index open() { return libretto::sqlite_session_index({.path = path}); }
};

// A store and its index in one file, for the conversation suite.
struct sqlite_conversation_fixture : sqlite_fixture {
    libretto::sqlite_session_index open_index() { return libretto::sqlite_session_index({.path = path}); }
};

// Runs SQL on the file through a connection of its own, as a person with the sqlite3 shell.
void exec_sql(const std::string& path, const char* sql) {
    libretto::detail::sqlite::connection c;
    std::string why;
    BOOST_TEST_REQUIRE(c.open(path, why) == SQLITE_OK, why);
    sqlite3_busy_timeout(c.get(), 5000);
    BOOST_TEST_REQUIRE(c.exec(sql) == SQLITE_OK, c.errmsg());
}

} // namespace

LIBRETTO_STORE_CONFORMANCE(sqlite_fixture)
LIBRETTO_INDEX_CONFORMANCE(sqlite_index_fixture)
LIBRETTO_CONVERSATION_CONFORMANCE(sqlite_conversation_fixture)

BOOST_AUTO_TEST_SUITE(sqlite_session_index_specific)

using index_conformance::entry;
namespace lb = libretto;

// One file: the store's tables and the index's table, each opened by its own connection
// in either order.
BOOST_AUTO_TEST_CASE(the_index_lives_in_the_store_file) {
    sqlite_index_fixture f;
    lb::diagnostics d;
    {
        auto ix = f.open(); // the index first: the store still creates its schema
        BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message());
    }
    boost::asio::io_context io;
    auto store = f.sqlite_fixture::open(io.get_executor());
    lb::session s;
    BOOST_TEST_REQUIRE(!store.create(conformance::create_opts("app", "u1", "s1"), s, &d), d.message());
    auto ix = f.open();
    auto g = index_conformance::get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->session_id == "s1");
}

// An entry edited into something unreadable: every call that reads it fails with
// corrupt_data naming the key and what is wrong; the other rows still read.
BOOST_AUTO_TEST_CASE(a_corrupt_row_is_reported_never_skipped) {
    sqlite_index_fixture f;
    auto ix = f.open();
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!ix.index_put(entry("good", "s1"), &d), d.message());
    BOOST_TEST_REQUIRE(!ix.index_put(entry("bad", "s2"), &d), d.message());
    exec_sql(f.path, "UPDATE libretto_session_index SET entry = '{\"x\":' WHERE conv_key = 'bad'");
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
    BOOST_TEST(index_conformance::get(ix, "good").has_value());
    // Valid JSON that is not an entry: decode_error's path.
    exec_sql(f.path, "UPDATE libretto_session_index SET entry = '{\"app_name\":\"app\",\"key\":7}' "
                     "WHERE conv_key = 'bad'");
    BOOST_TEST(ix.index_get("app", "bad", out, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'bad'") != std::string::npos, d.message());
    BOOST_TEST(d.message().find("key: ") != std::string::npos, d.message());
    // A put repairs it.
    BOOST_TEST_REQUIRE(!ix.index_put(entry("bad", "s3"), &d), d.message());
    BOOST_TEST(index_conformance::list(ix, index_conformance::query()).size() == 2u);
}

// A write waits busy_timeout for another connection's write lock, then errc::busy, and
// changes nothing.
BOOST_AUTO_TEST_CASE(a_held_write_lock_is_busy) {
    sqlite_index_fixture f;
    lb::sqlite_session_index ix({.path = f.path, .busy_timeout = std::chrono::milliseconds(50)});
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message());
    lb::detail::sqlite::connection other;
    std::string why;
    BOOST_TEST_REQUIRE(other.open(f.path, why) == SQLITE_OK, why);
    BOOST_TEST_REQUIRE(other.exec("BEGIN IMMEDIATE") == SQLITE_OK, other.errmsg());
    lb::conversation_patch p;
    p.add_input_tokens = 1;
    lb::conversation_entry out;
    BOOST_TEST(ix.index_patch("app", "k", p, out, &d) == lb::errc::busy);
    BOOST_TEST(d.message().find(f.path) != std::string::npos, d.message());
    BOOST_TEST(ix.index_put(entry("k2", "s2"), &d) == lb::errc::busy);
    BOOST_TEST(index_conformance::get(ix, "k").has_value()); // readers are not blocked (WAL)
    BOOST_TEST_REQUIRE(other.exec("ROLLBACK") == SQLITE_OK, other.errmsg());
    BOOST_TEST_REQUIRE(!ix.index_patch("app", "k", p, out, &d), d.message());
    BOOST_TEST(out.input_tokens == 1);
    BOOST_TEST(!index_conformance::get(ix, "k2"));
}

// The constructor names the file and says why it cannot be used.
BOOST_AUTO_TEST_CASE(a_file_that_is_not_sqlite_is_refused) {
    sqlite_index_fixture f;
    {
        std::ofstream out(f.path, std::ios::binary);
        out << std::string(4096, 'x');
    }
    try {
        f.open();
        BOOST_FAIL("opened a file that is not a database");
    } catch (const lb::error_with_diagnostics& x) {
        BOOST_TEST(x.code() == lb::errc::corrupt_data);
        BOOST_TEST(x.get_diagnostics().message().find(f.path) != std::string::npos, x.get_diagnostics().message());
    }
    try {
        lb::sqlite_session_index empty({});
        BOOST_FAIL("opened an empty path");
    } catch (const lb::error_with_diagnostics& x) {
        BOOST_TEST(x.code() == lb::errc::invalid_argument);
    }
}

BOOST_AUTO_TEST_SUITE_END()
