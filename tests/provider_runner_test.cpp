// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// End to end over HTTP: a runner with an llm_agent on openai_model / anthropic_model
// (beast_transport<> to the loopback llm_test::server), a function tool and a jsonl_store.
// The server plays the provider: a tool call streamed in fragments, then the answer; and a
// context overflow that the runner compacts (summary by the same model over HTTP) before
// the retried call succeeds; the one retry layer (HTTP attempts counted with the default
// options). Turns run with run_to_end.
#include <libretto/agent/llm_agent.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/libretto.hpp>
#include <libretto/provider/anthropic_model.hpp>
#include <libretto/provider/openai_model.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include "llm_test_server.hpp"

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>

#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;
namespace lh = libretto::http;
using transport = lh::beast_transport<>;

namespace {

struct weather_args {
    std::string city;
};
BOOST_DESCRIBE_STRUCT(weather_args, (), (city))

json::value get_weather(weather_args a) { return json::object{{"city", a.city}, {"temp_c", a.city == "Oslo" ? 21 : 17}}; }

template <class Model>
std::vector<lb::event> run_turn(const Model& model, lb::jsonl_store& store, std::string text) {
    lb::llm_agent agent{lb::llm_agent_options<Model>{
        .name = "assistant",
        .instruction = "You answer weather questions.",
        .model = model,
        .tools = lb::tools(lb::function_tool("get_weather", "Current weather in a city", get_weather)),
    }};
    lb::runner runner{agent, store};
    lb::run_options o;
    o.app = "e2e";
    o.user = "u1";
    o.session = "s1";
    lb::turn_result r = lb::run_to_end(runner, std::move(o), std::move(text));
    BOOST_TEST_REQUIRE(r.ok(), r.message());
    return std::move(r.events);
}

std::filesystem::path fresh_dir(const std::string& name) {
    auto dir = std::filesystem::current_path() / name;
    std::filesystem::remove_all(dir);
    return dir;
}

template <class Model>
void check_tool_turn(asio::io_context& io, const Model& model, llm_test::server& srv, const std::string& dir) {
    lb::jsonl_store store{io.get_executor(), {.directory = fresh_dir(dir)}};
    auto events = run_turn(model, store, "Weather in Oslo?");
    // The turn yields the model's tool call, the tool's response and the answer (the user
    // message is stored first, not yielded).
    BOOST_REQUIRE_EQUAL(events.size(), 3u);
    BOOST_REQUIRE(events[0].has_tool_calls());
    BOOST_TEST(events[0].tool_calls().begin()->args.at("city").as_string() == "Oslo");
    BOOST_REQUIRE(!events[1].tool_responses().empty());
    BOOST_TEST(events[1].tool_responses().begin()->result.at("temp_c").as_int64() == 21);
    BOOST_TEST(events[2].text() == "It is 21 °C in Oslo.");
    BOOST_TEST(events[2].is_final_response());
    BOOST_TEST(events[2].sequence == 4);
    // The second request carried the tool result back to the provider.
    auto reqs = srv.requests();
    BOOST_REQUIRE_EQUAL(reqs.size(), 2u);
    BOOST_TEST(reqs[1].body.find("temp_c") != std::string::npos);
    BOOST_TEST(srv.connections_accepted() == 1u); // one kept-alive connection for the turn
    // And the store has the same four events, durable.
    lb::jsonl_store reopened{io.get_executor(), {.directory = std::filesystem::current_path() / dir}};
    std::optional<lb::session> s;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        lb::session_key key{"e2e", "u1", "s1"};
        auto get = reopened.async_get(std::move(key), lb::get_options{}, asio::use_awaitable);
        s = co_await std::move(get);
    }, asio::detached);
    io.restart();
    io.run();
    BOOST_REQUIRE(s.has_value());
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u);
    BOOST_TEST(s->events[0].text() == "Weather in Oslo?");
    BOOST_TEST(s->events[3].text() == "It is 21 °C in Oslo.");
}

} // namespace

BOOST_AUTO_TEST_SUITE(provider_runner_suite)

BOOST_AUTO_TEST_CASE(openai_agent_tool_turn_over_http_into_jsonl) {
    llm_test::server srv;
    srv.push(llm_test::openai_stream({.text = {"Let me check."},
                                      .tool_calls = {{"call_9", "get_weather", {"{\"city\"", ":\"Oslo\"}"}}}})
                 .in_random_pieces(31, 5));
    srv.push(llm_test::openai_stream({.text = {"It is 21 ", "°C in Oslo."}}).in_random_pieces(13, 6));
    asio::io_context io;
    transport http{io.get_executor()};
    lb::openai_model<transport> model{http, {.base_url = srv.base_url() + "/v1", .api_key = "k", .model = "gpt-test"}};
    check_tool_turn(io, model, srv, "openai-sessions");
}

BOOST_AUTO_TEST_CASE(anthropic_agent_tool_turn_over_http_into_jsonl) {
    llm_test::server srv;
    srv.push(llm_test::anthropic_stream({.thinking = {"Need weather."},
                                         .tool_calls = {{"toolu_9", "get_weather", {"{\"city\"", ": \"Oslo\"}"}}}})
                 .in_random_pieces(29, 8));
    srv.push(llm_test::anthropic_stream({.text = {"It is 21 ", "°C in Oslo."}}).in_random_pieces(11, 9));
    asio::io_context io;
    transport http{io.get_executor()};
    lb::anthropic_model<transport> model{http, {.base_url = srv.base_url(), .api_key = "k", .model = "claude-test"}};
    check_tool_turn(io, model, srv, "anthropic-sessions");
}

BOOST_AUTO_TEST_CASE(openai_overflow_is_compacted_over_http_and_the_retry_succeeds) {
    llm_test::server srv;
    // Turn 1: a tool call and the answer.
    srv.push(llm_test::openai_stream({.tool_calls = {{"call_1", "get_weather", {"{\"city\":\"Oslo\"}"}}}}));
    srv.push(llm_test::openai_stream({.text = {"It is 21 °C in Oslo."}}));
    // Turn 2: the provider says the prompt is too long; the runner compacts turn 1 with a
    // summary from the same model, and the call is sent again.
    srv.push(llm_test::context_overflow(llm_test::protocol::openai));
    srv.push(llm_test::openai_stream(
        {.text = {"## Goal\nWeather in Oslo? Answered with get_weather: 21 °C.\n## Open items\n- none"}}));
    srv.push(llm_test::openai_stream({.text = {"It is 17 °C in Bergen."}}));

    asio::io_context io;
    transport http{io.get_executor()};
    lb::openai_model<transport> model{http, {.base_url = srv.base_url() + "/v1", .api_key = "k", .model = "gpt-test"}};
    lb::llm_agent agent{lb::llm_agent_options<lb::openai_model<transport>>{
        .name = "assistant",
        .model = model,
        .tools = lb::tools(lb::function_tool("get_weather", "Current weather in a city", get_weather)),
    }};
    lb::jsonl_store store{io.get_executor(), {.directory = fresh_dir("overflow-sessions")}};
    lb::runner runner{agent, store,
                      lb::compactor{lb::token_budget{.context_window = 1'000'000},
                                    lb::model_summarizer<lb::openai_model<transport>>{model}}};
    auto turn = [&](std::string text) {
        lb::run_options o;
        o.app = "e2e";
        o.user = "u1";
        o.session = "s1";
        lb::turn_result r = lb::run_to_end(runner, std::move(o), std::move(text));
        BOOST_TEST_REQUIRE(r.ok(), r.message());
        return std::move(r.events);
    };
    auto t1 = turn("Weather in Oslo?");
    BOOST_REQUIRE_EQUAL(t1.size(), 3u);
    auto t2 = turn("And in Bergen?");
    BOOST_REQUIRE_EQUAL(t2.size(), 2u);
    BOOST_REQUIRE(t2[0].is_compaction());
    BOOST_TEST(t2[0].actions.compaction->first_sequence == 1);
    BOOST_TEST(t2[0].actions.compaction->last_sequence == 4); // turn 1; turn 2 stays raw
    BOOST_TEST(t2[0].metadata.at("produced_by").as_string() == "model:gpt-test");
    BOOST_TEST(t2[1].text() == "It is 17 °C in Bergen.");
    auto reqs = srv.requests();
    BOOST_REQUIRE_EQUAL(reqs.size(), 5u);
    // The summariser's request carries the transcript; the retried call the summary, not turn 1.
    BOOST_TEST(reqs[3].body.find("<transcript>") != std::string::npos);
    BOOST_TEST(reqs[4].body.find("Answered with get_weather") != std::string::npos);
    BOOST_TEST(reqs[4].body.find("call_1") == std::string::npos);
    BOOST_TEST(reqs[4].body.find("And in Bergen?") != std::string::npos);
}

// One retry layer, end to end with the default options: the provider model retries, the
// agent does not retry it again. A server that always answers 503 sees exactly
// retry_options{}.max_attempts requests, then the error reaches the caller.
BOOST_AUTO_TEST_CASE(default_retries_make_max_attempts_http_requests_then_the_error_reaches_the_caller) {
    llm_test::server srv;
    srv.set_default(llm_test::server_error(llm_test::protocol::openai, 503));
    asio::io_context io;
    transport http{io.get_executor()};
    lb::openai_model<transport> model{http, {.base_url = srv.base_url() + "/v1", .api_key = "k", .model = "gpt-test"}};
    lb::llm_agent agent{lb::llm_agent_options<lb::openai_model<transport>>{.name = "assistant", .model = model}};
    lb::memory_store store{io.get_executor()};
    lb::runner runner{agent, store};
    lb::run_options o;
    o.app = "e2e";
    o.user = "u1";
    o.session = "s1";
    lb::turn_result r = lb::run_to_end(runner, std::move(o), "hi");
    const std::size_t attempts = lb::retry_options{}.max_attempts;
    BOOST_TEST(attempts == 4u);
    BOOST_TEST(srv.request_count() == attempts);
    BOOST_TEST((r.error == lb::errc::transient));
    BOOST_TEST(r.message().starts_with("model call of agent 'assistant' failed: temporary failure: retry later: "),
               r.message());
    BOOST_TEST(r.message().find("503") != std::string::npos, r.message());
    BOOST_REQUIRE_EQUAL(r.events.size(), 1u); // the error event, stored
    BOOST_TEST(r.events[0].error().has_value());
    BOOST_TEST(r.final_answer.empty());
}

// The same through an any_model (the agent asks the wrapped model whether it retries): two
// 503s, then the answer, in three requests.
BOOST_AUTO_TEST_CASE(two_failures_then_success_with_the_default_options) {
    llm_test::server srv;
    srv.push(llm_test::server_error(llm_test::protocol::openai, 503));
    srv.push(llm_test::server_error(llm_test::protocol::openai, 503));
    srv.push(llm_test::openai_stream({.text = {"third ", "time lucky"}}));
    asio::io_context io;
    transport http{io.get_executor()};
    lb::any_model model{
        lb::openai_model<transport>{http, {.base_url = srv.base_url() + "/v1", .api_key = "k", .model = "gpt-test"}}};
    BOOST_TEST(lb::model_retries_transient(model));
    lb::llm_agent agent{lb::llm_agent_options<lb::any_model>{.name = "assistant", .model = model}};
    lb::memory_store store{io.get_executor()};
    lb::runner runner{agent, store};
    lb::run_options o;
    o.app = "e2e";
    o.user = "u1";
    o.session = "s1";
    lb::turn_result r = lb::run_to_end(runner, std::move(o), "hi");
    BOOST_TEST_REQUIRE(r.ok(), r.message());
    BOOST_TEST(srv.request_count() == 3u);
    BOOST_TEST(r.final_answer == "third time lucky");
    BOOST_REQUIRE_EQUAL(r.events.size(), 1u);
    BOOST_TEST(r.events[0].sequence == 2);
}

// Extended thinking with tools, interleaved (a thinking block before the tool call, another
// after its result) with a redacted block among them: every block is stored in the events with
// its signature or data, and each later request sends them back as they came, in order, from
// the store (a fresh runner over the reopened JSONL store) as well as from the turn itself.
// The stream's bytes follow anthropic-sdk-python's block and delta types (thinking_block.py,
// redacted_thinking_block.py, signature_delta.py).
BOOST_AUTO_TEST_CASE(anthropic_interleaved_and_redacted_thinking_go_back_unchanged_across_turns) {
    auto sse = [](std::initializer_list<std::pair<std::string, std::string>> events) {
        std::string out;
        for (const auto& [name, data] : events) out += "event: " + name + "\ndata: " + data + "\n\n";
        llm_test::reply r = llm_test::text_reply(std::move(out));
        r.proto = llm_test::protocol::anthropic;
        r.headers = {{"Content-Type", "text/event-stream"}};
        return r;
    };
    const std::string start = R"({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":50,"output_tokens":1}}})";
    const std::string stop = R"({"type":"message_stop"})";
    llm_test::server srv;
    // Turn 1, first call: thinking (signed), a redacted block, the tool call.
    srv.push(sse({{"message_start", start},
                  {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})"},
                  {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants Oslo."}})"},
                  {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-A/+=="}})"},
                  {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
                  {"content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}})"},
                  {"content_block_stop", R"({"type":"content_block_stop","index":1})"},
                  {"content_block_start", R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}})"},
                  {"content_block_delta", R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}})"},
                  {"content_block_stop", R"({"type":"content_block_stop","index":2})"},
                  {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":40}})"},
                  {"message_stop", stop}}));
    // Turn 1, second call (after the tool result): interleaved thinking, then the answer.
    srv.push(sse({{"message_start", start},
                  {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})"},
                  {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"21 degrees."}})"},
                  {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-B"}})"},
                  {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
                  {"content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})"},
                  {"content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"It is 21 °C in Oslo."}})"},
                  {"content_block_stop", R"({"type":"content_block_stop","index":1})"},
                  {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}})"},
                  {"message_stop", stop}}));
    srv.push(llm_test::anthropic_stream({.text = {"You are welcome."}}));

    asio::io_context io;
    transport http{io.get_executor()};
    lb::anthropic_model<transport> model{
        http, {.base_url = srv.base_url(), .api_key = "k", .model = "claude-sonnet-4-5", .thinking_budget_tokens = 2048}};
    const auto dir = fresh_dir("thinking-sessions");
    {
        lb::jsonl_store store{io.get_executor(), {.directory = dir}};
        auto events = run_turn(model, store, "Weather in Oslo?");
        BOOST_REQUIRE_EQUAL(events.size(), 3u);
        // The tool-call event holds both thinking blocks of the first call, each with its own.
        std::vector<lb::thinking_part> thinking;
        for (const auto& p : events[0].content.parts)
            if (const auto* t = std::get_if<lb::thinking_part>(&p)) thinking.push_back(*t);
        BOOST_REQUIRE_EQUAL(thinking.size(), 2u);
        BOOST_TEST(thinking[0].thinking == "The user wants Oslo.");
        BOOST_TEST(thinking[0].metadata.at("signature") == "sig-A/+==");
        BOOST_TEST(thinking[1].metadata.at("redacted_data") == "EmwKAhgBEgy3va3pzix");
    }
    {
        lb::jsonl_store reopened{io.get_executor(), {.directory = dir}};
        io.restart();
        auto events = run_turn(model, reopened, "Thanks!");
        BOOST_REQUIRE_EQUAL(events.size(), 1u);
        BOOST_TEST(events[0].text() == "You are welcome.");
    }
    auto reqs = srv.requests();
    BOOST_REQUIRE_EQUAL(reqs.size(), 3u);
    // The assistant turn as the API requires it back: the blocks in order, unchanged.
    const json::array want_first = json::parse(R"([
        {"type":"thinking","thinking":"The user wants Oslo.","signature":"sig-A/+=="},
        {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}])").as_array();
    const json::array want_second = json::parse(R"([
        {"type":"thinking","thinking":"21 degrees.","signature":"sig-B"},
        {"type":"text","text":"It is 21 °C in Oslo."}])").as_array();
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
        BOOST_TEST_CONTEXT("request " << i) {
            const json::value body = reqs[i].json();
            const json::array& messages = body.at("messages").as_array();
            BOOST_REQUIRE(messages.size() >= 3u);
            BOOST_TEST(messages[1].at("role") == "assistant");
            BOOST_TEST(messages[1].at("content") == want_first, json::serialize(messages[1]));
            BOOST_TEST(messages[2].at("content").at(0).at("type") == "tool_result");
            if (i == 2) {
                BOOST_REQUIRE_EQUAL(messages.size(), 5u);
                BOOST_TEST(messages[3].at("content") == want_second, json::serialize(messages[3]));
                BOOST_TEST(messages[4].at("content").at(0).at("text") == "Thanks!");
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
