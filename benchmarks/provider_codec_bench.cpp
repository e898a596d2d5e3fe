// Provider wire codecs: stream decoding per SSE event (OpenAI chunks, Anthropic events),
// against a plain json::parse of the same payloads, and request encoding.
#include "harness.hpp"

#include <libretto/provider/anthropic_protocol.hpp>
#include <libretto/provider/openai_protocol.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace libretto;

constexpr std::size_t stream_events = 1000;

/// A text reply as gpt-4o-mini streams it: one short token per chunk, every chunk with
/// the full envelope (id, created, model, system_fingerprint, ...).
std::vector<std::string> openai_text_stream() {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < stream_events; ++i)
        out.push_back(R"({"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" word)" +
                      std::to_string(i % 100) + R"("},"logprobs":null,"finish_reason":null}],"usage":null})");
    out.push_back(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null})");
    out.push_back("[DONE]");
    return out;
}

std::vector<std::string> anthropic_text_stream() {
    std::vector<std::string> out;
    out.push_back(R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":25,"output_tokens":1}}})");
    out.push_back(R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
    for (std::size_t i = 0; i < stream_events; ++i)
        out.push_back(R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word)" +
                      std::to_string(i % 100) + R"("}})");
    out.push_back(R"({"type":"content_block_stop","index":0})");
    out.push_back(R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1000}})");
    out.push_back(R"({"type":"message_stop"})");
    return out;
}

template <class Decoder>
double decode_ns_per_event(const std::vector<std::string>& events) {
    double ns = libretto_bench::ns_per_op([&] {
        Decoder d;
        for (const auto& e : events) {
            llm_chunk c = d.feed({}, e);
            libretto_bench::do_not_optimize(c);
        }
        llm_response r = d.finish();
        if (!r.ok()) std::fprintf(stderr, "decode failed: %s\n", r.error_message.c_str());
        libretto_bench::do_not_optimize(r);
    });
    return ns / static_cast<double>(events.size());
}

double parse_ns_per_event(const std::vector<std::string>& events) {
    double ns = libretto_bench::ns_per_op([&] {
        for (const auto& e : events) {
            if (e == "[DONE]") continue;
            boost::json::value v = boost::json::parse(e);
            libretto_bench::do_not_optimize(v);
        }
    });
    return ns / static_cast<double>(events.size());
}

void bench_provider_stream_decode(libretto_bench::reporter& r) {
    const auto openai = openai_text_stream();
    const auto anthropic = anthropic_text_stream();
    if (r.wants("openai_chunk_decode_ns")) r.report("openai_chunk_decode_ns", decode_ns_per_event<openai_stream_decoder>(openai), "ns");
    if (r.wants("openai_chunk_json_parse_ns")) r.report("openai_chunk_json_parse_ns", parse_ns_per_event(openai), "ns");
    if (r.wants("anthropic_event_decode_ns"))
        r.report("anthropic_event_decode_ns", decode_ns_per_event<anthropic_stream_decoder>(anthropic), "ns");
    if (r.wants("anthropic_event_json_parse_ns")) r.report("anthropic_event_json_parse_ns", parse_ns_per_event(anthropic), "ns");
}
LIBRETTO_BENCHMARK(bench_provider_stream_decode, "openai_chunk_decode_ns", "openai_chunk_json_parse_ns",
                   "anthropic_event_decode_ns", "anthropic_event_json_parse_ns");

/// One chunk carrying the most tool calls a reply may hold, each with its own index (the
/// accumulator once matched each index by a scan: quadratic in the number of calls).
std::vector<std::string> openai_many_tool_calls_stream() {
    std::string chunk = R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[)";
    for (std::size_t i = 0; i < max_tool_calls; ++i) {
        if (i) chunk += ',';
        const std::string n = std::to_string(i);
        chunk += R"({"index":)" + n + R"(,"id":"call_)" + n + R"(","type":"function","function":{"name":"search","arguments":"{\"q\":\")" + n + R"(\"}"}})";
    }
    chunk += R"(]},"finish_reason":null}]})";
    return {chunk, R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})",
            "[DONE]"};
}

void bench_openai_many_tool_calls(libretto_bench::reporter& r) {
    const auto events = openai_many_tool_calls_stream();
    std::size_t calls = 0;
    const double ns = libretto_bench::ns_per_op([&] {
        openai_stream_decoder d;
        for (const auto& e : events) {
            llm_chunk c = d.feed({}, e);
            libretto_bench::do_not_optimize(c);
        }
        llm_response resp = d.finish();
        calls = resp.tool_calls().size();
        libretto_bench::do_not_optimize(resp);
    });
    if (calls != max_tool_calls) std::fprintf(stderr, "decoded %zu tool calls, not %zu\n", calls, max_tool_calls);
    r.report("openai_stream_many_tool_calls_ms", ns / 1e6, "ms");
}
LIBRETTO_BENCHMARK(bench_openai_many_tool_calls, "openai_stream_many_tool_calls_ms");

/// A 40-turn conversation with tool calls, as an agent sends it mid-session.
llm_request conversation() {
    llm_request req;
    req.model = "m";
    req.system_instruction = std::string(2000, 's');
    for (int i = 0; i < 40; ++i) {
        req.messages.push_back(message::user("Question " + std::to_string(i) + ": " + std::string(300, 'q')));
        message a;
        a.role = message_role::assistant;
        a.parts.emplace_back(text_part{std::string(200, 'a'), {}});
        a.parts.emplace_back(tool_call_part{"call_" + std::to_string(i), "search", {{"query", std::string(50, 'x')}}, {}});
        req.messages.push_back(std::move(a));
        message t;
        t.role = message_role::tool;
        t.parts.emplace_back(tool_response_part{"call_" + std::to_string(i), "search",
                                                boost::json::value({{"hits", std::string(1000, 'h')}}), std::nullopt, {}});
        req.messages.push_back(std::move(t));
    }
    for (int i = 0; i < 10; ++i)
        req.tools.push_back({"tool" + std::to_string(i), "does things",
                             boost::json::parse(R"({"type":"object","properties":{"a":{"type":"string"}}})").as_object(), false});
    return req;
}

void bench_provider_encode(libretto_bench::reporter& r) {
    const llm_request req = conversation();
    std::size_t bytes = 0;
    if (r.wants("openai_encode_request_us") || r.wants("openai_encode_request_mb_s")) {
        openai_options o;
        double ns = libretto_bench::ns_per_op([&] {
            std::string body = encode_request(req, o);
            bytes = body.size();
            libretto_bench::do_not_optimize(body);
        });
        r.report("openai_encode_request_us", ns / 1000, "us");
        r.report("openai_encode_request_mb_s", static_cast<double>(bytes) / ns * 1000, "MB/s");
    }
    if (r.wants("anthropic_encode_request_us")) {
        anthropic_options o;
        double ns = libretto_bench::ns_per_op([&] {
            std::string body = encode_request(req, o);
            bytes = body.size();
            libretto_bench::do_not_optimize(body);
        });
        r.report("anthropic_encode_request_us", ns / 1000, "us");
    }
}
LIBRETTO_BENCHMARK(bench_provider_encode, "openai_encode_request_us", "openai_encode_request_mb_s",
                   "anthropic_encode_request_us");

} // namespace
