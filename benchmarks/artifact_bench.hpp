// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The artifact-service benchmarks (issue 36; docs/artifacts.md), written once for every back
// end: artifact_bench.cpp (files), artifact_sqlite_bench.cpp (SQLite). Both time the
// synchronous core on blobs of 1 MB (1,000,000 random bytes each, made before any timing),
// each saved under a name of its own in one session (version 0):
//
//   artifact_save_<backend>_mb_s   artifact_save from an artifact_source that copies out of
//                                  the blob in memory
//   artifact_load_<backend>_mb_s   artifact_load of the latest version into an artifact_sink
//                                  that only counts the bytes, every blob saved (untimed) and
//                                  loaded once (untimed) before: a warm page cache
//
// Each call is timed on its own, after untimed warm-up calls. The figure is the throughput
// over all timed calls (their bytes over the sum of their times), not 1 MB over the median
// call as the session-index benchmarks would take it: every 4th SQLite save runs the WAL
// checkpoint and takes ten times as long, and a rate of bytes has to count it. The
// distribution, the calls over 4x the median and the MB/s at the median go to stderr.
#ifndef LIBRETTO_BENCHMARKS_ARTIFACT_BENCH_HPP
#define LIBRETTO_BENCHMARKS_ARTIFACT_BENCH_HPP

#include "harness.hpp"

#include <libretto/store/artifact_service.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace artifact_bench {

using namespace libretto;
using clock_type = std::chrono::steady_clock;

/// Bytes per blob: 1 MB.
inline constexpr std::size_t blob_bytes = 1'000'000;
inline const std::string app = "bench";

using libretto_bench::scratch;

/// `n` blobs of 1 MB of random bytes (the same on every run).
inline std::vector<std::string> make_blobs(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> v(n);
    for (auto& b : v) {
        b.resize(blob_bytes);
        for (std::size_t at = 0; at < blob_bytes; at += 8) {
            const std::uint64_t x = rng();
            std::memcpy(b.data() + at, &x, std::min<std::size_t>(8, blob_bytes - at));
        }
    }
    return v;
}

/// The i-th blob's key: one session, a name of its own.
inline artifact_key key_of(std::size_t i) {
    return artifact_key(app, "user-1", "session-1", "blob-" + std::to_string(i) + ".bin");
}

/// Throws with what the service said.
inline void check(boost::system::error_code ec, const char* doing, const diagnostics& said) {
    if (ec) throw std::runtime_error(std::string(doing) + ": " + ec.message() + " (" + said.message() + ")");
}

/// An artifact_source over `blob`: hands out as much as asked until its end.
inline artifact_source source_of(std::string_view blob) {
    return [blob, at = std::size_t{0}](char* buf, std::size_t n) mutable {
        n = std::min(n, blob.size() - at);
        std::memcpy(buf, blob.data() + at, n);
        at += n;
        return n;
    };
}

/// Seconds per call, one reading of the clock around each.
struct timings {
    std::vector<double> s;

    double median() {
        std::sort(s.begin(), s.end());
        return s[s.size() / 2];
    }
    /// MB/s at the median call.
    double median_mb_s() { return static_cast<double>(blob_bytes) / 1e6 / median(); }
    /// MB/s over all calls: their bytes over the sum of their times.
    double mb_s() const {
        double sum = 0;
        for (double x : s) sum += x;
        return static_cast<double>(s.size() * blob_bytes) / 1e6 / sum;
    }

    /// Prints the distribution and the throughput over all calls on stderr.
    void describe(const char* what) {
        const double slow_at = 4 * median();
        double sum = 0, slow_sum = 0;
        std::size_t slow = 0;
        for (double x : s) {
            sum += x;
            if (x >= slow_at) {
                ++slow;
                slow_sum += x;
            }
        }
        auto at = [&](double q) {
            return s[std::min(s.size() - 1, static_cast<std::size_t>(q * static_cast<double>(s.size())))] * 1e3;
        };
        std::fprintf(stderr,
                     "%s: %zu calls of 1 MB: median %.3f ms, mean %.3f, min %.3f, p90 %.3f, p99 %.3f, max %.3f; "
                     "%zu over 4x the median (%.1f ms in all); %.1f MB/s over all calls (%.1f MB in %.3f s), "
                     "%.1f MB/s at the median\n",
                     what, s.size(), at(0.5), sum / static_cast<double>(s.size()) * 1e3, s.front() * 1e3, at(0.9),
                     at(0.99), s.back() * 1e3, slow, slow_sum * 1e3, mb_s(),
                     static_cast<double>(s.size() * blob_bytes) / 1e6, sum, median_mb_s());
    }
};

/// Saves blobs[i] under key_of(first + i) for every i; the time of each call when `t` is given.
template <class Service>
void save_all(Service& service, const std::vector<std::string>& blobs, std::size_t first, timings* t) {
    diagnostics said;
    const json::object metadata{{"origin", "bench"}};
    artifact_info info;
    for (std::size_t i = 0; i < blobs.size(); ++i) {
        const artifact_key key = key_of(first + i);
        artifact_source in = source_of(blobs[i]);
        const auto t0 = clock_type::now();
        const auto ec = service.artifact_save(key, in, "application/octet-stream", metadata, info, &said);
        const auto t1 = clock_type::now();
        check(ec, "artifact_save", said);
        if (info.size != blob_bytes || info.version != 0) throw std::runtime_error("artifact_save: wrong info back");
        if (t) t->s.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
}

/// artifact_save_<backend>_mb_s: `warmup` untimed saves, then `samples` timed ones, each of
/// a blob of its own under a name of its own.
template <class Service>
void bench_save(libretto_bench::reporter& r, const char* metric, Service& service, std::size_t warmup,
                std::size_t samples) {
    auto blobs = make_blobs(warmup + samples, 1);
    std::vector<std::string> timed(std::make_move_iterator(blobs.begin() + static_cast<std::ptrdiff_t>(warmup)),
                                   std::make_move_iterator(blobs.end()));
    blobs.resize(warmup);
    save_all(service, blobs, 0, nullptr);
    timings t;
    t.s.reserve(samples);
    save_all(service, timed, warmup, &t);
    t.describe(metric);
    r.report(metric, t.mb_s(), "MB/s");
}

/// artifact_load_<backend>_mb_s: `count` blobs saved (untimed), each loaded once untimed
/// (the page cache and the service's caches warm), then `passes` timed passes over all of
/// them in order. The sink only counts; one blob is loaded again afterwards and compared.
template <class Service>
void bench_load(libretto_bench::reporter& r, const char* metric, Service& service, std::size_t count,
                std::size_t passes) {
    const auto blobs = make_blobs(count, 2);
    save_all(service, blobs, 0, nullptr);
    std::vector<artifact_key> keys;
    for (std::size_t i = 0; i < count; ++i) keys.push_back(key_of(i));
    diagnostics said;
    std::optional<artifact_info> info;
    std::uint64_t bytes = 0;
    artifact_sink counter = [&](std::string_view chunk) { bytes += chunk.size(); };
    auto load = [&](std::size_t i) {
        bytes = 0;
        check(service.artifact_load(keys[i], std::nullopt, counter, info, &said), "artifact_load", said);
        if (!info || info->size != blob_bytes || bytes != blob_bytes)
            throw std::runtime_error("artifact_load: wrong blob back");
    };
    for (std::size_t i = 0; i < count; ++i) load(i);
    timings t;
    t.s.reserve(passes * count);
    for (std::size_t p = 0; p < passes; ++p)
        for (std::size_t i = 0; i < count; ++i) {
            const auto t0 = clock_type::now();
            load(i);
            const auto t1 = clock_type::now();
            t.s.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
    // The bytes themselves, once (untimed).
    std::string back;
    artifact_sink keep = [&](std::string_view chunk) { back.append(chunk); };
    check(service.artifact_load(keys[count / 2], std::nullopt, keep, info, &said), "artifact_load", said);
    if (back != blobs[count / 2]) throw std::runtime_error("artifact_load: the bytes differ from the blob saved");
    t.describe(metric);
    r.report(metric, t.mb_s(), "MB/s");
}

} // namespace artifact_bench

#endif
