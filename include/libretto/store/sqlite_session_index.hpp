// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SQLITE_SESSION_INDEX_HPP
#define LIBRETTO_STORE_SQLITE_SESSION_INDEX_HPP

// sqlite_session_index: the session index (session_index.hpp) in an SQLite database file,
// usually the file of the sqlite_store whose transcripts it indexes (one file, one backup).
// Needs the libretto::sqlite CMake component.
//
//   lb::sqlite_session_index index{{.path = "sessions.db"}};
//   lb::any_session_index idx{io.get_executor(), std::move(index)};
//
// One table, libretto_session_index, one row per (app, conversation key): the entry as the
// JSON text detail::entry_to_json makes, beside copies of the columns a list filters and
// sorts on. Each instance has its own connection (WAL mode), used by one thread at a time
// (a mutex); several instances or processes on one file are safe: a patch reads, changes
// and writes its row inside one write transaction (BEGIN IMMEDIATE), so concurrent patches
// of different fields all land. A write waits up to busy_timeout for another connection's
// write lock, then fails with errc::busy.
//
// The behaviour is memory_session_index's; what only a file can do wrong: a row whose
// entry cannot be read is errc::corrupt_data naming the key (a get, patch or list that
// meets it fails; it is never skipped), SQLite failures map as sqlite_store's do.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/store/detail/index_entry.hpp>
#include <libretto/store/detail/sqlite_db.hpp>
#include <libretto/store/detail/sqlite_service.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <sqlite3.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct sqlite_session_index_options {
    /// The database file; created if missing. The file of a sqlite_store is the intended
    /// place (the index's table lives beside the store's). ":memory:": a private database
    /// per instance.
    std::string path{};
    /// How long a write waits for another connection's write lock before errc::busy.
    std::chrono::milliseconds busy_timeout{5000};
};

class sqlite_session_index {
public:
    static constexpr bool blocking = true;

    /// Opens (creating if needed) the file and the table. Throws error_with_diagnostics
    /// naming the file: errc::invalid_argument for an empty path, errc::corrupt_data for a
    /// file that is not an SQLite database, errc::busy if another connection held the write
    /// lock beyond busy_timeout, errc::io_error otherwise.
    explicit sqlite_session_index(sqlite_session_index_options o) : s_(std::make_unique<state>()) {
        s_->path = std::move(o.path);
        std::string why;
        if (auto ec = open(o.busy_timeout, why))
            detail::sqlite::throw_open_error("sqlite_session_index", s_->path, ec, why);
    }

    // Movable (any_session_index holds it by value), not copyable: one connection each.
    sqlite_session_index(sqlite_session_index&&) noexcept = default;
    sqlite_session_index& operator=(sqlite_session_index&&) noexcept = default;

    /// The database file.
    const std::string& path() const noexcept { return s_->path; }

    boost::system::error_code index_get(const std::string& app, const std::string& key,
                                        std::optional<conversation_entry>& out, diagnostics* diag = nullptr) const {
        out.reset();
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        return s_->select_one(app, key, out, diag);
    }

    boost::system::error_code index_put(const conversation_entry& e, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_entry(e, diag)) return ec;
        const std::string text = json::serialize(detail::entry_to_json(e));
        std::lock_guard lock(s_->mutex);
        return s_->write(e, text, diag);
    }

    boost::system::error_code index_patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                          conversation_entry& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        // The write lock first, so the row read is the row written (no lost update).
        detail::sqlite::transaction tx(s.begin_immediate, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK) return s.sql_error(rc, "patch '" + key + "': cannot begin", diag);
        std::optional<conversation_entry> found;
        if (auto ec = s.select_one(app, key, found, diag)) return ec;
        if (!found) return detail::not_in_index(app, key, diag);
        // all or nothing: the transaction rolls back on any failure below
        if (auto ec = detail::apply_patch(*found, p, diag)) return ec;
        const std::string text = json::serialize(detail::entry_to_json(*found));
        if (auto ec = s.write(*found, text, diag)) return ec;
        if (int rc = tx.commit(); rc != SQLITE_OK) return s.sql_error(rc, "patch '" + key + "': cannot commit", diag);
        out = std::move(*found);
        return {};
    }

    boost::system::error_code index_list(const conversation_query& q, std::vector<conversation_entry>& out,
                                         diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_query(q, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        // user_id and chat_type narrow the rows in SQL (their columns); the rest of the
        // query is detail::matches, so it means what it means for every back end.
        auto& stmt = s.list;
        detail::sqlite::resetter reset(stmt);
        stmt.bind(1, std::string_view(q.app_name));
        if (q.user_id) stmt.bind(2, std::string_view(*q.user_id));
        else stmt.bind_null(2);
        if (q.chat_type) stmt.bind(3, std::string_view(*q.chat_type));
        else stmt.bind_null(3);
        int rc;
        while ((rc = stmt.step()) == SQLITE_ROW) {
            conversation_entry e;
            if (auto ec = s.decode(stmt.text(1), q.app_name, stmt.text(0), e, diag)) {
                out.clear();
                return ec;
            }
            if (detail::matches(e, q)) out.push_back(std::move(e));
        }
        if (rc != SQLITE_DONE) {
            out.clear();
            return s.sql_error(rc, "list app '" + q.app_name + "'", diag);
        }
        detail::order_and_limit(out, q);
        return {};
    }

    boost::system::error_code index_erase(const std::string& app, const std::string& key, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        if (int rc = s.erase.bind(1, std::string_view(app)).bind(2, std::string_view(key)).run(); rc != SQLITE_OK)
            return s.sql_error(rc, "erase '" + key + "'", diag);
        return {};
    }

    /// Replaces every entry of `app` with `entries` (a rebuild), in one transaction.
    boost::system::error_code index_replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                            diagnostics* diag = nullptr) {
        if (auto ec = detail::check_replace(app, entries, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        detail::sqlite::transaction tx(s.begin_immediate, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK) return s.sql_error(rc, "replace '" + app + "': cannot begin", diag);
        if (int rc = s.erase_app.bind(1, std::string_view(app)).run(); rc != SQLITE_OK)
            return s.sql_error(rc, "replace '" + app + "'", diag);
        for (const auto& e : entries)
            if (auto ec = s.write(e, json::serialize(detail::entry_to_json(e)), diag)) return ec;
        if (int rc = tx.commit(); rc != SQLITE_OK) return s.sql_error(rc, "replace '" + app + "': cannot commit", diag);
        return {};
    }

private:
    // Everything behind one pointer: the class moves, the connection and its statements
    // stay where they are (a statement points at its connection).
    struct state {
        std::mutex mutex;
        std::string path;
        // Declared first, destroyed last: close_v2 after every statement is finalized.
        detail::sqlite::connection db;
        detail::sqlite::statement begin_immediate, commit, rollback;
        detail::sqlite::statement select, upsert, erase, erase_app, list;

        boost::system::error_code sql_error(int rc, const std::string& what, diagnostics* diag) const {
            if (diag) diag->assign("sqlite_session_index: '" + path + "': " + what + ": " + db.errmsg());
            return detail::sqlite::error_from(rc);
        }

        // A stored entry back to its value; corrupt_data naming the key when it cannot be.
        boost::system::error_code decode(std::string_view text, std::string_view app, std::string_view key,
                                         conversation_entry& e, diagnostics* diag) const {
            auto corrupt = [&](const std::string& why) {
                if (diag)
                    diag->assign("sqlite_session_index: '" + path + "': the entry of conversation '" +
                                 std::string(key) + "' in app '" + std::string(app) + "' " + why);
                return boost::system::error_code(errc::corrupt_data);
            };
            json::error_code jec;
            std::string why;
            const json::value v = detail::parse_precise(text, jec, {}, &why);
            if (jec) return corrupt("is not valid JSON: " + (why.empty() ? jec.message() : why));
            decode_error err;
            if (!detail::read_entry(v, e, err)) return corrupt("cannot be read: " + err.message());
            return {};
        }

        boost::system::error_code select_one(const std::string& app, const std::string& key,
                                             std::optional<conversation_entry>& out, diagnostics* diag) {
            detail::sqlite::resetter reset(select);
            select.bind(1, std::string_view(app)).bind(2, std::string_view(key));
            const int rc = select.step();
            if (rc == SQLITE_DONE) return {};
            if (rc != SQLITE_ROW) return sql_error(rc, "get '" + key + "'", diag);
            conversation_entry e;
            if (auto ec = decode(select.text(0), app, key, e, diag)) return ec;
            out = std::move(e);
            return {};
        }

        boost::system::error_code write(const conversation_entry& e, const std::string& text, diagnostics* diag) {
            upsert.bind(1, std::string_view(e.app_name))
                .bind(2, std::string_view(e.key))
                .bind(3, std::string_view(e.user_id))
                .bind(4, std::string_view(e.session_id))
                .bind(5, e.updated_at)
                .bind(6, e.last_interaction_at)
                .bind(7, std::string_view(e.chat_type))
                .bind(8, std::string_view(text));
            if (int rc = upsert.run(); rc != SQLITE_OK) return sql_error(rc, "put '" + e.key + "'", diag);
            return {};
        }
    };

    boost::system::error_code open(std::chrono::milliseconds busy_timeout, std::string& why) {
        state& s = *s_;
        if (auto ec = detail::sqlite::open_wal(s.db, s.path, busy_timeout, why)) return ec;
        // synchronous = NORMAL (open_wal): the index is derived from the transcripts and
        // repaired from them after a power loss.
        if (auto ec = detail::sqlite::create_tables(
                s.db,
                "CREATE TABLE IF NOT EXISTS libretto_session_index ("
                " app_name TEXT NOT NULL, conv_key TEXT NOT NULL, user_id TEXT NOT NULL,"
                " session_id TEXT NOT NULL, updated_at REAL NOT NULL, last_interaction_at REAL NOT NULL,"
                " chat_type TEXT NOT NULL, entry TEXT NOT NULL,"
                " PRIMARY KEY (app_name, conv_key)) WITHOUT ROWID;"
                "CREATE INDEX IF NOT EXISTS libretto_session_index_by_update"
                " ON libretto_session_index (app_name, updated_at DESC, conv_key);",
                "the table libretto_session_index", why))
            return ec;
        return detail::sqlite::prepare_all(
            s.db,
            {
                {&s.begin_immediate, "BEGIN IMMEDIATE"},
                {&s.commit, "COMMIT"},
                {&s.rollback, "ROLLBACK"},
                {&s.select, "SELECT entry FROM libretto_session_index WHERE app_name = ?1 AND conv_key = ?2"},
                {&s.upsert, "INSERT OR REPLACE INTO libretto_session_index (app_name, conv_key, user_id,"
                            " session_id, updated_at, last_interaction_at, chat_type, entry)"
                            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
                {&s.erase, "DELETE FROM libretto_session_index WHERE app_name = ?1 AND conv_key = ?2"},
                {&s.erase_app, "DELETE FROM libretto_session_index WHERE app_name = ?1"},
                {&s.list, "SELECT conv_key, entry FROM libretto_session_index WHERE app_name = ?1 "
                          "AND (?2 IS NULL OR user_id = ?2) AND (?3 IS NULL OR chat_type = ?3) "
                          "ORDER BY updated_at DESC, conv_key"},
            },
            why);
    }

    std::unique_ptr<state> s_;
};

static_assert(session_index<sqlite_session_index>);

} // namespace libretto

#endif
