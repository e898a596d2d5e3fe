// The conformance suite through any_store (wrapping memory_store): the erasure must not
// change any behaviour.
#include <libretto/session/any_store.hpp>

#include <libretto/session/memory_store.hpp>

#include "store_conformance.hpp"

namespace {

struct any_memory_fixture {
    using store_type = libretto::any_store;
    std::optional<libretto::memory_store> first;
    libretto::any_store open(boost::asio::any_io_executor ex) {
        if (!first) first.emplace(ex);
        return libretto::any_store(*first);
    }
};

} // namespace

LIBRETTO_STORE_CONFORMANCE(any_memory_fixture)

BOOST_AUTO_TEST_SUITE(any_store_specific)

BOOST_AUTO_TEST_CASE(target_reaches_the_wrapped_store) {
    boost::asio::io_context io;
    libretto::any_store st{libretto::memory_store(io.get_executor())};
    BOOST_TEST(st.target<libretto::memory_store>() != nullptr);
    BOOST_TEST(st.target<int>() == nullptr);
    libretto::session s;
    BOOST_TEST(!st.target<libretto::memory_store>()->create(conformance::create_opts("a", "u", "s"), s));
}

BOOST_AUTO_TEST_CASE(copies_share_the_store_and_default_token_works) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::any_store a{libretto::memory_store(ex)};
        libretto::any_store b = a;
        lb::create_options o = create_opts("app", "u", "s");
        auto op = a.async_create(std::move(o)); // deferred by default
        auto s = co_await std::move(op);
        auto g = co_await get(b, s);
        BOOST_TEST(g.has_value());
    });
}

BOOST_AUTO_TEST_SUITE_END()
