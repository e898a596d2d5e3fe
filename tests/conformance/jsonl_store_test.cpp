// The conformance suite against jsonl_store. Every test case gets a fresh directory under
// the working directory (removed afterwards); open() called twice gives two store
// instances on that directory, which share nothing but the files and their locks.
#include <libretto/store/jsonl_store.hpp>

#include "store_conformance.hpp"

#include <atomic>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace {

static_assert(libretto::session_store<libretto::jsonl_store>);

struct jsonl_fixture {
    using store_type = libretto::jsonl_store;
    [[maybe_unused]] static constexpr bool persistent = true;

    std::filesystem::path dir;

    jsonl_fixture() {
        static std::atomic<int> counter{0};
        dir = std::filesystem::current_path() /
              ("jsonl-conformance-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(dir);
    }
    ~jsonl_fixture() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }

    libretto::jsonl_store open(boost::asio::any_io_executor ex) {
        libretto::jsonl_store_options o;
        o.directory = dir;
        o.durability = libretto::durability::per_turn;
        return libretto::jsonl_store(std::move(ex), o);
    }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(jsonl_fixture)
