// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/provider/provider_error.hpp>
#include <libretto/model/retry.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace lb = libretto;
using lb::errc;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

/// A generator that returns a fixed value: min() → fraction 0, max() → fraction just below 1.
struct fixed_random {
    using result_type = std::uint32_t;
    result_type value;
    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
    result_type operator()() { return value; }
};

std::chrono::system_clock::time_point at(int y, unsigned mo, unsigned d, int h, int mi, int s) {
    using namespace std::chrono;
    return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

} // namespace

BOOST_AUTO_TEST_SUITE(overflow_messages)

// Every phrasing pi-ai and OpenClaw recognise (pi-ai's isContextOverflow and
// OpenClaw's overflow recovery), pi-ai's documented examples per provider, and both
// providers' own messages and codes.
BOOST_AUTO_TEST_CASE(every_known_phrasing_is_overflow) {
    const std::vector<std::string_view> messages = {
        // pi-ai's list
        "prompt is too long: 213462 tokens > 200000 maximum",                                  // Anthropic
        "request_too_large",                                                                    // Anthropic 413 type
        "Your input exceeds the context window of this model",                                  // OpenAI
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens", // OpenAI
        "prompt too long; exceeded max context length by 12 tokens",                            // Ollama's hosted service
        "prompt too long; exceeded context length by 12 tokens",                                // Ollama's hosted service (older)
        "400 status code (no body)",                                                            // Cerebras
        "413 (no body)",                                                                        // Cerebras
        // OpenClaw's list
        "context length exceeded",
        "The input exceeds the maximum number of tokens",
        "input token count exceeds the maximum number of input tokens",
        "input is too long for the model",
        "ollama error: context length exceeded",
        // pi-ai's per-provider examples
        "input is too long for requested model",                                                // Bedrock
        "Requested token count exceeds the model's maximum context length of 131,072 tokens",   // LiteLLM
        "Input length (265330) exceeds model's maximum context length (262144).",               // proxies
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)", // Gemini
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens",  // xAI
        "Please reduce the length of the messages or completion",                               // Groq
        "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens", // OpenRouter
        "Input length 5000 exceeds the maximum allowed input length of 4096 tokens.",           // Poolside
        "The input (5000 tokens) is longer than the model's context length (4096 tokens).",     // Together
        "prompt token count of 9000 exceeds the limit of 8192",                                 // Copilot
        "the request exceeds the available context size, try increasing it",                    // llama.cpp
        "input is larger than the max context size. skipping",                                  // older llama.cpp
        "tokens to keep from the initial prompt is greater than the context length",            // LM Studio
        "invalid params, context window exceeds limit",                                         // MiniMax
        "Your request exceeded model token limit: 8192 (requested: 9000)",                      // Kimi
        "Prompt contains 9000 tokens ... too large for model with 8192 maximum context length", // Mistral
        "prompt has 9,000 tokens, but the configured context size is 8,192 tokens",             // DS4
        "model_context_window_exceeded",                                                        // z.ai
        "Range of input length should be [1, 30720]",                                           // DashScope
        "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",    // vLLM
        "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again", // Anthropic
        "context_length_exceeded",                                                              // OpenAI code
        "Too many tokens in the request",                                                       // generic
        "token limit exceeded",                                                                 // generic
        "PROMPT IS TOO LONG",                                                                   // case
    };
    for (auto m : messages) BOOST_TEST(lb::is_context_overflow_message(m), m);
}

BOOST_AUTO_TEST_CASE(rate_limits_and_other_errors_are_not_overflow) {
    const std::vector<std::string_view> messages = {
        "Throttling error: Too many tokens, please wait before trying again.",
        "Service unavailable: too many tokens queued",
        "rate limit exceeded, too many tokens",
        "Too many requests: too many tokens",
        "Invalid API key",
        "model 'gpt-9' not found",
        "maximum context length is unknown tokens", // `#` needs digits
        "500 status code (no body)",                // only 400/413 are Cerebras' overflow
        "error 400 (no body)",                      // ^ anchors at the start
        "",
        "Overloaded",
    };
    for (auto m : messages) BOOST_TEST(!lb::is_context_overflow_message(m), m);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(error_bodies)

BOOST_AUTO_TEST_CASE(openai_error_body) {
    auto b = lb::parse_error_body(
        R"({"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})");
    BOOST_TEST(b.structured);
    BOOST_TEST(b.type == "invalid_request_error");
    BOOST_TEST(b.code == "context_length_exceeded");
    BOOST_TEST(b.message == "This model's maximum context length is 128000 tokens.");
    BOOST_TEST(b.status == 0);
}

BOOST_AUTO_TEST_CASE(anthropic_error_body) {
    auto b = lb::parse_error_body(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"})");
    BOOST_TEST(b.structured);
    BOOST_TEST(b.type == "overloaded_error");
    BOOST_TEST(b.message == "Overloaded");
}

BOOST_AUTO_TEST_CASE(compatible_server_bodies) {
    auto llama = lb::parse_error_body(R"({"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}})");
    BOOST_TEST(llama.status == 400);
    BOOST_TEST(llama.type == "exceed_context_size_error");
    auto ollama = lb::parse_error_body(R"({"error":"model \"llama9\" not found, try pulling it first"})");
    BOOST_TEST(ollama.structured);
    BOOST_TEST(ollama.message == "model \"llama9\" not found, try pulling it first");
    auto vllm = lb::parse_error_body(R"({"object":"error","message":"bad schema","type":"BadRequestError","param":null,"code":400})");
    BOOST_TEST(vllm.message == "bad schema");
    BOOST_TEST(vllm.status == 400);
    auto fastapi = lb::parse_error_body(R"({"detail":"Not Found"})");
    BOOST_TEST(fastapi.message == "Not Found");
}

// Express servers (@dwmkerr/mock-llm's 404 and 500 among them): the string under "error" is
// the type, "message" the message, "status" the status.
BOOST_AUTO_TEST_CASE(express_bodies) {
    auto b = lb::parse_error_body(R"({"error":"Not Found","message":"Cannot POST /v2/chat/completions","status":404})");
    BOOST_TEST(b.structured);
    BOOST_TEST(b.type == "Not Found");
    BOOST_TEST(b.message == "Cannot POST /v2/chat/completions");
    BOOST_TEST(b.status == 404);
    auto e = lb::classify_http_error(404, R"({"error":"Not Found","message":"Cannot POST /v2/chat/completions","status":404})");
    BOOST_TEST(e.describe() == "HTTP 404 (Not Found): Cannot POST /v2/chat/completions");
    BOOST_TEST(e.code == errc::model_error);
    auto crash = lb::classify_http_error(500, R"j({"error":"TypeError","message":"Cannot read properties of null (reading 'length')","status":500})j");
    BOOST_TEST(crash.describe() == "HTTP 500 (TypeError): Cannot read properties of null (reading 'length')");
    BOOST_TEST(crash.code == errc::transient);
    // A status out of range is not one.
    BOOST_TEST(lb::parse_error_body(R"({"error":"x","message":"y","status":7})").status == 0);
}

BOOST_AUTO_TEST_CASE(unstructured_bodies_fall_back_to_bounded_text) {
    auto html = lb::parse_error_body("<html><body>502 Bad Gateway</body></html>");
    BOOST_TEST(!html.structured);
    BOOST_TEST(html.message == "<html><body>502 Bad Gateway</body></html>");
    auto other_json = lb::parse_error_body(R"({"unexpected":true})");
    BOOST_TEST(!other_json.structured);
    BOOST_TEST(other_json.message == R"({"unexpected":true})");
    std::string big(5000, 'x');
    big.replace(998, 3, "\xE2\x82\xAC"); // a euro sign straddling the 1000-byte limit
    auto bounded = lb::parse_error_body(big);
    BOOST_TEST(bounded.message.size() == 998 + 3);
    BOOST_TEST(bounded.message.substr(998) == "...");
    auto empty = lb::parse_error_body("  \r\n", 413);
    BOOST_TEST(empty.message == "413 status code (no body)");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(classification)

BOOST_AUTO_TEST_CASE(statuses) {
    BOOST_TEST(lb::classify_http_error(429, R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(408, "").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(409, "").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(500, "oops").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(502, "<html>bad gateway</html>").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(503, "").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})").code == errc::transient);
    BOOST_TEST(lb::classify_http_error(401, R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})").code == errc::auth_failed);
    BOOST_TEST(lb::classify_http_error(403, R"({"type":"error","error":{"type":"permission_error","message":"no access"}})").code == errc::auth_failed);
    BOOST_TEST(lb::classify_http_error(400, R"({"error":{"message":"Invalid schema for function 'f'","type":"invalid_request_error"}})").code == errc::model_error);
    BOOST_TEST(lb::classify_http_error(404, R"({"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}})").code == errc::model_error);
    BOOST_TEST(lb::classify_http_error(422, "{}").code == errc::model_error);
    BOOST_TEST(lb::classify_http_error(302, "").code == errc::model_error);
}

BOOST_AUTO_TEST_CASE(overflow_by_message_code_or_type) {
    auto openai = lb::classify_http_error(
        400, R"({"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}})");
    BOOST_TEST(openai.code == errc::context_overflow);
    BOOST_TEST(openai.provider_code == "context_length_exceeded");
    // The code alone is enough.
    BOOST_TEST(lb::classify_http_error(400, R"({"error":{"message":"too big","code":"context_length_exceeded"}})").code == errc::context_overflow);
    auto anthropic = lb::classify_http_error(
        400, R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}})");
    BOOST_TEST(anthropic.code == errc::context_overflow);
    BOOST_TEST(anthropic.message == "prompt is too long: 213462 tokens > 200000 maximum");
    BOOST_TEST(anthropic.describe() == "HTTP 400 (invalid_request_error): prompt is too long: 213462 tokens > 200000 maximum");
    BOOST_TEST(lb::classify_http_error(413, R"({"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}})").code == errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(413, "").code == errc::context_overflow); // Cerebras
    BOOST_TEST(lb::classify_http_error(400, "").code == errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(500, R"({"error":{"code":500,"message":"the request exceeds the available context size"}})").code == errc::context_overflow);
}

BOOST_AUTO_TEST_CASE(a_429_is_never_overflow_and_quota_is_not_transient) {
    // OpenAI's tokens-per-minute limit mentions tokens; waiting fixes it.
    BOOST_TEST(lb::classify_http_error(429, R"j({"error":{"message":"Request too large: too many tokens per min (TPM)","code":"rate_limit_exceeded"}})j").code == errc::transient);
    auto quota = lb::classify_http_error(429, R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}})");
    BOOST_TEST(quota.code == errc::model_error);
    BOOST_TEST(quota.message == "You exceeded your current quota");
}

BOOST_AUTO_TEST_CASE(stream_errors_by_type) {
    auto overloaded = lb::classify_stream_error(lb::parse_error_body(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
    BOOST_TEST(overloaded.code == errc::transient);
    BOOST_TEST(overloaded.http_status == 0);
    BOOST_TEST(overloaded.describe() == "provider error (overloaded_error): Overloaded");
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"({"error":{"message":"The server had an error","type":"server_error"}})")).code == errc::transient);
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"({"type":"error","error":{"type":"api_error","message":"Internal"}})")).code == errc::transient);
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"({"error":{"message":"boom","type":"x","code":503}})")).code == errc::transient);
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}})")).code == errc::context_overflow);
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"({"type":"error","error":{"type":"invalid_request_error","message":"bad"}})")).code == errc::model_error);
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"({"type":"error","error":{"type":"authentication_error","message":"bad key"}})")).code == errc::auth_failed);
    auto empty = lb::classify_stream_error(lb::provider_error_body{});
    BOOST_TEST(empty.message == "(no message)");
}

BOOST_AUTO_TEST_CASE(to_response_carries_code_message_and_retry_after) {
    auto e = lb::classify_http_error(429, R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})", "7");
    auto r = e.to_response();
    BOOST_TEST(!r.ok());
    BOOST_TEST(r.finish == lb::finish_reason::error);
    BOOST_TEST(r.error == errc::transient);
    BOOST_TEST(lb::is_transient(r.error));
    BOOST_TEST(r.error_message == "HTTP 429 (rate_limit_error): slow down");
    BOOST_REQUIRE(r.retry_after.has_value());
    BOOST_TEST(r.retry_after->count() == 7000);
}

BOOST_AUTO_TEST_SUITE_END()

// The bodies the servers people run write, as their sources write them (the comment names the
// repository and file). Each is classified as what would fix it: compaction, a changed
// parameter, waiting, or nothing.
BOOST_AUTO_TEST_SUITE(servers_as_their_sources_show)

BOOST_AUTO_TEST_CASE(ollama) {
    // ollama/ollama runner/ollamarunner/runner.go (errorInputTooLong, http.Error 400) through
    // server/routes.go's {"error": ...}.
    auto runner = lb::classify_http_error(400, R"j({"error":"the input length exceeds the context length"})j");
    BOOST_TEST(runner.code == errc::context_overflow);
    BOOST_TEST(runner.message == "the input length exceeds the context length");
    // server/routes.go, embeddings.
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":"input exceeds maximum context length and cannot be truncated further"})j").code ==
               errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":"input after truncation exceeds maximum context length"})j").code ==
               errc::context_overflow);
    // llm/llama_server.go passes llama-server's 400 body through as the error string: the
    // body inside is read, its type and message kept.
    auto passed = lb::classify_http_error(
        400, R"j({"error":"{\"error\":{\"code\":400,\"message\":\"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":9000,\"n_ctx\":8192}}"})j");
    BOOST_TEST(passed.code == errc::context_overflow);
    BOOST_TEST(passed.type == "exceed_context_size_error");
    BOOST_TEST(passed.message == "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it");
    // A string that only looks like JSON stays the message.
    auto odd = lb::parse_error_body(R"j({"error":"{not json"})j");
    BOOST_TEST(odd.message == "{not json");
    BOOST_TEST(odd.structured);
    // openai/openai.go: the OpenAI layer's body (type from the status, code null).
    auto layer = lb::classify_http_error(
        400, R"j({"error":{"message":"the input length exceeds the context length","type":"invalid_request_error","param":null,"code":null}})j");
    BOOST_TEST(layer.code == errc::context_overflow);
    auto missing = lb::classify_http_error(404, R"j({"error":{"message":"model \"llama9\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}})j");
    BOOST_TEST(missing.code == errc::model_error);
    BOOST_TEST(missing.type == "not_found_error");
    BOOST_TEST(missing.message == "model \"llama9\" not found, try pulling it first");
}

BOOST_AUTO_TEST_CASE(llama_cpp_server) {
    // ggml-org/llama.cpp tools/server/server-context.cpp (res error: {"error": error_data},
    // status from its code) with server-common.cpp format_error_response's types.
    auto overflow = lb::classify_http_error(
        400, R"j({"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}})j");
    BOOST_TEST(overflow.code == errc::context_overflow);
    BOOST_TEST(overflow.type == "exceed_context_size_error");
    // The type alone decides, whatever the wording.
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":{"code":400,"message":"too big","type":"exceed_context_size_error"}})j").code ==
               errc::context_overflow);
    // Older wordings (same file, earlier versions).
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":{"code":400,"message":"input (9000 tokens) is larger than the max context size (8192 tokens). skipping","type":"exceed_context_size_error"}})j").code ==
               errc::context_overflow);
    // During generation the context fills: a server_error whose message says so.
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"j({"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}})j")).code ==
               errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(503, R"j({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})j").code == errc::transient);
    BOOST_TEST(lb::classify_stream_error(lb::parse_error_body(R"j({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})j")).code ==
               errc::transient);
    BOOST_TEST(lb::classify_http_error(401, R"j({"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}})j").code ==
               errc::auth_failed);
}

BOOST_AUTO_TEST_CASE(vllm) {
    // vllm-project/vllm vllm/entrypoints/openai/serving_engine.py (_validate_input) with
    // protocol.py's ErrorResponse: overflow of the messages.
    auto overflow = lb::classify_http_error(
        400, R"j({"error":{"message":"This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":"input_tokens","code":400}})j");
    BOOST_TEST(overflow.code == errc::context_overflow);
    // Older flat body, older wording.
    BOOST_TEST(lb::classify_http_error(400, R"j({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 4118 tokens (3118 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400})j").code ==
               errc::context_overflow);
    // max_tokens too large names "maximum context length is N tokens" too, but it is the
    // parameter that must change: invalid_argument, not a compaction.
    auto max_tokens = lb::classify_http_error(
        400, R"j({"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 16384. This model's maximum context length is 65536 tokens and your request has 52189 input tokens (16384 > 65536 - 52189). (parameter=max_tokens, value=16384)","type":"BadRequestError","param":"max_tokens","code":400}})j");
    BOOST_TEST(max_tokens.code == errc::invalid_argument);
    BOOST_TEST(max_tokens.message.find("'max_tokens' or 'max_completion_tokens' is too large: 16384") == 0u);
    // vllm/v1/engine/processor.py.
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":{"message":"The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}})j").code ==
               errc::context_overflow);
}

BOOST_AUTO_TEST_CASE(openai) {
    // A single request larger than the tokens-per-minute limit: a 429 that waiting never
    // lets through (type "tokens", code rate_limit_exceeded), as reported against the API.
    auto tpm = lb::classify_http_error(
        429, R"j({"error":{"message":"Request too large for gpt-4o in organization org-a1b2c3 on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}})j",
        "7");
    BOOST_TEST(tpm.code == errc::model_error);
    BOOST_TEST(!lb::is_transient(tpm.code));
    BOOST_TEST(tpm.message.find("Request too large for gpt-4o") == 0u);
    // The ordinary rate limit of the same account is retried.
    BOOST_TEST(lb::classify_http_error(429, R"j({"error":{"message":"Rate limit reached for gpt-4o in organization org-a1b2c3 on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 1s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}})j").code ==
               errc::transient);
}

BOOST_AUTO_TEST_CASE(anthropic_rejected_sampling_parameters) {
    // Rejected parameters, as the API answers them (400 invalid_request_error).
    auto both = lb::classify_http_error(
        400, R"j({"type":"error","error":{"type":"invalid_request_error","message":"temperature and top_p cannot both be specified for this model. Please use only one."},"request_id":"req_1"})j");
    BOOST_TEST(both.code == errc::invalid_argument);
    BOOST_TEST(both.describe() == "HTTP 400 (invalid_request_error): temperature and top_p cannot both be specified for this model. Please use only one.");
    BOOST_TEST(lb::classify_http_error(400, R"j({"type":"error","error":{"type":"invalid_request_error","message":"`temperature` is deprecated for this model."}})j").code ==
               errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(openai_rejected_sampling_parameters) {
    // Reasoning models and the default-only temperature, as the API answers (code unsupported_value).
    auto temp = lb::classify_http_error(
        400, R"j({"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}})j");
    BOOST_TEST(temp.code == errc::invalid_argument);
    BOOST_TEST(temp.message.find("'temperature'") != std::string::npos);
    // The wording alone (a proxy that drops the code), and the code alone.
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":{"message":"Unsupported value: 'top_p' does not support 0.5 with this model."}})j").code ==
               errc::invalid_argument);
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":{"message":"no","code":"unsupported_parameter"}})j").code == errc::invalid_argument);
    BOOST_TEST(lb::classify_http_error(400, R"j({"message":"invalid temperature: only 1 is allowed for this model","type":"invalid_request_error"})j").code ==
               errc::invalid_argument);
    // Not anchored elsewhere: a message that merely quotes the phrase later is not one.
    BOOST_TEST(!lb::is_rejected_parameter_message("the tool said: unsupported value: 'x'"));
}

BOOST_AUTO_TEST_CASE(lm_studio) {
    // 400 with the message as a string.
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."})j").code ==
               errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":"Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded with context length of only 32768 tokens, which is not enough."})j").code ==
               errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":"Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)"})j").code ==
               errc::context_overflow);
    BOOST_TEST(lb::classify_http_error(400, R"j({"error":"Context size has been exceeded."})j").code == errc::context_overflow);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(retry_after)

BOOST_AUTO_TEST_CASE(delta_seconds_and_milliseconds) {
    BOOST_TEST(lb::parse_retry_after("120")->count() == 120000);
    BOOST_TEST(lb::parse_retry_after(" 0 ")->count() == 0);
    BOOST_TEST(lb::parse_retry_after("1.5")->count() == 1500);
    BOOST_TEST(lb::parse_retry_after("20", "250")->count() == 250); // retry-after-ms wins
    BOOST_TEST(lb::parse_retry_after("", "1500.7")->count() == 1500);
    BOOST_TEST(lb::parse_retry_after("3", "soon")->count() == 3000);     // a bad -ms falls back
    BOOST_TEST(lb::parse_retry_after("99999999999")->count() == 24LL * 3600 * 1000); // capped at a day
}

BOOST_AUTO_TEST_CASE(http_dates_in_all_three_formats) {
    auto now = at(1994, 11, 6, 8, 49, 0);
    BOOST_TEST(lb::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", {}, now)->count() == 37000);
    BOOST_TEST(lb::parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", {}, now)->count() == 37000);
    BOOST_TEST(lb::parse_retry_after("Sun Nov  6 08:49:37 1994", {}, now)->count() == 37000);
    BOOST_TEST(lb::parse_retry_after("Sun, 06 Nov 1994 08:50:00 GMT", {}, now)->count() == 60000);
    // In the past: retry now.
    BOOST_TEST(lb::parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", {}, now)->count() == 0);
    auto later = at(2030, 1, 1, 0, 0, 0);
    BOOST_TEST(lb::parse_retry_after("Tue, 01 Jan 2030 00:00:05 GMT", {}, later)->count() == 5000);
    BOOST_TEST(lb::parse_retry_after("Tuesday, 01-Jan-30 00:00:05 GMT", {}, later)->count() == 5000);
}

BOOST_AUTO_TEST_CASE(bad_values_give_nothing) {
    BOOST_TEST(!lb::parse_retry_after(""));
    BOOST_TEST(!lb::parse_retry_after("-5"));
    BOOST_TEST(!lb::parse_retry_after("+5"));
    BOOST_TEST(!lb::parse_retry_after("5s"));
    BOOST_TEST(!lb::parse_retry_after("."));
    BOOST_TEST(!lb::parse_retry_after("soon"));
    BOOST_TEST(!lb::parse_retry_after("Sun, 31 Feb 1994 08:49:37 GMT"));  // no such day
    BOOST_TEST(!lb::parse_retry_after("Sun, 06 Nov 1994 25:49:37 GMT"));  // no such hour
    BOOST_TEST(!lb::parse_retry_after("Sun, 06 Foo 1994 08:49:37 GMT"));  // no such month
    BOOST_TEST(!lb::parse_retry_after("Sun, 06 Nov 1994 08:49:37 CET"));  // not GMT
    BOOST_TEST(!lb::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT x"));
    BOOST_TEST(!lb::parse_retry_after("Sun Nov  6 08:49:37"));            // asctime without year
}

// Every path gives a value from 0 to the cap (one day = 86400000 ms), never a wrapped one.
BOOST_AUTO_TEST_CASE(extremes_saturate) {
    constexpr std::int64_t day_ms = 86'400'000;
    // delta-seconds: more digits than an int64 (or a double) holds.
    BOOST_TEST(lb::parse_retry_after("99999999999999999999")->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after(std::string(400, '9'))->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after(std::string(400, '9') + ".5")->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("86400")->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("86399.5")->count() == 86'399'500);
    BOOST_TEST(lb::parse_retry_after("0.0000001")->count() == 0);
    // retry-after-ms: huge, at the cap, negative and garbage (the last two fall back).
    BOOST_TEST(lb::parse_retry_after("", "99999999999999999999")->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("", std::string(400, '9'))->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("", "86399999")->count() == 86'399'999);
    BOOST_TEST(lb::parse_retry_after("", "86400001")->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("3", "-5")->count() == 3000);
    BOOST_TEST(!lb::parse_retry_after("", "-5"));
    BOOST_TEST(!lb::parse_retry_after("", "-99999999999999999999"));
    BOOST_TEST(lb::parse_retry_after("3", "1e3")->count() == 3000);
    BOOST_TEST(lb::parse_retry_after("3", "0x10")->count() == 3000);
    BOOST_TEST(!lb::parse_retry_after("", "NaN"));
    BOOST_TEST(!lb::parse_retry_after("", "inf"));
    BOOST_TEST(!lb::parse_retry_after("-99999999999999999999"));

    // HTTP-dates outside the nanosecond clock's 1678-2262 range.
    const auto now = at(2024, 1, 1, 0, 0, 0);
    BOOST_TEST(lb::parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", {}, now)->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("Fri Dec 31 23:59:59 9999", {}, now)->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("Sat, 01 Jan 2263 00:00:00 GMT", {}, now)->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("Sat, 01 Jan 1600 00:00:00 GMT", {}, now)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Sat, 01 Jan 0000 00:00:00 GMT", {}, now)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, now)->count() == 0);
    // Around now: exactly now, one second, the cap and one second over it.
    BOOST_TEST(lb::parse_retry_after("Mon, 01 Jan 2024 00:00:00 GMT", {}, now)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Mon, 01 Jan 2024 00:00:01 GMT", {}, now)->count() == 1000);
    BOOST_TEST(lb::parse_retry_after("Sun, 31 Dec 2023 23:59:59 GMT", {}, now)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Mon, 01 Jan 2024 23:59:59 GMT", {}, now)->count() == 86'399'000);
    BOOST_TEST(lb::parse_retry_after("Tue, 02 Jan 2024 00:00:00 GMT", {}, now)->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("Tue, 02 Jan 2024 00:00:01 GMT", {}, now)->count() == day_ms);
    // The Unix epoch as the date, and as now (a clock before it, with a fraction of a millisecond).
    const std::chrono::system_clock::time_point epoch{};
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, epoch)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:07 GMT", {}, epoch)->count() == 7000);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, epoch - 1500ms)->count() == 1500);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, epoch - 2500us)->count() == 2);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, epoch - 500us)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, epoch + 500us)->count() == 0);
    // A now with a fraction of a millisecond: the difference is truncated (4.99975 s).
    BOOST_TEST(lb::parse_retry_after("Mon, 01 Jan 2024 00:00:05 GMT", {}, now + 250us)->count() == 4999);
    // The clock's own extremes as now.
    const auto latest = std::chrono::system_clock::time_point::max();  // 2262-04-11
    const auto earliest = std::chrono::system_clock::time_point::min(); // 1677-09-21
    BOOST_TEST(lb::parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", {}, latest)->count() == day_ms);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, latest)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Sat, 01 Jan 1600 00:00:00 GMT", {}, earliest)->count() == 0);
    BOOST_TEST(lb::parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", {}, earliest)->count() == day_ms);
    // classify_http_error takes the same path.
    auto e = lb::classify_http_error(503, "", "Fri, 31 Dec 9999 23:59:59 GMT", {}, now);
    BOOST_REQUIRE(e.retry_after.has_value());
    BOOST_TEST(e.retry_after->count() == day_ms);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(retry_options_suite)

BOOST_AUTO_TEST_CASE(no_jitter_doubles_up_to_the_cap) {
    lb::retry_options o{.max_attempts = 10, .initial_delay = 100ms, .multiplier = 2.0, .max_delay = 1000ms,
                        .jitter = lb::retry_jitter::none};
    fixed_random g{0};
    std::vector<std::int64_t> got;
    for (std::size_t a = 1; a < 10; ++a) got.push_back(lb::next_delay(o, a, std::nullopt, g)->count());
    std::vector<std::int64_t> want{100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000};
    BOOST_TEST(got == want, boost::test_tools::per_element());
    BOOST_TEST(!lb::next_delay(o, 10, std::nullopt, g)); // attempts exhausted
}

BOOST_AUTO_TEST_CASE(bounded_attempts) {
    lb::retry_options o{.max_attempts = 3};
    std::mt19937 g(42);
    BOOST_TEST(lb::next_delay(o, 1, std::nullopt, g).has_value());
    BOOST_TEST(lb::next_delay(o, 2, std::nullopt, g).has_value());
    BOOST_TEST(!lb::next_delay(o, 3, std::nullopt, g).has_value());
    BOOST_TEST(!lb::next_delay(o, 3, 10ms, g).has_value()); // Retry-After does not add attempts
    lb::retry_options once{.max_attempts = 1};
    BOOST_TEST(!lb::next_delay(once, 1, std::nullopt, g).has_value());
    lb::retry_options zero{.max_attempts = 0}; // clamped to 1
    BOOST_TEST(!lb::next_delay(zero, 0, std::nullopt, g).has_value());
}

BOOST_AUTO_TEST_CASE(full_jitter_stays_within_zero_and_the_planned_delay) {
    lb::retry_options o{.max_attempts = 8, .initial_delay = 200ms, .max_delay = 2000ms, .jitter = lb::retry_jitter::full};
    BOOST_TEST(lb::next_delay(o, 3, std::nullopt, fixed_random{0})->count() == 0);
    BOOST_TEST(lb::next_delay(o, 3, std::nullopt, fixed_random{fixed_random::max()})->count() == 799);
    BOOST_TEST(lb::next_delay(o, 3, std::nullopt, fixed_random{fixed_random::max() / 2})->count() == 399);
    std::mt19937 g(7);
    for (int i = 0; i < 1000; ++i) {
        for (std::size_t a = 1; a < 8; ++a) {
            auto d = lb::next_delay(o, a, std::nullopt, g)->count();
            BOOST_TEST_REQUIRE(d >= 0);
            BOOST_TEST_REQUIRE(d <= std::min<std::int64_t>(2000, 200LL << (a - 1)));
        }
    }
}

BOOST_AUTO_TEST_CASE(equal_jitter_keeps_at_least_half) {
    lb::retry_options o{.initial_delay = 1000ms, .jitter = lb::retry_jitter::equal};
    BOOST_TEST(lb::next_delay(o, 1, std::nullopt, fixed_random{0})->count() == 500);
    BOOST_TEST(lb::next_delay(o, 2, std::nullopt, fixed_random{0})->count() == 1000);
    BOOST_TEST(lb::next_delay(o, 2, std::nullopt, fixed_random{fixed_random::max()})->count() == 1999);
}

BOOST_AUTO_TEST_CASE(decorrelated_jitter_grows_from_the_previous_delay) {
    lb::retry_options o{.max_attempts = 100, .initial_delay = 100ms, .max_delay = 5000ms,
                        .jitter = lb::retry_jitter::decorrelated};
    // First retry: between initial and 3 × initial.
    BOOST_TEST(lb::next_delay(o, 1, std::nullopt, fixed_random{0})->count() == 100);
    BOOST_TEST(lb::next_delay(o, 1, std::nullopt, fixed_random{fixed_random::max()})->count() == 299);
    // Later: between initial and 3 × previous, capped.
    BOOST_TEST(lb::next_delay(o, 5, std::nullopt, fixed_random{fixed_random::max()}, 1000ms)->count() == 2999);
    BOOST_TEST(lb::next_delay(o, 5, std::nullopt, fixed_random{fixed_random::max()}, 4000ms)->count() == 5000);
    lb::retry_schedule s{o};
    std::mt19937 g(1);
    for (int i = 0; i < 99; ++i) {
        auto d = s.next(std::nullopt, g);
        BOOST_TEST_REQUIRE(d.has_value());
        BOOST_TEST_REQUIRE(d->count() >= 100);
        BOOST_TEST_REQUIRE(d->count() <= 5000);
    }
    BOOST_TEST(!s.next(std::nullopt, g).has_value());
    BOOST_TEST(s.attempts() == 100u);
}

BOOST_AUTO_TEST_CASE(retry_after_is_honoured_and_bounded) {
    lb::retry_options o{.max_attempts = 5, .initial_delay = 100ms, .jitter = lb::retry_jitter::full, .max_retry_after = 10'000ms};
    fixed_random g{0};
    BOOST_TEST(lb::next_delay(o, 1, 7000ms, g)->count() == 7000);  // exactly, no jitter
    BOOST_TEST(lb::next_delay(o, 1, 0ms, g)->count() == 0);
    BOOST_TEST(lb::next_delay(o, 1, 3600'000ms, g)->count() == 10'000); // cut to max_retry_after
    BOOST_TEST(lb::next_delay(o, 1, -5ms, g)->count() == 0);
}

BOOST_AUTO_TEST_CASE(schedule_counts_attempts) {
    lb::retry_schedule s{lb::retry_options{.max_attempts = 3, .initial_delay = 10ms, .jitter = lb::retry_jitter::none}};
    fixed_random g{0};
    BOOST_TEST(s.next(std::nullopt, g)->count() == 10);
    BOOST_TEST(s.next(2000ms, g)->count() == 2000);
    BOOST_TEST(!s.next(std::nullopt, g).has_value());
    BOOST_TEST(s.attempts() == 3u);
}

BOOST_AUTO_TEST_CASE(bad_options_are_named_and_clamped) {
    BOOST_TEST(lb::check(lb::retry_options{}).empty());
    BOOST_TEST(lb::check(lb::retry_options{.max_attempts = 0}) == "retry_options: max_attempts must be at least 1");
    BOOST_TEST(lb::check(lb::retry_options{.initial_delay = -1ms}) == "retry_options: initial_delay must not be negative");
    BOOST_TEST(lb::check(lb::retry_options{.multiplier = 0.5}) == "retry_options: multiplier must be a finite number >= 1");
    BOOST_TEST(lb::check(lb::retry_options{.multiplier = std::numeric_limits<double>::quiet_NaN()}) ==
               "retry_options: multiplier must be a finite number >= 1");
    BOOST_TEST(lb::check(lb::retry_options{.initial_delay = 5000ms, .max_delay = 100ms}) ==
               "retry_options: max_delay must be at least initial_delay");
    BOOST_TEST(lb::check(lb::retry_options{.max_retry_after = -1ms}) == "retry_options: max_retry_after must not be negative");
    // next_delay clamps instead of failing.
    lb::retry_options bad{.initial_delay = -100ms, .multiplier = 0.1, .jitter = lb::retry_jitter::none};
    BOOST_TEST(lb::next_delay(bad, 2, std::nullopt, fixed_random{0})->count() == 0);
    lb::retry_options huge{.max_attempts = 1000, .initial_delay = 1000ms, .multiplier = 1e300, .max_delay = 60'000ms,
                           .jitter = lb::retry_jitter::none};
    BOOST_TEST(lb::next_delay(huge, 999, std::nullopt, fixed_random{0})->count() == 60'000);
}

BOOST_AUTO_TEST_SUITE_END()
