// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// any_session_index, any_artifact_service and any_memory_service after a move: the moved-from
// handle is empty (its calls used to dereference a null pointer): every synchronous call
// returns not_connected, every asynchronous one completes with it (never inside the
// initiating call), with the words in the diagnostics; the destination still works.
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/store/any_memory_service.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/in_memory_memory_service.hpp>
#include <libretto/store/memory_artifact_service.hpp>
#include <libretto/store/memory_session_index.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;
using boost::system::error_code;

template <class Test>
void run(asio::io_context& io, Test test) {
    std::exception_ptr failure;
    bool finished = false;
    asio::co_spawn(io, test(), [&](std::exception_ptr ep) {
        failure = ep;
        finished = true;
    });
    io.restart();
    io.run();
    BOOST_REQUIRE(finished);
    if (failure) std::rethrow_exception(failure);
}

bool says(const lb::diagnostics& d, const std::string& words) { return d.message() == words; }

} // namespace

BOOST_AUTO_TEST_SUITE(any_service_handles)

BOOST_AUTO_TEST_CASE(a_moved_from_any_session_index_is_empty) {
    asio::io_context io;
    lb::any_session_index a(io.get_executor(), lb::memory_session_index());
    BOOST_TEST(static_cast<bool>(a));
    lb::any_session_index b = std::move(a);
    BOOST_TEST(!a); // NOLINT(bugprone-use-after-move): the documented empty state
    BOOST_TEST(!a.get_executor());
    const std::string words = "any_session_index: empty (moved-from)";
    lb::diagnostics d;
    std::optional<lb::conversation_entry> got;
    error_code ec = a.get("app", "k", got, &d);
    BOOST_TEST((ec == asio::error::not_connected), ec.message());
    BOOST_TEST(says(d, words), d.message());
    lb::conversation_entry e;
    e.app_name = "app";
    e.key = "k";
    e.user_id = "u";
    e.session_id = "s";
    BOOST_TEST((a.put(e) == asio::error::not_connected));
    std::vector<lb::conversation_entry> all;
    BOOST_TEST((a.list(lb::conversation_query{}, all) == asio::error::not_connected));
    BOOST_TEST((a.erase("app", "k") == asio::error::not_connected));
    BOOST_TEST((a.replace("app", {}) == asio::error::not_connected));
    lb::conversation_entry patched;
    BOOST_TEST((a.patch("app", "k", lb::conversation_patch{}, patched) == asio::error::not_connected));

    // A plain callback bound to an executor: through it, not inside the call.
    int called = 0;
    lb::diagnostics cb_diag;
    a.async_get("app", "k", cb_diag,
                asio::bind_executor(io.get_executor(), [&](error_code ec, std::optional<lb::conversation_entry> r) {
                    ++called;
                    BOOST_TEST((ec == asio::error::not_connected), ec.message());
                    BOOST_TEST(!r);
                }));
    BOOST_TEST(called == 0);
    BOOST_TEST(says(cb_diag, words), cb_diag.message());
    run(io, [&]() -> asio::awaitable<void> {
        auto lop = a.async_list(lb::conversation_query{}, d, asio::as_tuple(asio::use_awaitable));
        auto [lec, rows] = co_await std::move(lop);
        BOOST_TEST((lec == asio::error::not_connected), lec.message());
        BOOST_TEST(rows.empty());
        BOOST_TEST(says(d, words), d.message());
        try {
            auto pop = a.async_put(e, asio::use_awaitable);
            co_await std::move(pop);
            BOOST_TEST(false, "no error thrown");
        } catch (const lb::error_with_diagnostics& x) {
            BOOST_TEST((x.code() == asio::error::not_connected), x.what());
            BOOST_TEST(std::string(x.what()).find(words) != std::string::npos, x.what());
        }
        // The destination still works.
        auto bop = b.async_put(e, d, asio::as_tuple(asio::use_awaitable));
        auto [bec] = co_await std::move(bop);
        BOOST_TEST(!bec, d.message());
    });
    BOOST_TEST(called == 1);
    BOOST_TEST(!b.get("app", "k", got));
    BOOST_TEST(got.has_value());
}

BOOST_AUTO_TEST_CASE(a_moved_from_any_artifact_service_is_empty) {
    asio::io_context io;
    lb::any_artifact_service a(io.get_executor(), lb::memory_artifact_service());
    lb::any_artifact_service b = std::move(a);
    BOOST_TEST(!a); // NOLINT(bugprone-use-after-move): the documented empty state
    BOOST_TEST(static_cast<bool>(b));
    BOOST_TEST(!a.get_executor());
    const std::string words = "any_artifact_service: empty (moved-from)";
    const lb::artifact_key k("app", "u", "s", "a.txt");
    lb::diagnostics d;
    lb::artifact_info info;
    error_code ec = a.save(k, "data", "text/plain", {}, info, &d);
    BOOST_TEST((ec == asio::error::not_connected), ec.message());
    BOOST_TEST(says(d, words), d.message());
    std::optional<lb::artifact> loaded;
    BOOST_TEST((a.load(k, std::nullopt, loaded) == asio::error::not_connected));
    std::vector<std::string> names;
    BOOST_TEST((a.list("app", "u", "s", names) == asio::error::not_connected));
    std::vector<lb::artifact_info> versions;
    BOOST_TEST((a.versions(k, versions) == asio::error::not_connected));
    BOOST_TEST((a.remove(k) == asio::error::not_connected));

    int called = 0;
    a.async_delete(k, asio::bind_executor(io.get_executor(), [&](error_code ec) {
                       ++called;
                       BOOST_TEST((ec == asio::error::not_connected), ec.message());
                   }));
    BOOST_TEST(called == 0);
    run(io, [&]() -> asio::awaitable<void> {
        auto lop = a.async_load(k, std::nullopt, d, asio::as_tuple(asio::use_awaitable));
        auto [lec, art] = co_await std::move(lop);
        BOOST_TEST((lec == asio::error::not_connected), lec.message());
        BOOST_TEST(!art);
        BOOST_TEST(says(d, words), d.message());
        try {
            auto sop = a.async_save(k, "data", "text/plain", {}, asio::use_awaitable);
            (void)co_await std::move(sop);
            BOOST_TEST(false, "no error thrown");
        } catch (const lb::error_with_diagnostics& x) {
            BOOST_TEST((x.code() == asio::error::not_connected), x.what());
            BOOST_TEST(std::string(x.what()).find(words) != std::string::npos, x.what());
        }
        auto bop = b.async_save(k, "data", "text/plain", {}, asio::as_tuple(asio::use_awaitable));
        auto [bec, saved] = co_await std::move(bop);
        BOOST_TEST(!bec, bec.message());
    });
    BOOST_TEST(called == 1);
    BOOST_TEST(!b.load(k, std::nullopt, loaded));
    BOOST_REQUIRE(loaded);
    BOOST_TEST(loaded->data == "data");
}

BOOST_AUTO_TEST_CASE(a_moved_from_any_memory_service_is_empty) {
    asio::io_context io;
    lb::any_memory_service a(io.get_executor(), lb::in_memory_memory_service());
    lb::any_memory_service b = std::move(a);
    BOOST_TEST(!a); // NOLINT(bugprone-use-after-move): the documented empty state
    BOOST_TEST(!a.get_executor());
    const std::string words = "any_memory_service: empty (moved-from)";
    lb::diagnostics d;
    std::vector<lb::memory_entry> found;
    lb::memory_query q;
    q.app_name = "app";
    q.user_id = "u";
    q.text = "hello";
    error_code ec = a.search(q, found, &d);
    BOOST_TEST((ec == asio::error::not_connected), ec.message());
    BOOST_TEST(says(d, words), d.message());
    std::size_t added = 7;
    BOOST_TEST((a.add("app", "u", "s", {}, added) == asio::error::not_connected));
    BOOST_TEST((a.erase_session("app", "u", "s") == asio::error::not_connected));

    int called = 0;
    a.async_erase_session("app", "u", "s", d, asio::bind_executor(io.get_executor(), [&](error_code ec) {
                              ++called;
                              BOOST_TEST((ec == asio::error::not_connected), ec.message());
                          }));
    BOOST_TEST(called == 0);
    BOOST_TEST(says(d, words), d.message());
    run(io, [&]() -> asio::awaitable<void> {
        auto sop = a.async_search(q, d, asio::as_tuple(asio::use_awaitable));
        auto [sec, rows] = co_await std::move(sop);
        BOOST_TEST((sec == asio::error::not_connected), sec.message());
        BOOST_TEST(rows.empty());
        try {
            auto aop = a.async_add("app", "u", "s", {}, asio::use_awaitable);
            (void)co_await std::move(aop);
            BOOST_TEST(false, "no error thrown");
        } catch (const lb::error_with_diagnostics& x) {
            BOOST_TEST((x.code() == asio::error::not_connected), x.what());
            BOOST_TEST(std::string(x.what()).find(words) != std::string::npos, x.what());
        }
        auto bop = b.async_search(q, asio::as_tuple(asio::use_awaitable));
        auto [bec, none] = co_await std::move(bop);
        BOOST_TEST(!bec, bec.message());
        BOOST_TEST(none.empty());
    });
    BOOST_TEST(called == 1);
}

BOOST_AUTO_TEST_SUITE_END()
