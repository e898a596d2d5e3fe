// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The memory service's benchmark on sqlite_memory_service (what is timed:
// memory_service_bench.hpp). Left out of libretto_bench without the libretto::sqlite component.
#include "memory_service_bench.hpp"

#include <libretto/store/sqlite_memory_service.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>

namespace memory_bench {
namespace {

// The bytes of the files in `dir`, in MB.
double megabytes(const std::filesystem::path& dir) {
    std::uintmax_t bytes = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir))
        if (f.is_regular_file()) bytes += f.file_size();
    return static_cast<double>(bytes) / 1e6;
}

// 110,000 entries in a scratch file: written by one instance (one transaction per
// session), then searched by a new one, as a restarted program finds them. The defaults:
// WAL, synchronous = NORMAL; FTS5's own merging of its index segments as the rows came
// (no 'optimize' afterwards).
void bench_search_sqlite(libretto_bench::reporter& r) {
    scratch dir("memory-search-sqlite");
    const std::string file = (dir.path / "memory.db").string();
    const auto t0 = clock_type::now();
    fill(sqlite_memory_service({.path = file}));
    const double fill_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::fprintf(stderr, "memory_search_100k_ms: %zu entries made and added in %.2f s (%.0f /s), %.1f MB of file and WAL\n",
                 entries + other_users * (entries / 100), fill_s,
                 static_cast<double>(entries + other_users * (entries / 100)) / fill_s, megabytes(dir.path));
    sqlite_memory_service service({.path = file});
    bench_search(r, "memory_search_100k_ms", service, 200, 2'000);
}

LIBRETTO_BENCHMARK(bench_search_sqlite, "memory_search_100k_ms");

} // namespace
} // namespace memory_bench
