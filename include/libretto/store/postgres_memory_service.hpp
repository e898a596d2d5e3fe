// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_POSTGRES_MEMORY_SERVICE_HPP
#define LIBRETTO_STORE_POSTGRES_MEMORY_SERVICE_HPP

// postgres_memory_service: the memory service (memory_service.hpp) in a PostgreSQL
// database, usually in the schema of the postgres_store whose sessions it remembers.
// PostgreSQL's full-text search, ranked by ts_rank. Needs libpq and the libretto::postgres
// CMake component.
//
//   lb::postgres_memory_service memory{{.conninfo = "host=db dbname=agents"}};
//   lb::any_memory_service svc{io.get_executor(), std::move(memory)};
//
// One table, <schema>.memory_entries, one row per (app, user, session, event): the entry
// and a tsvector of its text under the 'simple' configuration (lower-cased words as
// written: no stemming, no stop words, so a search finds the words it names and no
// others, as every back end does), with a GIN index. Words and case are the server's
// LC_CTYPE's: under a UTF-8 locale as the other back ends' (docs/memory.md), under C
// only ASCII is lower-cased. An add refuses what detail::memory_entries_of refuses (a
// NUL among it, which libpq's C-string parameters would cut at) before it sends anything.
// The tsvector is filled by the insert, not a generated column, so a server older than 12
// holds it too; it covers the text's first max_indexed_chars characters (a tsvector holds
// at most 1 MB). An add is one statement (INSERT ... SELECT FROM unnest(...) ON CONFLICT
// DO NOTHING): all or nothing, its count is the rows it inserted.
//
// A search is one statement: the query's words (detail::memory_words), each a quoted
// lexeme of a to_tsquery text (so no user text is ever tsquery syntax), joined by |; only
// the rows of the query's app and user; best ts_rank first (normalization 1: divided by
// 1 + the log of the text's length in words, so a short entry naming the words ranks above
// a long one that mentions them in passing), the newest first among equals.
//
// Blocking: one libpq connection per instance, used through its blocking calls by one
// thread at a time (a mutex). any_memory_service runs blocking models on a worker thread.
// A connection found broken is reset once before an operation's statement, as
// postgres_session_index does; an add run again after a lost reply counts only what the
// second run inserted.
//
// The behaviour is in_memory_memory_service's; what only a server can do wrong:
// errc::io_error for connection and server failures (diagnostics: the server's message),
// errc::busy for lock waits the server gave up on, errc::corrupt_data naming the event for
// a row whose time or metadata cannot be read.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/detail/memory_common.hpp>
#include <libretto/store/detail/pg_blocking.hpp>
#include <libretto/store/detail/pg_conn.hpp>
#include <libretto/store/memory_service.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <libpq-fe.h>

#include <charconv>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct postgres_memory_service_options {
    /// A libpq connection string ("host=... dbname=...") or URI; the PG* environment
    /// variables fill in what it leaves out. connect_timeout=N bounds the connection.
    std::string conninfo{};
    /// The PostgreSQL schema holding the table, created if missing; postgres_store's rules
    /// (lower-case letters, digits and '_', not starting with a digit, at most 63 bytes), so
    /// the store's schema can hold the memory too.
    std::string schema = "libretto";
};

class postgres_memory_service {
public:
    static constexpr bool blocking = true;

    /// Characters of an entry's text that are searchable (the rest is kept, not indexed):
    /// 100,000 characters make a tsvector well under PostgreSQL's 1 MB limit.
    static constexpr int max_indexed_chars = 100'000;

    /// Connects and creates the schema and the table if missing. Throws
    /// error_with_diagnostics: errc::invalid_argument for an empty conninfo or a bad schema
    /// name, errc::io_error (with the server's message) when it cannot connect or create.
    explicit postgres_memory_service(postgres_memory_service_options o) : s_(std::make_unique<state>()) {
        detail::pg::check_service_options(who, o.conninfo, o.schema);
        s_->schema = std::move(o.schema);
        std::string why;
        if (auto ec = s_->conn.connect(o.conninfo, why)) detail::pg::throw_service_error(who, ec, why);
        if (auto ec = s_->create(why)) detail::pg::throw_service_error(who, ec, why);
    }

    // Movable (any_memory_service holds it by value), not copyable: one connection each.
    postgres_memory_service(postgres_memory_service&&) noexcept = default;
    postgres_memory_service& operator=(postgres_memory_service&&) noexcept = default;

    /// The schema holding the table.
    const std::string& schema() const noexcept { return s_->schema; }

    boost::system::error_code memory_add(const std::string& app, const std::string& user, const std::string& session,
                                         event_span events, std::size_t& added, diagnostics* diag = nullptr) {
        added = 0;
        if (auto ec = detail::check_memory_ids(app, user, session, diag)) return ec;
        // One row per entry in parallel arrays: $4 event ids, $5 authors, $6 times, $7
        // texts, $8 metadata.
        struct row {
            memory_entry m;
            std::string time, metadata;
        };
        // Checked first (no NUL: libpq takes text parameters as C strings), so a refused
        // call sends nothing.
        std::vector<memory_entry> entries;
        if (auto ec = detail::memory_entries_of(events, session, entries, diag)) return ec;
        if (entries.empty()) return {};
        std::vector<row> rows;
        for (auto& m : entries) {
            char buf[32];
            auto r = std::to_chars(buf, buf + sizeof buf, m.timestamp); // shortest round trip
            std::string md = json::serialize(m.metadata);
            rows.push_back({std::move(m), std::string(buf, r.ptr), std::move(md)});
        }
        detail::pg::params p;
        p.add(app).add(user).add(session);
        auto column = [&](auto field) {
            p.add_array(rows, [&](const row& x, std::string_view& v) {
                v = field(x);
                return true;
            });
        };
        column([](const row& x) -> std::string_view { return x.m.event_id; });
        column([](const row& x) -> std::string_view { return x.m.author; });
        column([](const row& x) -> std::string_view { return x.time; });
        column([](const row& x) -> std::string_view { return x.m.text; });
        column([](const row& x) -> std::string_view { return x.metadata; });
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        const std::string what = "add session '" + session + "'";
        if (auto ec = s_->conn.exec(s_->sql_add, p, r, what, diag, true)) return ec;
        std::size_t n = 0;
        if (!detail::pg::parse_number(std::string_view(PQcmdTuples(r.get())), n))
            return s_->conn.failed(errc::io_error, what, "no row count from the server", diag);
        added = n;
        return {};
    }

    boost::system::error_code memory_search(const memory_query& q, std::vector<memory_entry>& out,
                                            diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_memory_query(q, diag)) return ec;
        detail::pg::params p;
        p.add(q.app_name).add(q.user_id).add(tsquery_of(q.text)).add(static_cast<std::int64_t>(q.limit));
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        if (auto ec = s_->conn.exec(s_->sql_search, p, r, "search user '" + q.user_id + "'", diag, true)) return ec;
        const int rows = PQntuples(r.get());
        out.resize(static_cast<std::size_t>(rows));
        for (int i = 0; i < rows; ++i)
            if (auto ec = s_->decode(r.get(), i, q, out[static_cast<std::size_t>(i)], diag)) {
                out.clear();
                return ec;
            }
        return {};
    }

    boost::system::error_code memory_erase_session(const std::string& app, const std::string& user,
                                                   const std::string& session, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_memory_ids(app, user, session, diag)) return ec;
        detail::pg::params p;
        p.add(app).add(user).add(session);
        std::lock_guard lock(s_->mutex);
        detail::pg::result_ptr r;
        // A delete may run twice (a retry after a broken connection): the same rows gone.
        return s_->conn.exec(s_->sql_erase, p, r, "erase session '" + session + "'", diag, true);
    }

private:
    static constexpr const char* who = "postgres_memory_service";

    // The to_tsquery text of a query: its distinct words, each a quoted lexeme ('...' with
    // ' and \ escaped: never an operator, a weight or a prefix), joined by |. A lexeme the
    // parser splits (a word with non-ASCII punctuation) is a phrase of its parts; one that
    // it leaves without a token is dropped (a query of only those matches nothing).
    static std::string tsquery_of(std::string_view text) {
        const auto words = detail::memory_words(text);
        std::string q;
        for (const auto& w : std::set<std::string>(words.begin(), words.end())) {
            if (!q.empty()) q += " | ";
            q += '\'';
            for (char c : w) {
                if (c == '\'' || c == '\\') q += '\\';
                q += c;
            }
            q += '\'';
        }
        return q;
    }

    // Everything behind one pointer, so the class moves while the mutex stays put.
    struct state {
        std::mutex mutex;
        std::string schema;
        detail::pg::blocking_connection conn{who};
        std::string sql_add, sql_search, sql_erase;

        // Creates the schema, the table and its indexes (blocking_connection::create). The
        // unique key is also the index an erase finds a session by.
        boost::system::error_code create(std::string& why) {
            auto ddl = [](const std::string& id) {
                return "CREATE TABLE IF NOT EXISTS " + id + ".memory_entries (app_name text NOT NULL,"
                       " user_id text NOT NULL, session_id text NOT NULL, event_id text NOT NULL,"
                       " author text NOT NULL, timestamp double precision NOT NULL, text text NOT NULL,"
                       " metadata text NOT NULL, words tsvector NOT NULL,"
                       " PRIMARY KEY (app_name, user_id, session_id, event_id));"
                       "CREATE INDEX IF NOT EXISTS memory_entries_words ON " + id +
                       ".memory_entries USING gin (words);";
            };
            std::string ident;
            if (auto ec = conn.create(schema, ddl, ident, why)) {
                why = "cannot create the memory table in schema '" + schema + "': " + why;
                return ec;
            }
            const std::string table = ident + ".memory_entries";
            sql_add = "INSERT INTO " + table +
                      " (app_name, user_id, session_id, event_id, author, timestamp, text, metadata, words)"
                      " SELECT $1, $2, $3, e, a, t, x, m, to_tsvector('simple', left(x, " +
                      std::to_string(max_indexed_chars) +
                      ")) FROM unnest($4::text[], $5::text[], $6::double precision[], $7::text[], $8::text[])"
                      " AS u (e, a, t, x, m) ON CONFLICT DO NOTHING";
            sql_search = "SELECT session_id, event_id, author, timestamp, text, metadata, ts_rank(words, q, 1)"
                         " AS score FROM " + table + ", to_tsquery('simple', $3) AS q"
                         " WHERE app_name = $1 AND user_id = $2 AND words @@ q"
                         " ORDER BY score DESC, timestamp DESC LIMIT $4::bigint";
            sql_erase = "DELETE FROM " + table + " WHERE app_name = $1 AND user_id = $2 AND session_id = $3";
            return {};
        }

        // Row `i` (session_id, event_id, author, timestamp, text, metadata, score) back to
        // its entry; corrupt_data naming the event when it cannot be.
        boost::system::error_code decode(const PGresult* r, int i, const memory_query& q, memory_entry& m,
                                         diagnostics* diag) const {
            using detail::pg::cell;
            m.session_id = std::string(cell(r, i, 0));
            m.event_id = std::string(cell(r, i, 1));
            m.author = std::string(cell(r, i, 2));
            m.text = std::string(cell(r, i, 4));
            auto corrupt = [&](const std::string& why) {
                if (diag)
                    diag->assign(std::string(who) + ": the entry of event '" + m.event_id + "' (app '" + q.app_name +
                                 "', user '" + q.user_id + "', session '" + m.session_id + "', schema '" + schema +
                                 "') " + why);
                return boost::system::error_code(errc::corrupt_data);
            };
            if (!detail::pg::parse_number(cell(r, i, 3), m.timestamp) ||
                !detail::pg::parse_number(cell(r, i, 6), m.score))
                return corrupt("has a time or score that cannot be read");
            json::error_code jec;
            std::string why;
            const json::value v = detail::parse_precise(cell(r, i, 5), jec, {}, &why);
            if (jec) return corrupt("has metadata that is not valid JSON: " + (why.empty() ? jec.message() : why));
            if (!v.is_object()) return corrupt("has metadata that is not a JSON object");
            m.metadata = v.get_object();
            return {};
        }
    };

    std::unique_ptr<state> s_;
};

static_assert(memory_service<postgres_memory_service>);

} // namespace libretto

#endif
