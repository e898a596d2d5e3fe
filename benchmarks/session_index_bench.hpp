// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The session-index benchmarks (issue 35; docs/sessions.md), written once for every back end:
// session_index_bench.cpp (memory, JSONL), session_index_sqlite_bench.cpp (SQLite). Each runs
// on an index of 10,000 conversations, made untimed with index_replace and reopened, and
// times single operations on keys drawn at random (a fixed seed):
//
//   index_update_<backend>_us   one turn's patch through the synchronous core, index_patch:
//                               the fields finish_conversation (runner/detail/
//                               turn_conversation.hpp) sets at the end of a turn
//   status_read_<backend>_us    index_get + conversation_status_of
//   key_resolve_10k_sessions*   any_session_index::async_get awaited from a coroutine on an
//                               io_context: what resolve_conversation does before a turn
//                               loads its session (a blocking back end's worker hop included)
//
// Each figure is the median over every timed operation (after an untimed warm-up); mean,
// 99th and 99.9th percentiles and the maximum go to stderr: the JSONL log's fold into
// conversations.json and SQLite's WAL checkpoints land on one patch in thousands, so they
// show there and in the mean, not in the median.
#ifndef LIBRETTO_BENCHMARKS_SESSION_INDEX_BENCH_HPP
#define LIBRETTO_BENCHMARKS_SESSION_INDEX_BENCH_HPP

#include "harness.hpp"

#include <libretto/event/event.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/conversation_key.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace index_bench {

using namespace libretto;
using clock_type = std::chrono::steady_clock;

inline constexpr std::size_t conversations = 10'000;
inline const std::string app = "bench";
/// The context window a status view is computed with.
inline constexpr std::int64_t context_window = 200'000;

using libretto_bench::scratch;

/// The i-th conversation's key: 1 in 10 a group, 1 in 20 a channel, 1 in 50 a scheduled
/// job, the rest one person's direct conversation with the agent.
inline std::string key_of(std::size_t i, std::string* chat_type = nullptr) {
    const std::string n = std::to_string(i);
    std::string type = "direct", key;
    if (i % 10 == 1) {
        type = "group";
        key = group_key("assistant", "telegram", "-100" + n);
    } else if (i % 20 == 2) {
        type = "channel";
        key = channel_key("assistant", "slack", "C0" + n);
    } else if (i % 50 == 3) {
        type = "scheduled_job";
        key = scheduled_job_key("job-" + n);
    } else {
        key = direct_key("assistant", "peer-" + n);
    }
    if (chat_type) *chat_type = type;
    return key;
}

/// 10,000 entries as an index that has served a while holds them: counters, times within
/// the last week, a memory flush on 1 in 4, a label on 1 in 20, an archived session on 1 in
/// 3, one metadata member each (about 500 bytes of JSON per entry).
inline std::vector<conversation_entry> make_entries(double now) {
    std::vector<conversation_entry> v;
    v.reserve(conversations);
    for (std::size_t i = 0; i < conversations; ++i) {
        conversation_entry e;
        e.app_name = app;
        e.key = key_of(i, &e.chat_type);
        e.user_id = "user-" + std::to_string(i);
        e.session_id = event::new_id();
        e.started_at = now - 600'000 + static_cast<double>(i * 37 % 500'000);
        e.last_interaction_at = e.started_at + static_cast<double>(i * 13 % 90'000);
        e.updated_at = e.last_interaction_at + 2.5;
        e.last_sequence = 40 + static_cast<std::int64_t>(i % 400);
        e.input_tokens = e.last_sequence * 1'450;
        e.output_tokens = e.last_sequence * 62;
        e.total_tokens = e.input_tokens + e.output_tokens;
        e.context_tokens = 20'000 + static_cast<std::int64_t>(i * 7'919 % 90'000);
        e.compaction_count = static_cast<std::int64_t>(i % 5);
        if (i % 4 == 0) {
            e.memory_flush_at = e.last_interaction_at - 30;
            e.memory_flush_compaction_count = e.compaction_count;
        }
        if (i % 20 == 0) e.labels = {"vip"};
        e.metadata["display_name"] = "Customer " + std::to_string(i);
        if (i % 3 == 0)
            e.previous.push_back(previous_session{event::new_id(), e.started_at - 86'400, e.started_at, "daily"});
        v.push_back(std::move(e));
    }
    return v;
}

/// `n` indexes into the 10,000 conversations, drawn at random (the same ones on every run).
inline std::vector<std::uint32_t> random_picks(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::uint32_t> pick(0, conversations - 1);
    std::vector<std::uint32_t> v(n);
    for (auto& x : v) x = pick(rng);
    return v;
}

/// Throws with what the index said.
inline void check(boost::system::error_code ec, const char* doing, const diagnostics& said) {
    if (ec) throw std::runtime_error(std::string(doing) + ": " + ec.message() + " (" + said.message() + ")");
}

/// Fills a fresh index with the 10,000 entries (index_replace: one snapshot or transaction).
template <class Index>
void fill(Index&& index, const std::vector<conversation_entry>& entries) {
    diagnostics said;
    check(index.index_replace(app, entries, &said), "index_replace", said);
}

/// Microseconds per operation: `samples` of `batch` operations each (batch > 1 where one
/// operation is not much longer than reading the clock).
struct timings {
    std::vector<double> us;
    std::size_t batch = 1;

    double median() {
        std::sort(us.begin(), us.end());
        return us[us.size() / 2];
    }
    /// Prints the distribution on stderr (median() first).
    void describe(const char* what) {
        (void)median();
        double sum = 0, slow_ms = 0;
        std::size_t slow = 0;
        for (double x : us) {
            sum += x;
            if (x >= 1'000) {
                ++slow;
                slow_ms += x / 1'000;
            }
        }
        auto at = [&](double q) {
            return us[std::min(us.size() - 1, static_cast<std::size_t>(q * static_cast<double>(us.size())))];
        };
        std::fprintf(stderr,
                     "%s: %zu operations: median %.3f us, mean %.3f, min %.3f, p99 %.3f, p99.9 %.3f, max %.3f"
                     "; %zu over 1 ms (%.1f ms in all)%s\n",
                     what, us.size() * batch, at(0.5), sum / static_cast<double>(us.size()), us.front(), at(0.99),
                     at(0.999), us.back(), slow, slow_ms, batch > 1 ? " (per operation, in batches)" : "");
    }
};

/// Times `samples` calls of op(i) (i counting from 0 across warm-up and samples), `batch`
/// calls per reading of the clock, after `warmup` untimed calls.
template <class Op>
timings time_ops(std::size_t warmup, std::size_t samples, std::size_t batch, Op&& op) {
    std::size_t i = 0;
    for (; i < warmup; ++i) op(i);
    timings t;
    t.batch = batch;
    t.us.reserve(samples);
    for (std::size_t s = 0; s < samples; ++s) {
        const auto t0 = clock_type::now();
        for (std::size_t b = 0; b < batch; ++b) op(i++);
        const auto t1 = clock_type::now();
        t.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / static_cast<double>(batch));
    }
    return t;
}

/// index_update_<backend>_us: 1,000 + 30,000 patches, each of a random conversation, with
/// what a turn of 4 events that made two model calls adds (finish_conversation's fields).
/// The JSONL log folds into conversations.json about once every 10,000 patches here.
template <class Index>
void bench_update(libretto_bench::reporter& r, const char* metric, Index& index,
                  const std::vector<conversation_entry>& entries) {
    constexpr std::size_t warmup = 1'000, samples = 30'000;
    const auto picks = random_picks(warmup + samples, 1);
    std::vector<std::string> keys, sessions;
    std::vector<std::int64_t> sequence;
    for (const auto& e : entries) {
        keys.push_back(e.key);
        sessions.push_back(e.session_id);
        sequence.push_back(e.last_sequence);
    }
    // The patches, made beforehand: the runner builds one from the turn's events before
    // handing it to the index.
    std::vector<conversation_patch> patches(picks.size());
    double now = event::now();
    for (std::size_t i = 0; i < picks.size(); ++i) {
        const auto k = picks[i];
        conversation_patch& p = patches[i];
        p.if_session_id = sessions[k];
        p.updated_at = now += 0.01;
        p.last_sequence = sequence[k] += 4;
        p.add_input_tokens = 2 * 41'000 + static_cast<std::int64_t>(i % 1'000);
        p.add_output_tokens = 180 + static_cast<std::int64_t>(i % 100);
        p.context_tokens = 41'200 + static_cast<std::int64_t>(i % 1'000);
    }
    conversation_entry out;
    diagnostics said;
    auto t = time_ops(warmup, samples, 1, [&](std::size_t i) {
        if (auto ec = index.index_patch(app, keys[picks[i]], patches[i], out, &said)) check(ec, "index_patch", said);
    });
    if (out.last_sequence != *patches.back().last_sequence) throw std::runtime_error("index_patch: wrong entry back");
    t.describe(metric);
    r.report(metric, t.median(), "us");
}

/// status_read_<backend>_us: index_get of a random conversation and its status.
template <class Index>
void bench_status_read(libretto_bench::reporter& r, const char* metric, Index& index,
                       const std::vector<conversation_entry>& entries, std::size_t samples, std::size_t batch) {
    constexpr std::size_t warmup = 2'000;
    const auto picks = random_picks(warmup + samples * batch, 2);
    std::vector<std::string> keys;
    for (const auto& e : entries) keys.push_back(e.key);
    const double now = event::now();
    std::optional<conversation_entry> found;
    diagnostics said;
    std::size_t missing = 0;
    std::int64_t sum = 0;
    auto t = time_ops(warmup, samples, batch, [&](std::size_t i) {
        if (auto ec = index.index_get(app, keys[picks[i]], found, &said)) check(ec, "index_get", said);
        if (!found) {
            ++missing;
            return;
        }
        const conversation_status s = conversation_status_of(*found, now, context_window);
        sum += s.total_tokens;
        libretto_bench::do_not_optimize(s);
    });
    if (missing || sum <= 0) throw std::runtime_error("index_get: conversations missing from the index");
    t.describe(metric);
    r.report(metric, t.median(), "us");
}

/// key_resolve_10k_sessions*: any_session_index::async_get of a random conversation,
/// awaited (as_tuple(use_awaitable), as resolve_conversation does) in a coroutine on an
/// io_context running on this thread.
inline void bench_key_resolve(libretto_bench::reporter& r, const char* metric, any_session_index& index,
                              boost::asio::io_context& io, const std::vector<conversation_entry>& entries,
                              std::size_t samples) {
    namespace asio = boost::asio;
    constexpr std::size_t warmup = 2'000;
    const auto picks = random_picks(warmup + samples, 3);
    std::vector<std::string> keys;
    for (const auto& e : entries) keys.push_back(e.key);
    timings t;
    std::size_t missing = 0;
    auto body = [&]() -> asio::awaitable<void> {
        diagnostics said;
        t.us.reserve(samples);
        for (std::size_t i = 0; i < warmup + samples; ++i) {
            const std::string& key = keys[picks[i]];
            const auto t0 = clock_type::now();
            auto op = index.async_get(app, key, said, asio::as_tuple(asio::use_awaitable));
            auto [ec, found] = co_await std::move(op);
            const auto t1 = clock_type::now();
            check(ec, "async_get", said);
            if (!found || found->key != key) ++missing;
            if (i >= warmup) t.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
    };
    std::exception_ptr failure;
    asio::co_spawn(io, body(), [&](std::exception_ptr e) { failure = e; });
    io.run();
    io.restart();
    if (failure) std::rethrow_exception(failure);
    if (missing) throw std::runtime_error("async_get: conversations missing from the index");
    t.describe(metric);
    r.report(metric, t.median(), "us");
}

} // namespace index_bench

#endif
