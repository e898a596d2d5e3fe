// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// HTTP transport cost per streamed reply: beast_transport over a kept-alive loopback
// connection to tests/llm_test_server.hpp, reading a ~1 KB OpenAI-shaped SSE reply (written
// in 256-byte pieces) and parsing it; against the same exchange done with a blocking raw
// socket (the loopback round trip plus the server's own work: the floor).
#include "harness.hpp"

#include "../tests/llm_test_server.hpp"

#include <libretto/http/beast_transport.hpp>
#include <libretto/http/sse_parser.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <chrono>
#include <stdexcept>
#include <string>

namespace {

namespace asio = boost::asio;
namespace lh = libretto::http;
using clock_type = std::chrono::steady_clock;

llm_test::reply one_kb_reply() {
    llm_test::reply_description d;
    for (int i = 0; i < 8; ++i) d.text.push_back(std::string(60, static_cast<char>('a' + i)));
    return llm_test::openai_stream(d).in_pieces(256);
}

lh::http_request make_request(const llm_test::server& srv) {
    lh::http_request r;
    r.url = srv.base_url() + "/v1/chat/completions";
    r.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer sk-bench"}};
    r.body = R"({"model":"test-model","stream":true,"messages":[{"role":"user","content":"hi"}]})";
    return r;
}

asio::awaitable<void> run_requests(lh::beast_transport<>& t, lh::http_request proto, int n, std::size_t& events,
                                   std::size_t& bytes) {
    std::array<char, 16 * 1024> buf{};
    for (int i = 0; i < n; ++i) {
        lh::http_request req = proto;
        auto res = co_await t.async_request(std::move(req), asio::use_awaitable);
        lh::sse_parser parser;
        for (;;) {
            const std::size_t got = co_await res.async_read_some(asio::buffer(buf), asio::use_awaitable);
            if (got == 0) break;
            bytes += got;
            auto ec = parser.feed({buf.data(), got}, [&](const lh::sse_event&) { ++events; });
            if (ec) throw std::runtime_error("http_bench: " + ec.message());
        }
    }
}

double transport_us(llm_test::server& srv, int n) {
    asio::io_context io;
    lh::beast_transport<> t(io.get_executor());
    std::size_t events = 0, bytes = 0;
    auto proto = make_request(srv);
    // Warm-up: opens the kept-alive connection.
    asio::co_spawn(io, run_requests(t, proto, 10, events, bytes), asio::detached);
    io.run();
    io.restart();
    events = bytes = 0;
    const auto t0 = clock_type::now();
    asio::co_spawn(io, run_requests(t, proto, n, events, bytes), asio::detached);
    io.run();
    const double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / n;
    if (events != static_cast<std::size_t>(n) * 11 || t.connections_opened() != 1)
        throw std::runtime_error("http_bench: unexpected events or connections");
    return us;
}

double raw_us(llm_test::server& srv, int n) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), srv.port()});
    s.set_option(asio::ip::tcp::no_delay(true));
    const auto req = make_request(srv);
    const std::string wire = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Authorization: Bearer sk-bench\r\nContent-Length: " +
                             std::to_string(req.body.size()) + "\r\n\r\n" + req.body;
    std::string in;
    std::array<char, 16 * 1024> buf{};
    auto once = [&] {
        asio::write(s, asio::buffer(wire));
        in.clear();
        while (!in.ends_with("0\r\n\r\n")) in.append(buf.data(), s.read_some(asio::buffer(buf)));
    };
    for (int i = 0; i < 10; ++i) once();
    const auto t0 = clock_type::now();
    for (int i = 0; i < n; ++i) once();
    return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / n;
}

void bench_http(libretto_bench::reporter& r) {
    llm_test::server srv;
    srv.set_default(one_kb_reply());
    constexpr int n = 2000;
    double best_t = 1e300, best_raw = 1e300;
    for (int round = 0; round < 3; ++round) {
        if (r.wants("provider_request_overhead_us")) best_t = std::min(best_t, transport_us(srv, n));
        if (r.wants("provider_raw_round_trip_us")) best_raw = std::min(best_raw, raw_us(srv, n));
    }
    r.report("provider_request_overhead_us", best_t, "us");
    r.report("provider_raw_round_trip_us", best_raw, "us");
}

} // namespace

LIBRETTO_BENCHMARK(bench_http, "provider_request_overhead_us", "provider_raw_round_trip_us");
