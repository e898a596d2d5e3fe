// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// libretto_bench [FILTER]   run the benchmarks that declare a metric containing FILTER and print
//                           the matching metric lines, `metric value unit`, one per line
// libretto_bench --list     print each benchmark and its declared metrics
//
// Each benchmark runs in a process of its own (this program, started again with
// `--only NAME FILTER`): a figure never depends on what ran before it. Memory figures read
// the process's peak RSS, and an append benchmark that reuses the heap an earlier one freed
// skips the page faults a fresh process pays (microseconds each when virtualised), so in one shared
// process both depended on the order of the registry.
//
// Exit status: 0 on success, 1 if a benchmark threw (or its process died), 2 on a usage error
// or if no benchmark declares a metric matching FILTER. Diagnostics go to stderr, never to stdout.
#include "harness.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace {

// The sanity benchmark: the cost of one ns_per_op iteration around an empty body, i.e. the
// floor under every per-operation number the harness reports.
void bench_harness_overhead(libretto_bench::reporter& r) {
    int x = 0;
    const double ns = libretto_bench::ns_per_op([&] { libretto_bench::do_not_optimize(x); },
                                                std::chrono::milliseconds(50));
    r.report("bench_harness_overhead_ns", ns, "ns");
}

/// Runs `b` here; false if it threw.
bool run_here(const libretto_bench::benchmark& b, libretto_bench::reporter& reporter) {
    try {
        b.fn(reporter);
        return true;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "libretto_bench: %s threw: %s\n", b.name.c_str(), e.what());
    } catch (...) {
        std::fprintf(stderr, "libretto_bench: %s threw a non-std exception\n", b.name.c_str());
    }
    return false;
}

/// Runs `b` in a new process (this program with `--only NAME FILTER`), which shares our
/// stdout and stderr; false if it failed, was killed or could not start.
bool run_isolated(const libretto_bench::benchmark& b, std::string_view filter) {
    std::string self = "/proc/self/exe", only = "--only", name = b.name, f(filter);
    char* args[] = {self.data(), only.data(), name.data(), f.data(), nullptr};
    std::fflush(stdout);
    std::fflush(stderr);
    // Our environment, with the benchmark's setting in place of any value of that name.
    std::vector<char*> env;
    std::string extra = b.environment;
    const std::string_view extra_name = std::string_view(extra).substr(0, extra.find('=') + 1);
    for (char** e = environ; *e; ++e)
        if (extra.empty() || !std::string_view(*e).starts_with(extra_name)) env.push_back(*e);
    if (!extra.empty()) env.push_back(extra.data());
    env.push_back(nullptr);
    pid_t pid = 0;
    if (const int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, args, env.data()); rc != 0) {
        std::fprintf(stderr, "libretto_bench: cannot start a process for %s: %s\n", b.name.c_str(), std::strerror(rc));
        return false;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            std::fprintf(stderr, "libretto_bench: waiting for %s: %s\n", b.name.c_str(), std::strerror(errno));
            return false;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    if (WIFSIGNALED(status))
        std::fprintf(stderr, "libretto_bench: %s was killed by signal %d\n", b.name.c_str(), WTERMSIG(status));
    return false;
}

} // namespace

LIBRETTO_BENCHMARK(bench_harness_overhead, "bench_harness_overhead_ns");

int main(int argc, char** argv) {
    const auto& all = libretto_bench::registry();
    // The child side of run_isolated: one benchmark, in this process.
    if (argc == 4 && std::string_view(argv[1]) == "--only") {
        for (const auto& b : all)
            if (b.name == argv[2]) {
                if (const auto eq = b.environment.find('='); eq != std::string::npos) {
                    const char* v = std::getenv(b.environment.substr(0, eq).c_str());
                    if (!v || b.environment.substr(eq + 1) != v)
                        std::fprintf(stderr, "libretto_bench: %s is meant to run with %s (run it without --only)\n",
                                     b.name.c_str(), b.environment.c_str());
                }
                libretto_bench::reporter reporter(argv[3]);
                return run_here(b, reporter) ? 0 : 1;
            }
        std::fprintf(stderr, "libretto_bench: no benchmark named %s\n", argv[2]);
        return 2;
    }
    std::string_view filter;
    if (argc > 2) {
        std::fprintf(stderr, "usage: %s [FILTER | --list]\n", argv[0]);
        return 2;
    }
    if (argc == 2)
        filter = argv[1];

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

    int ran = 0;
    int failed = 0;
    for (const auto& b : all) {
        if (!b.matches(filter))
            continue;
        ++ran;
        if (!run_isolated(b, filter)) ++failed;
    }
    if (ran == 0) {
        std::fprintf(stderr, "libretto_bench: no benchmark declares a metric containing \"%.*s\" (try --list)\n",
                     static_cast<int>(filter.size()), filter.data());
        return 2;
    }
    return failed == 0 ? 0 : 1;
}
