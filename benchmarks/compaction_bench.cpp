// Compaction planning benchmarks.
#include "event_mix.hpp"
#include "harness.hpp"

#include <libretto/compaction/token_budget.hpp>
#include <libretto/event/context_view_builder.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/session/session.hpp>

#include <cstdio>

namespace {

using namespace libretto;
using libretto_bench::best_seconds;
using libretto_bench::make_mix;

// A 100,000-event session as token_budget leaves it: rolling summaries whenever the raw
// tail outgrew the budget (one every 2,000 events, each keeping the newest 200 raw), then
// 2,000 raw events since the newest summary — over the budget again (the newest reply
// reports 200,000 input tokens). The whole session is in memory (memory_store, or a
// runner that kept it), so plan() has to find the newest summary, walk back the kept
// tail and check the obligations of the raw events before the cut.
session compacted_session() {
    session s;
    auto mix = make_mix(100'000);
    s.events.reserve(mix.size() + 60);
    std::int64_t seq = 0, covered_from = 1;
    for (std::size_t i = 0; i < mix.size(); ++i) {
        mix[i].sequence = ++seq;
        s.events.push_back(std::move(mix[i]));
        if ((i + 1) % 2000 == 0 && i + 1 < mix.size()) {
            event c = event::make(event_type::agent_message, "assistant");
            c.sequence = ++seq;
            c.actions.compaction = event_compaction{covered_from, seq - 201, 0, 0, "rolling summary", seq - 201};
            s.events.push_back(std::move(c));
        }
    }
    s.events.modify_back().usage = usage{200'000, 500, "m"};
    return s;
}

void bench_compaction_plan(libretto_bench::reporter& r) {
    const token_budget tb{.context_window = 128'000, .reserve_tokens = 16'384, .keep_recent_tokens = 20'000};
    {
        const session s = compacted_session();
        const session_view v{s};
        std::optional<compaction_plan> p;
        double t = best_seconds(9, [&] {
            p = tb.plan(v);
            libretto_bench::do_not_optimize(p);
        });
        if (!p) std::fprintf(stderr, "compaction_plan_100k_ms: no plan (the workload is wrong)\n");
        r.report("compaction_plan_100k_ms", t * 1e3, "ms");
    }
    // The worst case, for comparison: 100,000 events never compacted (compaction was off),
    // so the obligations walk covers everything before the kept tail.
    if (r.wants("compaction_plan_100k_uncompacted_ms")) {
        session s;
        auto mix = make_mix(100'000);
        for (std::size_t i = 0; i < mix.size(); ++i) mix[i].sequence = static_cast<std::int64_t>(i) + 1;
        mix.back().usage = usage{200'000, 500, "m"};
        s.events = std::move(mix);
        const session_view v{s};
        std::optional<compaction_plan> p;
        double t = best_seconds(9, [&] {
            p = tb.plan(v);
            libretto_bench::do_not_optimize(p);
        });
        if (!p) std::fprintf(stderr, "compaction_plan_100k_uncompacted_ms: no plan\n");
        r.report("compaction_plan_100k_uncompacted_ms", t * 1e3, "ms");
    }
}
LIBRETTO_BENCHMARK(bench_compaction_plan, "compaction_plan_100k_ms", "compaction_plan_100k_uncompacted_ms");

// The incremental view after a compaction: a builder that has followed a 100,000-event
// session (never compacted) takes a compaction event covering all but the newest 200 events,
// then the model's view is built from what it shows. Timed: the sync of that one event and
// make_context_view's steps over the shown items (the summary and the 200-event tail).
// Each repetition starts from a fresh copy of the builder (its copy is not timed).
void bench_context_view_after_compaction(libretto_bench::reporter& r) {
    std::vector<event> events = make_mix(100'000);
    for (std::size_t i = 0; i < events.size(); ++i) events[i].sequence = static_cast<std::int64_t>(i) + 1;
    events.reserve(events.size() + 1);
    context_view_builder before;
    before.sync(events);
    event c = event::make(event_type::agent_message, "compaction");
    c.sequence = static_cast<std::int64_t>(events.size()) + 1;
    c.actions.compaction = event_compaction{1, static_cast<std::int64_t>(events.size()) - 200, 0, 0, "rolling summary",
                                            static_cast<std::int64_t>(events.size()) - 200};
    events.push_back(std::move(c));
    std::size_t shown = 0;
    double best = 1e9;
    for (int rep = 0; rep < 15; ++rep) {
        context_view_builder b = before; // not timed
        const auto t0 = libretto_bench::clock_type::now();
        b.sync(events);
        context_view v = repair_tool_pairs(filter_events(apply_compaction(b.items(events))));
        const auto t1 = libretto_bench::clock_type::now();
        shown = v.size();
        libretto_bench::do_not_optimize(v);
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    if (shown < 150 || shown > 202) std::fprintf(stderr, "context_view_after_compaction_100k_us: %zu shown\n", shown);
    r.report("context_view_after_compaction_100k_us", best * 1e6, "us");
}
LIBRETTO_BENCHMARK(bench_context_view_after_compaction, "context_view_after_compaction_100k_us");

} // namespace
