// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Fault injection on jsonl_store under a signed, compacting runner (docs/reliability.md,
// "Fault injection"):
//  * every write, fsync/fdatasync and rename a turn makes on the store's files fails in turn
//    (the k-th of a clean run's N, k = 1..N), with ENOSPC (from then on, the failing write cut
//    short: a disk filling up) and with EIO (that call only), in each durability mode, for a
//    turn that creates its session and for a turn that compacts;
//  * a failed write whose take-back (ftruncate) fails as well;
//  * a child process running a compacting turn SIGKILLed at varied points.
// After each: a fresh store loads the session, its signed chain verifies, every acknowledged
// event is there, nothing twice, the failure was an io_error naming the call and the errno,
// and the same store object runs the next turn once the fault is gone.
#include "fault_injection.hpp" // defines the intercepted C functions: this file only

#include "fault_test_support.hpp"

#include <libretto/store/detail/jsonl_engine.hpp> // the engine's helpers (not in jsonl_store.hpp with separate compilation)
#include <libretto/store/jsonl_store.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace fault_support;
using runner_support::load_session;
using runner_support::run_turn;

using jsonl_runner = fault_runner<lb::jsonl_store>;

const char* name_of(lb::durability d) {
    switch (d) {
    case lb::durability::none: return "none";
    case lb::durability::per_turn: return "per_turn";
    case lb::durability::per_event: return "per_event";
    }
    return "?";
}

/// The lease outlives every turn of a test: a turn makes the same calls in every run (a lease
/// released by its timer in the middle of one would add a lock record and a checkpoint).
lb::jsonl_store_options store_options(const fs::path& dir, lb::durability d) {
    lb::jsonl_store_options o;
    o.directory = dir;
    o.durability = d;
    o.lock_linger = std::chrono::seconds(120);
    return o;
}

/// Runs turns `first`..`last` on a store of its own in `dir`; every one must succeed.
std::vector<acked_event> clean_turns(const fs::path& dir, lb::durability d, int first, int last) {
    std::vector<acked_event> acked;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), store_options(dir, d));
    auto agent = make_agent(make_model(io.get_executor()));
    jsonl_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
    for (int n = first; n <= last; ++n) {
        auto t = run_turn(io, r.run(turn_options(n), turn_text(n)));
        BOOST_REQUIRE_MESSAGE(!t.error, failure_of(t));
        BOOST_REQUIRE(t.compactions().empty()); // the prelude stays under the compaction's threshold
        add_acked(acked, t);
    }
    return acked;
}

void copy_dir(const fs::path& from, const fs::path& to) {
    fs::remove_all(to);
    fs::copy(from, to, fs::copy_options::recursive);
}

/// The whole session as a fresh store (another process, say) reads it; nullopt if absent.
std::optional<lb::session> fresh_load(const fs::path& dir, lb::durability d) {
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), store_options(dir, d));
    return load_session(io, st);
}

/// A call whose failure the store may keep to itself: the checkpoint and the index are caches
/// (rebuilt from the transcripts), so their writes, renames and syncs (the directory's, right
/// after their rename, included) do not fail an operation.
std::vector<bool> cache_calls(const std::vector<fault::traced>& trace) {
    std::vector<bool> out(trace.size(), false);
    auto is_cache = [](const std::string& p) { return contains(p, "index.json") || contains(p, "meta.json"); };
    for (std::size_t i = 0; i < trace.size(); ++i) {
        out[i] = is_cache(trace[i].path);
        if (!out[i] && i > 0 && trace[i].kind == fault::call::fsync && trace[i - 1].kind == fault::call::rename &&
            is_cache(trace[i - 1].path) && fs::path(trace[i - 1].path).parent_path() == fs::path(trace[i].path))
            out[i] = true;
    }
    return out;
}

/// A clean run of turn `n` in a copy of `base` (empty: a fresh directory): the calls it makes.
std::vector<fault::traced> count_calls(const fs::path& base, const fs::path& dir, lb::durability d, int n,
                                       bool expect_compaction, double* seconds = nullptr) {
    if (base.empty()) fs::remove_all(dir);
    else copy_dir(base, dir);
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), store_options(dir, d));
    auto agent = make_agent(make_model(io.get_executor()));
    jsonl_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
    turn_outcome t;
    const auto t0 = std::chrono::steady_clock::now();
    {
        fault::armed a({.root = dir.string(), .trace = true});
        t = run_turn(io, r.run(turn_options(n), turn_text(n)));
    }
    if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_REQUIRE_MESSAGE(!t.error, failure_of(t));
    BOOST_REQUIRE_EQUAL(t.compactions().size(), expect_compaction ? 1u : 0u);
    return fault::trace();
}

struct variant {
    const char* name;
    int error;
    bool sticky;      // the disk stays full for the rest of the turn
    bool short_write; // the failing write first writes half of its bytes
};
constexpr variant variants[] = {
    {"ENOSPC from this call on, the write cut short", ENOSPC, true, true},
    {"EIO at this call only", EIO, false, false},
};

/// Turn `n` in a copy of `base` (a prelude whose acknowledged events are `before`) with the
/// k-th call of `trace` failing as `v` says; then the checks of the file's header comment.
void fault_trial(const fs::path& base, const fs::path& dir, lb::durability mode, int n,
                 const std::vector<acked_event>& before, const std::vector<fault::traced>& trace,
                 const std::vector<bool>& cache, std::size_t k, const variant& v) {
    if (base.empty()) fs::remove_all(dir);
    else copy_dir(base, dir);
    std::vector<acked_event> acked = before;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), store_options(dir, mode));
    auto agent = make_agent(make_model(io.get_executor()));
    jsonl_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
    turn_outcome t;
    {
        fault::armed a({.root = dir.string(), .at = k, .error = v.error, .sticky = v.sticky, .short_write = v.short_write});
        t = run_turn(io, r.run(turn_options(n), turn_text(n)));
    }
    const auto failed = fault::failed();
    BOOST_TEST_REQUIRE(!failed.empty(), "the fault never fired (the turn made fewer calls than the clean run)");
    BOOST_TEST(failed.front().kind == trace[k - 1].kind);
    BOOST_TEST(fault::stable_path(failed.front().path) == fault::stable_path(trace[k - 1].path));
    add_acked(acked, t);
    const std::string what = t.what();
    if (t.error) {
        // Surfaced as the store's I/O error, with the errno's words and the store's own.
        BOOST_TEST((t.code() == lb::errc::io_error), failure_of(t));
        BOOST_TEST(contains(what, std::strerror(v.error)), what);
        BOOST_TEST(contains(what, "jsonl_store: "), what);
    } else {
        // Only a cache's failure may pass unreported.
        BOOST_TEST(cache[k - 1], "the turn succeeded although " << fault::describe(failed.front(), dir.string())
                                                                << " failed");
        for (const auto& f : failed)
            BOOST_TEST((contains(f.path, "index.json") || contains(f.path, "meta.json") || fs::is_directory(f.path)),
                       "the turn succeeded although " << fault::describe(f, dir.string()) << " failed");
    }

    // A fresh store: everything acknowledged, nothing else (a failed append is taken back),
    // the state as of the newest stored question.
    if (auto s = fresh_load(dir, mode)) {
        const auto extra = check_loaded(*s, acked);
        BOOST_TEST(extra.empty(), "stored although its append failed: " << first_of(extra) << " (" << failure_of(t) << ")");
        const int q = newest_question(*s);
        const std::int64_t want = q == 0 ? -1 : q;
        BOOST_TEST(state_int(*s, "turn") == want);
        // Unless the store said that a shared file keeps the keys (putting it back failed too).
        const bool kept = contains(what, "keeps the new keys") || contains(what, "keeps this event's app: keys");
        if (!kept) BOOST_TEST(state_int(*s, "user:turn") == want, "user:turn with question " << q << " stored: " << failure_of(t));
        if (!kept)
            BOOST_TEST(state_int(*s, "app:turn") == want, "app:turn with question " << q << " stored: " << failure_of(t));
    } else {
        BOOST_TEST(acked.empty(), "the session is gone, " << acked.size() << " events were acknowledged");
    }

    // The same store and runner, the fault gone: the next turn works.
    auto t2 = run_turn(io, r.run(turn_options(n + 1), turn_text(n + 1)));
    BOOST_TEST(!t2.error, "the turn after the fault: " << failure_of(t2));
    add_acked(acked, t2);
    auto s = fresh_load(dir, mode);
    BOOST_TEST_REQUIRE(s.has_value());
    const auto extra = check_loaded(*s, acked);
    BOOST_TEST(extra.empty(), "stored although its append failed: " << first_of(extra));
    BOOST_TEST(state_int(*s, "app:turn") == n + 1);
    BOOST_TEST(state_int(*s, "user:turn") == n + 1);
}

/// The fault matrix of one durability mode: a turn creating its session (turn 1) and a
/// compacting turn (turn 3 after two clean ones), every call of each failing in turn.
void fault_matrix(lb::durability mode) {
    const fs::path root = scratch(std::string("matrix_") + name_of(mode));
    const fs::path prelude = root / "prelude", dir = root / "trial";
    const auto before = clean_turns(prelude, mode, 1, 2);
    struct kind {
        const char* name;
        fs::path base;
        int turn;
        const std::vector<acked_event>* before;
        bool compacts;
    };
    const std::vector<acked_event> none;
    const kind kinds[] = {{"the turn creating the session", {}, 1, &none, false},
                          {"a compacting turn", prelude, 3, &before, true}};
    std::size_t trials = 0;
    for (const auto& kd : kinds) {
        const auto trace = count_calls(kd.base, dir, mode, kd.turn, kd.compacts);
        const auto cache = cache_calls(trace);
        BOOST_TEST_MESSAGE(name_of(mode) << ", " << kd.name << ": " << trace.size() << " calls");
        for (std::size_t i = 0; i < trace.size(); ++i)
            BOOST_TEST_MESSAGE("  " << i + 1 << ": " << fault::describe(trace[i], dir.string()) << (cache[i] ? " (cache)" : ""));
        BOOST_TEST(trace.size() >= 4u);
        for (std::size_t k = 1; k <= trace.size(); ++k)
            for (const auto& v : variants)
                BOOST_TEST_CONTEXT(name_of(mode) << ", " << kd.name << ", call " << k << " of " << trace.size() << " ("
                                                 << fault::describe(trace[k - 1], dir.string()) << "), " << v.name) {
                    const auto t0 = std::chrono::steady_clock::now();
                    fault_trial(kd.base, dir, mode, kd.turn, *kd.before, trace, cache, k, v);
                    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    if (took > 0.5) BOOST_TEST_MESSAGE("SLOW " << took << " s: call " << k << " " << v.name);
                    ++trials;
                }
    }
    BOOST_TEST_MESSAGE(name_of(mode) << ": " << trials << " trials");
    fs::remove_all(root);
}

} // namespace

BOOST_AUTO_TEST_SUITE(jsonl_faults)

BOOST_AUTO_TEST_CASE(every_call_of_a_turn_failing_durability_none) { fault_matrix(lb::durability::none); }
BOOST_AUTO_TEST_CASE(every_call_of_a_turn_failing_durability_per_turn) { fault_matrix(lb::durability::per_turn); }
BOOST_AUTO_TEST_CASE(every_call_of_a_turn_failing_durability_per_event) { fault_matrix(lb::durability::per_event); }

// The disk fills up in the middle of an event's line and the take-back (ftruncate) fails as
// well: half a line stays in the transcript. The store reloads the session at its next use,
// moves the torn half aside, and the turn after it continues the intact prefix.
BOOST_AUTO_TEST_CASE(a_failed_write_whose_take_back_fails_leaves_a_torn_tail_that_is_recovered) {
    const fs::path root = scratch("torn");
    const fs::path prelude = root / "prelude", dir = root / "trial";
    const auto before = clean_turns(prelude, lb::durability::per_turn, 1, 2);
    const auto trace = count_calls(prelude, dir, lb::durability::per_turn, 3, true);
    // Each write to the transcript in turn: the user message (with shared state), then the
    // agent's events (the inline path, on the caller's thread).
    std::vector<std::size_t> transcript_writes;
    for (std::size_t i = 0; i < trace.size(); ++i)
        if (trace[i].kind == fault::call::write && contains(trace[i].path, "transcript.jsonl")) transcript_writes.push_back(i + 1);
    BOOST_TEST_REQUIRE(transcript_writes.size() >= 4u);
    for (const std::size_t k : transcript_writes) {
        BOOST_TEST_CONTEXT("call " << k << " (" << fault::describe(trace[k - 1], dir.string()) << ")") {
            copy_dir(prelude, dir);
            const fs::path transcript = dir / "apps/app/users/u1/sessions/s1/transcript.jsonl";
            std::vector<acked_event> acked = before;
            asio::io_context io;
            lb::jsonl_store st(io.get_executor(), store_options(dir, lb::durability::per_turn));
            auto agent = make_agent(make_model(io.get_executor()));
            jsonl_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
            turn_outcome t;
            {
                fault::armed a({.root = dir.string(), .at = k, .error = ENOSPC, .sticky = true, .short_write = true,
                                .then_fail = static_cast<unsigned>(fault::call::ftruncate)});
                t = run_turn(io, r.run(turn_options(3), turn_text(3)));
            }
            BOOST_TEST((t.code() == lb::errc::io_error), failure_of(t));
            BOOST_TEST(contains(t.what(), std::strerror(ENOSPC)), t.what());
            bool truncate_failed = false;
            for (const auto& f : fault::failed()) truncate_failed = truncate_failed || f.kind == fault::call::ftruncate;
            BOOST_TEST(truncate_failed);
            add_acked(acked, t);
            {
                // Half a line is left at the end of the transcript.
                std::string text;
                BOOST_TEST(!lb::detail::jsonl::read_file(transcript, text));
                BOOST_TEST((!text.empty() && text.back() != '\n'));
            }
            auto t2 = run_turn(io, r.run(turn_options(4), turn_text(4)));
            BOOST_TEST(!t2.error, failure_of(t2));
            add_acked(acked, t2);
            const auto rec = st.recoveries();
            BOOST_TEST_REQUIRE(rec.size() == 1u);
            BOOST_TEST(fs::exists(rec[0].side_file));
            BOOST_TEST(rec[0].moved_bytes > 0u);
            auto s = fresh_load(dir, lb::durability::per_turn);
            BOOST_TEST_REQUIRE(s.has_value());
            const auto extra = check_loaded(*s, acked);
            BOOST_TEST(extra.empty(), "stored although its append failed: " << first_of(extra));
            BOOST_TEST(state_int(*s, "turn") == 4);
        }
    }
    fs::remove_all(root);
}

// A create that fails half-way leaves the session's lease timer armed; a later get finds no
// session and retires it. The cancelled timer used to leave a re-check timer of lock_linger
// on the store's pool, so the store's destructor waited lock_linger (here a minute) for it.
BOOST_AUTO_TEST_CASE(a_store_whose_create_failed_is_destroyed_without_waiting_for_its_lease) {
    const fs::path dir = scratch("lease");
    const auto t0 = std::chrono::steady_clock::now();
    {
        lb::jsonl_store_options o = store_options(dir, lb::durability::per_turn);
        o.lock_linger = std::chrono::seconds(60);
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), o);
        lb::create_options co;
        co.app_name = "app";
        co.user_id = "u1";
        co.session_id = "s1";
        lb::session s;
        lb::diagnostics diag;
        {
            fault::armed a({.root = dir.string(), .calls = fault::writes, .at = 2, .error = EIO}); // the transcript's
            BOOST_TEST((st.create(co, s, &diag) == lb::errc::io_error));
        }
        BOOST_TEST(contains(diag.message(), "create transcript: Input/output error"), diag.message());
        std::optional<lb::session> got;
        BOOST_TEST(!st.get(lb::session_key{"app", "u1", "s1"}, {}, got));
        BOOST_TEST(!got.has_value());
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST(took < 10.0, "the store took " << took << " s to create, fail and close");
    fs::remove_all(dir);
}

// A forked child used to draw the same ids as its parent: the per-thread generator was
// copied by fork(). The kill test below found it as "event stored twice" (the parent's next
// turn reused the child's event ids) and as EEXIST on a temporary file (a store's instance
// name, drawn the same way, names its temporary files).
BOOST_AUTO_TEST_CASE(ids_drawn_after_a_fork_differ_in_parent_and_child) {
    const std::string before = lb::event::new_id(); // the generator exists before the fork
    int fds[2];
    BOOST_TEST_REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        std::string ids;
        for (int i = 0; i < 4; ++i) ids += lb::event::new_id() + "\n";
        const bool ok = ::write(fds[1], ids.data(), ids.size()) == static_cast<ssize_t>(ids.size());
        ::_exit(ok ? 0 : 1);
    }
    ::close(fds[1]);
    const std::string child = read_all(fds[0]);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    BOOST_TEST(child.size() == 4u * 37u);
    for (int i = 0; i < 4; ++i) {
        const std::string mine = lb::event::new_id();
        BOOST_TEST(!contains(child, mine), "the parent drew " << mine << ", which the child drew too");
        BOOST_TEST(mine != before);
    }
}

// A create that fails leaves no session behind, whichever of its calls fails (the directories'
// fsyncs, the lock record, the transcript's temporary file, its rename, the fsyncs after it):
// "error" means "not created", so the caller's retry creates it, rather than meeting
// already_exists, and a reader finds nothing in between. The index is a cache: its failure
// does not fail the create.
BOOST_AUTO_TEST_CASE(a_failed_create_leaves_no_session) {
    const fs::path dir = scratch("create");
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u1";
    co.session_id = "s1";
    co.state["k"] = 1;
    co.state["app:k"] = 2;
    co.state["user:k"] = 3;
    std::vector<fault::traced> trace;
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), store_options(dir, lb::durability::per_event));
        lb::session s;
        fault::armed a({.root = dir.string(), .trace = true});
        BOOST_TEST_REQUIRE(!st.create(co, s));
        trace = fault::trace();
    }
    const auto cache = cache_calls(trace);
    BOOST_TEST(trace.size() >= 8u);
    for (std::size_t k = 1; k <= trace.size(); ++k) {
        BOOST_TEST_CONTEXT("call " << k << " of " << trace.size() << " (" << fault::describe(trace[k - 1], dir.string()) << ")") {
            fs::remove_all(dir);
            asio::io_context io;
            lb::jsonl_store st(io.get_executor(), store_options(dir, lb::durability::per_event));
            lb::session s;
            lb::diagnostics diag;
            boost::system::error_code ec;
            {
                fault::armed a({.root = dir.string(), .at = k, .error = EIO});
                ec = st.create(co, s, &diag);
            }
            if (!ec) {
                BOOST_TEST(cache[k - 1], "the create succeeded although its call failed");
                continue;
            }
            BOOST_TEST((ec == lb::errc::io_error), ec.message());
            BOOST_TEST(contains(diag.message(), "Input/output error"), diag.message());
            {
                asio::io_context io2;
                lb::jsonl_store fresh(io2.get_executor(), store_options(dir, lb::durability::per_event));
                std::optional<lb::session> got;
                BOOST_TEST(!fresh.get(lb::session_key{"app", "u1", "s1"}, {}, got));
                BOOST_TEST(!got.has_value(), "a session exists although its create failed: " << diag.message());
            }
            lb::session again;
            lb::diagnostics d2;
            BOOST_TEST(!st.create(co, again, &d2), "the retry: " << d2.message());
            BOOST_TEST((again.state.contains("k") && again.state.at("k") == 1));
        }
    }
    fs::remove_all(dir);
}

// A child process runs a compacting turn (turn 3) and the turn after it, reporting each
// event the runner acknowledges through a pipe, and dies by SIGKILL: in even trials from
// inside the shim at the k-th write, sync or rename of the turn (k random; a write cut in
// half first in one of two such trials), in odd trials after a random delay. The durability
// mode goes round. A process crash loses no acknowledged event at any level (an append is
// acknowledged once write(2) returned); what a fresh store finds beyond the acknowledged
// events is at most what was in flight, after all of them.
BOOST_AUTO_TEST_CASE(sigkill_at_random_points_of_a_compacting_turn) {
    const fs::path root = scratch("kill");
    const lb::durability modes[] = {lb::durability::none, lb::durability::per_turn, lb::durability::per_event};
    struct base {
        fs::path prelude;
        std::vector<acked_event> acked;
        std::size_t calls = 0;
        double seconds = 0;
    };
    std::vector<base> bases;
    for (const auto mode : modes) {
        base b;
        b.prelude = root / (std::string("prelude_") + name_of(mode));
        b.acked = clean_turns(b.prelude, mode, 1, 2);
        b.calls = count_calls(b.prelude, root / "count", mode, 3, true, &b.seconds).size();
        bases.push_back(std::move(b));
    }
    const unsigned seed = std::random_device{}();
    BOOST_TEST_MESSAGE("seed " << seed);
    std::mt19937 rng(seed);
    const fs::path dir = root / "trial";
    int killed_mid_turn = 0, recovered = 0;
    constexpr int trials = 30;
    for (int trial = 0; trial < trials; ++trial) {
        const lb::durability mode = modes[trial % 3];
        const base& b = bases[trial % 3];
        const bool in_shim = trial % 2 == 0;
        const std::size_t k = std::uniform_int_distribution<std::size_t>(1, b.calls)(rng);
        const bool cut = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
        const auto delay = std::chrono::microseconds(
            std::uniform_int_distribution<long>(0, static_cast<long>(b.seconds * 1.5e6))(rng));
        BOOST_TEST_CONTEXT("trial " << trial << " (seed " << seed << "), " << name_of(mode) << ", "
                                    << (in_shim ? "killed at call " + std::to_string(k) + (cut ? " (a write cut short)" : "")
                                                : "killed after " + std::to_string(delay.count()) + " us")) {
            copy_dir(b.prelude, dir);
            int fds[2];
            BOOST_TEST_REQUIRE(::pipe(fds) == 0);
            const pid_t pid = ::fork();
            BOOST_TEST_REQUIRE(pid >= 0);
            if (pid == 0) {
                ::close(fds[0]);
                asio::io_context io;
                lb::jsonl_store_options o = store_options(dir, mode);
                o.threads = 1;
                lb::jsonl_store st(io.get_executor(), o);
                auto agent = make_agent(make_model(io.get_executor()));
                jsonl_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
                if (in_shim) fault::arm({.root = dir.string(), .at = k, .short_write = cut, .kill = true});
                run_reporting(io, r.run(turn_options(3), turn_text(3)), fds[1]);
                run_reporting(io, r.run(turn_options(4), turn_text(4)), fds[1]);
                ::_exit(0);
            }
            ::close(fds[1]);
            if (!in_shim) {
                std::this_thread::sleep_for(delay);
                ::kill(pid, SIGKILL);
            }
            const child_report rep = parse_report(read_all(fds[0]));
            ::close(fds[0]);
            int status = 0;
            ::waitpid(pid, &status, 0);
            if (in_shim) BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL), "status " << status);
            BOOST_TEST(rep.errors.empty(), first_of(rep.errors));
            if (WIFSIGNALED(status) && rep.turns_ok < 2) ++killed_mid_turn;

            std::vector<acked_event> acked = b.acked;
            acked.insert(acked.end(), rep.acked.begin(), rep.acked.end());
            std::int64_t newest_acked = 0;
            for (const auto& a : acked) newest_acked = std::max(newest_acked, a.sequence);
            asio::io_context io;
            lb::jsonl_store st(io.get_executor(), store_options(dir, mode));
            auto s = load_session(io, st);
            BOOST_TEST_REQUIRE(s.has_value());
            const auto extra = check_loaded(*s, acked);
            // Stored, not yet acknowledged: only events after every acknowledged one.
            BOOST_TEST(s->last_sequence - newest_acked == static_cast<std::int64_t>(extra.size()),
                       "an unacknowledged event before an acknowledged one");
            recovered += static_cast<int>(st.recoveries().size());
            // A fresh runner continues the session.
            auto agent = make_agent(make_model(io.get_executor()));
            jsonl_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
            auto t = run_turn(io, r.run(turn_options(5), turn_text(5)));
            BOOST_TEST(!t.error, failure_of(t));
            add_acked(acked, t);
            auto again = load_session(io, st);
            BOOST_TEST_REQUIRE(again.has_value());
            check_loaded(*again, acked);
        }
    }
    BOOST_TEST_MESSAGE(killed_mid_turn << " of " << trials << " children killed inside a turn, " << recovered
                                       << " torn tails recovered");
    BOOST_TEST(killed_mid_turn >= trials / 2);
    fs::remove_all(root);
}

BOOST_AUTO_TEST_SUITE_END()
