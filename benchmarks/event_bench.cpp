// Event model benchmarks: JSON encode/decode throughput and context-view construction.
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

// A realistic mix, in the proportions of an agent transcript: a user message, a reply
// with a tool call (arguments, usage), its tool response (a JSON result), a final answer.
std::vector<event> make_mix(std::size_t n) {
    std::vector<event> out;
    out.reserve(n);
    const std::string para =
        "The quarterly report for ACME-4471 shows revenue of 12.4M USD, up 8% on the previous quarter; "
        "see /reports/2026/q3.pdf for details. ";
    for (std::size_t i = 0; out.size() < n; ++i) {
        const std::string inv = "inv-" + std::to_string(i);
        event u = event::make(event_type::user_message, "user", content::from_text("Summarise order #" + std::to_string(i) + ". " + para));
        u.invocation_id = inv;
        u.session_id = "session-42";
        out.push_back(std::move(u));
        if (out.size() == n) break;

        event c = event::make(event_type::agent_message, "assistant");
        c.invocation_id = inv;
        c.session_id = "session-42";
        c.branch = "assistant";
        c.content.parts.emplace_back(thinking_part{"I should look the order up first.", {}});
        json::object args;
        args["order_id"] = static_cast<std::int64_t>(i);
        args["fields"] = json::array{"status", "items", "total"};
        c.content.parts.emplace_back(tool_call_part{"call_" + std::to_string(i), "lookup_order", std::move(args), {}});
        c.usage = usage{1200 + static_cast<std::int64_t>(i % 300), 40, "gpt-4.1-2026-04"};
        out.push_back(std::move(c));
        if (out.size() == n) break;

        event r = event::make(event_type::tool_response, "assistant");
        r.invocation_id = inv;
        r.session_id = "session-42";
        r.branch = "assistant";
        json::object result;
        result["status"] = "shipped";
        result["items"] = json::array{json::object{{"sku", "A-1"}, {"qty", 2}, {"price", 19.99}},
                                      json::object{{"sku", "B-7"}, {"qty", 1}, {"price", 249.0}}};
        result["total"] = 288.98;
        r.content.parts.emplace_back(tool_response_part{"call_" + std::to_string(i), "lookup_order", std::move(result), {}, {}});
        r.actions.state_delta["last_order"] = static_cast<std::int64_t>(i);
        out.push_back(std::move(r));
        if (out.size() == n) break;

        event f = event::make(event_type::agent_message, "assistant", content::from_text("Order " + std::to_string(i) + " has shipped. " + para + para));
        f.invocation_id = inv;
        f.session_id = "session-42";
        f.branch = "assistant";
        f.usage = usage{1500, 180, "gpt-4.1-2026-04"};
        out.push_back(std::move(f));
    }
    return out;
}

template <class F>
double best_seconds(int runs, F&& f) {
    double best = 1e300;
    for (int i = 0; i < runs; ++i) {
        auto t0 = clock_type::now();
        f();
        best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count());
    }
    return best;
}

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
