// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SQLITE_CORE_HPP
#define LIBRETTO_STORE_DETAIL_SQLITE_CORE_HPP

// sqlite_store's blocking core: one SQLite connection and its prepared statements, and the
// store operations as synchronous functions returning error codes. A mutex serialises use of
// the connection; sqlite_store runs these functions on its worker strand, never on the
// caller's io_context thread. The rules come from store_logic.hpp; only the I/O is here.

#include <libretto/event/json.hpp>
#include <libretto/store/detail/sqlite_checkpointer.hpp>
#include <libretto/store/detail/sqlite_db.hpp>
#include <libretto/store/detail/sqlite_schema.hpp>
#include <libretto/store/detail/store_batch.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/error.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace libretto::detail {

/// What the core needs from sqlite_store_options.
struct sqlite_params {
    std::string path;
    int busy_timeout_ms = 5000;
    const char* synchronous = "NORMAL"; ///< OFF, NORMAL or FULL
    std::size_t max_event_bytes = 0;    ///< 0: no limit
    std::size_t checkpoint_pages = 1000; ///< 0: no automatic checkpoints
    bool background_checkpoint = true;   ///< on sqlite::checkpointer's thread, not in commits
};

class sqlite_core {
public:
    sqlite_core() = default;
    sqlite_core(const sqlite_core&) = delete;
    sqlite_core& operator=(const sqlite_core&) = delete;

    /// Opens the database, sets WAL, synchronous and foreign keys, migrates the schema.
    /// With `abandon`, waiting for another connection's lock stops as soon as it is set
    /// (async_open's cancellation), and the open fails with operation_aborted.
    boost::system::error_code open(const sqlite_params& p, diagnostics* d, const std::atomic<bool>* abandon = nullptr) {
        std::string detail;
        open_wait_ = {abandon, p.busy_timeout_ms, {}};
        auto ec = open_impl(p, detail);
        if (ec == errc::busy && abandon && abandon->load()) { // the wait was given up, not failed
            ec = boost::asio::error::operation_aborted;
            detail = "cancelled while waiting for another connection's lock (" + detail + ")";
        }
        if (db_.get()) sqlite3_busy_timeout(db_.get(), p.busy_timeout_ms); // the plain wait from now on
        open_wait_ = {};
        if (ec) record(d, "open '" + p.path + "': " + detail);
        return ec;
    }

    boost::system::error_code create(diagnostics* d, create_options o, session& out) {
        return recorded(d, create_impl(std::move(o), out));
    }

    boost::system::error_code get(diagnostics* d, const session_key& k, const get_options& o, std::optional<session>& out) {
        return recorded(d, get_impl(k, o, out));
    }

    boost::system::error_code list(diagnostics* d, const list_options& o, list_page& out) {
        return recorded(d, list_impl(o, out));
    }

    boost::system::error_code remove(diagnostics* d, const session_key& k) { return recorded(d, remove_impl(k)); }

    boost::system::error_code append(diagnostics* d, const append_target& t, std::vector<event> events,
                                     append_result& out) {
        prepared_batch batch;
        if (auto ec = prepare(d, t, std::move(events), batch)) return ec;
        return append_prepared(d, t, std::move(batch), out);
    }

    /// An append's first half, which touches no connection (ids, sequences, temp: keys,
    /// serialisation, size checks): safe on any thread, concurrently with the connection's
    /// work. The async operations run it on the caller's thread, so the worker thread
    /// writes one batch while the caller encodes the next.
    boost::system::error_code prepare(diagnostics* d, const append_target& t, std::vector<event> events,
                                      prepared_batch& batch) {
        std::string detail;
        auto ec = prepare_batch(t, std::move(events), max_event_bytes_, batch, detail);
        return recorded(d, {ec, std::move(detail)});
    }

    /// An append's second half: the transaction (connection's thread).
    boost::system::error_code append_prepared(diagnostics* d, const append_target& t, prepared_batch batch,
                                              append_result& out) {
        return recorded(d, append_impl(t, std::move(batch), out));
    }

    /// Writes "sqlite_store: <detail>" to the caller's diagnostics, if any.
    static void record(diagnostics* d, std::string_view detail) { note_failure(d, {}, "sqlite_store", detail); }

    /// The journal mode the connection ended up with ("wal").
    const std::string& journal_mode() const noexcept { return journal_mode_; }

    /// Checkpoints the background thread has completed (0 without one).
    std::uint64_t background_checkpoints() const noexcept { return checkpointer_ ? checkpointer_->completed() : 0; }

private:
    // Every *_impl sets detail_ (under mutex_) when it fails.
    struct result {
        boost::system::error_code ec;
        std::string detail;
    };

    static boost::system::error_code recorded(diagnostics* d, result r) {
        if (r.ec) record(d, r.detail);
        return r.ec;
    }

    result sql_error(int rc, std::string_view what) const {
        std::string d(what);
        d += ": ";
        d += db_.errmsg();
        return {sqlite::error_from(rc), std::move(d)};
    }

    static std::string name_of(const session_key& k) { return k.app_name + "/" + k.user_id + "/" + k.session_id; }

    // ---- open -------------------------------------------------------------------------

    boost::system::error_code open_impl(const sqlite_params& p, std::string& detail) {
        if (p.path.empty()) {
            detail = "no database path";
            return errc::invalid_argument;
        }
        max_event_bytes_ = p.max_event_bytes;
        int rc = db_.open(p.path, detail);
        if (rc != SQLITE_OK) return sqlite::error_from(rc);
        if (open_wait_.abandon) sqlite3_busy_handler(db_.get(), &sqlite_core::open_busy, &open_wait_);
        else sqlite3_busy_timeout(db_.get(), p.busy_timeout_ms);

        // The first statement reads the file header: a file that is not SQLite fails here.
        sqlite::statement s;
        rc = s.prepare(db_, "PRAGMA journal_mode = WAL");
        if (rc == SQLITE_OK) rc = s.step();
        if (rc != SQLITE_ROW) {
            if ((rc & 0xff) == SQLITE_NOTADB)
                detail = "the file is not an SQLite database";
            else
                detail = std::string("cannot set WAL journal mode: ") + db_.errmsg();
            return sqlite::error_from(rc);
        }
        journal_mode_ = std::string(s.text(0));
        s.reset();
        if (journal_mode_ != "wal" && p.path != ":memory:") {
            detail = "cannot use WAL journal mode (the database is in '" + journal_mode_ + "' mode)";
            return errc::io_error;
        }
        const std::string pragmas = std::string("PRAGMA synchronous = ") + p.synchronous + "; PRAGMA foreign_keys = ON;";
        rc = db_.exec(pragmas.c_str());
        if (rc != SQLITE_OK) {
            detail = std::string("cannot set pragmas: ") + db_.errmsg();
            return sqlite::error_from(rc);
        }
        if (auto ec = sqlite::migrate(db_, detail)) return ec;
        if (auto ec = set_up_checkpoints(p, detail)) return ec;
        return prepare_statements(detail);
    }

    // SQLite's default: the commit that takes the WAL past 1000 pages checkpoints. Here the
    // commit only asks the checkpointer's thread (sqlite_checkpointer.hpp), unless the WAL
    // has grown to 8 times the threshold meanwhile (the thread cannot keep up, or readers
    // hold old snapshots): then the commit checkpoints itself, so the WAL stays bounded.
    boost::system::error_code set_up_checkpoints(const sqlite_params& p, std::string& detail) {
        if (journal_mode_ != "wal") return {}; // ":memory:": no WAL
        constexpr std::size_t max_pages = std::numeric_limits<int>::max() / 8;
        checkpoint_pages_ = std::min(p.checkpoint_pages, max_pages);
        next_request_ = checkpoint_pages_;
        if (checkpoint_pages_ == 0 || !p.background_checkpoint) {
            sqlite3_wal_autocheckpoint(db_.get(), static_cast<int>(checkpoint_pages_));
            return {};
        }
        checkpointer_ = std::make_unique<sqlite::checkpointer>();
        if (int rc = checkpointer_->start(p.path, detail); rc != SQLITE_OK) {
            checkpointer_.reset();
            detail = "cannot open the checkpoint connection: " + detail;
            return sqlite::error_from(rc);
        }
        sqlite3_wal_hook(db_.get(), &sqlite_core::on_wal_commit, this);
        return {};
    }

    /// An open that can be abandoned: SQLite's busy_timeout wait, in steps of at most 10 ms
    /// that look at the flag in between.
    struct open_wait {
        const std::atomic<bool>* abandon = nullptr;
        int timeout_ms = 0;
        std::chrono::steady_clock::time_point first{};
    };

    static int open_busy(void* arg, int count) {
        auto& w = *static_cast<open_wait*>(arg);
        const auto now = std::chrono::steady_clock::now();
        if (count == 0) w.first = now;
        if (w.abandon && w.abandon->load()) return 0;
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - w.first).count();
        if (waited >= w.timeout_ms) return 0;
        const auto step = std::min<long long>(count < 3 ? 1 : 10, w.timeout_ms - waited);
        std::this_thread::sleep_for(std::chrono::milliseconds(step));
        return 1;
    }

    static int on_wal_commit(void* self, sqlite3* db, const char* name, int frames) {
        auto& core = *static_cast<sqlite_core*>(self);
        const auto n = static_cast<std::size_t>(frames);
        // The WAL restarts from its beginning only when a write transaction starts with
        // every frame checkpointed: rarely while the thread checkpoints behind a busy
        // writer. So the WAL grows; each further checkpoint_pages pages ask the thread once
        // more, and at 8 times the threshold this commit checkpoints the rest itself (the
        // thread has copied most of it), after which the next transaction restarts the WAL.
        if (n < core.wal_frames_) core.next_request_ = core.checkpoint_pages_; // restarted
        core.wal_frames_ = n;
        if (n >= core.checkpoint_pages_ * 8) {
            // Not while the thread checkpoints (ours would fail with SQLITE_BUSY, again and
            // again while the thread keeps busy). SQLITE_BUSY now: another process's
            // checkpoint; the next commit tries again.
            core.checkpointer_->exclusive(
                [&] { sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr); });
        } else if (n >= core.next_request_) {
            core.checkpointer_->request();
            core.next_request_ = n + core.checkpoint_pages_;
        }
        return SQLITE_OK;
    }

    boost::system::error_code prepare_statements(std::string& detail) {
        const std::pair<sqlite::statement*, const char*> all[] = {
            {&begin_, "BEGIN"},
            {&begin_immediate_, "BEGIN IMMEDIATE"},
            {&commit_, "COMMIT"},
            {&rollback_, "ROLLBACK"},
            {&insert_session_, "INSERT INTO sessions (app_name, user_id, session_id, state, create_time, last_update, "
                               "last_sequence, compaction_first) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0, 0)"},
            {&select_session_, "SELECT state, last_update, last_sequence FROM sessions "
                               "WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3"},
            {&select_revision_, "SELECT last_sequence FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3"},
            {&select_revision_state_, "SELECT last_sequence, state FROM sessions "
                                      "WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3"},
            {&update_session_, "UPDATE sessions SET last_sequence = ?4, last_update = ?5, "
                               "compaction_first = CASE WHEN ?6 > 0 THEN ?6 ELSE compaction_first END, "
                               "state = COALESCE(?7, state) WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3"},
            {&delete_session_, "DELETE FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3"},
            {&insert_event_, "INSERT INTO events (app_name, user_id, session_id, sequence, timestamp, data) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
            {&select_events_, "SELECT sequence, data FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 "
                              "AND sequence >= ?4 AND (?5 IS NULL OR timestamp >= ?5) ORDER BY sequence DESC LIMIT ?6"},
            {&select_range_, "SELECT sequence, data FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 "
                             "AND sequence >= ?4 AND sequence <= ?5 ORDER BY sequence"},
            {&select_compactions_, "SELECT sequence, first_sequence, last_sequence FROM compactions "
                                   "WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 ORDER BY sequence"},
            {&insert_compaction_, "INSERT INTO compactions (app_name, user_id, session_id, sequence, first_sequence, "
                                  "last_sequence) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
            {&prune_compactions_, "DELETE FROM compactions WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 "
                                  "AND first_sequence >= ?4 AND last_sequence <= ?5"},
            {&select_app_state_, "SELECT key, value FROM app_state WHERE app_name = ?1"},
            {&upsert_app_state_, "INSERT INTO app_state (app_name, key, value) VALUES (?1, ?2, ?3) "
                                 "ON CONFLICT (app_name, key) DO UPDATE SET value = excluded.value"},
            {&delete_app_state_, "DELETE FROM app_state WHERE app_name = ?1 AND key = ?2"},
            {&select_user_state_, "SELECT key, value FROM user_state WHERE app_name = ?1 AND user_id = ?2"},
            {&upsert_user_state_, "INSERT INTO user_state (app_name, user_id, key, value) VALUES (?1, ?2, ?3, ?4) "
                                  "ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = excluded.value"},
            {&delete_user_state_, "DELETE FROM user_state WHERE app_name = ?1 AND user_id = ?2 AND key = ?3"},
            {&list_app_, "SELECT user_id, session_id, state, last_update, last_sequence FROM sessions "
                         "WHERE app_name = ?1 AND last_update <= ?2 "
                         "AND (last_update < ?2 OR session_id > ?3 OR (session_id = ?3 AND user_id > ?6)) "
                         "ORDER BY last_update DESC, session_id ASC, user_id ASC LIMIT ?4"},
            // One user's sessions: the primary key's prefix (app_name, user_id), then a sort
            // of those few rows. Left alone, the planner walks sessions_by_app instead, which
            // reads every session of the app to find one user's.
            {&list_user_, "SELECT user_id, session_id, state, last_update, last_sequence FROM sessions "
                          "INDEXED BY sqlite_autoindex_sessions_1 WHERE app_name = ?1 AND user_id = ?5 AND last_update <= ?2 "
                          "AND (last_update < ?2 OR session_id > ?3 OR (session_id = ?3 AND user_id > ?6)) "
                          "ORDER BY last_update DESC, session_id ASC LIMIT ?4"},
        };
        for (const auto& [stmt, sql] : all) {
            int rc = stmt->prepare(db_, sql);
            if (rc != SQLITE_OK) {
                detail = std::string("cannot prepare \"") + sql + "\": " + db_.errmsg();
                return sqlite::error_from(rc);
            }
        }
        return {};
    }

    // ---- helpers ----------------------------------------------------------------------

    sqlite::statement& bind_key(sqlite::statement& s, const session_key& k) {
        return s.bind(1, k.app_name).bind(2, k.user_id).bind(3, k.session_id);
    }

    // Reads `key, value` rows (values are JSON texts) into `out`.
    result load_kv(sqlite::statement& s, json::object& out, const std::string& what) {
        sqlite::resetter r(s);
        int rc;
        while ((rc = s.step()) == SQLITE_ROW) {
            boost::system::error_code jec;
            std::string why;
            json::value v = parse_precise(s.text(1), jec, {}, &why);
            if (jec)
                return {errc::corrupt_data, what + " key '" + std::string(s.text(0)) + "' holds invalid JSON: " + why};
            out[s.text(0)] = std::move(v);
        }
        if (rc != SQLITE_DONE) return sql_error(rc, "cannot read " + what);
        return {};
    }

    result load_app_state(const std::string& app, json::object& out) {
        select_app_state_.bind(1, app);
        return load_kv(select_app_state_, out, "app state of '" + app + "'");
    }

    result load_user_state(const std::string& app, const std::string& user, json::object& out) {
        select_user_state_.bind(1, app).bind(2, user);
        return load_kv(select_user_state_, out, "user state of '" + app + "/" + user + "'");
    }

    static result parse_state(std::string_view text, json::object& out, const std::string& who) {
        boost::system::error_code jec;
        std::string why;
        json::value v = parse_precise(text, jec, {}, &why);
        if (jec || !v.is_object())
            return {errc::corrupt_data,
                    "session " + who + ": stored state is not a JSON object" + (jec ? ": " + why : std::string())};
        out = std::move(v.get_object());
        return {};
    }

    // Writes app: and user: deltas (unprefixed keys; null deletes).
    result write_shared(const session_key& k, const json::object& app, const json::object& user) {
        for (const auto& kv : app) {
            int rc;
            if (kv.value().is_null()) {
                rc = delete_app_state_.bind(1, k.app_name).bind(2, kv.key()).run();
            } else {
                const std::string v = json::serialize(kv.value());
                rc = upsert_app_state_.bind(1, k.app_name).bind(2, kv.key()).bind(3, v).run();
            }
            if (rc != SQLITE_OK) return sql_error(rc, "cannot write app state");
        }
        for (const auto& kv : user) {
            int rc;
            if (kv.value().is_null()) {
                rc = delete_user_state_.bind(1, k.app_name).bind(2, k.user_id).bind(3, kv.key()).run();
            } else {
                const std::string v = json::serialize(kv.value());
                rc = upsert_user_state_.bind(1, k.app_name).bind(2, k.user_id).bind(3, kv.key()).bind(4, v).run();
            }
            if (rc != SQLITE_OK) return sql_error(rc, "cannot write user state");
        }
        return {};
    }

    result begin(sqlite::transaction& tx) {
        int rc = tx.begin();
        if (rc != SQLITE_OK) {
            if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
                return {errc::busy, "the database stayed locked by another connection beyond busy_timeout"};
            return sql_error(rc, "cannot begin a transaction");
        }
        return {};
    }

    result commit(sqlite::transaction& tx) {
        int rc = tx.commit();
        if (rc != SQLITE_OK) return sql_error(rc, "cannot commit");
        return {};
    }

    // ---- operations -------------------------------------------------------------------

    result create_impl(create_options o, session& out) {
        if (auto ec = validate_id(o.app_name)) return {ec, "app name " + id_problem(o.app_name)};
        if (auto ec = validate_id(o.user_id)) return {ec, "user id " + id_problem(o.user_id)};
        if (o.session_id.empty()) o.session_id = event::new_id();
        if (auto ec = validate_id(o.session_id)) return {ec, "session id " + id_problem(o.session_id)};
        if (auto why = state_problem(o.state); !why.empty()) return {errc::invalid_argument, why};
        const session_key k{std::move(o.app_name), std::move(o.user_id), std::move(o.session_id)};
        auto routed = route_delta(o.state);
        json::object own;
        for (const auto& kv : routed.session)
            if (!kv.value().is_null()) own[kv.key()] = kv.value();
        const std::string state_text = json::serialize(own);
        const double now = event::now();

        std::lock_guard lock(mutex_);
        sqlite::transaction tx(begin_immediate_, commit_, rollback_);
        if (auto r = begin(tx); r.ec) return r;
        // The primary key decides: no read-then-insert race between connections.
        int rc = bind_key(insert_session_, k).bind(4, state_text).bind(5, now).run();
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
            return {errc::already_exists, "session " + name_of(k) + " already exists"};
        if (rc != SQLITE_OK) return sql_error(rc, "cannot insert session " + name_of(k));
        if (auto r = write_shared(k, routed.app, routed.user); r.ec) return r;
        json::object app, user;
        if (auto r = load_app_state(k.app_name, app); r.ec) return r;
        if (auto r = load_user_state(k.app_name, k.user_id, user); r.ec) return r;
        if (auto r = commit(tx); r.ec) return r;

        out = session{};
        out.id = k.session_id;
        out.app_name = k.app_name;
        out.user_id = k.user_id;
        out.state = merged_state(own, &app, &user);
        out.last_update_time = now;
        out.last_sequence = 0;
        return {};
    }

    result get_impl(const session_key& k, const get_options& o, std::optional<session>& out) {
        out.reset();
        if (auto ec = validate_key(k)) return {ec, key_problem(k)};
        std::lock_guard lock(mutex_);
        // One read transaction: the session row, shared state and events are one snapshot.
        sqlite::transaction tx(begin_, commit_, rollback_);
        if (auto r = begin(tx); r.ec) return r;
        json::object own;
        session s;
        {
            sqlite::resetter reset(select_session_);
            int rc = bind_key(select_session_, k).step();
            if (rc == SQLITE_DONE) return {};
            if (rc != SQLITE_ROW) return sql_error(rc, "cannot read session " + name_of(k));
            if (auto r = parse_state(select_session_.text(0), own, name_of(k)); r.ec) return r;
            s.last_update_time = select_session_.real(1);
            s.last_sequence = select_session_.int64(2);
        }
        json::object app, user;
        if (auto r = load_app_state(k.app_name, app); r.ec) return r;
        if (auto r = load_user_state(k.app_name, k.user_id, user); r.ec) return r;
        shown_compactions shown;
        if (o.context_only && !(o.num_recent_events && *o.num_recent_events == 0)) {
            sqlite::resetter reset(select_compactions_);
            bind_key(select_compactions_, k);
            int rc;
            while ((rc = select_compactions_.step()) == SQLITE_ROW)
                shown.add(compaction_entry{select_compactions_.int64(0), select_compactions_.int64(1),
                                           select_compactions_.int64(2)});
            if (rc != SQLITE_DONE) return sql_error(rc, "cannot read the compactions of session " + name_of(k));
        }
        if (!shown.empty()) {
            // context_only: the ranges the shown compactions leave out, each an index range.
            const auto ranges = clip_ranges(shown.load_ranges(o.with_newest_range), o.from_sequence.value_or(1));
            for (const auto& r : ranges) {
                if (r.first > s.last_sequence) break;
                sqlite::resetter reset(select_range_);
                bind_key(select_range_, k).bind(4, r.first).bind(5, std::min(r.last, s.last_sequence));
                int rc;
                while ((rc = select_range_.step()) == SQLITE_ROW) {
                    const std::int64_t seq = select_range_.int64(0);
                    auto e = parse_event(select_range_.text(1));
                    if (!e)
                        return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                        std::to_string(seq) + " is corrupt: " + e.error().message()};
                    if (e->sequence != seq)
                        return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                        std::to_string(seq) + " says it has sequence " +
                                                        std::to_string(e->sequence)};
                    if (o.from_timestamp && e->timestamp < *o.from_timestamp) continue;
                    s.events.push_back(std::move(*e));
                }
                if (rc != SQLITE_DONE) return sql_error(rc, "cannot read the events of session " + name_of(k));
            }
            if (o.num_recent_events && s.events.size() > *o.num_recent_events)
                s.events.erase(s.events.begin(),
                               s.events.begin() + static_cast<std::ptrdiff_t>(s.events.size() - *o.num_recent_events));
        } else if (!(o.num_recent_events && *o.num_recent_events == 0)) {
            std::int64_t from = o.from_sequence.value_or(std::numeric_limits<std::int64_t>::min());
            std::int64_t limit = -1;
            if (o.num_recent_events)
                limit = static_cast<std::int64_t>(
                    std::min<std::size_t>(*o.num_recent_events, std::numeric_limits<std::int64_t>::max()));
            sqlite::resetter reset(select_events_);
            bind_key(select_events_, k).bind(4, from).bind(6, limit);
            if (o.from_timestamp) select_events_.bind(5, *o.from_timestamp);
            else select_events_.bind_null(5);
            int rc;
            while ((rc = select_events_.step()) == SQLITE_ROW) {
                const std::int64_t seq = select_events_.int64(0);
                auto e = parse_event(select_events_.text(1));
                if (!e)
                    return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " + std::to_string(seq) +
                                                    " is corrupt: " + e.error().message()};
                if (e->sequence != seq)
                    return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " + std::to_string(seq) +
                                                    " says it has sequence " + std::to_string(e->sequence)};
                s.events.push_back(std::move(*e));
            }
            if (rc != SQLITE_DONE) return sql_error(rc, "cannot read the events of session " + name_of(k));
            s.events.reverse();
        }
        if (auto r = commit(tx); r.ec) return r;
        s.id = k.session_id;
        s.app_name = k.app_name;
        s.user_id = k.user_id;
        s.state = merged_state(own, &app, &user);
        out = std::move(s);
        return {};
    }

    result list_impl(const list_options& o, list_page& out) {
        out = {};
        if (auto ec = validate_id(o.app_name)) return {ec, "app name " + id_problem(o.app_name)};
        if (o.user_id)
            if (auto ec = validate_id(*o.user_id)) return {ec, "user id " + id_problem(*o.user_id)};
        if (o.page_size == 0 || o.page_size > 1000) return {errc::invalid_argument, "page_size must be 1..1000"};
        page_cursor cursor{std::numeric_limits<double>::infinity(), {}};
        if (!o.page_token.empty()) {
            auto c = parse_page_token(o.page_token);
            if (!c) return {c.error(), "invalid page token"};
            cursor = std::move(*c);
        }
        std::lock_guard lock(mutex_);
        sqlite::transaction tx(begin_, commit_, rollback_);
        if (auto r = begin(tx); r.ec) return r;
        struct row {
            std::string user, id, state;
            double last_update;
            std::int64_t last_sequence;
        };
        std::vector<row> rows;
        {
            auto& q = o.user_id ? list_user_ : list_app_;
            sqlite::resetter reset(q);
            q.bind(1, o.app_name).bind(2, cursor.last_update).bind(3, cursor.id);
            q.bind(4, static_cast<std::int64_t>(o.page_size) + 1);
            if (o.user_id) q.bind(5, *o.user_id);
            q.bind(6, cursor.user);
            int rc;
            while ((rc = q.step()) == SQLITE_ROW)
                rows.push_back({std::string(q.text(0)), std::string(q.text(1)), std::string(q.text(2)), q.real(3),
                                q.int64(4)});
            if (rc != SQLITE_DONE) return sql_error(rc, "cannot list the sessions of '" + o.app_name + "'");
        }
        const std::size_t n = std::min(rows.size(), o.page_size);
        json::object app;
        std::map<std::string, json::object, std::less<>> users;
        if (n > 0)
            if (auto r = load_app_state(o.app_name, app); r.ec) return r;
        for (std::size_t i = 0; i < n; ++i) {
            const auto& w = rows[i];
            auto it = users.find(w.user);
            if (it == users.end()) {
                it = users.emplace(w.user, json::object{}).first;
                if (auto r = load_user_state(o.app_name, w.user, it->second); r.ec) return r;
            }
            const session_key k{o.app_name, w.user, w.id};
            json::object own;
            if (auto r = parse_state(w.state, own, name_of(k)); r.ec) return r;
            session s;
            s.id = w.id;
            s.app_name = o.app_name;
            s.user_id = w.user;
            s.state = merged_state(own, &app, &it->second);
            s.last_update_time = w.last_update;
            s.last_sequence = w.last_sequence;
            out.sessions.push_back(std::move(s));
        }
        if (auto r = commit(tx); r.ec) return r;
        if (rows.size() > n) out.next_page_token = make_page_token(rows[n - 1].last_update, rows[n - 1].user, rows[n - 1].id);
        return {};
    }

    result remove_impl(const session_key& k) {
        if (auto ec = validate_key(k)) return {ec, key_problem(k)};
        std::lock_guard lock(mutex_);
        // One statement is one transaction; ON DELETE CASCADE removes the events with it.
        int rc = bind_key(delete_session_, k).run();
        if ((rc & 0xff) == SQLITE_BUSY)
            return {errc::busy, "the database stayed locked by another connection beyond busy_timeout"};
        if (rc != SQLITE_OK) return sql_error(rc, "cannot delete session " + name_of(k));
        return {};
    }

    result append_impl(const append_target& t, prepared_batch batch, append_result& out) {
        out = {};
        if (batch.rows.empty()) return {};
        const auto& rows = batch.rows;
        const auto& session_delta = batch.session;
        out = std::move(batch.result);

        std::lock_guard lock(mutex_);
        sqlite::transaction tx(begin_immediate_, commit_, rollback_);
        if (auto r = begin(tx); r.ec) {
            out = {};
            return r;
        }
        auto fail = [&](result r) {
            out = {};
            return r;
        };
        // The optimistic concurrency check, under the write lock.
        std::optional<std::string> new_state;
        {
            auto& q = session_delta.empty() ? select_revision_ : select_revision_state_;
            sqlite::resetter reset(q);
            int rc = bind_key(q, t.key).step();
            if (rc == SQLITE_DONE) return fail({errc::not_found, "session " + name_of(t.key) + " does not exist"});
            if (rc != SQLITE_ROW) return fail(sql_error(rc, "cannot read session " + name_of(t.key)));
            const std::int64_t stored = q.int64(0);
            if (stored != t.last_sequence)
                return fail({errc::stale_session, "session " + name_of(t.key) + " is at sequence " +
                                                      std::to_string(stored) + ", the caller's copy at " +
                                                      std::to_string(t.last_sequence)});
            if (!session_delta.empty()) {
                json::object own;
                if (auto r = parse_state(q.text(1), own, name_of(t.key)); r.ec) return fail(r);
                apply_delta(own, session_delta);
                new_state = json::serialize(own);
            }
        }
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const event& e = out.events[i];
            int rc = bind_key(insert_event_, t.key).bind(4, e.sequence).bind(5, e.timestamp).bind(6, rows[i]).run();
            if (rc != SQLITE_OK)
                return fail(sql_error(rc, "cannot insert event " + std::to_string(e.sequence) + " of session " +
                                              name_of(t.key)));
            if (const auto& c = e.actions.compaction) { // checked by prepare_batch
                rc = bind_key(prune_compactions_, t.key).bind(4, c->first_sequence).bind(5, c->last_sequence).run();
                if (rc == SQLITE_OK)
                    rc = bind_key(insert_compaction_, t.key)
                             .bind(4, e.sequence)
                             .bind(5, c->first_sequence)
                             .bind(6, c->last_sequence)
                             .run();
                if (rc != SQLITE_OK)
                    return fail(sql_error(rc, "cannot record the compaction of event " + std::to_string(e.sequence) +
                                                  " of session " + name_of(t.key)));
            }
        }
        if (auto r = write_shared(t.key, batch.app, batch.user); r.ec) return fail(r);
        bind_key(update_session_, t.key).bind(4, batch.last_sequence).bind(5, batch.last_update).bind(6, batch.compaction_first);
        if (new_state) update_session_.bind(7, *new_state);
        else update_session_.bind_null(7);
        if (int rc = update_session_.run(); rc != SQLITE_OK)
            return fail(sql_error(rc, "cannot update session " + name_of(t.key)));
        if (auto r = commit(tx); r.ec) return fail(r);
        out.last_sequence = batch.last_sequence;
        return {};
    }

    std::mutex mutex_; // one user of the connection at a time
    std::string journal_mode_;
    std::size_t max_event_bytes_ = 0;
    open_wait open_wait_; ///< during open() only
    std::size_t checkpoint_pages_ = 0;
    std::size_t wal_frames_ = 0;   // at the last commit (on_wal_commit)
    std::size_t next_request_ = 0; // WAL size at which to ask the checkpointer next

    // Declared before db_: closed after it, so that the checkpointer's connection is the
    // last one and its close checkpoints and removes the WAL, as a sole connection's would.
    std::unique_ptr<sqlite::checkpointer> checkpointer_;
    sqlite::connection db_; // declared before the statements: they are finalized first
    sqlite::statement begin_, begin_immediate_, commit_, rollback_;
    sqlite::statement insert_session_, select_session_, select_revision_, select_revision_state_, update_session_,
        delete_session_;
    sqlite::statement insert_event_, select_events_;
    sqlite::statement select_range_, select_compactions_, insert_compaction_, prune_compactions_;
    sqlite::statement select_app_state_, upsert_app_state_, delete_app_state_;
    sqlite::statement select_user_state_, upsert_user_state_, delete_user_state_;
    sqlite::statement list_app_, list_user_;
};

} // namespace libretto::detail

#endif
