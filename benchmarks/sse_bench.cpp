// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// SSE parser throughput: an OpenAI-shaped stream (LF line ends, one data line per event) and
// an Anthropic-shaped one (event: + data:, CRLF), fed in 16 KiB reads as a socket gives them.
#include "event_mix.hpp"
#include "harness.hpp"

#include <libretto/http/sse_parser.hpp>

#include <algorithm>
#include <stdexcept>
#include <cstddef>
#include <string>
#include <string_view>

namespace {

std::string openai_stream(std::size_t bytes) {
    std::string s;
    for (int i = 0; s.size() < bytes; ++i)
        s += "data: {\"id\":\"chatcmpl-abc123\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
             "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token " +
             std::to_string(i) + "\"},\"finish_reason\":null}]}\n\n";
    s += "data: [DONE]\n\n";
    return s;
}

std::string anthropic_stream(std::size_t bytes) {
    std::string s;
    for (int i = 0; s.size() < bytes; ++i)
        s += "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
             "\"delta\":{\"type\":\"text_delta\",\"text\":\"token " +
             std::to_string(i) + "\"}}\r\n\r\n";
    return s;
}

double parse_mb_s(const std::string& stream, std::size_t read_size) {
    std::size_t events = 0, data_bytes = 0;
    const double secs = libretto_bench::best_seconds(5, [&] {
        libretto::http::sse_parser p;
        events = data_bytes = 0;
        const std::string_view all(stream);
        for (std::size_t off = 0; off < all.size(); off += read_size) {
            auto ec = p.feed(all.substr(off, read_size), [&](const libretto::http::sse_event& e) {
                ++events;
                data_bytes += e.data.size();
            });
            if (ec) throw std::runtime_error("sse_bench: " + ec.message());
        }
    });
    libretto_bench::do_not_optimize(events);
    libretto_bench::do_not_optimize(data_bytes);
    return static_cast<double>(stream.size()) / 1e6 / secs;
}

void bench_sse(libretto_bench::reporter& r) {
    constexpr std::size_t size = 64u << 20;
    if (r.wants("sse_parse_mb_s")) r.report("sse_parse_mb_s", parse_mb_s(openai_stream(size), 16 * 1024), "MB/s");
    if (r.wants("sse_parse_anthropic_mb_s"))
        r.report("sse_parse_anthropic_mb_s", parse_mb_s(anthropic_stream(size), 16 * 1024), "MB/s");
}

} // namespace

LIBRETTO_BENCHMARK(bench_sse, "sse_parse_mb_s", "sse_parse_anthropic_mb_s");
