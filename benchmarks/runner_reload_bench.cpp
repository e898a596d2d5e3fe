// runner_reload_after_rolling_compaction_100k_ms: what a fresh runner process pays for its
// first turn on a long session whose rolling summary (token_budget's: its range starts at
// sequence 1) covers all but the newest ~400 events.
//
// The session: 100,000 events, a rolling summary every 1,000 events (each subsumes the
// previous one) covering all but the newest 200 events when it is made; the newest, at
// sequence 99,801, covers 1..99,600: 400 events lie after its range (itself included). Built once, untimed. Each timed run opens a new store instance on the
// data (nothing of the session in memory; the page cache is warm), builds a runner
// (llm_agent on a scripted model answering at once, token_budget with a window the session
// does not reach) and runs one turn to its end: the load (the summary and the events after
// its range: get_options::context_only), the user message and the reply stored, the view
// and the request built from ~400 events. Best of 7 runs, wall time.
//
//   runner_reload_after_rolling_compaction_100k_ms          on jsonl_store
//   runner_reload_after_rolling_compaction_100k_sqlite_ms   on sqlite_store
#include "harness.hpp"

#include <libretto/agent/llm_agent.hpp>
#include <libretto/compaction/any_strategy.hpp>
#include <libretto/compaction/token_budget.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/jsonl_store.hpp>
#if __has_include(<sqlite3.h>)
#include <libretto/store/sqlite_store.hpp>
#define LIBRETTO_RELOAD_BENCH_SQLITE 1
#endif

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace reload_bench {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace lb = libretto;

constexpr std::int64_t session_events = 100'000;
constexpr std::int64_t kept_raw = 200; // events a rolling summary leaves raw when it is made

template <class F>
void run(F f) {
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, f(io.get_executor()), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

/// Event i of a conversation: user messages and replies, a few hundred bytes each.
lb::event conversation_event(std::int64_t i) {
    const std::string n = std::to_string(i / 2);
    if (i % 2 == 0)
        return lb::event::make(lb::event_type::user_message, "user",
                               lb::content::from_text("Where is order #" + n + "? It was due on Tuesday, and the "
                                                      "tracking page has not changed since Monday morning."));
    lb::event e = lb::event::make(lb::event_type::agent_message, "assistant",
                                  lb::content::from_text("Order #" + n + " left the warehouse on Tuesday; tracking "
                                                         "number ZX-" + n + " shows it in transit to Oslo."));
    e.usage = lb::usage{1200, 40, "model-1"};
    return e;
}

/// The session's events in append order: at 801, 1,801, ... a rolling summary of 1..(n - 200).
std::vector<lb::event> session_events_list() {
    std::vector<lb::event> out;
    out.reserve(session_events);
    std::int64_t conversation = 0;
    for (std::int64_t seq = 1; seq <= session_events; ++seq) {
        if (seq % 1000 == 801) {
            lb::event e = lb::event::make(lb::event_type::agent_message, "compaction");
            lb::event_compaction c;
            c.first_sequence = 1;
            c.last_sequence = seq - 1 - kept_raw;
            c.summary = "## Goal\nTrack the customer's orders.\n## Progress\n" + std::string(1500, 's');
            c.event_count = c.last_sequence;
            e.actions.compaction = std::move(c);
            out.push_back(std::move(e));
        } else {
            out.push_back(conversation_event(conversation++));
        }
    }
    return out;
}

template <class Store>
asio::awaitable<void> fill(Store& store) {
    lb::create_options co;
    co.app_name = "bench";
    co.user_id = "u";
    co.session_id = "long";
    auto create = store.async_create(std::move(co), asio::use_awaitable);
    lb::session s = co_await std::move(create);
    std::vector<lb::event> all = session_events_list();
    if constexpr (requires(std::vector<lb::event> v) { store.async_append_batch(s, std::move(v), asio::use_awaitable); }) {
        for (std::size_t i = 0; i < all.size(); i += 1000) { // sqlite: a transaction per 1,000
            std::vector<lb::event> batch(std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(i)),
                                         std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(
                                                                                   std::min(i + 1000, all.size()))));
            auto op = store.async_append_batch(s, std::move(batch), asio::use_awaitable);
            co_await std::move(op);
            s.events.clear(); // the caller's copy need not grow
        }
    } else {
        for (auto& e : all) {
            auto op = store.async_append(s, std::move(e), asio::use_awaitable);
            co_await std::move(op);
            if (s.events.size() > 1000) s.events.clear();
        }
    }
    if (s.last_sequence != session_events) throw std::runtime_error("reload bench: wrong session length");
}

/// One fresh runner's first turn on a store instance from `open`; returns wall ms.
template <class Open>
double first_turn_ms(Open open, std::size_t& loaded) {
    double ms = 0;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto store = open(ex);
        lb::scripted_model model(ex, {lb::scripted_reply::text("It shipped on Tuesday.").with_usage(2000, 10)});
        model.keep_requests(1);
        lb::llm_agent agent{lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model}};
        lb::runner runner{agent, *store,
                          lb::any_strategy{lb::token_budget{.context_window = 1'000'000, .reserve_tokens = 1000}}};
        lb::run_options o;
        o.app = "bench";
        o.user = "u";
        o.session = "long";
        const auto t0 = std::chrono::steady_clock::now();
        auto turn = runner.run_shared(std::move(o), "And order #42?");
        std::size_t events = 0;
        for (;;) {
            auto next = turn.next();
            auto ev = co_await std::move(next);
            if (!ev) break;
            ++events;
        }
        ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const auto requests = model.requests();
        loaded = requests.empty() ? 0 : requests.front().messages.size();
        if (events == 0) throw std::runtime_error("reload bench: the turn yielded nothing");
    });
    return ms;
}

template <class Open>
double best_of(Open open, const char* what) {
    double best = 1e300;
    std::size_t messages = 0;
    for (int rep = 0; rep < 7; ++rep) best = std::min(best, first_turn_ms(open, messages));
    std::fprintf(stderr, "%s: best %.3f ms; the model was sent %zu messages\n", what, best, messages);
    return best;
}

struct scratch {
    fs::path path;
    explicit scratch(const char* name)
        : path(fs::temp_directory_path() / ("libretto-reload-bench-" + std::string(name) + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~scratch() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

void bench_runner_reload(libretto_bench::reporter& r) {
    if (r.wants("runner_reload_after_rolling_compaction_100k_ms")) {
        scratch dir("jsonl");
        lb::jsonl_store_options o;
        o.directory = dir.path;
        o.durability = lb::durability::none;
        run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            lb::jsonl_store store(ex, o);
            co_await fill(store);
            lb::session_key k{"bench", "u", "long"};
            auto flush = store.async_flush(std::move(k), asio::use_awaitable); // and the checkpoint
            co_await std::move(flush);
        });
        auto open = [&](asio::any_io_executor ex) { return std::make_unique<lb::jsonl_store>(ex, o); };
        r.report("runner_reload_after_rolling_compaction_100k_ms", best_of(open, "jsonl_store"), "ms");
    }
#ifdef LIBRETTO_RELOAD_BENCH_SQLITE
    if (r.wants("runner_reload_after_rolling_compaction_100k_sqlite_ms")) {
        scratch dir("sqlite");
        lb::sqlite_store_options o;
        o.path = (dir.path / "sessions.db").string();
        run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            lb::sqlite_store store(ex, o);
            co_await fill(store);
        });
        auto open = [&](asio::any_io_executor ex) { return std::make_unique<lb::sqlite_store>(ex, o); };
        r.report("runner_reload_after_rolling_compaction_100k_sqlite_ms", best_of(open, "sqlite_store"), "ms");
    }
#endif
}
LIBRETTO_BENCHMARK(bench_runner_reload, "runner_reload_after_rolling_compaction_100k_ms",
                   "runner_reload_after_rolling_compaction_100k_sqlite_ms");

} // namespace reload_bench
