// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/detail/small_id_map.hpp>
#include <libretto/model/llm_request.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>

#include <string>
#include <vector>

namespace lb = libretto;
namespace json = boost::json;
using lb::event;
using lb::event_type;
using lb::message;
using lb::message_role;

namespace {

std::int64_t next_sequence = 0;

event make(event_type t, std::string author, std::vector<lb::part> parts) {
    event e;
    e.id = "e" + std::to_string(++next_sequence);
    e.sequence = next_sequence;
    e.timestamp = static_cast<double>(next_sequence);
    e.type = t;
    e.author = std::move(author);
    e.content.parts = std::move(parts);
    return e;
}

lb::part text(std::string s) { return lb::text_part{std::move(s), {}}; }
lb::part thinking(std::string s) { return lb::thinking_part{std::move(s), {}}; }
lb::part call(std::string id, std::string name, std::string args) {
    return lb::tool_call_part{std::move(id), std::move(name), json::parse(args).as_object(), {}};
}
lb::part response(std::string id, std::string name, json::value result) {
    return lb::tool_response_part{std::move(id), std::move(name), std::move(result), std::nullopt, {}};
}
lb::part failure(std::string id, std::string name, std::string error) {
    return lb::tool_response_part{std::move(id), std::move(name), nullptr, std::move(error), {}};
}

event user(std::string s) { return make(event_type::user_message, "user", {text(std::move(s))}); }
event reply(std::string author, std::vector<lb::part> parts) {
    return make(event_type::agent_message, std::move(author), std::move(parts));
}
event results(std::string author, std::vector<lb::part> parts) {
    return make(event_type::tool_response, std::move(author), std::move(parts));
}

/// The texts of a message's parts, "<kind>:<text>" for non-text parts.
std::vector<std::string> texts(const message& m) {
    std::vector<std::string> out;
    for (const auto& p : m.parts) {
        if (auto t = std::get_if<lb::text_part>(&p)) out.push_back(t->text);
        else if (auto k = std::get_if<lb::thinking_part>(&p)) out.push_back("thinking:" + k->thinking);
        else if (auto c = std::get_if<lb::tool_call_part>(&p)) out.push_back("call:" + c->tool_call_id);
        else if (auto r = std::get_if<lb::tool_response_part>(&p)) out.push_back("response:" + r->tool_call_id);
        else if (std::holds_alternative<lb::data_part>(p)) out.push_back("data");
        else out.push_back("file");
    }
    return out;
}

std::vector<std::string> roles(const std::vector<message>& ms) {
    std::vector<std::string> out;
    for (const auto& m : ms) out.emplace_back(lb::to_string(m.role));
    return out;
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(llm_request)

BOOST_AUTO_TEST_CASE(request_defaults_leave_everything_to_the_provider) {
    lb::llm_request r;
    BOOST_TEST(r.model.empty());
    BOOST_TEST(r.system_instruction.empty());
    BOOST_TEST(r.messages.empty());
    BOOST_TEST(r.tools.empty());
    BOOST_TEST(!r.output_schema.has_value());
    BOOST_TEST(!r.options.temperature.has_value());
    BOOST_TEST(!r.options.top_p.has_value());
    BOOST_TEST(!r.options.max_output_tokens.has_value());
    BOOST_TEST(r.options.stop_sequences.empty());
    BOOST_TEST(!r.options.seed.has_value());

    lb::llm_request a{.system_instruction = "Be brief.",
                      .messages = {message::user("hi")},
                      .tools = {lb::tool_declaration{.name = "clock"}},
                      .options = {.temperature = 0.2, .stop_sequences = {"END"}}};
    lb::llm_request b = a;
    BOOST_TEST((a == b));
    b.options.seed = 7;
    BOOST_TEST((a != b));
    BOOST_TEST(a.messages[0].text() == "hi");
    BOOST_TEST(lb::to_string(message_role::assistant) == "assistant");
}

BOOST_AUTO_TEST_CASE(tool_lists_share_until_changed) {
    lb::tool_declaration clock{.name = "clock", .description = "Current time", .parameters = json::parse(R"({"type":"object"})").as_object()};
    lb::tool_list a{clock, lb::tool_declaration{.name = "add"}};
    lb::tool_list b = a;
    BOOST_TEST(b.shares_with(a));
    BOOST_TEST((b == a));
    BOOST_TEST(&b[0] == &a[0]); // one vector, not a copy
    lb::llm_request r;
    r.tools = a;
    lb::llm_request copy = r;
    BOOST_TEST(copy.tools.shares_with(a));

    // A change gives the changed list a vector of its own; the others keep theirs.
    b.edit()[0].description = "Now";
    BOOST_TEST(!b.shares_with(a));
    BOOST_TEST(a[0].description == "Current time");
    BOOST_TEST(b[0].description == "Now");
    BOOST_TEST((b != a));
    copy.tools.push_back(lb::tool_declaration{.name = "third"});
    BOOST_TEST(copy.tools.size() == 3u);
    BOOST_TEST(a.size() == 2u);
    BOOST_TEST(r.tools.size() == 2u);
    // Equal contents compare equal without sharing.
    lb::tool_list c{clock, lb::tool_declaration{.name = "add"}};
    BOOST_TEST(!c.shares_with(a));
    BOOST_TEST((c == a));
    // An unshared list changes in place.
    const lb::tool_declaration* before = &c[0];
    c.edit().back().description = "Adds";
    BOOST_TEST(&c.vec()[0] == before);
}

BOOST_AUTO_TEST_CASE(an_empty_tool_list) {
    lb::tool_list none;
    BOOST_TEST(none.empty());
    BOOST_TEST(none.size() == 0u);
    BOOST_TEST((none.begin() == none.end()));
    BOOST_TEST(!none.shares_with(lb::tool_list{}));
    BOOST_TEST((none == lb::tool_list{}));
    BOOST_TEST((none == lb::tool_list(std::vector<lb::tool_declaration>{})));
    BOOST_CHECK_THROW(none.at(0), std::out_of_range);
    none.push_back(lb::tool_declaration{.name = "x"});
    BOOST_TEST(none.size() == 1u);
    BOOST_TEST(none.at(0).name == "x");
    BOOST_CHECK_THROW(none.at(1), std::out_of_range);
    none.clear();
    BOOST_TEST(none.empty());
}

BOOST_AUTO_TEST_CASE(single_agent_turn_with_a_tool_pair) {
    std::vector<event> ev;
    ev.push_back(user("Weather in Oslo?"));
    ev.push_back(reply("assistant", {thinking("need the tool"), text("Let me check."),
                                     call("c1", "get_weather", R"({"city":"Oslo"})")}));
    ev.push_back(results("assistant", {response("c1", "get_weather", json::parse(R"({"temp_c":21})"))}));
    ev.push_back(reply("assistant", {text("It is 21 °C.")}));

    auto ms = lb::build_messages(lb::make_context_view(ev), "assistant");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool", "assistant"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[0]) == (strings{"Weather in Oslo?"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[1]) == (strings{"thinking:need the tool", "Let me check.", "call:c1"}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[2]) == (strings{"response:c1"}), boost::test_tools::per_element());
    BOOST_TEST(ms[2].tool_responses().front().result == json::parse(R"({"temp_c":21})"));
    BOOST_TEST(ms[1].tool_calls().front().args == json::parse(R"({"city":"Oslo"})").as_object());
    BOOST_TEST(ms[3].text() == "It is 21 °C.");
}

BOOST_AUTO_TEST_CASE(other_agents_are_presented_as_user_context) {
    std::vector<event> ev;
    ev.push_back(user("Write a report on Oslo."));
    ev.push_back(reply("researcher", {thinking("private plan"), call("r1", "search", R"({"q":"Oslo"})")}));
    ev.push_back(results("researcher", {response("r1", "search", "Capital of Norway")}));
    ev.push_back(reply("researcher", {text("Oslo is the capital.")}));
    ev.push_back(reply("writer", {text("Draft: Oslo is the capital.")}));

    auto ms = lb::build_messages(lb::make_context_view(ev), "writer");
    BOOST_TEST(roles(ms) == (strings{"user", "user", "user", "user", "assistant"}), boost::test_tools::per_element());
    // The researcher's thinking is dropped, its call and result become text.
    BOOST_TEST(texts(ms[1]) == (strings{"For context:", "[researcher] called tool `search` with parameters: {\"q\":\"Oslo\"}"}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[2]) == (strings{"For context:", "[researcher] `search` tool returned result: Capital of Norway"}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[3]) == (strings{"For context:", "[researcher] said: Oslo is the capital."}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[4]) == (strings{"Draft: Oslo is the capital."}), boost::test_tools::per_element());

    // From the researcher's side, the writer is the other agent and its own turn is intact.
    auto rs = lb::build_messages(lb::make_context_view(ev), "researcher");
    BOOST_TEST(roles(rs) == (strings{"user", "assistant", "tool", "assistant", "user"}), boost::test_tools::per_element());
    BOOST_TEST(texts(rs[1]) == (strings{"thinking:private plan", "call:r1"}), boost::test_tools::per_element());
    BOOST_TEST(texts(rs[4]) == (strings{"For context:", "[writer] said: Draft: Oslo is the capital."}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(other_agent_json_results_errors_and_data_are_rendered_as_text) {
    std::vector<event> ev;
    ev.push_back(user("go"));
    ev.push_back(reply("a", {call("x", "calc", R"({"expr":"1+1"})"), call("y", "fetch", "{}")}));
    ev.push_back(results("a", {response("x", "calc", json::parse(R"({"value":2})")), failure("y", "fetch", "timeout")}));
    ev.push_back(reply("a", {lb::data_part{json::parse(R"({"answer":2})").as_object(), {}}}));

    auto ms = lb::build_messages(lb::make_context_view(ev), "b");
    BOOST_TEST(ms.size() == 4u);
    BOOST_TEST(texts(ms[1]) == (strings{"For context:", "[a] called tool `calc` with parameters: {\"expr\":\"1+1\"}",
                                        "[a] called tool `fetch` with parameters: {}"}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[2]) == (strings{"For context:", "[a] `calc` tool returned result: {\"value\":2}",
                                        "[a] `fetch` tool failed: timeout"}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[3]) == (strings{"For context:", "[a] said: {\"answer\":2}"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(another_agents_thinking_only_reply_is_omitted) {
    std::vector<event> ev;
    ev.push_back(user("hi"));
    ev.push_back(reply("a", {thinking("hmm"), text("")}));
    ev.push_back(reply("a", {thinking("still thinking"), text("Hello")}));
    // make_context_view drops the first (no text); build_messages on the raw span drops it too,
    // because nothing but "For context:" would be left.
    auto raw = lb::build_messages(std::span<const event>(ev), "b");
    BOOST_TEST(roles(raw) == (strings{"user", "user"}), boost::test_tools::per_element());
    BOOST_TEST(texts(raw[1]) == (strings{"For context:", "[a] said: Hello"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(thinking_is_kept_only_for_the_same_agent) {
    std::vector<event> ev;
    ev.push_back(user("q"));
    ev.push_back(reply("me", {thinking("my reasoning"), text("my answer")}));
    ev.push_back(reply("other", {thinking("their reasoning"), text("their answer")}));

    auto ms = lb::build_messages(lb::make_context_view(ev), "me");
    BOOST_TEST(texts(ms[1]) == (strings{"thinking:my reasoning", "my answer"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[2]) == (strings{"For context:", "[other] said: their answer"}), boost::test_tools::per_element());

    // Thinking in a user message is never sent.
    std::vector<event> odd;
    odd.push_back(make(event_type::user_message, "user", {thinking("?"), text("hello")}));
    auto us = lb::build_messages(std::span<const event>(odd), "me");
    BOOST_TEST(texts(us[0]) == (strings{"hello"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_empty_agent_name_treats_every_author_as_this_agent) {
    std::vector<event> ev;
    ev.push_back(user("q"));
    ev.push_back(reply("a", {thinking("t1"), text("one")}));
    ev.push_back(reply("b", {thinking("t2"), text("two")}));
    auto ms = lb::build_messages(lb::make_context_view(ev), "");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "assistant"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[2]) == (strings{"thinking:t2", "two"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(parallel_call_responses_are_grouped_in_call_order) {
    std::vector<event> ev;
    ev.push_back(user("both cities"));
    ev.push_back(reply("me", {call("c1", "w", R"({"city":"Oslo"})"), call("c2", "w", R"({"city":"Rome"})")}));
    // The second call finished first; each response is its own event.
    ev.push_back(results("me", {response("c2", "w", 30)}));
    ev.push_back(results("me", {response("c1", "w", 21)}));
    ev.push_back(reply("me", {text("Oslo 21, Rome 30")}));

    auto ms = lb::build_messages(lb::make_context_view(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool", "assistant"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[2]) == (strings{"response:c1", "response:c2"}), boost::test_tools::per_element());
    BOOST_TEST(ms[2].tool_responses().front().result == json::value(21));
}

BOOST_AUTO_TEST_CASE(a_late_response_is_moved_next_to_its_call) {
    // A long-running tool: its result arrives after the user spoke again.
    std::vector<event> ev;
    ev.push_back(user("book it"));
    ev.push_back(reply("me", {call("c1", "book", "{}")}));
    ev.push_back(results("me", {response("c1", "book", "pending")}));
    ev.push_back(user("any news?"));
    ev.push_back(results("user", {response("c1", "book", "confirmed")}));

    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool", "user"}), boost::test_tools::per_element());
    // The final result supersedes the interim one.
    BOOST_TEST(ms[2].tool_responses().size() == 1u);
    BOOST_TEST(ms[2].tool_responses().front().result == json::value("confirmed"));
    BOOST_TEST(ms[3].text() == "any news?");
}

BOOST_AUTO_TEST_CASE(a_call_id_reused_at_a_later_step_gets_its_own_response) {
    // Servers that number calls per reply send id "0" at every step. Each response answers
    // the nearest earlier unanswered call: once step 1's call took step 2's result and step
    // 2's call went unanswered, which providers reject.
    std::vector<event> ev;
    ev.push_back(user("two lookups"));
    ev.push_back(reply("me", {call("0", "look", R"({"q":"a"})")}));
    ev.push_back(results("me", {response("0", "look", "first")}));
    ev.push_back(reply("me", {call("0", "look", R"({"q":"b"})")}));
    ev.push_back(results("me", {response("0", "look", "second")}));
    ev.push_back(reply("me", {text("done")}));

    for (int pass = 0; pass < 2; ++pass) { // the view and the events as they are
        auto ms = pass == 0 ? lb::build_messages(lb::make_context_view(ev), "me")
                            : lb::build_messages(std::span<const event>(ev), "me");
        BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool", "assistant", "tool", "assistant"}),
                   boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(ms.size() == 6u);
        BOOST_TEST(ms[1].tool_calls().front().args == json::parse(R"({"q":"a"})").as_object());
        BOOST_TEST_REQUIRE(ms[2].tool_responses().size() == 1u);
        BOOST_TEST(ms[2].tool_responses().front().result == json::value("first"));
        BOOST_TEST(ms[3].tool_calls().front().args == json::parse(R"({"q":"b"})").as_object());
        BOOST_TEST_REQUIRE(ms[4].tool_responses().size() == 1u);
        BOOST_TEST(ms[4].tool_responses().front().result == json::value("second"));
    }

    // An interim then a final response to the second call: the final one supersedes.
    ev.pop_back();
    ev.push_back(results("user", {response("0", "look", "final")}));
    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool", "assistant", "tool"}), boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(ms.size() == 5u);
    BOOST_TEST(ms[2].tool_responses().front().result == json::value("first"));
    BOOST_TEST_REQUIRE(ms[4].tool_responses().size() == 1u);
    BOOST_TEST(ms[4].tool_responses().front().result == json::value("final"));
}

BOOST_AUTO_TEST_CASE(calls_sharing_an_id_in_one_reply_are_answered_in_order) {
    std::vector<event> ev;
    ev.push_back(user("both"));
    ev.push_back(reply("me", {call("x", "look", R"({"n":1})"), call("x", "look", R"({"n":2})")}));
    ev.push_back(results("me", {response("x", "look", 1)}));
    ev.push_back(results("me", {response("x", "look", 2)}));

    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool"}), boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(ms.size() == 3u);
    std::vector<json::value> got;
    for (const auto& r : ms[2].tool_responses()) got.push_back(r.result);
    BOOST_TEST((got == std::vector<json::value>{json::value(1), json::value(2)}));
}

BOOST_AUTO_TEST_CASE(responses_without_an_earlier_call_become_context_text) {
    std::vector<event> ev;
    ev.push_back(results("me", {response("ghost", "lookup", json::parse("[1,2]"))}));
    ev.push_back(user("hi"));
    // A call made by another agent does not make its response this agent's.
    ev.push_back(reply("other", {call("o1", "t", "{}")}));
    ev.push_back(results("me", {response("o1", "t", true)}));

    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "user", "user", "user"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[0]) == (strings{"For context:", "[me] `lookup` tool returned result: [1,2]"}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(ms[3]) == (strings{"For context:", "[me] `t` tool returned result: true"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(partial_and_lifecycle_events_are_skipped) {
    std::vector<event> ev;
    ev.push_back(user("hi"));
    ev.push_back(make(event_type::agent_start, "me", {}));
    event chunk = reply("me", {text("Hel")});
    chunk.partial = true;
    ev.push_back(chunk);
    ev.push_back(reply("me", {text("Hello")}));
    ev.push_back(make(event_type::agent_end, "me", {}));
    // The raw-span form skips them as well, even though it does no other filtering.
    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant"}), boost::test_tools::per_element());
    BOOST_TEST(ms[1].text() == "Hello");
    auto vs = lb::build_messages(lb::make_context_view(ev), "me");
    BOOST_TEST((vs == ms));
}

BOOST_AUTO_TEST_CASE(the_context_view_pipeline_drops_errors_and_shows_summaries) {
    std::vector<event> ev;
    ev.push_back(user("first"));
    ev.push_back(reply("me", {text("first answer")}));
    event summary = make(event_type::agent_message, "compaction", {});
    summary.actions.compaction = lb::event_compaction{.first_sequence = ev[0].sequence,
                                                      .last_sequence = ev[1].sequence,
                                                      .summary = "Asked first, answered."};
    ev.push_back(summary);
    event err = reply("me", {text("model failed")});
    err.metadata["error"] = true;
    ev.push_back(err);
    ev.push_back(user("second"));
    ev.push_back(reply("me", {call("dangling", "t", "{}")})); // never answered

    auto ms = lb::build_messages(lb::make_context_view(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "user"}), boost::test_tools::per_element());
    BOOST_TEST(ms[0].text().starts_with("[Summary of "), ms[0].text());
    BOOST_TEST(ms[0].text().find("Asked first, answered.") != std::string::npos);
    BOOST_TEST(ms[1].text() == "second");
}

BOOST_AUTO_TEST_CASE(files_pass_through_and_empty_texts_are_dropped) {
    std::vector<event> ev;
    lb::file_part img;
    img.uri = "gs://b/cat.png";
    img.mime_type = "image/png";
    ev.push_back(make(event_type::user_message, "user", {text(""), img, text("what is this?")}));
    ev.push_back(reply("other", {img}));
    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(texts(ms[0]) == (strings{"file", "what is this?"}), boost::test_tools::per_element());
    BOOST_TEST(texts(ms[1]) == (strings{"For context:", "file"}), boost::test_tools::per_element());
    BOOST_TEST(std::get<lb::file_part>(ms[1].parts[1]).uri.value_or("") == "gs://b/cat.png");
}

// Every kind of part reaches its message exactly: its fields and its metadata, set or empty.
BOOST_AUTO_TEST_CASE(parts_are_copied_whole_with_their_metadata) {
    auto with_meta = [](lb::part p, std::string_view meta) {
        std::visit([&](auto& x) { x.metadata = json::parse(meta).as_object(); }, p);
        return p;
    };
    lb::data_part data;
    data.data = json::parse(R"({"rows":[1,2]})").as_object();
    lb::file_part file;
    file.uri = "gs://b/cat.png";
    file.mime_type = "image/png";
    lb::part failed = failure("c2", "lookup", "no such key");
    std::vector<lb::part> user_parts{with_meta(text("Look these up."), R"({"lang":"en"})"), data,
                                     with_meta(file, R"({"source":"upload"})")};
    std::vector<lb::part> reply_parts{with_meta(thinking("two lookups"), R"({"signature":"sig"})"), text("Looking."),
                                      with_meta(call("c1", "lookup", R"({"k":"a"})"), R"({"long_running":true})"),
                                      call("c2", "lookup", R"({"k":"b"})")};
    std::vector<lb::part> result_parts{with_meta(response("c1", "lookup", json::parse(R"({"v":[1,{"x":null}]})")),
                                                 R"({"intermediate":true})"),
                                       failed};
    std::vector<event> ev;
    ev.push_back(make(event_type::user_message, "user", user_parts));
    ev.push_back(reply("assistant", reply_parts));
    ev.push_back(results("assistant", result_parts));
    auto ms = lb::build_messages(std::span<const event>(ev), "assistant");
    BOOST_REQUIRE(ms.size() == 3u);
    BOOST_TEST((ms[0].parts == user_parts));
    BOOST_TEST((ms[1].parts == reply_parts));
    BOOST_TEST((ms[2].parts == result_parts));
    // The copies are the messages' own: the events are untouched.
    BOOST_TEST((ev[1].content.parts == reply_parts));
    BOOST_TEST(std::get<lb::text_part>(ms[1].parts[1]).metadata.empty());
    BOOST_TEST(std::get<lb::tool_call_part>(ms[1].parts[2]).metadata.at("long_running") == json::value(true));
    BOOST_TEST(std::get<lb::tool_response_part>(ms[2].parts[1]).error.value_or("") == "no such key");
}

BOOST_AUTO_TEST_CASE(many_calls_past_the_linear_index_are_still_paired_in_call_order) {
    // 40 calls in one reply, answered in reverse order, one more answered twice, and a
    // repeated id: more ids than small_id_map searches in order, so its hash index is used.
    constexpr int n = 40;
    static_assert(n > static_cast<int>(lb::detail::small_id_map<int>::linear_limit));
    std::vector<event> ev;
    ev.push_back(user("look them all up"));
    std::vector<lb::part> calls;
    for (int i = 0; i < n; ++i) calls.push_back(call("c" + std::to_string(i), "lookup", "{}"));
    ev.push_back(reply("me", std::move(calls)));
    for (int i = n - 1; i >= 0; --i) ev.push_back(results("me", {response("c" + std::to_string(i), "lookup", i)}));
    ev.push_back(results("me", {response("c7", "lookup", 700)})); // supersedes the first answer
    ev.push_back(results("me", {response("nobody", "lookup", 1)})); // no call: context text
    ev.push_back(reply("me", {text("done")}));

    auto ms = lb::build_messages(std::span<const event>(ev), "me");
    BOOST_TEST(roles(ms) == (strings{"user", "assistant", "tool", "user", "assistant"}),
               boost::test_tools::per_element());
    BOOST_REQUIRE(ms.size() == 5u);
    strings want;
    for (int i = 0; i < n; ++i) want.push_back("response:c" + std::to_string(i));
    const auto& tool = ms[2];
    BOOST_TEST(texts(tool) == want, boost::test_tools::per_element());
    BOOST_REQUIRE(tool.tool_responses().size() == static_cast<std::size_t>(n));
    BOOST_TEST(std::get<lb::tool_response_part>(tool.parts[7]).result == json::value(700));
    BOOST_TEST(std::get<lb::tool_response_part>(tool.parts[39]).result == json::value(39));
    BOOST_TEST(texts(ms[3]) == (strings{"For context:", "[me] `lookup` tool returned result: 1"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(small_id_map_finds_inserts_and_switches_to_a_hash_index) {
    lb::detail::small_id_map<int> m;
    BOOST_TEST(m.empty());
    BOOST_TEST(m.find("a") == nullptr);
    BOOST_TEST(!m.contains(""));
    std::vector<std::string> keys;
    for (int i = 0; i < 100; ++i) keys.push_back("id-" + std::to_string(i));
    for (int i = 0; i < 100; ++i) {
        auto [v, inserted] = m.try_emplace(keys[static_cast<std::size_t>(i)]);
        BOOST_TEST(inserted);
        BOOST_TEST(*v == 0); // value-initialised
        *v = i;
        // Every key so far is found with its value, on both sides of the linear limit.
        BOOST_TEST(m.size() == static_cast<std::size_t>(i + 1));
        BOOST_TEST(*m.find(keys[0]) == 0);
        BOOST_TEST(*m.find(keys[static_cast<std::size_t>(i / 2)]) == i / 2);
        BOOST_TEST(m.find("id-" + std::to_string(i + 1)) == nullptr);
    }
    auto [again, inserted] = m.try_emplace("id-16");
    BOOST_TEST(!inserted);
    BOOST_TEST(*again == 16);
    m["id-16"] = 1600;
    BOOST_TEST(*m.find("id-16") == 1600);
    BOOST_TEST(m.size() == 100u);
    m[""] = -1; // the empty id is a key like any other
    BOOST_TEST(*m.find("") == -1);

    lb::detail::small_id_set s;
    BOOST_TEST(s.insert("x"));
    BOOST_TEST(!s.insert("x"));
    BOOST_TEST(s.contains("x"));
    BOOST_TEST(!s.contains("y"));
    BOOST_TEST(s.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
