// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// libretto_bench [FILTER]   run the benchmarks that declare a metric containing FILTER and print
//                           the matching metric lines, `metric value unit`, one per line
// libretto_bench --list     print each benchmark and its declared metrics
//
// Exit status: 0 on success, 1 if a benchmark threw, 2 on a usage error or if no benchmark
// declares a metric matching FILTER. Diagnostics go to stderr, never to stdout.
#include "harness.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string_view>

namespace {

// The sanity benchmark: the cost of one ns_per_op iteration around an empty body, i.e. the
// floor under every per-operation number the harness reports.
void bench_harness_overhead(libretto_bench::reporter& r) {
    int x = 0;
    const double ns = libretto_bench::ns_per_op([&] { libretto_bench::do_not_optimize(x); },
                                                std::chrono::milliseconds(50));
    r.report("bench_harness_overhead_ns", ns, "ns");
}

} // namespace

LIBRETTO_BENCHMARK(bench_harness_overhead, "bench_harness_overhead_ns");

int main(int argc, char** argv) {
    std::string_view filter;
    if (argc > 2) {
        std::fprintf(stderr, "usage: %s [FILTER | --list]\n", argv[0]);
        return 2;
    }
    if (argc == 2)
        filter = argv[1];

    const auto& all = libretto_bench::registry();
    if (filter == "--list") {
        for (const auto& b : all) {
            std::printf("%s:", b.name.c_str());
            for (const auto& m : b.metrics)
                std::printf(" %s", m.c_str());
            std::printf("\n");
        }
        return 0;
    }
    if (filter == "-h" || filter == "--help") {
        std::printf("usage: %s [FILTER | --list]\n", argv[0]);
        return 0;
    }

    libretto_bench::reporter reporter(filter);
    int ran = 0;
    int failed = 0;
    for (const auto& b : all) {
        if (!b.matches(filter))
            continue;
        ++ran;
        try {
            b.fn(reporter);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "libretto_bench: %s threw: %s\n", b.name.c_str(), e.what());
            ++failed;
        } catch (...) {
            std::fprintf(stderr, "libretto_bench: %s threw a non-std exception\n", b.name.c_str());
            ++failed;
        }
    }
    if (ran == 0) {
        std::fprintf(stderr, "libretto_bench: no benchmark declares a metric containing \"%.*s\" (try --list)\n",
                     static_cast<int>(filter.size()), filter.data());
        return 2;
    }
    return failed == 0 ? 0 : 1;
}
