// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SQLITE_ARTIFACT_SERVICE_HPP
#define LIBRETTO_STORE_SQLITE_ARTIFACT_SERVICE_HPP

// sqlite_artifact_service: artifacts (artifact_service.hpp) in an SQLite database file,
// usually the file of the sqlite_store whose sessions they belong to (one file, one backup).
// Needs the libretto::sqlite CMake component.
//
//   lb::sqlite_artifact_service artifacts{{.path = "sessions.db"}};
//   lb::any_artifact_service svc{io.get_executor(), std::move(artifacts)};
//
// Two tables: libretto_artifact_versions, one row per version (its info; the metadata as
// JSON text), and libretto_artifact_chunks, the bytes in rows of up to artifact_chunk_bytes,
// so no call ever holds a whole blob in memory. A save reads its source a chunk at a time
// into chunk rows and writes the version row last, all in one write transaction (BEGIN
// IMMEDIATE): the next version number is read under the write lock, so saves from several
// instances or processes get distinct consecutive versions, and a save that fails (a source
// that throws, past max_artifact_bytes) leaves nothing. A load reads in one transaction (a
// consistent snapshot) and hands each chunk row to the sink as SQLite steps to it.
//
// Each instance has its own connection (WAL mode), used by one thread at a time (a mutex,
// held while the source or sink runs: they must not call back into the same instance). A
// write waits up to busy_timeout for another connection's write lock, then errc::busy.
//
// The behaviour is memory_artifact_service's; what only a file can do wrong: a version row
// whose metadata is not a JSON object, or whose chunks do not add up to its size, is
// errc::corrupt_data naming the artifact; SQLite failures map as sqlite_store's do.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/store/detail/artifact_common.hpp>
#include <libretto/store/detail/sqlite_db.hpp>
#include <libretto/store/detail/sqlite_service.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct sqlite_artifact_service_options {
    /// The database file; created if missing. The file of a sqlite_store is the intended
    /// place. ":memory:": a private database per instance.
    std::string path{};
    /// How long a write waits for another connection's write lock before errc::busy.
    std::chrono::milliseconds busy_timeout{5000};
    /// Largest artifact, in bytes; 0: no limit. A larger save is errc::oversize.
    std::uint64_t max_artifact_bytes = 0;
};

class sqlite_artifact_service {
public:
    static constexpr bool blocking = true;

    /// Opens (creating if needed) the file and the tables. Throws error_with_diagnostics
    /// naming the file: errc::invalid_argument for an empty path, errc::corrupt_data for a
    /// file that is not an SQLite database, errc::busy if another connection held the write
    /// lock beyond busy_timeout, errc::io_error otherwise.
    explicit sqlite_artifact_service(sqlite_artifact_service_options o) : s_(std::make_unique<state>()) {
        s_->path = std::move(o.path);
        s_->max_bytes = o.max_artifact_bytes;
        std::string why;
        if (auto ec = open(o.busy_timeout, why))
            detail::sqlite::throw_open_error("sqlite_artifact_service", s_->path, ec, why);
    }

    // Movable (any_artifact_service holds it by value), not copyable: one connection each.
    sqlite_artifact_service(sqlite_artifact_service&&) noexcept = default;
    sqlite_artifact_service& operator=(sqlite_artifact_service&&) noexcept = default;

    /// The database file.
    const std::string& path() const noexcept { return s_->path; }

    boost::system::error_code artifact_save(const artifact_key& k, artifact_source& in, std::string_view mime_type,
                                            const json::object& metadata, artifact_info& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        if (auto ec = detail::check_artifact_info(k, mime_type, metadata, diag)) return ec;
        const std::string md = json::serialize(metadata);
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        // The write lock first: the version number read is the one written. The transaction
        // rolls back on every early return and on an exception from the source.
        detail::sqlite::transaction tx(s.begin_immediate, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK) return s.sql_error(rc, "save '" + k.name + "': cannot begin", diag);
        artifact_info info;
        {
            detail::sqlite::resetter reset(s.next_version);
            const int rc = bind_key(s.next_version, k).step();
            if (rc != SQLITE_ROW) return s.sql_error(rc, "save '" + k.name + "'", diag);
            info.version = s.next_version.int64(0);
        }
        std::string buf(artifact_chunk_bytes, '\0');
        for (std::int64_t seq = 0;; ++seq) {
            const std::size_t n = detail::fill_chunk(in, buf);
            if (n == 0) break;
            info.size += n;
            if (s.max_bytes != 0 && info.size > s.max_bytes) return detail::artifact_too_large(k, s.max_bytes, diag);
            bind_key(s.insert_chunk, k).bind(5, info.version).bind(6, seq).bind_blob(7, std::string_view(buf.data(), n));
            if (int rc = s.insert_chunk.run(); rc != SQLITE_OK) return s.sql_error(rc, "save '" + k.name + "'", diag);
            if (n < buf.size()) break; // the source is at its end
        }
        info.name = k.name;
        info.mime_type = std::string(mime_type);
        info.created_at = event::now();
        info.metadata = metadata;
        bind_key(s.insert_version, k)
            .bind(5, info.version)
            .bind(6, mime_type)
            .bind(7, static_cast<std::int64_t>(info.size))
            .bind(8, info.created_at)
            .bind(9, std::string_view(md));
        if (int rc = s.insert_version.run(); rc != SQLITE_OK) return s.sql_error(rc, "save '" + k.name + "'", diag);
        if (int rc = tx.commit(); rc != SQLITE_OK) return s.sql_error(rc, "save '" + k.name + "': cannot commit", diag);
        out = std::move(info);
        return {};
    }

    boost::system::error_code artifact_load(const artifact_key& k, std::optional<std::int64_t> ver, artifact_sink& out,
                                            std::optional<artifact_info>& info, diagnostics* diag = nullptr) const {
        info.reset();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        // One read transaction: the version row and its chunks from the same snapshot, even
        // when another connection deletes the artifact meanwhile.
        detail::sqlite::transaction tx(s.begin_read, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK) return s.sql_error(rc, "load '" + k.name + "': cannot begin", diag);
        std::optional<artifact_info> found;
        {
            auto& stmt = ver ? s.select_version : s.select_latest;
            detail::sqlite::resetter reset(stmt);
            bind_key(stmt, k);
            if (ver) stmt.bind(5, *ver);
            const int rc = stmt.step();
            if (rc == SQLITE_ROW) {
                found.emplace();
                if (auto ec = s.decode(stmt, k, *found, diag)) return ec;
            } else if (rc != SQLITE_DONE) {
                return s.sql_error(rc, "load '" + k.name + "'", diag);
            }
        }
        if (!found) return ver ? detail::no_such_version(k, *ver, diag) : boost::system::error_code{};
        std::uint64_t delivered = 0;
        {
            detail::sqlite::resetter reset(s.select_chunks);
            bind_key(s.select_chunks, k).bind(5, found->version);
            int rc;
            while ((rc = s.select_chunks.step()) == SQLITE_ROW) {
                const std::string_view chunk = s.select_chunks.blob(0);
                delivered += chunk.size();
                if (!chunk.empty()) out(chunk);
            }
            if (rc != SQLITE_DONE) return s.sql_error(rc, "load '" + k.name + "'", diag);
        }
        if (delivered != found->size) return s.short_chunks(k, *found, delivered, diag);
        if (int rc = tx.commit(); rc != SQLITE_OK) return s.sql_error(rc, "load '" + k.name + "'", diag);
        info = std::move(found);
        return {};
    }

    boost::system::error_code artifact_list(const std::string& app, const std::string& user, const std::string& session,
                                            std::vector<std::string>& names, diagnostics* diag = nullptr) const {
        names.clear();
        if (auto ec = detail::check_artifact_key(artifact_key(app, user, session, "x"), diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        // The user's names (scope '') and the session's; the two never share a name (only
        // the user's begin with "user:"). ORDER BY in BINARY collation: std::string's order.
        auto& stmt = s.list;
        detail::sqlite::resetter reset(stmt);
        stmt.bind(1, std::string_view(app)).bind(2, std::string_view(user)).bind(3, std::string_view(session));
        int rc;
        while ((rc = stmt.step()) == SQLITE_ROW) names.emplace_back(stmt.text(0));
        if (rc != SQLITE_DONE) {
            names.clear();
            return s.sql_error(rc, "list session '" + session + "'", diag);
        }
        return {};
    }

    boost::system::error_code artifact_versions(const artifact_key& k, std::vector<artifact_info>& out,
                                                diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        auto& stmt = s.select_versions;
        detail::sqlite::resetter reset(stmt);
        bind_key(stmt, k);
        int rc;
        while ((rc = stmt.step()) == SQLITE_ROW) {
            artifact_info i;
            if (auto ec = s.decode(stmt, k, i, diag)) {
                out.clear();
                return ec;
            }
            out.push_back(std::move(i));
        }
        if (rc != SQLITE_DONE) {
            out.clear();
            return s.sql_error(rc, "versions of '" + k.name + "'", diag);
        }
        return {};
    }

    boost::system::error_code artifact_delete(const artifact_key& k, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        detail::sqlite::transaction tx(s.begin_immediate, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK) return s.sql_error(rc, "delete '" + k.name + "': cannot begin", diag);
        for (auto* stmt : {&s.delete_chunks, &s.delete_versions})
            if (int rc = bind_key(*stmt, k).run(); rc != SQLITE_OK) return s.sql_error(rc, "delete '" + k.name + "'", diag);
        if (int rc = tx.commit(); rc != SQLITE_OK) return s.sql_error(rc, "delete '" + k.name + "': cannot commit", diag);
        return {};
    }

private:
    // Parameters 1-4 of every statement about one artifact. The key's strings outlive the
    // statement's use (bound without copying).
    static detail::sqlite::statement& bind_key(detail::sqlite::statement& st, const artifact_key& k) {
        // The user's scope as "", never a null pointer (which SQLite binds as NULL).
        std::string_view scope = detail::artifact_scope(k);
        if (scope.empty()) scope = "";
        return st.bind(1, std::string_view(k.app_name))
            .bind(2, std::string_view(k.user_id))
            .bind(3, scope)
            .bind(4, std::string_view(k.name));
    }

    // Everything behind one pointer: the class moves, the connection and its statements
    // stay where they are (a statement points at its connection).
    struct state {
        std::mutex mutex;
        std::string path;
        std::uint64_t max_bytes = 0;
        // Declared first, destroyed last: close_v2 after every statement is finalized.
        detail::sqlite::connection db;
        detail::sqlite::statement begin_immediate, begin_read, commit, rollback;
        detail::sqlite::statement next_version, insert_chunk, insert_version, select_latest, select_version,
            select_chunks, select_versions, list, delete_chunks, delete_versions;

        boost::system::error_code sql_error(int rc, const std::string& what, diagnostics* diag) const {
            if (diag) diag->assign("sqlite_artifact_service: '" + path + "': " + what + ": " + db.errmsg());
            return detail::sqlite::error_from(rc);
        }

        std::string where(const artifact_key& k, std::int64_t version) const {
            std::string s = "artifact '" + k.name + "' version " + std::to_string(version) + " (app '" + k.app_name +
                            "', user '" + k.user_id + "'";
            if (!k.user_scoped()) s += ", session '" + k.session_id + "'";
            return s + ")";
        }

        boost::system::error_code short_chunks(const artifact_key& k, const artifact_info& i, std::uint64_t got,
                                               diagnostics* diag) const {
            if (diag)
                diag->assign("sqlite_artifact_service: '" + path + "': the chunks of " + where(k, i.version) +
                             " hold " + std::to_string(got) + " bytes, its size is " + std::to_string(i.size));
            return errc::corrupt_data;
        }

        // A version row (version, mime_type, size, created_at, metadata) back to its info;
        // corrupt_data naming the artifact when it cannot be.
        boost::system::error_code decode(const detail::sqlite::statement& st, const artifact_key& k, artifact_info& i,
                                         diagnostics* diag) const {
            i.name = k.name;
            i.version = st.int64(0);
            i.mime_type = std::string(st.text(1));
            const std::int64_t size = st.int64(2);
            i.created_at = st.real(3);
            auto corrupt = [&](const std::string& why) {
                if (diag) diag->assign("sqlite_artifact_service: '" + path + "': " + where(k, i.version) + " " + why);
                return boost::system::error_code(errc::corrupt_data);
            };
            if (size < 0) return corrupt("has a negative size");
            i.size = static_cast<std::uint64_t>(size);
            json::error_code jec;
            std::string why;
            const json::value v = detail::parse_precise(st.text(4), jec, {}, &why);
            if (jec) return corrupt("has metadata that is not valid JSON: " + (why.empty() ? jec.message() : why));
            if (!v.is_object()) return corrupt("has metadata that is not a JSON object");
            i.metadata = v.get_object();
            return {};
        }
    };

    boost::system::error_code open(std::chrono::milliseconds busy_timeout, std::string& why) {
        state& s = *s_;
        if (auto ec = detail::sqlite::open_wal(s.db, s.path, busy_timeout, why)) return ec;
        // The chunks are a rowid table: SQLite advises against rows of up to 256 KiB in a
        // WITHOUT ROWID table.
        if (auto ec = detail::sqlite::create_tables(
                s.db,
                "CREATE TABLE IF NOT EXISTS libretto_artifact_versions ("
                " app_name TEXT NOT NULL, user_id TEXT NOT NULL, scope TEXT NOT NULL, name TEXT NOT NULL,"
                " version INTEGER NOT NULL, mime_type TEXT NOT NULL, size INTEGER NOT NULL,"
                " created_at REAL NOT NULL, metadata TEXT NOT NULL,"
                " PRIMARY KEY (app_name, user_id, scope, name, version)) WITHOUT ROWID;"
                "CREATE TABLE IF NOT EXISTS libretto_artifact_chunks ("
                " app_name TEXT NOT NULL, user_id TEXT NOT NULL, scope TEXT NOT NULL, name TEXT NOT NULL,"
                " version INTEGER NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,"
                " PRIMARY KEY (app_name, user_id, scope, name, version, seq));",
                "the artifact tables", why))
            return ec;
        const std::string key = " WHERE app_name = ?1 AND user_id = ?2 AND scope = ?3 AND name = ?4";
        const std::string info = "SELECT version, mime_type, size, created_at, metadata FROM libretto_artifact_versions";
        return detail::sqlite::prepare_all(
            s.db,
            {
                {&s.begin_immediate, "BEGIN IMMEDIATE"},
                {&s.begin_read, "BEGIN"},
                {&s.commit, "COMMIT"},
                {&s.rollback, "ROLLBACK"},
                {&s.next_version,
                 "SELECT COALESCE(MAX(version) + 1, 0) FROM libretto_artifact_versions" + key},
                {&s.insert_chunk, "INSERT INTO libretto_artifact_chunks (app_name, user_id, scope, name, version, seq,"
                                  " data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
                {&s.insert_version, "INSERT INTO libretto_artifact_versions (app_name, user_id, scope, name,"
                                    " version, mime_type, size, created_at, metadata)"
                                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
                {&s.select_latest, info + key + " ORDER BY version DESC LIMIT 1"},
                {&s.select_version, info + key + " AND version = ?5"},
                {&s.select_chunks,
                 "SELECT data FROM libretto_artifact_chunks" + key + " AND version = ?5 ORDER BY seq"},
                {&s.select_versions, info + key + " ORDER BY version"},
                {&s.list, "SELECT DISTINCT name FROM libretto_artifact_versions WHERE app_name = ?1 AND user_id = ?2"
                          " AND scope IN ('', ?3) ORDER BY name"},
                {&s.delete_chunks, "DELETE FROM libretto_artifact_chunks" + key},
                {&s.delete_versions, "DELETE FROM libretto_artifact_versions" + key},
            },
            why);
    }

    std::unique_ptr<state> s_;
};

static_assert(artifact_service<sqlite_artifact_service>);

} // namespace libretto

#endif
