// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Rewind on memory_store and jsonl_store (what is timed: rewind_bench.hpp).
//
//   rewind_10k_ms        memory_store
//   rewind_10k_jsonl_ms  jsonl_store (no fsync; a restarted store, nothing cached)
#include "rewind_bench.hpp"

#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

namespace rewind_bench {
namespace {

void bench_rewind_memory(libretto_bench::reporter& r) {
    std::vector<double> ms;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        memory_store store(ex);
        co_await fill(store);
        co_await time_rewinds(store, ms);
    });
    report_median(r, "rewind_10k_ms", std::move(ms));
}

void bench_rewind_jsonl(libretto_bench::reporter& r) {
    libretto_bench::scratch dir("rewind-jsonl");
    std::vector<double> ms;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        jsonl_store_options o;
        o.directory = dir.path;
        o.durability = durability::none;
        {
            jsonl_store writer(ex, o);
            co_await fill(writer);
        }
        jsonl_store store(ex, o); // a restarted program: nothing cached
        co_await time_rewinds(store, ms);
    });
    report_median(r, "rewind_10k_jsonl_ms", std::move(ms));
}

LIBRETTO_BENCHMARK(bench_rewind_memory, "rewind_10k_ms");
LIBRETTO_BENCHMARK(bench_rewind_jsonl, "rewind_10k_jsonl_ms");

} // namespace
} // namespace rewind_bench
