// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/provider/anthropic_protocol.hpp>

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

json::value encode(const lb::llm_request& r, const lb::anthropic_options& o = {.stream = false}) {
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

std::pair<std::vector<lb::llm_chunk>, lb::llm_response> run(const std::vector<sse>& events) {
    lb::anthropic_stream_decoder d;
    std::vector<lb::llm_chunk> chunks;
    for (const auto& e : events) {
        auto c = d.feed(e.name, e.data);
        if (!c.empty()) chunks.push_back(std::move(c));
    }
    return {std::move(chunks), d.finish()};
}

const sse message_start{"message_start",
                        R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}})"};
const sse message_stop{"message_stop", R"({"type":"message_stop"})"};
const sse ping{"ping", R"({"type": "ping"})"};

sse block_start(int index, std::string block) {
    return {"content_block_start",
            R"({"type":"content_block_start","index":)" + std::to_string(index) + R"(,"content_block":)" + block + "}"};
}
sse block_delta(int index, std::string delta) {
    return {"content_block_delta", R"({"type":"content_block_delta","index":)" + std::to_string(index) + R"(,"delta":)" + delta + "}"};
}
sse block_stop(int index) {
    return {"content_block_stop", R"({"type":"content_block_stop","index":)" + std::to_string(index) + "}"};
}
sse message_delta(std::string stop_reason, int output_tokens) {
    return {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":")" + stop_reason +
                                 R"(","stop_sequence":null},"usage":{"output_tokens":)" + std::to_string(output_tokens) + "}}"};
}

} // namespace

BOOST_AUTO_TEST_SUITE(anthropic_request)

BOOST_AUTO_TEST_CASE(target_and_headers) {
    lb::anthropic_options o;
    BOOST_TEST(lb::request_target(o) == "/v1/messages");
    o.base_url = "http://127.0.0.1:8080/";
    BOOST_TEST(lb::request_target(o) == "/v1/messages");
    o.base_url = "https://gateway.example/anthropic";
    BOOST_TEST(lb::request_target(o) == "/anthropic/v1/messages");

    lb::anthropic_options k{.api_key = "sk-ant-1", .betas = {"a-2025", "b-2026"}, .extra_headers = {{"x-trace", "1"}}};
    lb::http_headers want{{"x-api-key", "sk-ant-1"},           {"anthropic-version", "2023-06-01"},
                          {"anthropic-beta", "a-2025,b-2026"}, {"content-type", "application/json"},
                          {"accept", "text/event-stream"},     {"x-trace", "1"}};
    BOOST_TEST((lb::request_headers(k) == want));
    lb::anthropic_options gateway{.auth_token = "tok", .anthropic_version = "2024-01-01", .stream = false};
    lb::http_headers want2{{"authorization", "Bearer tok"}, {"anthropic-version", "2024-01-01"},
                           {"content-type", "application/json"}, {"accept", "application/json"}};
    BOOST_TEST((lb::request_headers(gateway) == want2));
}

BOOST_AUTO_TEST_CASE(from_environment) {
    ::setenv("ANTHROPIC_API_KEY", "sk-ant-env", 1);
    ::setenv("ANTHROPIC_BASE_URL", "http://localhost:9", 1);
    ::unsetenv("ANTHROPIC_AUTH_TOKEN");
    ::setenv("ANTHROPIC_MODEL", "claude-x", 1);
    auto o = lb::anthropic_options::from_environment({.auth_token = "keep"});
    BOOST_TEST(o.api_key == "sk-ant-env");
    BOOST_TEST(o.base_url == "http://localhost:9");
    BOOST_TEST(o.auth_token == "keep");
    BOOST_TEST(o.model == "claude-x");
    ::unsetenv("ANTHROPIC_API_KEY");
    ::unsetenv("ANTHROPIC_BASE_URL");
    ::unsetenv("ANTHROPIC_MODEL");
    auto d = lb::anthropic_options::from_environment();
    BOOST_TEST(d.base_url == "https://api.anthropic.com");
    BOOST_TEST(d.api_key.empty());
}

BOOST_AUTO_TEST_CASE(minimal_request) {
    auto v = encode({.messages = {lb::message::user("Hello")}}, {.model = "claude-sonnet-4-5"});
    auto want = json::parse(R"({"model":"claude-sonnet-4-5","max_tokens":4096,
        "messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}],"stream":true})");
    BOOST_TEST(v == want, json::serialize(v));
}

BOOST_AUTO_TEST_CASE(every_part_kind_and_role) {
    lb::thinking_part signed_thinking{"Let me think.", {}};
    signed_thinking.metadata["signature"] = "EqQBCgIYAhIM";
    lb::llm_request r;
    r.system_instruction = "Be brief.";
    r.messages.push_back(msg(lb::message_role::user,
                             {lb::text_part{"Look:", {}}, lb::data_part{{{"k", 1}}, {}},
                              lb::file_part{std::nullopt, "iVBOR", "image/png", std::nullopt, {}},
                              lb::file_part{"https://x/cat.jpg", std::nullopt, std::nullopt, std::nullopt, {}},
                              lb::file_part{std::nullopt, "JVBER", "application/pdf", "r.pdf", {}},
                              lb::file_part{"https://x/r.pdf", std::nullopt, "application/pdf", std::nullopt, {}},
                              lb::thinking_part{"user thinking is not sent", {}}}));
    r.messages.push_back(msg(lb::message_role::assistant,
                             {signed_thinking, lb::thinking_part{"unsigned: dropped", {}}, lb::text_part{"Checking.", {}},
                              lb::tool_call_part{"toolu_1", "get_weather", {{"city", "Oslo"}}, {}},
                              lb::tool_call_part{"toolu_2", "clock", {}, {}}}));
    r.messages.push_back(msg(lb::message_role::tool,
                             {lb::text_part{"note", {}},
                              lb::tool_response_part{"toolu_1", "get_weather", json::value({{"temp", 21}}), std::nullopt, {}},
                              lb::tool_response_part{"toolu_2", "clock", nullptr, std::string("no clock"), {}}}));
    r.messages.push_back(msg(lb::message_role::assistant, {lb::text_part{"", {}}})); // nothing left: omitted
    auto v = encode(r);
    auto want = json::parse(R"({"max_tokens":4096,"system":"Be brief.","messages":[
        {"role":"user","content":[
            {"type":"text","text":"Look:"},
            {"type":"text","text":"{\"k\":1}"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},
            {"type":"image","source":{"type":"url","url":"https://x/cat.jpg"}},
            {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}},
            {"type":"document","source":{"type":"url","url":"https://x/r.pdf"}}]},
        {"role":"assistant","content":[
            {"type":"thinking","thinking":"Let me think.","signature":"EqQBCgIYAhIM"},
            {"type":"text","text":"Checking."},
            {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
            {"type":"tool_use","id":"toolu_2","name":"clock","input":{}}]},
        {"role":"user","content":[
            {"type":"tool_result","tool_use_id":"toolu_1","content":"{\"temp\":21}"},
            {"type":"tool_result","tool_use_id":"toolu_2","content":"{\"error\":\"no clock\"}","is_error":true},
            {"type":"text","text":"note"}]}]})");
    BOOST_TEST(v == want, json::serialize(v));
}

BOOST_AUTO_TEST_CASE(tools_schema_thinking_and_options) {
    lb::llm_request r;
    r.model = "claude-opus-4-1";
    r.messages.push_back(lb::message::user("Hi"));
    r.tools.push_back({"get_weather", "Weather for a city",
                       json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})").as_object(),
                       false});
    r.tools.push_back({"clock", "", {}, false});
    r.output_schema = json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}}})").as_object();
    r.options = {.temperature = 1.0, .top_p = 0.9, .max_output_tokens = 16000, .stop_sequences = {"END"}, .seed = 7};
    auto v = encode(r, {.model = "ignored", .thinking_budget_tokens = 10000, .extra_body = json::parse(R"({"top_k":5})").as_object()});
    auto want = json::parse(R"({"model":"claude-opus-4-1","max_tokens":16000,
        "messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
        "tools":[{"name":"get_weather","description":"Weather for a city",
                  "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
                 {"name":"clock","input_schema":{"type":"object","properties":{}}}],
        "output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}},
        "temperature":1,"stop_sequences":["END"],
        "thinking":{"type":"enabled","budget_tokens":10000},"stream":true,"top_k":5})");
    BOOST_TEST(v == want, json::serialize(v)); // top_p 0.9: below what thinking takes, and not with temperature on Opus 4.1
    // Numbers as JavaScript writes them (Boost.JSON would write 1E0 and 9E-1).
    r.model = "claude-3-5-haiku";
    const std::string text = lb::encode_request(r, {});
    BOOST_TEST(text.find(R"("temperature":1,"top_p":0.9,)") != std::string::npos, text);
}

// The sampling table: from Claude 4.5 (and Opus 4.1) temperature or top_p, not both; Opus
// 4.7 neither; extended thinking takes temperature 1 and top_p from 0.95 only.
BOOST_AUTO_TEST_CASE(sampling_parameters_follow_the_model_table) {
    lb::llm_request r{.messages = {lb::message::user("Hi")}};
    auto sent = [&](std::string model, lb::generation_options g, const lb::anthropic_options& o = {}) {
        r.model = std::move(model);
        r.options = g;
        return encode(r, o).as_object();
    };
    const lb::generation_options both{.temperature = 0.3, .top_p = 0.8};
    auto old_model = sent("claude-3-7-sonnet-20250219", both);
    BOOST_TEST(old_model.at("temperature") == 0.3);
    BOOST_TEST(old_model.at("top_p") == 0.8);
    for (auto m : {"claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-1-20250805"}) {
        auto b = sent(m, both);
        BOOST_TEST(b.at("temperature") == 0.3, m);
        BOOST_TEST(!b.contains("top_p"), m);
        BOOST_TEST(sent(m, {.top_p = 0.8}).at("top_p") == 0.8, m); // alone, it is taken
    }
    auto opus47 = sent("claude-opus-4-7", both);
    BOOST_TEST(!opus47.contains("temperature"));
    BOOST_TEST(!opus47.contains("top_p"));
    // Thinking: temperature 1 and top_p 0.95 are taken, others not.
    lb::anthropic_options thinking{.thinking_budget_tokens = 2048};
    auto t1 = sent("claude-3-7-sonnet", {.temperature = 1.0, .top_p = 0.95}, thinking);
    BOOST_TEST(t1.at("temperature") == 1);
    BOOST_TEST(t1.at("top_p") == 0.95);
    auto t2 = sent("claude-3-7-sonnet", both, thinking);
    BOOST_TEST(!t2.contains("temperature"));
    BOOST_TEST(!t2.contains("top_p"));
    // fail: named before any I/O.
    lb::anthropic_options strict;
    strict.sampling.unsupported = lb::unsupported_sampling::fail;
    try {
        sent("claude-sonnet-4-5", both, strict);
        BOOST_FAIL("no error");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("generation_options.top_p: model 'claude-sonnet-4-5' takes temperature or top_p, not both") == 0u,
                   e.what());
    }
}

BOOST_AUTO_TEST_CASE(bad_requests_are_named) {
    auto fails_with = [](const lb::llm_request& r, const lb::anthropic_options& o, std::string_view what) {
        try {
            (void)lb::encode_request(r, o);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == errc::invalid_argument);
            BOOST_TEST(std::string(e.what()).find(what) != std::string::npos, e.what());
            return;
        }
        BOOST_FAIL("no exception");
    };
    fails_with({.messages = {msg(lb::message_role::assistant, {lb::tool_call_part{"", "f", {}, {}}})}}, {},
               "message #0 part #0: tool call without an id");
    fails_with({.messages = {msg(lb::message_role::assistant, {lb::tool_call_part{"t", "", {}, {}}})}}, {},
               "message #0 part #0: tool call without a tool name");
    fails_with({.messages = {lb::message::user("x"), msg(lb::message_role::tool, {lb::tool_response_part{}})}}, {},
               "message #1 part #0: tool response without a tool call id");
    fails_with({.messages = {msg(lb::message_role::user, {lb::file_part{}})}}, {}, "file part without uri or inline_bytes");
    fails_with({.messages = {lb::message::user("x")}, .tools = {lb::tool_declaration{}}}, {}, "tool #0: no name");
    fails_with({.messages = {lb::message::user("x")}}, {.max_tokens = 0}, "max_tokens must be at least 1 (got 0)");
    fails_with({.messages = {lb::message::user("x")}, .options = {.max_output_tokens = -5}}, {},
               "max_tokens must be at least 1 (got -5)");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    fails_with({.messages = {lb::message::user("x")}, .options = {.temperature = nan}}, {},
               "generation_options.temperature is nan, not a finite number >= 0");
    fails_with({.messages = {lb::message::user("x")}, .options = {.temperature = -0.5}}, {},
               "generation_options.temperature is -0.5, not a finite number >= 0");
    fails_with({.messages = {lb::message::user("x")}, .options = {.top_p = 1.01}}, {},
               "generation_options.top_p is 1.01, not a number from 0 to 1");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(anthropic_stream)

// The documented basic stream: message_start, a text block with deltas, ping, message_delta
// with the stop reason and output usage, message_stop.
BOOST_AUTO_TEST_CASE(text_stream) {
    auto [chunks, r] = run({
        message_start,
        block_start(0, R"({"type":"text","text":""})"),
        ping,
        block_delta(0, R"({"type":"text_delta","text":"Hello"})"),
        block_delta(0, R"({"type":"text_delta","text":"!"})"),
        block_stop(0),
        message_delta("end_turn", 15),
        message_stop,
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "Hello!");
    BOOST_TEST(r.finish == finish_reason::stop);
    BOOST_TEST(r.model_version == "claude-sonnet-4-5-20250929");
    BOOST_REQUIRE(r.usage.has_value());
    BOOST_TEST(r.usage->input_tokens == 25);
    BOOST_TEST(r.usage->output_tokens == 15);
    BOOST_REQUIRE(chunks.size() == 4u); // start (model, usage), 2 text deltas, message_delta
    BOOST_TEST(chunks[0].model_version == "claude-sonnet-4-5-20250929");
    BOOST_TEST(chunks[1].text == "Hello");
}

// Thinking with its signature, then text, then two tool_use blocks whose input arrives as
// partial JSON (the documented shape: empty input at start, input_json_delta fragments).
BOOST_AUTO_TEST_CASE(thinking_then_parallel_tool_use_in_fragments) {
    auto [chunks, r] = run({
        message_start,
        block_start(0, R"({"type":"thinking","thinking":"","signature":""})"),
        block_delta(0, R"({"type":"thinking_delta","thinking":"I need the weather"})"),
        block_delta(0, R"({"type":"thinking_delta","thinking":" and the time."})"),
        block_delta(0, R"({"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})"),
        block_stop(0),
        block_start(1, R"({"type":"text","text":""})"),
        block_delta(1, R"({"type":"text_delta","text":"Checking both."})"),
        block_stop(1),
        block_start(2, R"({"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}})"),
        block_delta(2, R"({"type":"input_json_delta","partial_json":""})"),
        block_delta(2, R"({"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"})"),
        block_delta(2, R"({"type":"input_json_delta","partial_json":"ncisco, CA\", \"unit\": \"fahrenheit\"}"})"),
        block_stop(2),
        block_start(3, R"({"type":"tool_use","id":"toolu_02","name":"get_time","input":{}})"),
        block_delta(3, R"({"type":"input_json_delta","partial_json":"{\"tz\":"})"),
        block_delta(3, R"({"type":"input_json_delta","partial_json":" \"PST\"}"})"),
        block_stop(3),
        message_delta("tool_use", 89),
        message_stop,
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.finish == finish_reason::tool_calls);
    BOOST_TEST(r.thinking() == "I need the weather and the time.");
    BOOST_REQUIRE(!lb::part_view<lb::thinking_part>(r.parts).empty());
    BOOST_TEST(lb::part_view<lb::thinking_part>(r.parts).front().metadata.at("signature") ==
               "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds");
    BOOST_TEST(r.text() == "Checking both.");
    BOOST_REQUIRE(r.tool_calls().size() == 2u);
    auto it = r.tool_calls().begin();
    BOOST_TEST(it->tool_call_id == "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    BOOST_TEST(it->tool_name == "get_weather");
    BOOST_TEST(json::value(it->args) == json::parse(R"({"location":"San Francisco, CA","unit":"fahrenheit"})"));
    ++it;
    BOOST_TEST(json::value(it->args) == json::parse(R"({"tz":"PST"})"));
    // Fragments carry the content-block index; id and name only at the start.
    bool saw_fragment = false;
    for (const auto& c : chunks)
        for (const auto& d : c.tool_calls)
            if (d.arguments == "{\"location\": \"San Fra") {
                saw_fragment = true;
                BOOST_TEST(d.index.value() == 2u);
                BOOST_TEST(d.id.empty());
            }
    BOOST_TEST(saw_fragment);
    // The decoded response goes back as the next request's assistant message unchanged.
    lb::message back;
    back.role = lb::message_role::assistant;
    back.parts = r.parts;
    auto v = json::parse(lb::encode_request({.messages = {lb::message::user("q"), back}}, {.stream = false}));
    auto blocks = v.at("messages").at(1).at("content").as_array();
    BOOST_REQUIRE(blocks.size() == 4u);
    BOOST_TEST(blocks[0].at("type") == "thinking");
    BOOST_TEST(blocks[0].at("signature") == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds");
    BOOST_TEST(blocks[2].at("input") == json::parse(R"({"location":"San Francisco, CA","unit":"fahrenheit"})"));
}

BOOST_AUTO_TEST_CASE(interleaved_and_redacted_thinking_go_back_unmodified) {
    // Interleaved thinking (a thinking block after a tool call) and a redacted block: each
    // block keeps its own signature or data, and the reply goes back block for block (the
    // API rejects a tool-use continuation whose thinking blocks were changed or dropped).
    auto [chunks, r] = run({
        message_start,
        block_start(0, R"({"type":"thinking","thinking":"","signature":""})"),
        block_delta(0, R"({"type":"thinking_delta","thinking":"Weather first."})"),
        block_delta(0, R"({"type":"signature_delta","signature":"sigA=="})"),
        block_stop(0),
        block_start(1, R"({"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"})"),
        block_stop(1),
        block_start(2, R"({"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}})"),
        block_delta(2, R"({"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"})"),
        block_stop(2),
        block_start(3, R"({"type":"thinking","thinking":"","signature":""})"),
        block_delta(3, R"({"type":"thinking_delta","thinking":"Now the time."})"),
        block_delta(3, R"({"type":"signature_delta","signature":"sigB=="})"),
        block_stop(3),
        block_start(4, R"({"type":"tool_use","id":"toolu_2","name":"get_time","input":{}})"),
        block_delta(4, R"({"type":"input_json_delta","partial_json":"{}"})"),
        block_stop(4),
        message_delta("tool_use", 40),
        message_stop,
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.thinking() == "Weather first.Now the time.");
    std::vector<lb::thinking_part> parts(lb::part_view<lb::thinking_part>(r.parts).begin(),
                                         lb::part_view<lb::thinking_part>(r.parts).end());
    BOOST_REQUIRE(parts.size() == 3u);
    BOOST_TEST(parts[0].metadata.at("signature") == "sigA==");
    BOOST_TEST(parts[1].metadata.at("redacted_data") == "EmwKAhgBEgy3va3pzix");
    BOOST_TEST(parts[2].thinking == "Now the time.");
    BOOST_TEST(parts[2].metadata.at("signature") == "sigB==");
    BOOST_TEST(r.tool_calls().size() == 2u);
    // The deltas name their block: the second thinking block is number 2 (the redacted one is 1).
    bool saw_second = false;
    for (const auto& c : chunks)
        if (c.thinking == "Now the time.") {
            saw_second = true;
            BOOST_TEST(c.thinking_block == 2u);
        }
    BOOST_TEST(saw_second);

    lb::message back;
    back.role = lb::message_role::assistant;
    back.parts = r.parts;
    auto v = json::parse(lb::encode_request({.messages = {lb::message::user("q"), back}}, {.stream = false}));
    BOOST_TEST(v.at("messages").at(1).at("content") == json::parse(R"([
        {"type":"thinking","thinking":"Weather first.","signature":"sigA=="},
        {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
        {"type":"thinking","thinking":"Now the time.","signature":"sigB=="},
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
        {"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}])"));
    // Thinking in a user message is never sent, redacted or not.
    lb::thinking_part red{{}, {}};
    red.metadata["redacted_data"] = "EmwK";
    auto u = json::parse(lb::encode_request({.messages = {msg(lb::message_role::user, {red, lb::text_part{"hi", {}}})}},
                                            {.stream = false}));
    BOOST_TEST(u.at("messages").at(0).at("content") == json::parse(R"([{"type":"text","text":"hi"}])"));
}

BOOST_AUTO_TEST_CASE(redacted_thinking_without_data_is_an_error) {
    auto [chunks, r] = run({message_start, block_start(0, R"({"type":"redacted_thinking"})")});
    BOOST_TEST(r.error == errc::bad_response);
    BOOST_TEST(r.error_message.find("content_block.data") != std::string::npos, r.error_message);
    auto w = lb::decode_anthropic_response(R"({"content":[{"type":"redacted_thinking","data":""}]})");
    BOOST_TEST(w.error == errc::bad_response);
    BOOST_TEST(w.error_message == "Anthropic response: content[0].data: a redacted_thinking block without data");
}

BOOST_AUTO_TEST_CASE(cached_input_counts_and_whole_input_at_block_start) {
    auto [chunks, r] = run({
        {"message_start", R"({"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}})"},
        block_start(0, R"({"type":"tool_use","id":"toolu_9","name":"f","input":{"a":[1,2]}})"),
        block_stop(0),
        message_delta("tool_use", 7),
        message_stop,
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.usage->input_tokens == 3210);
    BOOST_TEST(r.usage->output_tokens == 7);
    BOOST_REQUIRE(r.tool_calls().size() == 1u);
    BOOST_TEST(json::value(r.tool_calls().front().args) == json::parse(R"({"a":[1,2]})"));
}

// message_start reports output_tokens 1 before any output; message_delta's cumulative count
// replaces it, 0 included; a field message_delta leaves out keeps message_start's value
// (the SDKs assign message_delta's output_tokens, anthropic-sdk-python message_delta_usage.py).
BOOST_AUTO_TEST_CASE(a_final_zero_output_count_is_zero) {
    auto usage_after = [](std::string delta_usage) {
        return run({
                       {"message_start", R"({"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":25,"output_tokens":1}}})"},
                       {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":)" + delta_usage + "}"},
                       message_stop,
                   })
            .second;
    };
    auto zero = usage_after(R"({"output_tokens":0})");
    BOOST_TEST_REQUIRE(zero.ok(), zero.error_message);
    BOOST_REQUIRE(zero.usage.has_value());
    BOOST_TEST(zero.usage->output_tokens == 0);
    BOOST_TEST(zero.usage->input_tokens == 25);
    auto with_input = usage_after(R"({"input_tokens":30,"output_tokens":4})");
    BOOST_TEST(with_input.usage->input_tokens == 30);
    BOOST_TEST(with_input.usage->output_tokens == 4);
    auto empty = usage_after("{}");
    BOOST_TEST(empty.usage->input_tokens == 25);
    BOOST_TEST(empty.usage->output_tokens == 1);
}

// input + cache creation + cache read saturate at INT64_MAX instead of wrapping negative.
BOOST_AUTO_TEST_CASE(usage_sums_saturate) {
    constexpr std::int64_t max = 9'223'372'036'854'775'807;
    auto usage_of = [](std::string start_usage, std::string delta_usage) {
        return run({
                       {"message_start", R"({"type":"message_start","message":{"model":"claude-x","usage":)" + start_usage + "}}"},
                       block_start(0, R"({"type":"text","text":"ok"})"),
                       block_stop(0),
                       {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":)" + delta_usage + "}"},
                       message_stop,
                   })
            .second;
    };
    auto all_max = usage_of(
        R"({"input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807,"output_tokens":1})",
        R"({"output_tokens":9223372036854775807})");
    BOOST_TEST(all_max.ok(), all_max.error_message);
    BOOST_REQUIRE(all_max.usage.has_value());
    BOOST_TEST(all_max.usage->input_tokens == max);
    BOOST_TEST(all_max.usage->output_tokens == max);
    BOOST_TEST(all_max.usage->total_tokens() == max);

    // Mixed: one count at the limit, small others (saturates); just under the limit (exact).
    auto one_max = usage_of(R"({"input_tokens":9223372036854775807,"cache_creation_input_tokens":0,"cache_read_input_tokens":1})",
                            R"({"output_tokens":5})");
    BOOST_TEST(one_max.usage->input_tokens == max);
    BOOST_TEST(one_max.usage->output_tokens == 5);
    BOOST_TEST(one_max.usage->total_tokens() == max);
    auto under = usage_of(R"({"input_tokens":9223372036854775000,"cache_creation_input_tokens":800,"cache_read_input_tokens":6})",
                          R"({"output_tokens":1})");
    BOOST_TEST(under.usage->input_tokens == 9'223'372'036'854'775'806);
    BOOST_TEST(under.usage->total_tokens() == max);
    auto over_by_one = usage_of(R"({"input_tokens":9223372036854775000,"cache_creation_input_tokens":800,"cache_read_input_tokens":8})",
                                R"({"output_tokens":1})");
    BOOST_TEST(over_by_one.usage->input_tokens == max);
    // A later report with the cumulative input (message_delta) saturates the same way.
    auto in_delta = usage_of(R"({"input_tokens":1})",
                             R"({"input_tokens":4611686018427387904,"cache_read_input_tokens":4611686018427387904,"output_tokens":2})");
    BOOST_TEST(in_delta.usage->input_tokens == max);

    // A negative or non-integer count is a garbage reply: bad_response naming the field.
    auto negative = usage_of(R"({"input_tokens":10,"cache_read_input_tokens":-5})", R"({"output_tokens":1})");
    BOOST_TEST(negative.error == errc::bad_response);
    BOOST_TEST(negative.error_message ==
               "Anthropic stream: event #1 (message_start): message.usage.cache_read_input_tokens: expected non-negative integer, got number");
    auto min = usage_of(R"({"input_tokens":-9223372036854775808})", R"({"output_tokens":1})");
    BOOST_TEST(min.error_message ==
               "Anthropic stream: event #1 (message_start): message.usage.input_tokens: expected non-negative integer, got number");
    auto too_big = usage_of(R"({"input_tokens":1})", R"({"output_tokens":9223372036854775808})");
    BOOST_TEST(too_big.error == errc::bad_response);
    BOOST_TEST(too_big.error_message ==
               "Anthropic stream: event #4 (message_delta): usage.output_tokens: expected non-negative integer, got number");
    auto fraction = usage_of(R"({"input_tokens":1,"cache_creation_input_tokens":2.5})", R"({"output_tokens":1})");
    BOOST_TEST(fraction.error_message ==
               "Anthropic stream: event #1 (message_start): message.usage.cache_creation_input_tokens: expected non-negative integer, got number");
}

// Block indexes 0 to 4095 (lb::max_tool_calls, shared with the OpenAI decoder's tool calls).
BOOST_AUTO_TEST_CASE(block_index_bound) {
    auto problem = [](std::vector<sse> events) { return run(events).second; };
    auto start = problem({message_start, block_start(4096, R"({"type":"tool_use","id":"toolu_1","name":"f","input":{}})"), message_stop});
    BOOST_TEST(start.error == errc::bad_response);
    BOOST_TEST(start.error_message == "Anthropic stream: event #2 (content_block_start): index: 4096 is out of range (at most "
                                      "4096 content blocks, indexes 0 to 4095)");
    auto delta = problem({message_start, block_start(0, R"({"type":"text","text":""})"),
                          block_delta(4096, R"({"type":"text_delta","text":"x"})"), message_stop});
    BOOST_TEST(delta.error_message == "Anthropic stream: event #3 (content_block_delta): index: 4096 is out of range (at most "
                                      "4096 content blocks, indexes 0 to 4095)");
    auto last = problem({message_start, block_start(4095, R"({"type":"tool_use","id":"toolu_z","name":"f","input":{}})"),
                         block_delta(4095, R"({"type":"input_json_delta","partial_json":"{\"a\":1}"})"), block_stop(4095),
                         message_delta("tool_use", 3), message_stop});
    BOOST_TEST(last.ok(), last.error_message);
    BOOST_REQUIRE(last.tool_calls().size() == 1u);
    BOOST_TEST(last.tool_calls().front().tool_call_id == "toolu_z");
    BOOST_TEST(json::value(last.tool_calls().front().args) == json::parse(R"({"a":1})"));
}

// 4096 tool_use blocks (every index allowed) whose input fragments arrive interleaved.
BOOST_AUTO_TEST_CASE(interleaved_input_of_the_most_tool_use_blocks) {
    constexpr int n = 4096;
    std::vector<sse> events{message_start};
    for (int i = 0; i < n; ++i)
        events.push_back(block_start(i, R"({"type":"tool_use","id":"toolu_)" + std::to_string(i) + R"(","name":"f","input":{}})"));
    for (int i = n; i-- > 0;) events.push_back(block_delta(i, R"({"type":"input_json_delta","partial_json":"{\"n\":"})"));
    for (int k = 0; k < n; ++k) { // scrambled: 7 is coprime with 4096
        const int i = k * 7 % n;
        events.push_back(block_delta(i, R"({"type":"input_json_delta","partial_json":")" + std::to_string(i) + R"("})"));
    }
    for (int i = 0; i < n; ++i) events.push_back(block_delta(i, R"({"type":"input_json_delta","partial_json":"}"})"));
    for (int i = 0; i < n; ++i) events.push_back(block_stop(i));
    events.push_back(message_delta("tool_use", 5));
    events.push_back(message_stop);
    auto r = run(events).second;
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_REQUIRE(r.tool_calls().size() == 4096u);
    int i = 0;
    for (const auto& c : r.tool_calls()) {
        if (c.tool_call_id != "toolu_" + std::to_string(i) || json::value(c.args) != json::value{{"n", i}})
            BOOST_FAIL("call #" << i << " is " << c.tool_call_id << " " << json::serialize(c.args));
        ++i;
    }
    BOOST_TEST(std::get<lb::tool_call_part>(r.parts[4095]).tool_call_id == "toolu_4095");
    BOOST_TEST(json::value(std::get<lb::tool_call_part>(r.parts[4095]).args) == json::parse(R"({"n":4095})"));
}

BOOST_AUTO_TEST_CASE(unknown_events_blocks_and_deltas_are_ignored) {
    auto [chunks, r] = run({
        message_start,
        ping,
        {"future_event", R"({"type":"future_event","payload":{"x":1}})"},
        block_start(0, R"({"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"})"),
        block_stop(0),
        block_start(1, R"({"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}})"),
        block_delta(1, R"({"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"})"),
        block_stop(1),
        block_start(2, R"({"type":"text","text":""})"),
        block_delta(2, R"({"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}})"),
        block_delta(2, R"({"type":"text_delta","text":"Answer"})"),
        block_delta(2, R"({"type":"future_delta","value":1})"),
        block_stop(2),
        // Text for a block that never started is kept, not dropped (some compatible servers
        // skip content_block_start): an answer is never silently shortened.
        block_delta(7, R"({"type":"text_delta","text":" [unstarted]"})"),
        message_delta("end_turn", 3),
        ping,
        message_stop,
        block_delta(2, R"({"type":"text_delta","text":" after the end"})"),
    });
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "Answer [unstarted]");
    BOOST_TEST(r.tool_calls().empty());
    BOOST_TEST(r.invalid_tool_calls.empty());
}

BOOST_AUTO_TEST_CASE(stop_reasons) {
    auto finish_of = [](std::string reason) {
        return run({message_start, block_start(0, R"({"type":"text","text":"x"})"), block_stop(0), message_delta(std::move(reason), 1),
                    message_stop})
            .second.finish;
    };
    BOOST_TEST(finish_of("end_turn") == finish_reason::stop);
    BOOST_TEST(finish_of("stop_sequence") == finish_reason::stop);
    BOOST_TEST(finish_of("max_tokens") == finish_reason::length);
    BOOST_TEST(finish_of("model_context_window_exceeded") == finish_reason::length);
    BOOST_TEST(finish_of("tool_use") == finish_reason::tool_calls);
    BOOST_TEST(finish_of("refusal") == finish_reason::refusal);
    BOOST_TEST(finish_of("pause_turn") == finish_reason::other);
}

// The documented mid-stream error: event: error, data {"type":"error","error":{"type":"overloaded_error",...}}.
BOOST_AUTO_TEST_CASE(error_event_mid_stream) {
    lb::anthropic_stream_decoder d;
    d.feed("message_start", message_start.data);
    d.feed("content_block_start", block_start(0, R"({"type":"text","text":""})").data);
    d.feed("content_block_delta", block_delta(0, R"({"type":"text_delta","text":"Partial"})").data);
    auto c = d.feed("error", R"({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})");
    BOOST_TEST(c.empty());
    BOOST_TEST(d.done());
    BOOST_TEST(d.failed());
    auto r = d.finish();
    BOOST_TEST(r.error == errc::transient);
    BOOST_TEST(r.error_message == "provider error (overloaded_error): Overloaded");
    BOOST_TEST(r.text() == "Partial");
    BOOST_TEST(r.finish == finish_reason::error);

    auto overflow = run({{"error", R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}})"}});
    BOOST_TEST(overflow.second.error == errc::context_overflow);
    auto text = run({{"error", "upstream connect error"}});
    BOOST_TEST(text.second.error == errc::model_error);
    BOOST_TEST(text.second.error_message == "provider error: upstream connect error");
}

BOOST_AUTO_TEST_CASE(malformed_json_is_an_error_naming_the_event) {
    auto [chunks, r] = run({
        message_start,
        block_start(0, R"({"type":"text","text":""})"),
        block_delta(0, R"({"type":"text_delta","text":"Hel"})"),
        {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo)"},
        block_stop(0),
        message_delta("end_turn", 2),
        message_stop,
    });
    BOOST_TEST(r.error == errc::bad_response);
    BOOST_TEST(r.error_message.find("Anthropic stream: event #4 is not valid JSON") == 0u, r.error_message);
    BOOST_TEST(r.text() == "Hel");
}

BOOST_AUTO_TEST_CASE(wrong_shapes_are_named) {
    auto problem = [](sse e) { return run({message_start, std::move(e), message_stop}).second.error_message; };
    BOOST_TEST(problem(block_delta(0, R"({"type":"text_delta","text":5})")) ==
               "Anthropic stream: event #2 (content_block_delta): delta.text: expected string, got number");
    BOOST_TEST(problem({"content_block_start", R"({"type":"content_block_start","content_block":{"type":"text"}})"}) ==
               "Anthropic stream: event #2 (content_block_start): index: required field is missing");
    BOOST_TEST(problem({"content_block_start", R"({"type":"content_block_start","index":"0","content_block":{"type":"text"}})"}) ==
               "Anthropic stream: event #2 (content_block_start): index: expected non-negative integer, got string");
    BOOST_TEST(problem({"content_block_start", R"({"type":"content_block_start","index":99999999,"content_block":{"type":"text"}})"}) ==
               "Anthropic stream: event #2 (content_block_start): index: 99999999 is out of range (at most 4096 content "
               "blocks, indexes 0 to 4095)");
    BOOST_TEST(problem({"content_block_start", R"({"type":"content_block_start","index":0})"}) ==
               "Anthropic stream: event #2 (content_block_start): content_block: required field is missing");
    BOOST_TEST(problem({"message_delta", R"({"type":"message_delta","delta":{"stop_reason":1}})"}) ==
               "Anthropic stream: event #2 (message_delta): delta.stop_reason: expected string, got number");
    BOOST_TEST(problem({"message_delta", R"({"type":"message_delta","delta":{},"usage":{"output_tokens":-1}})"}) ==
               "Anthropic stream: event #2 (message_delta): usage.output_tokens: expected non-negative integer, got number");
    BOOST_TEST(problem({"x", "[]"}) == "Anthropic stream: event #2 is not a JSON object: []");
}

BOOST_AUTO_TEST_CASE(event_type_from_the_sse_name_when_the_data_has_none) {
    auto r = run({message_start, {"content_block_start", R"({"index":0,"content_block":{"type":"text","text":"hi"}})"},
                  {"message_stop", "{}"}})
                 .second;
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "hi");
}

BOOST_AUTO_TEST_CASE(stream_cut_before_message_stop_is_an_error) {
    auto [chunks, r] = run({
        message_start,
        block_start(0, R"({"type":"text","text":""})"),
        block_delta(0, R"({"type":"text_delta","text":"The answer is"})"),
    });
    BOOST_TEST(r.error == errc::bad_response);
    BOOST_TEST(r.error_message == "Anthropic stream ended before message_stop (after 3 events): the answer is incomplete");
    BOOST_TEST(r.text() == "The answer is");
    // Even after message_delta: only message_stop ends a message.
    auto late = run({message_start, block_start(0, R"({"type":"text","text":"x"})"), block_stop(0), message_delta("end_turn", 1)});
    BOOST_TEST(late.second.error == errc::bad_response);
    BOOST_TEST(run({}).second.error == errc::bad_response);
}

BOOST_AUTO_TEST_CASE(transport_failure) {
    lb::anthropic_stream_decoder d;
    d.feed("message_start", message_start.data);
    d.fail(make_error_code(boost::system::errc::timed_out), "read timed out");
    auto r = d.finish();
    BOOST_TEST(r.error == boost::system::errc::timed_out);
    BOOST_TEST(r.error_message == "read timed out");
    BOOST_TEST(r.model_version == "claude-sonnet-4-5-20250929");
}

BOOST_AUTO_TEST_CASE(cut_and_corrupted_events) {
    const std::vector<sse> stream = {
        message_start,
        block_start(0, R"({"type":"thinking","thinking":"","signature":""})"),
        block_delta(0, R"({"type":"signature_delta","signature":"sig"})"),
        block_start(1, R"({"type":"tool_use","id":"toolu_1","name":"f","input":{}})"),
        block_delta(1, R"({"type":"input_json_delta","partial_json":"{\"a\": 1}"})"),
        block_stop(1),
        message_delta("tool_use", 5),
        message_stop,
    };
    for (std::size_t e = 0; e < stream.size(); ++e) {
        for (std::size_t cut = 1; cut < stream[e].data.size(); ++cut) {
            lb::anthropic_stream_decoder d;
            for (std::size_t k = 0; k < e; ++k) (void)d.feed(stream[k].name, stream[k].data);
            (void)d.feed(stream[e].name, std::string_view(stream[e].data).substr(0, cut));
            auto r = d.finish();
            const bool bad = r.error == errc::bad_response;
            BOOST_TEST_REQUIRE(bad, "event " << e << " cut at " << cut << ": " << r.error_message);
        }
    }
    std::mt19937 g(5);
    for (int round = 0; round < 3000; ++round) {
        lb::anthropic_stream_decoder d;
        for (auto ev : stream) {
            ev.data[g() % ev.data.size()] = static_cast<char>(g() % 256);
            (void)d.feed(ev.name, ev.data);
        }
        auto r = d.finish();
        BOOST_TEST_REQUIRE((r.ok() || r.finish == finish_reason::error));
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(anthropic_whole_response)

BOOST_AUTO_TEST_CASE(message_with_thinking_text_and_tool_use) {
    auto r = lb::decode_anthropic_response(R"({
        "id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
        "content":[{"type":"thinking","thinking":"Weather needed.","signature":"sig=="},
                   {"type":"text","text":"Let me check."},
                   {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"location":"Paris"}}],
        "stop_reason":"tool_use","stop_sequence":null,
        "usage":{"input_tokens":472,"output_tokens":89}})");
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_TEST(r.thinking() == "Weather needed.");
    BOOST_TEST(lb::part_view<lb::thinking_part>(r.parts).front().metadata.at("signature") == "sig==");
    BOOST_TEST(r.text() == "Let me check.");
    BOOST_TEST(r.finish == finish_reason::tool_calls);
    BOOST_REQUIRE(r.tool_calls().size() == 1u);
    BOOST_TEST(json::value(r.tool_calls().front().args) == json::parse(R"({"location":"Paris"})"));
    BOOST_TEST(r.usage->input_tokens == 472);
    BOOST_TEST(r.usage->output_tokens == 89);
    BOOST_TEST(r.model_version == "claude-sonnet-4-5-20250929");
}

BOOST_AUTO_TEST_CASE(several_thinking_blocks_and_redacted_thinking) {
    auto r = lb::decode_anthropic_response(R"({
        "model":"claude-x",
        "content":[{"type":"thinking","thinking":"One.","signature":"s1"},
                   {"type":"redacted_thinking","data":"RED"},
                   {"type":"tool_use","id":"toolu_1","name":"f","input":{}},
                   {"type":"thinking","thinking":"Two.","signature":"s2"},
                   {"type":"text","text":"Done."}],
        "stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}})");
    BOOST_TEST(r.ok(), r.error_message);
    std::vector<lb::thinking_part> parts(lb::part_view<lb::thinking_part>(r.parts).begin(),
                                         lb::part_view<lb::thinking_part>(r.parts).end());
    BOOST_REQUIRE(parts.size() == 3u);
    BOOST_TEST(parts[0].thinking == "One.");
    BOOST_TEST(parts[0].metadata.at("signature") == "s1");
    BOOST_TEST(parts[1].metadata.at("redacted_data") == "RED");
    BOOST_TEST(parts[2].thinking == "Two.");
    BOOST_TEST(parts[2].metadata.at("signature") == "s2");
    BOOST_TEST(r.text() == "Done.");
    BOOST_TEST(r.tool_calls().size() == 1u);
}

BOOST_AUTO_TEST_CASE(usage_sums_saturate) {
    auto r = lb::decode_anthropic_response(R"({"content":[{"type":"text","text":"x"}],"stop_reason":"end_turn",
        "usage":{"input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807,
                 "cache_read_input_tokens":9223372036854775807,"output_tokens":9223372036854775807}})");
    BOOST_TEST(r.ok(), r.error_message);
    BOOST_REQUIRE(r.usage.has_value());
    BOOST_TEST(r.usage->input_tokens == 9'223'372'036'854'775'807);
    BOOST_TEST(r.usage->output_tokens == 9'223'372'036'854'775'807);
    BOOST_TEST(r.usage->total_tokens() == 9'223'372'036'854'775'807);
    auto mixed = lb::decode_anthropic_response(R"({"content":[],"usage":{"input_tokens":3,
        "cache_creation_input_tokens":9223372036854775805,"cache_read_input_tokens":4,"output_tokens":2}})");
    BOOST_TEST(mixed.usage->input_tokens == 9'223'372'036'854'775'807);
    BOOST_TEST(mixed.usage->output_tokens == 2);
    auto negative = lb::decode_anthropic_response(R"({"content":[],"usage":{"input_tokens":3,"output_tokens":-2}})");
    BOOST_TEST(negative.error == errc::bad_response);
    BOOST_TEST(negative.error_message == "Anthropic response: usage.output_tokens: expected non-negative integer, got number");
    BOOST_TEST(!negative.usage.has_value());
}

// A whole reply holds at most 4096 content blocks, as a stream's block indexes allow.
BOOST_AUTO_TEST_CASE(content_block_bound) {
    auto body = [](int count) {
        std::string s = R"({"model":"claude-x","stop_reason":"tool_use","content":[)";
        for (int k = 0; k < count; ++k)
            s += (k ? "," : "") + (R"({"type":"tool_use","id":"toolu_)" + std::to_string(k) + R"(","name":"f","input":{"k":)" +
                                   std::to_string(k) + "}}");
        return s + "]}";
    };
    auto most = lb::decode_anthropic_response(body(4096));
    BOOST_TEST(most.ok(), most.error_message);
    BOOST_REQUIRE(most.tool_calls().size() == 4096u);
    BOOST_TEST(std::get<lb::tool_call_part>(most.parts[4095]).tool_call_id == "toolu_4095");
    BOOST_TEST(json::value(std::get<lb::tool_call_part>(most.parts[4095]).args) == json::parse(R"({"k":4095})"));
    auto over = lb::decode_anthropic_response(body(4097));
    BOOST_TEST(over.error == errc::bad_response);
    BOOST_TEST(over.error_message == "Anthropic response: content: 4097 blocks, more than 4096");
}

BOOST_AUTO_TEST_CASE(bad_bodies) {
    BOOST_TEST(lb::decode_anthropic_response("<html>").error == errc::bad_response);
    BOOST_TEST(lb::decode_anthropic_response("7").error_message == "Anthropic response is not a JSON object: 7");
    BOOST_TEST(lb::decode_anthropic_response("{}").error_message == "Anthropic response: content: required field is missing");
    BOOST_TEST(lb::decode_anthropic_response(R"({"content":{}})").error_message ==
               "Anthropic response: content: expected array, got object");
    BOOST_TEST(lb::decode_anthropic_response(R"({"content":[1]})").error_message == "Anthropic response: content[0]: expected object");
    BOOST_TEST(lb::decode_anthropic_response(R"({"content":[{"type":"text","text":1}]})").error_message ==
               "Anthropic response: content[0].text: expected string, got number");
    auto err = lb::decode_anthropic_response(R"({"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}})");
    BOOST_TEST(err.error == errc::model_error);
    BOOST_TEST(err.error_message == "provider error (not_found_error): model: claude-9");
}

BOOST_AUTO_TEST_SUITE_END()
