// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// A tiny benchmark harness. Every benchmarks/*.cpp is linked into one binary, libretto_bench.
//
//   static void bench_json(libretto_bench::reporter& r) {
//       auto ns = libretto_bench::ns_per_op([&] { /* one operation */ });
//       r.report("json_parse_ns", ns, "ns");
//   }
//   LIBRETTO_BENCHMARK(bench_json, "json_parse_ns");   // declare every metric it reports
//
// `libretto_bench FILTER` runs a benchmark only if one of its declared metrics contains FILTER
// (a plain substring; no argument runs everything) and prints only the matching metric lines,
// each exactly `metric value unit`.
#ifndef LIBRETTO_BENCHMARKS_HARNESS_HPP
#define LIBRETTO_BENCHMARKS_HARNESS_HPP

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <unistd.h>

namespace libretto_bench {

/// Prints metric lines, `metric value unit`, for the metrics that match the run's filter.
class reporter {
public:
    explicit reporter(std::string_view filter = {}, std::FILE* out = stdout) : filter_(filter), out_(out) {}

    /// True if `metric` would be printed (contains the filter). Use it to skip expensive work.
    bool wants(std::string_view metric) const noexcept {
        return metric.find(filter_) != std::string_view::npos;
    }

    /// Prints `metric value unit` if the metric matches the filter. Values with magnitude >= 1
    /// are printed with %.3f, smaller ones with %.6g (so 0.00042 stays readable).
    void report(std::string_view metric, double value, std::string_view unit) {
        if (!wants(metric))
            return;
        const char* format = (std::fabs(value) >= 1.0 || value == 0.0) ? "%.*s %.3f %.*s\n" : "%.*s %.6g %.*s\n";
        std::fprintf(out_, format, static_cast<int>(metric.size()), metric.data(), value,
                     static_cast<int>(unit.size()), unit.data());
        std::fflush(out_);
        ++reported_;
    }

    std::string_view filter() const noexcept { return filter_; }
    std::size_t reported() const noexcept { return reported_; }

private:
    std::string filter_;
    std::FILE* out_;
    std::size_t reported_ = 0;
};

using benchmark_fn = void (*)(reporter&);

struct benchmark {
    std::string name;                 ///< the function's name, as written in LIBRETTO_BENCHMARK
    std::vector<std::string> metrics; ///< every metric the function may report
    benchmark_fn fn;
    /// "NAME=value" set in the environment of the benchmark's process (a setting of the
    /// process, such as a glibc tunable, that must be in place before main); empty: none.
    std::string environment{};

    bool matches(std::string_view filter) const {
        for (const auto& m : metrics)
            if (m.find(filter) != std::string::npos)
                return true;
        return false;
    }
};

/// All registered benchmarks, in registration order (which across files is unspecified).
inline std::vector<benchmark>& registry() {
    static std::vector<benchmark> all;
    return all;
}

struct registrar {
    registrar(const char* name, benchmark_fn fn, std::initializer_list<const char*> metrics,
              const char* environment = "") {
        benchmark b{name, {}, fn, environment};
        for (const char* m : metrics)
            b.metrics.emplace_back(m);
        registry().push_back(std::move(b));
    }
};

/// A scratch directory in the temporary directory (libretto-bench-NAME-PID), created empty
/// and removed with everything in it afterwards.
struct scratch {
    std::filesystem::path path;
    explicit scratch(const char* name) {
        path = std::filesystem::temp_directory_path() /
               ("libretto-bench-" + std::string(name) + "-" + std::to_string(::getpid()));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    scratch(const scratch&) = delete;
    scratch& operator=(const scratch&) = delete;
    ~scratch() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

/// Keeps the compiler from optimising away `value` (or the computation producing it).
template <class T>
inline void do_not_optimize(T const& value) {
#if defined(__GNUC__) || defined(__clang__)
    asm volatile("" : : "r,m"(value) : "memory");
#else
    static volatile const void* sink;
    sink = &value;
#endif
}

/// Runs `op` repeatedly (doubling the batch) until a batch takes at least `min_time`, and
/// returns the mean nanoseconds per call of the last batch.
template <class Op>
double ns_per_op(Op&& op, std::chrono::nanoseconds min_time = std::chrono::milliseconds(200)) {
    using clock = std::chrono::steady_clock;
    for (std::uint64_t n = 1;; n *= 2) {
        const auto start = clock::now();
        for (std::uint64_t i = 0; i < n; ++i)
            op();
        const auto elapsed = clock::now() - start;
        if (elapsed >= min_time || n >= (std::uint64_t{1} << 40))
            return std::chrono::duration<double, std::nano>(elapsed).count() / static_cast<double>(n);
    }
}

} // namespace libretto_bench

#define LIBRETTO_BENCH_CONCAT_IMPL(a, b) a##b
#define LIBRETTO_BENCH_CONCAT(a, b) LIBRETTO_BENCH_CONCAT_IMPL(a, b)

/// LIBRETTO_BENCHMARK(fn, "metric_a", "metric_b", ...): registers `void fn(libretto_bench::reporter&)`
/// and declares the metric names it reports (at least one). Use at namespace scope in a .cpp.
#define LIBRETTO_BENCHMARK(fn, ...)                                                                \
    static const ::libretto_bench::registrar LIBRETTO_BENCH_CONCAT(libretto_bench_registrar_, fn){ \
        #fn, &fn, {__VA_ARGS__}}

/// LIBRETTO_BENCHMARK_ENV(fn, "NAME=value", "metric", ...): LIBRETTO_BENCHMARK, with NAME set to
/// value in the environment of the benchmark's process (replacing NAME if it is set).
#define LIBRETTO_BENCHMARK_ENV(fn, env, ...)                                                       \
    static const ::libretto_bench::registrar LIBRETTO_BENCH_CONCAT(libretto_bench_registrar_, fn){ \
        #fn, &fn, {__VA_ARGS__}, env}

#endif
