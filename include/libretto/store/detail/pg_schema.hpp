// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_PG_SCHEMA_HPP
#define LIBRETTO_STORE_DETAIL_PG_SCHEMA_HPP

// postgres_store's schema, its migrations and its statements, for one PostgreSQL schema
// (namespace) whose name is substituted for "@" in every text below: every name is
// qualified, so nothing depends on a connection's search_path.
//
// Tables: sessions (one row per session: revision, last update, where the newest
// compaction starts), events (one row per event, the exact JSON text libretto wrote),
// session_state / app_state / user_state (one row per key, the value as JSON text).
// Values stay text, not jsonb: jsonb would reorder keys and rewrite numbers (1e2 comes
// back as 100, an integer), and events must come back byte for byte (signatures).
//
// Writes run in the functions libretto_create and libretto_append: one round trip each,
// one transaction, the session row locked FOR UPDATE while the revision is checked (the
// optimistic concurrency check holds across connections and processes), shared-scope rows
// upserted in key order (app keys, then user keys) so concurrent writers of the same keys
// lock in one order and cannot deadlock.

#include <array>
#include <string>
#include <string_view>

namespace libretto::detail::pg {

/// The schema version this build creates and migrates to.
inline constexpr int latest_schema_version = 4;

/// Replaces every '@' in `sql` with the schema name (validated: [a-z_][a-z0-9_]*).
inline std::string qualify(std::string_view sql, std::string_view schema) {
    std::string out;
    out.reserve(sql.size() + 16 * schema.size());
    for (char c : sql) {
        if (c == '@') out += schema;
        else out += c;
    }
    return out;
}

/// A schema name we accept: an unquoted PostgreSQL identifier, lower case, at most 63 bytes.
inline bool valid_schema_name(std::string_view s) noexcept {
    if (s.empty() || s.size() > 63) return false;
    if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z'))) return false;
    for (char c : s)
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    return true;
}

// ---- migrations: step N takes a database from version N-1 to N ---------------------------

inline constexpr std::string_view migration_v1 = R"sql(
CREATE TABLE @.sessions (
    app_name text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    create_time double precision NOT NULL,
    last_update double precision NOT NULL,
    last_sequence bigint NOT NULL DEFAULT 0,
    compaction_first bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_name, user_id, session_id)
);
CREATE INDEX sessions_by_app ON @.sessions (app_name, last_update DESC, session_id);
CREATE TABLE @.events (
    app_name text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    sequence bigint NOT NULL,
    timestamp double precision NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, sequence),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES @.sessions ON DELETE CASCADE
);
CREATE TABLE @.session_state (
    app_name text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    key text NOT NULL,
    value text,
    PRIMARY KEY (app_name, user_id, session_id, key),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES @.sessions ON DELETE CASCADE
);
CREATE TABLE @.app_state (
    app_name text NOT NULL,
    key text NOT NULL,
    value text,
    PRIMARY KEY (app_name, key)
);
CREATE TABLE @.user_state (
    app_name text NOT NULL,
    user_id text NOT NULL,
    key text NOT NULL,
    value text,
    PRIMARY KEY (app_name, user_id, key)
);

-- Upserts the keys of one scope in key order; a NULL value deletes its key. Rows to be
-- deleted are first upserted (locking them in order with the rest), then removed.
CREATE FUNCTION @.libretto_write_app(p_app text, p_keys text[], p_vals text[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF cardinality(p_keys) = 0 THEN RETURN; END IF;
    INSERT INTO @.app_state AS t (app_name, key, value)
        SELECT p_app, u.k, u.v FROM unnest(p_keys, p_vals) AS u(k, v) ORDER BY u.k
        ON CONFLICT (app_name, key) DO UPDATE SET value = excluded.value;
    DELETE FROM @.app_state AS t WHERE t.app_name = p_app AND t.key = ANY (p_keys) AND t.value IS NULL;
END $fn$;

CREATE FUNCTION @.libretto_write_user(p_app text, p_user text, p_keys text[], p_vals text[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF cardinality(p_keys) = 0 THEN RETURN; END IF;
    INSERT INTO @.user_state AS t (app_name, user_id, key, value)
        SELECT p_app, p_user, u.k, u.v FROM unnest(p_keys, p_vals) AS u(k, v) ORDER BY u.k
        ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = excluded.value;
    DELETE FROM @.user_state AS t
        WHERE t.app_name = p_app AND t.user_id = p_user AND t.key = ANY (p_keys) AND t.value IS NULL;
END $fn$;

CREATE FUNCTION @.libretto_write_session(p_app text, p_user text, p_session text, p_keys text[], p_vals text[])
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    IF cardinality(p_keys) = 0 THEN RETURN; END IF;
    INSERT INTO @.session_state AS t (app_name, user_id, session_id, key, value)
        SELECT p_app, p_user, p_session, u.k, u.v FROM unnest(p_keys, p_vals) AS u(k, v) ORDER BY u.k
        ON CONFLICT (app_name, user_id, session_id, key) DO UPDATE SET value = excluded.value;
    DELETE FROM @.session_state AS t WHERE t.app_name = p_app AND t.user_id = p_user
        AND t.session_id = p_session AND t.key = ANY (p_keys) AND t.value IS NULL;
END $fn$;

-- Creates a session; returns the shared state it sees (scope 2: app, 3: user).
CREATE FUNCTION @.libretto_create(p_app text, p_user text, p_session text, p_now double precision,
    p_skeys text[], p_svals text[], p_akeys text[], p_avals text[], p_ukeys text[], p_uvals text[])
RETURNS TABLE (r_scope integer, r_key text, r_value text) LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO @.sessions (app_name, user_id, session_id, create_time, last_update)
        VALUES (p_app, p_user, p_session, p_now, p_now) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session %/%/% already exists', p_app, p_user, p_session USING ERRCODE = 'LB410';
    END IF;
    PERFORM @.libretto_write_session(p_app, p_user, p_session, p_skeys, p_svals);
    PERFORM @.libretto_write_app(p_app, p_akeys, p_avals);
    PERFORM @.libretto_write_user(p_app, p_user, p_ukeys, p_uvals);
    RETURN QUERY
        SELECT 2, a.key, a.value FROM @.app_state AS a WHERE a.app_name = p_app
        UNION ALL
        SELECT 3, u.key, u.value FROM @.user_state AS u WHERE u.app_name = p_app AND u.user_id = p_user;
END $fn$;

-- Appends events to a session at revision p_expected; returns the new revision.
CREATE FUNCTION @.libretto_append(p_app text, p_user text, p_session text, p_expected bigint,
    p_last_update double precision, p_compaction_first bigint,
    p_seqs bigint[], p_ts double precision[], p_data text[],
    p_skeys text[], p_svals text[], p_akeys text[], p_avals text[], p_ukeys text[], p_uvals text[])
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_cur bigint;
    v_last bigint := p_expected + cardinality(p_seqs);
BEGIN
    SELECT s.last_sequence INTO v_cur FROM @.sessions AS s
        WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session %/%/% does not exist', p_app, p_user, p_session USING ERRCODE = 'LB404';
    END IF;
    IF v_cur <> p_expected THEN
        RAISE EXCEPTION 'session %/%/% is at sequence %, the caller''s copy at %',
            p_app, p_user, p_session, v_cur, p_expected USING ERRCODE = 'LB409';
    END IF;
    INSERT INTO @.events (app_name, user_id, session_id, sequence, timestamp, data)
        SELECT p_app, p_user, p_session, u.s, u.t, u.d FROM unnest(p_seqs, p_ts, p_data) AS u(s, t, d);
    PERFORM @.libretto_write_session(p_app, p_user, p_session, p_skeys, p_svals);
    PERFORM @.libretto_write_app(p_app, p_akeys, p_avals);
    PERFORM @.libretto_write_user(p_app, p_user, p_ukeys, p_uvals);
    UPDATE @.sessions AS s SET last_sequence = v_last, last_update = p_last_update,
        compaction_first = CASE WHEN p_compaction_first > 0 THEN p_compaction_first ELSE s.compaction_first END
        WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session;
    RETURN v_last;
END $fn$;
)sql";

// v2: listing one user's sessions walks an index in page order instead of sorting all of
// that user's sessions.
inline constexpr std::string_view migration_v2 = R"sql(
CREATE INDEX sessions_by_user ON @.sessions (app_name, user_id, last_update DESC, session_id);
)sql";

// v3: the compactions a context view shows, per session (compactions: the event's sequence
// and its range; an append of a compaction removes the rows whose range it contains, and
// one inside another's range is not recorded), so a get with context_only reads only the
// ranges they leave out (libretto_context_ranges), never what a rolling summary covers.
// Backfilled from stored events without the compactions check_compaction refuses.
// libretto_append takes the batch's compactions.
inline constexpr std::string_view migration_v3 = R"sql(
CREATE TABLE @.compactions (
    app_name text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    sequence bigint NOT NULL,
    first_sequence bigint NOT NULL,
    last_sequence bigint NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, sequence),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES @.sessions ON DELETE CASCADE
);
INSERT INTO @.compactions (app_name, user_id, session_id, sequence, first_sequence, last_sequence)
SELECT x.app_name, x.user_id, x.session_id, x.sequence, (x.c->>'first_sequence')::bigint, (x.c->>'last_sequence')::bigint
FROM (SELECT e.app_name, e.user_id, e.session_id, e.sequence, (e.data::jsonb)->'actions'->'compaction' AS c
      FROM @.events AS e WHERE e.data LIKE '%"compaction"%') AS x
WHERE jsonb_typeof(x.c) = 'object'
  AND jsonb_typeof(x.c->'first_sequence') = 'number' AND (x.c->>'first_sequence') ~ '^-?[0-9]{1,18}$'
  AND jsonb_typeof(x.c->'last_sequence') = 'number' AND (x.c->>'last_sequence') ~ '^-?[0-9]{1,18}$'
  AND jsonb_typeof(x.c->'summary') = 'string' AND btrim(x.c->>'summary', E' \t\r\n') <> ''
  AND (x.c->>'first_sequence')::bigint >= 1
  AND (x.c->>'first_sequence')::bigint <= (x.c->>'last_sequence')::bigint
  AND (x.c->>'last_sequence')::bigint < x.sequence;
DELETE FROM @.compactions AS c WHERE EXISTS (
    SELECT 1 FROM @.compactions AS n
    WHERE n.app_name = c.app_name AND n.user_id = c.user_id AND n.session_id = c.session_id
      AND n.sequence <> c.sequence AND n.first_sequence <= c.first_sequence AND c.last_sequence <= n.last_sequence
      AND (n.first_sequence <> c.first_sequence OR n.last_sequence <> c.last_sequence OR n.sequence > c.sequence));

-- What a get with context_only reads of a session, as disjoint sequence ranges: what no
-- shown compaction covers (the gaps between ranges and everything after the newest
-- covered range), the shown compaction events the ranges hide, and with p_newest the
-- range of the newest shown compaction.
CREATE FUNCTION @.libretto_context_ranges(p_app text, p_user text, p_session text, p_newest boolean)
RETURNS TABLE (lo bigint, hi bigint) LANGUAGE sql STABLE AS $fn$
    WITH c AS (
        SELECT t.sequence, t.first_sequence AS f, t.last_sequence AS l FROM @.compactions AS t
        WHERE t.app_name = p_app AND t.user_id = p_user AND t.session_id = p_session),
    reach AS (
        SELECT c.f, max(c.l) OVER (ORDER BY c.f, c.l ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM c),
    newest AS (SELECT c.f, c.l FROM c WHERE p_newest ORDER BY c.sequence DESC LIMIT 1)
    SELECT coalesce(r.before, 0) + 1, r.f - 1 FROM reach AS r WHERE r.f > coalesce(r.before, 0) + 1
    UNION ALL
    SELECT coalesce(max(c.l), 0) + 1, 9223372036854775807 FROM c
    UNION ALL
    SELECT c.sequence, c.sequence FROM c
        WHERE EXISTS (SELECT 1 FROM c AS h WHERE h.f <= c.sequence AND c.sequence <= h.l)
          AND NOT EXISTS (SELECT 1 FROM newest AS n WHERE n.f <= c.sequence AND c.sequence <= n.l)
    UNION ALL
    SELECT n.f, n.l FROM newest AS n
$fn$;

DROP FUNCTION @.libretto_append(text, text, text, bigint, double precision, bigint, bigint[], double precision[],
    text[], text[], text[], text[], text[], text[], text[]);
-- Appends events to a session at revision p_expected; returns the new revision. The
-- batch's compactions (checked by the client): p_cseqs, p_cfirsts, p_clasts.
CREATE FUNCTION @.libretto_append(p_app text, p_user text, p_session text, p_expected bigint,
    p_last_update double precision, p_compaction_first bigint,
    p_seqs bigint[], p_ts double precision[], p_data text[],
    p_skeys text[], p_svals text[], p_akeys text[], p_avals text[], p_ukeys text[], p_uvals text[],
    p_cseqs bigint[], p_cfirsts bigint[], p_clasts bigint[])
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_cur bigint;
    v_last bigint := p_expected + cardinality(p_seqs);
BEGIN
    SELECT s.last_sequence INTO v_cur FROM @.sessions AS s
        WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session %/%/% does not exist', p_app, p_user, p_session USING ERRCODE = 'LB404';
    END IF;
    IF v_cur <> p_expected THEN
        RAISE EXCEPTION 'session %/%/% is at sequence %, the caller''s copy at %',
            p_app, p_user, p_session, v_cur, p_expected USING ERRCODE = 'LB409';
    END IF;
    INSERT INTO @.events (app_name, user_id, session_id, sequence, timestamp, data)
        SELECT p_app, p_user, p_session, u.s, u.t, u.d FROM unnest(p_seqs, p_ts, p_data) AS u(s, t, d);
    FOR i IN 1 .. coalesce(cardinality(p_cseqs), 0) LOOP
        -- Recorded unless another one's range contains it (an identical range: the newer wins).
        CONTINUE WHEN EXISTS (SELECT 1 FROM @.compactions AS c
            WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
              AND c.first_sequence <= p_cfirsts[i] AND p_clasts[i] <= c.last_sequence
              AND (c.first_sequence <> p_cfirsts[i] OR c.last_sequence <> p_clasts[i]));
        DELETE FROM @.compactions AS c WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
            AND c.first_sequence >= p_cfirsts[i] AND c.last_sequence <= p_clasts[i];
        INSERT INTO @.compactions (app_name, user_id, session_id, sequence, first_sequence, last_sequence)
            VALUES (p_app, p_user, p_session, p_cseqs[i], p_cfirsts[i], p_clasts[i]);
    END LOOP;
    PERFORM @.libretto_write_session(p_app, p_user, p_session, p_skeys, p_svals);
    PERFORM @.libretto_write_app(p_app, p_akeys, p_avals);
    PERFORM @.libretto_write_user(p_app, p_user, p_ukeys, p_uvals);
    UPDATE @.sessions AS s SET last_sequence = v_last, last_update = p_last_update,
        compaction_first = CASE WHEN p_compaction_first > 0 THEN p_compaction_first ELSE s.compaction_first END
        WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session;
    RETURN v_last;
END $fn$;
)sql";

// v4: the session-scope state a session was created with (JSON text), which a get with
// get_options::with_initial_state returns; NULL for sessions created before (none
// recorded: empty). libretto_create takes it (p_initial), still in its one round trip.
inline constexpr std::string_view migration_v4 = R"sql(
ALTER TABLE @.sessions ADD COLUMN initial_state text;
DROP FUNCTION @.libretto_create(text, text, text, double precision, text[], text[], text[], text[], text[], text[]);
-- Creates a session; returns the shared state it sees (scope 2: app, 3: user).
CREATE FUNCTION @.libretto_create(p_app text, p_user text, p_session text, p_now double precision,
    p_skeys text[], p_svals text[], p_akeys text[], p_avals text[], p_ukeys text[], p_uvals text[], p_initial text)
RETURNS TABLE (r_scope integer, r_key text, r_value text) LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO @.sessions (app_name, user_id, session_id, create_time, last_update, initial_state)
        VALUES (p_app, p_user, p_session, p_now, p_now, p_initial) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session %/%/% already exists', p_app, p_user, p_session USING ERRCODE = 'LB410';
    END IF;
    PERFORM @.libretto_write_session(p_app, p_user, p_session, p_skeys, p_svals);
    PERFORM @.libretto_write_app(p_app, p_akeys, p_avals);
    PERFORM @.libretto_write_user(p_app, p_user, p_ukeys, p_uvals);
    RETURN QUERY
        SELECT 2, a.key, a.value FROM @.app_state AS a WHERE a.app_name = p_app
        UNION ALL
        SELECT 3, u.key, u.value FROM @.user_state AS u WHERE u.app_name = p_app AND u.user_id = p_user;
END $fn$;
)sql";

inline constexpr std::array<std::string_view, latest_schema_version> migrations = {migration_v1, migration_v2,
                                                                                    migration_v3, migration_v4};

/// Takes the migration lock (per schema, across processes), creates the schema and the
/// version table if missing, reads the version. The transaction stays open.
inline constexpr std::string_view begin_migration = R"sql(
BEGIN;
SELECT pg_advisory_xact_lock(7170617, hashtext('@'));
CREATE SCHEMA IF NOT EXISTS @;
CREATE TABLE IF NOT EXISTS @.schema_version (version integer NOT NULL);
SELECT coalesce(max(version), 0) FROM @.schema_version;
)sql";

/// Records the version reached; then COMMIT.
inline constexpr std::string_view set_version = "DELETE FROM @.schema_version; INSERT INTO @.schema_version VALUES (";

// ---- statements ----------------------------------------------------------------------------

/// $1..$11 as libretto_create's parameters.
inline constexpr std::string_view create_sql =
    "SELECT r_scope, r_key, r_value FROM @.libretto_create($1, $2, $3, $4::double precision, "
    "$5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text)";

inline constexpr std::string_view append_sql =
    "SELECT @.libretto_append($1, $2, $3, $4::bigint, $5::double precision, $6::bigint, $7::bigint[], "
    "$8::double precision[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], "
    "$15::text[], $16::bigint[], $17::bigint[], $18::bigint[])";

/// One statement, so one snapshot: the session row (kind 0, with the initial state as its
/// value when $10 asks for it), its own, app and user state (1, 2, 3) and the selected
/// events (4), newest first.
///   $1 app  $2 user  $3 session  $4 from sequence  $5 from timestamp (NULL: any)
///   $6 limit (NULL: all)  $7 context_only  $8 load events at all  $9 with_newest_range
///   $10 with_initial_state
inline constexpr std::string_view get_sql = R"sql(
SELECT 0, NULL::text, CASE WHEN $10::boolean THEN s.initial_state END, s.last_update, s.last_sequence
    FROM @.sessions AS s
    WHERE s.app_name = $1 AND s.user_id = $2 AND s.session_id = $3
UNION ALL
SELECT 1, t.key, t.value, NULL, NULL FROM @.session_state AS t
    WHERE t.app_name = $1 AND t.user_id = $2 AND t.session_id = $3
UNION ALL
SELECT 2, a.key, a.value, NULL, NULL FROM @.app_state AS a WHERE a.app_name = $1
UNION ALL
SELECT 3, u.key, u.value, NULL, NULL FROM @.user_state AS u WHERE u.app_name = $1 AND u.user_id = $2
UNION ALL
(SELECT 4, NULL, e.data, NULL, e.sequence FROM @.events AS e
    WHERE $8::boolean AND NOT $7::boolean AND e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
      AND e.sequence >= $4::bigint
      AND ($5::double precision IS NULL OR e.timestamp >= $5::double precision)
    ORDER BY e.sequence DESC LIMIT $6::bigint)
UNION ALL
(SELECT 4, NULL, e.data, NULL, e.sequence
    FROM @.libretto_context_ranges($1, $2, $3, $9::boolean) AS r
    CROSS JOIN LATERAL (SELECT v.data, v.sequence, v.timestamp FROM @.events AS v
        WHERE v.app_name = $1 AND v.user_id = $2 AND v.session_id = $3
          AND v.sequence >= greatest(r.lo, $4::bigint) AND v.sequence <= r.hi) AS e
    WHERE $8::boolean AND $7::boolean
      AND ($5::double precision IS NULL OR e.timestamp >= $5::double precision)
    ORDER BY e.sequence DESC LIMIT $6::bigint)
)sql";

/// A page of sessions (kind 0, in page order), their own state (1), the app state (2) and
/// the state of the page's users (3); one statement, one snapshot.
///   $1 app  $2 cursor last_update  $3 cursor session id  $4 rows  $5 user (NULL: all)
///   $6 cursor user id (ties of time and session id, across users)
inline constexpr std::string_view list_sql = R"sql(
WITH page AS (
    SELECT s.user_id, s.session_id, s.last_update, s.last_sequence FROM @.sessions AS s
        WHERE s.app_name = $1 AND ($5::text IS NULL OR s.user_id = $5::text)
          AND (s.last_update < $2::double precision
               OR (s.last_update = $2::double precision
                   AND (s.session_id > $3 OR (s.session_id = $3 AND s.user_id > $6::text))))
        ORDER BY s.last_update DESC, s.session_id ASC, s.user_id ASC LIMIT $4::bigint)
SELECT 0, p.user_id, p.session_id, NULL::text, NULL::text, p.last_update, p.last_sequence FROM page AS p
UNION ALL
SELECT 1, t.user_id, t.session_id, t.key, t.value, NULL, NULL FROM @.session_state AS t
    JOIN page AS p ON t.user_id = p.user_id AND t.session_id = p.session_id WHERE t.app_name = $1
UNION ALL
SELECT 2, NULL, NULL, a.key, a.value, NULL, NULL FROM @.app_state AS a
    WHERE a.app_name = $1 AND EXISTS (SELECT 1 FROM page)
UNION ALL
SELECT 3, u.user_id, NULL, u.key, u.value, NULL, NULL FROM @.user_state AS u
    WHERE u.app_name = $1 AND u.user_id IN (SELECT p.user_id FROM page AS p)
)sql";

/// Deleting the session row deletes its events and own state (ON DELETE CASCADE); the
/// app and user state stay.
inline constexpr std::string_view delete_sql =
    "DELETE FROM @.sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3";

/// The statements of one store, qualified with its schema once.
struct statements {
    std::string schema, create, append, get, list, remove, begin_migration, set_version;
    explicit statements(std::string_view name)
        : schema(name), create(qualify(create_sql, name)), append(qualify(append_sql, name)), get(qualify(get_sql, name)),
          list(qualify(list_sql, name)), remove(qualify(delete_sql, name)),
          begin_migration(qualify(pg::begin_migration, name)), set_version(qualify(pg::set_version, name)) {}

    /// The steps from version `from` to the latest, the version update, and COMMIT (the
    /// transaction begin_migration opened).
    std::string migration_text(int from) const {
        std::string text;
        for (int v = from; v < latest_schema_version; ++v) text += qualify(migrations[static_cast<std::size_t>(v)], schema);
        if (from < latest_schema_version) text += set_version + std::to_string(latest_schema_version) + ");\n";
        text += "COMMIT;";
        return text;
    }
};

} // namespace libretto::detail::pg

#endif
