// Event model benchmarks: JSON encode/decode throughput and context-view construction.
#include "event_mix.hpp"
#include "harness.hpp"

#include <libretto/event/filters.hpp>
#include <libretto/event/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace libretto;
using clock_type = std::chrono::steady_clock;

using libretto_bench::best_seconds;
using libretto_bench::make_mix;


void bench_event_codec(libretto_bench::reporter& r) {
    const auto events = make_mix(20'000);
    std::vector<std::string> lines(events.size());
    std::size_t bytes = 0;
    double enc = best_seconds(5, [&] {
        bytes = 0;
        for (std::size_t i = 0; i < events.size(); ++i) {
            lines[i] = serialize_event(events[i]);
            bytes += lines[i].size();
        }
    });
    r.report("event_encode_mb_s", static_cast<double>(bytes) / 1e6 / enc, "MB/s");

    std::size_t ok = 0;
    double dec = best_seconds(5, [&] {
        ok = 0;
        for (const auto& l : lines) {
            auto res = parse_event(l);
            ok += res.has_value();
            libretto_bench::do_not_optimize(res);
        }
    });
    if (ok != lines.size()) std::fprintf(stderr, "decode failed for %zu events\n", lines.size() - ok);
    r.report("event_decode_mb_s", static_cast<double>(bytes) / 1e6 / dec, "MB/s");
}
LIBRETTO_BENCHMARK(bench_event_codec, "event_encode_mb_s", "event_decode_mb_s");

void bench_context_view(libretto_bench::reporter& r) {
    // 100,000 stored events (sequences 1..N) with 10 summaries spread through the session;
    // each summary covers the events since the previous one (a rolling history).
    constexpr std::size_t n = 100'000;
    auto mix = make_mix(n - 10);
    std::vector<event> session;
    session.reserve(n);
    std::int64_t seq = 0;
    std::int64_t covered = 0;
    const std::size_t step = mix.size() / 10;
    for (std::size_t i = 0; i < mix.size(); ++i) {
        mix[i].sequence = ++seq;
        session.push_back(std::move(mix[i]));
        if ((i + 1) % step == 0 && session.size() < n) {
            event c = event::make(event_type::agent_message, "assistant");
            c.sequence = ++seq;
            c.actions.compaction = event_compaction{covered + 1, seq - 1 - 200, 0, 0, "summary", seq - 201 - covered};
            covered = seq - 1 - 200;
            session.push_back(std::move(c));
        }
    }
    std::size_t shown = 0;
    double t = best_seconds(7, [&] {
        auto v = make_context_view(session);
        shown = v.size();
        libretto_bench::do_not_optimize(v);
    });
    if (shown == 0) std::fprintf(stderr, "context view is empty\n");
    r.report("context_view_100k_ms", t * 1e3, "ms");

    // The worst case, for comparison: the same session without any summary, so every
    // step walks all 100,000 events.
    if (r.wants("context_view_100k_uncompacted_ms")) {
        std::erase_if(session, [](const event& e) { return e.is_compaction(); });
        double u = best_seconds(7, [&] {
            auto v = make_context_view(session);
            libretto_bench::do_not_optimize(v);
        });
        r.report("context_view_100k_uncompacted_ms", u * 1e3, "ms");
    }
}
LIBRETTO_BENCHMARK(bench_context_view, "context_view_100k_ms", "context_view_100k_uncompacted_ms");

} // namespace
