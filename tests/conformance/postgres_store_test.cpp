// The conformance suite against postgres_store, on the PostgreSQL server the ctest fixture
// starts (tests/pg_test_server.hpp). Each fixture gets its own schema; each open() is a new
// store with its own connection pool, so the concurrency case races two pools through the
// server's row locks.
#include <libretto/store/postgres_store.hpp>

#include "../pg_test_server.hpp"
#include "store_conformance.hpp"

#include <string>

namespace {

static_assert(libretto::session_store<libretto::postgres_store>);

struct postgres_fixture {
    using store_type = libretto::postgres_store;
    [[maybe_unused]] static constexpr bool persistent = true;

    std::string conninfo = pg_test::conninfo();
    std::string schema = pg_test::fresh_schema("conformance");

    ~postgres_fixture() { pg_test::drop_schema(schema); }

    libretto::postgres_store open(boost::asio::any_io_executor ex) {
        libretto::postgres_store_options o;
        o.conninfo = conninfo;
        o.schema = schema;
        return libretto::postgres_store(std::move(ex), std::move(o));
    }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(postgres_fixture)
