// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// any_transport and any_response: a wrapped transport's requests, statuses, headers, bodies
// and errors come through unchanged; the caller's executor and cancellation slot reach the
// wrapped operation; empty responses fail cleanly. https_transport is in
// http_transport_openssl_test.cpp.
#include <libretto/http/any_transport.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/fake_transport.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace asio = boost::asio;
namespace lb = libretto;
namespace lh = libretto::http;
using boost::system::error_code;
using namespace std::chrono_literals;

static_assert(lh::http_transport<lh::any_transport>);
static_assert(lh::http_response<lh::any_response>);

// The concepts check the operations' completion signatures, with any completion token.
template <class ReadSig>
struct signature_response {
    unsigned status() const { return 200; }
    std::string_view header(std::string_view) const { return {}; }
    bool done() const { return true; }
    template <class Token>
    auto async_read_some(asio::mutable_buffer, Token&& t) {
        return asio::async_initiate<Token, ReadSig>([](auto) {}, t);
    }
};
static_assert(lh::http_response<signature_response<void(error_code, std::size_t)>>);
static_assert(!lh::http_response<signature_response<void(error_code, int)>>);
static_assert(!lh::http_response<signature_response<void(std::size_t)>>);

/// A response whose read takes use_awaitable and nothing else.
struct awaitable_only_response {
    unsigned status() const;
    std::string_view header(std::string_view) const;
    bool done() const;
    asio::awaitable<std::size_t> async_read_some(asio::mutable_buffer, asio::use_awaitable_t<>);
};
static_assert(!lh::http_response<awaitable_only_response>);

namespace {

template <class F>
void run(asio::io_context& io, F f) {
    std::exception_ptr failure;
    asio::co_spawn(io, std::move(f), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

lh::http_request post(std::string url, std::string body) {
    lh::http_request r;
    r.url = std::move(url);
    r.body = std::move(body);
    r.headers.push_back({"Content-Type", "application/json"});
    return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(any_transport_suite)

BOOST_AUTO_TEST_CASE(a_wrapped_fake_transport_answers_through_the_seam) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    lh::fake_response reply;
    reply.status = 201;
    reply.headers.push_back({"X-Request-Id", "req-7"});
    reply.chunks = {"hello ", "world"};
    fake.push(reply);
    lh::any_transport t = fake; // copies share the fake's script
    run(io, [&]() -> asio::awaitable<void> {
        lh::any_response res = co_await t.async_request(post("http://example.test/v1", "{\"a\":1}"), asio::use_awaitable);
        BOOST_TEST(static_cast<bool>(res));
        BOOST_TEST(res.status() == 201u);
        BOOST_TEST(res.header("x-request-id") == "req-7"); // the wrapped transport's lookup, case-insensitive
        BOOST_TEST(res.header("absent").empty());
        BOOST_TEST(!res.done());
        auto [ec, body] = co_await lh::read_body(res);
        BOOST_TEST(!ec);
        BOOST_TEST(body == "hello world");
        BOOST_TEST(res.done());
    });
    const auto sent = fake.requests();
    BOOST_TEST_REQUIRE(sent.size() == 1u);
    BOOST_TEST(sent[0].url == "http://example.test/v1");
    BOOST_TEST(sent[0].body == "{\"a\":1}");
    BOOST_TEST(sent[0].headers.size() == 1u);
    BOOST_TEST(fake.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(a_request_error_arrives_with_an_empty_response) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    lh::fake_response refused;
    refused.request_error = asio::error::connection_refused;
    fake.push(refused);
    lh::any_transport t = fake;
    run(io, [&]() -> asio::awaitable<void> {
        error_code ec;
        lh::any_response res = co_await t.async_request(post("http://example.test/", ""),
                                                        asio::redirect_error(asio::use_awaitable, ec));
        BOOST_TEST(ec == asio::error::connection_refused);
        BOOST_TEST(!static_cast<bool>(res));
        BOOST_TEST(res.status() == 0u);
        // An empty script: the fake's own error (not_found) comes through unchanged.
        co_await t.async_request(post("http://example.test/", ""), asio::redirect_error(asio::use_awaitable, ec));
        BOOST_TEST(ec == lb::errc::not_found);
    });
}

BOOST_AUTO_TEST_CASE(a_body_error_after_some_bytes_comes_through) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    lh::fake_response reply;
    reply.chunks = {"partial"};
    reply.error_after_body = lh::make_error_code(lh::http_errc::truncated);
    fake.push(reply);
    lh::any_transport t = fake;
    run(io, [&]() -> asio::awaitable<void> {
        lh::any_response res = co_await t.async_request(post("http://example.test/", ""), asio::use_awaitable);
        auto [ec, body] = co_await lh::read_body(res);
        BOOST_TEST(ec == lh::http_errc::truncated);
        BOOST_TEST(body == "partial");
        BOOST_TEST(!res.done());
    });
}

BOOST_AUTO_TEST_CASE(an_empty_response_fails_its_reads_with_not_connected) {
    asio::io_context io;
    run(io, [&]() -> asio::awaitable<void> {
        lh::any_response empty;
        BOOST_TEST(empty.status() == 0u);
        BOOST_TEST(empty.header("content-type").empty());
        BOOST_TEST(!empty.done());
        char buf[8];
        error_code ec;
        const std::size_t n =
            co_await empty.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
        BOOST_TEST(ec == asio::error::not_connected);
        BOOST_TEST(n == 0u);
        // A moved-from response is empty too.
        lh::fake_transport fake(co_await asio::this_coro::executor);
        fake.push(lh::fake_response{});
        lh::any_transport t = fake;
        lh::any_response a = co_await t.async_request(post("http://example.test/", ""), asio::use_awaitable);
        lh::any_response b = std::move(a);
        BOOST_TEST(b.status() == 200u);
        co_await a.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec)); // NOLINT: moved from on purpose
        BOOST_TEST(ec == asio::error::not_connected);
    });
}

BOOST_AUTO_TEST_CASE(completions_run_on_the_callers_executor) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    lh::fake_response reply;
    reply.chunks = {"x"};
    fake.push(reply);
    lh::any_transport t = fake;
    auto strand = asio::make_strand(io);
    bool requested = false, read = false;
    t.async_request(post("http://example.test/", ""),
                    asio::bind_executor(strand, [&](error_code ec, lh::any_response res) {
                        BOOST_TEST(!ec);
                        BOOST_TEST(strand.running_in_this_thread());
                        requested = true;
                        auto held = std::make_shared<lh::any_response>(std::move(res));
                        auto buf = std::make_shared<std::string>(8, '\0');
                        held->async_read_some(asio::buffer(*buf),
                                              asio::bind_executor(strand, [&, held, buf](error_code rec, std::size_t n) {
                                                  BOOST_TEST(!rec);
                                                  BOOST_TEST(n == 1u);
                                                  BOOST_TEST(strand.running_in_this_thread());
                                                  read = true;
                                              }));
                    }));
    BOOST_TEST(!requested); // never completes inside the initiating call
    io.run();
    BOOST_TEST(requested);
    BOOST_TEST(read);
}

// A server that accepts and never answers: only cancellation ends the request.
BOOST_AUTO_TEST_CASE(cancellation_reaches_the_wrapped_transport) {
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    const unsigned short port = acceptor.local_endpoint().port();
    std::optional<asio::ip::tcp::socket> held;
    acceptor.async_accept([&](error_code ec, asio::ip::tcp::socket s) {
        if (!ec) held.emplace(std::move(s));
    });
    lh::any_transport t = lh::beast_transport<>(io.get_executor());
    asio::cancellation_signal cancel;
    std::optional<error_code> result;
    t.async_request(post("http://127.0.0.1:" + std::to_string(port) + "/", "{}"),
                    asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, lh::any_response res) {
                        result = ec;
                        BOOST_TEST(!static_cast<bool>(res));
                    }));
    asio::steady_timer timer(io, 200ms);
    timer.async_wait([&](error_code) { cancel.emit(asio::cancellation_type::terminal); });
    const auto started = std::chrono::steady_clock::now();
    io.run();
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST(*result == asio::error::operation_aborted);
    BOOST_TEST(held.has_value()); // the request had reached the server
    BOOST_TEST((std::chrono::steady_clock::now() - started < 10s)); // not the 60 s first-byte timeout
}

BOOST_AUTO_TEST_CASE(copies_share_the_wrapped_transport) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    fake.push(lh::fake_response{});
    fake.push(lh::fake_response{});
    lh::any_transport a = fake;
    lh::any_transport b = a;
    BOOST_TEST((b.get_executor() == asio::any_io_executor(io.get_executor())));
    run(io, [&]() -> asio::awaitable<void> {
        co_await a.async_request(post("http://example.test/a", ""), asio::use_awaitable);
        co_await b.async_request(post("http://example.test/b", ""), asio::use_awaitable);
    });
    BOOST_TEST(fake.requests().size() == 2u);
    BOOST_TEST(fake.pending() == 0u);
}

// A null implementation was taken without a word and dereferenced by the first request.
BOOST_AUTO_TEST_CASE(a_null_implementation_is_refused) {
    std::shared_ptr<lh::any_transport::interface> none;
    try {
        lh::any_transport t(none);
        BOOST_ERROR("a null implementation was accepted");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::invalid_argument), e.what());
        BOOST_TEST(std::string(e.what()).find("null") != std::string::npos, e.what());
    }
}

// A moved-from transport's request dereferenced null; it now fails as an empty response's reads.
BOOST_AUTO_TEST_CASE(a_moved_from_transport_fails_its_requests_with_not_connected) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    fake.push(lh::fake_response{});
    lh::any_transport a = fake;
    lh::any_transport b = std::move(a);
    BOOST_TEST(!static_cast<bool>(a)); // NOLINT: moved from on purpose
    BOOST_TEST(static_cast<bool>(b));
    BOOST_TEST(!a.get_executor()); // NOLINT: empty, not a crash
    BOOST_TEST((b.get_executor() == asio::any_io_executor(io.get_executor())));
    run(io, [&]() -> asio::awaitable<void> {
        error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        auto req = post("http://example.test/", "");
        lh::any_response res = co_await a.async_request(std::move(req), token); // NOLINT: moved from
        BOOST_TEST((ec == asio::error::not_connected), ec.message());
        BOOST_TEST(!static_cast<bool>(res));
        auto again = post("http://example.test/", "");
        lh::any_response ok = co_await b.async_request(std::move(again), token);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(ok.status() == 200u);
    });
    BOOST_TEST(fake.requests().size() == 1u); // only the live transport's request
    // A completion handler with an executor of its own runs there, never inside the call.
    bool completed = false;
    auto req = post("http://example.test/", "");
    auto handler = [&](error_code ec, lh::any_response res) {
        BOOST_TEST((ec == asio::error::not_connected), ec.message());
        BOOST_TEST(!static_cast<bool>(res));
        completed = true;
    };
    a.async_request(std::move(req), asio::bind_executor(io, handler)); // NOLINT: moved from on purpose
    BOOST_TEST(!completed);
    io.restart();
    io.run();
    BOOST_TEST(completed);
}

BOOST_AUTO_TEST_SUITE_END()
