// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The session index's benchmarks on memory_session_index and jsonl_session_index (what is
// timed: session_index_bench.hpp; the SQLite back end: session_index_sqlite_bench.cpp).
#include "session_index_bench.hpp"

#include <libretto/store/jsonl_session_index.hpp>
#include <libretto/store/memory_session_index.hpp>

namespace index_bench {
namespace {

// A JSONL index of 10,000 conversations in a scratch directory: written by one instance
// (conversations.json), then opened by a new one, as a restarted program finds it. The
// defaults: no fdatasync per change.
jsonl_session_index open_jsonl(const scratch& dir, const std::vector<conversation_entry>& entries) {
    fill(jsonl_session_index({.directory = dir.path}), entries);
    return jsonl_session_index({.directory = dir.path});
}

void bench_index_update_jsonl(libretto_bench::reporter& r) {
    scratch dir("index-update-jsonl");
    const auto entries = make_entries(event::now());
    auto index = open_jsonl(dir, entries);
    bench_update(r, "index_update_jsonl_us", index, entries);
}

void bench_status_read_jsonl(libretto_bench::reporter& r) {
    scratch dir("status-read-jsonl");
    const auto entries = make_entries(event::now());
    auto index = open_jsonl(dir, entries);
    bench_status_read(r, "status_read_jsonl_us", index, entries, 50'000, 1);
}

void bench_status_read_memory(libretto_bench::reporter& r) {
    const auto entries = make_entries(event::now());
    memory_session_index index;
    fill(index, entries);
    bench_status_read(r, "status_read_memory_us", index, entries, 20'000, 16);
}

void bench_key_resolve_memory(libretto_bench::reporter& r) {
    const auto entries = make_entries(event::now());
    memory_session_index core;
    fill(core, entries);
    boost::asio::io_context io;
    any_session_index index(io.get_executor(), std::move(core));
    bench_key_resolve(r, "key_resolve_10k_sessions_memory_us", index, io, entries, 200'000);
}

LIBRETTO_BENCHMARK(bench_index_update_jsonl, "index_update_jsonl_us");
LIBRETTO_BENCHMARK(bench_status_read_jsonl, "status_read_jsonl_us");
LIBRETTO_BENCHMARK(bench_status_read_memory, "status_read_memory_us");
LIBRETTO_BENCHMARK(bench_key_resolve_memory, "key_resolve_10k_sessions_memory_us");

} // namespace
} // namespace index_bench
