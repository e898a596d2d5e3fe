// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_POSTGRES_SESSION_INDEX_HPP
#define LIBRETTO_STORE_POSTGRES_SESSION_INDEX_HPP

// postgres_session_index: the session index (session_index.hpp) in a PostgreSQL database,
// usually in the schema of the postgres_store whose transcripts it indexes. Needs libpq and
// the libretto::postgres CMake component.
//
//   lb::postgres_session_index index{{.conninfo = "host=db dbname=agents"}};
//   lb::any_session_index idx{io.get_executor(), std::move(index)};
//
// One table, <schema>.session_index, one row per (app, conversation key): the entry as the
// JSON text detail::entry_to_json makes (text, not jsonb: the bytes written come back),
// beside copies of the columns a list filters and sorts on.
//
// Blocking: one libpq connection per instance, used through its blocking calls by one
// thread at a time (a mutex). any_session_index runs blocking models on a worker thread,
// so the caller's thread never waits. A connection found broken (server restart, idle
// timeout) is reset once, and an operation's first statement runs again on the new one:
// nothing of the operation had happened yet, and every first statement may run twice.
//
// A patch is one transaction: the row is locked (SELECT ... FOR UPDATE), the patch applied
// in C++ (detail::apply_patch, as every back end) and the row written back, so concurrent
// patches of different fields from several processes all land.
//
// The behaviour is memory_session_index's; what only a server can do wrong: errc::io_error
// for connection and server failures (diagnostics: the server's message), errc::busy for
// lock waits the server gave up on, errc::corrupt_data naming the key for a row whose entry
// cannot be read (never skipped).

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/store/detail/index_entry.hpp>
#include <libretto/store/detail/pg_blocking.hpp>
#include <libretto/store/detail/pg_conn.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <libpq-fe.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct postgres_session_index_options {
    /// A libpq connection string ("host=... dbname=...") or URI; the PG* environment
    /// variables fill in what it leaves out. connect_timeout=N bounds the connection.
    std::string conninfo{};
    /// The PostgreSQL schema holding the table, created if missing; postgres_store's rules
    /// (lower-case letters, digits and '_', not starting with a digit, at most 63 bytes), so
    /// the store's schema can hold the index too.
    std::string schema = "libretto";
};

class postgres_session_index {
public:
    static constexpr bool blocking = true;

    /// Connects and creates the schema and the table if missing. Throws
    /// error_with_diagnostics: errc::invalid_argument for an empty conninfo or a bad schema
    /// name, errc::io_error (with the server's message) when it cannot connect or create.
    explicit postgres_session_index(postgres_session_index_options o) : s_(std::make_unique<state>()) {
        detail::pg::check_service_options(who, o.conninfo, o.schema);
        s_->schema = std::move(o.schema);
        std::string why;
        if (auto ec = s_->conn.connect(o.conninfo, why)) detail::pg::throw_service_error(who, ec, why);
        if (auto ec = s_->create(why)) detail::pg::throw_service_error(who, ec, why);
    }

    // Movable (any_session_index holds it by value), not copyable: one connection each.
    postgres_session_index(postgres_session_index&&) noexcept = default;
    postgres_session_index& operator=(postgres_session_index&&) noexcept = default;

    /// The schema holding the table.
    const std::string& schema() const noexcept { return s_->schema; }

    boost::system::error_code index_get(const std::string& app, const std::string& key,
                                        std::optional<conversation_entry>& out, diagnostics* diag = nullptr) const {
        out.reset();
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        if (auto ec = s_->conn.exec(s_->sql_get, key_params(app, key), r, "get '" + key + "'", diag, true)) return ec;
        return s_->decode_one(r.get(), app, key, out, diag);
    }

    boost::system::error_code index_put(const conversation_entry& e, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_entry(e, diag)) return ec;
        const auto p = row_params(e);
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        // An upsert may run twice (a retry after a broken connection): same row either way.
        return s_->conn.exec(s_->sql_put, p, r, "put '" + e.key + "'", diag, true);
    }

    boost::system::error_code index_patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                          conversation_entry& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        const std::string what = "patch '" + key + "'";
        detail::pg::result_ptr r;
        if (auto ec = s.conn.exec(s.sql_begin, {}, r, what, diag, true)) return ec;
        // Rolls back unless committed: every failure below leaves the row as it was.
        detail::pg::rollback_guard guard{s.conn};
        if (auto ec = s.conn.exec(s.sql_get_for_update, key_params(app, key), r, what, diag, false)) return ec;
        std::optional<conversation_entry> found;
        if (auto ec = s.decode_one(r.get(), app, key, found, diag)) return ec;
        if (!found) return detail::not_in_index(app, key, diag);
        if (auto ec = detail::apply_patch(*found, p, diag)) return ec;
        if (auto ec = s.conn.exec(s.sql_put, row_params(*found), r, what, diag, false)) return ec;
        // A COMMIT that fails may still have committed (the reply was lost): never retried.
        if (auto ec = s.conn.exec(s.sql_commit, {}, r, what + ": commit", diag, false)) return ec;
        guard.active = false;
        out = std::move(*found);
        return {};
    }

    boost::system::error_code index_list(const conversation_query& q, std::vector<conversation_entry>& out,
                                         diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_query(q, diag)) return ec;
        // user_id and chat_type narrow the rows in SQL (their columns); the rest of the
        // query is detail::matches, so it means what it means for every back end.
        detail::pg::params p;
        p.add(q.app_name);
        if (q.user_id) p.add(*q.user_id);
        else p.add_null();
        if (q.chat_type) p.add(*q.chat_type);
        else p.add_null();
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        if (auto ec = s_->conn.exec(s_->sql_list, p, r, "list app '" + q.app_name + "'", diag, true)) return ec;
        const int rows = PQntuples(r.get());
        out.reserve(static_cast<std::size_t>(rows));
        for (int i = 0; i < rows; ++i) {
            conversation_entry e;
            if (auto ec = s_->decode(detail::pg::cell(r.get(), i, 1), q.app_name, detail::pg::cell(r.get(), i, 0), e,
                                     diag)) {
                out.clear();
                return ec;
            }
            if (detail::matches(e, q)) out.push_back(std::move(e));
        }
        detail::order_and_limit(out, q);
        return {};
    }

    boost::system::error_code index_erase(const std::string& app, const std::string& key, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        return s_->conn.exec(s_->sql_erase, key_params(app, key), r, "erase '" + key + "'", diag, true);
    }

    /// Replaces every entry of `app` with `entries` (a rebuild), in one transaction.
    boost::system::error_code index_replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                            diagnostics* diag = nullptr) {
        if (auto ec = detail::check_replace(app, entries, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        const std::string what = "replace '" + app + "'";
        detail::pg::result_ptr r;
        if (auto ec = s.conn.exec(s.sql_begin, {}, r, what, diag, true)) return ec;
        detail::pg::rollback_guard guard{s.conn};
        detail::pg::params ap;
        ap.add(app);
        if (auto ec = s.conn.exec(s.sql_erase_app, ap, r, what, diag, false)) return ec;
        for (const auto& e : entries)
            if (auto ec = s.conn.exec(s.sql_put, row_params(e), r, what, diag, false)) return ec;
        if (auto ec = s.conn.exec(s.sql_commit, {}, r, what + ": commit", diag, false)) return ec;
        guard.active = false;
        return {};
    }

private:
    static detail::pg::params key_params(const std::string& app, const std::string& key) {
        detail::pg::params p;
        p.add(app).add(key);
        return p;
    }

    static detail::pg::params row_params(const conversation_entry& e) {
        detail::pg::params p;
        p.add(e.app_name).add(e.key).add(e.user_id).add(e.session_id);
        p.add(e.updated_at).add(e.last_interaction_at).add(e.chat_type);
        p.add(json::serialize(detail::entry_to_json(e)));
        return p;
    }

    static constexpr const char* who = "postgres_session_index";

    // Everything behind one pointer, so the class moves while the mutex stays put.
    struct state {
        std::mutex mutex;
        std::string schema;
        detail::pg::blocking_connection conn{who};
        std::string sql_begin = "BEGIN", sql_commit = "COMMIT";
        std::string sql_get, sql_get_for_update, sql_put, sql_erase, sql_erase_app, sql_list;

        // Creates the schema, the table and its index (blocking_connection::create).
        boost::system::error_code create(std::string& why) {
            std::string ident;
            auto ddl = [](const std::string& id) {
                const std::string table = id + ".session_index";
                return "CREATE TABLE IF NOT EXISTS " + table + " (app_name text NOT NULL, conv_key text NOT NULL,"
                       " user_id text NOT NULL, session_id text NOT NULL, updated_at double precision NOT NULL,"
                       " last_interaction_at double precision NOT NULL, chat_type text NOT NULL, entry text NOT NULL,"
                       " PRIMARY KEY (app_name, conv_key));"
                       "CREATE INDEX IF NOT EXISTS session_index_by_update ON " + table +
                       " (app_name, updated_at DESC, conv_key);";
            };
            if (auto ec = conn.create(schema, ddl, ident, why)) {
                why = "cannot create " + (ident.empty() ? schema : ident) + ".session_index: " + why;
                return ec;
            }
            const std::string table = ident + ".session_index";
            sql_get = "SELECT entry FROM " + table + " WHERE app_name = $1 AND conv_key = $2";
            sql_get_for_update = sql_get + " FOR UPDATE";
            sql_put = "INSERT INTO " + table +
                      " (app_name, conv_key, user_id, session_id, updated_at, last_interaction_at, chat_type, entry)"
                      " VALUES ($1, $2, $3, $4, $5::double precision, $6::double precision, $7, $8)"
                      " ON CONFLICT (app_name, conv_key) DO UPDATE SET user_id = excluded.user_id,"
                      " session_id = excluded.session_id, updated_at = excluded.updated_at,"
                      " last_interaction_at = excluded.last_interaction_at, chat_type = excluded.chat_type,"
                      " entry = excluded.entry";
            sql_erase = "DELETE FROM " + table + " WHERE app_name = $1 AND conv_key = $2";
            sql_erase_app = "DELETE FROM " + table + " WHERE app_name = $1";
            sql_list = "SELECT conv_key, entry FROM " + table +
                       " WHERE app_name = $1 AND ($2::text IS NULL OR user_id = $2::text)"
                       " AND ($3::text IS NULL OR chat_type = $3::text) ORDER BY updated_at DESC, conv_key";
            return {};
        }

        // A stored entry back to its value; corrupt_data naming the key when it cannot be.
        boost::system::error_code decode(std::string_view text, std::string_view app, std::string_view key,
                                         conversation_entry& e, diagnostics* diag) const {
            auto corrupt = [&](const std::string& why) {
                if (diag)
                    diag->assign("postgres_session_index: the entry of conversation '" + std::string(key) +
                                 "' in app '" + std::string(app) + "' (schema '" + schema + "') " + why);
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

        // The row of a get (none or one).
        boost::system::error_code decode_one(const PGresult* r, const std::string& app, const std::string& key,
                                             std::optional<conversation_entry>& out, diagnostics* diag) const {
            if (PQntuples(r) == 0) return {};
            conversation_entry e;
            if (auto ec = decode(detail::pg::cell(r, 0, 0), app, key, e, diag)) return ec;
            out = std::move(e);
            return {};
        }
    };

    std::unique_ptr<state> s_;
};

static_assert(session_index<postgres_session_index>);

} // namespace libretto

#endif
