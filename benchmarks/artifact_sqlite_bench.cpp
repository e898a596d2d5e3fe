// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The artifact service's benchmarks on sqlite_artifact_service (what is timed:
// artifact_bench.hpp). Left out of libretto_bench without the libretto::sqlite component.
#include "artifact_bench.hpp"

#include <libretto/store/sqlite_artifact_service.hpp>

namespace artifact_bench {
namespace {

// The defaults: WAL, synchronous = NORMAL (no fsync at commit; SQLite's automatic
// checkpoints, which fsync, run inside the save that crosses 1,000 WAL pages).
void bench_save_sqlite(libretto_bench::reporter& r) {
    scratch dir("artifact-save-sqlite");
    sqlite_artifact_service service({.path = (dir.path / "artifacts.db").string()});
    bench_save(r, "artifact_save_sqlite_mb_s", service, 5, 200);
}

void bench_load_sqlite(libretto_bench::reporter& r) {
    scratch dir("artifact-load-sqlite");
    sqlite_artifact_service service({.path = (dir.path / "artifacts.db").string()});
    bench_load(r, "artifact_load_sqlite_mb_s", service, 100, 10);
}

LIBRETTO_BENCHMARK(bench_save_sqlite, "artifact_save_sqlite_mb_s");
LIBRETTO_BENCHMARK(bench_load_sqlite, "artifact_load_sqlite_mb_s");

} // namespace
} // namespace artifact_bench
