// Session-store benchmarks. Each store has its own section below (its own functions and
// metrics); add a store by adding a section.
#include "harness.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

// =============================================================================================
// jsonl_store
// =============================================================================================

#include <libretto/session/jsonl_store.hpp>

#include <time.h>
#include <unistd.h>

namespace jsonl_bench {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace libretto;
using clock_type = std::chrono::steady_clock;

/// A scratch directory, removed afterwards.
struct scratch {
    fs::path path;
    explicit scratch(const char* name) {
        path = fs::temp_directory_path() / ("libretto-bench-" + std::string(name) + "-" + std::to_string(::getpid()));
        fs::remove_all(path);
    }
    ~scratch() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// CPU seconds of this thread or of the whole process: printed on stderr beside the wall
/// figures, which other work on the machine inflates.
inline double cpu_seconds(clockid_t which) {
    timespec ts{};
    ::clock_gettime(which, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Runs a coroutine to completion on a fresh io_context; rethrows its exception.
template <class F>
void run(F f) {
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, f(io.get_executor()), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

create_options session_opts(std::string id) {
    create_options o;
    o.app_name = "bench";
    o.user_id = "u";
    o.session_id = std::move(id);
    return o;
}

/// The i-th event of an agent transcript: a user message, a reply with a tool call, the
/// tool's response, a final answer (about 430 bytes each as stored).
event transcript_event(std::size_t i) {
    const std::string n = std::to_string(i / 4);
    event e;
    switch (i % 4) {
    case 0:
        e = event::make(event_type::user_message, "user", content::from_text("Where is order #" + n + "? It was due on Tuesday."));
        break;
    case 1: {
        e = event::make(event_type::agent_message, "assistant");
        json::object args;
        args["order_id"] = n;
        e.content.parts.emplace_back(tool_call_part{"call_" + n, "lookup_order", std::move(args), {}});
        e.usage = usage{1200, 40, "model-1"};
        break;
    }
    case 2: {
        e = event::make(event_type::tool_response, "assistant");
        json::object result;
        result["status"] = "shipped";
        result["tracking"] = "ZX-" + n;
        e.content.parts.emplace_back(tool_response_part{"call_" + n, "lookup_order", std::move(result), {}, {}});
        e.actions.state_delta["last_order"] = n;
        break;
    }
    default:
        e = event::make(event_type::agent_message, "assistant",
                        content::from_text("Order " + n + " shipped on Tuesday; tracking number ZX-" + n + "."));
        e.usage = usage{1300, 60, "model-1"};
        break;
    }
    e.invocation_id = "inv-" + n;
    return e;
}

// Appends through the asynchronous API, one co_await per event, as a runner does;
// durability none (no fsync), the store's defaults otherwise.
void bench_jsonl_append(libretto_bench::reporter& r) {
    constexpr int n = 200'000;
    scratch dir("jsonl-append");
    double seconds = 0, cpu = 0;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        jsonl_store_options o;
        o.directory = dir.path;
        o.durability = durability::none;
        jsonl_store store(ex, o);
        auto co = session_opts("s");
        auto c = store.async_create(std::move(co), asio::use_awaitable);
        auto s = co_await std::move(c);
        s.events.reserve(n);
        event proto = event::make(event_type::agent_message, "assistant",
                                  content::from_text("The order shipped on Tuesday; tracking number ZX-1192."));
        proto.usage = usage{1200, 40, "model-1"};
        const auto t0 = clock_type::now();
        const double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < n; ++i) {
            event e = proto;
            auto op = store.async_append(s, std::move(e), asio::use_awaitable);
            co_await std::move(op);
        }
        seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
        cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (s.last_sequence != n) std::fprintf(stderr, "jsonl append: wrong count\n");
    });
    if (r.wants("jsonl_append_events_s"))
        std::fprintf(stderr, "jsonl_append: %d events, %.3f s wall, %.3f s cpu (%.0f events per cpu second)\n", n,
                     seconds, cpu, n / cpu);
    r.report("jsonl_append_events_s", n / seconds, "events/s");
}
LIBRETTO_BENCHMARK(bench_jsonl_append, "jsonl_append_events_s");

// A 100,000-event session with a compaction every 1,000 events; each summarises the
// events after the previous one's range up to 200 events before itself (so a load from
// the newest compaction on reads about 1,200 events). Loads go through async_get on a
// store instance opened for the purpose (nothing of the session in memory yet; the page
// cache is warm), as a runner reopening the session would.
void bench_jsonl_load(libretto_bench::reporter& r) {
    constexpr std::size_t n = 100'000;
    scratch dir("jsonl-load");
    jsonl_store_options o;
    o.directory = dir.path;
    o.durability = durability::none;
    const session_key key{"bench", "u", "long"};
    {
        asio::io_context io;
        jsonl_store store(io.get_executor(), o);
        session s;
        if (store.create(session_opts(key.session_id), s)) throw std::runtime_error("create failed");
        std::int64_t covered = 0, seq = 0;
        for (std::size_t i = 0; s.last_sequence < static_cast<std::int64_t>(n);) {
            event e;
            if ((s.last_sequence + 1) % 1000 == 0) {
                e = event::make(event_type::agent_message, "summarizer", content::from_text("Summary of the conversation so far."));
                const std::int64_t last = s.last_sequence - 200;
                e.actions.compaction = event_compaction{covered + 1, last, 0, 0, "summary", last - covered};
                covered = last;
            } else {
                e = transcript_event(i++);
            }
            if (store.append(s, std::move(e), seq)) throw std::runtime_error("append failed");
            if (s.events.size() > 1000) s.events.clear(); // the caller's copy need not grow
        }
        if (store.flush(key)) throw std::runtime_error("flush failed");
    }
    auto load = [&](get_options g, std::size_t& events) {
        double best = 1e300, best_cpu = 1e300;
        for (int rep = 0; rep < 5; ++rep) {
            run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
                jsonl_store store(ex, o);
                session_key k = key;
                get_options go = g;
                const auto t0 = clock_type::now();
                const double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
                auto op = store.async_get(std::move(k), std::move(go), asio::use_awaitable);
                auto got = co_await std::move(op);
                best = std::min(best, std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
                best_cpu = std::min(best_cpu, (cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e3);
                events = got ? got->events.size() : 0;
            });
        }
        std::fprintf(stderr, "jsonl load: %zu events, best %.3f ms wall, %.3f ms cpu (all threads)\n", events, best,
                     best_cpu);
        return best;
    };
    std::size_t events = 0;
    if (r.wants("jsonl_tail_load_100k_ms")) {
        get_options g;
        g.from_newest_compaction = true;
        const double ms = load(g, events);
        if (events < 1000 || events > 2000) std::fprintf(stderr, "jsonl tail load: %zu events\n", events);
        r.report("jsonl_tail_load_100k_ms", ms, "ms");
    }
    if (r.wants("jsonl_full_load_100k_ms")) {
        const double ms = load({}, events);
        if (events != n) std::fprintf(stderr, "jsonl full load: %zu events\n", events);
        r.report("jsonl_full_load_100k_ms", ms, "ms");
    }
}
LIBRETTO_BENCHMARK(bench_jsonl_load, "jsonl_tail_load_100k_ms", "jsonl_full_load_100k_ms");

} // namespace jsonl_bench
