// sqlite_store benchmarks: appends through the asynchronous API (worker thread and back), on
// a database file in the temporary directory (WAL, synchronous=NORMAL: the defaults).
//
//   sqlite_append_events_s             events/s in per-turn batches: 8 events per transaction
//                                      (async_append_batch), 8 conversations at once
//   sqlite_append_sequential_events_s  the same, one turn at a time
//   sqlite_append_single_events_s      one transaction per event (async_append), one at a time
#include "harness.hpp"

#if __has_include(<sqlite3.h>) // the libretto::sqlite component; without SQLite, no benchmarks here

#include <libretto/session/sqlite_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

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
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "sqlite benchmark failed: %s (%s)\n", e.what(), store.last_error_message().c_str());
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
                            std::fprintf(stderr, "sqlite batches: %s (%s)\n", x.what(), store.last_error_message().c_str());
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

} // namespace

#endif
