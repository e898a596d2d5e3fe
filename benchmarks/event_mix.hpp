// Workloads shared by the benchmarks: a realistic event mix, and best-of-N timing.
#ifndef LIBRETTO_BENCHMARKS_EVENT_MIX_HPP
#define LIBRETTO_BENCHMARKS_EVENT_MIX_HPP

#include <libretto/event/event.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace libretto_bench {

using namespace libretto;
using clock_type = std::chrono::steady_clock;

// A realistic mix, in the proportions of an agent transcript: a user message, a reply
// with a tool call (arguments, usage), its tool response (a JSON result), a final answer.
inline std::vector<event> make_mix(std::size_t n) {
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

} // namespace libretto_bench

#endif
