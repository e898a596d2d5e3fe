// The conformance suite against postgres_store, on the PostgreSQL server the ctest fixture
// starts (tests/pg_test_server.hpp). Each fixture gets its own schema; each open() is a new
// store with its own connection pool, so the concurrency case races two pools through the
// server's row locks.
#include <libretto/store/postgres_store.hpp>

#include "../pg_test_server.hpp"
#include "artifact_conformance.hpp"
#include "conversation_conformance.hpp"
#include "rewind_conformance.hpp"
#include "index_conformance.hpp"
#include "memory_conformance.hpp"
#include "store_conformance.hpp"

#include <libretto/store/postgres_artifact_service.hpp>
#include <libretto/store/postgres_memory_service.hpp>
#include <libretto/store/postgres_session_index.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

// The artifacts in the store's schema.
struct postgres_artifact_fixture : postgres_fixture {
    using service_type = libretto::postgres_artifact_service;
    libretto::postgres_artifact_service open() {
        return libretto::postgres_artifact_service({.conninfo = conninfo, .schema = schema});
    }
    libretto::postgres_artifact_service open_limited(std::uint64_t max) {
        return libretto::postgres_artifact_service({.conninfo = conninfo, .schema = schema, .max_artifact_bytes = max});
    }
};

// The memory in the store's schema.
struct postgres_memory_fixture : postgres_fixture {
    using service_type = libretto::postgres_memory_service;
    libretto::postgres_memory_service open() {
        return libretto::postgres_memory_service({.conninfo = conninfo, .schema = schema});
    }
};

/// What opening a `Service` with `o` throws: its code and words (success, "" if nothing).
template <class Service, class Options>
std::pair<boost::system::error_code, std::string> refused_open(Options o) {
    try {
        Service s(std::move(o));
    } catch (const libretto::error_with_diagnostics& x) {
        return {x.code(), x.get_diagnostics().message()};
    }
    return {};
}

} // namespace

LIBRETTO_STORE_CONFORMANCE(postgres_fixture)
LIBRETTO_INDEX_CONFORMANCE(postgres_index_fixture)
LIBRETTO_CONVERSATION_CONFORMANCE(postgres_conversation_fixture)
LIBRETTO_REWIND_CONFORMANCE(postgres_conversation_fixture)
LIBRETTO_ARTIFACT_CONFORMANCE(postgres_artifact_fixture)
LIBRETTO_MEMORY_CONFORMANCE(postgres_memory_fixture)

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
    auto refused = [](lb::postgres_session_index_options o) { return refused_open<lb::postgres_session_index>(std::move(o)); };
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

BOOST_AUTO_TEST_SUITE(postgres_artifact_service_specific)

namespace lb = libretto;
using artifact_conformance::key;

// 5 MB in, 5 MB out, chunk by chunk (bytea rows, fetched a few at a time): no chunk row and
// no sink call larger than artifact_chunk_bytes, the bytes identical.
BOOST_AUTO_TEST_CASE(a_large_artifact_moves_in_chunks) {
    postgres_artifact_fixture f;
    auto s = f.open();
    std::string big(5 * 1000 * 1000, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 11);
    auto in = artifact_conformance::source(big, 100 * 1000);
    lb::artifact_info info;
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.artifact_save(key("big.bin"), in, "application/octet-stream", {}, info, &d), d.message());
    BOOST_TEST(info.size == big.size());
    const auto rows = (big.size() + lb::artifact_chunk_bytes - 1) / lb::artifact_chunk_bytes;
    BOOST_TEST(pg_test::query_value("SELECT COUNT(*) FROM " + f.schema + ".artifact_chunks") == std::to_string(rows));
    BOOST_TEST(pg_test::query_value("SELECT MAX(length(data)) FROM " + f.schema + ".artifact_chunks") ==
               std::to_string(lb::artifact_chunk_bytes));
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
    BOOST_TEST(calls == rows);
    BOOST_TEST(largest <= lb::artifact_chunk_bytes);
    BOOST_TEST((back == big));
}

// Instances (connections) saving one name at once: the advisory lock gives every save its
// own version, and together they are 0..n-1.
BOOST_AUTO_TEST_CASE(concurrent_saves_get_distinct_versions) {
    postgres_artifact_fixture f;
    constexpr int instances = 4, saves = 6;
    std::vector<std::vector<std::int64_t>> got(instances);
    std::vector<std::string> errors(instances);
    {
        std::vector<lb::postgres_artifact_service> services;
        for (int t = 0; t < instances; ++t) services.push_back(f.open()); // tables created before the race
        std::vector<std::thread> threads;
        for (int t = 0; t < instances; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < saves; ++i) {
                    const std::string data = "from " + std::to_string(t) + " #" + std::to_string(i);
                    auto in = artifact_conformance::source(data);
                    lb::artifact_info info;
                    lb::diagnostics d;
                    if (auto ec = services[t].artifact_save(key("shared.txt"), in, "text/plain", {}, info, &d)) {
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
    postgres_artifact_fixture f;
    auto s = f.open();
    artifact_conformance::save(s, key("good.txt"), "good");
    artifact_conformance::save(s, key("bad.txt"), "bad", "text/plain", {{"k", 1}});
    const std::string versions = f.schema + ".artifact_versions";
    pg_test::exec("UPDATE " + versions + " SET metadata = '{\"k\":' WHERE name = 'bad.txt'");
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
    pg_test::exec("UPDATE " + versions + " SET metadata = '[1]' WHERE name = 'bad.txt'");
    BOOST_TEST(s.artifact_load(key("bad.txt"), 0, sink, found, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("not a JSON object") != std::string::npos, d.message());
    BOOST_TEST(artifact_conformance::load(s, key("good.txt")).data == "good"); // the failed load rolled back
    pg_test::exec("DELETE FROM " + f.schema + ".artifact_chunks WHERE name = 'good.txt'");
    BOOST_TEST(s.artifact_load(key("good.txt"), std::nullopt, sink, found, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("'good.txt'") != std::string::npos, d.message());
    BOOST_TEST(!found.has_value());
    BOOST_TEST((artifact_conformance::names(s) == std::vector<std::string>{"bad.txt", "good.txt"}));
    BOOST_TEST_REQUIRE(!s.artifact_delete(key("bad.txt"), &d), d.message());
    BOOST_TEST(artifact_conformance::save(s, key("bad.txt"), "again").version == 0);
}

// A source that throws after some chunks were sent, or a save past the limit: the exception
// propagates (or oversize), no row of it is left, and the connection is usable after.
BOOST_AUTO_TEST_CASE(a_failed_save_leaves_nothing) {
    postgres_artifact_fixture f;
    auto s = f.open();
    artifact_conformance::save(s, key("doc.bin"), "v0");
    const std::string count = "SELECT COUNT(*) FROM " + f.schema + ".artifact_chunks";
    const auto rows_before = pg_test::query_value(count);
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
    BOOST_TEST(pg_test::query_value(count) == rows_before);
    auto limited = f.open_limited(2 * lb::artifact_chunk_bytes);
    std::string over(2 * lb::artifact_chunk_bytes + 1, 'o');
    auto in = artifact_conformance::source(over);
    BOOST_TEST(limited.artifact_save(key("doc.bin"), in, "text/plain", {}, info, &d) == lb::errc::oversize);
    BOOST_TEST(pg_test::query_value(count) == rows_before);
    BOOST_TEST(artifact_conformance::save(s, key("doc.bin"), "v1").version == 1);
    BOOST_TEST(artifact_conformance::save(limited, key("doc.bin"), "v2").version == 2);
}

// Configuration errors: error_with_diagnostics, saying why.
BOOST_AUTO_TEST_CASE(bad_options_are_refused) {
    auto refused = [](lb::postgres_artifact_service_options o) { return refused_open<lb::postgres_artifact_service>(std::move(o)); };
    auto [ec, why] = refused({.conninfo = pg_test::conninfo(), .schema = "Bad-Name"});
    BOOST_TEST(ec == lb::errc::invalid_argument);
    BOOST_TEST(why.find("Bad-Name") != std::string::npos, why);
    std::tie(ec, why) = refused({.conninfo = ""});
    BOOST_TEST(ec == lb::errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
