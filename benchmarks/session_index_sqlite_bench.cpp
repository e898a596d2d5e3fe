// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The session index's benchmarks on sqlite_session_index (what is timed:
// session_index_bench.hpp). Left out of libretto_bench without the libretto::sqlite component.
#include "session_index_bench.hpp"

#include <libretto/store/sqlite_session_index.hpp>

namespace index_bench {
namespace {

// An SQLite index of 10,000 conversations in a scratch directory: written by one instance
// (one transaction), then opened by a new one, as a restarted program finds it. The
// defaults: WAL, synchronous = NORMAL.
sqlite_session_index open_sqlite(const scratch& dir, const std::vector<conversation_entry>& entries) {
    const std::string file = (dir.path / "sessions.db").string();
    fill(sqlite_session_index({.path = file}), entries);
    return sqlite_session_index({.path = file});
}

void bench_index_update_sqlite(libretto_bench::reporter& r) {
    scratch dir("index-update-sqlite");
    const auto entries = make_entries(event::now());
    auto index = open_sqlite(dir, entries);
    bench_update(r, "index_update_sqlite_us", index, entries);
}

void bench_status_read_sqlite(libretto_bench::reporter& r) {
    scratch dir("status-read-sqlite");
    const auto entries = make_entries(event::now());
    auto index = open_sqlite(dir, entries);
    bench_status_read(r, "status_read_sqlite_us", index, entries, 50'000, 1);
}

// The worker thread of any_session_index (a one-thread pool of its own) runs the get.
void bench_key_resolve_sqlite(libretto_bench::reporter& r) {
    scratch dir("key-resolve-sqlite");
    const auto entries = make_entries(event::now());
    boost::asio::io_context io;
    any_session_index index(io.get_executor(), open_sqlite(dir, entries));
    bench_key_resolve(r, "key_resolve_10k_sessions_us", index, io, entries, 20'000);
}

LIBRETTO_BENCHMARK(bench_index_update_sqlite, "index_update_sqlite_us");
LIBRETTO_BENCHMARK(bench_status_read_sqlite, "status_read_sqlite_us");
LIBRETTO_BENCHMARK(bench_key_resolve_sqlite, "key_resolve_10k_sessions_us");

} // namespace
} // namespace index_bench
