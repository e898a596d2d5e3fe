// The conformance suite against sqlite_store. Each fixture owns a fresh database file in
// the test's working directory; each open() is a new instance (its own connection and
// worker thread), so the second instance of the concurrency case races through SQLite.
#include <libretto/store/sqlite_store.hpp>

#include "artifact_conformance.hpp"
#include "conversation_conformance.hpp"
#include "rewind_conformance.hpp"
#include "index_conformance.hpp"
#include "memory_conformance.hpp"
#include "store_conformance.hpp"

#include <libretto/store/sqlite_artifact_service.hpp>
#include <libretto/store/sqlite_memory_service.hpp>
#include <libretto/store/sqlite_session_index.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

// The artifacts in the store's file.
struct sqlite_artifact_fixture : sqlite_fixture {
    using service_type = libretto::sqlite_artifact_service;
    libretto::sqlite_artifact_service open() { return libretto::sqlite_artifact_service({.path = path}); }
    libretto::sqlite_artifact_service open_limited(std::uint64_t max) {
        return libretto::sqlite_artifact_service({.path = path, .max_artifact_bytes = max});
    }
};

// The memory in the store's file.
struct sqlite_memory_fixture : sqlite_fixture {
    using service_type = libretto::sqlite_memory_service;
    libretto::sqlite_memory_service open() { return libretto::sqlite_memory_service({.path = path}); }
};

// Runs SQL on the file through a connection of its own, as a person with the sqlite3 shell.
void exec_sql(const std::string& path, const char* sql) {
    libretto::detail::sqlite::connection c;
    std::string why;
    BOOST_TEST_REQUIRE(c.open(path, why) == SQLITE_OK, why);
    sqlite3_busy_timeout(c.get(), 5000);
    BOOST_TEST_REQUIRE(c.exec(sql) == SQLITE_OK, c.errmsg());
}

// The first column of the first row of `sql`, as an integer.
std::int64_t query_int(const std::string& path, const char* sql) {
    libretto::detail::sqlite::connection c;
    std::string why;
    BOOST_TEST_REQUIRE(c.open(path, why) == SQLITE_OK, why);
    libretto::detail::sqlite::statement st;
    BOOST_TEST_REQUIRE(st.prepare(c, sql) == SQLITE_OK, c.errmsg());
    BOOST_TEST_REQUIRE(st.step() == SQLITE_ROW, c.errmsg());
    return st.int64(0);
}

} // namespace

LIBRETTO_STORE_CONFORMANCE(sqlite_fixture)
LIBRETTO_INDEX_CONFORMANCE(sqlite_index_fixture)
LIBRETTO_CONVERSATION_CONFORMANCE(sqlite_conversation_fixture)
LIBRETTO_REWIND_CONFORMANCE(sqlite_conversation_fixture)
LIBRETTO_ARTIFACT_CONFORMANCE(sqlite_artifact_fixture)
LIBRETTO_MEMORY_CONFORMANCE(sqlite_memory_fixture)

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

BOOST_AUTO_TEST_SUITE(sqlite_artifact_service_specific)

namespace lb = libretto;
using artifact_conformance::key;

// 5 MB in, 5 MB out, chunk by chunk: no chunk row and no sink call larger than
// artifact_chunk_bytes, the bytes identical.
BOOST_AUTO_TEST_CASE(a_large_artifact_moves_in_chunks) {
    sqlite_artifact_fixture f;
    auto s = f.open();
    std::string big(5 * 1000 * 1000, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 11);
    auto in = artifact_conformance::source(big, 100 * 1000);
    lb::artifact_info info;
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.artifact_save(key("big.bin"), in, "application/octet-stream", {}, info, &d), d.message());
    BOOST_TEST(info.size == big.size());
    const auto rows = (big.size() + lb::artifact_chunk_bytes - 1) / lb::artifact_chunk_bytes;
    BOOST_TEST(query_int(f.path, "SELECT COUNT(*) FROM libretto_artifact_chunks") == static_cast<std::int64_t>(rows));
    BOOST_TEST(query_int(f.path, "SELECT MAX(length(data)) FROM libretto_artifact_chunks") ==
               static_cast<std::int64_t>(lb::artifact_chunk_bytes));
    std::string back;
    std::size_t calls = 0, largest = 0;
    lb::artifact_sink sink = [&](std::string_view c) {
        back.append(c);
        ++calls;
        largest = std::max(largest, c.size());
    };
    std::optional<lb::artifact_info> found;
    auto again = f.open(); // another connection
    BOOST_TEST_REQUIRE(!again.artifact_load(key("big.bin"), std::nullopt, sink, found, &d), d.message());
    BOOST_TEST_REQUIRE(found.has_value());
    BOOST_TEST((*found == info));
    BOOST_TEST(calls > 1u);
    BOOST_TEST(largest <= lb::artifact_chunk_bytes);
    BOOST_TEST((back == big));
}

// Instances on one file saving one name at once: every save gets its own version, and
// together they are 0..n-1.
BOOST_AUTO_TEST_CASE(concurrent_saves_get_distinct_versions) {
    sqlite_artifact_fixture f;
    constexpr int instances = 4, saves = 6;
    std::vector<std::vector<std::int64_t>> got(instances);
    std::vector<std::string> errors(instances);
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < instances; ++t)
            threads.emplace_back([&, t] {
                auto s = f.open();
                for (int i = 0; i < saves; ++i) {
                    const std::string data = "from " + std::to_string(t) + " #" + std::to_string(i);
                    auto in = artifact_conformance::source(data);
                    lb::artifact_info info;
                    lb::diagnostics d;
                    if (auto ec = s.artifact_save(key("shared.txt"), in, "text/plain", {}, info, &d)) {
                        errors[t] = d.message();
                        return;
                    }
                    got[t].push_back(info.version);
                }
            });
        for (auto& th : threads) th.join();
    }
    for (const auto& e : errors) BOOST_TEST(e.empty(), e);
    std::vector<std::int64_t> all;
    for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> expected(instances * saves);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<std::int64_t>(i);
    BOOST_TEST(all == expected, boost::test_tools::per_element());
    auto s = f.open();
    const auto vs = artifact_conformance::versions(s, key("shared.txt"));
    BOOST_TEST_REQUIRE(vs.size() == expected.size());
    for (std::size_t i = 0; i < vs.size(); ++i) BOOST_TEST(vs[i].version == static_cast<std::int64_t>(i));
}

// A version row edited into something unreadable, or a chunk gone: corrupt_data naming the
// artifact, nothing handed to the sink; other artifacts still read.
BOOST_AUTO_TEST_CASE(a_corrupt_version_is_reported) {
    sqlite_artifact_fixture f;
    auto s = f.open();
    artifact_conformance::save(s, key("good.txt"), "good");
    artifact_conformance::save(s, key("bad.txt"), "bad", "text/plain", {{"k", 1}});
    exec_sql(f.path, "UPDATE libretto_artifact_versions SET metadata = '{\"k\":' WHERE name = 'bad.txt'");
    lb::diagnostics d;
    std::vector<lb::artifact_info> vs;
    BOOST_TEST(s.artifact_versions(key("bad.txt"), vs, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'bad.txt'") != std::string::npos, d.message());
    BOOST_TEST(d.message().find("not valid JSON") != std::string::npos, d.message());
    BOOST_TEST(vs.empty());
    std::size_t calls = 0;
    lb::artifact_sink sink = [&](std::string_view) { ++calls; };
    std::optional<lb::artifact_info> found;
    BOOST_TEST(s.artifact_load(key("bad.txt"), std::nullopt, sink, found, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'bad.txt'") != std::string::npos, d.message());
    BOOST_TEST(!found.has_value());
    BOOST_TEST(calls == 0u);
    exec_sql(f.path, "UPDATE libretto_artifact_versions SET metadata = '[1]' WHERE name = 'bad.txt'");
    BOOST_TEST(s.artifact_load(key("bad.txt"), 0, sink, found, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("not a JSON object") != std::string::npos, d.message());
    BOOST_TEST(artifact_conformance::load(s, key("good.txt")).data == "good");
    // A chunk row gone: the bytes do not add up to the size.
    exec_sql(f.path, "DELETE FROM libretto_artifact_chunks WHERE name = 'good.txt'");
    BOOST_TEST(s.artifact_load(key("good.txt"), std::nullopt, sink, found, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'good.txt'") != std::string::npos, d.message());
    BOOST_TEST(!found.has_value());
    // The list reads names only: both still listed; a delete clears the damage.
    BOOST_TEST((artifact_conformance::names(s) == std::vector<std::string>{"bad.txt", "good.txt"}));
    BOOST_TEST_REQUIRE(!s.artifact_delete(key("bad.txt"), &d), d.message());
    BOOST_TEST(artifact_conformance::save(s, key("bad.txt"), "again").version == 0);
}

// A source that throws after some chunks were written, or a save past the limit: the
// exception propagates (or oversize), and no row of it is left.
BOOST_AUTO_TEST_CASE(a_failed_save_leaves_nothing) {
    sqlite_artifact_fixture f;
    auto s = f.open();
    artifact_conformance::save(s, key("doc.bin"), "v0");
    const auto rows_before = query_int(f.path, "SELECT COUNT(*) FROM libretto_artifact_chunks");
    lb::artifact_source failing = [sent = std::size_t(0)](char* buf, std::size_t n) mutable -> std::size_t {
        if (sent > 3 * lb::artifact_chunk_bytes) throw std::runtime_error("the upload broke");
        std::memset(buf, 'z', n);
        sent += n;
        return n;
    };
    lb::artifact_info info;
    lb::diagnostics d;
    BOOST_CHECK_THROW((void)s.artifact_save(key("doc.bin"), failing, "text/plain", {}, info, &d), std::runtime_error);
    BOOST_CHECK_THROW((void)s.artifact_save(key("new.bin"), failing, "text/plain", {}, info, &d), std::runtime_error);
    BOOST_TEST(artifact_conformance::versions(s, key("doc.bin")).size() == 1u);
    BOOST_TEST((artifact_conformance::names(s) == std::vector<std::string>{"doc.bin"}));
    BOOST_TEST(query_int(f.path, "SELECT COUNT(*) FROM libretto_artifact_chunks") == rows_before);
    auto limited = f.open_limited(2 * lb::artifact_chunk_bytes);
    std::string over(2 * lb::artifact_chunk_bytes + 1, 'o');
    auto in = artifact_conformance::source(over);
    BOOST_TEST(limited.artifact_save(key("doc.bin"), in, "text/plain", {}, info, &d) == lb::errc::oversize);
    BOOST_TEST(query_int(f.path, "SELECT COUNT(*) FROM libretto_artifact_chunks") == rows_before);
    // The connection is usable after each: the next save is version 1.
    BOOST_TEST(artifact_conformance::save(s, key("doc.bin"), "v1").version == 1);
    BOOST_TEST(artifact_conformance::save(limited, key("doc.bin"), "v2").version == 2);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sqlite_open_specific)

// Programs (or threads) that open one new file at once: the store, the index and the two
// services all open, though SQLite refuses some of them its lock without waiting (when two
// connections each hold the shared lock the other needs released) the first time.
BOOST_AUTO_TEST_CASE(instances_opened_at_once_on_a_new_file_all_open) {
    constexpr int rounds = 25, instances = 6;
    std::vector<std::string> failures;
    for (int round = 0; round < rounds; ++round) {
        sqlite_fixture f;
        std::vector<std::string> errors(instances);
        std::atomic<int> ready{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < instances; ++t)
            threads.emplace_back([&, t] {
                ++ready;
                while (ready.load() < instances) std::this_thread::yield(); // start together
                try {
                    boost::asio::io_context io;
                    switch (t % 4) {
                    case 0: (void)f.open(io.get_executor()); break;
                    case 1: (void)libretto::sqlite_session_index({.path = f.path}); break;
                    case 2: (void)libretto::sqlite_artifact_service({.path = f.path}); break;
                    default: (void)libretto::sqlite_memory_service({.path = f.path}); break;
                    }
                } catch (const std::exception& e) {
                    errors[t] = e.what();
                }
            });
        for (auto& th : threads) th.join();
        for (const auto& e : errors)
            if (!e.empty()) failures.push_back("round " + std::to_string(round) + ": " + e);
    }
    BOOST_TEST(failures.empty(), failures.size() << " opens failed, the first: " << (failures.empty() ? "" : failures[0]));
    // And what they opened is usable: a session created through a new instance reads back.
    sqlite_fixture f;
    boost::asio::io_context io;
    auto store = f.open(io.get_executor());
    libretto::session s;
    libretto::diagnostics d;
    BOOST_TEST_REQUIRE(!store.create(conformance::create_opts("app", "u1", "s1"), s, &d), d.message());
}

BOOST_AUTO_TEST_SUITE_END()
