// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_PG_BLOCKING_HPP
#define LIBRETTO_STORE_DETAIL_PG_BLOCKING_HPP

// What the synchronous PostgreSQL back ends beside postgres_store share
// (postgres_session_index, postgres_artifact_service, postgres_memory_service): their
// options checked, one libpq connection used through its blocking calls, their tables
// created under the schema's advisory lock, statements run with one reconnect, and
// transactions rolled back unless committed. Not thread-safe: each back end guards its
// connection with a mutex.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/store/detail/pg_conn.hpp>
#include <libretto/store/detail/pg_schema.hpp>

#include <boost/system/error_code.hpp>

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::detail::pg {

/// A back end's constructor failing: error_with_diagnostics "<who>: <why>".
[[noreturn]] inline void throw_service_error(const char* who, boost::system::error_code ec, const std::string& why) {
    diagnostics d;
    d.assign(std::string(who) + ": " + why);
    throw error_with_diagnostics(ec, std::move(d));
}

/// Refuses (throwing errc::invalid_argument) an empty conninfo or a schema name outside
/// postgres_store's rules.
inline void check_service_options(const char* who, const std::string& conninfo, const std::string& schema) {
    if (conninfo.empty()) throw_service_error(who, errc::invalid_argument, "empty conninfo");
    if (!valid_schema_name(schema))
        throw_service_error(who, errc::invalid_argument,
                            "invalid schema name '" + schema + "' (lower-case letters, digits, '_'; at most 63 bytes)");
}

/// A server message without its trailing newline.
inline std::string trimmed(const char* m) {
    std::string s = m ? m : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

/// One blocking connection; diagnostics begin with the back end's name (`who`).
class blocking_connection {
public:
    explicit blocking_connection(const char* who) noexcept : who_(who) {}

    boost::system::error_code connect(const std::string& conninfo, std::string& why) {
        conn_.reset(PQconnectdb(conninfo.c_str()));
        if (!conn_) {
            why = "cannot connect: out of memory";
            return errc::io_error;
        }
        if (PQstatus(conn_.get()) != CONNECTION_OK) {
            why = "cannot connect: " + trimmed(PQerrorMessage(conn_.get()));
            return errc::io_error;
        }
        quiet();
        return {};
    }

    /// Creates `schema` and what `ddl(ident)` makes (ident: the schema's quoted name), once,
    /// under the advisory lock postgres_store's migrations take for the same schema:
    /// concurrent starts of stores and services never race on CREATE SCHEMA. One simple
    /// query: one transaction. `ident` is set for the back end's statements.
    template <class Ddl>
    boost::system::error_code create(const std::string& schema, Ddl&& ddl, std::string& ident, std::string& why) {
        std::string literal;
        if (!escaped(&PQescapeIdentifier, schema, ident) || !escaped(&PQescapeLiteral, schema, literal)) {
            why = "cannot quote the schema name: " + trimmed(PQerrorMessage(conn_.get()));
            return errc::io_error;
        }
        const std::string sql = "SELECT pg_advisory_xact_lock(7170617, hashtext(" + literal + "));" +
                                "CREATE SCHEMA IF NOT EXISTS " + ident + ";" + ddl(ident);
        result_ptr r(PQexec(conn_.get(), sql.c_str()));
        return check(r.get(), why);
    }

    /// Runs one statement; `blob`: one more parameter, in binary format; `binary`: the
    /// result in binary format. `first`: the operation's first statement. A connection
    /// found broken is reset once (a blocking reconnect) before it, or after it when it
    /// broke the connection (then it runs again: nothing of the operation had happened). A
    /// later statement never reconnects: its transaction is gone with the old connection.
    boost::system::error_code exec(const std::string& sql, const params& p, result_ptr& r, const std::string& what,
                                   diagnostics* diag, bool first, std::optional<std::string_view> blob = std::nullopt,
                                   bool binary = false) {
        auto lost = [&] { return "the connection was lost: " + trimmed(PQerrorMessage(conn_.get())); };
        auto values = p.pointers();
        std::vector<int> lengths(values.size(), 0), formats(values.size(), 0);
        if (blob) {
            values.push_back(blob->data() ? blob->data() : "");
            lengths.push_back(static_cast<int>(blob->size()));
            formats.push_back(1);
        }
        const int n = static_cast<int>(values.size());
        bool reset = false;
        for (;;) {
            if (PQstatus(conn_.get()) != CONNECTION_OK) {
                if (!first || reset) return failed(errc::io_error, what, lost(), diag);
                reset = true;
                PQreset(conn_.get());
                if (PQstatus(conn_.get()) != CONNECTION_OK)
                    return failed(errc::io_error, what, "cannot reconnect: " + trimmed(PQerrorMessage(conn_.get())),
                                  diag);
                quiet();
            }
            r.reset(PQexecParams(conn_.get(), sql.c_str(), n, nullptr, values.data(), lengths.data(), formats.data(),
                                 binary ? 1 : 0));
            if (first && !reset && PQstatus(conn_.get()) != CONNECTION_OK) continue;
            break;
        }
        std::string why;
        if (auto ec = check(r.get(), why)) {
            if (PQstatus(conn_.get()) != CONNECTION_OK) return failed(errc::io_error, what, lost(), diag);
            return failed(ec, what, why, diag);
        }
        return {};
    }

    /// `ec`, with "<who>: <what>: <why>" in *diag.
    boost::system::error_code failed(boost::system::error_code ec, const std::string& what, const std::string& why,
                                     diagnostics* diag) const {
        if (diag) diag->assign(std::string(who_) + ": " + what + ": " + why);
        return ec;
    }

    void rollback() noexcept {
        if (PQstatus(conn_.get()) == CONNECTION_OK) PQclear(PQexec(conn_.get(), "ROLLBACK"));
    }

private:
    struct conn_deleter {
        void operator()(PGconn* c) const noexcept { PQfinish(c); }
    };

    // Server notices ("schema ... already exists, skipping") would go to stderr.
    void quiet() { PQsetNoticeProcessor(conn_.get(), [](void*, const char*) {}, nullptr); }

    bool escaped(char* (*escape)(PGconn*, const char*, std::size_t), const std::string& in, std::string& out) {
        char* e = escape(conn_.get(), in.data(), in.size());
        if (!e) return false;
        out = e;
        PQfreemem(e);
        return true;
    }

    const char* who_;
    std::unique_ptr<PGconn, conn_deleter> conn_;
};

/// Rolls an open transaction back unless it was committed (active cleared).
struct rollback_guard {
    blocking_connection& conn;
    bool active = true;
    ~rollback_guard() {
        if (active) conn.rollback();
    }
};

} // namespace libretto::detail::pg

#endif
