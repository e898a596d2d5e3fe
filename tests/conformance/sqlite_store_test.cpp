// The conformance suite against sqlite_store. Each fixture owns a fresh database file in
// the test's working directory; each open() is a new instance (its own connection and
// worker thread), so the second instance of the concurrency case races through SQLite.
#include <libretto/store/sqlite_store.hpp>

#include "store_conformance.hpp"

#include <atomic>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace {

static_assert(libretto::session_store<libretto::sqlite_store>);

struct sqlite_fixture {
    using store_type = libretto::sqlite_store;
    [[maybe_unused]] static constexpr bool persistent = true;

    std::string path;

    sqlite_fixture() {
        static std::atomic<int> counter{0};
        path = "conformance-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".db";
        remove_files();
    }
    ~sqlite_fixture() { remove_files(); }

    libretto::sqlite_store open(boost::asio::any_io_executor ex) {
        libretto::sqlite_store_options o;
        o.path = path;
        return libretto::sqlite_store(std::move(ex), std::move(o));
    }

    void remove_files() const {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
    }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(sqlite_fixture)
