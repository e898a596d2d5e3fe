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
        if (p.busy_timeout_ms < 0) {
            detail = "busy_timeout is negative";
            return errc::invalid_argument;
        }
        max_event_bytes_ = p.max_event_bytes;
        int rc = db_.open(p.path, detail);
        if (rc != SQLITE_OK) return sqlite::error_from(rc);
        if (open_wait_.abandon) sqlite3_busy_handler(db_.get(), &sqlite_core::open_busy, &open_wait_);
        else sqlite3_busy_timeout(db_.get(), p.busy_timeout_ms);

        // The first statement reads the file header: a file that is not SQLite fails here.
        std::string message;
        rc = sqlite::enter_wal_mode(db_, journal_mode_, message, p.busy_timeout_ms, open_wait_.abandon);
        if (rc != SQLITE_ROW) {
            if ((rc & 0xff) == SQLITE_NOTADB)
                detail = "the file is not an SQLite database";
            else
                detail = "cannot set WAL journal mode: " + message;
            return sqlite::error_from(rc);
        }
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
        if (int rc = checkpointer_->start(p.path, p.busy_timeout_ms, detail); rc != SQLITE_OK) {
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
                               "last_sequence, compaction_first, initial_state) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0, 0, ?4)"},
            // ?4: with_initial_state (otherwise the column is not read).
            {&select_session_, "SELECT state, last_update, last_sequence, CASE WHEN ?4 THEN initial_state END "
                               "FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3"},
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

    result create_impl(create_options o, session& out);
    result get_impl(const session_key& k, const get_options& o, std::optional<session>& out);
    result list_impl(const list_options& o, list_page& out);
    result remove_impl(const session_key& k);
    result append_impl(const append_target& t, prepared_batch batch, append_result& out);

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

#include <libretto/store/detail/sqlite_operations.hpp>

#endif
