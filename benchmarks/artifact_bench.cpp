// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The artifact service's benchmarks on file_artifact_service (what is timed:
// artifact_bench.hpp; the SQLite back end: artifact_sqlite_bench.cpp).
#include "artifact_bench.hpp"

#include <libretto/store/file_artifact_service.hpp>

namespace artifact_bench {
namespace {

// The default, durable: per save an fsync of the bytes' file, of the info file and of the
// name's directory.
void bench_save_file(libretto_bench::reporter& r) {
    scratch dir("artifact-save-file");
    file_artifact_service service({.directory = dir.path});
    bench_save(r, "artifact_save_file_mb_s", service, 5, 200);
}

// The same with .durable = false: no fsync, the bytes left in the page cache.
void bench_save_file_nosync(libretto_bench::reporter& r) {
    scratch dir("artifact-save-file-nosync");
    file_artifact_service service({.directory = dir.path, .durable = false});
    bench_save(r, "artifact_save_file_nosync_mb_s", service, 5, 200);
}

void bench_load_file(libretto_bench::reporter& r) {
    scratch dir("artifact-load-file");
    file_artifact_service service({.directory = dir.path});
    bench_load(r, "artifact_load_file_mb_s", service, 100, 10);
}

LIBRETTO_BENCHMARK(bench_save_file, "artifact_save_file_mb_s");
LIBRETTO_BENCHMARK(bench_save_file_nosync, "artifact_save_file_nosync_mb_s");
LIBRETTO_BENCHMARK(bench_load_file, "artifact_load_file_mb_s");

} // namespace
} // namespace artifact_bench
