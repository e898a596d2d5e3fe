// The PostgreSQL server the postgres tests run against (started by scripts/pg-server through
// the ctest fixture in tests/CMakeLists.txt), and blocking libpq helpers for test set-up.
// A missing server is a test failure, never a skip.
#ifndef LIBRETTO_TESTS_PG_TEST_SERVER_HPP
#define LIBRETTO_TESTS_PG_TEST_SERVER_HPP

#include <libpq-fe.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace pg_test {

/// The server's connection string: $LIBRETTO_PG_CONNINFO, else $LIBRETTO_PG_STATE_DIR/conninfo.
/// Throws (failing the test loudly) when neither gives one.
inline std::string conninfo() {
    if (const char* c = std::getenv("LIBRETTO_PG_CONNINFO"); c && *c) return c;
    const char* dir = std::getenv("LIBRETTO_PG_STATE_DIR");
    if (!dir || !*dir)
        throw std::runtime_error("NO POSTGRESQL SERVER: neither LIBRETTO_PG_CONNINFO nor LIBRETTO_PG_STATE_DIR is set; "
                                 "run this test through ctest, which starts one with scripts/pg-server");
    std::ifstream in(std::string(dir) + "/conninfo");
    std::string line;
    if (!in || !std::getline(in, line) || line.empty())
        throw std::runtime_error(std::string("NO POSTGRESQL SERVER: ") + dir +
                                 "/conninfo is missing; the postgres_server_start test (scripts/pg-server start) "
                                 "did not start a server — see its output");
    return line;
}

struct conn_deleter {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};

/// Runs `sql` (several statements allowed) on a fresh blocking connection; throws on error.
inline void exec(const std::string& sql) {
    std::unique_ptr<PGconn, conn_deleter> c(PQconnectdb(conninfo().c_str()));
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw std::runtime_error(std::string("cannot connect to the test server: ") + PQerrorMessage(c.get()));
    PQsetNoticeProcessor(c.get(), [](void*, const char*) {}, nullptr);
    PGresult* r = PQexec(c.get(), sql.c_str());
    const auto st = PQresultStatus(r);
    std::string err = PQresultErrorMessage(r);
    PQclear(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) throw std::runtime_error("test SQL failed: " + err + sql);
}

/// The first column of the first row of `sql`'s result ("" if none).
inline std::string query_value(const std::string& sql) {
    std::unique_ptr<PGconn, conn_deleter> c(PQconnectdb(conninfo().c_str()));
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw std::runtime_error(std::string("cannot connect to the test server: ") + PQerrorMessage(c.get()));
    PGresult* r = PQexec(c.get(), sql.c_str());
    std::string out;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    std::string err = PQresultErrorMessage(r);
    const auto st = PQresultStatus(r);
    PQclear(r);
    if (st != PGRES_TUPLES_OK) throw std::runtime_error("test SQL failed: " + err + sql);
    return out;
}

/// A schema name no other test (or process) uses.
inline std::string fresh_schema(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

/// Drops a schema and everything in it.
inline void drop_schema(const std::string& schema) noexcept {
    try {
        exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (...) {
    }
}

} // namespace pg_test

#endif
