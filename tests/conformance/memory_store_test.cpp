// The conformance suite against memory_store, plus what is particular to it.
#include <libretto/session/memory_store.hpp>

#include "store_conformance.hpp"

#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

namespace {

static_assert(libretto::session_store<libretto::memory_store>);

struct memory_fixture {
    using store_type = libretto::memory_store;
    // Copies of a memory_store share their data: the "second instance" is a copy.
    std::optional<libretto::memory_store> first;
    libretto::memory_store open(boost::asio::any_io_executor ex) {
        if (!first) first.emplace(ex);
        return *first;
    }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(memory_fixture)

BOOST_AUTO_TEST_SUITE(memory_store_specific)

BOOST_AUTO_TEST_CASE(oversize_event_is_rejected) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::memory_store_options o;
        o.max_event_bytes = 512;
        libretto::memory_store st(ex, o);
        auto s = co_await create(st, "app", "u1", "s1");
        BOOST_TEST(co_await append_text_ec(st, s, std::string(1000, 'x')) == libretto::errc::oversize);
        BOOST_TEST(s.events.empty());
        BOOST_TEST(co_await append_text_ec(st, s, "small") == error_code{});
    });
}

BOOST_AUTO_TEST_CASE(sync_core_matches_async) {
    boost::asio::io_context io;
    libretto::memory_store st(io.get_executor());
    libretto::session s;
    BOOST_TEST(!st.create(conformance::create_opts("app", "u", "s"), s));
    std::int64_t seq = 0;
    BOOST_TEST(!st.append(s, conformance::text_event("x"), seq));
    BOOST_TEST(seq == 1);
    std::optional<libretto::session> g;
    BOOST_TEST(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(g->events.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
