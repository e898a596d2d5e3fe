// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/provider/openai_protocol.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lb = libretto;
namespace json = boost::json;
using lb::errc;
using lb::finish_reason;

namespace {

json::value encode(const lb::llm_request& r, const lb::openai_options& o = {}) {
    return json::parse(lb::encode_request(r, o));
}

lb::message msg(lb::message_role role, std::vector<lb::part> parts) {
    lb::message m;
    m.role = role;
    m.parts = std::move(parts);
    return m;
}

struct sse {
    std::string name;
    std::string data;
};

/// Feeds every event; returns the non-empty chunks and the final response.
std::pair<std::vector<lb::llm_chunk>, lb::llm_response> run(const std::vector<sse>& events) {
    lb::openai_stream_decoder d;
    std::vector<lb::llm_chunk> chunks;
    for (const auto& e : events) {
        auto c = d.feed(e.name, e.data);
        if (!c.empty()) chunks.push_back(std::move(c));
    }
    return {std::move(chunks), d.finish()};
}

sse data(std::string d) { return {"", std::move(d)}; }

/// A chunk whose delta carries these tool_calls entries (JSON objects, joined).
sse tool_calls_chunk(const std::vector<std::string>& calls) {
    std::string s = R"({"model":"m","choices":[{"index":0,"delta":{"tool_calls":[)";
    for (std::size_t i = 0; i < calls.size(); ++i) s += (i ? "," : "") + calls[i];
    return data(s + R"(]},"finish_reason":null}]})");
}
/// A tool_calls entry: index (if >= 0), id (if not empty), function name and arguments (if not empty).
std::string call_entry(long long index, std::string id, std::string name, std::string args) {
    std::string s = "{";
    if (index >= 0) s += R"("index":)" + std::to_string(index) + ",";
    if (!id.empty()) s += R"("id":")" + id + R"(",)";
    s += R"("function":{)";
    if (!name.empty()) s += R"("name":")" + name + R"(",)";
    s += R"("arguments":")" + args + R"("}})";
    return s;
}
const sse tool_calls_finish = data(R"({"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})");

} // namespace

BOOST_AUTO_TEST_SUITE(openai_request)

BOOST_AUTO_TEST_CASE(target_and_headers) {
    lb::openai_options o;
    BOOST_TEST(lb::request_target(o) == "/v1/chat/completions");
    o.base_url = "http://localhost:8080/v1/";
    BOOST_TEST(lb::request_target(o) == "/v1/chat/completions");
    o.base_url = "http://localhost:11434";
    BOOST_TEST(lb::request_target(o) == "/chat/completions");
    o.base_url = "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21";
    BOOST_TEST(lb::request_target(o) == "/openai/deployments/d/chat/completions?api-version=2024-10-21");
    o.base_url = "localhost:8000/v1";
    BOOST_TEST(lb::request_target(o) == "/v1/chat/completions");

    lb::openai_options k{.api_key = "sk-1", .organization = "org-1", .project = "proj-1",
                         .extra_headers = {{"x-title", "libretto"}}};
    lb::http_headers want{{"authorization", "Bearer sk-1"},   {"content-type", "application/json"},
                          {"accept", "text/event-stream"},    {"openai-organization", "org-1"},
                          {"openai-project", "proj-1"},       {"x-title", "libretto"}};
    BOOST_TEST((lb::request_headers(k) == want));
    BOOST_TEST(*lb::find_header(lb::request_headers(k), "Authorization") == "Bearer sk-1");

    lb::openai_options local{.stream = false};
    auto h = lb::request_headers(local);
    BOOST_TEST(!lb::find_header(h, "authorization")); // no key, no header
    BOOST_TEST(*lb::find_header(h, "accept") == "application/json");
}

BOOST_AUTO_TEST_CASE(from_environment) {
    ::setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1", 1);
    ::setenv("OPENAI_API_KEY", "sk-env", 1);
    ::setenv("OPENAI_MODEL", "", 1); // empty: the default stays
    ::setenv("OPENAI_ORG_ID", "org-env", 1);
    ::unsetenv("OPENAI_PROJECT_ID");
    auto o = lb::openai_options::from_environment({.model = "gpt-4o-mini", .project = "p"});
    BOOST_TEST(o.base_url == "http://127.0.0.1:9/v1");
    BOOST_TEST(o.api_key == "sk-env");
    BOOST_TEST(o.model == "gpt-4o-mini");
    BOOST_TEST(o.organization == "org-env");
    BOOST_TEST(o.project == "p");
    ::unsetenv("OPENAI_BASE_URL");
    ::unsetenv("OPENAI_API_KEY");
    ::unsetenv("OPENAI_MODEL");
    ::unsetenv("OPENAI_ORG_ID");
    BOOST_TEST(lb::openai_options::from_environment().base_url == "https://api.openai.com/v1");
}

BOOST_AUTO_TEST_CASE(minimal_request) {
    lb::llm_request r{.messages = {lb::message::user("Hi")}};
    auto v = encode(r, {.model = "gpt-4o-mini"});
    auto want = json::parse(R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],
        "stream":true,"stream_options":{"include_usage":true}})");
    BOOST_TEST(v == want, json::serialize(v));
    // The request's model wins; without any model no field is sent; without streaming, no stream fields.
    r.model = "o3";
    BOOST_TEST(encode(r, {.model = "gpt-4o-mini"}).at("model") == "o3");
    auto local = encode(lb::llm_request{.messages = {lb::message::user("Hi")}}, {.stream = false});
    BOOST_TEST(local == json::parse(R"({"messages":[{"role":"user","content":"Hi"}]})"), json::serialize(local));
    auto no_usage = encode(lb::llm_request{.messages = {lb::message::user("Hi")}}, {.include_usage = false});
    BOOST_TEST(!no_usage.as_object().contains("stream_options"));
}

BOOST_AUTO_TEST_CASE(every_part_kind_and_role) {
    lb::llm_request r;
    r.system_instruction = "Be brief.";
    r.messages.push_back(msg(lb::message_role::user,
                             {lb::text_part{"Look:", {}}, lb::data_part{{{"k", 1}}, {}},
                              lb::file_part{std::nullopt, "iVBOR", "image/png", "a.png", {}},
                              lb::file_part{"https://x/cat.jpg", std::nullopt, std::nullopt, std::nullopt, {}},
                              lb::file_part{std::nullopt, "UklGR", "audio/wav", std::nullopt, {}},
                              lb::file_part{std::nullopt, "JVBER", "application/pdf", "r.pdf", {}},
                              lb::file_part{"https://x/r.pdf", std::nullopt, "application/pdf", std::nullopt, {}}}));
    r.messages.push_back(msg(lb::message_role::assistant,
                             {lb::thinking_part{"hidden reasoning", {}}, lb::text_part{"Checking.", {}},
                              lb::tool_call_part{"call_1", "get_weather", {{"city", "Oslo"}}, {}},
                              lb::tool_call_part{"call_2", "clock", {}, {}}}));
    r.messages.push_back(msg(lb::message_role::tool,
                             {lb::tool_response_part{"call_1", "get_weather", json::value({{"temp", 21}}), std::nullopt, {}},
                              lb::tool_response_part{"call_2", "clock", json::value("12:00"), std::nullopt, {}},
                              lb::text_part{"extra note", {}}}));
    r.messages.push_back(msg(lb::message_role::assistant, {lb::tool_call_part{"call_3", "search", {}, {}}}));
    r.messages.push_back(msg(lb::message_role::tool,
                             {lb::tool_response_part{"call_3", "search", nullptr, std::string("timeout"), {}}}));
    auto v = encode(r, {.stream = false});
    auto want = json::parse(R"({"messages":[
        {"role":"system","content":"Be brief."},
        {"role":"user","content":[
            {"type":"text","text":"Look:"},
            {"type":"text","text":"{\"k\":1}"},
            {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}},
            {"type":"image_url","image_url":{"url":"https://x/cat.jpg"}},
            {"type":"input_audio","input_audio":{"data":"UklGR","format":"wav"}},
            {"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,JVBER"}},
            {"type":"text","text":"[file https://x/r.pdf: https://x/r.pdf]"}]},
        {"role":"assistant","content":"Checking.","tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
            {"id":"call_2","type":"function","function":{"name":"clock","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21}"},
        {"role":"tool","tool_call_id":"call_2","content":"12:00"},
        {"role":"user","content":"extra note"},
        {"role":"assistant","content":null,"tool_calls":[
            {"id":"call_3","type":"function","function":{"name":"search","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"call_3","content":"{\"error\":\"timeout\"}"}]})");
    BOOST_TEST(v == want, json::serialize(v));
}

// Numbers reach the model as JavaScript writes them, wherever they are: a tool's result (the
// double 42, not 4.2E1), a call's arguments, a data part, the sampling options.
BOOST_AUTO_TEST_CASE(numbers_are_written_as_javascript_writes_them) {
    lb::llm_request r;
    r.messages.push_back(msg(lb::message_role::user, {lb::data_part{{{"reading", 69.8}, {"n", 3}}, {}}}));
    r.messages.push_back(msg(lb::message_role::assistant,
                             {lb::tool_call_part{"call_1", "convert", {{"celsius", 21.0}, {"scale", 1e21}}, {}}}));
    r.messages.push_back(msg(lb::message_role::tool,
                             {lb::tool_response_part{"call_1", "convert", json::value(69.8), std::nullopt, {}}}));
    r.messages.push_back(msg(lb::message_role::assistant, {lb::tool_call_part{"call_2", "answer", {}, {}}}));
    r.messages.push_back(msg(lb::message_role::tool,
                             {lb::tool_response_part{"call_2", "answer", json::value({{"value", 42.0}, {"tiny", 1e-7}}),
                                                     std::nullopt, {}}}));
    r.options = {.temperature = 0.7, .top_p = 1.0};
    const std::string body = lb::encode_request(r, {.stream = false});
    auto has = [&](std::string_view s) { return body.find(s) != std::string::npos; };
    BOOST_TEST(has(R"("content":"{\"reading\":69.8,\"n\":3}")"), body);
    BOOST_TEST(has(R"("arguments":"{\"celsius\":21,\"scale\":1e+21}")"), body);
    BOOST_TEST(has(R"({"role":"tool","tool_call_id":"call_1","content":"69.8"})"), body);
    BOOST_TEST(has(R"("content":"{\"value\":42,\"tiny\":1e-7}")"), body);
    BOOST_TEST(has(R"("temperature":0.7,"top_p":1)"), body);
    BOOST_TEST(body.find("E1") == std::string::npos, body);
    BOOST_TEST(body.find("E-") == std::string::npos, body);
}

// The sampling table decides what is sent: reasoning models take neither temperature nor
// top_p; the longest prefix wins; the options can replace the answer or make it an error.
BOOST_AUTO_TEST_CASE(sampling_parameters_follow_the_model_table) {
    lb::llm_request r{.messages = {lb::message::user("Hi")}};
    r.options = {.temperature = 0.2, .top_p = 0.5};
    auto sent = [&](std::string model, const lb::openai_options& o) {
        r.model = std::move(model);
        return encode(r, o).as_object();
    };
    for (auto m : {"o3-mini", "o1", "o4-mini", "gpt-5.2-chat-latest"}) {
        auto b = sent(m, {});
        BOOST_TEST(!b.contains("temperature"), m);
        BOOST_TEST(!b.contains("top_p"), m);
    }
    auto classic = sent("gpt-4o-mini", {});
    BOOST_TEST(classic.at("temperature") == 0.2);
    BOOST_TEST(classic.at("top_p") == 0.5);
    // A local server's model: nothing matches, everything is sent.
    BOOST_TEST(sent("qwen3:8b", {}).contains("temperature"));
    // Overridden: a custom table (longest prefix wins), a fixed answer.
    lb::openai_options custom;
    custom.sampling.rules = {{"my-", {.top_p = false}}, {"my-model-2", {}}};
    BOOST_TEST(!sent("my-model-1", custom).contains("top_p"));
    BOOST_TEST(sent("my-model-1", custom).contains("temperature"));
    BOOST_TEST(sent("my-model-2", custom).contains("top_p"));
    lb::openai_options everything;
    everything.sampling.support = lb::sampling_support{};
    BOOST_TEST(sent("o3", everything).at("temperature") == 0.2);
    // fail: an invalid_argument naming the parameter and the model, before any I/O.
    lb::openai_options strict;
    strict.sampling.unsupported = lb::unsupported_sampling::fail;
    try {
        sent("o3", strict);
        BOOST_FAIL("no error");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("generation_options.temperature: model 'o3' does not take temperature") == 0u,
                   e.what());
    }
    r.options = {};
    BOOST_TEST(!sent("o3", strict).contains("temperature")); // nothing asked, nothing refused
    BOOST_TEST((lb::find_sampling_support({}, "o3") == lb::sampling_support{}));
}

BOOST_AUTO_TEST_CASE(invalid_call_goes_back_as_written) {
    lb::invalid_tool_call bad{"call_9", "search", "{q: Oslo}", "not JSON"};
    lb::llm_request r{.messages = {msg(lb::message_role::assistant, {bad.as_call()}),
                                   msg(lb::message_role::tool, {bad.error_response()})}};
    auto v = encode(r);
    BOOST_TEST(v.at("messages").at(0).at("tool_calls").at(0).at("function").at("arguments") == "{q: Oslo}");
    BOOST_TEST(v.at("messages").at(1).at("content") == R"({"error":"not JSON"})");
}

BOOST_AUTO_TEST_CASE(tools_schema_and_options) {
    lb::llm_request r;
    r.messages.push_back(lb::message::user("Hi"));
    r.tools.push_back({"get_weather", "Weather for a city",
                       json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})").as_object(),
                       false});
    r.tools.push_back({"clock", "", {}, false});
    r.output_schema = json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}}})").as_object();
    r.options = {.temperature = 0.5, .top_p = 0.9, .max_output_tokens = 100, .stop_sequences = {"END"}, .seed = 7};
    auto v = encode(r, {.stream = false, .reasoning_effort = "low", .strict_output_schema = true,
                        .extra_body = json::parse(R"({"top_k":20,"seed":8})").as_object()});
    auto want = json::parse(R"({"messages":[{"role":"user","content":"Hi"}],
        "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city",
                  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
                 {"type":"function","function":{"name":"clock","parameters":{"type":"object","properties":{}}}}],
        "response_format":{"type":"json_schema","json_schema":{"name":"output",
            "schema":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}},
        "temperature":0.5,"top_p":0.9,"max_completion_tokens":100,"stop":["END"],"seed":8,
        "reasoning_effort":"low","top_k":20})");
    BOOST_TEST(v == want, json::serialize(v));
    auto legacy = encode(r, {.max_tokens_field = lb::openai_max_tokens_field::max_tokens, .system_role = "developer"});
    BOOST_TEST(legacy.at("max_tokens") == 100);
    BOOST_TEST(!legacy.as_object().contains("max_completion_tokens"));
    r.system_instruction = "S";
    BOOST_TEST(encode(r, {.system_role = "developer"}).at("messages").at(0).at("role") == "developer");
}

BOOST_AUTO_TEST_CASE(bad_requests_are_named) {
    auto fails_with = [](const lb::llm_request& r, std::string_view what) {
        try {
            (void)lb::encode_request(r, {});
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == errc::invalid_argument);
            BOOST_TEST(std::string(e.what()).find(what) != std::string::npos, e.what());
            return;
        }
        BOOST_FAIL("no exception");
    };
    fails_with({.messages = {msg(lb::message_role::assistant, {lb::tool_call_part{"", "f", {}, {}}})}},
               "message #0 part #0: tool call without an id");
    fails_with({.messages = {lb::message::user("x"), msg(lb::message_role::assistant, {lb::text_part{"a", {}}, lb::tool_call_part{"c", "", {}, {}}})}},
               "message #1 part #1: tool call without a tool name");
    fails_with({.messages = {msg(lb::message_role::tool, {lb::tool_response_part{"", "f", nullptr, std::nullopt, {}}})}},
               "message #0 part #0: tool response without a tool call id");
    fails_with({.messages = {msg(lb::message_role::user, {lb::file_part{}})}}, "message #0 part #0: file part without uri or inline_bytes");
    fails_with({.messages = {lb::message::user("x")}, .tools = {lb::tool_declaration{}}}, "tool #0: no name");
    // Numbers no server reads (a NaN would be sent as null), and no room for a reply.
    fails_with({.messages = {lb::message::user("x")}, .options = {.temperature = std::numeric_limits<double>::infinity()}},
               "generation_options.temperature is inf, not a finite number >= 0");
    fails_with({.messages = {lb::message::user("x")}, .options = {.top_p = std::numeric_limits<double>::quiet_NaN()}},
               "generation_options.top_p is nan, not a number from 0 to 1");
    fails_with({.messages = {lb::message::user("x")}, .options = {.top_p = -0.1}}, "generation_options.top_p is -0.1");
    fails_with({.messages = {lb::message::user("x")}, .options = {.max_output_tokens = 0}},
               "generation_options.max_output_tokens must be at least 1 (got 0)");
    // The edges are sent as they are.
    const auto edge = encode({.messages = {lb::message::user("x")},
                              .options = {.temperature = 0.0, .top_p = 1.0, .max_output_tokens = 1}},
                             {.stream = false});
    BOOST_TEST(edge.at("temperature").to_number<double>() == 0.0);
    BOOST_TEST(edge.at("top_p").to_number<double>() == 1.0);
    BOOST_TEST(edge.at("max_completion_tokens") == 1);
}

BOOST_AUTO_TEST_CASE(empty_messages_are_left_out) {
    lb::llm_request r{.messages = {msg(lb::message_role::user, {lb::text_part{"", {}}}),
                                   msg(lb::message_role::assistant, {lb::thinking_part{"t", {}}}),
                                   lb::message::user("x")}};
    BOOST_TEST(encode(r, {.stream = false}) == json::parse(R"({"messages":[{"role":"user","content":"x"}]})"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(openai_stream)

// An emoji's surrogate pair split across two events (what @dwmkerr/mock-llm writes: it cuts
// text in JavaScript string units): each half becomes U+FFFD and the answer survives.
BOOST_AUTO_TEST_CASE(a_split_surrogate_pair_costs_a_character_not_the_answer) {
    auto [chunks, r] = run({
        data(R"({"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"Gr\u00fc\u00dfe \ud83d","role":"assistant"},"finish_reason":null}]})"),
        data(R"({"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"\ude00 aus K\u00f6ln"},"finish_reason":"stop"}]})"),
        data("[DONE]"),
    });
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "Gr\xC3\xBC\xC3\x9F" "e \xEF\xBF\xBD\xEF\xBF\xBD aus K\xC3\xB6ln");
    // A whole pair in one event is the emoji.
    auto [c2, whole] = run({data(R"({"choices":[{"index":0,"delta":{"content":"\ud83d\ude00"},"finish_reason":"stop"}]})")});
    BOOST_TEST(whole.text() == "\xF0\x9F\x98\x80");
}

BOOST_AUTO_TEST_CASE(lone_surrogates_are_found_exactly) {
    using lb::detail::replace_lone_surrogates;
    BOOST_TEST(!replace_lone_surrogates(R"({"a":"\ud83d\ude00 \u00e9 \n"})").has_value());
    BOOST_TEST(*replace_lone_surrogates(R"({"a":"x\ud83d"})") == R"({"a":"x\ufffd"})");
    BOOST_TEST(*replace_lone_surrogates(R"({"a":"\ude00x"})") == R"({"a":"\ufffdx"})");
    BOOST_TEST(*replace_lone_surrogates(R"({"a":"\uD83D\n\uDBFF\uDBFF"})") == R"({"a":"\ufffd\n\ufffd\ufffd"})");
    // An escaped backslash followed by "ud83d" is text, not an escape.
    BOOST_TEST(!replace_lone_surrogates(R"({"a":"\\ud83d"})").has_value());
    BOOST_TEST(!replace_lone_surrogates(R"({"a":"\u12"})").has_value()); // not an escape at all: the parser says so
    BOOST_TEST(!replace_lone_surrogates("").has_value());
    // Still bad JSON after the repair: the parser's own error.
    auto [c3, bad] = run({data(R"({"choices":[{"index":0,"delta":{"content":"\ud83d"})")});
    BOOST_TEST((bad.error == errc::bad_response));
}

// The documented shape of a streamed text reply with include_usage: role chunk, content
// chunks, finish chunk, usage-only chunk with empty choices, [DONE].
BOOST_AUTO_TEST_CASE(text_with_usage_only_final_chunk) {
    auto [chunks, r] = run({
        data(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null})"),
        data(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null})"),
        data(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null}],"usage":null})"),
        data(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null})"),
        data(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}})"),
        data("[DONE]"),
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "Hello there");
    BOOST_TEST(r.finish == finish_reason::stop);
    BOOST_TEST(r.model_version == "gpt-4o-mini-2024-07-18");
    BOOST_REQUIRE(r.usage.has_value());
    BOOST_TEST(r.usage->input_tokens == 9);
    BOOST_TEST(r.usage->output_tokens == 2);
    BOOST_TEST(r.usage->model_version == "gpt-4o-mini-2024-07-18");
    // The model version is reported once, not with every chunk.
    BOOST_REQUIRE(chunks.size() == 5u);
    BOOST_TEST(chunks[0].model_version == "gpt-4o-mini-2024-07-18");
    BOOST_TEST(chunks[1].model_version.empty());
    BOOST_TEST(chunks[1].text == "Hello");
    BOOST_TEST((chunks[3].finish == finish_reason::stop));
    BOOST_TEST(chunks[4].usage->input_tokens == 9);
}

// Two parallel calls, each call's arguments in several fragments, interleaved by index as
// OpenAI sends them.
BOOST_AUTO_TEST_CASE(parallel_tool_calls_in_fragments) {
    auto [chunks, r] = run({
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]})"),
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}]})"),
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Oslo\"}"}}]},"finish_reason":null}]})"),
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}]})"),
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":"}}]},"finish_reason":null}]})"),
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" \"CET\"}"}}]},"finish_reason":null}]})"),
        data(R"({"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"),
        data(R"({"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":40,"total_tokens":120}})"),
        data("[DONE]"),
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.finish == finish_reason::tool_calls);
    BOOST_REQUIRE(r.tool_calls().size() == 2u);
    auto it = r.tool_calls().begin();
    BOOST_TEST(it->tool_call_id == "call_a");
    BOOST_TEST(it->tool_name == "get_weather");
    BOOST_TEST(json::value(it->args) == json::parse(R"({"city":"Oslo"})"));
    ++it;
    BOOST_TEST(it->tool_call_id == "call_b");
    BOOST_TEST(json::value(it->args) == json::parse(R"({"tz":"CET"})"));
    BOOST_REQUIRE(chunks[1].tool_calls.size() == 1u);
    BOOST_TEST(chunks[1].tool_calls[0].index.value() == 0u);
    BOOST_TEST(chunks[1].tool_calls[0].arguments == "{\"ci");
    BOOST_TEST(chunks[1].tool_calls[0].id.empty());
}

BOOST_AUTO_TEST_CASE(reasoning_content_and_reasoning) {
    auto [chunks, r] = run({
        data(R"({"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Think"},"finish_reason":null}]})"),
        data(R"({"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"ing."},"finish_reason":null}]})"),
        data(R"({"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"42","reasoning_content":null},"finish_reason":"stop"}]})"),
        data("[DONE]"),
    });
    BOOST_TEST(r.thinking() == "Thinking.");
    BOOST_TEST(r.text() == "42");
    BOOST_TEST(chunks[0].thinking == "Think");
    // OpenRouter / Ollama call it "reasoning".
    auto [c2, r2] = run({data(R"({"choices":[{"index":0,"delta":{"reasoning":"hmm"},"finish_reason":null}]})"),
                         data(R"({"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"length"}]})"), data("[DONE]")});
    BOOST_TEST(r2.thinking() == "hmm");
    BOOST_TEST(r2.finish == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(finish_reasons) {
    auto finish_of = [](std::string_view reason) {
        auto [c, r] = run({data(R"({"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":")" + std::string(reason) + R"("}]})"),
                           data("[DONE]")});
        return r.finish;
    };
    BOOST_TEST(finish_of("stop") == finish_reason::stop);
    BOOST_TEST(finish_of("length") == finish_reason::length);
    BOOST_TEST(finish_of("tool_calls") == finish_reason::tool_calls);
    BOOST_TEST(finish_of("function_call") == finish_reason::tool_calls);
    BOOST_TEST(finish_of("content_filter") == finish_reason::content_filter);
    BOOST_TEST(finish_of("eos_token") == finish_reason::other);
}

BOOST_AUTO_TEST_CASE(other_choices_and_ignorable_events) {
    auto [chunks, r] = run({
        {"message", R"({"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null},{"index":1,"delta":{"content":"B"},"finish_reason":null}]})"},
        data("   "),                                  // keep-alive without data
        data(R"({"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]})"),
        data("[DONE]"),
        data(R"({"choices":[{"index":0,"delta":{"content":"late"},"finish_reason":null}]})"), // after the end
    });
    BOOST_TEST(r.text() == "ab");
    BOOST_TEST(chunks.size() == 2u);
}

BOOST_AUTO_TEST_CASE(error_event_mid_stream_keeps_what_arrived) {
    lb::openai_stream_decoder d;
    d.feed("", R"({"choices":[{"index":0,"delta":{"content":"Partial"},"finish_reason":null}]})");
    d.feed("", R"({"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}})");
    BOOST_TEST(d.done());
    BOOST_TEST(d.failed());
    BOOST_TEST(d.feed("", "[DONE]").empty());
    auto r = d.finish();
    BOOST_TEST(!r.ok());
    BOOST_TEST(r.error == errc::transient);
    BOOST_TEST(r.finish == finish_reason::error);
    BOOST_TEST(r.error_message == "provider error (server_error): The server had an error while processing your request.");
    BOOST_TEST(r.text() == "Partial");
}

BOOST_AUTO_TEST_CASE(error_events_of_compatible_servers) {
    auto overflow = run({data(R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}})")});
    BOOST_TEST(overflow.second.error == errc::context_overflow);
    auto named = run({{"error", R"({"message":"Overloaded","type":"overloaded_error"})"}});
    BOOST_TEST(named.second.error == errc::transient);
    auto text = run({{"error", "upstream went away"}});
    BOOST_TEST(text.second.error == errc::model_error);
    BOOST_TEST(text.second.error_message == "provider error: upstream went away");
    auto vllm = run({data(R"({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400})")});
    BOOST_TEST(vllm.second.error == errc::context_overflow);
}

BOOST_AUTO_TEST_CASE(malformed_json_is_an_error_naming_the_chunk) {
    auto [chunks, r] = run({
        data(R"({"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]})"),
        data(R"({"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":nu)"),
        data(R"({"choices":[{"index":0,"delta":{"content":"never"},"finish_reason":"stop"}]})"),
        data("[DONE]"),
    });
    BOOST_TEST(r.error == errc::bad_response);
    BOOST_TEST(r.error_message.find("OpenAI stream: chunk #2 is not valid JSON") == 0u, r.error_message);
    BOOST_TEST(r.error_message.find(R"("finish_reason":nu)") != std::string::npos, r.error_message);
    BOOST_TEST(r.text() == "Hel");
    BOOST_TEST(chunks.size() == 1u);
}

BOOST_AUTO_TEST_CASE(wrong_shapes_are_named) {
    auto problem = [](std::string payload) { return run({data(std::move(payload)), data("[DONE]")}).second; };
    auto a = problem(R"({"choices":[{"index":0,"delta":{"content":5}}]})");
    BOOST_TEST(a.error == errc::bad_response);
    BOOST_TEST(a.error_message == "OpenAI stream: chunk #1: choices[0].delta.content: expected string, got number");
    auto b = problem(R"({"choices":{"index":0}})");
    BOOST_TEST(b.error_message == "OpenAI stream: chunk #1: choices: expected array, got object");
    auto c = problem(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1}]}}]})");
    BOOST_TEST(c.error_message == "OpenAI stream: chunk #1: choices[0].delta.tool_calls[0].index: expected non-negative integer, got number");
    auto d = problem(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":["x"]}}]}}]})");
    BOOST_TEST(d.error_message == "OpenAI stream: chunk #1: choices[0].delta.tool_calls[0].function.name: expected string, got array");
    auto e = problem(R"([1,2])");
    BOOST_TEST(e.error_message == "OpenAI stream: chunk #1 is not a JSON object: [1,2]");
    auto f = problem(R"({"choices":[],"usage":{"prompt_tokens":"9"}})");
    BOOST_TEST(f.error_message == "OpenAI stream: chunk #1: usage.prompt_tokens: expected non-negative integer, got string");
    auto g = problem(R"({"choices":[7]})");
    BOOST_TEST(g.error_message == "OpenAI stream: chunk #1: choices[0]: expected object");
}

// OpenAI's counts are taken as they come (nothing is added): INT64_MAX stays INT64_MAX, the
// total saturates, and a negative or out-of-range count is a garbage reply naming the field.
BOOST_AUTO_TEST_CASE(usage_extremes) {
    auto usage_of = [](std::string u) {
        return run({data(R"({"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]})"),
                    data(R"({"model":"m","choices":[],"usage":)" + u + "}"), data("[DONE]")})
            .second;
    };
    auto max = usage_of(R"({"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775807,"total_tokens":1})");
    BOOST_TEST(max.ok(), max.error_message);
    BOOST_REQUIRE(max.usage.has_value());
    BOOST_TEST(max.usage->input_tokens == 9'223'372'036'854'775'807);
    BOOST_TEST(max.usage->output_tokens == 9'223'372'036'854'775'807);
    BOOST_TEST(max.usage->total_tokens() == 9'223'372'036'854'775'807);
    auto mixed = usage_of(R"({"prompt_tokens":9223372036854775807,"completion_tokens":3})");
    BOOST_TEST(mixed.usage->output_tokens == 3);
    BOOST_TEST(mixed.usage->total_tokens() == 9'223'372'036'854'775'807);
    auto negative = usage_of(R"({"prompt_tokens":4,"completion_tokens":-1})");
    BOOST_TEST(negative.error == errc::bad_response);
    BOOST_TEST(negative.error_message ==
               "OpenAI stream: chunk #2: usage.completion_tokens: expected non-negative integer, got number");
    auto too_big = usage_of(R"({"prompt_tokens":18446744073709551615})");
    BOOST_TEST(too_big.error_message ==
               "OpenAI stream: chunk #2: usage.prompt_tokens: expected non-negative integer, got number");
    auto body = lb::decode_openai_response(
        R"({"choices":[],"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775807}})");
    BOOST_TEST(body.ok(), body.error_message);
    BOOST_TEST(body.usage->total_tokens() == 9'223'372'036'854'775'807);
    auto bad_body = lb::decode_openai_response(R"({"choices":[],"usage":{"prompt_tokens":-9223372036854775808}})");
    BOOST_TEST(bad_body.error_message == "OpenAI response: usage.prompt_tokens: expected non-negative integer, got number");
}

// A tool-call index is bounded like Anthropic's block index: 0 to 4095 (lb::max_tool_calls).
BOOST_AUTO_TEST_CASE(tool_call_index_bound) {
    BOOST_TEST(lb::max_tool_calls == 4096u);
    auto over = run({tool_calls_chunk({call_entry(4096, "call_x", "f", "{}")}), tool_calls_finish, data("[DONE]")}).second;
    BOOST_TEST(over.error == errc::bad_response);
    BOOST_TEST(over.error_message == "OpenAI stream: chunk #1: choices[0].delta.tool_calls[0].index: 4096 is out of range "
                                     "(at most 4096 tool calls, indexes 0 to 4095)");
    BOOST_TEST(over.tool_calls().empty());
    auto huge = run({tool_calls_chunk({call_entry(0, "call_a", "f", "{}"), call_entry(9223372036854775807LL, "call_b", "f", "{}")}),
                     tool_calls_finish, data("[DONE]")})
                    .second;
    BOOST_TEST(huge.error_message == "OpenAI stream: chunk #1: choices[0].delta.tool_calls[1].index: 9223372036854775807 is out "
                                     "of range (at most 4096 tool calls, indexes 0 to 4095)");
    // A later chunk: what arrived before it is kept.
    auto later = run({tool_calls_chunk({call_entry(0, "call_a", "f", "{}")}), tool_calls_chunk({call_entry(5000, "call_b", "f", "{}")}),
                      tool_calls_finish, data("[DONE]")})
                     .second;
    BOOST_TEST(later.error_message == "OpenAI stream: chunk #2: choices[0].delta.tool_calls[0].index: 5000 is out of range "
                                      "(at most 4096 tool calls, indexes 0 to 4095)");
    BOOST_TEST(later.tool_calls().size() == 1u);
    auto last = run({tool_calls_chunk({call_entry(4095, "call_z", "f", R"({\"a\":1})")}), tool_calls_finish, data("[DONE]")}).second;
    BOOST_TEST(last.ok(), last.error_message);
    BOOST_REQUIRE(last.tool_calls().size() == 1u);
    BOOST_TEST(last.tool_calls().front().tool_call_id == "call_z");
    BOOST_TEST(json::value(last.tool_calls().front().args) == json::parse(R"({"a":1})"));
}

// One chunk with 4096 calls (the limit), indexes in a scrambled order: all decoded, in order
// of appearance. One more (index 4096) and the chunk is refused.
BOOST_AUTO_TEST_CASE(the_most_tool_calls_in_one_chunk) {
    std::vector<std::string> calls;
    for (std::size_t p = 0; p < 4096; ++p) {
        const std::size_t index = p * 7 % 4096; // a permutation of 0..4095
        calls.push_back(call_entry(static_cast<long long>(index), "call_" + std::to_string(index), "f" + std::to_string(index % 10),
                                   R"({\"n\":)" + std::to_string(index) + "}"));
    }
    auto [chunks, r] = run({tool_calls_chunk(calls), tool_calls_finish, data("[DONE]")});
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.invalid_tool_calls.empty());
    BOOST_REQUIRE(r.tool_calls().size() == 4096u);
    std::size_t p = 0;
    for (const auto& c : r.tool_calls()) {
        const std::size_t index = p++ * 7 % 4096;
        if (c.tool_call_id != "call_" + std::to_string(index) || c.tool_name != "f" + std::to_string(index % 10) ||
            json::value(c.args) != json::value{{"n", static_cast<std::int64_t>(index)}})
            BOOST_FAIL("call #" << p - 1 << " is " << c.tool_call_id << " " << c.tool_name << " " << json::serialize(c.args));
    }
    auto it = r.tool_calls().begin();
    BOOST_TEST(it->tool_call_id == "call_0");
    ++it;
    BOOST_TEST(it->tool_call_id == "call_7");
    BOOST_TEST(json::value(it->args) == json::parse(R"({"n":7})"));
    BOOST_TEST(std::get<lb::tool_call_part>(r.parts.back()).tool_call_id == "call_4089"); // 4095 * 7 % 4096

    calls.push_back(call_entry(4096, "call_4096", "f", "{}"));
    auto over = run({tool_calls_chunk(calls), tool_calls_finish, data("[DONE]")}).second;
    BOOST_TEST(over.error == errc::bad_response);
    BOOST_TEST(over.error_message == "OpenAI stream: chunk #1: choices[0].delta.tool_calls[4096].index: 4096 is out of range "
                                     "(at most 4096 tool calls, indexes 0 to 4095)");
    BOOST_TEST(over.tool_calls().empty());
}

// Fragments of 300 calls (past the accumulator's scan threshold) arrive interleaved: every
// call's arguments assemble in order, by index; and by id for calls without an index.
BOOST_AUTO_TEST_CASE(interleaved_fragments_of_many_calls) {
    constexpr std::size_t n = 300;
    std::vector<sse> events;
    std::vector<std::string> starts, opens, closes;
    for (std::size_t i = 0; i < n; ++i) starts.push_back(call_entry(static_cast<long long>(i), "call_" + std::to_string(i), "f", ""));
    events.push_back(tool_calls_chunk(starts));
    for (std::size_t i = n; i-- > 0;) opens.push_back(call_entry(static_cast<long long>(i), "", "", R"({\"n\":)"));
    events.push_back(tool_calls_chunk(opens)); // all calls, in reverse
    for (std::size_t k = 0; k < n; ++k) {      // one call per chunk, scrambled (37 is coprime with 300)
        const std::size_t i = k * 37 % n;
        events.push_back(tool_calls_chunk({call_entry(static_cast<long long>(i), "", "", std::to_string(i))}));
    }
    for (std::size_t i = 0; i < n; ++i) closes.push_back(call_entry(static_cast<long long>(i), "", "", "}"));
    events.push_back(tool_calls_chunk(closes));
    events.push_back(tool_calls_finish);
    events.push_back(data("[DONE]"));
    auto r = run(events).second;
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_REQUIRE(r.tool_calls().size() == n);
    std::size_t i = 0;
    for (const auto& c : r.tool_calls()) {
        if (c.tool_call_id != "call_" + std::to_string(i) || json::value(c.args) != json::value{{"n", static_cast<std::int64_t>(i)}})
            BOOST_FAIL("call #" << i << " is " << c.tool_call_id << " " << json::serialize(c.args));
        ++i;
    }
    BOOST_TEST(json::value(std::get<lb::tool_call_part>(r.parts[299]).args) == json::parse(R"({"n":299})"));

    // Without indexes (servers that send whole calls, or fragments under the call's id).
    std::vector<sse> by_id;
    for (std::size_t k = 0; k < 40; ++k) by_id.push_back(tool_calls_chunk({call_entry(-1, "call_" + std::to_string(k), "g", "")}));
    for (std::size_t k = 40; k-- > 0;)
        by_id.push_back(tool_calls_chunk({call_entry(-1, "call_" + std::to_string(k), "", R"({\"k\":)" + std::to_string(k) + "}")}));
    by_id.push_back(tool_calls_finish);
    auto s = run(by_id).second;
    BOOST_TEST(s.ok(), s.error_message);
    BOOST_REQUIRE(s.tool_calls().size() == 40u);
    auto first = s.tool_calls().begin();
    BOOST_TEST(first->tool_call_id == "call_0");
    BOOST_TEST(json::value(first->args) == json::parse(R"({"k":0})"));
    BOOST_TEST(std::get<lb::tool_call_part>(s.parts[39]).tool_call_id == "call_39");
    BOOST_TEST(json::value(std::get<lb::tool_call_part>(s.parts[39]).args) == json::parse(R"({"k":39})"));
    BOOST_TEST(json::value(std::get<lb::tool_call_part>(s.parts[17]).args) == json::parse(R"({"k":17})"));
}

// Calls without an index are bounded by their number: the 4097th is refused.
BOOST_AUTO_TEST_CASE(calls_without_index_are_bounded) {
    std::vector<std::string> calls;
    for (std::size_t k = 0; k < 4096; ++k) calls.push_back(call_entry(-1, "call_" + std::to_string(k), "f", "{}"));
    auto ok = run({tool_calls_chunk(calls), tool_calls_finish, data("[DONE]")}).second;
    BOOST_TEST(ok.ok(), ok.error_message);
    BOOST_TEST(ok.tool_calls().size() == 4096u);
    calls.push_back(call_entry(-1, "call_4096", "f", "{}"));
    auto [chunks, over] = run({tool_calls_chunk(calls), tool_calls_finish, data("[DONE]")});
    BOOST_TEST(chunks.empty());
    BOOST_TEST(over.error == errc::bad_response);
    BOOST_TEST(over.error_message == "tool call #4096 (id call_4096): a reply holds at most 4096 tool calls");
    // A further fragment of a known call is no new call: within the limit.
    calls.back() = call_entry(-1, "call_5", "", "");
    auto again = run({tool_calls_chunk(calls), tool_calls_finish, data("[DONE]")}).second;
    BOOST_TEST(again.ok(), again.error_message);
    BOOST_TEST(again.tool_calls().size() == 4096u);
}

BOOST_AUTO_TEST_CASE(stream_cut_before_the_end_is_an_error) {
    auto [chunks, r] = run({
        data(R"({"choices":[{"index":0,"delta":{"content":"The answer is"},"finish_reason":null}]})"),
    });
    BOOST_TEST(r.error == errc::bad_response);
    BOOST_TEST(r.error_message ==
               "OpenAI stream ended before [DONE] and without a finish_reason (after 1 events): the answer is incomplete");
    BOOST_TEST(r.text() == "The answer is");
    // An empty finish_reason is no finish_reason (a few servers send "" for null).
    auto blank = run({data(R"({"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":""}]})")});
    BOOST_TEST(blank.second.error == errc::bad_response);
    // An empty stream too.
    BOOST_TEST(run({}).second.error == errc::bad_response);
    // A finish_reason without [DONE] is a complete answer (the cut lost at most the usage).
    auto finished = run({data(R"({"choices":[{"index":0,"delta":{"content":"42"},"finish_reason":"stop"}]})")});
    BOOST_TEST(finished.second.ok());
    BOOST_TEST(finished.second.text() == "42");
}

BOOST_AUTO_TEST_CASE(transport_failure_is_recorded_once) {
    lb::openai_stream_decoder d;
    d.feed("", R"({"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]})");
    d.fail(make_error_code(boost::system::errc::connection_reset), "connection reset by peer");
    d.fail(make_error_code(errc::bad_response), "later");
    auto r = d.finish();
    BOOST_TEST(r.error == boost::system::errc::connection_reset);
    BOOST_TEST(lb::is_transient(r.error));
    BOOST_TEST(r.error_message == "connection reset by peer");
    BOOST_TEST(r.text() == "x");
}

BOOST_AUTO_TEST_CASE(invalid_tool_arguments_become_invalid_calls) {
    auto [chunks, r] = run({
        data(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}]})"),
        data(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"),
        data("[DONE]"),
    });
    BOOST_TEST(r.ok());
    BOOST_TEST(r.tool_calls().empty());
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 1u);
    BOOST_TEST(r.invalid_tool_calls[0].arguments == "{\"a\":");
}

BOOST_AUTO_TEST_CASE(many_chunks_reuse_the_parser) {
    lb::openai_stream_decoder d;
    std::string want;
    for (int i = 0; i < 2000; ++i) {
        std::string piece = "w" + std::to_string(i) + " ";
        want += piece;
        auto c = d.feed("", R"({"choices":[{"index":0,"delta":{"content":")" + piece + R"("},"finish_reason":null}]})");
        BOOST_TEST_REQUIRE(c.text == piece);
    }
    // One chunk far larger than the parser's inline buffer.
    std::string big(100'000, 'z');
    want += big;
    d.feed("", R"({"choices":[{"index":0,"delta":{"content":")" + big + R"("},"finish_reason":"stop"}]})");
    d.feed("", "[DONE]");
    auto r = d.finish();
    BOOST_TEST(r.text() == want);
    BOOST_TEST(d.events() == 2002u);
}

// A chunk cut anywhere is a bad_response naming it, never a crash or a shorter answer;
// bytes flipped anywhere give a response or an error, never a crash (ASan checks).
BOOST_AUTO_TEST_CASE(cut_and_corrupted_chunks) {
    const std::vector<std::string> stream = {
        R"({"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":null}]})",
        R"({"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}})",
        "[DONE]",
    };
    for (std::size_t e = 0; e < stream.size(); ++e) {
        for (std::size_t cut = 1; cut < stream[e].size(); ++cut) {
            lb::openai_stream_decoder d;
            for (std::size_t k = 0; k < e; ++k) (void)d.feed("", stream[k]);
            (void)d.feed("", std::string_view(stream[e]).substr(0, cut));
            auto r = d.finish();
            const bool bad = r.error == errc::bad_response;
            BOOST_TEST_REQUIRE(bad, "event " << e << " cut at " << cut << ": " << r.error_message);
        }
    }
    std::mt19937 g(3);
    for (int round = 0; round < 3000; ++round) {
        lb::openai_stream_decoder d;
        for (auto ev : stream) {
            ev[g() % ev.size()] = static_cast<char>(g() % 256);
            (void)d.feed("", ev);
        }
        auto r = d.finish();
        BOOST_TEST_REQUIRE((r.ok() || r.finish == finish_reason::error));
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(openai_whole_response)

BOOST_AUTO_TEST_CASE(completion_with_tool_calls) {
    auto r = lb::decode_openai_response(R"({
        "id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06",
        "choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","refusal":null,
            "tool_calls":[{"id":"call_x","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
                          {"id":"call_y","type":"function","function":{"name":"clock","arguments":"{}"}}]},
            "logprobs":null,"finish_reason":"tool_calls"}],
        "usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}})");
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "Let me check.");
    BOOST_TEST(r.finish == finish_reason::tool_calls);
    BOOST_TEST(r.model_version == "gpt-4o-2024-08-06");
    BOOST_REQUIRE(r.tool_calls().size() == 2u);
    BOOST_TEST(r.tool_calls().front().tool_call_id == "call_x");
    BOOST_TEST(json::value(r.tool_calls().front().args) == json::parse(R"({"city":"Paris"})"));
    BOOST_TEST(r.usage->input_tokens == 82);
    BOOST_TEST(r.usage->output_tokens == 17);
}

BOOST_AUTO_TEST_CASE(ollama_style_object_arguments_and_reasoning) {
    auto r = lb::decode_openai_response(R"({"model":"qwen3","choices":[{"index":0,"message":{"role":"assistant","content":"",
        "reasoning":"short","tool_calls":[{"id":"call_1","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]})");
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.thinking() == "short");
    BOOST_TEST(json::value(r.tool_calls().front().args) == json::parse(R"({"a":1})"));
}

// A whole reply's calls (identified by position when they carry no index) are bounded too.
BOOST_AUTO_TEST_CASE(tool_call_bound) {
    auto body = [](std::size_t count, std::string extra = {}) {
        std::string s = R"({"model":"m","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[)";
        for (std::size_t k = 0; k < count; ++k)
            s += (k ? "," : "") + call_entry(-1, "call_" + std::to_string(k), "f", R"({\"k\":)" + std::to_string(k) + "}");
        return s + extra + R"(]},"finish_reason":"tool_calls"}]})";
    };
    auto most = lb::decode_openai_response(body(4096));
    BOOST_TEST(most.ok(), most.error_message);
    BOOST_REQUIRE(most.tool_calls().size() == 4096u);
    BOOST_TEST(std::get<lb::tool_call_part>(most.parts[4095]).tool_call_id == "call_4095");
    BOOST_TEST(json::value(std::get<lb::tool_call_part>(most.parts[4095]).args) == json::parse(R"({"k":4095})"));
    auto over = lb::decode_openai_response(body(4097));
    BOOST_TEST(over.error == errc::bad_response);
    BOOST_TEST(over.error_message == "OpenAI response: choices[0].message.tool_calls[4096]: more than 4096 tool calls");
    auto index = lb::decode_openai_response(body(1, "," + call_entry(5000, "call_x", "f", "{}")));
    BOOST_TEST(index.error_message == "OpenAI response: choices[0].message.tool_calls[1].index: 5000 is out of range "
                                      "(at most 4096 tool calls, indexes 0 to 4095)");
}

BOOST_AUTO_TEST_CASE(bad_bodies) {
    BOOST_TEST(lb::decode_openai_response("not json").error == errc::bad_response);
    BOOST_TEST(lb::decode_openai_response("[]").error_message == "OpenAI response is not a JSON object: []");
    BOOST_TEST(lb::decode_openai_response("{}").error_message == "OpenAI response: choices: required field is missing");
    BOOST_TEST(lb::decode_openai_response(R"({"choices":[{"index":0,"message":"hi"}]})").error_message ==
               "OpenAI response: choices[0].message: expected object, got string");
    auto err = lb::decode_openai_response(R"({"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}})");
    BOOST_TEST(err.error == errc::auth_failed);
}

BOOST_AUTO_TEST_SUITE_END()
