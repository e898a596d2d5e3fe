// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SQLITE_DB_HPP
#define LIBRETTO_STORE_DETAIL_SQLITE_DB_HPP

// Thin RAII wrappers over the SQLite C API for sqlite_store: a connection, prepared
// statements (reset after each use), transactions that roll back unless committed, and the
// mapping from SQLite result codes to error codes. Nothing here is thread-safe: one
// connection is used by one thread at a time (sqlite_store guards it with a mutex).

#include <libretto/error.hpp>

#include <boost/system/errc.hpp>
#include <boost/system/error_code.hpp>

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace libretto::detail::sqlite {

/// The error code for an SQLite result code (primary or extended).
inline boost::system::error_code error_from(int rc) noexcept {
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE: return {};
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return errc::busy;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: return errc::corrupt_data;
    case SQLITE_TOOBIG: return errc::oversize;
    case SQLITE_NOMEM: return make_error_code(boost::system::errc::not_enough_memory);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return make_error_code(boost::system::errc::permission_denied);
    default: return errc::io_error;
    }
}

/// An open database connection.
class connection {
public:
    connection() = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    connection(connection&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}
    connection& operator=(connection&& o) noexcept {
        std::swap(db_, o.db_);
        return *this;
    }
    // close_v2: statements still alive keep the connection as a zombie until finalized.
    ~connection() { sqlite3_close_v2(db_); }

    /// Opens (creating if needed) the file; on failure, `detail` says why.
    int open(const std::string& path, std::string& detail) {
        const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
        int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
        if (rc != SQLITE_OK) {
            detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
            sqlite3_close_v2(db_);
            db_ = nullptr;
            return rc;
        }
        sqlite3_extended_result_codes(db_, 1);
        return rc;
    }

    /// Runs SQL text (several statements allowed) that returns no rows we need.
    int exec(const char* sql) noexcept { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }

    const char* errmsg() const noexcept { return db_ ? sqlite3_errmsg(db_) : "no connection"; }
    sqlite3* get() const noexcept { return db_; }
    explicit operator bool() const noexcept { return db_ != nullptr; }

private:
    sqlite3* db_ = nullptr;
};

/// A prepared statement. Text bound with bind() must outlive the next step()/reset().
class statement {
public:
    statement() = default;
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    statement(statement&& o) noexcept : s_(std::exchange(o.s_, nullptr)), bind_rc_(o.bind_rc_) {}
    statement& operator=(statement&& o) noexcept {
        std::swap(s_, o.s_);
        std::swap(bind_rc_, o.bind_rc_);
        return *this;
    }
    ~statement() { sqlite3_finalize(s_); }

    int prepare(connection& c, std::string_view sql) {
        sqlite3_finalize(s_);
        s_ = nullptr;
        return sqlite3_prepare_v3(c.get(), sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &s_,
                                  nullptr);
    }

    // ---- binding (1-based); the first failure is reported by step() -------------------
    statement& bind(int i, std::string_view v) {
        note(sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8));
        return *this;
    }
    statement& bind(int i, std::int64_t v) {
        note(sqlite3_bind_int64(s_, i, v));
        return *this;
    }
    statement& bind(int i, double v) {
        note(sqlite3_bind_double(s_, i, v));
        return *this;
    }
    /// Bytes as a BLOB (an artifact's chunk); like text, they must outlive the next step().
    statement& bind_blob(int i, std::string_view v) {
        note(sqlite3_bind_blob64(s_, i, v.data(), v.size(), SQLITE_STATIC));
        return *this;
    }
    statement& bind_null(int i) {
        note(sqlite3_bind_null(s_, i));
        return *this;
    }

    /// SQLITE_ROW, SQLITE_DONE, or an error code.
    int step() noexcept {
        if (bind_rc_ != SQLITE_OK) return bind_rc_;
        return sqlite3_step(s_);
    }

    /// Steps a statement that returns no rows; SQLITE_DONE becomes SQLITE_OK.
    int run() noexcept {
        int rc = step();
        reset();
        return rc == SQLITE_DONE ? SQLITE_OK : rc;
    }

    void reset() noexcept {
        if (!s_) return; // never prepared, or its prepare failed
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
        bind_rc_ = SQLITE_OK;
    }

    // ---- columns (0-based) of the current row -----------------------------------------
    std::string_view text(int i) const noexcept {
        auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
        if (!p) return {};
        return {p, static_cast<std::size_t>(sqlite3_column_bytes(s_, i))};
    }
    /// A BLOB column's bytes, valid until the next step() or reset().
    std::string_view blob(int i) const noexcept {
        auto p = static_cast<const char*>(sqlite3_column_blob(s_, i));
        if (!p) return {};
        return {p, static_cast<std::size_t>(sqlite3_column_bytes(s_, i))};
    }
    std::int64_t int64(int i) const noexcept { return sqlite3_column_int64(s_, i); }
    double real(int i) const noexcept { return sqlite3_column_double(s_, i); }
    bool is_null(int i) const noexcept { return sqlite3_column_type(s_, i) == SQLITE_NULL; }

    explicit operator bool() const noexcept { return s_ != nullptr; }

private:
    void note(int rc) noexcept {
        if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    }

    sqlite3_stmt* s_ = nullptr;
    int bind_rc_ = SQLITE_OK;
};

/// Runs `PRAGMA journal_mode = WAL` (the first statement of a connection: it reads the file
/// header) and returns SQLite's code: on SQLITE_ROW `mode` is the mode the file is in now,
/// otherwise `message` is SQLite's message.
/// SQLite answers SQLITE_BUSY without calling the busy handler when waiting could deadlock,
/// as when connections open a new file at once (each holds the shared lock the other needs
/// released): the pragma then runs again, a few milliseconds apart, for up to `retry_ms` or
/// until `*abandon` is set.
inline int enter_wal_mode(connection& db, std::string& mode, std::string& message, int retry_ms,
                          const std::atomic<bool>* abandon = nullptr) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry_ms);
    statement s;
    for (int attempt = 0;; ++attempt) {
        int rc = s ? SQLITE_OK : s.prepare(db, "PRAGMA journal_mode = WAL"); // prepare reads the schema
        if (rc == SQLITE_OK) rc = s.step();
        if (rc == SQLITE_ROW) mode = std::string(s.text(0));
        else message = db.errmsg();
        s.reset(); // releases the shared lock another connection may be waiting for
        if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= until || (abandon && abandon->load()))
            return rc;
        std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 3 ? 1 : 5));
    }
}

/// Resets a statement when the scope ends (releases its read locks and bound text).
class resetter {
public:
    explicit resetter(statement& s) noexcept : s_(s) {}
    resetter(const resetter&) = delete;
    resetter& operator=(const resetter&) = delete;
    ~resetter() { s_.reset(); }

private:
    statement& s_;
};

/// A transaction that rolls back unless commit() succeeded. `begin`, `commit` and
/// `rollback` are prepared statements owned by the caller (reused across transactions).
class transaction {
public:
    transaction(statement& begin, statement& commit, statement& rollback) noexcept
        : begin_(begin), commit_(commit), rollback_(rollback) {}
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;
    ~transaction() {
        if (active_) rollback_.run();
    }

    int begin() noexcept {
        int rc = begin_.run();
        active_ = rc == SQLITE_OK;
        return rc;
    }
    int commit() noexcept {
        int rc = commit_.run();
        if (rc == SQLITE_OK) active_ = false;
        return rc;
    }

private:
    statement& begin_;
    statement& commit_;
    statement& rollback_;
    bool active_ = false;
};

} // namespace libretto::detail::sqlite

#endif
