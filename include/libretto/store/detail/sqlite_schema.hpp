// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SQLITE_SCHEMA_HPP
#define LIBRETTO_STORE_DETAIL_SQLITE_SCHEMA_HPP

// sqlite_store's schema and its migrations. The version lives in the one-row table
// libretto_schema; opening a database applies, in order and inside one write transaction,
// every migration newer than that version. A database written by a newer libretto (a
// version above the last migration) is refused, never touched.
//
// Never edit a migration once released: add a new one at the end of the list.

#include <libretto/store/detail/sqlite_db.hpp>

#include <boost/system/error_code.hpp>

#include <array>
#include <string>

namespace libretto::detail::sqlite {

struct migration {
    int version;     ///< the schema version after this migration
    const char* sql; ///< one or more statements
};

// clang-format off
inline constexpr std::array<migration, 4> migrations{{
    // 1: sessions, events (keyed and ordered by sequence), app and user state as key/value rows
    // (values are JSON texts), so shared-scope deltas are per-key upserts. Listing an app's
    // sessions newest first walks sessions_by_app; listing one user's uses the primary key
    // prefix and sorts that user's sessions (no second index to update on every append).
    {1, R"sql(
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
)sql"},
    // 2: the newest compaction's first_sequence on the session row, so a get with
    // from_newest_compaction is one indexed range query; backfilled from stored events.
    {2, R"sql(
ALTER TABLE sessions ADD COLUMN compaction_first INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET compaction_first = COALESCE((
    SELECT json_extract(e.data, '$.actions.compaction.first_sequence')
    FROM events AS e
    WHERE e.app_name = sessions.app_name AND e.user_id = sessions.user_id
      AND e.session_id = sessions.session_id
      AND (CASE WHEN json_valid(e.data) THEN json_type(e.data, '$.actions.compaction') END) = 'object'
    ORDER BY e.sequence DESC LIMIT 1), 0);
)sql"},
    // 3: the compactions a context view shows, per session (the event's sequence and its
    // range), so a get with context_only reads them and then only the ranges they leave
    // out (never the events a rolling summary covers). An append of a compaction removes
    // the rows whose range the new one contains. Backfilled from stored events: compactions
    // that check_compaction refuses (a bad range, an empty summary) are left out.
    {3, R"sql(
CREATE TABLE compactions (
    app_name       TEXT    NOT NULL,
    user_id        TEXT    NOT NULL,
    session_id     TEXT    NOT NULL,
    sequence       INTEGER NOT NULL,
    first_sequence INTEGER NOT NULL,
    last_sequence  INTEGER NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, sequence),
    FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, session_id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO compactions (app_name, user_id, session_id, sequence, first_sequence, last_sequence)
SELECT app_name, user_id, session_id, sequence, f, l FROM (
    SELECT e.app_name, e.user_id, e.session_id, e.sequence,
           json_extract(e.data, '$.actions.compaction.first_sequence') AS f,
           json_extract(e.data, '$.actions.compaction.last_sequence') AS l,
           json_extract(e.data, '$.actions.compaction.summary') AS s
    FROM events AS e
    WHERE (CASE WHEN json_valid(e.data) THEN json_type(e.data, '$.actions.compaction') END) = 'object')
WHERE typeof(f) = 'integer' AND typeof(l) = 'integer' AND typeof(s) = 'text'
  AND f >= 1 AND f <= l AND l < sequence AND trim(s, ' ' || char(9, 10, 13)) <> '';
DELETE FROM compactions AS c WHERE EXISTS (
    SELECT 1 FROM compactions AS n
    WHERE n.app_name = c.app_name AND n.user_id = c.user_id AND n.session_id = c.session_id
      AND n.sequence > c.sequence AND n.first_sequence <= c.first_sequence AND c.last_sequence <= n.last_sequence);
)sql"},
    // 4: the session-scope state a session was created with (JSON text), which a get with
    // get_options::with_initial_state returns. NULL for sessions created before: none
    // recorded, read as empty.
    {4, R"sql(
ALTER TABLE sessions ADD COLUMN initial_state TEXT;
)sql"},
}};
// clang-format on

/// The schema version this build writes.
inline constexpr int latest_schema_version = migrations.back().version;

/// Reads the schema version (0: a database without libretto tables). The caller holds a
/// transaction.
inline boost::system::error_code read_schema_version(connection& c, int& version, std::string& detail) {
    version = 0;
    statement s;
    int rc = s.prepare(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'libretto_schema'");
    if (rc == SQLITE_OK) rc = s.step();
    if (rc != SQLITE_ROW) {
        detail = c.errmsg();
        return error_from(rc);
    }
    const bool has_table = s.int64(0) != 0;
    s.reset();
    if (!has_table) return {};
    rc = s.prepare(c, "SELECT version FROM libretto_schema");
    if (rc == SQLITE_OK) rc = s.step();
    if (rc != SQLITE_ROW) {
        if (rc == SQLITE_DONE) {
            detail = "the libretto_schema table is empty";
            return errc::corrupt_data;
        }
        detail = c.errmsg();
        return error_from(rc);
    }
    version = static_cast<int>(s.int64(0));
    return {};
}

/// Brings the database to latest_schema_version. Fails with boost::system::errc::not_supported
/// for a newer version than this build knows, and leaves such a database untouched.
inline boost::system::error_code migrate(connection& c, std::string& detail) {
    auto newer = [&](int v) {
        detail = "the database has schema version " + std::to_string(v) +
                 ", newer than this libretto supports (" + std::to_string(latest_schema_version) +
                 "); open it with a newer libretto";
        return boost::system::error_code(boost::system::errc::not_supported, boost::system::generic_category());
    };
    // Usually up to date already: check under a read transaction, without taking the write lock.
    int version = 0;
    int rc = c.exec("BEGIN");
    if (rc != SQLITE_OK) {
        detail = c.errmsg();
        return error_from(rc);
    }
    auto ec = read_schema_version(c, version, detail);
    c.exec("COMMIT");
    if (ec) return ec;
    if (version == latest_schema_version) return {};
    if (version > latest_schema_version) return newer(version);

    // Migrate under the write lock; another connection may have migrated meanwhile.
    rc = c.exec("BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) {
        detail = std::string("cannot lock the database to migrate it: ") + c.errmsg();
        return error_from(rc);
    }
    auto fail = [&](int code, std::string what) {
        detail = std::move(what);
        c.exec("ROLLBACK");
        return error_from(code);
    };
    ec = read_schema_version(c, version, detail);
    if (ec) {
        c.exec("ROLLBACK");
        return ec;
    }
    if (version > latest_schema_version) {
        c.exec("ROLLBACK");
        return newer(version);
    }
    if (version == 0) {
        rc = c.exec("CREATE TABLE libretto_schema (version INTEGER NOT NULL); INSERT INTO libretto_schema VALUES (0);");
        if (rc != SQLITE_OK) return fail(rc, std::string("cannot create libretto_schema: ") + c.errmsg());
    }
    for (const auto& m : migrations) {
        if (m.version <= version) continue;
        rc = c.exec(m.sql);
        if (rc != SQLITE_OK)
            return fail(rc, "migration to schema version " + std::to_string(m.version) + " failed: " + c.errmsg());
    }
    const std::string set = "UPDATE libretto_schema SET version = " + std::to_string(latest_schema_version);
    rc = c.exec(set.c_str());
    if (rc == SQLITE_OK) rc = c.exec("COMMIT");
    if (rc != SQLITE_OK) return fail(rc, std::string("cannot commit the migration: ") + c.errmsg());
    return {};
}

} // namespace libretto::detail::sqlite

#endif
