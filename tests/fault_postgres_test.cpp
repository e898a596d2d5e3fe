// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Fault injection on postgres_store (docs/reliability.md, "Fault injection"): the server
// stopped, crashed and restarted in the middle of a signed, compacting runner turn (while
// the model "thinks", between two appends, at a random moment) and between turns. The test
// starts its own server (scripts/pg-server, its own state directory and port, with
// synchronous_commit on: a crash must not lose a commit the store acknowledged), so the
// shared test server is never disturbed.
//
// After each: the turn failed cleanly (errc::io_error, the store's words naming the
// connection failure) or completed; the same store reconnects once the server is back and
// the next turn works; a fresh store loads the session, its signed chain verifies, every
// acknowledged event is there, nothing twice. A write whose connection dies before its
// reply may have been committed (postgres_store does not retry writes): such an event
// may be stored though its turn failed, after every acknowledged one.
#include "fault_test_support.hpp"

#include <libretto/store/postgres_store.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace fault_support;
using runner_support::load_session;
using runner_support::run_turn;

using pg_runner = fault_runner<lb::postgres_store>;

/// A PostgreSQL server of this test's own (scripts/pg-server), stopped and started at will.
class own_server {
public:
    explicit own_server(fs::path state) : state_(std::move(state)) {
        const char* src = std::getenv("LIBRETTO_SOURCE_DIR");
        script_ = (src && *src ? fs::path(src) : fs::path(__FILE__).parent_path().parent_path()) / "scripts" / "pg-server";
        ::setenv("LIBRETTO_PG_EXTRA_OPTIONS", "-c synchronous_commit=on", 1);
        run("start");
        ::unsetenv("LIBRETTO_PG_EXTRA_OPTIONS");
        std::ifstream in(state_ / "conninfo");
        std::getline(in, conninfo_);
        if (conninfo_.empty()) throw std::runtime_error("own_server: no conninfo in " + state_.string());
        // Short waits: a refused connection fails at once, a dead server must not stall a test.
        conninfo_ += " connect_timeout=5";
    }
    ~own_server() {
        try {
            run("stop");
        } catch (...) {
        }
    }
    own_server(const own_server&) = delete;
    own_server& operator=(const own_server&) = delete;

    const std::string& conninfo() const { return conninfo_; }
    /// Stops the server: `fast` ends its sessions and shuts down cleanly, `immediate` kills it
    /// (crash recovery at the next start).
    void halt(const char* mode = "fast") { run("halt", mode); }
    void restart() { run("restart"); }

private:
    void run(const std::string& action, const char* arg = nullptr) const {
        std::string cmd = "'" + script_.string() + "' " + action + " '" + state_.string() + "'";
        if (arg) cmd += std::string(" ") + arg;
        cmd += " 2>>'" + (state_.parent_path() / "pg-server.log").string() + "'";
        if (std::system(cmd.c_str()) != 0) throw std::runtime_error("own_server: failed: " + cmd);
    }

    fs::path state_;
    fs::path script_;
    std::string conninfo_;
};

/// One server for the whole file (initdb costs seconds).
own_server& server() {
    static own_server s(fault_support::scratch("own-pg") / "state");
    return s;
}

lb::postgres_store_options store_options(const std::string& schema) {
    lb::postgres_store_options o;
    o.conninfo = server().conninfo();
    o.schema = schema;
    o.pool_size = 2;
    o.connect_timeout = std::chrono::milliseconds(5000);
    o.acquire_timeout = std::chrono::milliseconds(5000);
    return o;
}

/// A store, a runner over it, and the model's hook (the test's hand inside a turn).
struct turn_env {
    asio::io_context io;
    lb::postgres_store store;
    model_hook hook_;
    fault_agent agent;
    pg_runner runner;
    explicit turn_env(const std::string& schema)
        : store(io.get_executor(), store_options(schema)),
          // the_server_crashes_at_random_moments: up to 6 x 41 turns, some of two requests.
          agent(make_agent(make_model(io.get_executor(), 600, [this](const lb::llm_request& r) {
              if (hook_) hook_(r);
          }))),
          runner(agent, store, compaction(), sign_test::checksum_signer{}) {}
    turn_outcome turn(int n, std::string session = "s1") {
        return run_turn(io, runner.run(turn_options(n, std::move(session)), turn_text(n)));
    }
};

std::optional<lb::session> fresh_load(const std::string& schema, std::string session = "s1") {
    asio::io_context io;
    lb::postgres_store st(io.get_executor(), store_options(schema));
    return load_session(io, st, std::move(session));
}

/// The checks after a fault: a fresh store has every acknowledged event, the chain verifies,
/// nothing twice; at most `unacked_allowed` events not acknowledged (one per failed turn at
/// most: a committed write whose reply was lost; the next turn chains after it).
void check_fresh(const std::string& schema, const std::vector<acked_event>& acked, std::size_t unacked_allowed,
                 const std::string& session = "s1") {
    auto s = fresh_load(schema, session);
    BOOST_TEST_REQUIRE(s.has_value());
    const auto extra = check_loaded(*s, acked);
    BOOST_TEST(extra.size() <= unacked_allowed, "stored without being acknowledged: " << first_of(extra));
}

bool is_first_request(const lb::llm_request& r) {
    for (const auto& p : r.messages.back().parts)
        if (std::holds_alternative<lb::tool_response_part>(p)) return false;
    return true;
}

/// The failure of a turn whose store lost its server: io_error, in the store's words.
void check_connection_failure(const turn_outcome& t) {
    BOOST_TEST((t.code() == lb::errc::io_error), failure_of(t));
    BOOST_TEST(contains(t.what(), "postgres_store: "), t.what());
    BOOST_TEST((contains(t.what(), "cannot connect") || contains(t.what(), "connection") ||
                contains(t.what(), "server") || contains(t.what(), "terminating")),
               t.what());
}

} // namespace

BOOST_AUTO_TEST_SUITE(postgres_faults)

// The server stops (fast, then as a crash) while the model answers the turn's first request:
// the user message is stored, the model's reply cannot be. The turn fails with io_error; a
// get meanwhile fails the same way; the server comes back and the same store, runner and
// session go on.
BOOST_AUTO_TEST_CASE(the_server_stops_while_the_model_thinks) {
    for (const char* mode : {"fast", "immediate"}) {
        BOOST_TEST_CONTEXT("halt " << mode) {
            const std::string schema = std::string("fault_think_") + mode;
            turn_env env(schema);
            std::vector<acked_event> acked;
            auto t1 = env.turn(1);
            BOOST_TEST_REQUIRE(!t1.error, failure_of(t1));
            add_acked(acked, t1);
            const std::size_t t1_acked = acked.size();

            bool halt_now = true;
            env.hook_ = [&](const lb::llm_request& r) {
                if (halt_now && is_first_request(r)) {
                    halt_now = false;
                    server().halt(mode);
                }
            };
            auto t2 = env.turn(2);
            env.hook_ = {};
            check_connection_failure(t2);
            BOOST_TEST_MESSAGE("halt " << mode << " while the model thinks: " << t2.what());
            add_acked(acked, t2);
            BOOST_TEST(acked.size() == t1_acked + 1); // the user message, stored before the model was asked
            {
                std::optional<lb::session> got;
                lb::diagnostics diag;
                auto [ec, s] = [&] {
                    std::pair<boost::system::error_code, std::optional<lb::session>> out;
                    env.store.async_get(lb::session_key{"app", "u1", "s1"}, lb::get_options{}, diag,
                                        [&](boost::system::error_code e, std::optional<lb::session> v) {
                                            out = {e, std::move(v)};
                                        });
                    env.io.run();
                    env.io.restart();
                    return out;
                }();
                BOOST_TEST((ec == lb::errc::io_error), ec.message());
                BOOST_TEST(contains(diag.message(), "cannot connect"), diag.message());
            }
            server().restart();
            auto t3 = env.turn(3);
            BOOST_TEST(!t3.error, "the turn after the restart: " << failure_of(t3));
            add_acked(acked, t3);
            check_fresh(schema, acked, 0);
        }
    }
}

// The server stops and starts again between two appends of a turn (while the model answers
// the tool's result; the runner may still be storing the tool's response): every pooled
// connection is dead. The turn completes (the store drops dead idle connections and opens
// new ones) or fails cleanly if an append was on the wire; then the next turn works.
BOOST_AUTO_TEST_CASE(the_server_restarts_between_two_appends) {
    int completed = 0;
    for (int round = 0; round < 4; ++round) {
        const char* mode = round % 2 == 0 ? "fast" : "immediate";
        BOOST_TEST_CONTEXT("round " << round << ", halt " << mode) {
            const std::string schema = "fault_between_" + std::to_string(round);
            turn_env env(schema);
            std::vector<acked_event> acked;
            auto t1 = env.turn(1);
            BOOST_TEST_REQUIRE(!t1.error, failure_of(t1));
            add_acked(acked, t1);
            bool once = true;
            env.hook_ = [&](const lb::llm_request& r) {
                if (once && !is_first_request(r)) {
                    once = false;
                    server().halt(mode);
                    server().restart();
                }
            };
            auto t2 = env.turn(2);
            env.hook_ = {};
            BOOST_TEST(!once, "the hook never ran");
            if (t2.error) check_connection_failure(t2);
            else ++completed;
            add_acked(acked, t2);
            auto t3 = env.turn(3);
            BOOST_TEST(!t3.error, "the turn after the restart: " << failure_of(t3));
            add_acked(acked, t3);
            check_fresh(schema, acked, t2.error ? 1 : 0);
        }
    }
    BOOST_TEST_MESSAGE(completed << " of 4 turns completed across the restart");
}

// The server stops between two turns and comes back: the pool's idle connections are dead;
// the next turn must not fail on them.
BOOST_AUTO_TEST_CASE(the_server_restarts_between_turns) {
    for (const char* mode : {"fast", "immediate"}) {
        BOOST_TEST_CONTEXT("halt " << mode) {
            const std::string schema = std::string("fault_idle_") + mode;
            turn_env env(schema);
            std::vector<acked_event> acked;
            for (int n = 1; n <= 4; ++n) {
                if (n > 1) {
                    server().halt(mode);
                    server().restart();
                }
                auto t = env.turn(n);
                BOOST_TEST(!t.error, "turn " << n << ": " << failure_of(t));
                add_acked(acked, t);
            }
            check_fresh(schema, acked, 0);
        }
    }
}

// The server crashes (immediate) at a random moment while turns run one after another, is
// restarted, and the turns go on; several rounds. Whatever moment the crash hits (a connect,
// an append on the wire, a read, a compaction), nothing acknowledged is lost and nothing is
// stored twice.
BOOST_AUTO_TEST_CASE(the_server_crashes_at_random_moments) {
    const unsigned seed = std::random_device{}();
    BOOST_TEST_MESSAGE("seed " << seed);
    std::mt19937 rng(seed);
    const std::string schema = "fault_random";
    turn_env env(schema);
    std::vector<acked_event> acked;
    int n = 0, failed = 0;
    for (int round = 0; round < 6; ++round) {
        const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 150)(rng));
        BOOST_TEST_CONTEXT("round " << round << " (seed " << seed << "), crash after " << delay.count() << " ms") {
            std::atomic<bool> crashed{false};
            std::thread crasher([&] {
                std::this_thread::sleep_for(delay);
                server().halt("immediate");
                crashed = true;
            });
            // Turns until one fails (the crash); the round's other turns all complete.
            for (int i = 0; i < 40; ++i) {
                auto t = env.turn(++n);
                add_acked(acked, t);
                if (t.error) {
                    check_connection_failure(t);
                    if (round == 0) BOOST_TEST_MESSAGE("a turn the crash failed: " << t.what());
                    ++failed;
                    break;
                }
            }
            crasher.join();
            BOOST_TEST(crashed.load());
            server().restart();
            auto t = env.turn(++n);
            BOOST_TEST(!t.error, "the turn after the restart: " << failure_of(t));
            add_acked(acked, t);
            check_fresh(schema, acked, static_cast<std::size_t>(failed));
        }
    }
    BOOST_TEST_MESSAGE(n << " turns, " << failed << " failed by a crash");
}

BOOST_AUTO_TEST_SUITE_END()
