// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target provider: what a model server sends back (provider/openai_protocol.hpp,
// anthropic_protocol.hpp, provider_error.hpp). The input is [mode: 1 byte][split seed or
// status: 4 bytes][bytes]; the mode picks:
//
//   0, 1  an OpenAI / Anthropic event stream (SSE bytes), read as the provider models read
//         it (sse_parser -> stream decoder, the end-of-body checks): fed whole and in chunks
//         cut where the seed says, the final responses are equal; the chunks the decoder
//         gave along the way fold (llm_response_accumulator) to that same response;
//   2, 3  an OpenAI / Anthropic whole body (decode_*_response);
//   4     an HTTP error body (classify_http_error with the status from the input);
//   5     Retry-After and retry-after-ms header values (two lines).
//
// Every response, whatever the bytes, is either a value or a failure with errc, finish
// error and a non-empty message; token counts are never negative; classified errors are one
// of transient, context_overflow, auth_failed, model_error; a Retry-After is within [0, 1 day].

#include "fuzz_support.hpp"

#include <libretto/http/error.hpp>
#include <libretto/http/sse_parser.hpp>
#include <libretto/provider/anthropic_protocol.hpp>
#include <libretto/provider/openai_protocol.hpp>
#include <libretto/provider/provider_error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace lb = libretto;
namespace http = libretto::http;

/// A call without an id gets a random "call-<uuid>" (named in an invalid call's error too):
/// the same placeholder on both sides.
void normalize_ids(lb::llm_response& r) {
    auto fix = [](std::string& id, std::string* text) {
        if (id.size() != 41 || !id.starts_with("call-")) return;
        if (text)
            for (std::size_t at = text->find(id); at != std::string::npos; at = text->find(id, at))
                text->replace(at, id.size(), "call-*");
        id = "call-*";
    };
    for (auto& p : r.parts)
        if (auto* c = std::get_if<lb::tool_call_part>(&p)) fix(c->tool_call_id, nullptr);
    for (auto& c : r.invalid_tool_calls) fix(c.id, &c.error);
}

std::string describe(const lb::llm_response& r) {
    std::string s = "finish " + std::string(lb::to_string(r.finish)) + ", " + std::to_string(r.parts.size()) +
                    " parts, " + std::to_string(r.invalid_tool_calls.size()) + " invalid calls, text '" +
                    fuzz::shown(r.text(), 80) + "'";
    if (r.error) s += ", error " + r.error.message() + ": " + fuzz::shown(r.error_message, 200);
    if (r.usage) s += ", usage " + std::to_string(r.usage->input_tokens) + "/" + std::to_string(r.usage->output_tokens);
    return s;
}

void check_response(const lb::llm_response& r, const char* what) {
    if (r.error) {
        FUZZ_CHECK(r.finish == lb::finish_reason::error, std::string(what) + ": failed with finish " +
                                                              std::string(lb::to_string(r.finish)));
        FUZZ_CHECK(!r.error_message.empty(), std::string(what) + ": a failure without a message (" +
                                                 r.error.message() + ")");
    } else {
        FUZZ_CHECK(r.finish != lb::finish_reason::error, std::string(what) + ": finish error without an error code");
        FUZZ_CHECK(r.error_message.empty(), std::string(what) + ": an error message without an error");
    }
    if (r.usage) {
        FUZZ_CHECK(r.usage->input_tokens >= 0 && r.usage->output_tokens >= 0,
                   std::string(what) + ": negative token counts: " + describe(r));
    }
    if (r.retry_after)
        FUZZ_CHECK(r.retry_after->count() >= 0 && r.retry_after->count() <= 24 * 3600 * 1000,
                   std::string(what) + ": retry_after out of [0, 1 day]");
    for (const auto& c : r.invalid_tool_calls) FUZZ_CHECK(!c.error.empty(), std::string(what) + ": an invalid call without a reason");
}

struct stream_result {
    lb::llm_response response;
    std::vector<lb::llm_chunk> chunks; // what the decoder gave along the way
};

/// As detail::http_generation reads a 2xx streamed body, one read per chunk.
template <class Decoder>
stream_result read_stream(const std::vector<std::string>& reads) {
    Decoder decoder;
    http::sse_parser sse;
    stream_result out;
    bool ended = true;
    for (const auto& data : reads) {
        const auto pec = sse.feed(data, [&](const http::sse_event& e) {
            if (decoder.done()) return;
            lb::llm_chunk c = decoder.feed(e.event, e.data);
            if (!c.empty()) out.chunks.push_back(std::move(c));
        });
        if (pec) decoder.fail(make_error_code(lb::errc::bad_response), "an SSE event exceeds max_event_size");
        if (decoder.done()) {
            ended = false;
            break;
        }
    }
    if (ended && !sse.idle() && !decoder.done())
        decoder.fail(make_error_code(http::http_errc::truncated), "the response body ended inside an SSE event");
    out.response = decoder.finish();
    normalize_ids(out.response);
    return out;
}

template <class Decoder>
void check_stream(std::string_view bytes, std::uint32_t seed, const char* what) {
    const stream_result whole = read_stream<Decoder>({std::string(bytes)});
    check_response(whole.response, what);
    const stream_result split = read_stream<Decoder>(fuzz::split(bytes, seed, 1 + seed % 61));
    FUZZ_CHECK(whole.response == split.response, std::string(what) + ": whole and split differ:\n     whole: " +
                                                     describe(whole.response) + "\n     split: " + describe(split.response));
    FUZZ_CHECK(whole.chunks == split.chunks, std::string(what) + ": whole and split gave different chunks");

    // What a caller saw streamed is what the final response says.
    lb::llm_response_accumulator acc;
    for (const auto& c : whole.chunks) acc.add(c);
    if (whole.response.error) acc.fail(whole.response.error, whole.response.error_message, whole.response.retry_after);
    lb::llm_response folded = std::move(acc).finish();
    normalize_ids(folded);
    FUZZ_CHECK(folded == whole.response, std::string(what) + ": the streamed chunks fold to another response:\n     final:  " +
                                             describe(whole.response) + "\n     folded: " + describe(folded));
}

void check_error_body(int status, std::string_view body) {
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'760'000'000));
    const lb::provider_error e = lb::classify_http_error(status, body, {}, {}, now);
    FUZZ_CHECK(e.code == lb::errc::transient || e.code == lb::errc::context_overflow || e.code == lb::errc::auth_failed ||
                   e.code == lb::errc::model_error,
               "an HTTP error classified as " + e.code.message());
    FUZZ_CHECK(e.http_status == status, "the status changed");
    FUZZ_CHECK(e.message.size() <= lb::max_provider_message_bytes + 3,
               "an unbounded message: " + std::to_string(e.message.size()) + " bytes");
    check_response(e.to_response(), "HTTP error");
    const lb::provider_error_body b = lb::parse_error_body(body, status);
    FUZZ_CHECK(b.structured || !b.message.empty(), "an error body read as nothing: " + fuzz::shown(body));
}

void check_retry_after(std::string_view bytes) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view after = bytes.substr(0, nl);
    const std::string_view after_ms = nl == std::string_view::npos ? std::string_view() : bytes.substr(nl + 1);
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'760'000'000));
    const auto r = lb::parse_retry_after(after, after_ms, now);
    if (r)
        FUZZ_CHECK(r->count() >= 0 && r->count() <= 24 * 3600 * 1000,
                   "Retry-After '" + fuzz::shown(after) + "' / '" + fuzz::shown(after_ms) + "' gave " +
                       std::to_string(r->count()) + " ms");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::input in(data, size);
    const std::uint8_t mode = in.byte();
    const std::uint32_t seed = in.u32();
    const std::string_view bytes = in.rest();
    switch (mode % 6) {
    case 0: check_stream<lb::openai_stream_decoder>(bytes, seed, "OpenAI stream"); break;
    case 1: check_stream<lb::anthropic_stream_decoder>(bytes, seed, "Anthropic stream"); break;
    case 2: check_response(lb::decode_openai_response(bytes), "OpenAI body"); break;
    case 3: check_response(lb::decode_anthropic_response(bytes), "Anthropic body"); break;
    case 4: check_error_body(static_cast<int>(seed % 600), bytes); break;
    default: check_retry_after(bytes); break;
    }
    return 0;
}
