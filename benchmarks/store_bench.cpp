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

#include <libretto/store/jsonl_store.hpp>

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
// events after the previous one's range up to 200 events before itself. The ranges follow
// each other, so a context view shows all 100 summaries: a runner's load
// (get_options::context_only) reads them and the ~200 events after the newest range. Loads go through async_get on a
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
        g.context_only = true;
        const double ms = load(g, events);
        if (events < 250 || events > 400) std::fprintf(stderr, "jsonl tail load: %zu events\n", events);
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

// =============================================================================================
// sqlite_store: appends through the asynchronous API (worker thread and back), on a database
// file in the temporary directory (WAL, synchronous=NORMAL: the defaults).
//
//   sqlite_append_events_s             events/s in per-turn batches: 8 events per transaction
//                                      (async_append_batch), 8 conversations at once
//   sqlite_append_sequential_events_s  the same, one turn at a time
//   sqlite_append_single_events_s      one transaction per event (async_append), one at a time
// =============================================================================================

#if __has_include(<sqlite3.h>) // the libretto::sqlite component; without SQLite, no benchmarks here

#include <libretto/store/sqlite_store.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <vector>

namespace sqlite_bench {

namespace asio = boost::asio;
using namespace libretto;

struct bench_db {
    std::string path =
        (std::filesystem::temp_directory_path() / ("libretto-sqlite-bench-" + std::to_string(::getpid()) + ".db")).string();
    bench_db() { clean(); }
    ~bench_db() { clean(); }
    void clean() const {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
    }
};

// One agent turn of 8 events: the user's message, three tool calls with their responses
// (one response updates session state), the final answer. About 3.5 KB of JSON in all.
std::vector<event> make_turn(int turn) {
    const std::string inv = "inv-" + std::to_string(turn);
    const std::string para = "The quarterly report for ACME-4471 shows revenue of 12.4M USD, up 8% on the previous "
                             "quarter; see /reports/2026/q3.pdf for details. ";
    std::vector<event> v;
    v.reserve(8);
    event u = event::make(event_type::user_message, "user", content::from_text("Summarise order #" + std::to_string(turn) + ". " + para));
    u.invocation_id = inv;
    v.push_back(std::move(u));
    for (int call = 0; call < 3; ++call) {
        const std::string id = "call_" + std::to_string(turn) + "_" + std::to_string(call);
        event c = event::make(event_type::agent_message, "assistant");
        c.invocation_id = inv;
        c.branch = "assistant";
        json::object args;
        args["order_id"] = turn;
        args["fields"] = json::array{"status", "items", "total"};
        c.content.parts.emplace_back(tool_call_part{id, "lookup_order", std::move(args), {}});
        c.usage = usage{1200 + turn % 300, 40, "gpt-4.1-2026-04"};
        v.push_back(std::move(c));
        event r = event::make(event_type::tool_response, "assistant");
        r.invocation_id = inv;
        r.branch = "assistant";
        json::object result;
        result["status"] = "shipped";
        result["items"] = json::array{json::object{{"sku", "A-1"}, {"qty", 2}, {"price", 19.99}},
                                      json::object{{"sku", "B-7"}, {"qty", 1}, {"price", 249.0}}};
        result["total"] = 288.98;
        r.content.parts.emplace_back(tool_response_part{id, "lookup_order", std::move(result), {}, {}});
        if (call == 2) r.actions.state_delta["last_order"] = turn;
        v.push_back(std::move(r));
    }
    event f = event::make(event_type::agent_message, "assistant", content::from_text("Order " + std::to_string(turn) + " has shipped. " + para));
    f.invocation_id = inv;
    f.branch = "assistant";
    f.usage = usage{1500, 180, "gpt-4.1-2026-04"};
    v.push_back(std::move(f));
    return v;
}

// Runs `body` as a coroutine on a fresh io_context with a store on a fresh file; returns the
// seconds `body` reported, or 0 after printing why it failed.
template <class Body>
double run_on_store(Body body) {
    bench_db db;
    asio::io_context io;
    sqlite_store_options o;
    o.path = db.path;
    sqlite_store store(io.get_executor(), o);
    double seconds = 0;
    std::exception_ptr failure;
    asio::co_spawn(io, body(store, seconds), [&](std::exception_ptr e) { failure = e; });
    io.run();
    std::fprintf(stderr, "sqlite: %llu background checkpoints\n",
                 static_cast<unsigned long long>(store.background_checkpoints()));
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            // use_awaitable throws error_with_diagnostics: what() carries the store's words.
            std::fprintf(stderr, "sqlite benchmark failed: %s\n", e.what());
        }
        return 0;
    }
    return seconds;
}

asio::awaitable<session> make_session(sqlite_store& store, int i) {
    create_options o;
    o.app_name = "bench";
    o.user_id = "u" + std::to_string(i % 4);
    o.session_id = "s" + std::to_string(i);
    auto op = store.async_create(std::move(o), asio::use_awaitable);
    co_return co_await std::move(op);
}

// 4,000 turns of 8 events (32,000 events) over 8 sessions, one async_append_batch (one
// transaction) per turn. `concurrent`: the 8 conversations run at once, each waiting for
// its own previous turn, as on a server (the worker strand always has work queued);
// otherwise one turn at a time, so every turn also pays both thread hand-offs in full.
double append_batches(bool concurrent) {
    constexpr int sessions = 8, turns_per_session = 500, per_turn = 8;
    std::vector<std::vector<event>> all;
    all.reserve(sessions * turns_per_session);
    for (int t = 0; t < sessions * turns_per_session; ++t) all.push_back(make_turn(t));
    double seconds = run_on_store([&](sqlite_store& store, double& out) -> asio::awaitable<void> {
        std::vector<session> ss;
        for (int i = 0; i < sessions; ++i) ss.push_back(co_await make_session(store, i));
        // Session i writes turns i, i + 8, i + 16, ...
        auto conversation = [&](int i, int step) -> asio::awaitable<void> {
            session& s = ss[static_cast<std::size_t>(i)];
            for (int t = i; t < sessions * turns_per_session; t += step) {
                s.events.clear(); // a runner keeps only the tail it needs
                auto op = store.async_append_batch(s, std::move(all[static_cast<std::size_t>(t)]), asio::use_awaitable);
                co_await std::move(op);
            }
        };
        const auto t0 = std::chrono::steady_clock::now();
        if (concurrent) {
            auto ex = co_await asio::this_coro::executor;
            int done = 0;
            for (int i = 0; i < sessions; ++i)
                asio::co_spawn(ex, conversation(i, sessions), [&](std::exception_ptr e) {
                    if (e) {
                        try {
                            std::rethrow_exception(e);
                        } catch (const std::exception& x) {
                            std::fprintf(stderr, "sqlite batches: %s\n", x.what());
                        }
                    }
                    ++done;
                });
            asio::steady_timer timer(ex);
            while (done < sessions) {
                timer.expires_after(std::chrono::microseconds(200));
                co_await timer.async_wait(asio::use_awaitable);
            }
        } else {
            for (int t = 0; t < turns_per_session; ++t)
                for (int i = 0; i < sessions; ++i) {
                    session& s = ss[static_cast<std::size_t>(i)];
                    s.events.clear();
                    auto& turn = all[static_cast<std::size_t>(t * sessions + i)];
                    auto op = store.async_append_batch(s, std::move(turn), asio::use_awaitable);
                    co_await std::move(op);
                }
        }
        out = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::int64_t total = 0;
        for (const auto& s : ss) total += s.last_sequence;
        if (total != sessions * turns_per_session * per_turn)
            std::fprintf(stderr, "sqlite batches: stored %lld events\n", static_cast<long long>(total));
    });
    return seconds > 0 ? sessions * turns_per_session * per_turn / seconds : 0;
}

void bench_sqlite_append_batches(libretto_bench::reporter& r) {
    if (r.wants("sqlite_append_events_s"))
        if (double v = append_batches(true); v > 0) r.report("sqlite_append_events_s", v, "events/s");
    if (r.wants("sqlite_append_sequential_events_s"))
        if (double v = append_batches(false); v > 0) r.report("sqlite_append_sequential_events_s", v, "events/s");
}
LIBRETTO_BENCHMARK(bench_sqlite_append_batches, "sqlite_append_events_s", "sqlite_append_sequential_events_s");

// The same events, one transaction (and one worker round trip) per event.
void bench_sqlite_append_single(libretto_bench::reporter& r) {
    constexpr int turns = 1'500, per_turn = 8;
    std::vector<event> all;
    all.reserve(turns * per_turn);
    for (int t = 0; t < turns; ++t)
        for (auto& e : make_turn(t)) all.push_back(std::move(e));
    double seconds = run_on_store([&](sqlite_store& store, double& out) -> asio::awaitable<void> {
        session s = co_await make_session(store, 0);
        const auto t0 = std::chrono::steady_clock::now();
        for (auto& e : all) {
            auto op = store.async_append(s, std::move(e), asio::use_awaitable);
            co_await std::move(op);
            s.events.clear();
        }
        out = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    if (seconds > 0) r.report("sqlite_append_single_events_s", static_cast<double>(all.size()) / seconds, "events/s");
}
LIBRETTO_BENCHMARK(bench_sqlite_append_single, "sqlite_append_single_events_s");

} // namespace sqlite_bench

#endif
