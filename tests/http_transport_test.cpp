// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// beast_transport (plain TCP) against the loopback llm_test::server, fake_transport, and
// read_body. TLS is in http_transport_openssl_test.cpp.
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/detail/url.hpp> // parse_url's authority, checked below
#include <libretto/http/fake_transport.hpp>
#include <libretto/http/sse_parser.hpp>

#include "llm_test_server.hpp"

#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <malloc.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

// ---- heap accounting: the bounded-memory tests measure the peak of live operator-new bytes ----
// The models of the transport concept (kept out of the headers: the check instantiates a whole
// request for use_awaitable).
static_assert(libretto::http::http_transport<libretto::http::beast_transport<>>);
static_assert(libretto::http::http_transport<libretto::http::fake_transport>);

namespace {
std::atomic<long long> g_live{0};
std::atomic<long long> g_peak{0};

void note_alloc(void* p) {
    const long long n = static_cast<long long>(malloc_usable_size(p));
    const long long live = g_live.fetch_add(n, std::memory_order_relaxed) + n;
    long long peak = g_peak.load(std::memory_order_relaxed);
    while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
}
void* counted_alloc(std::size_t n) {
    void* p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    note_alloc(p);
    return p;
}
void counted_free(void* p) noexcept {
    if (!p) return;
    g_live.fetch_sub(static_cast<long long>(malloc_usable_size(p)), std::memory_order_relaxed);
    std::free(p);
}
/// Resets the peak to the current live bytes and returns them.
long long heap_mark() {
    const long long live = g_live.load();
    g_peak.store(live);
    return live;
}
} // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }

namespace asio = boost::asio;
namespace lb = libretto;
namespace lh = libretto::http;
using namespace std::chrono_literals;
using boost::system::error_code;
using lh::http_errc;
using transport = lh::beast_transport<>;

namespace {

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

lh::http_request post(const llm_test::server& srv, std::string path = "/v1/echo", std::string body = "{}") {
    lh::http_request r;
    r.url = srv.base_url() + path;
    r.headers = {{"Content-Type", "application/json"}};
    r.body = std::move(body);
    return r;
}

struct result {
    error_code ec;
    transport::response res;
};

asio::awaitable<result> request(transport& t, lh::http_request req) {
    result out;
    auto token = asio::redirect_error(asio::use_awaitable, out.ec);
    out.res = co_await t.async_request(std::move(req), token);
    co_return out;
}

/// Reads a whole body through a small buffer; returns the error that ended it, if any.
template <class Response>
asio::awaitable<error_code> read_all(Response& res, std::string& body, std::size_t buf_size = 7) {
    std::vector<char> buf(buf_size);
    for (;;) {
        error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        const std::size_t n = co_await res.async_read_some(asio::buffer(buf), token);
        if (ec) co_return ec;
        if (n == 0) co_return error_code{};
        body.append(buf.data(), n);
    }
}

const lh::http_request empty_request{};

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(beast_transport_suite)

BOOST_AUTO_TEST_CASE(post_round_trip_records_request_and_reads_body) {
    llm_test::server srv;
    srv.push(llm_test::text_reply("hello, body").in_pieces(3));
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        auto req = post(srv, "/v1/echo?x=1", R"({"a":1})");
        req.headers.push_back({"Authorization", "Bearer sk-test"});
        result r = co_await request(t, std::move(req));
        BOOST_REQUIRE(!r.ec);
        BOOST_TEST(r.res.status() == 200u);
        BOOST_TEST(r.res.header("content-type") == "text/plain");
        BOOST_TEST(r.res.header("X-Missing") == "");
        BOOST_TEST(!r.res.done());
        std::string body;
        { error_code read_ec = co_await read_all(r.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(body == "hello, body");
        BOOST_TEST(r.res.done());
        // After the end, reads keep returning 0.
        std::array<char, 4> b{};
        std::size_t n = co_await r.res.async_read_some(asio::buffer(b), asio::use_awaitable);
        BOOST_TEST(n == 0u);
    });
    auto reqs = srv.requests();
    BOOST_REQUIRE(reqs.size() == 1u);
    BOOST_TEST(reqs[0].method == "POST");
    BOOST_TEST(reqs[0].target == "/v1/echo?x=1");
    BOOST_TEST(reqs[0].body == R"({"a":1})");
    BOOST_TEST(reqs[0].header("authorization") == "Bearer sk-test");
    BOOST_TEST(reqs[0].header("content-length") == "7");
    BOOST_TEST(reqs[0].header("host") == "127.0.0.1:" + std::to_string(srv.port()));
    BOOST_TEST(reqs[0].header("user-agent") == "libretto/0.1");
}

BOOST_AUTO_TEST_CASE(an_ipv6_literal_keeps_its_brackets_in_the_host_header) {
    llm_test::server srv("::1");
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        srv.push(llm_test::text_reply("over IPv6"));
        auto req = post(srv);
        BOOST_TEST(req.url.starts_with("http://[::1]:"));
        result r = co_await request(t, std::move(req));
        BOOST_REQUIRE(!r.ec);
        std::string body;
        { error_code read_ec = co_await read_all(r.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(body == "over IPv6");
    });
    auto reqs = srv.requests();
    BOOST_REQUIRE(reqs.size() == 1u);
    // RFC 9110 section 7.2: Host is uri-host [":" port], and an IPv6 uri-host is bracketed.
    BOOST_TEST(reqs[0].header("host") == "[::1]:" + std::to_string(srv.port()));
    // Without a port (the scheme's default), and with one that is spelled out.
    lh::detail::parsed_url u;
    BOOST_REQUIRE(!lh::detail::parse_url("https://[2001:db8::1]/v1", u));
    BOOST_TEST(u.host == "2001:db8::1");
    BOOST_TEST(u.authority == "[2001:db8::1]");
    BOOST_REQUIRE(!lh::detail::parse_url("http://[::1]:80/", u));
    BOOST_TEST(u.authority == "[::1]:80");
    BOOST_REQUIRE(!lh::detail::parse_url("http://example.com/", u));
    BOOST_TEST(u.authority == "example.com");
    BOOST_REQUIRE(!lh::detail::parse_url("http://example.com:8080", u));
    BOOST_TEST(u.authority == "example.com:8080");
    BOOST_TEST(u.target == "/");
}

BOOST_AUTO_TEST_CASE(content_length_and_random_chunking_bodies_arrive_intact) {
    llm_test::server srv;
    std::string big;
    for (int i = 0; i < 5000; ++i) big += std::to_string(i) + ",";
    srv.push(llm_test::text_reply(big).content_length().in_pieces(1000));
    srv.push(llm_test::text_reply(big).in_random_pieces(97, 42));
    srv.push(llm_test::text_reply("")); // empty chunked body
    srv.push(llm_test::text_reply("").content_length()); // Content-Length: 0: done at once
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 2; ++i) {
            auto req_1 = post(srv);
            result r = co_await request(t, std::move(req_1));
            BOOST_REQUIRE(!r.ec);
            std::string body;
            { error_code read_ec = co_await read_all(r.res, body, 13); BOOST_TEST(!read_ec); }
            BOOST_TEST(body == big);
        }
        auto req_2 = post(srv);
        result e = co_await request(t, std::move(req_2));
        BOOST_REQUIRE(!e.ec);
        std::string body;
        { error_code read_ec = co_await read_all(e.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(body.empty());
        auto req_3 = post(srv);
        result z = co_await request(t, std::move(req_3));
        BOOST_REQUIRE(!z.ec);
        BOOST_TEST(z.res.done());
    });
    BOOST_TEST(srv.connections_accepted() == 1u); // all four over one kept-alive connection
}

BOOST_AUTO_TEST_CASE(bad_input_is_rejected_with_clear_errors) {
    llm_test::server srv;
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        for (std::string url : {"ftp://127.0.0.1/x", "127.0.0.1:80/x", "http://", "http://:80/", "http://h:0/",
                                "http://h:65536/", "http://h:12a/", "http://u@h/", "http://h/a b", "http://h/#frag",
                                "http://[::1/"}) {
            lh::http_request r;
            r.url = url;
            result res = co_await request(t, r);
            BOOST_TEST_CONTEXT(url) { BOOST_TEST(res.ec == lb::errc::invalid_argument); }
        }
        auto r = post(srv);
        r.method = "FROB";
        { result bad = co_await request(t, r); BOOST_TEST(bad.ec == lb::errc::invalid_argument); }
        r = post(srv);
        r.headers.push_back({"X-Evil", "a\r\nInjected: yes"});
        { result bad = co_await request(t, r); BOOST_TEST(bad.ec == lb::errc::invalid_argument); }
        r = post(srv);
        r.headers.push_back({"", "empty name"});
        { result bad = co_await request(t, r); BOOST_TEST(bad.ec == lb::errc::invalid_argument); }
        r = post(srv);
        r.url = "https://127.0.0.1:1/v1";
        result tls = co_await request(t, r);
        BOOST_TEST(tls.ec == http_errc::tls_required);
        BOOST_TEST(tls.ec.message().find("openssl_tls") != std::string::npos);
        // A zero-size read buffer would look like the end of the body.
        srv.push(llm_test::text_reply("x"));
        auto req_4 = post(srv);
        result ok = co_await request(t, std::move(req_4));
        BOOST_REQUIRE(!ok.ec);
        error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        co_await ok.res.async_read_some(asio::mutable_buffer(), token);
        BOOST_TEST(ec == lb::errc::invalid_argument);
    });
    BOOST_TEST(srv.request_count() == 1u); // none of the bad requests reached the server
}

BOOST_AUTO_TEST_CASE(default_and_moved_from_responses_are_not_connected) {
    llm_test::server srv;
    srv.push(llm_test::text_reply("moved"));
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        transport::response empty;
        BOOST_TEST(empty.status() == 0u);
        BOOST_TEST(empty.header("content-type") == "");
        std::array<char, 8> b{};
        error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        co_await empty.async_read_some(asio::buffer(b), token);
        BOOST_TEST(ec == asio::error::not_connected);
        auto req = post(srv);
        result r = co_await request(t, std::move(req));
        BOOST_REQUIRE(!r.ec);
        transport::response taken = std::move(r.res);
        ec = {};
        co_await r.res.async_read_some(asio::buffer(b), token);
        BOOST_TEST(ec == asio::error::not_connected);
        std::string body;
        error_code read_ec = co_await read_all(taken, body);
        BOOST_TEST(!read_ec);
        BOOST_TEST(body == "moved");
        lh::fake_transport::response fake_empty;
        ec = {};
        co_await fake_empty.async_read_some(asio::buffer(b), token);
        BOOST_TEST(ec == asio::error::not_connected);
    });
}

BOOST_AUTO_TEST_CASE(connection_refused_is_an_error) {
    asio::io_context io;
    unsigned short port = 0;
    {
        asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
        port = a.local_endpoint().port();
    } // closed: nothing listens there now
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        lh::http_request r;
        r.url = "http://127.0.0.1:" + std::to_string(port) + "/";
        result res = co_await request(t, r);
        BOOST_TEST(res.ec == asio::error::connection_refused);
    });
}

BOOST_AUTO_TEST_CASE(keep_alive_reuses_one_connection) {
    llm_test::server srv;
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 5; ++i) {
            srv.push(llm_test::text_reply("r" + std::to_string(i)));
            auto req_5 = post(srv);
            result r = co_await request(t, std::move(req_5));
            BOOST_REQUIRE(!r.ec);
            BOOST_TEST(r.res.reused_connection() == (i > 0));
            std::string body;
            { error_code read_ec = co_await read_all(r.res, body); BOOST_TEST(!read_ec); }
            BOOST_TEST(body == "r" + std::to_string(i));
            BOOST_TEST(t.idle_connections() == 1u);
        }
    });
    BOOST_TEST(srv.connections_accepted() == 1u);
    BOOST_TEST(t.connections_opened() == 1u);
    auto reqs = srv.requests();
    BOOST_REQUIRE(reqs.size() == 5u);
    for (const auto& r : reqs) BOOST_TEST(r.connection == 1u);
}

BOOST_AUTO_TEST_CASE(connection_is_pooled_only_after_the_whole_body) {
    llm_test::server srv;
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        srv.push(llm_test::text_reply(std::string(10000, 'x')).in_pieces(100));
        {
            auto req_6 = post(srv);
            result r = co_await request(t, std::move(req_6));
            BOOST_REQUIRE(!r.ec);
            std::array<char, 10> b{};
            co_await r.res.async_read_some(asio::buffer(b), asio::use_awaitable);
            BOOST_TEST(t.idle_connections() == 0u);
        } // dropped half-read: closed, never pooled
        BOOST_TEST(t.idle_connections() == 0u);
        srv.push(llm_test::text_reply("second"));
        auto req_7 = post(srv);
        result r2 = co_await request(t, std::move(req_7));
        BOOST_REQUIRE(!r2.ec);
        BOOST_TEST(!r2.res.reused_connection());
        std::string body;
        { error_code read_ec = co_await read_all(r2.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(body == "second");
        // Connection: close from the server: not pooled either.
        srv.push(llm_test::text_reply("third").closing());
        auto req_8 = post(srv);
        result r3 = co_await request(t, std::move(req_8));
        BOOST_REQUIRE(!r3.ec);
        BOOST_TEST(r3.res.reused_connection());
        body.clear();
        { error_code read_ec = co_await read_all(r3.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(t.idle_connections() == 0u);
    });
    BOOST_TEST(srv.connections_accepted() == 2u);
}

BOOST_AUTO_TEST_CASE(pool_size_is_capped_per_host) {
    llm_test::server srv;
    srv.set_default(llm_test::text_reply("ok").slow(20ms).in_pieces(1));
    asio::io_context io;
    transport t(io.get_executor(), {.max_idle_per_host = 2});
    int completed = 0;
    for (int i = 0; i < 5; ++i)
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            auto req_9 = post(srv);
            result r = co_await request(t, std::move(req_9));
            BOOST_REQUIRE(!r.ec);
            std::string body;
            { error_code read_ec = co_await read_all(r.res, body); BOOST_TEST(!read_ec); }
            BOOST_TEST(body == "ok");
            ++completed;
        }, asio::detached);
    io.run();
    BOOST_TEST(completed == 5);
    BOOST_TEST(srv.connections_accepted() == 5u); // all in flight at once
    BOOST_TEST(t.idle_connections() == 2u);
}

BOOST_AUTO_TEST_CASE(pooled_connection_closed_by_the_server_is_replaced_transparently) {
    llm_test::server srv;
    srv.push(llm_test::text_reply("one").dropping()); // keep-alive, then the server closes it
    srv.push(llm_test::text_reply("two"));
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        auto req_10 = post(srv);
        result r1 = co_await request(t, std::move(req_10));
        BOOST_REQUIRE(!r1.ec);
        std::string body;
        { error_code read_ec = co_await read_all(r1.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(t.idle_connections() == 1u);
        asio::steady_timer wait(io, 100ms); // the server drops the idle connection meanwhile
        co_await wait.async_wait(asio::use_awaitable);
        auto req_11 = post(srv);
        result r2 = co_await request(t, std::move(req_11));
        BOOST_REQUIRE_MESSAGE(!r2.ec, r2.ec.message());
        body.clear();
        { error_code read_ec = co_await read_all(r2.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(body == "two");
    });
    BOOST_TEST(srv.connections_accepted() == 2u);
    BOOST_TEST(t.connections_opened() == 2u);
    BOOST_TEST(srv.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(first_byte_timeout) {
    llm_test::server srv;
    srv.push([] { auto r = llm_test::text_reply("never"); r.no_response = true; return r; }());
    asio::io_context io;
    transport t(io.get_executor(), {.timeouts = {.first_byte = 150ms}});
    run(io, [&]() -> asio::awaitable<void> {
        const auto t0 = std::chrono::steady_clock::now();
        auto req_12 = post(srv);
        result r = co_await request(t, std::move(req_12));
        const double ms = ms_since(t0);
        BOOST_TEST(r.ec == http_errc::first_byte_timeout);
        BOOST_TEST(lb::is_transient(r.ec));
        BOOST_TEST(ms >= 140.0);
        BOOST_TEST(ms < 2000.0);
    });
}

BOOST_AUTO_TEST_CASE(idle_timeout_on_a_stalled_stream) {
    llm_test::server srv;
    srv.push(llm_test::text_reply(std::string(100, 'a')).in_pieces(10).stall(30));
    asio::io_context io;
    transport t(io.get_executor(), {.timeouts = {.idle = 150ms}});
    run(io, [&]() -> asio::awaitable<void> {
        auto req_13 = post(srv);
        result r = co_await request(t, std::move(req_13));
        BOOST_REQUIRE(!r.ec);
        std::string body;
        const auto t0 = std::chrono::steady_clock::now();
        error_code ec = co_await read_all(r.res, body);
        BOOST_TEST(ec == http_errc::idle_timeout);
        BOOST_TEST(lb::is_transient(ec));
        BOOST_TEST(body == std::string(30, 'a')); // what came before the stall was delivered
        BOOST_TEST(ms_since(t0) < 2000.0);
        // The failed response stays failed.
        std::array<char, 8> b{};
        error_code ec2;
        auto token = asio::redirect_error(asio::use_awaitable, ec2);
        co_await r.res.async_read_some(asio::buffer(b), token);
        BOOST_TEST(ec2 == asio::error::not_connected);
    });
    BOOST_TEST(t.idle_connections() == 0u);
}

BOOST_AUTO_TEST_CASE(slow_stream_within_idle_limit_completes) {
    llm_test::server srv;
    srv.push(llm_test::text_reply("abcdef").in_pieces(1).slow(40ms));
    asio::io_context io;
    transport t(io.get_executor(), {.timeouts = {.idle = 500ms}});
    run(io, [&]() -> asio::awaitable<void> {
        auto req_14 = post(srv);
        result r = co_await request(t, std::move(req_14));
        BOOST_REQUIRE(!r.ec);
        std::string body;
        { error_code read_ec = co_await read_all(r.res, body); BOOST_TEST(!read_ec); }
        BOOST_TEST(body == "abcdef");
    });
}

// The idle limit times the server, not the caller: a caller that takes longer than it between
// two reads (the bytes are waiting) still gets the whole body, and the connection is reused.
BOOST_AUTO_TEST_CASE(a_slow_reader_is_not_an_idle_stream) {
    llm_test::server srv;
    srv.push(llm_test::text_reply(std::string(60, 'c')).in_pieces(3));
    srv.push(llm_test::text_reply("again"));
    asio::io_context io;
    transport t(io.get_executor(), {.timeouts = {.first_byte = 100ms, .idle = 100ms}});
    run(io, [&]() -> asio::awaitable<void> {
        auto first = post(srv);
        result r = co_await request(t, std::move(first));
        BOOST_REQUIRE(!r.ec);
        std::string body;
        std::array<char, 10> b{};
        for (;;) {
            error_code ec;
            auto token = asio::redirect_error(asio::use_awaitable, ec);
            const std::size_t n = co_await r.res.async_read_some(asio::buffer(b), token);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message());
            if (n == 0) break;
            body.append(b.data(), n);
            asio::steady_timer pause(io, 250ms); // the caller busy with the bytes
            co_await pause.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(body == std::string(60, 'c'));
        BOOST_TEST(t.idle_connections() == 1u);
        asio::steady_timer pause(io, 250ms); // an idle pooled connection has no deadline either
        co_await pause.async_wait(asio::use_awaitable);
        auto next = post(srv);
        result again = co_await request(t, std::move(next));
        BOOST_REQUIRE(!again.ec);
        BOOST_TEST(again.res.reused_connection());
        std::string second;
        const error_code read_ec = co_await read_all(again.res, second);
        BOOST_TEST(!read_ec);
        BOOST_TEST(second == "again");
    });
    BOOST_TEST(t.connections_opened() == 1u);
}

BOOST_AUTO_TEST_CASE(total_timeout_fires_though_each_piece_is_quick) {
    llm_test::server srv;
    srv.push(llm_test::text_reply(std::string(100, 'b')).in_pieces(1).slow(20ms)); // 2 s in all
    asio::io_context io;
    transport t(io.get_executor(), {.timeouts = {.idle = 1000ms, .total = 300ms}});
    run(io, [&]() -> asio::awaitable<void> {
        const auto t0 = std::chrono::steady_clock::now();
        auto req_15 = post(srv);
        result r = co_await request(t, std::move(req_15));
        BOOST_REQUIRE(!r.ec);
        std::string body;
        error_code ec = co_await read_all(r.res, body);
        const double ms = ms_since(t0);
        BOOST_TEST(ec == http_errc::total_timeout);
        BOOST_TEST(lb::is_transient(ec));
        BOOST_TEST(!body.empty());
        BOOST_TEST(body.size() < 100u);
        BOOST_TEST(ms >= 280.0);
        BOOST_TEST(ms < 1500.0);
    });
}

BOOST_AUTO_TEST_CASE(connect_timeout) {
    // A listener whose accept queue is full drops new SYNs, so connect() hangs.
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    a.listen(0);
    const auto ep = a.local_endpoint();
    std::vector<asio::ip::tcp::socket> fillers;
    for (int i = 0; i < 8; ++i) {
        fillers.emplace_back(io);
        fillers.back().async_connect(ep, [](error_code) {});
    }
    transport t(io.get_executor(), {.timeouts = {.connect = 200ms}});
    bool timed_out = false;
    run(io, [&]() -> asio::awaitable<void> {
        lh::http_request r;
        r.url = "http://127.0.0.1:" + std::to_string(ep.port()) + "/";
        const auto t0 = std::chrono::steady_clock::now();
        result res = co_await request(t, r);
        const double ms = ms_since(t0);
        BOOST_TEST(res.ec == http_errc::connect_timeout);
        BOOST_TEST(lb::is_transient(res.ec));
        BOOST_TEST(ms >= 190.0);
        BOOST_TEST(ms < 2000.0);
        timed_out = true;
        for (auto& s : fillers) s.close();
        a.close();
    });
    BOOST_TEST(timed_out);
}

// milliseconds::max() ("wait forever"), or any limit past the steady clock's ~292 years, once
// overflowed the clock's nanoseconds: the request failed with first_byte_timeout at once, and
// such a max_idle_time never let a pooled connection be reused.
BOOST_AUTO_TEST_CASE(wait_forever_limits_wait_instead_of_firing_at_once) {
    const std::chrono::milliseconds forever = std::chrono::milliseconds::max();
    const std::chrono::milliseconds centuries = std::chrono::hours(24 * 366 * 300); // past the clock's range
    for (const std::chrono::milliseconds limit : {forever, centuries}) {
        BOOST_TEST_CONTEXT("limits of " << limit.count() << " ms") {
            llm_test::server srv;
            auto late = llm_test::text_reply("late but whole").in_pieces(4).slow(20ms);
            late.header_delay = 200ms;
            srv.push(std::move(late));
            srv.push(llm_test::text_reply("again"));
            asio::io_context io;
            lh::beast_transport_options o;
            o.timeouts = {.connect = limit, .first_byte = limit, .idle = limit, .total = limit};
            o.max_idle_time = limit;
            transport t(io.get_executor(), o);
            run(io, [&]() -> asio::awaitable<void> {
                auto first = post(srv);
                result r = co_await request(t, std::move(first));
                BOOST_REQUIRE_MESSAGE(!r.ec, r.ec.message());
                std::string body;
                const error_code read_ec = co_await read_all(r.res, body);
                BOOST_TEST(!read_ec, read_ec.message());
                BOOST_TEST(body == "late but whole");
                auto next = post(srv);
                result again = co_await request(t, std::move(next));
                BOOST_REQUIRE_MESSAGE(!again.ec, again.ec.message());
                BOOST_TEST(again.res.reused_connection()); // max_idle_time = forever keeps it
                std::string second;
                const error_code again_ec = co_await read_all(again.res, second);
                BOOST_TEST(!again_ec, again_ec.message());
                BOOST_TEST(second == "again");
            });
            BOOST_TEST(t.connections_opened() == 1u);
        }
    }
}

// A negative limit once meant "no limit" (a negative max_idle_time: never reuse), silently.
BOOST_AUTO_TEST_CASE(negative_limits_are_refused_by_name) {
    asio::io_context io;
    auto refused = [&](const lh::beast_transport_options& o, const std::string& why) {
        try {
            transport t(io.get_executor(), o);
            BOOST_ERROR("accepted: " << why);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument), e.what());
            BOOST_TEST(std::string(e.what()).find(why) != std::string::npos, e.what());
        }
    };
    {
        lh::beast_transport_options o;
        o.timeouts.connect = -1ms;
        refused(o, "timeouts.connect is negative (-1 ms)");
    }
    {
        lh::beast_transport_options o;
        o.timeouts.first_byte = -5ms;
        refused(o, "timeouts.first_byte is negative (-5 ms)");
    }
    {
        lh::beast_transport_options o;
        o.timeouts.idle = -1ms;
        refused(o, "timeouts.idle is negative (-1 ms)");
    }
    {
        lh::beast_transport_options o;
        o.timeouts.total = std::chrono::milliseconds::min();
        refused(o, "timeouts.total is negative");
    }
    {
        lh::beast_transport_options o;
        o.max_idle_time = -30'000ms;
        refused(o, "max_idle_time is negative (-30000 ms)");
    }
    // Zero is still "no limit".
    lh::beast_transport_options zero;
    zero.timeouts = {.connect = 0ms, .first_byte = 0ms, .idle = 0ms, .total = 0ms};
    zero.max_idle_time = 0ms;
    BOOST_CHECK_NO_THROW(transport(io.get_executor(), zero));
}

BOOST_AUTO_TEST_CASE(cut_connection_is_truncated_never_a_silent_end) {
    llm_test::server srv;
    srv.push(llm_test::text_reply(std::string(1000, 'c')).in_pieces(100).cut(250));                 // chunked
    srv.push(llm_test::text_reply(std::string(1000, 'd')).content_length().in_pieces(100).cut(250)); // Content-Length
    srv.push(llm_test::text_reply(std::string(1000, 'e')).cut(0));                                   // headers only
    asio::io_context io;
    transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        for (char c : {'c', 'd', 'e'}) {
            auto req_16 = post(srv);
            result r = co_await request(t, std::move(req_16));
            BOOST_REQUIRE(!r.ec);
            std::string body;
            error_code ec = co_await read_all(r.res, body, 64);
            BOOST_TEST_CONTEXT(c) {
                BOOST_TEST(ec == http_errc::truncated);
                BOOST_TEST(lb::is_transient(ec));
                BOOST_TEST(!r.res.done());
                BOOST_TEST(body == std::string(c == 'e' ? 0 : 250, c));
            }
        }
    });
    BOOST_TEST(t.idle_connections() == 0u);
}

BOOST_AUTO_TEST_CASE(cancellation_closes_the_connection_promptly) {
    llm_test::server srv;
    srv.push(llm_test::text_reply(std::string(100, 'z')).in_pieces(10).stall(20));
    srv.push([] { auto r = llm_test::text_reply("never"); r.no_response = true; return r; }());
    asio::io_context io;
    transport t(io.get_executor()); // default timeouts: a minute
    run(io, [&]() -> asio::awaitable<void> {
        // 1. While reading a stalled body.
        auto req_17 = post(srv);
        result r = co_await request(t, std::move(req_17));
        BOOST_REQUIRE(!r.ec);
        asio::cancellation_signal sig;
        asio::steady_timer timer(io, 100ms);
        timer.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
        const auto t0 = std::chrono::steady_clock::now();
        std::array<char, 64> b{};
        error_code ec;
        std::size_t got = 0;
        for (;;) {
            auto token = asio::bind_cancellation_slot(sig.slot(), asio::redirect_error(asio::use_awaitable, ec));
            std::size_t n = co_await r.res.async_read_some(asio::buffer(b), token);
            if (ec || n == 0) break;
            got += n;
        }
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(got == 20u);
        BOOST_TEST(ms_since(t0) < 1000.0);

        // 2. While waiting for the headers.
        asio::cancellation_signal sig2;
        asio::steady_timer timer2(io, 100ms);
        timer2.async_wait([&](error_code) { sig2.emit(asio::cancellation_type::terminal); });
        const auto t1 = std::chrono::steady_clock::now();
        error_code ec2;
        auto token2 = asio::bind_cancellation_slot(sig2.slot(), asio::redirect_error(asio::use_awaitable, ec2));
        auto req2 = post(srv);
        auto res2 = co_await t.async_request(std::move(req2), token2);
        BOOST_TEST(ec2 == asio::error::operation_aborted);
        BOOST_TEST(ms_since(t1) < 1000.0);
        // The server sees both connections closed.
        for (int i = 0; i < 100 && srv.connections_closed() < 2; ++i) {
            asio::steady_timer w(io, 10ms);
            co_await w.async_wait(asio::use_awaitable);
        }
    });
    BOOST_TEST(srv.connections_closed() == 2u);
    BOOST_TEST(t.idle_connections() == 0u);
}

BOOST_AUTO_TEST_CASE(ten_megabytes_of_sse_stream_through_bounded_memory) {
    llm_test::server srv;
    constexpr std::size_t events = 10'000;
    const std::string line = "data: " + std::string(1018, 'x') + "\n\n"; // 1 KiB per event
    auto r = llm_test::text_reply("");
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.source = [line, sent = std::size_t{0}](std::string& piece) mutable {
        if (sent == events) return false;
        for (int i = 0; i < 64 && sent < events; ++i, ++sent) piece += line; // 64 KiB pieces
        return true;
    };
    srv.push(std::move(r));
    asio::io_context io;
    transport t(io.get_executor());
    std::size_t got_events = 0, got_bytes = 0;
    long long growth = 0;
    run(io, [&]() -> asio::awaitable<void> {
        auto req_18 = post(srv);
        result res = co_await request(t, std::move(req_18));
        BOOST_REQUIRE(!res.ec);
        const long long base = heap_mark();
        lh::sse_parser parser;
        std::array<char, 16 * 1024> buf{};
        for (;;) {
            std::size_t n = co_await res.res.async_read_some(asio::buffer(buf), asio::use_awaitable);
            if (n == 0) break;
            got_bytes += n;
            auto ec = parser.feed({buf.data(), n}, [&](const lh::sse_event& e) {
                if (e.data.size() == 1018) ++got_events;
            });
            BOOST_REQUIRE(!ec);
        }
        growth = g_peak.load() - base;
        BOOST_TEST(parser.idle());
    });
    BOOST_TEST(got_events == events);
    BOOST_TEST(got_bytes == events * line.size());
    BOOST_TEST_MESSAGE("10 MB stream: peak heap growth " << growth << " bytes (client and server)");
    BOOST_TEST(growth < 1'000'000); // the server's 64 KiB pieces, Beast's buffer: far below the 10 MB
}

BOOST_AUTO_TEST_CASE(thousand_concurrent_streaming_requests) {
    llm_test::server srv;
    constexpr int n = 1000;
    std::string body;
    for (int i = 0; i < 20; ++i) body += "data: {\"piece\":" + std::to_string(i) + "}\n\n";
    srv.set_default(llm_test::text_reply(body).in_pieces(64).slow(5ms));
    asio::io_context io;
    transport t(io.get_executor(), {.max_idle_per_host = n});
    int ok = 0;
    const long long base = heap_mark();
    for (int i = 0; i < n; ++i)
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            auto req_19 = post(srv);
            result r = co_await request(t, std::move(req_19));
            BOOST_REQUIRE_MESSAGE(!r.ec, r.ec.message());
            lh::sse_parser parser;
            int events = 0;
            std::array<char, 1024> buf{};
            for (;;) {
                std::size_t got = co_await r.res.async_read_some(asio::buffer(buf), asio::use_awaitable);
                if (got == 0) break;
                BOOST_REQUIRE(!parser.feed({buf.data(), got}, [&](const lh::sse_event&) { ++events; }));
            }
            if (events == 20) ++ok;
        }, asio::detached);
    const auto t0 = std::chrono::steady_clock::now();
    io.run();
    const long long peak = g_peak.load() - base;
    BOOST_TEST(ok == n);
    BOOST_TEST(srv.request_count() == static_cast<std::size_t>(n));
    BOOST_TEST_MESSAGE("1000 concurrent streams: " << ms_since(t0) << " ms, " << srv.connections_accepted()
                                                   << " connections, peak heap growth " << peak << " bytes");
    BOOST_TEST(srv.connections_accepted() > 500u); // really concurrent
    BOOST_TEST(peak < 64LL * 1024 * 1024);         // bounded: tens of KiB per stream, both ends
}

BOOST_AUTO_TEST_SUITE_END()

// ---- fake_transport and read_body --------------------------------------------------------

BOOST_AUTO_TEST_SUITE(fake_transport_suite)

BOOST_AUTO_TEST_CASE(scripted_responses_in_chunks_and_recorded_requests) {
    asio::io_context io;
    lh::fake_transport t(io.get_executor());
    t.push(lh::fake_response::chunked(200, "data: a\n\ndata: b\n\n", 5, {{"Content-Type", "text/event-stream"}}));
    t.push({.status = 429, .headers = {{"Retry-After", "2"}}, .chunks = {"{\"e\":1}"}});
    BOOST_TEST(t.pending() == 2u);
    run(io, [&]() -> asio::awaitable<void> {
        lh::http_request req;
        req.url = "http://fake/v1/chat/completions";
        req.body = "first";
        auto r1 = co_await t.async_request(req, asio::use_awaitable);
        BOOST_TEST(r1.status() == 200u);
        BOOST_TEST(r1.header("content-TYPE") == "text/event-stream");
        std::vector<std::size_t> sizes;
        std::string body;
        std::array<char, 64> buf{};
        for (;;) {
            std::size_t n = co_await r1.async_read_some(asio::buffer(buf), asio::use_awaitable);
            if (n == 0) break;
            sizes.push_back(n);
            body.append(buf.data(), n);
        }
        BOOST_TEST(body == "data: a\n\ndata: b\n\n");
        BOOST_TEST(sizes == (std::vector<std::size_t>{5, 5, 5, 3}), boost::test_tools::per_element());
        BOOST_TEST(r1.done());
        req.body = "second";
        auto r2 = co_await t.async_request(req, asio::use_awaitable);
        BOOST_TEST(r2.status() == 429u);
        BOOST_TEST(r2.header("retry-after") == "2");
        auto [ec, text] = co_await lh::read_body(r2, 1 << 20);
        BOOST_TEST(!ec);
        BOOST_TEST(text == "{\"e\":1}");
    });
    auto reqs = t.requests();
    BOOST_REQUIRE(reqs.size() == 2u);
    BOOST_TEST(reqs[0].body == "first");
    BOOST_TEST(reqs[1].body == "second");
    BOOST_TEST(t.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(small_buffer_splits_a_chunk) {
    asio::io_context io;
    lh::fake_transport t(io.get_executor());
    t.push({.chunks = {"abcdefgh"}});
    run(io, [&]() -> asio::awaitable<void> {
        auto r = co_await t.async_request(empty_request, asio::use_awaitable);
        std::string body;
        { error_code read_ec = co_await read_all(r, body, 3); BOOST_TEST(!read_ec); }
        BOOST_TEST(body == "abcdefgh");
    });
}

BOOST_AUTO_TEST_CASE(failures_cut_streams_and_an_empty_script) {
    asio::io_context io;
    lh::fake_transport t(io.get_executor());
    t.push(lh::fake_response::failure(asio::error::connection_refused));
    auto cut = lh::fake_response::chunked(200, "data: partial", 4);
    cut.error_after_body = make_error_code(http_errc::truncated);
    t.push(cut);
    run(io, [&]() -> asio::awaitable<void> {
        error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        auto r1 = co_await t.async_request(empty_request, token);
        BOOST_TEST(ec == asio::error::connection_refused);
        ec = {};
        auto r2 = co_await t.async_request(empty_request, token);
        BOOST_REQUIRE(!ec);
        std::string body;
        error_code cut_ec = co_await read_all(r2, body);
        BOOST_TEST(cut_ec == http_errc::truncated);
        BOOST_TEST(body == "data: partial");
        BOOST_TEST(!r2.done());
        auto r3 = co_await t.async_request(empty_request, token);
        BOOST_TEST(ec == lb::errc::not_found);
        // A zero-size buffer is bad input, on the fake too.
        t.push({.chunks = {"x"}});
        ec = {};
        auto r4 = co_await t.async_request(empty_request, token);
        BOOST_REQUIRE(!ec);
        co_await r4.async_read_some(asio::mutable_buffer(), token);
        BOOST_TEST(ec == lb::errc::invalid_argument);
    });
    BOOST_TEST(t.requests().size() == 4u);
}

BOOST_AUTO_TEST_CASE(read_body_enforces_its_limit) {
    asio::io_context io;
    lh::fake_transport t(io.get_executor());
    t.push(lh::fake_response::chunked(500, std::string(100, 'e'), 10));
    t.push(lh::fake_response::chunked(500, std::string(100, 'e'), 10));
    run(io, [&]() -> asio::awaitable<void> {
        auto r = co_await t.async_request(empty_request, asio::use_awaitable);
        auto [ec, text] = co_await lh::read_body(r, 55);
        BOOST_TEST(ec == lb::errc::oversize);
        BOOST_TEST(text.size() <= 55u);
        auto r2 = co_await t.async_request(empty_request, asio::use_awaitable);
        auto [ec2, text2] = co_await lh::read_body(r2, 100); // exactly the limit: fine
        BOOST_TEST(!ec2);
        BOOST_TEST(text2.size() == 100u);
    });
}

BOOST_AUTO_TEST_SUITE_END()
