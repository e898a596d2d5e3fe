// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SQLITE_SERVICE_HPP
#define LIBRETTO_STORE_DETAIL_SQLITE_SERVICE_HPP

// What the SQLite back ends beside sqlite_store share (sqlite_session_index,
// sqlite_artifact_service, sqlite_memory_service): each opens a connection of its own on
// the file in WAL mode, creates its tables, prepares all its statements at once, and its
// constructor throws what went wrong naming the file.

#include <libretto/detail/deadline.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/store/detail/sqlite_db.hpp>

#include <boost/system/error_code.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <initializer_list>
#include <string>
#include <utility>

namespace libretto::detail::sqlite {

/// Opens (creating if needed) `path` on `db`: a write waits up to `busy_timeout` for another
/// connection's write lock; WAL journal mode (but for ":memory:"), synchronous = NORMAL (as
/// sqlite_store's default: a commit survives a process crash). On failure `why` says why:
/// errc::invalid_argument for an empty path, errc::corrupt_data for a file that is not an
/// SQLite database, errc::busy for a lock held too long, errc::io_error otherwise.
inline boost::system::error_code open_wal(connection& db, const std::string& path,
                                          std::chrono::milliseconds busy_timeout, std::string& why) {
    if (path.empty()) {
        why = "no database path";
        return errc::invalid_argument;
    }
    if (auto problem = negative_duration_problem("busy_timeout", busy_timeout); !problem.empty()) {
        why = std::move(problem);
        return errc::invalid_argument;
    }
    if (int rc = db.open(path, why); rc != SQLITE_OK) return error_from(rc);
    const auto timeout_ms = std::clamp<std::chrono::milliseconds::rep>(busy_timeout.count(), 0, INT_MAX);
    sqlite3_busy_timeout(db.get(), static_cast<int>(timeout_ms));
    // The first statement reads the file header: a file that is not SQLite fails here.
    std::string mode, message;
    int rc = enter_wal_mode(db, mode, message, static_cast<int>(timeout_ms));
    if (rc != SQLITE_ROW) {
        why = (rc & 0xff) == SQLITE_NOTADB ? std::string("the file is not an SQLite database")
                                              : "cannot set WAL journal mode: " + message;
        return error_from(rc);
    }
    if (mode != "wal" && path != ":memory:") {
        why = "cannot use WAL journal mode (the database is in '" + mode + "' mode)";
        return errc::io_error;
    }
    if (rc = db.exec("PRAGMA synchronous = NORMAL"); rc != SQLITE_OK) {
        why = std::string("cannot set synchronous = NORMAL: ") + db.errmsg();
        return error_from(rc);
    }
    return {};
}

/// Runs `ddl` (CREATE ... IF NOT EXISTS statements); on failure `why` says what could not be
/// created (`what`) and SQLite's message.
inline boost::system::error_code create_tables(connection& db, const char* ddl, const std::string& what,
                                               std::string& why) {
    if (int rc = db.exec(ddl); rc != SQLITE_OK) {
        why = "cannot create " + what + ": " + db.errmsg();
        return error_from(rc);
    }
    return {};
}

/// Prepares every statement (kept for the connection's life); on failure `why` names the SQL.
inline boost::system::error_code prepare_all(connection& db,
                                             std::initializer_list<std::pair<statement*, std::string>> all,
                                             std::string& why) {
    for (const auto& [stmt, sql] : all)
        if (int rc = stmt->prepare(db, sql); rc != SQLITE_OK) {
            why = "cannot prepare \"" + sql + "\": " + db.errmsg();
            return error_from(rc);
        }
    return {};
}

/// A back end's constructor failing: error_with_diagnostics "<who>: open '<path>': <why>".
[[noreturn]] inline void throw_open_error(const char* who, const std::string& path, boost::system::error_code ec,
                                          const std::string& why) {
    diagnostics d;
    d.assign(std::string(who) + ": open '" + path + "': " + why);
    throw error_with_diagnostics(ec, std::move(d));
}

} // namespace libretto::detail::sqlite

#endif
