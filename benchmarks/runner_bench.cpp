// runner benchmarks: the runner's own cost per turn, and many sessions' turns at once.
#include "harness.hpp"

#include <libretto/runner.hpp>
#include <libretto/session/memory_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;

lb::event reply_event(const lb::invocation_context& ctx, std::string_view author, lb::content c,
                      lb::event_type t = lb::event_type::agent_message) {
    lb::event e = lb::event::make(t, std::string(author), std::move(c));
    e.invocation_id = ctx.invocation_id();
    e.branch = ctx.branch();
    return e;
}

struct bench_leaf {
    std::string_view name() const { return "assistant"; }
    std::string_view description() const { return "benchmark agent"; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
};

/// A trivial agent: one final answer, no model.
struct one_reply_agent : bench_leaf {
    lb::event_stream run(lb::invocation_context ctx) const {
        std::vector<lb::event> v;
        v.push_back(reply_event(ctx, name(), lb::content::from_text("It is 21 °C and clear in Oslo.")));
        lb::stream_options so;
        so.capacity = 1;
        return lb::make_stream(ctx.get_executor(), std::move(v), so);
    }
};

/// What a 3-step tool turn yields without a model: call, result, call, result, answer,
/// with a trip through the executor where the tool would run (so turns interleave).
struct tool_turn_agent : bench_leaf {
    static asio::awaitable<void> body(lb::invocation_context ctx, lb::event_writer out) {
        for (int step = 1; step <= 2; ++step) {
            const std::string id = "call_" + std::to_string(step);
            lb::content call;
            call.parts.emplace_back(lb::tool_call_part{id, "lookup", {{"n", step}}, {}});
            lb::event c = reply_event(ctx, "assistant", std::move(call));
            co_await out.emit(std::move(c));
            co_await asio::post(ctx.get_executor(), asio::use_awaitable); // the tool runs
            lb::content result;
            result.parts.emplace_back(lb::tool_response_part{id, "lookup", boost::json::value(step * 10), {}, {}});
            lb::event r = reply_event(ctx, "assistant", std::move(result), lb::event_type::tool_response);
            co_await out.emit(std::move(r));
        }
        lb::event answer = reply_event(ctx, "assistant", lb::content::from_text("The total is 30."));
        co_await out.emit(std::move(answer));
    }
    struct producer {
        lb::invocation_context ctx;
        asio::awaitable<void> operator()(lb::event_writer out) { return body(ctx, std::move(out)); }
    };
    lb::event_stream run(lb::invocation_context ctx) const {
        lb::stream_options so;
        so.capacity = 1;
        auto ex = ctx.get_executor();
        return lb::event_stream(ex, producer{std::move(ctx)}, so);
    }
};

/// Runs one turn to its end; returns the number of events yielded.
template <class Runner>
asio::awaitable<std::size_t> drive(Runner& r, lb::run_options o, std::string text) {
    lb::event_stream turn = r.run(std::move(o), std::move(text));
    std::size_t n = 0;
    for (;;) {
        auto next = turn.next();
        std::optional<lb::event> ev = co_await std::move(next);
        if (!ev) break;
        ++n;
    }
    co_return n;
}

// runner_turn_overhead_us: one turn of a trivial agent (one_reply_agent: one final
// answer, no model) on memory_store: lock, load the session, store the user message,
// build the context, run the agent, store and yield its answer. Sessions are short (a new
// session every 10 turns), so the load copies at most 19 events.
void bench_runner_turn_overhead(libretto_bench::reporter& r) {
    asio::io_context io;
    lb::memory_store store(io.get_executor());
    one_reply_agent agent;
    lb::runner runner{agent, store};
    constexpr int warmup = 2'000;
    constexpr int turns = 50'000;
    double seconds = 0;
    struct loop {
        static asio::awaitable<void> run(decltype(runner)* rn, int warmup, int turns, double* seconds) {
            std::chrono::steady_clock::time_point t0;
            for (int i = 0; i < warmup + turns; ++i) {
                if (i == warmup) t0 = std::chrono::steady_clock::now();
                lb::run_options o;
                o.app = "bench";
                o.user = "u";
                o.session = "s" + std::to_string(i / 10);
                auto turn = drive(*rn, std::move(o), "What is the weather in Oslo?");
                std::size_t n = co_await std::move(turn);
                if (n != 1) std::fprintf(stderr, "runner bench: %zu events\n", n);
            }
            *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
    };
    asio::co_spawn(io, loop::run(&runner, warmup, turns, &seconds), asio::detached);
    io.run();
    r.report("runner_turn_overhead_us", seconds * 1e6 / turns, "us");
}
LIBRETTO_BENCHMARK(bench_runner_turn_overhead, "runner_turn_overhead_us");

long status_kb(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    const std::size_t n = std::char_traits<char>::length(key);
    while (std::getline(f, line))
        if (line.compare(0, n, key) == 0) return std::stol(line.substr(n + 1));
    return -1;
}

// concurrent_turns_s / concurrent_peak_mb: 10,000 sessions, each running one 3-step tool
// turn (tool_turn_agent: call, result, call, result, answer; no model), all started at
// once on one io_context thread, memory_store. turns/s from the first start to the last
// end; peak RSS (VmHWM, reset through /proc/self/clear_refs first) minus the RSS before.
void bench_concurrent_turns(libretto_bench::reporter& r) {
    constexpr int sessions = 10'000;
    asio::io_context io;
    lb::memory_store store(io.get_executor());
    tool_turn_agent agent;
    lb::runner runner{agent, store};
    std::size_t events = 0;
    struct one {
        static asio::awaitable<void> run(decltype(runner)* rn, int i, std::size_t* events) {
            lb::run_options o;
            o.app = "bench";
            o.user = "u" + std::to_string(i % 100);
            o.session = "s" + std::to_string(i);
            o.stream_capacity = 1;
            auto turn = drive(*rn, std::move(o), "Add up the lookups.");
            *events += co_await std::move(turn);
        }
    };
    { std::ofstream("/proc/self/clear_refs") << "5"; }
    const long rss0 = status_kb("VmRSS:");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < sessions; ++i) asio::co_spawn(io, one::run(&runner, i, &events), asio::detached);
    io.run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long peak = status_kb("VmHWM:");
    if (events != sessions * 5u) std::fprintf(stderr, "concurrent bench: %zu events\n", events);
    r.report("concurrent_turns_s", sessions / seconds, "turns/s");
    r.report("concurrent_peak_mb", (peak - rss0) / 1024.0, "MB");
}
LIBRETTO_BENCHMARK(bench_concurrent_turns, "concurrent_turns_s", "concurrent_peak_mb");

} // namespace
