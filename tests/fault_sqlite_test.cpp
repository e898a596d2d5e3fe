// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Fault injection on sqlite_store (docs/reliability.md, "Fault injection"):
//  * another connection holds the write lock (BEGIN IMMEDIATE, BEGIN EXCLUSIVE, an
//    EXCLUSIVE locking mode): an append waits busy_timeout, fails with errc::busy and
//    writes nothing; once the lock is gone the same append succeeds, once; a lock taken in
//    the middle of a signed runner turn (while the model "thinks") fails the turn cleanly,
//    or lets it through when released within busy_timeout;
//  * SQLite's own writes and syncs (pwrite64, write, fdatasync, through libsqlite3's PLT,
//    intercepted by fault_injection.hpp) failing with ENOSPC and EIO at every call of a
//    compacting turn;
//  * a child process running a compacting turn SIGKILLed at varied points.
// After each: a fresh store loads the session, its signed chain verifies, every acknowledged
// event is there, nothing twice.
#include "fault_injection.hpp" // defines the intercepted C functions: this file only

#include "fault_test_support.hpp"

#include <libretto/store/sqlite_store.hpp>

#include <boost/test/unit_test.hpp>

#include <sqlite3.h>

#include <chrono>
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

using sqlite_runner = fault_runner<lb::sqlite_store>;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// A plain SQLite connection of the test's own on the store's file (another process, say).
class raw_db {
public:
    explicit raw_db(const std::string& path) {
        BOOST_TEST_REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
        // The store writes on its own thread: a lock taken mid-turn may meet one of its
        // (short) transactions and must wait for it, not fail with "database is locked".
        sqlite3_busy_timeout(db_, 10000);
    }
    ~raw_db() { sqlite3_close(db_); }
    raw_db(const raw_db&) = delete;
    raw_db& operator=(const raw_db&) = delete;

    /// Runs `sql`; "" on success, else SQLite's message.
    std::string exec(const std::string& sql) {
        char* err = nullptr;
        const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
        std::string m = rc == SQLITE_OK ? "" : (err ? err : "error " + std::to_string(rc));
        sqlite3_free(err);
        return m;
    }
    /// The integer `sql` selects (-1 on error).
    std::int64_t value(const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        std::int64_t v = -1;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
    }

private:
    sqlite3* db_ = nullptr;
};

lb::sqlite_store_options store_options(const fs::path& db, std::chrono::milliseconds busy = std::chrono::milliseconds(5000)) {
    lb::sqlite_store_options o;
    o.path = db.string();
    o.busy_timeout = busy;
    return o;
}

lb::event text_event(std::string t) {
    return lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text(std::move(t)));
}

lb::session make_session(lb::sqlite_store& st, int events) {
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u1";
    co.session_id = "s1";
    lb::session s;
    BOOST_TEST_REQUIRE(!st.create(co, s));
    for (int i = 1; i <= events; ++i) {
        std::int64_t seq = 0;
        BOOST_TEST_REQUIRE(!st.append(s, text_event("before " + std::to_string(i)), seq));
    }
    return s;
}

struct lock_kind {
    const char* name;
    const char* take;    // run on the other connection
    const char* release; // "" : close the connection
    bool blocks_reads; // none does in WAL mode: a writer never blocks readers
};
constexpr lock_kind lock_kinds[] = {
    {"BEGIN IMMEDIATE", "BEGIN IMMEDIATE", "ROLLBACK", false},
    {"BEGIN EXCLUSIVE", "BEGIN EXCLUSIVE", "ROLLBACK", false},
    {"a write transaction that has written", "BEGIN; UPDATE sessions SET last_update = last_update", "", false},
};

/// The runner of the turns below, its model calling `hook` before each answer.
struct turn_env {
    asio::io_context io;
    lb::sqlite_store store;
    fault_agent agent;
    sqlite_runner runner;
    turn_env(const fs::path& db, std::chrono::milliseconds busy, model_hook hook = {})
        : store(io.get_executor(), store_options(db, busy)), agent(make_agent(make_model(io.get_executor(), 64, std::move(hook)))),
          runner(agent, store, compaction(), sign_test::checksum_signer{}) {}
    turn_outcome turn(int n) { return run_turn(io, runner.run(turn_options(n), turn_text(n))); }
};

std::optional<lb::session> fresh_load(const fs::path& db) {
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), store_options(db));
    return load_session(io, st);
}

// ---- the kill test and the I/O fault matrix -------------------------------------------------

/// SQLite checkpoints inside the turn (a small WAL limit, on the appending connection), so
/// that the calls of a turn include the database file's writes and syncs.
lb::sqlite_store_options turn_store_options(const fs::path& db, lb::sqlite_synchronous sync) {
    lb::sqlite_store_options o = store_options(db);
    o.synchronous = sync;
    o.checkpoint_pages = 4;
    o.background_checkpoint = false;
    return o;
}

const char* name_of(lb::sqlite_synchronous s) {
    return s == lb::sqlite_synchronous::full ? "synchronous full" : s == lb::sqlite_synchronous::normal ? "synchronous normal" : "synchronous off";
}

/// Turns 1 and 2 into `dir`/s.db; their acknowledged events.
std::vector<acked_event> prelude(const fs::path& dir, lb::sqlite_synchronous sync) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<acked_event> acked;
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), turn_store_options(dir / "s.db", sync));
    auto agent = make_agent(make_model(io.get_executor()));
    sqlite_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
    for (int n = 1; n <= 2; ++n) {
        auto t = run_turn(io, r.run(turn_options(n), turn_text(n)));
        BOOST_TEST_REQUIRE(!t.error, failure_of(t));
        add_acked(acked, t);
    }
    return acked;
}

void copy_dir(const fs::path& from, const fs::path& to) {
    fs::remove_all(to);
    fs::copy(from, to, fs::copy_options::recursive);
}

/// The calls a clean compacting turn (turn 3) makes on the database's files.
std::vector<fault::traced> count_calls(const fs::path& prelude_dir, const fs::path& dir, lb::sqlite_synchronous sync,
                                       double* seconds = nullptr) {
    copy_dir(prelude_dir, dir);
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), turn_store_options(dir / "s.db", sync));
    auto agent = make_agent(make_model(io.get_executor()));
    sqlite_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
    turn_outcome t;
    const auto t0 = clock_type::now();
    {
        fault::armed a({.root = dir.string(), .calls = fault::all_calls, .trace = true});
        t = run_turn(io, r.run(turn_options(3), turn_text(3)));
    }
    if (seconds) *seconds = seconds_since(t0);
    BOOST_TEST_REQUIRE(!t.error, failure_of(t));
    BOOST_TEST_REQUIRE(t.compactions().size() == 1u);
    return fault::trace();
}

} // namespace

BOOST_AUTO_TEST_SUITE(sqlite_faults)

// Another connection holds the lock during an append: the append waits busy_timeout, fails
// with busy and a message saying so, and writes nothing; the caller's copy is unchanged.
// Once the lock is released the same append succeeds, and the event is stored once.
BOOST_AUTO_TEST_CASE(an_append_under_another_connections_lock_waits_then_fails_and_writes_nothing) {
    for (const auto& lk : lock_kinds) {
        BOOST_TEST_CONTEXT(lk.name) {
            const fs::path dir = scratch("locked");
            const fs::path db = dir / "s.db";
            asio::io_context io;
            lb::sqlite_store st(io.get_executor(), store_options(db, std::chrono::milliseconds(300)));
            lb::session s = make_session(st, 2);
            const lb::event e = text_event("under the lock");
            auto other = std::make_unique<raw_db>(db.string());
            BOOST_TEST_REQUIRE(other->exec(lk.take) == "");

            lb::session copy = s;
            lb::diagnostics diag;
            std::int64_t seq = -1;
            const auto t0 = clock_type::now();
            BOOST_TEST((copy.last_sequence == 2));
            const auto ec = st.append(copy, e, seq, &diag);
            const double waited = seconds_since(t0);
            BOOST_TEST((ec == lb::errc::busy), ec.message());
            BOOST_TEST(waited >= 0.25, "gave up after " << waited << " s (busy_timeout 0.3 s)");
            BOOST_TEST(waited < 5.0);
            BOOST_TEST(diag.message() == "sqlite_store: the database stayed locked by another connection beyond busy_timeout");
            BOOST_TEST(seq == 0);
            BOOST_TEST(copy.last_sequence == 2);
            BOOST_TEST(copy.events.size() == 2u);
            BOOST_TEST(other->value("SELECT count(*) FROM events") == 2); // nothing written

            // Reads: a write lock leaves them alone; an exclusive locking mode does not.
            std::optional<lb::session> got;
            lb::diagnostics gdiag;
            const auto gec = st.get(lb::session_key{"app", "u1", "s1"}, {}, got, &gdiag);
            if (lk.blocks_reads) {
                BOOST_TEST((gec == lb::errc::busy), gec.message() << ": " << gdiag.message());
                BOOST_TEST(contains(gdiag.message(), "locked"), gdiag.message());
            } else {
                BOOST_TEST(!gec, gdiag.message());
                BOOST_TEST_REQUIRE(got.has_value());
                BOOST_TEST(got->events.size() == 2u);
            }

            if (*lk.release) BOOST_TEST(other->exec(lk.release) == "");
            else other.reset();
            BOOST_TEST(!st.append(copy, e, seq, &diag), diag.message());
            BOOST_TEST(seq == 3);
            BOOST_TEST(!st.append(copy, text_event("after"), seq));
            BOOST_TEST(seq == 4);
            asio::io_context io2;
            lb::sqlite_store fresh(io2.get_executor(), store_options(db));
            std::optional<lb::session> all;
            BOOST_TEST_REQUIRE(!fresh.get(lb::session_key{"app", "u1", "s1"}, {}, all));
            BOOST_TEST_REQUIRE(all.has_value());
            BOOST_TEST_REQUIRE(all->events.size() == 4u);
            BOOST_TEST(all->events[2].id == e.id);
            BOOST_TEST(all->events[2].text() == "under the lock");
            BOOST_TEST(all->events[3].text() == "after");
            BOOST_TEST(all->events[3].id != e.id);
        }
    }
}

// A whole batch under the lock: all or nothing, then all.
BOOST_AUTO_TEST_CASE(a_batch_under_a_lock_writes_nothing_then_everything) {
    const fs::path dir = scratch("locked_batch");
    const fs::path db = dir / "s.db";
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), store_options(db, std::chrono::milliseconds(200)));
    lb::session s = make_session(st, 1);
    std::vector<lb::event> batch{text_event("b1"), text_event("b2"), text_event("b3")};
    raw_db other(db.string());
    BOOST_TEST_REQUIRE(other.exec("BEGIN IMMEDIATE") == "");
    std::int64_t seq = -1;
    lb::diagnostics diag;
    BOOST_TEST((s.events.size() == 1u));
    BOOST_TEST((st.append_batch(s, batch, seq, &diag) == lb::errc::busy));
    BOOST_TEST(contains(diag.message(), "busy_timeout"), diag.message());
    BOOST_TEST(s.last_sequence == 1);
    BOOST_TEST(other.value("SELECT count(*) FROM events") == 1);
    BOOST_TEST(other.exec("ROLLBACK") == "");
    BOOST_TEST(!st.append_batch(s, batch, seq, &diag), diag.message());
    BOOST_TEST(seq == 4);
    BOOST_TEST(other.value("SELECT count(*) FROM events") == 4);
    BOOST_TEST(other.value("SELECT count(DISTINCT json_extract(data, '$.id')) FROM events") == 4);
}

// A signed runner's turn meets the lock: at its first append (the lock taken before the
// turn), and in its middle (taken while the model answers, after the user message and the
// tool call were stored). The turn fails with busy, naming the event and the store's words;
// what it stored stays, and the next turn, the lock gone, continues the chain.
BOOST_AUTO_TEST_CASE(a_runner_turn_meets_a_locked_database) {
    const fs::path dir = scratch("locked_turn");
    const fs::path db = dir / "s.db";
    const auto busy = std::chrono::milliseconds(300);
    std::unique_ptr<raw_db> other;
    bool lock_in_model = false;
    turn_env env(db, busy, [&](const lb::llm_request& r) {
        // The second request of a turn (the tool's result is in): lock now.
        if (lock_in_model && std::holds_alternative<lb::tool_response_part>(r.messages.back().parts.front())) {
            other = std::make_unique<raw_db>(db.string());
            BOOST_TEST_REQUIRE(other->exec("BEGIN IMMEDIATE") == "");
        }
    });
    std::vector<acked_event> acked;
    auto t1 = env.turn(1);
    BOOST_TEST_REQUIRE(!t1.error, failure_of(t1));
    add_acked(acked, t1);

    // Locked before the turn: its first append (the user message) fails.
    other = std::make_unique<raw_db>(db.string());
    BOOST_TEST_REQUIRE(other->exec("BEGIN IMMEDIATE") == "");
    auto t2 = env.turn(2);
    BOOST_TEST((t2.code() == lb::errc::busy), failure_of(t2));
    BOOST_TEST(contains(t2.what(), "storing event 1 of the turn (user_message"), t2.what());
    BOOST_TEST(contains(t2.what(), "stayed locked by another connection beyond busy_timeout"), t2.what());
    BOOST_TEST(t2.events.empty());
    other.reset();

    // Locked while the model answers the tool's result: the answer's append fails.
    lock_in_model = true;
    auto t3 = env.turn(3);
    lock_in_model = false;
    // Which append meets the lock depends on how far the runner got: the agent runs ahead of
    // it (its stream buffers), so the tool's response may or may not be stored yet.
    BOOST_TEST((t3.code() == lb::errc::busy), failure_of(t3));
    BOOST_TEST(contains(t3.what(), "storing event "), t3.what());
    BOOST_TEST(contains(t3.what(), "stayed locked by another connection beyond busy_timeout"), t3.what());
    add_acked(acked, t3);
    BOOST_TEST(acked.size() >= 4u + 1u); // turn 1 whole, and at least turn 3's user message
    other.reset();

    auto t4 = env.turn(4);
    BOOST_TEST(!t4.error, failure_of(t4));
    add_acked(acked, t4);
    auto s = fresh_load(db);
    BOOST_TEST_REQUIRE(s.has_value());
    const auto extra = check_loaded(*s, acked);
    BOOST_TEST(extra.empty(), "stored although its append failed: " << first_of(extra));
    BOOST_TEST(newest_question(*s) == 4);
    BOOST_TEST(state_int(*s, "app:turn") == 4);
}

// A lock released while an append waits for it: the append goes through, the turn completes.
BOOST_AUTO_TEST_CASE(a_lock_released_within_busy_timeout_lets_the_turn_through) {
    const fs::path dir = scratch("released");
    const fs::path db = dir / "s.db";
    std::unique_ptr<raw_db> other;
    std::thread releaser;
    bool armed_lock = true;
    turn_env env(db, std::chrono::milliseconds(5000), [&](const lb::llm_request&) {
        if (!armed_lock) return;
        armed_lock = false;
        other = std::make_unique<raw_db>(db.string());
        BOOST_TEST_REQUIRE(other->exec("BEGIN IMMEDIATE") == "");
        releaser = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            other->exec("ROLLBACK");
        });
    });
    const auto t0 = clock_type::now();
    auto t = env.turn(1);
    const double took = seconds_since(t0);
    releaser.join();
    BOOST_TEST(!t.error, failure_of(t));
    BOOST_TEST(took >= 0.15, "the turn did not wait for the lock (" << took << " s)");
    std::vector<acked_event> acked;
    add_acked(acked, t);
    BOOST_TEST(acked.size() == 4u);
    auto s = fresh_load(db);
    BOOST_TEST_REQUIRE(s.has_value());
    BOOST_TEST(check_loaded(*s, acked).empty());
}

// SQLite's writes and syncs (the WAL's and, at the turn's checkpoint, the database file's)
// fail at every call of a compacting turn, in turn: ENOSPC from then on (the failing write
// cut short), EIO at that call only. The turn fails with io_error and SQLite's words, or
// completes (SQLite absorbs a failure the turn does not depend on: a checkpoint's); the
// same store then runs the next turn; a fresh store has every acknowledged event and
// nothing a failed append wrote.
BOOST_AUTO_TEST_CASE(every_write_and_sync_of_a_turn_failing) {
    const fs::path root = scratch("matrix");
    std::size_t trials = 0, failed_turns = 0;
    for (const auto sync : {lb::sqlite_synchronous::normal, lb::sqlite_synchronous::full}) {
        const fs::path pre = root / "prelude", dir = root / "trial";
        const auto before = prelude(pre, sync);
        const auto trace = count_calls(pre, dir, sync);
        BOOST_TEST_MESSAGE(name_of(sync) << ", a compacting turn: " << trace.size() << " calls");
        for (std::size_t i = 0; i < trace.size(); ++i)
            BOOST_TEST_MESSAGE("  " << i + 1 << ": " << fault::describe(trace[i], dir.string()));
        // The interposition reaches libsqlite3: a turn writes its WAL.
        BOOST_TEST_REQUIRE(trace.size() >= 4u);
        struct variant {
            const char* name;
            int error;
            bool sticky, short_write;
        };
        const variant variants[] = {{"ENOSPC from this call on, the write cut short", ENOSPC, true, true},
                                    {"EIO at this call only", EIO, false, false}};
        // The first and the last of each run of like calls (the frames of one commit are
        // written one pwrite each: failing the third of twelve is like failing the fourth).
        auto like = [&](std::size_t a, std::size_t b) {
            return trace[a - 1].kind == trace[b - 1].kind && trace[a - 1].path == trace[b - 1].path;
        };
        for (std::size_t k = 1; k <= trace.size(); ++k) {
            if (trace[k - 1].kind == fault::call::ftruncate) continue; // SQLite's own, not a write or sync
            if (k > 1 && k < trace.size() && like(k - 1, k) && like(k, k + 1)) continue;
            for (const auto& v : variants) {
                BOOST_TEST_CONTEXT(name_of(sync) << ", call " << k << " of " << trace.size() << " ("
                                                 << fault::describe(trace[k - 1], dir.string()) << "), " << v.name) {
                    ++trials;
                    copy_dir(pre, dir);
                    std::vector<acked_event> acked = before;
                    asio::io_context io;
                    lb::sqlite_store st(io.get_executor(), turn_store_options(dir / "s.db", sync));
                    auto agent = make_agent(make_model(io.get_executor()));
                    sqlite_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
                    turn_outcome t;
                    {
                        fault::armed a({.root = dir.string(), .calls = fault::all_calls, .at = k, .error = v.error,
                                        .sticky = v.sticky, .short_write = v.short_write});
                        t = run_turn(io, r.run(turn_options(3), turn_text(3)));
                    }
                    BOOST_TEST(fault::hits() >= 1u, "the fault never fired");
                    add_acked(acked, t);
                    if (t.error) {
                        ++failed_turns;
                        BOOST_TEST((t.code() == lb::errc::io_error), failure_of(t));
                        BOOST_TEST(contains(t.what(), "sqlite_store: "), t.what());
                        BOOST_TEST((contains(t.what(), "disk I/O error") || contains(t.what(), "disk is full")), t.what());
                    }
                    if (auto s = fresh_load(dir / "s.db")) {
                        const auto extra = check_loaded(*s, acked);
                        BOOST_TEST(extra.empty(), "stored although its append failed: " << first_of(extra) << " ("
                                                                                        << failure_of(t) << ")");
                    } else {
                        BOOST_TEST(false, "the session is gone");
                    }
                    auto t2 = run_turn(io, r.run(turn_options(4), turn_text(4)));
                    BOOST_TEST(!t2.error, "the turn after the fault: " << failure_of(t2));
                    add_acked(acked, t2);
                    auto s = fresh_load(dir / "s.db");
                    BOOST_TEST_REQUIRE(s.has_value());
                    const auto extra = check_loaded(*s, acked);
                    BOOST_TEST(extra.empty(), "stored although its append failed: " << first_of(extra));
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(trials << " trials, " << failed_turns << " turns failed");
    fs::remove_all(root);
}

// A child process runs a compacting turn (turn 3, checkpointing inside it) and the turn after
// it, reporting each acknowledged event through a pipe, and dies by SIGKILL: in even trials
// from inside the shim at the k-th write, sync or truncate SQLite makes (k random; a write cut
// in half first in one of two), in odd trials after a random delay. WAL mode survives a
// process crash at synchronous normal and full alike: every acknowledged event is there.
BOOST_AUTO_TEST_CASE(sigkill_at_random_points_of_a_compacting_turn) {
    const fs::path root = scratch("kill");
    const lb::sqlite_synchronous modes[] = {lb::sqlite_synchronous::normal, lb::sqlite_synchronous::full};
    struct base {
        fs::path prelude;
        std::vector<acked_event> acked;
        std::size_t calls = 0;
        double seconds = 0;
    };
    std::vector<base> bases;
    for (const auto sync : modes) {
        base b;
        b.prelude = root / (std::string("prelude_") + (sync == lb::sqlite_synchronous::full ? "full" : "normal"));
        b.acked = prelude(b.prelude, sync);
        b.calls = count_calls(b.prelude, root / "count", sync, &b.seconds).size();
        bases.push_back(std::move(b));
    }
    const unsigned seed = std::random_device{}();
    BOOST_TEST_MESSAGE("seed " << seed);
    std::mt19937 rng(seed);
    const fs::path dir = root / "trial";
    int killed_mid_turn = 0;
    constexpr int trials = 24;
    for (int trial = 0; trial < trials; ++trial) {
        const auto sync = modes[trial % 2];
        const base& b = bases[trial % 2];
        const bool in_shim = (trial / 2) % 2 == 0;
        const std::size_t k = std::uniform_int_distribution<std::size_t>(1, b.calls)(rng);
        const bool cut = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
        const auto delay = std::chrono::microseconds(
            std::uniform_int_distribution<long>(0, static_cast<long>(b.seconds * 1.5e6))(rng));
        BOOST_TEST_CONTEXT("trial " << trial << " (seed " << seed << "), " << name_of(sync) << ", "
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
                lb::sqlite_store st(io.get_executor(), turn_store_options(dir / "s.db", sync));
                auto agent = make_agent(make_model(io.get_executor()));
                sqlite_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
                if (in_shim)
                    fault::arm({.root = dir.string(), .calls = fault::all_calls, .at = k, .short_write = cut, .kill = true});
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
            lb::sqlite_store st(io.get_executor(), turn_store_options(dir / "s.db", sync));
            auto s = load_session(io, st);
            BOOST_TEST_REQUIRE(s.has_value());
            const auto extra = check_loaded(*s, acked);
            BOOST_TEST(s->last_sequence - newest_acked == static_cast<std::int64_t>(extra.size()),
                       "an unacknowledged event before an acknowledged one");
            auto agent = make_agent(make_model(io.get_executor()));
            sqlite_runner r{agent, st, compaction(), sign_test::checksum_signer{}};
            auto t = run_turn(io, r.run(turn_options(5), turn_text(5)));
            BOOST_TEST(!t.error, failure_of(t));
            add_acked(acked, t);
            auto again = load_session(io, st);
            BOOST_TEST_REQUIRE(again.has_value());
            check_loaded(*again, acked);
        }
    }
    BOOST_TEST_MESSAGE(killed_mid_turn << " of " << trials << " children killed inside a turn");
    BOOST_TEST(killed_mid_turn >= trials / 2);
    fs::remove_all(root);
}

BOOST_AUTO_TEST_SUITE_END()
