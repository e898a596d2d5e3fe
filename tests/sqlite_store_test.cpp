// What is particular to sqlite_store: the file format (WAL, schema version, migrations),
// batch appends, locking between connections, corrupt rows and files, size limits, and
// where the blocking work runs. The shared semantics are in conformance/sqlite_store_test.cpp.
#include <libretto/event/json.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/sqlite_store.hpp>

#include "conformance/store_conformance.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using namespace conformance;
namespace lb = libretto;

// A fresh database path in the test's working directory; the files go when it does.
struct temp_db {
    std::string path;
    temp_db() {
        static std::atomic<int> counter{0};
        path = "sqlite-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".db";
        clean();
    }
    ~temp_db() { clean(); }
    void clean() const {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
    }
    lb::sqlite_store_options options() const {
        lb::sqlite_store_options o;
        o.path = path;
        return o;
    }
};

// A plain SQLite connection, to look at (and tamper with) what the store wrote.
struct raw_db {
    sqlite3* db = nullptr;
    explicit raw_db(const std::string& path) {
        BOOST_REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
        sqlite3_busy_timeout(db, 2000);
    }
    ~raw_db() { sqlite3_close(db); }
    void exec(const std::string& sql) {
        char* err = nullptr;
        int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
        BOOST_REQUIRE_MESSAGE(rc == SQLITE_OK, sql << ": " << (err ? err : "?"));
        sqlite3_free(err);
    }
    std::string text(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        BOOST_REQUIRE_MESSAGE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK, sqlite3_errmsg(db));
        std::string out;
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
            out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        return out;
    }
    long long integer(const std::string& sql) { return std::stoll(text(sql)); }
    void insert_event(const std::string& app, const std::string& user, const lb::event& e) {
        sqlite3_stmt* s = nullptr;
        BOOST_REQUIRE(sqlite3_prepare_v2(db, "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", -1, &s, nullptr) == SQLITE_OK);
        const std::string data = lb::serialize_event(e);
        sqlite3_bind_text(s, 1, app.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 2, user.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, e.session_id.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 4, e.sequence);
        sqlite3_bind_double(s, 5, e.timestamp);
        sqlite3_bind_text(s, 6, data.c_str(), -1, SQLITE_TRANSIENT);
        BOOST_REQUIRE(sqlite3_step(s) == SQLITE_DONE);
        sqlite3_finalize(s);
    }
};

template <class Store>
asio::awaitable<error_code> batch_ec(Store& st, lb::session& s, std::vector<lb::event>& events) {
    auto op = st.async_append_batch(s, std::move(events), asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<error_code> batch_ec(Store& st, lb::session& s, std::vector<lb::event>& events, lb::diagnostics& d) {
    auto op = st.async_append_batch(s, std::move(events), d, asio::as_tuple(asio::use_awaitable));
    auto r = co_await std::move(op);
    co_return std::get<0>(r);
}

template <class Store>
asio::awaitable<std::int64_t> batch(Store& st, lb::session& s, std::vector<lb::event>& events) {
    auto op = st.async_append_batch(s, std::move(events), asio::use_awaitable);
    co_return co_await std::move(op);
}

template <class Store>
asio::awaitable<error_code> create_in(Store& st, std::string app, std::string user, std::string id) {
    lb::create_options o = create_opts(std::move(app), std::move(user), std::move(id));
    co_return co_await create_ec(st, std::move(o));
}

template <class Store>
asio::awaitable<error_code> create_in(Store& st, std::string app, std::string user, std::string id, lb::diagnostics& d) {
    lb::create_options o = create_opts(std::move(app), std::move(user), std::move(id));
    co_return co_await create_ec(st, std::move(o), d);
}

template <class Store>
asio::awaitable<error_code> get_full_ec(Store& st, const lb::session& s) {
    lb::session_key k = key_of(s);
    co_return co_await get_ec(st, k.app_name, k.user_id, k.session_id);
}

template <class Store>
asio::awaitable<error_code> get_full_ec(Store& st, const lb::session& s, lb::diagnostics& d) {
    lb::session_key k = key_of(s);
    co_return co_await get_ec(st, k.app_name, k.user_id, k.session_id, d);
}

std::vector<lb::event> turn(int n, const std::string& prefix) {
    std::vector<lb::event> v;
    for (int i = 0; i < n; ++i) v.push_back(text_event(prefix + std::to_string(i)));
    return v;
}

// The schema of version 1, as that version created it (kept verbatim: never edit).
constexpr const char* schema_v1 = R"sql(
CREATE TABLE libretto_schema (version INTEGER NOT NULL);
INSERT INTO libretto_schema VALUES (1);
CREATE TABLE sessions (
    app_name      TEXT    NOT NULL,
    user_id       TEXT    NOT NULL,
    session_id    TEXT    NOT NULL,
    state         TEXT    NOT NULL DEFAULT '{}',
    create_time   REAL    NOT NULL,
    last_update   REAL    NOT NULL,
    last_sequence INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (app_name, user_id, session_id)
);
CREATE INDEX sessions_by_app  ON sessions (app_name, last_update DESC, session_id);
CREATE TABLE events (
    app_name   TEXT    NOT NULL,
    user_id    TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    sequence   INTEGER NOT NULL,
    timestamp  REAL    NOT NULL,
    data       TEXT    NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, sequence),
    FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, session_id) ON DELETE CASCADE
);
CREATE TABLE app_state (
    app_name TEXT NOT NULL,
    key      TEXT NOT NULL,
    value    TEXT NOT NULL,
    PRIMARY KEY (app_name, key)
) WITHOUT ROWID;
CREATE TABLE user_state (
    app_name TEXT NOT NULL,
    user_id  TEXT NOT NULL,
    key      TEXT NOT NULL,
    value    TEXT NOT NULL,
    PRIMARY KEY (app_name, user_id, key)
) WITHOUT ROWID;
)sql";

} // namespace

BOOST_AUTO_TEST_SUITE(sqlite_store_file)

BOOST_AUTO_TEST_CASE(wal_mode_foreign_keys_and_schema_version) {
    temp_db db;
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), db.options());
    raw_db raw(db.path);
    BOOST_TEST(raw.text("PRAGMA journal_mode") == "wal");
    BOOST_TEST(raw.integer("SELECT version FROM libretto_schema") == lb::sqlite_store::schema_version);
    BOOST_TEST(raw.integer("SELECT count(*) FROM libretto_schema") == 1);
    for (const char* table : {"sessions", "events", "app_state", "user_state"})
        BOOST_TEST(raw.integer(std::string("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='") + table +
                               "'") == 1);
    // Reopening an up-to-date database changes nothing.
    lb::sqlite_store again(io.get_executor(), db.options());
    BOOST_TEST(raw.integer("SELECT version FROM libretto_schema") == lb::sqlite_store::schema_version);
}

BOOST_AUTO_TEST_CASE(migrates_a_version_1_database) {
    temp_db db;
    {
        raw_db raw(db.path);
        raw.exec(schema_v1);
        raw.exec("INSERT INTO sessions VALUES ('app', 'u1', 's1', '{\"topic\":\"tides\"}', 10, 13, 3)");
        raw.exec("INSERT INTO user_state VALUES ('app', 'u1', 'name', '\"Ada\"')");
        for (int seq = 1; seq <= 3; ++seq) {
            lb::event e = text_event("old" + std::to_string(seq), 10 + seq);
            e.sequence = seq;
            e.session_id = "s1";
            if (seq == 3) e.actions.compaction = lb::event_compaction{1, 2, 11, 12, "summary of 1-2", 2};
            raw.insert_event("app", "u1", e);
        }
        // A version-1 session whose compaction is not the newest event, and a corrupt row:
        // the backfill must cope with both.
        raw.exec("INSERT INTO sessions VALUES ('app', 'u1', 's2', '{}', 10, 12, 2)");
        lb::event c = text_event("summary", 11);
        c.sequence = 1;
        c.session_id = "s2";
        c.actions.compaction = lb::event_compaction{1, 1, 0, 0, "s", 1};
        raw.insert_event("app", "u1", c);
        raw.exec("INSERT INTO events VALUES ('app', 'u1', 's2', 2, 12, '{broken')");
        // Compactions another tool wrote with a reversed range and an empty summary: the
        // backfill leaves them out (they cover nothing).
        raw.exec("INSERT INTO sessions VALUES ('app', 'u1', 's3', '{}', 10, 14, 4)");
        for (int seq = 1; seq <= 4; ++seq) {
            lb::event e = text_event("s3 " + std::to_string(seq), 10 + seq);
            e.sequence = seq;
            e.session_id = "s3";
            if (seq == 3) e.actions.compaction = lb::event_compaction{2, 1, 0, 0, "reversed", 1};
            if (seq == 4) e.actions.compaction = lb::event_compaction{1, 2, 0, 0, "", 2};
            raw.insert_event("app", "u1", e);
        }
    }
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        raw_db raw(db.path);
        BOOST_TEST(raw.integer("SELECT version FROM libretto_schema") == lb::sqlite_store::schema_version);
        BOOST_TEST(raw.integer("SELECT compaction_first FROM sessions WHERE session_id = 's1'") == 1);
        BOOST_TEST(raw.integer("SELECT compaction_first FROM sessions WHERE session_id = 's2'") == 1);
        // Version 3: the valid compactions (s2's range reaches its own event: left out).
        BOOST_TEST(raw.text("SELECT sequence || ':' || first_sequence || '-' || last_sequence FROM compactions "
                            "WHERE session_id = 's1'") == "3:1-2");
        BOOST_TEST(raw.integer("SELECT count(*) FROM compactions WHERE session_id IN ('s2', 's3')") == 0);

        auto g = co_await get(st, "app", "u1", "s1");
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST(g->last_sequence == 3);
        BOOST_TEST(g->events.size() == 3u);
        BOOST_TEST(g->state.at("topic").as_string() == "tides");
        BOOST_TEST(g->state.at("user:name").as_string() == "Ada");
        // Appends continue the old sequence and maintain the new column.
        auto c = text_event("summary of 1-3");
        c.actions.compaction = lb::event_compaction{2, 3, 0, 0, "s", 2};
        BOOST_TEST(co_await append(st, *g, c) == 4);
        lb::get_options o;
        o.context_only = true;
        lb::session_key k{"app", "u1", "s1"};
        auto tail = co_await get(st, k, o); // both summaries (neither contains the other), nothing else
        BOOST_REQUIRE_EQUAL(tail->events.size(), 2u);
        BOOST_TEST(tail->events.front().sequence == 3);
        BOOST_TEST(raw.integer("SELECT count(*) FROM compactions WHERE session_id = 's1'") == 2);
        lb::session_key k3{"app", "u1", "s3"};
        auto whole = co_await get(st, k3, o); // the bad compactions hide nothing
        BOOST_TEST(whole->events.size() == 4u);
        // A compaction that contains the others replaces their rows.
        auto all = text_event("summary of 1-4");
        all.actions.compaction = lb::event_compaction{1, 4, 0, 0, "s", 4};
        BOOST_TEST(co_await append(st, *tail, all) == 5);
        BOOST_TEST(raw.text("SELECT sequence || ':' || first_sequence || '-' || last_sequence FROM compactions "
                            "WHERE session_id = 's1'") == "5:1-4");
        tail = co_await get(st, k, o);
        BOOST_REQUIRE_EQUAL(tail->events.size(), 1u);
        BOOST_TEST(tail->events.front().sequence == 5);
    });
}

BOOST_AUTO_TEST_CASE(migrates_a_version_3_database_whose_sessions_have_no_initial_state) {
    temp_db db;
    {
        raw_db raw(db.path);
        raw.exec(schema_v1);
        raw.exec(lb::detail::sqlite::migrations[1].sql); // released migrations: never edited
        raw.exec(lb::detail::sqlite::migrations[2].sql);
        raw.exec("UPDATE libretto_schema SET version = 3");
        raw.exec("INSERT INTO sessions (app_name, user_id, session_id, state, create_time, last_update, last_sequence) "
                 "VALUES ('app', 'u1', 'old', '{\"topic\":\"tides\"}', 10, 10, 0)");
    }
    static_assert(lb::sqlite_store::schema_version == 4);
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        raw_db raw(db.path);
        BOOST_TEST(raw.integer("SELECT version FROM libretto_schema") == 4);
        BOOST_TEST(raw.integer("SELECT initial_state IS NULL FROM sessions WHERE session_id = 'old'") == 1);
        lb::get_options with;
        with.with_initial_state = true;
        lb::session_key k{"app", "u1", "old"};
        auto g = co_await get(st, k, with);
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST(g->initial_state.empty()); // none recorded
        BOOST_TEST(g->state.at("topic").as_string() == "tides");
        BOOST_TEST(co_await append_text(st, *g, "after") == 1);
        // A session created now records it.
        lb::json::object init;
        init["topic"] = "waves";
        init["user:name"] = "Ada";
        lb::create_options co = create_opts("app", "u1", "new", init);
        co_await create_with(st, std::move(co));
        BOOST_TEST(raw.text("SELECT initial_state FROM sessions WHERE session_id = 'new'") == "{\"topic\":\"waves\"}");
        lb::session_key nk{"app", "u1", "new"};
        auto n = co_await get(st, nk, with);
        BOOST_REQUIRE(n.has_value());
        BOOST_TEST(n->initial_state.size() == 1u);
        BOOST_TEST(n->initial_state.at("topic").as_string() == "waves");
    });
}

BOOST_AUTO_TEST_CASE(a_database_with_other_tables_gets_libretto_tables_added) {
    temp_db db;
    {
        raw_db raw(db.path);
        raw.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');");
    }
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), db.options());
    raw_db raw(db.path);
    BOOST_TEST(raw.text("SELECT body FROM notes") == "keep me");
    BOOST_TEST(raw.integer("SELECT version FROM libretto_schema") == lb::sqlite_store::schema_version);
}

BOOST_AUTO_TEST_CASE(a_newer_schema_version_is_refused_and_left_alone) {
    temp_db db;
    asio::io_context io;
    { lb::sqlite_store st(io.get_executor(), db.options()); }
    raw_db raw(db.path);
    raw.exec("UPDATE libretto_schema SET version = 99");
    try {
        lb::sqlite_store st(io.get_executor(), db.options());
        BOOST_FAIL("opened a database of a newer schema version");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == boost::system::errc::not_supported);
        const std::string what = e.what();
        BOOST_TEST_MESSAGE(what);
        BOOST_TEST(what.find("schema version 99") != std::string::npos);
        BOOST_TEST(what.find(db.path) != std::string::npos);
    }
    BOOST_TEST(raw.integer("SELECT version FROM libretto_schema") == 99);
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_sqlite_is_refused_at_open) {
    temp_db db;
    const std::string garbage(8192, 'x');
    {
        std::ofstream f(db.path, std::ios::binary);
        f << "this is a JSONL file, not a database\n" << garbage;
    }
    asio::io_context io;
    try {
        lb::sqlite_store st(io.get_executor(), db.options());
        BOOST_FAIL("opened a file that is not a database");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == lb::errc::corrupt_data);
        const std::string what = e.what();
        BOOST_TEST_MESSAGE(what);
        BOOST_TEST(what.find("not an SQLite database") != std::string::npos);
        BOOST_TEST(what.find(db.path) != std::string::npos);
    }
    std::ifstream f(db.path, std::ios::binary);
    std::string first;
    std::getline(f, first);
    BOOST_TEST(first == "this is a JSONL file, not a database"); // untouched
}

BOOST_AUTO_TEST_CASE(an_empty_path_is_refused) {
    asio::io_context io;
    BOOST_CHECK_EXCEPTION(lb::sqlite_store(io.get_executor(), lb::sqlite_store_options{}), boost::system::system_error,
                          [](const auto& e) { return e.code() == lb::errc::invalid_argument; });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sqlite_store_batches)

BOOST_AUTO_TEST_CASE(a_batch_is_one_transaction_with_consecutive_sequences) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        auto s = co_await create(st, "app", "u1", "s1");
        auto events = turn(8, "t");
        events[2].partial = true; // skipped, like a single partial append
        events[5].actions.state_delta["user:lang"] = "nb";
        events[6].actions.state_delta["temp:scratch"] = 1;
        events[7].actions.state_delta["step"] = 7;
        BOOST_TEST(co_await batch(st, s, events) == 7);
        BOOST_TEST(s.last_sequence == 7);
        BOOST_REQUIRE_EQUAL(s.events.size(), 7u);
        BOOST_TEST(s.state.at("temp:scratch").as_int64() == 1);
        BOOST_TEST(s.state.at("user:lang").as_string() == "nb");
        auto g = co_await get(st, s);
        BOOST_REQUIRE_EQUAL(g->events.size(), 7u);
        for (std::size_t i = 0; i < 7; ++i) {
            BOOST_TEST(g->events[i].sequence == static_cast<std::int64_t>(i + 1));
            BOOST_TEST((g->events[i] == s.events[i]));
        }
        BOOST_TEST(g->state.at("step").as_int64() == 7);
        BOOST_TEST(!g->state.contains("temp:scratch"));
        std::vector<lb::event> none;
        BOOST_TEST(co_await batch(st, s, none) == 0);
        BOOST_TEST(s.last_sequence == 7);
    });
}

BOOST_AUTO_TEST_CASE(a_failing_batch_writes_nothing) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store_options o = db.options();
        o.max_event_bytes = 1024;
        lb::sqlite_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        auto copy = co_await get(st, s);
        co_await append_text(st, s, "first");

        // Stale: the copy was loaded before "first".
        auto stale = turn(4, "stale");
        stale[0].actions.state_delta["app:k"] = 1;
        BOOST_TEST(co_await batch_ec(st, *copy, stale) == lb::errc::stale_session);
        BOOST_TEST(copy->events.empty());
        BOOST_TEST(copy->last_sequence == 0);

        // Oversize, in the middle of the batch.
        auto big = turn(4, "big");
        big[2] = text_event(std::string(4096, 'x'));
        big[0].actions.state_delta["user:k"] = 1;
        BOOST_TEST(co_await batch_ec(st, s, big) == lb::errc::oversize);

        // An event of another session.
        auto foreign = turn(3, "foreign");
        foreign[1].session_id = "someone-else";
        BOOST_TEST(co_await batch_ec(st, s, foreign) == lb::errc::invalid_argument);

        BOOST_TEST(s.last_sequence == 1);
        BOOST_TEST(s.events.size() == 1u);
        auto g = co_await get(st, s);
        BOOST_TEST(g->events.size() == 1u);
        BOOST_TEST(g->last_sequence == 1);
        BOOST_TEST(!g->state.contains("app:k"));
        BOOST_TEST(!g->state.contains("user:k"));
        raw_db raw(db.path);
        BOOST_TEST(raw.integer("SELECT count(*) FROM events") == 1);
        BOOST_TEST(raw.integer("SELECT count(*) FROM app_state") == 0);
        BOOST_TEST(raw.integer("SELECT count(*) FROM user_state") == 0);
    });
}

// any_store of a sqlite_store erases its batch append: still one all-or-nothing
// transaction (an oversize event in the middle stores none of the batch), with sqlite's words.
BOOST_AUTO_TEST_CASE(a_batch_through_any_store_is_still_all_or_nothing) {
    static_assert(lb::batch_session_store<lb::sqlite_store>);
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store_options o = db.options();
        o.max_event_bytes = 1024;
        lb::any_store st{lb::sqlite_store(ex, o)};
        BOOST_TEST(st.supports_batch());
        auto s = co_await create(st, "app", "u1", "s1");
        auto big = turn(4, "big");
        big[2] = text_event(std::string(4096, 'x'));
        lb::diagnostics diag;
        BOOST_TEST(co_await batch_ec(st, s, big, diag) == lb::errc::oversize);
        BOOST_TEST(diag.message().find("sqlite_store: event 2 of the append is ") == 0u, diag.message());
        BOOST_TEST(diag.message().find("over max_event_bytes (1024)") != std::string::npos, diag.message());
        BOOST_TEST(s.last_sequence == 0);
        auto ok = turn(3, "ok");
        BOOST_TEST(co_await batch(st, s, ok) == 3);
        auto g = co_await get(st, s);
        BOOST_REQUIRE(g);
        BOOST_TEST(g->events.size() == 3u);
        BOOST_TEST(g->events.front().text() == "ok0");
    });
}

BOOST_AUTO_TEST_CASE(stale_batches_across_connections_exactly_one_wins) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store a(ex, db.options());
        lb::sqlite_store b(ex, db.options());
        auto s = co_await create(a, "app", "u1", "s1");
        auto c1 = co_await get(a, s);
        auto c2 = co_await get(b, s);
        error_code e1, e2;
        int done = 0;
        auto t1 = turn(8, "a");
        auto t2 = turn(8, "b");
        auto w1 = [&]() -> asio::awaitable<void> {
            e1 = co_await batch_ec(a, *c1, t1);
            ++done;
        };
        auto w2 = [&]() -> asio::awaitable<void> {
            e2 = co_await batch_ec(b, *c2, t2);
            ++done;
        };
        asio::co_spawn(ex, w1(), asio::detached);
        asio::co_spawn(ex, w2(), asio::detached);
        asio::steady_timer t(ex);
        while (done < 2) {
            t.expires_after(std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(((!e1) != (!e2)));
        auto g = co_await get(a, s);
        BOOST_REQUIRE_EQUAL(g->events.size(), 8u);
        const char first = g->events[0].text()[0];
        for (const auto& e : g->events) BOOST_TEST(e.text()[0] == first); // one batch, not interleaved
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sqlite_store_locking)

/// Counts 5 ms ticks of the io_context while an operation waits: ticks prove that the wait
/// happened on another thread. stop() must be awaited before the ticker is destroyed.
struct io_ticker {
    asio::any_io_executor ex;
    bool waiting = true;
    bool done = false;
    int ticks = 0;
    explicit io_ticker(asio::any_io_executor e) : ex(std::move(e)) { asio::co_spawn(ex, run(this), asio::detached); }
    static asio::awaitable<void> run(io_ticker* self) {
        asio::steady_timer t(self->ex);
        while (self->waiting) {
            t.expires_after(std::chrono::milliseconds(5));
            co_await t.async_wait(asio::use_awaitable);
            ++self->ticks;
        }
        self->done = true;
    }
    asio::awaitable<void> stop() {
        waiting = false;
        asio::steady_timer pause(ex);
        while (!done) {
            pause.expires_after(std::chrono::milliseconds(1));
            co_await pause.async_wait(asio::use_awaitable);
        }
    }
};

// Another connection holds the write lock: writes wait busy_timeout then fail with
// errc::busy; reads go on (WAL); the io_context thread stays responsive meanwhile; once
// the lock is released, writes work again.
BOOST_AUTO_TEST_CASE(busy_beyond_busy_timeout_and_the_io_thread_stays_responsive) {
    temp_db db;
    const auto io_thread = std::this_thread::get_id();
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store_options o = db.options();
        o.busy_timeout = std::chrono::milliseconds(300);
        lb::sqlite_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        co_await append_text(st, s, "before");

        raw_db locker(db.path);
        locker.exec("BEGIN IMMEDIATE; INSERT INTO app_state VALUES ('other', 'k', '1');");

        io_ticker ticker(ex); // stopped before this frame ends

        const auto start = std::chrono::steady_clock::now();
        lb::diagnostics diag;
        auto ec = co_await append_text_ec(st, s, "blocked", diag);
        const auto waited = std::chrono::steady_clock::now() - start;
        co_await ticker.stop();
        BOOST_TEST(std::this_thread::get_id() == io_thread); // completes on the caller's executor
        BOOST_TEST(ec == lb::errc::busy);
        BOOST_TEST(waited >= std::chrono::milliseconds(250));
        BOOST_TEST(ticker.ticks >= 10); // ~60 expected: the wait happened on another thread
        BOOST_TEST_MESSAGE("io_context ticks while SQLite waited: " << ticker.ticks);
        BOOST_TEST(diag.message() == "sqlite_store: the database stayed locked by another connection beyond busy_timeout");
        BOOST_TEST(s.last_sequence == 1);
        BOOST_TEST(co_await create_in(st, "app", "u1", "s2", diag) == lb::errc::busy);
        BOOST_TEST(diag.message().find("beyond busy_timeout") != std::string::npos, diag.message());

        // Readers are not blocked by the writer.
        auto g = co_await get(st, s);
        BOOST_TEST(g->events.size() == 1u);

        locker.exec("COMMIT");
        BOOST_TEST(co_await append_text_ec(st, s, "after") == error_code{});
        BOOST_TEST(s.last_sequence == 2);
    });
}

// async_open opens off the io_context thread: a new database whose write lock another
// connection holds makes the open (creating the schema) wait busy_timeout while the
// io_context keeps running, and
// fail with the exception the constructor throws; once the lock is gone it opens, and the
// store works. A file that is not a database fails through the exception_ptr.
BOOST_AUTO_TEST_CASE(async_open_waits_off_the_io_thread_and_reports_failures) {
    temp_db db;
    const auto io_thread = std::this_thread::get_id();
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        raw_db locker(db.path);
        // In WAL mode already (switching modes does not wait for a lock, it fails at once).
        locker.exec("PRAGMA journal_mode=WAL; BEGIN IMMEDIATE; CREATE TABLE other(x);");
        lb::sqlite_store_options o = db.options();
        o.busy_timeout = std::chrono::milliseconds(300);

        io_ticker ticker(ex); // stopped before this frame ends
        const auto start = std::chrono::steady_clock::now();
        std::optional<error_code> refused;
        std::string what;
        try {
            auto op = lb::sqlite_store::async_open(ex, o, asio::use_awaitable);
            std::optional<lb::sqlite_store> st = co_await std::move(op);
            BOOST_TEST(!st.has_value(), "opened while another connection held the write lock");
        } catch (const boost::system::system_error& e) {
            refused = e.code();
            what = e.what();
        }
        const auto waited = std::chrono::steady_clock::now() - start;
        co_await ticker.stop();
        BOOST_TEST(std::this_thread::get_id() == io_thread);
        BOOST_REQUIRE(refused);
        BOOST_TEST(*refused == lb::errc::busy);
        BOOST_TEST_MESSAGE(what);
        BOOST_TEST(what.find(db.path) != std::string::npos, what);
        BOOST_TEST(waited >= std::chrono::milliseconds(250));
        BOOST_TEST(ticker.ticks >= 10); // the wait happened on another thread

        locker.exec("COMMIT");
        auto op = lb::sqlite_store::async_open(ex, o, asio::use_awaitable);
        std::optional<lb::sqlite_store> st = co_await std::move(op);
        BOOST_TEST(std::this_thread::get_id() == io_thread);
        BOOST_REQUIRE(st.has_value());
        auto s = co_await create(*st, "app", "u1", "s1");
        co_await append_text(*st, s, "hello");
        BOOST_TEST(s.last_sequence == 1);
        auto g = co_await get(*st, s);
        BOOST_REQUIRE(g);
        BOOST_TEST(g->events.at(0).text() == "hello");
        BOOST_TEST(locker.integer("SELECT version FROM libretto_schema") == lb::sqlite_store::schema_version);

        // Not a database: corrupt_data, the file named in the diagnostics, and no store.
        temp_db bad;
        {
            std::ofstream f(bad.path, std::ios::binary);
            f << "this is a JSONL file, not a database\n" << std::string(8192, 'x');
        }
        lb::diagnostics diag;
        auto op2 = lb::sqlite_store::async_open(ex, bad.options(), diag, asio::as_tuple(asio::use_awaitable));
        auto [failure, none] = co_await std::move(op2);
        BOOST_TEST(!none.has_value());
        BOOST_TEST(failure == lb::errc::corrupt_data);
        BOOST_TEST(diag.message().find(bad.path) != std::string::npos, diag.message());
    });
}

// Cancelling async_open while it waits for another connection's lock: it stops waiting at
// once (not after busy_timeout), fails with operation_aborted naming the wait, and makes no
// store and no schema; a signal emitted after the open completed does nothing.
BOOST_AUTO_TEST_CASE(async_open_is_cancelled_while_it_waits_for_a_lock) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        raw_db locker(db.path);
        locker.exec("PRAGMA journal_mode=WAL; BEGIN IMMEDIATE; CREATE TABLE other(x);");
        lb::sqlite_store_options o = db.options();
        o.busy_timeout = std::chrono::seconds(20);

        asio::cancellation_signal signal;
        bool done = false;
        error_code failure;
        lb::diagnostics diag;
        std::optional<lb::sqlite_store> opened;
        asio::steady_timer t(ex);
        auto start_open = [&] {
            done = false;
            failure = {};
            lb::sqlite_store::async_open(
                ex, o, diag,
                asio::bind_cancellation_slot(signal.slot(), [&](error_code e, std::optional<lb::sqlite_store> st) {
                    done = true;
                    failure = e;
                    opened = std::move(st);
                }));
        };
        auto wait_done = [&]() -> asio::awaitable<void> { // up to 5 s
            for (int i = 0; i < 500 && !done; ++i) {
                t.expires_after(std::chrono::milliseconds(10));
                auto tick = t.async_wait(asio::use_awaitable);
                co_await std::move(tick);
            }
        };
        const auto start = std::chrono::steady_clock::now();
        start_open();
        t.expires_after(std::chrono::milliseconds(150));
        auto wait = t.async_wait(asio::use_awaitable);
        co_await std::move(wait);
        BOOST_TEST(!done); // still waiting for the lock
        signal.emit(asio::cancellation_type::terminal);
        auto cancelled = wait_done();
        co_await std::move(cancelled);
        const auto waited = std::chrono::steady_clock::now() - start;
        BOOST_REQUIRE(done);
        BOOST_TEST(waited < std::chrono::seconds(3)); // not busy_timeout (20 s)
        BOOST_TEST(!opened.has_value());
        BOOST_TEST((failure == asio::error::operation_aborted));
        const std::string what = diag.message();
        BOOST_TEST(what.find("cancelled while waiting for another connection's lock") != std::string::npos, what);
        BOOST_TEST(what.find(db.path) != std::string::npos, what);
        locker.exec("COMMIT");
        BOOST_TEST(locker.text("SELECT name FROM sqlite_master WHERE name = 'libretto_schema'").empty());

        // Uncontended, the same signal: the open completes, and a late emit finds nothing.
        start_open();
        auto opens = wait_done();
        co_await std::move(opens);
        BOOST_REQUIRE(done);
        BOOST_TEST(!failure);
        BOOST_REQUIRE(opened.has_value());
        BOOST_TEST(!signal.slot().has_handler()); // cleared before the handler ran
        signal.emit(asio::cancellation_type::terminal);
        auto s = co_await create(*opened, "app", "u1", "s1");
        co_await append_text(*opened, s, "after the late cancel");
        BOOST_TEST(s.last_sequence == 1);
        opened.reset();

        // Cancelled at once, but what fails is the file, not a wait: corrupt_data, as
        // without the cancellation.
        temp_db bad;
        {
            std::ofstream f(bad.path, std::ios::binary);
            f << "not a database\n" << std::string(8192, 'x');
        }
        o.path = bad.path;
        start_open();
        signal.emit(asio::cancellation_type::terminal);
        auto fails = wait_done();
        co_await std::move(fails);
        BOOST_REQUIRE(done);
        BOOST_TEST(!opened.has_value());
        BOOST_TEST((failure == lb::errc::corrupt_data), diag.message());
    });
}

// With a user-supplied executor, the blocking work runs there: while that pool's only
// thread is held, operations do not complete, and the io_context keeps running.
/// A one-thread pool whose thread a test can hold (hold(): a job that waits for release()),
/// to see what an operation does while its worker is busy.
struct held_pool {
    asio::thread_pool pool{1};
    std::thread::id thread;
    std::mutex m;
    std::condition_variable cv;
    bool released = false;
    void hold() {
        asio::post(pool, [this] {
            std::unique_lock lock(m);
            thread = std::this_thread::get_id();
            cv.wait(lock, [this] { return released; });
        });
    }
    void release() {
        {
            std::lock_guard lock(m);
            released = true;
        }
        cv.notify_all();
    }
};

BOOST_AUTO_TEST_CASE(blocking_work_runs_on_the_supplied_executor) {
    temp_db db;
    held_pool worker;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store_options o = db.options();
        o.blocking_executor = worker.pool.get_executor();
        lb::sqlite_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        worker.hold();
        bool done = false;
        auto appender = [&]() -> asio::awaitable<void> {
            co_await append_text(st, s, "x");
            done = true;
        };
        asio::co_spawn(ex, appender(), asio::detached);
        asio::steady_timer t(ex);
        for (int i = 0; i < 20; ++i) {
            t.expires_after(std::chrono::milliseconds(5));
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(!done); // its work waits for the pool
        worker.release();
        while (!done) {
            t.expires_after(std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(s.last_sequence == 1);
    });
    BOOST_TEST((worker.thread != std::this_thread::get_id()));
    worker.pool.join();
}

// An append encodes and checks its events on the caller's thread, before its transaction
// goes to the worker: with the worker held, an oversize event is already refused, yet it
// completes through the worker, after the append started before it. Each completion finds
// its own operation's words in its own diagnostics.
BOOST_AUTO_TEST_CASE(appends_are_encoded_on_the_callers_thread_and_complete_in_order) {
    temp_db db;
    held_pool worker;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store_options o = db.options();
        o.blocking_executor = worker.pool.get_executor();
        o.max_event_bytes = 512;
        lb::sqlite_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        worker.hold();
        std::vector<std::pair<std::string, error_code>> done;
        std::vector<std::string> said; // what each completion found in its diagnostics
        lb::diagnostics fits_diag, big_diag;
        fits_diag.assign("left over from an earlier operation"); // cleared when the append starts
        st.async_append(s, text_event("fits"), fits_diag, [&](error_code ec, std::int64_t) {
            done.emplace_back("fits", ec);
            said.push_back(fits_diag.message());
        });
        lb::session other = s; // a copy at the same revision: the refused append is not stale
        st.async_append(other, text_event(std::string(1000, 'x')), big_diag, [&](error_code ec, std::int64_t) {
            done.emplace_back("big", ec);
            said.push_back(big_diag.message());
        });
        BOOST_TEST(done.empty()); // never inline
        asio::steady_timer t(ex);
        t.expires_after(std::chrono::milliseconds(20));
        co_await t.async_wait(asio::use_awaitable);
        BOOST_TEST(done.empty()); // both wait for the worker
        worker.release();
        while (done.size() < 2) {
            t.expires_after(std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_REQUIRE_EQUAL(done.size(), 2u);
        BOOST_TEST(done[0].first == "fits");
        BOOST_TEST(!done[0].second);
        BOOST_TEST(done[1].first == "big");
        BOOST_TEST((done[1].second == lb::errc::oversize));
        BOOST_TEST(said[0].empty());
        BOOST_TEST(said[1].find("sqlite_store: ") == 0u, said[1]);
        BOOST_TEST(said[1].find("over max_event_bytes (512)") != std::string::npos, said[1]);
        BOOST_TEST(s.last_sequence == 1);
        BOOST_TEST(other.last_sequence == 0);
    });
    worker.pool.join();
}

BOOST_AUTO_TEST_CASE(shared_state_from_two_connections_merges_per_key) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store a(ex, db.options());
        lb::sqlite_store b(ex, db.options());
        auto s1 = co_await create(a, "app", "u1", "s1");
        auto s2 = co_await create(b, "app", "u1", "s2");
        auto e1 = text_event("a");
        e1.actions.state_delta["user:a"] = 1;
        e1.actions.state_delta["app:x"] = "from a";
        auto e2 = text_event("b");
        e2.actions.state_delta["user:b"] = 2;
        co_await append(a, s1, e1);
        co_await append(b, s2, e2);
        auto g = co_await get(a, s1);
        BOOST_TEST(g->state.at("user:a").as_int64() == 1);
        BOOST_TEST(g->state.at("user:b").as_int64() == 2);
        BOOST_TEST(g->state.at("app:x").as_string() == "from a");
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sqlite_store_bad_data)

BOOST_AUTO_TEST_CASE(a_corrupt_event_row_is_reported_with_its_session_and_sequence) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        auto s = co_await create(st, "app", "u1", "s1");
        for (int i = 1; i <= 3; ++i) co_await append_text(st, s, "m" + std::to_string(i));
        raw_db raw(db.path);
        raw.exec("UPDATE events SET data = '{\"id\": \"x\", \"sequ' WHERE sequence = 2");
        lb::diagnostics diag;
        BOOST_TEST(co_await get_full_ec(st, s, diag) == lb::errc::corrupt_data);
        const std::string msg = diag.message();
        BOOST_TEST_MESSAGE(msg);
        BOOST_TEST(msg.find("sqlite_store: session app/u1/s1: event at sequence 2 is corrupt: ") == 0u, msg);
        // A range that avoids the bad row still loads.
        lb::get_options o;
        o.from_sequence = 3;
        lb::session_key k = key_of(s);
        auto tail = co_await get(st, k, o);
        BOOST_TEST(tail->events.size() == 1u);
        // Valid JSON of the wrong shape, and a row whose sequence disagrees with its column.
        raw.exec("UPDATE events SET data = '{\"id\": 5}' WHERE sequence = 2");
        BOOST_TEST(co_await get_full_ec(st, s) == lb::errc::corrupt_data);
        raw.exec("UPDATE events SET data = (SELECT data FROM events WHERE sequence = 1) WHERE sequence = 2");
        BOOST_TEST(co_await get_full_ec(st, s, diag) == lb::errc::corrupt_data);
        BOOST_TEST(diag.message().find("session app/u1/s1: event at sequence 2 ") != std::string::npos, diag.message());
        // Corrupt session state.
        raw.exec("UPDATE sessions SET state = '[1,2' WHERE session_id = 's1'");
        BOOST_TEST(co_await get_full_ec(st, s, diag) == lb::errc::corrupt_data);
        BOOST_TEST(diag.message().find("sqlite_store: session app/u1/s1: stored state is not a JSON object") == 0u,
                   diag.message());
    });
}

BOOST_AUTO_TEST_CASE(oversize_events_are_rejected_and_nothing_is_written) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store_options o = db.options();
        o.max_event_bytes = 512;
        lb::sqlite_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        auto big = text_event(std::string(1000, 'x'));
        big.actions.state_delta["k"] = 1;
        lb::diagnostics diag;
        BOOST_TEST(co_await append_ec(st, s, big, diag) == lb::errc::oversize);
        BOOST_TEST(s.events.empty());
        BOOST_TEST(!s.state.contains("k"));
        BOOST_TEST(diag.message().find("sqlite_store: event 0 of the append is ") == 0u, diag.message());
        BOOST_TEST(diag.message().find("over max_event_bytes (512)") != std::string::npos, diag.message());
        BOOST_TEST(co_await append_text_ec(st, s, "small") == error_code{});
        BOOST_TEST(s.last_sequence == 1);
        raw_db raw(db.path);
        BOOST_TEST(raw.integer("SELECT count(*) FROM events") == 1);
    });
}

BOOST_AUTO_TEST_CASE(a_negative_busy_timeout_is_refused_and_the_longest_is_taken) {
    temp_db db;
    asio::io_context io;
    auto o = db.options();
    o.busy_timeout = std::chrono::milliseconds(-1); // was clamped to 0 without a word
    try {
        lb::sqlite_store st(io.get_executor(), o);
        BOOST_ERROR("a negative busy_timeout was taken");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("busy_timeout is negative") != std::string::npos, e.what());
    }
    o.busy_timeout = std::chrono::milliseconds::max();
    lb::sqlite_store st(io.get_executor(), o);
    lb::session s;
    BOOST_TEST(!st.create(create_opts("app", "u", "s"), s));
}

BOOST_AUTO_TEST_CASE(a_refused_id_is_named_in_the_callers_diagnostics) {
    temp_db db;
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), db.options());
    lb::session s;
    lb::diagnostics diag;
    BOOST_TEST(st.create(create_opts("app", "u/1", "s"), s, &diag) == lb::errc::invalid_argument);
    BOOST_TEST(diag.message().find("sqlite_store: ") == 0u, diag.message());
    BOOST_TEST(diag.message().find("user id 'u/1' contains a path separator ('/' or '\\')") != std::string::npos,
               diag.message());
    std::optional<lb::session> g;
    BOOST_TEST(st.get(lb::session_key{"app", "u", std::string(200, 'x')}, {}, g, &diag) == lb::errc::invalid_argument);
    BOOST_TEST(diag.message().find("session id '" + std::string(40, 'x') + "...' is 200 bytes long (at most 128)") !=
                   std::string::npos,
               diag.message());
    BOOST_REQUIRE(!st.create(create_opts("app", "u", "s"), s));
    s.id = "..";
    std::int64_t seq = 0;
    BOOST_TEST(st.append(s, text_event("x"), seq, &diag) == lb::errc::invalid_argument);
    BOOST_TEST(diag.message().find("session id '..' contains '..' (or is '.')") != std::string::npos, diag.message());
    // Through the asynchronous form, with a plain callback.
    bool done = false;
    lb::diagnostics async_diag;
    st.async_create(create_opts("app", "u", "a\x01"), async_diag, [&](error_code ec, lb::session) {
        BOOST_TEST(ec == lb::errc::invalid_argument);
        BOOST_TEST(async_diag.message().find("session id contains a control character (0x01 at offset 1)") !=
                       std::string::npos,
                   async_diag.message());
        done = true;
    });
    io.run();
    BOOST_TEST(done);
}

// A string that is not UTF-8 would be stored as is, and every later get would fail on it
// (strict JSON): the append is refused before the transaction.
BOOST_AUTO_TEST_CASE(invalid_utf8_events_are_refused_and_nothing_is_stored) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        auto s = co_await create(st, "app", "u1", "s1");
        co_await append_text(st, s, "first");
        auto bad = text_event("bad \xff");
        bad.actions.state_delta["app:k"] = 1;
        lb::diagnostics diag;
        BOOST_TEST(co_await append_ec(st, s, bad, diag) == lb::errc::invalid_argument);
        const std::string msg = diag.message();
        BOOST_TEST_MESSAGE(msg);
        BOOST_TEST(msg.find("string is not valid UTF-8 (byte 0xff at offset 4)") != std::string::npos, msg);
        // In the middle of a batch, in a tool call's arguments: none of the batch is stored.
        auto events = turn(3, "t");
        events[0].actions.state_delta["user:k"] = 1;
        events[1].content.parts.emplace_back(lb::tool_call_part{"c1", "search", lb::json::object{{"q", "\xed\xa0\x80"}}, {}});
        BOOST_TEST(co_await batch_ec(st, s, events, diag) == lb::errc::invalid_argument);
        BOOST_TEST(diag.message().find("(1 of the append)") != std::string::npos, diag.message());
        BOOST_TEST(s.last_sequence == 1);
        BOOST_TEST(s.events.size() == 1u);
        {
            raw_db raw(db.path);
            BOOST_TEST(raw.integer("SELECT count(*) FROM events") == 1);
            BOOST_TEST(raw.integer("SELECT count(*) FROM app_state") == 0);
            BOOST_TEST(raw.integer("SELECT count(*) FROM user_state") == 0);
        }
        BOOST_TEST(co_await get_full_ec(st, s) == error_code{});
        BOOST_TEST(co_await append_text_ec(st, s, "caf\xc3\xa9 \xf0\x9f\x8e\xb5") == error_code{});
        auto g = co_await get(st, s);
        BOOST_TEST(g->events.size() == 2u);
    });
}

// Rows an earlier version stored with such strings still read.
BOOST_AUTO_TEST_CASE(stored_rows_with_invalid_utf8_still_read) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        auto s = co_await create(st, "app", "u1", "s1");
        co_await append_text(st, s, "first");
        {
            raw_db raw(db.path);
            auto e = text_event("older \xff row");
            e.session_id = "s1";
            e.sequence = 2;
            raw.insert_event("app", "u1", e);
            raw.exec("UPDATE sessions SET last_sequence = 2 WHERE session_id = 's1'");
            // {"k":"v\xff"} as the session's state, and as an app state value.
            raw.exec("UPDATE sessions SET state = CAST(X'7B226B223A2276FF227D' AS TEXT) WHERE session_id = 's1'");
            raw.exec("INSERT INTO app_state VALUES ('app', 'a', CAST(X'2276FF22' AS TEXT))");
        }
        auto g = co_await get(st, "app", "u1", "s1");
        BOOST_REQUIRE(g.has_value());
        BOOST_REQUIRE_EQUAL(g->events.size(), 2u);
        BOOST_TEST((g->events[1].content == lb::content::from_text("older \xff row")));
        BOOST_TEST(g->state.at("k").as_string() == "v\xff");
        BOOST_TEST(g->state.at("app:a").as_string() == "v\xff");
    });
}

BOOST_AUTO_TEST_CASE(the_default_limit_is_16_mib) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        auto s = co_await create(st, "app", "u1", "s1");
        BOOST_TEST(co_await append_text_ec(st, s, std::string(16u << 20, 'x')) == lb::errc::oversize);
        BOOST_TEST(co_await append_text_ec(st, s, std::string(1u << 20, 'x')) == error_code{});
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sqlite_store_misc)

BOOST_AUTO_TEST_CASE(delete_cascades_to_event_rows_but_keeps_shared_state_rows) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        auto s = co_await create(st, "app", "u1", "s1");
        auto e = text_event("x");
        e.actions.state_delta["user:k"] = 1;
        e.actions.state_delta["app:k"] = 2;
        co_await append(st, s, e);
        co_await append_text(st, s, "y");
        co_await remove(st, "app", "u1", "s1");
        raw_db raw(db.path);
        BOOST_TEST(raw.integer("SELECT count(*) FROM events") == 0);
        BOOST_TEST(raw.integer("SELECT count(*) FROM sessions") == 0);
        BOOST_TEST(raw.integer("SELECT count(*) FROM app_state") == 1);
        BOOST_TEST(raw.integer("SELECT count(*) FROM user_state") == 1);
    });
}

BOOST_AUTO_TEST_CASE(listing_one_user_pages_in_order_among_other_users) {
    temp_db db;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        lb::sqlite_store st(ex, db.options());
        for (int i = 0; i < 12; ++i) {
            auto s = co_await create(st, "app", "u" + std::to_string(i % 3), "s" + std::to_string(i));
            co_await append_text(st, s, "x", 100.0 + (i % 6)); // ties in last_update: ordered by id
        }
        lb::list_options lo;
        lo.app_name = "app";
        lo.user_id = "u1"; // s1 (101), s4 (104), s7 (101), s10 (104)
        lo.page_size = 1;
        std::vector<std::string> seen;
        for (int pages = 0; pages < 10; ++pages) {
            auto p = co_await list(st, lo);
            for (auto& s : p.sessions) {
                BOOST_TEST(s.user_id == "u1");
                seen.push_back(s.id);
            }
            if (p.next_page_token.empty()) break;
            lo.page_token = p.next_page_token;
        }
        const std::vector<std::string> expected{"s10", "s4", "s1", "s7"};
        BOOST_TEST(seen == expected, boost::test_tools::per_element());
    });
}

BOOST_AUTO_TEST_CASE(sync_core_matches_async_and_stores_move) {
    temp_db db;
    asio::io_context io;
    lb::sqlite_store first(io.get_executor(), db.options());
    lb::sqlite_store st(std::move(first));
    lb::session s;
    BOOST_TEST(!st.create(create_opts("app", "u", "s"), s));
    std::int64_t seq = 0;
    BOOST_TEST(!st.append(s, text_event("x"), seq));
    BOOST_TEST(seq == 1);
    BOOST_TEST(!st.append_batch(s, turn(3, "b"), seq));
    BOOST_TEST(seq == 4);
    BOOST_TEST(s.events.size() == 4u);
    std::optional<lb::session> g;
    BOOST_TEST(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(g->events.size() == 4u);
    lb::list_page page;
    lb::list_options lo;
    lo.app_name = "app";
    BOOST_TEST(!st.list(lo, page));
    BOOST_TEST(page.sessions.size() == 1u);
    lb::sqlite_store other(io.get_executor(), db.options());
    st = std::move(other);
    BOOST_TEST(!st.remove({"app", "u", "s"}));
    BOOST_TEST(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(!g.has_value());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- WAL checkpoints ----------------------------------------------------------------------

namespace {

long long file_size(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    return f ? static_cast<long long>(f.tellg()) : -1;
}

// The number of events stored in app/u/s.
std::size_t stored_events(lb::sqlite_store& st) {
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_REQUIRE(g.has_value());
    return g->events.size();
}

// Creates app/u/s and appends `turns` batches of 8 events of ~1 KB each (a few WAL pages
// per batch); checks all of them were stored.
void fill(lb::sqlite_store& st, int turns) {
    lb::session s;
    BOOST_REQUIRE(!st.create(create_opts("app", "u", "s"), s));
    const std::string filler(1000, 'x');
    for (int t = 0; t < turns; ++t) {
        std::vector<lb::event> v;
        for (int i = 0; i < 8; ++i) v.push_back(text_event(filler + std::to_string(t * 8 + i)));
        std::int64_t seq = 0;
        BOOST_REQUIRE(!st.append_batch(s, std::move(v), seq));
        s.events.clear();
    }
    BOOST_TEST(stored_events(st) == static_cast<std::size_t>(turns) * 8);
}

bool wait_for(const std::function<bool()>& done) {
    for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
}

constexpr long long wal_page = 4096 + 24; // a WAL frame: page plus frame header

lb::sqlite_store_options checkpoint_options(const temp_db& db, std::size_t pages, bool background = true) {
    auto o = db.options();
    o.checkpoint_pages = pages;
    o.background_checkpoint = background;
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sqlite_store_checkpoints)

BOOST_AUTO_TEST_CASE(background_checkpoints_keep_the_wal_bounded_and_lose_nothing) {
    temp_db db;
    asio::io_context io;
    const auto o = checkpoint_options(db, 16);
    {
        lb::sqlite_store st(io.get_executor(), o);
        fill(st, 200); // ~1.6 MB of events, hundreds of WAL pages
        BOOST_TEST(wait_for([&] { return st.background_checkpoints() > 0; }));
        // Bounded by 8 x checkpoint_pages (then the writer checkpoints itself and the WAL
        // restarts) plus one batch; without checkpoints it would hold every page written.
        const long long wal = file_size(db.path + "-wal");
        BOOST_TEST(wal > 0);
        BOOST_TEST(wal <= (16 * 8 + 64) * wal_page + 32);
        // Checkpointed pages are in the database file itself.
        BOOST_TEST(file_size(db.path) > 1'000'000);
    }
    // Closed: the last connection folds the WAL in and removes it; a new store reads all.
    BOOST_TEST(file_size(db.path + "-wal") == -1);
    lb::sqlite_store again(io.get_executor(), o);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!again.get({"app", "u", "s"}, {}, g));
    BOOST_REQUIRE(g.has_value());
    BOOST_TEST(g->events.size() == 1600u);
    BOOST_TEST(g->events.back().text() == std::string(1000, 'x') + "1599");
}

BOOST_AUTO_TEST_CASE(checkpoints_on_the_writer_when_background_is_off) {
    temp_db db;
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), checkpoint_options(db, 16, false));
    fill(st, 200);
    BOOST_TEST(st.background_checkpoints() == 0u);
    // SQLite's auto-checkpoint at 16 pages: the WAL restarts long before it grows large.
    BOOST_TEST(file_size(db.path + "-wal") <= (16 + 64) * wal_page + 32);
}

BOOST_AUTO_TEST_CASE(zero_checkpoint_pages_leaves_the_wal_to_grow) {
    temp_db db;
    asio::io_context io;
    lb::sqlite_store st(io.get_executor(), checkpoint_options(db, 0));
    fill(st, 200);
    BOOST_TEST(st.background_checkpoints() == 0u);
    // Every page written is still in the WAL (far beyond what the bounded cases allow).
    BOOST_TEST(file_size(db.path + "-wal") > 1'000'000);
}

BOOST_AUTO_TEST_CASE(an_in_memory_database_has_no_checkpointer) {
    asio::io_context io;
    lb::sqlite_store_options o;
    o.path = ":memory:";
    o.checkpoint_pages = 1;
    lb::sqlite_store st(io.get_executor(), o);
    fill(st, 20);
    BOOST_TEST(st.background_checkpoints() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
