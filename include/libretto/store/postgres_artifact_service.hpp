// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_POSTGRES_ARTIFACT_SERVICE_HPP
#define LIBRETTO_STORE_POSTGRES_ARTIFACT_SERVICE_HPP

// postgres_artifact_service: artifacts (artifact_service.hpp) in a PostgreSQL database,
// usually in the schema of the postgres_store whose sessions they belong to. Needs libpq and
// the libretto::postgres CMake component.
//
//   lb::postgres_artifact_service artifacts{{.conninfo = "host=db dbname=agents"}};
//   lb::any_artifact_service svc{io.get_executor(), std::move(artifacts)};
//
// Two tables: <schema>.artifact_versions, one row per version (its info; the metadata as
// JSON text), and <schema>.artifact_chunks, the bytes in bytea rows of up to
// artifact_chunk_bytes, sent and received in libpq's binary format (no hex text twice the
// size). A save is one transaction: it takes a transaction-scoped advisory lock on the
// artifact's name, so concurrent saves from any number of processes get distinct consecutive
// versions, reads the source a chunk at a time into chunk rows and writes the version row
// last; a save that fails (a source that throws, past max_artifact_bytes) leaves nothing. A
// load reads in one REPEATABLE READ transaction (a consistent snapshot), fetching the chunks
// a few at a time so a large artifact is never one result in memory.
//
// Blocking: one libpq connection per instance, used through its blocking calls by one
// thread at a time (a mutex, held while the source or sink runs: they must not call back
// into the same instance). any_artifact_service runs blocking models on a worker thread. A
// connection found broken is reset once before an operation's first statement, as
// postgres_session_index does.
//
// The behaviour is memory_artifact_service's; what only a server can do wrong: errc::io_error
// for connection and server failures (diagnostics: the server's message), errc::busy for
// lock waits the server gave up on, errc::corrupt_data naming the artifact for a version row
// whose metadata is not a JSON object or whose chunks do not add up to its size.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/store/detail/artifact_common.hpp>
#include <libretto/store/detail/pg_blocking.hpp>
#include <libretto/store/detail/pg_conn.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct postgres_artifact_service_options {
    /// A libpq connection string ("host=... dbname=...") or URI; the PG* environment
    /// variables fill in what it leaves out. connect_timeout=N bounds the connection.
    std::string conninfo{};
    /// The PostgreSQL schema holding the tables, created if missing; postgres_store's rules
    /// (lower-case letters, digits and '_', not starting with a digit, at most 63 bytes), so
    /// the store's schema can hold the artifacts too.
    std::string schema = "libretto";
    /// Largest artifact, in bytes; 0: no limit. A larger save is errc::oversize.
    std::uint64_t max_artifact_bytes = 0;
};

class postgres_artifact_service {
public:
    static constexpr bool blocking = true;

    /// Connects and creates the schema and the tables if missing. Throws
    /// error_with_diagnostics: errc::invalid_argument for an empty conninfo or a bad schema
    /// name, errc::io_error (with the server's message) when it cannot connect or create.
    explicit postgres_artifact_service(postgres_artifact_service_options o) : s_(std::make_unique<state>()) {
        detail::pg::check_service_options(who, o.conninfo, o.schema);
        s_->schema = std::move(o.schema);
        s_->max_bytes = o.max_artifact_bytes;
        std::string why;
        if (auto ec = s_->conn.connect(o.conninfo, why)) detail::pg::throw_service_error(who, ec, why);
        if (auto ec = s_->create(why)) detail::pg::throw_service_error(who, ec, why);
    }

    // Movable (any_artifact_service holds it by value), not copyable: one connection each.
    postgres_artifact_service(postgres_artifact_service&&) noexcept = default;
    postgres_artifact_service& operator=(postgres_artifact_service&&) noexcept = default;

    /// The schema holding the tables.
    const std::string& schema() const noexcept { return s_->schema; }

    boost::system::error_code artifact_save(const artifact_key& k, artifact_source& in, std::string_view mime_type,
                                            const json::object& metadata, artifact_info& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        if (auto ec = detail::check_artifact_info(k, mime_type, metadata, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        const std::string what = "save '" + k.name + "'";
        detail::pg::result_ptr r;
        if (auto ec = s.begin_locked(k, what, diag)) return ec;
        // Rolls back unless committed: on every early return and an exception from the source.
        detail::pg::rollback_guard guard{s.conn};
        artifact_info info;
        if (auto ec = s.conn.exec(s.sql_next_version, key_params(k), r, what, diag, false)) return ec;
        if (PQntuples(r.get()) != 1 || !detail::pg::parse_number(detail::pg::cell(r.get(), 0, 0), info.version))
            return s.conn.failed(errc::io_error, what, "no version number from the server", diag);
        std::string buf(artifact_chunk_bytes, '\0');
        for (std::int64_t seq = 0;; ++seq) {
            const std::size_t n = detail::fill_chunk(in, buf);
            if (n == 0) break;
            info.size += n;
            if (s.max_bytes != 0 && info.size > s.max_bytes) return detail::artifact_too_large(k, s.max_bytes, diag);
            auto p = key_params(k);
            p.add(info.version).add(seq);
            if (auto ec = s.conn.exec(s.sql_insert_chunk, p, r, what, diag, false, std::string_view(buf.data(), n)))
                return ec;
            if (n < buf.size()) break; // the source is at its end
        }
        info.name = k.name;
        info.mime_type = std::string(mime_type);
        info.created_at = event::now();
        info.metadata = metadata;
        auto p = key_params(k);
        p.add(info.version).add(mime_type).add(static_cast<std::int64_t>(info.size)).add(info.created_at);
        p.add(json::serialize(metadata));
        if (auto ec = s.conn.exec(s.sql_insert_version, p, r, what, diag, false)) return ec;
        // A COMMIT that fails may still have committed (the reply was lost): never retried.
        if (auto ec = s.conn.exec(s.sql_commit, {}, r, what + ": commit", diag, false)) return ec;
        guard.active = false;
        out = std::move(info);
        return {};
    }

    boost::system::error_code artifact_load(const artifact_key& k, std::optional<std::int64_t> ver, artifact_sink& out,
                                            std::optional<artifact_info>& info, diagnostics* diag = nullptr) const {
        info.reset();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        const std::string what = "load '" + k.name + "'";
        detail::pg::result_ptr r;
        // One snapshot: the version row and every batch of its chunks, even when another
        // connection deletes the artifact meanwhile.
        if (auto ec = s.conn.exec(s.sql_begin_read, {}, r, what, diag, true)) return ec;
        detail::pg::rollback_guard guard{s.conn};
        auto p = key_params(k);
        if (ver) p.add(*ver);
        const std::string& select = ver ? s.sql_select_version : s.sql_select_latest;
        if (auto ec = s.conn.exec(select, p, r, what, diag, false)) return ec;
        if (PQntuples(r.get()) == 0) return ver ? detail::no_such_version(k, *ver, diag) : boost::system::error_code{};
        artifact_info found;
        if (auto ec = s.decode(r.get(), 0, k, found, diag)) return ec;
        std::uint64_t delivered = 0;
        for (std::int64_t from = 0;; from += chunks_per_fetch) {
            auto cp = key_params(k);
            cp.add(found.version).add(from).add(from + chunks_per_fetch);
            if (auto ec = s.conn.exec(s.sql_select_chunks, cp, r, what, diag, false, std::nullopt, true)) return ec;
            const int rows = PQntuples(r.get());
            for (int i = 0; i < rows; ++i) {
                const std::string_view chunk = detail::pg::cell(r.get(), i, 0); // binary: the bytes
                delivered += chunk.size();
                if (!chunk.empty()) out(chunk);
            }
            if (rows < chunks_per_fetch) break;
        }
        if (delivered != found.size) {
            if (diag)
                diag->assign("postgres_artifact_service: the chunks of " + s.where(k, found.version) + " hold " +
                             std::to_string(delivered) + " bytes, its size is " + std::to_string(found.size));
            return errc::corrupt_data;
        }
        if (auto ec = s.conn.exec(s.sql_commit, {}, r, what, diag, false)) return ec;
        guard.active = false;
        info = std::move(found);
        return {};
    }

    boost::system::error_code artifact_list(const std::string& app, const std::string& user, const std::string& session,
                                            std::vector<std::string>& names, diagnostics* diag = nullptr) const {
        names.clear();
        if (auto ec = detail::check_artifact_key(artifact_key(app, user, session, "x"), diag)) return ec;
        detail::pg::params p;
        p.add(app).add(user).add(session);
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        if (auto ec = s_->conn.exec(s_->sql_list, p, r, "list session '" + session + "'", diag, true)) return ec;
        const int rows = PQntuples(r.get());
        for (int i = 0; i < rows; ++i) names.emplace_back(detail::pg::cell(r.get(), i, 0));
        // Sorted here: ORDER BY would use the database's collation, not std::string's order.
        std::sort(names.begin(), names.end());
        return {};
    }

    boost::system::error_code artifact_versions(const artifact_key& k, std::vector<artifact_info>& out,
                                                diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        const std::string what = "versions of '" + k.name + "'";
        if (auto ec = s_->conn.exec(s_->sql_select_versions, key_params(k), r, what, diag, true)) return ec;
        const int rows = PQntuples(r.get());
        out.resize(static_cast<std::size_t>(rows));
        for (int i = 0; i < rows; ++i)
            if (auto ec = s_->decode(r.get(), i, k, out[static_cast<std::size_t>(i)], diag)) {
                out.clear();
                return ec;
            }
        return {};
    }

    boost::system::error_code artifact_delete(const artifact_key& k, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        const std::string what = "delete '" + k.name + "'";
        detail::pg::result_ptr r;
        // The save's lock: a save in progress finishes first and its version goes too.
        if (auto ec = s.begin_locked(k, what, diag)) return ec;
        detail::pg::rollback_guard guard{s.conn};
        for (const std::string* sql : {&s.sql_delete_chunks, &s.sql_delete_versions})
            if (auto ec = s.conn.exec(*sql, key_params(k), r, what, diag, false)) return ec;
        if (auto ec = s.conn.exec(s.sql_commit, {}, r, what + ": commit", diag, false)) return ec;
        guard.active = false;
        return {};
    }

private:
    // Chunks per fetch of a load: 16 × 256 KiB, 4 MiB in memory at most.
    static constexpr std::int64_t chunks_per_fetch = 16;

    // $1-$4 of every statement about one artifact.
    static detail::pg::params key_params(const artifact_key& k) {
        detail::pg::params p;
        p.add(k.app_name).add(k.user_id).add(detail::artifact_scope(k)).add(k.name);
        return p;
    }

    static constexpr const char* who = "postgres_artifact_service";

    // Everything behind one pointer, so the class moves while the mutex stays put.
    struct state {
        std::mutex mutex;
        std::string schema;
        std::uint64_t max_bytes = 0;
        detail::pg::blocking_connection conn{who};
        std::string sql_begin = "BEGIN", sql_commit = "COMMIT",
                    sql_begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";
        std::string sql_lock, sql_next_version, sql_insert_chunk, sql_insert_version, sql_select_latest,
            sql_select_version, sql_select_chunks, sql_select_versions, sql_list, sql_delete_chunks,
            sql_delete_versions;

        std::string where(const artifact_key& k, std::int64_t version) const {
            std::string s = "artifact '" + k.name + "' version " + std::to_string(version) + " (app '" + k.app_name +
                            "', user '" + k.user_id + "'";
            if (!k.user_scoped()) s += ", session '" + k.session_id + "'";
            return s + ", schema '" + schema + "')";
        }

        // Creates the schema and the tables (blocking_connection::create).
        boost::system::error_code create(std::string& why) {
            auto ddl = [](const std::string& id) {
                const std::string columns = "app_name text NOT NULL, user_id text NOT NULL, scope text NOT NULL,"
                                            " name text NOT NULL, version bigint NOT NULL, ";
                return "CREATE TABLE IF NOT EXISTS " + id + ".artifact_versions (" + columns +
                       "mime_type text NOT NULL, size bigint NOT NULL, created_at double precision NOT NULL,"
                       " metadata text NOT NULL, PRIMARY KEY (app_name, user_id, scope, name, version));"
                       "CREATE TABLE IF NOT EXISTS " + id + ".artifact_chunks (" + columns +
                       "seq bigint NOT NULL, data bytea NOT NULL,"
                       " PRIMARY KEY (app_name, user_id, scope, name, version, seq));";
            };
            std::string ident;
            if (auto ec = conn.create(schema, ddl, ident, why)) {
                why = "cannot create the artifact tables in schema '" + schema + "': " + why;
                return ec;
            }
            const std::string versions = ident + ".artifact_versions", chunks = ident + ".artifact_chunks";
            const std::string key = " WHERE app_name = $1 AND user_id = $2 AND scope = $3 AND name = $4";
            const std::string info = "SELECT version, mime_type, size, created_at, metadata FROM " + versions;
            // Another key space than the schema lock's (7170617); a hash collision only
            // serialises two saves that need not be.
            sql_lock = "SELECT pg_advisory_xact_lock(7170618, hashtext($1))";
            sql_next_version = "SELECT COALESCE(MAX(version) + 1, 0) FROM " + versions + key;
            sql_insert_chunk = "INSERT INTO " + chunks + " (app_name, user_id, scope, name, version, seq, data)"
                               " VALUES ($1, $2, $3, $4, $5::bigint, $6::bigint, $7::bytea)";
            sql_insert_version = "INSERT INTO " + versions + " (app_name, user_id, scope, name, version, mime_type,"
                                 " size, created_at, metadata) VALUES ($1, $2, $3, $4, $5::bigint, $6, $7::bigint,"
                                 " $8::double precision, $9)";
            sql_select_latest = info + key + " ORDER BY version DESC LIMIT 1";
            sql_select_version = info + key + " AND version = $5::bigint";
            sql_select_chunks = "SELECT data FROM " + chunks + key +
                                " AND version = $5::bigint AND seq >= $6::bigint AND seq < $7::bigint ORDER BY seq";
            sql_select_versions = info + key + " ORDER BY version";
            sql_list = "SELECT DISTINCT name FROM " + versions +
                       " WHERE app_name = $1 AND user_id = $2 AND scope IN ('', $3)";
            sql_delete_chunks = "DELETE FROM " + chunks + key;
            sql_delete_versions = "DELETE FROM " + versions + key;
            return {};
        }

        // BEGIN, then the artifact's advisory lock (held to the end of the transaction).
        boost::system::error_code begin_locked(const artifact_key& k, const std::string& what, diagnostics* diag) {
            detail::pg::result_ptr r;
            if (auto ec = conn.exec(sql_begin, {}, r, what, diag, true)) return ec;
            detail::pg::params p;
            p.add(schema + '/' + k.app_name + '/' + k.user_id + '/' + std::string(detail::artifact_scope(k)) + '/' +
                  k.name);
            if (auto ec = conn.exec(sql_lock, p, r, what, diag, false)) {
                conn.rollback();
                return ec;
            }
            return {};
        }

        // Row `i` (version, mime_type, size, created_at, metadata) back to its info;
        // corrupt_data naming the artifact when it cannot be.
        boost::system::error_code decode(const PGresult* r, int i, const artifact_key& k, artifact_info& out,
                                         diagnostics* diag) const {
            using detail::pg::cell;
            out.name = k.name;
            std::int64_t size = 0;
            const bool numbers = detail::pg::parse_number(cell(r, i, 0), out.version) &&
                                 detail::pg::parse_number(cell(r, i, 2), size) &&
                                 detail::pg::parse_number(cell(r, i, 3), out.created_at);
            auto corrupt = [&](const std::string& why) {
                if (diag) diag->assign("postgres_artifact_service: " + where(k, out.version) + " " + why);
                return boost::system::error_code(errc::corrupt_data);
            };
            if (!numbers || size < 0) return corrupt("has a version, size or time that cannot be read");
            out.size = static_cast<std::uint64_t>(size);
            out.mime_type = std::string(cell(r, i, 1));
            json::error_code jec;
            std::string why;
            const json::value v = detail::parse_precise(cell(r, i, 4), jec, {}, &why);
            if (jec) return corrupt("has metadata that is not valid JSON: " + (why.empty() ? jec.message() : why));
            if (!v.is_object()) return corrupt("has metadata that is not a JSON object");
            out.metadata = v.get_object();
            return {};
        }
    };

    std::unique_ptr<state> s_;
};

static_assert(artifact_service<postgres_artifact_service>);

} // namespace libretto

#endif
