// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/event/json.hpp>
#include <libretto/model/llm_response.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace lb = libretto;
namespace json = boost::json;
using lb::finish_reason;
using lb::llm_chunk;
using lb::llm_response;
using lb::llm_response_accumulator;
using lb::tool_call_delta;

namespace {

llm_chunk text(std::string s) {
    llm_chunk c;
    c.text = std::move(s);
    return c;
}

llm_chunk fragment(std::optional<std::size_t> index, std::string id, std::string name, std::string args) {
    llm_chunk c;
    c.tool_calls.push_back(tool_call_delta{index, std::move(id), std::move(name), std::move(args)});
    return c;
}

llm_response fold(const std::vector<llm_chunk>& chunks) {
    llm_response_accumulator acc;
    for (const auto& c : chunks) acc.add(c);
    return std::move(acc).finish();
}

} // namespace

BOOST_AUTO_TEST_SUITE(llm_response_accumulator_tests)

BOOST_AUTO_TEST_CASE(text_and_thinking_deltas_are_concatenated) {
    llm_chunk t1;
    t1.thinking = "The user ";
    llm_chunk t2;
    t2.thinking = "wants a greeting.";
    llm_chunk done;
    done.finish = finish_reason::stop;
    done.model_version = "m-2024";
    auto r = fold({t1, t2, text("Hel"), text("lo"), text(", world"), done});
    BOOST_TEST(r.ok());
    BOOST_TEST(r.text() == "Hello, world");
    BOOST_TEST(r.thinking() == "The user wants a greeting.");
    BOOST_REQUIRE(r.parts.size() == 2u);
    BOOST_TEST(std::holds_alternative<lb::thinking_part>(r.parts[0])); // thinking first
    BOOST_TEST(std::holds_alternative<lb::text_part>(r.parts[1]));
    BOOST_TEST(r.finish == finish_reason::stop);
    BOOST_TEST(r.model_version == "m-2024");
    BOOST_TEST(!r.usage.has_value());
    BOOST_TEST(!r.has_tool_calls());
}

BOOST_AUTO_TEST_CASE(an_empty_stream_is_an_empty_stop) {
    auto r = fold({});
    BOOST_TEST(r.ok());
    BOOST_TEST(r.parts.empty());
    BOOST_TEST(r.finish == finish_reason::stop);
}

BOOST_AUTO_TEST_CASE(fragmented_arguments_keyed_by_index_are_joined_and_parsed) {
    // OpenAI style: id and name on the first fragment, arguments in pieces, two calls interleaved.
    auto r = fold({fragment(0, "call_a", "get_weather", ""),
                   fragment(0, "", "", "{\"ci"),
                   fragment(1, "call_b", "get_time", "{\"tz\":"),
                   fragment(0, "", "", "ty\": \"Os"),
                   fragment(1, "", "", "\"CET\"}"),
                   fragment(0, "", "", "lo\"}")});
    auto calls = r.tool_calls();
    BOOST_REQUIRE(calls.size() == 2u);
    auto it = calls.begin();
    BOOST_TEST(it->tool_call_id == "call_a");
    BOOST_TEST(it->tool_name == "get_weather");
    BOOST_TEST(json::value(it->args) == json::parse(R"({"city":"Oslo"})"));
    ++it;
    BOOST_TEST(it->tool_call_id == "call_b");
    BOOST_TEST(it->tool_name == "get_time");
    BOOST_TEST(json::value(it->args) == json::parse(R"({"tz":"CET"})"));
    BOOST_TEST(r.invalid_tool_calls.empty());
    // No finish reason reported: calls imply tool_calls.
    BOOST_TEST(r.finish == finish_reason::tool_calls);
}

BOOST_AUTO_TEST_CASE(fragments_without_index_match_by_id_or_continue_the_last_call) {
    auto r = fold({fragment(std::nullopt, "x1", "first", "{\"a\":"),
                   fragment(std::nullopt, "x2", "second", "{"),
                   fragment(std::nullopt, "x1", "", "1}"),
                   fragment(std::nullopt, "", "", "\"b\":2}")}); // neither: continues x2
    auto calls = r.tool_calls();
    BOOST_REQUIRE(calls.size() == 2u);
    BOOST_TEST(json::value(calls.front().args) == json::parse(R"({"a":1})"));
    BOOST_TEST(json::value(std::next(calls.begin())->args) == json::parse(R"({"b":2})"));
}

BOOST_AUTO_TEST_CASE(blank_arguments_mean_an_empty_object) {
    auto r = fold({fragment(0, "c", "now", ""), fragment(1, "d", "later", "  \n")});
    BOOST_REQUIRE(r.tool_calls().size() == 2u);
    BOOST_TEST(r.tool_calls().front().args.empty());
    BOOST_TEST(r.invalid_tool_calls.empty());
}

BOOST_AUTO_TEST_CASE(invalid_json_arguments_become_an_error_naming_the_call) {
    llm_chunk done;
    done.finish = finish_reason::tool_calls;
    auto r = fold({fragment(0, "call_1", "get_weather", "{\"city\": Oslo}"),
                   fragment(1, "call_2", "get_time", "{}"), done});
    BOOST_TEST(r.ok()); // the reply itself is usable: the agent answers the bad call with an error
    BOOST_REQUIRE(r.tool_calls().size() == 1u);
    BOOST_TEST(r.tool_calls().front().tool_name == "get_time");
    BOOST_TEST(r.has_tool_calls());
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 1u);
    const auto& bad = r.invalid_tool_calls[0];
    BOOST_TEST(bad.id == "call_1");
    BOOST_TEST(bad.name == "get_weather");
    BOOST_TEST(bad.arguments == "{\"city\": Oslo}");
    BOOST_TEST(bad.error.starts_with("tool call 'get_weather' (id call_1): arguments are not valid JSON ("), bad.error);
    BOOST_TEST(bad.error.ends_with("): {\"city\": Oslo}"), bad.error);

    // What the agent records and answers.
    auto c = bad.as_call();
    BOOST_TEST(c.tool_call_id == "call_1");
    BOOST_TEST(c.tool_name == "get_weather");
    BOOST_TEST(c.args.empty());
    BOOST_TEST(c.metadata.at("invalid_arguments") == json::value("{\"city\": Oslo}"));
    auto resp = bad.error_response();
    BOOST_TEST(resp.tool_call_id == "call_1");
    BOOST_TEST(resp.error.value_or("") == bad.error);
    // The shape of every failed tool call (tool_error_response): the message in `error`
    // and in the result body.
    BOOST_TEST(resp.tool_name == "get_weather");
    BOOST_TEST(resp.result.is_object());
    BOOST_TEST(resp.result.as_object().at("error") == json::value(bad.error));
    BOOST_TEST(resp.result.as_object().size() == 1u);
}

BOOST_AUTO_TEST_CASE(arguments_no_store_could_keep_are_invalid_with_the_reason) {
    // The rule of json_limits.hpp at the model boundary: the model hears what was wrong,
    // rather than the turn failing later when the store refuses the event.
    const std::string deep = "{\"a\":" + std::string(252, '[') + "1" + std::string(252, ']') + "}";
    const std::string deepest = "{\"a\":" + std::string(251, '[') + "1" + std::string(251, ']') + "}";
    auto r = fold({fragment(0, "a", "t", "{\"x\":1e400}"), fragment(1, "b", "t", "{\"k\":1,\"k\":2}"),
                   fragment(2, "c", "t", deep), fragment(3, "d", "t", deepest),
                   fragment(4, "e", "t", "{\"x\":0.1,\"y\":1.7976931348623157e308}")});
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 3u);
    BOOST_TEST(r.invalid_tool_calls[0].error.starts_with(
                   "tool call 't' (id a): arguments are not valid JSON (number 1e400 is out of the range of a double)"),
               r.invalid_tool_calls[0].error);
    BOOST_TEST(r.invalid_tool_calls[1].error.starts_with(
                   "tool call 't' (id b): arguments are not valid JSON (the key \"k\" appears twice in one object)"),
               r.invalid_tool_calls[1].error);
    BOOST_TEST(r.invalid_tool_calls[2].error.starts_with(
                   "tool call 't' (id c): arguments are not valid JSON (arrays and objects nest deeper than 252 levels)"),
               r.invalid_tool_calls[2].error);
    BOOST_REQUIRE(r.tool_calls().size() == 2u);
    // The deepest arguments that fit in a stored event are a call, and are stored as one.
    lb::event e;
    e.id = "e";
    e.content.parts.push_back(r.tool_calls().front());
    std::string out, why;
    BOOST_TEST(!lb::serialize_event_checked(e, out, why), why);
    const auto& last = *std::next(r.tool_calls().begin());
    BOOST_TEST(last.args.at("x").as_double() == 0.1);
    BOOST_TEST(last.args.at("y").as_double() == std::numeric_limits<double>::max());
}

BOOST_AUTO_TEST_CASE(truncated_arguments_are_invalid) {
    // A stream cut off mid-call (e.g. by the output limit).
    llm_chunk done;
    done.finish = finish_reason::length;
    auto r = fold({fragment(0, "c9", "write", "{\"text\": \"abc"), done});
    BOOST_TEST(r.tool_calls().empty());
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 1u);
    BOOST_TEST(r.invalid_tool_calls[0].error.starts_with("tool call 'write' (id c9): arguments are not valid JSON"));
    BOOST_TEST(r.finish == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(arguments_that_are_not_an_object_are_invalid) {
    auto r = fold({fragment(0, "a", "t", "[1,2]"), fragment(1, "b", "t", "\"x\""), fragment(2, "c", "t", "42"),
                   fragment(3, "d", "t", "null")});
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 4u);
    BOOST_TEST(r.invalid_tool_calls[0].error == "tool call 't' (id a): arguments must be a JSON object, got an array");
    BOOST_TEST(r.invalid_tool_calls[1].error == "tool call 't' (id b): arguments must be a JSON object, got a string");
    BOOST_TEST(r.invalid_tool_calls[2].error == "tool call 't' (id c): arguments must be a JSON object, got a number");
    BOOST_TEST(r.invalid_tool_calls[3].error == "tool call 't' (id d): arguments must be a JSON object, got null");
}

BOOST_AUTO_TEST_CASE(a_call_without_a_name_is_invalid_and_named_by_position) {
    auto r = fold({fragment(0, "ok", "t", "{}"), fragment(1, "n1", "", "{}")});
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 1u);
    BOOST_TEST(r.invalid_tool_calls[0].error == "tool call #1 (id n1): no tool name");
}

BOOST_AUTO_TEST_CASE(calls_without_an_id_get_fresh_distinct_ids) {
    auto r = fold({fragment(0, "", "a", "{}"), fragment(1, "", "b", "{}")});
    BOOST_REQUIRE(r.tool_calls().size() == 2u);
    const auto& first = r.tool_calls().front().tool_call_id;
    const auto& second = std::next(r.tool_calls().begin())->tool_call_id;
    BOOST_TEST(first.starts_with("call-"));
    BOOST_TEST(first.size() == 5u + 36u);
    BOOST_TEST(second.starts_with("call-"));
    BOOST_TEST(first != second);
}

BOOST_AUTO_TEST_CASE(long_invalid_arguments_are_shown_cut_on_a_character_boundary) {
    // 199 ASCII bytes then "é" (2 bytes): byte 200 is inside the character.
    std::string args = "{" + std::string(198, 'a') + "é and more";
    auto r = fold({fragment(0, "c", "t", args)});
    BOOST_REQUIRE(r.invalid_tool_calls.size() == 1u);
    const std::string& e = r.invalid_tool_calls[0].error;
    BOOST_TEST(e.ends_with(std::string(198, 'a') + "..."), e);
    // The message survives a JSON round trip (valid UTF-8).
    BOOST_TEST(json::parse(json::serialize(json::value(e))).as_string() == e);
}

BOOST_AUTO_TEST_CASE(usage_reports_are_running_totals) {
    // Each report is the running total and the latest wins (the decoders carry forward what
    // a provider's report leaves out), zeros included.
    llm_chunk start;
    start.usage = lb::usage{.input_tokens = 120, .output_tokens = 1};
    start.model_version = "claude-x";
    llm_chunk end;
    end.usage = lb::usage{.input_tokens = 120, .output_tokens = 37};
    end.finish = finish_reason::stop;
    auto r = fold({start, text("hi"), end});
    BOOST_REQUIRE(r.usage.has_value());
    BOOST_TEST(r.usage->input_tokens == 120);
    BOOST_TEST(r.usage->output_tokens == 37);
    BOOST_TEST(r.usage->total_tokens() == 157);
    BOOST_TEST(r.usage->model_version == "claude-x");
    BOOST_TEST(r.model_version == "claude-x");
    // A last report of 0 output tokens is 0, not the 1 reported before it.
    end.usage = lb::usage{.input_tokens = 120, .output_tokens = 0};
    auto zero = fold({start, end});
    BOOST_REQUIRE(zero.usage.has_value());
    BOOST_TEST(zero.usage->output_tokens == 0);
    BOOST_TEST(zero.usage->input_tokens == 120);
}

BOOST_AUTO_TEST_CASE(the_thinking_signature_is_kept_in_metadata) {
    llm_chunk a;
    a.thinking = "hmm";
    a.thinking_signature = "sig-";
    llm_chunk b;
    b.thinking_signature = "123";
    auto r = fold({a, b, text("ok")});
    const auto& t = std::get<lb::thinking_part>(r.parts[0]);
    BOOST_TEST(t.thinking == "hmm");
    BOOST_TEST(t.metadata.at("signature") == json::value("sig-123"));
}

BOOST_AUTO_TEST_CASE(thinking_blocks_stay_apart_with_their_own_signatures) {
    // Chunks of two blocks interleaved, a redacted block, and a block number with nothing
    // in it (2): a part per non-empty block, in block order.
    auto chunk = [](std::size_t block, std::string thinking, std::string sig = {}, std::string redacted = {}) {
        llm_chunk c;
        c.thinking_block = block;
        c.thinking = std::move(thinking);
        c.thinking_signature = std::move(sig);
        c.redacted_thinking = std::move(redacted);
        return c;
    };
    auto r = fold({chunk(0, "first "), chunk(1, {}, {}, "RED=="), chunk(0, "block", "sigA"), text("answer"),
                   chunk(3, "second", "sigB")});
    BOOST_TEST(r.text() == "answer");
    BOOST_TEST(r.thinking() == "first blocksecond"); // the readable thinking, redacted data never
    std::vector<lb::thinking_part> parts(lb::part_view<lb::thinking_part>(r.parts).begin(),
                                         lb::part_view<lb::thinking_part>(r.parts).end());
    BOOST_REQUIRE(parts.size() == 3u);
    BOOST_TEST(parts[0].thinking == "first block");
    BOOST_TEST(parts[0].metadata.at("signature") == json::value("sigA"));
    BOOST_TEST(parts[1].thinking.empty());
    BOOST_TEST(parts[1].metadata.at("redacted_data") == json::value("RED=="));
    BOOST_TEST(!parts[1].metadata.contains("signature"));
    BOOST_TEST(parts[2].thinking == "second");
    BOOST_TEST(parts[2].metadata.at("signature") == json::value("sigB"));
    BOOST_TEST(std::holds_alternative<lb::thinking_part>(r.parts[0])); // thinking first, then the text
    BOOST_TEST(std::holds_alternative<lb::text_part>(r.parts[3]));
    // A redacted block is content: a retry after it would repeat it.
    BOOST_TEST(chunk(5, {}, {}, "x").has_content());
    BOOST_TEST(!chunk(5, {}, {}, "x").empty());
    BOOST_TEST(!llm_chunk{}.has_content());
}

BOOST_AUTO_TEST_CASE(a_thinking_block_number_past_the_bound_fails_the_response) {
    // SIZE_MAX once wrapped resize(n + 1) to 0 and indexed past the end; 1e9 allocated ~96 GB.
    auto chunk = [](std::size_t block, std::string thinking) {
        llm_chunk c;
        c.thinking_block = block;
        c.thinking = std::move(thinking);
        return c;
    };
    for (std::size_t block : {std::numeric_limits<std::size_t>::max(), std::size_t{1000000000}, lb::max_tool_calls}) {
        llm_response_accumulator acc;
        acc.add(chunk(0, "kept"));
        acc.add(chunk(block, "garbage"));
        BOOST_TEST(acc.failed());
        acc.add(text("after"));
        auto r = std::move(acc).finish();
        BOOST_TEST(!r.ok());
        BOOST_TEST((r.error == lb::errc::bad_response), "block " << block);
        BOOST_TEST(r.error_message.find("thinking block " + std::to_string(block)) != std::string::npos,
                   r.error_message);
        BOOST_TEST(r.error_message.find("4096") != std::string::npos, r.error_message);
        BOOST_TEST(r.thinking() == "kept"); // what arrived before, the refused block left out
        BOOST_TEST(r.text() == "after");
    }
    // The last number the bound allows is a block like any other.
    auto r = fold({chunk(lb::max_tool_calls - 1, "last")});
    BOOST_TEST(r.ok());
    BOOST_TEST(r.thinking() == "last");
}

BOOST_AUTO_TEST_CASE(a_failure_keeps_what_arrived_before_it) {
    llm_response_accumulator acc;
    acc.add(text("Partial ans"));
    acc.add(fragment(0, "c", "t", "{\"a\":1}"));
    BOOST_TEST(acc.text() == "Partial ans");
    acc.fail(lb::errc::transient, "overloaded_error: Overloaded", std::chrono::milliseconds(1500));
    auto r = std::move(acc).finish();
    BOOST_TEST(!r.ok());
    BOOST_TEST((r.error == lb::errc::transient));
    BOOST_TEST(lb::is_transient(r.error));
    BOOST_TEST(r.error_message == "overloaded_error: Overloaded");
    BOOST_TEST(r.finish == finish_reason::error);
    BOOST_TEST(r.retry_after.value_or(std::chrono::milliseconds(0)).count() == 1500);
    BOOST_TEST(r.text() == "Partial ans");
    BOOST_TEST(r.tool_calls().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_final_chunk_replaces_the_accumulated_deltas) {
    llm_response given = llm_response::failure(lb::errc::context_overflow, "prompt is too long");
    auto r = fold({text("ignored"), llm_chunk::last(given)});
    BOOST_TEST((r == given));
    BOOST_TEST(r.finish == finish_reason::error);
    BOOST_TEST(r.text().empty());
}

BOOST_AUTO_TEST_CASE(chunk_helpers) {
    BOOST_TEST(llm_chunk{}.empty());
    BOOST_TEST(!text("x").empty());
    auto last = llm_chunk::last(llm_response{});
    BOOST_TEST(last.is_final());
    BOOST_TEST(!last.empty());
    BOOST_TEST(lb::to_string(finish_reason::content_filter) == "content_filter");
    BOOST_TEST(lb::to_string(finish_reason::tool_calls) == "tool_calls");
}

BOOST_AUTO_TEST_SUITE_END()
