// The runner's compaction step on postgres_store: every strategy over eight turns, against
// the server the ctest fixture starts (tests/pg_test_server.hpp).
#include "pg_test_server.hpp"
#include "runner_compaction_cases.hpp"

#include <libretto/store/postgres_store.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

namespace {

struct postgres_env {
    static constexpr const char* name = "postgres_store";
    std::string schema = pg_test::fresh_schema("compaction");
    boost::asio::io_context io;
    libretto::postgres_store store;
    postgres_env() : store(io.get_executor(), options(schema)) {}
    ~postgres_env() { pg_test::drop_schema(schema); }
    static libretto::postgres_store_options options(const std::string& schema) {
        libretto::postgres_store_options o;
        o.conninfo = pg_test::conninfo();
        o.schema = schema;
        return o;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(runner_compaction_postgres)

BOOST_AUTO_TEST_CASE(every_strategy_works_with_postgres_store) {
    compaction_cases::every_strategy_on<postgres_env>(postgres_env::name);
}

BOOST_AUTO_TEST_CASE(older_summaries_stay_in_the_models_context) {
    compaction_cases::older_summaries_stay_on<postgres_env>(postgres_env::name);
}

BOOST_AUTO_TEST_CASE(a_reload_after_a_rolling_summary_reads_only_what_the_view_needs) {
    compaction_cases::reload_after_rolling_summary_on<postgres_env>(postgres_env::name);
}

BOOST_AUTO_TEST_SUITE_END()
