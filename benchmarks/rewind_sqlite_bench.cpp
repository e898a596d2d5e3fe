// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Rewind on sqlite_store (what is timed: rewind_bench.hpp).
//
//   rewind_10k_sqlite_ms  sqlite_store (the defaults; a reopened store, nothing cached)
#include "rewind_bench.hpp"

#include <libretto/store/sqlite_store.hpp>

namespace rewind_bench {
namespace {

void bench_rewind_sqlite(libretto_bench::reporter& r) {
    libretto_bench::scratch dir("rewind-sqlite");
    std::vector<double> ms;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        sqlite_store_options o;
        o.path = (dir.path / "sessions.db").string();
        {
            sqlite_store writer(ex, o);
            co_await fill(writer);
        }
        sqlite_store store(ex, o);
        co_await time_rewinds(store, ms);
    });
    report_median(r, "rewind_10k_sqlite_ms", std::move(ms));
}

LIBRETTO_BENCHMARK(bench_rewind_sqlite, "rewind_10k_sqlite_ms");

} // namespace
} // namespace rewind_bench
