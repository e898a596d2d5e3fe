// runner benchmarks: the runner's own cost per turn, and many sessions' turns at once.
#include "harness.hpp"

#include <libretto/agent/llm_agent.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/memory_store.hpp>
#include <libretto/tool/function_tool.hpp>

#include <malloc.h>
#include <time.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace runner_bench {
struct lookup_args {
    int n;
};
BOOST_DESCRIBE_STRUCT(lookup_args, (), (n))
inline int lookup(lookup_args a) { return a.n * 10; }
} // namespace runner_bench

namespace {

namespace asio = boost::asio;
namespace lb = libretto;

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// The reply of a tool_loop_model with `suspend`: after one pass through the event loop, as
/// a reply from the network would come.
asio::awaitable<void> reply_later(std::vector<lb::llm_chunk> chunks, lb::llm_writer out) {
    auto ex = out.get_executor();
    auto pass = asio::post(ex, asio::use_awaitable); // named: g++ 12
    co_await std::move(pass);
    for (auto& c : chunks) {
        auto emit = out.emit(std::move(c));
        co_await std::move(emit);
    }
}

/// A model for many concurrent turns: asks for `lookup` until the request holds two tool
/// results, then answers. Records nothing (scripted_model keeps every request). With
/// `suspend`, each reply arrives after a pass through the event loop (concurrent_io_*).
struct tool_loop_model {
    asio::any_io_executor ex;
    bool suspend = false;
    std::string_view name() const { return "bench-model"; }
    asio::any_io_executor get_executor() const { return ex; }
    lb::llm_stream generate(lb::llm_request req) {
        std::size_t results = 0;
        for (const auto& m : req.messages) results += m.tool_responses().size();
        lb::llm_chunk c;
        if (results < 2) {
            lb::tool_call_delta d;
            d.index = 0;
            d.id = "call_" + std::to_string(results + 1);
            d.name = "lookup";
            d.arguments = "{\"n\":" + std::to_string(results + 1) + "}";
            c.tool_calls.push_back(std::move(d));
        } else {
            c.text = "The total is 30.";
        }
        c.usage = lb::usage{300, 12, "bench-model"};
        lb::llm_response_accumulator acc;
        acc.add(c);
        std::vector<lb::llm_chunk> chunks;
        chunks.reserve(2);
        chunks.push_back(std::move(c));
        chunks.push_back(lb::llm_chunk::last(std::move(acc).finish()));
        lb::stream_options so;
        so.capacity = 1;
        if (suspend)
            return lb::llm_stream(
                ex, [chunks = std::move(chunks)](lb::llm_writer out) mutable { return reply_later(std::move(chunks), std::move(out)); },
                so);
        return lb::make_stream(ex, std::move(chunks), so);
    }
};
static_assert(lb::model<tool_loop_model>);

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

/// How a benchmark takes a turn's events: run_shared (the stored events themselves, no
/// copy: what a server that only reads and forwards them uses) or run (a copy of each).
enum class yield_mode { shared, copies };

/// Runs one turn to its end; returns the number of events yielded.
template <yield_mode Mode, class Runner>
asio::awaitable<std::size_t> drive(Runner& r, lb::run_options o, std::string text) {
    auto turn = [&] {
        if constexpr (Mode == yield_mode::shared) return r.run_shared(std::move(o), std::move(text));
        else return r.run(std::move(o), std::move(text));
    }();
    std::size_t n = 0;
    for (;;) {
        auto next = turn.next();
        auto ev = co_await std::move(next);
        if (!ev) break;
        ++n;
    }
    co_return n;
}

// runner_turn_overhead_us: one turn of an llm_agent on scripted_model answering in one
// reply (one partial, one final event; no tools), on memory_store: lock, load the session,
// store the user message, build the context, run the agent (request built from the
// history, model stream, partial and final event), store and yield. Sessions are short (a
// new session every 10 turns: the load copies at most 19 events). The scripted model keeps
// no request (keep_requests(0): recording them is the test double's cost, not the
// runner's); a fresh model/agent/runner serves each batch of 1,000 turns (built outside
// the timed loop). runner_only_turn_us: the same with a trivial agent instead
// (one_reply_agent: one final event, no model): the runner's own share.
// CPU time per turn (this thread) goes to stderr: wall time depends on the machine's load.
template <yield_mode Mode, class Runner>
asio::awaitable<void> timed_turns(Runner* rn, int first, int count, double* wall, double* cpu) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    for (int i = first; i < first + count; ++i) {
        lb::run_options o;
        o.app = "bench";
        o.user = "u";
        o.session = "s" + std::to_string(i / 10);
        auto turn = drive<Mode>(*rn, std::move(o), "What is the weather in Oslo?");
        std::size_t n = co_await std::move(turn);
        if (n == 0) std::fprintf(stderr, "runner bench: no events\n");
    }
    *wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    *cpu += thread_cpu_seconds() - c0;
}

/// Wall and CPU microseconds per one-reply llm_agent turn (20 timed batches of 1,000).
template <yield_mode Mode>
std::pair<double, double> llm_turn_us() {
    constexpr int batch = 1'000;
    constexpr int batches = 21; // the first one warms up
    asio::io_context io;
    lb::memory_store store(io.get_executor());
    double wall = 0, cpu = 0, ignored_wall = 0, ignored_cpu = 0;
    for (int b = 0; b < batches; ++b) {
        std::vector<lb::scripted_reply> replies(batch, lb::scripted_reply::text("It is 21 °C and clear in Oslo."));
        lb::scripted_model model(io.get_executor(), std::move(replies));
        model.keep_requests(0);
        lb::llm_agent agent{lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model}};
        lb::runner runner{agent, store};
        asio::co_spawn(io,
                       timed_turns<Mode>(&runner, b * batch, batch, b ? &wall : &ignored_wall, b ? &cpu : &ignored_cpu),
                       asio::detached);
        io.run();
        io.restart();
    }
    const int n = batch * (batches - 1);
    return {wall * 1e6 / n, cpu * 1e6 / n};
}

void bench_runner_turn_overhead(libretto_bench::reporter& r) {
    if (r.wants("runner_turn_overhead_us")) {
        const auto [wall, cpu] = llm_turn_us<yield_mode::shared>();
        r.report("runner_turn_overhead_us", wall, "us");
        std::fprintf(stderr, "runner_turn_overhead_us: %.3f us CPU per turn\n", cpu);
    }
    if (r.wants("runner_turn_copied_us")) {
        const auto [wall, cpu] = llm_turn_us<yield_mode::copies>();
        r.report("runner_turn_copied_us", wall, "us");
        std::fprintf(stderr, "runner_turn_copied_us: %.3f us CPU per turn\n", cpu);
    }
    if (r.wants("runner_only_turn_us")) {
        asio::io_context io;
        lb::memory_store store(io.get_executor());
        one_reply_agent agent;
        lb::runner runner{agent, store};
        double wall = 0, cpu = 0, ignored_wall = 0, ignored_cpu = 0;
        asio::co_spawn(io, timed_turns<yield_mode::shared>(&runner, 0, 2'000, &ignored_wall, &ignored_cpu),
                       asio::detached);
        io.run();
        io.restart();
        constexpr int n = 20'000;
        asio::co_spawn(io, timed_turns<yield_mode::shared>(&runner, 2'000, n, &wall, &cpu), asio::detached);
        io.run();
        r.report("runner_only_turn_us", wall * 1e6 / n, "us");
        std::fprintf(stderr, "runner_only_turn_us: %.3f us CPU per turn\n", cpu * 1e6 / n);
    }
}
LIBRETTO_BENCHMARK(bench_runner_turn_overhead, "runner_turn_overhead_us", "runner_turn_copied_us", "runner_only_turn_us");

long status_kb(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    const std::size_t n = std::char_traits<char>::length(key);
    while (std::getline(f, line))
        if (line.compare(0, n, key) == 0) return std::stol(line.substr(n + 1));
    return -1;
}

// concurrent_turns_s / concurrent_peak_mb: 10,000 sessions, each running one 3-step tool
// turn (an llm_agent on tool_loop_model: lookup, lookup, answer: 6 stored events with the
// user message), all started at once on one io_context thread, on memory_store. Stream
// buffers of 1 (run_options::stream_capacity and llm_agent_options::stream): each buffer
// slot costs an event (~0.6 KB) per turn in flight. turns/s from the first start to the
// last end. Peak memory: VmHWM (reset through /proc/self/clear_refs) minus VmRSS before.
// The scripted model answers at once, and nothing else in such a turn waits: after the
// runner's one pass through the event loop at its start, a turn runs to its end without
// suspending, so the turns barely overlap. concurrent_io_turns_s / concurrent_io_peak_mb:
// the same turns with every model reply arriving after a pass through the event loop, as a
// reply from the network would: all 10,000 turns are then in flight at once, suspended in
// their model calls, and the peak is what 10,000 turns waiting on their models hold.
// concurrent_store_only_mb: the same sessions and events appended straight to a fresh
// memory_store (no runner, no agent): the store's share of the peak (memory_store
// reserves a chunk of 64 events, ~40 KB, per session). concurrent_bare_mb: 10,000
// concurrent one-reply turns of the trivial agent (no model; 2 stored events per session):
// the runner's own in-flight share plus a smaller store share.
template <yield_mode Mode>
struct concurrent_one {
    template <class Runner>
    static asio::awaitable<void> run(Runner* rn, int i, std::size_t* events) {
        lb::run_options o;
        o.app = "bench";
        o.user = "u" + std::to_string(i % 100);
        o.session = "s" + std::to_string(i);
        o.stream_capacity = 1;
        auto turn = drive<Mode>(*rn, std::move(o), "Add up the lookups.");
        *events += co_await std::move(turn);
    }
};

asio::awaitable<void> store_only(lb::memory_store* st, int i) {
    lb::create_options co;
    co.app_name = "bench";
    co.user_id = "u" + std::to_string(i % 100);
    co.session_id = "s" + std::to_string(i);
    auto create = st->async_create(std::move(co), asio::use_awaitable);
    lb::session s = co_await std::move(create);
    for (int k = 0; k < 6; ++k) {
        lb::event e = lb::event::make(k % 2 ? lb::event_type::agent_message : lb::event_type::tool_response, "assistant",
                                      lb::content::from_text("The total is 30."));
        auto append = st->async_append(s, std::move(e), asio::use_awaitable);
        co_await std::move(append);
    }
}

/// The 10,000 concurrent 3-step tool turns; `suspend`: every model reply arrives after a
/// pass through the event loop.
template <yield_mode Mode>
void concurrent_tool_turns(libretto_bench::reporter& r, bool suspend, const char* turns_metric, const char* peak_metric) {
    constexpr int sessions = 10'000;
    if (!r.wants(turns_metric) && !r.wants(peak_metric)) return;
    asio::io_context io;
    lb::memory_store store(io.get_executor());
    tool_loop_model model{io.get_executor(), suspend};
    lb::stream_options agent_stream;
    agent_stream.capacity = 1;
    lb::llm_agent agent{lb::llm_agent_options<tool_loop_model>{
        .name = "assistant",
        .model = model,
        .tools = lb::tools(lb::function_tool("lookup", "Looks a number up", runner_bench::lookup)),
        .stream = agent_stream,
    }};
    lb::runner runner{agent, store};
    std::size_t events = 0;
    { std::ofstream("/proc/self/clear_refs") << "5"; }
    const long rss0 = status_kb("VmRSS:");
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    for (int i = 0; i < sessions; ++i) asio::co_spawn(io, concurrent_one<Mode>::run(&runner, i, &events), asio::detached);
    const std::size_t handlers = io.run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = thread_cpu_seconds() - c0;
    const long peak = status_kb("VmHWM:");
    if (events < sessions * 5u) std::fprintf(stderr, "%s: only %zu events\n", turns_metric, events);
    r.report(turns_metric, sessions / seconds, "turns/s");
    r.report(peak_metric, (peak - rss0) / 1024.0, "MB");
    std::fprintf(stderr, "%s: %.0f turns per CPU second (%zu events yielded, %.1f handlers run per turn)\n", turns_metric,
                 sessions / cpu, events, static_cast<double>(handlers) / sessions);
}

void bench_concurrent_turns(libretto_bench::reporter& r) {
    constexpr int sessions = 10'000;
    if (r.wants("concurrent_store_only_mb")) {
        {
            asio::io_context io;
            lb::memory_store store(io.get_executor());
            { std::ofstream("/proc/self/clear_refs") << "5"; }
            const long rss0 = status_kb("VmRSS:");
            for (int i = 0; i < sessions; ++i) asio::co_spawn(io, store_only(&store, i), asio::detached);
            io.run();
            r.report("concurrent_store_only_mb", (status_kb("VmHWM:") - rss0) / 1024.0, "MB");
        }
        malloc_trim(0);
    }
    if (r.wants("concurrent_bare_mb")) {
        {
            asio::io_context io;
            lb::memory_store store(io.get_executor());
            one_reply_agent agent;
            lb::runner runner{agent, store};
            std::size_t events = 0;
            { std::ofstream("/proc/self/clear_refs") << "5"; }
            const long rss0 = status_kb("VmRSS:");
            for (int i = 0; i < sessions; ++i)
                asio::co_spawn(io, concurrent_one<yield_mode::shared>::run(&runner, i, &events), asio::detached);
            io.run();
            r.report("concurrent_bare_mb", (status_kb("VmHWM:") - rss0) / 1024.0, "MB");
        }
        malloc_trim(0);
    }
    concurrent_tool_turns<yield_mode::shared>(r, false, "concurrent_turns_s", "concurrent_peak_mb");
    malloc_trim(0);
    concurrent_tool_turns<yield_mode::copies>(r, false, "concurrent_turns_copied_s", "concurrent_copied_peak_mb");
    malloc_trim(0);
    concurrent_tool_turns<yield_mode::shared>(r, true, "concurrent_io_turns_s", "concurrent_io_peak_mb");
}
LIBRETTO_BENCHMARK(bench_concurrent_turns, "concurrent_turns_s", "concurrent_peak_mb", "concurrent_store_only_mb",
                   "concurrent_bare_mb", "concurrent_turns_copied_s", "concurrent_copied_peak_mb", "concurrent_io_turns_s",
                   "concurrent_io_peak_mb");

} // namespace
