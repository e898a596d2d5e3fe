// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// What the rewind benchmarks time (rewind_bench.cpp: memory and JSONL stores;
// rewind_sqlite_bench.cpp: SQLite): async_rewind_session on a 10,000-event session, as a
// user's "edit that message" does it: read the session whole (with its creation state),
// find the invocation, fold every earlier delta, append one rewind event.
//
// The session: 2,500 turns of four events (question, tool call, tool response with a state
// delta, answer), ~200 bytes of text each. Each timed rewind goes to an invocation 40 turns
// earlier than the previous one (so each is valid: it undoes the previous rewind with the
// rest); the median of 20 is reported, min and max on stderr.
#ifndef LIBRETTO_BENCHMARKS_REWIND_BENCH_HPP
#define LIBRETTO_BENCHMARKS_REWIND_BENCH_HPP

#include "harness.hpp"

#include <libretto/runner/rewind.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace rewind_bench {

namespace asio = boost::asio;
using namespace libretto;
using clock_type = std::chrono::steady_clock;

inline constexpr int turns = 2'500; // x4 = 10,000 events
inline constexpr int samples = 20;

template <class F>
void run(F f) {
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, f(io.get_executor()), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

inline std::vector<event> turn_events(int t) {
    const std::string inv = "turn-" + std::to_string(t);
    const std::string filler = " The shipment left the warehouse on Tuesday and should arrive within three days.";
    std::vector<event> out;
    event q = event::make(event_type::user_message, "user", content::from_text("Question " + std::to_string(t) + filler));
    event c = event::make(event_type::agent_message, "assistant");
    c.content.parts.emplace_back(tool_call_part{"call-" + std::to_string(t), "lookup", {{"order", t}}});
    event r = event::make(event_type::tool_response, "assistant");
    r.content.parts.emplace_back(tool_response_part{"call-" + std::to_string(t), "lookup", json::value("ok" + filler)});
    r.actions.state_delta["last_order"] = t;
    r.actions.state_delta["order:" + std::to_string(t % 50)] = t;
    event a = event::make(event_type::agent_message, "assistant", content::from_text("Answer " + std::to_string(t) + filler));
    for (event* e : {&q, &c, &r, &a}) {
        e->invocation_id = inv;
        out.push_back(std::move(*e));
    }
    return out;
}

template <class Store>
asio::awaitable<void> fill(Store& store) {
    auto create = store.async_create(create_options("bench", "u1", "s1", {{"plan", "free"}, {"last_order", 0}}),
                                     asio::use_awaitable);
    session s = co_await std::move(create);
    for (int t = 0; t < turns; ++t) {
        for (event& e : turn_events(t)) {
            auto op = store.async_append(s, std::move(e), asio::use_awaitable);
            co_await std::move(op);
        }
    }
}

template <class Store>
asio::awaitable<void> time_rewinds(Store& store, std::vector<double>& ms) {
    for (int i = 0; i < samples; ++i) {
        const int target = turns - 1 - 40 * i;
        const auto t0 = clock_type::now();
        auto op = async_rewind_session(store, session_key("bench", "u1", "s1"), "turn-" + std::to_string(target),
                                       rewind_options{}, asio::use_awaitable);
        rewind_result r = co_await std::move(op);
        ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        if (r.rewind.actions.state_delta.empty()) std::fprintf(stderr, "rewind: an empty state delta\n");
    }
}

inline void report_median(libretto_bench::reporter& r, const char* metric, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    std::fprintf(stderr, "%s: min %.3f median %.3f max %.3f ms over %zu rewinds\n", metric, ms.front(), ms[ms.size() / 2],
                 ms.back(), ms.size());
    r.report(metric, ms[ms.size() / 2], "ms");
}

} // namespace rewind_bench

#endif
