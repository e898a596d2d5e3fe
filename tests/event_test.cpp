// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/event/event.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <ranges>
#include <set>
#include <thread>
#include <string>
#include <string_view>
#include <vector>

namespace json = boost::json;
using namespace libretto;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

text_part txt(std::string s) {
    text_part p;
    p.text = std::move(s);
    return p;
}
thinking_part think(std::string s) {
    thinking_part p;
    p.thinking = std::move(s);
    return p;
}
data_part dat(json::object o) {
    data_part p;
    p.data = std::move(o);
    return p;
}
tool_call_part call(std::string id, std::string name, json::object args = {}) {
    tool_call_part p;
    p.tool_call_id = std::move(id);
    p.tool_name = std::move(name);
    p.args = std::move(args);
    return p;
}
tool_response_part response(std::string id, std::string name, std::optional<std::string> error = std::nullopt) {
    tool_response_part p;
    p.tool_call_id = std::move(id);
    p.tool_name = std::move(name);
    p.error = std::move(error);
    return p;
}
file_part file(std::string uri) {
    file_part p;
    p.uri = std::move(uri);
    return p;
}

event with_parts(event_type t, std::vector<part> parts) {
    event e;
    e.type = t;
    e.content.parts = std::move(parts);
    return e;
}
event agent(std::vector<part> parts) { return with_parts(event_type::agent_message, std::move(parts)); }

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/// Canonical 8-4-4-4-12 lowercase UUID text, version 4, RFC 4122 variant.
bool is_uuid_v4(const std::string& s) {
    if (s.size() != 36) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return false;
        } else if (!is_lower_hex(s[i])) {
            return false;
        }
    }
    return s[14] == '4' && std::string_view("89ab").find(s[19]) != std::string_view::npos;
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_type_names)

BOOST_AUTO_TEST_CASE(to_string_of_every_type) {
    BOOST_TEST(to_string(event_type::user_message) == "user_message");
    BOOST_TEST(to_string(event_type::agent_message) == "agent_message");
    BOOST_TEST(to_string(event_type::tool_response) == "tool_response");
    BOOST_TEST(to_string(event_type::agent_start) == "agent_start");
    BOOST_TEST(to_string(event_type::agent_end) == "agent_end");
    BOOST_TEST(to_string(static_cast<event_type>(99)) == "unknown");
    static_assert(to_string(event_type::agent_end) == "agent_end"); // usable in constant expressions
}

BOOST_AUTO_TEST_CASE(from_string_of_every_type) {
    BOOST_TEST((event_type_from_string("user_message") == event_type::user_message));
    BOOST_TEST((event_type_from_string("agent_message") == event_type::agent_message));
    BOOST_TEST((event_type_from_string("tool_response") == event_type::tool_response));
    BOOST_TEST((event_type_from_string("agent_start") == event_type::agent_start));
    BOOST_TEST((event_type_from_string("agent_end") == event_type::agent_end));
    static_assert(event_type_from_string("tool_response") == event_type::tool_response);
}

BOOST_AUTO_TEST_CASE(from_string_round_trips_to_string) {
    for (auto t : {event_type::user_message, event_type::agent_message, event_type::tool_response,
                   event_type::agent_start, event_type::agent_end}) {
        auto back = event_type_from_string(to_string(t));
        BOOST_TEST_REQUIRE(back.has_value());
        BOOST_TEST((*back == t));
    }
}

BOOST_AUTO_TEST_CASE(from_string_rejects_anything_else) {
    for (std::string_view s : {"", "unknown", "USER_MESSAGE", "User_Message", "agent_Message", "tool_call",
                               " user_message", "user_message ", "user_message\n", "agent", "agent_end_",
                               "agentstart"}) {
        BOOST_TEST_CONTEXT("input \"" << s << "\"") { BOOST_TEST(!event_type_from_string(s).has_value()); }
    }
    // An embedded NUL is not a terminator.
    BOOST_TEST(!event_type_from_string(std::string_view("agent_end\0x", 11)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(parts_and_content)

BOOST_AUTO_TEST_CASE(content_from_text) {
    auto c = content::from_text("hello");
    BOOST_TEST(!c.role.has_value());
    BOOST_TEST_REQUIRE(c.parts.size() == 1u);
    BOOST_TEST_REQUIRE(std::holds_alternative<text_part>(c.parts[0]));
    BOOST_TEST(std::get<text_part>(c.parts[0]).text == "hello");
    BOOST_TEST(std::get<text_part>(c.parts[0]).metadata.empty());
    BOOST_TEST(!c.empty());

    // Empty text is still one part.
    auto e = content::from_text("");
    BOOST_TEST(e.parts.size() == 1u);
    BOOST_TEST(!e.empty());
}

BOOST_AUTO_TEST_CASE(content_from_thinking) {
    auto c = content::from_thinking("hmm");
    BOOST_TEST(!c.role.has_value());
    BOOST_TEST_REQUIRE(c.parts.size() == 1u);
    BOOST_TEST_REQUIRE(std::holds_alternative<thinking_part>(c.parts[0]));
    BOOST_TEST(std::get<thinking_part>(c.parts[0]).thinking == "hmm");
    BOOST_TEST(std::get<thinking_part>(c.parts[0]).metadata.empty());
}

BOOST_AUTO_TEST_CASE(content_from_data) {
    auto c = content::from_data(obj(R"({"a":1,"b":[true,null]})"));
    BOOST_TEST(!c.role.has_value());
    BOOST_TEST_REQUIRE(c.parts.size() == 1u);
    BOOST_TEST_REQUIRE(std::holds_alternative<data_part>(c.parts[0]));
    BOOST_TEST((std::get<data_part>(c.parts[0]).data == obj(R"({"b":[true,null],"a":1})")));
    BOOST_TEST(std::get<data_part>(c.parts[0]).metadata.empty());

    auto e = content::from_data({});
    BOOST_TEST_REQUIRE(e.parts.size() == 1u);
    BOOST_TEST(std::get<data_part>(e.parts[0]).data.empty());
}

BOOST_AUTO_TEST_CASE(content_empty_and_equality) {
    content c;
    BOOST_TEST(c.empty());
    BOOST_TEST(!c.role.has_value());
    content d;
    BOOST_TEST((c == d));
    d.role = "user";
    BOOST_TEST((c != d));
    BOOST_TEST(d.empty()); // a role alone is no content

    // Part order matters for equality.
    content ab, ba;
    ab.parts = {txt("a"), txt("b")};
    ba.parts = {txt("b"), txt("a")};
    BOOST_TEST((ab != ba));
    // Metadata matters for equality.
    auto m1 = txt("a");
    auto m2 = txt("a");
    m2.metadata["k"] = 1;
    BOOST_TEST((m1 != m2));
    // So does the alternative: text "x" is not thinking "x".
    BOOST_TEST((part(txt("x")) != part(think("x"))));
}

BOOST_AUTO_TEST_CASE(part_view_on_empty_parts) {
    std::vector<part> none;
    part_view<text_part> v(none);
    BOOST_TEST(v.empty());
    BOOST_TEST(v.size() == 0u);
    BOOST_TEST((v.begin() == v.end()));
}

BOOST_AUTO_TEST_CASE(part_view_with_no_match) {
    std::vector<part> ps{think("t"), dat({}), file("u")};
    part_view<tool_call_part> v(ps);
    BOOST_TEST(v.empty());
    BOOST_TEST(v.size() == 0u);
    BOOST_TEST((v.begin() == v.end()));
}

BOOST_AUTO_TEST_CASE(part_view_selects_one_alternative_in_order) {
    std::vector<part> ps{think("t0"), txt("a"), call("1", "f"), txt("b"), dat({}), txt("c"), think("t1")};
    part_view<text_part> texts(ps);
    BOOST_TEST(!texts.empty());
    BOOST_TEST(texts.size() == 3u);
    BOOST_TEST(texts.front().text == "a");
    std::vector<std::string> seen;
    for (const auto& t : texts) seen.push_back(t.text);
    BOOST_TEST((seen == std::vector<std::string>{"a", "b", "c"}));

    // The elements are the parts themselves, not copies.
    BOOST_TEST(&texts.front() == &std::get<text_part>(ps[1]));

    part_view<thinking_part> thoughts(ps);
    BOOST_TEST(thoughts.size() == 2u);
    BOOST_TEST(thoughts.front().thinking == "t0");
    auto it = thoughts.begin();
    BOOST_TEST(it->thinking == "t0");
    auto old = it++;
    BOOST_TEST(old->thinking == "t0");
    BOOST_TEST(it->thinking == "t1");
    ++it;
    BOOST_TEST((it == thoughts.end()));

    part_view<tool_call_part> calls(ps);
    BOOST_TEST(calls.size() == 1u);
    BOOST_TEST(calls.front().tool_call_id == "1");
}

BOOST_AUTO_TEST_CASE(part_view_when_every_part_matches_and_at_the_ends) {
    std::vector<part> ps{txt("x"), txt("y")};
    part_view<text_part> v(ps);
    BOOST_TEST(v.size() == 2u);
    BOOST_TEST(v.front().text == "x");

    // Matches only at the very end.
    std::vector<part> tail{think("a"), think("b"), txt("last")};
    part_view<text_part> t(tail);
    BOOST_TEST(t.size() == 1u);
    BOOST_TEST(t.front().text == "last");
}

BOOST_AUTO_TEST_CASE(part_view_sees_later_changes) {
    // A view, not a snapshot: it reads the vector it was given.
    std::vector<part> ps{txt("a")};
    part_view<text_part> v(ps);
    BOOST_TEST(v.size() == 1u);
    ps.push_back(txt("b"));
    BOOST_TEST(v.size() == 2u);
    ps.clear();
    BOOST_TEST(v.empty());
}

BOOST_AUTO_TEST_CASE(part_view_is_a_forward_range) {
    using view = part_view<tool_call_part>;
    static_assert(std::forward_iterator<view::iterator>);
    static_assert(std::ranges::forward_range<view>);
    static_assert(std::is_same_v<std::iter_reference_t<view::iterator>, const tool_call_part&>);

    std::vector<part> ps{call("1", "a"), txt("x"), call("2", "b"), call("3", "a")};
    view v(ps);
    BOOST_TEST(std::ranges::count_if(v, [](const tool_call_part& c) { return c.tool_name == "a"; }) == 2);
    auto found = std::ranges::find_if(v, [](const tool_call_part& c) { return c.tool_call_id == "2"; });
    BOOST_TEST_REQUIRE((found != v.end()));
    BOOST_TEST(found->tool_name == "b");
    BOOST_TEST(std::distance(v.begin(), v.end()) == 3);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_accessors)

BOOST_AUTO_TEST_CASE(defaults) {
    event e;
    BOOST_TEST(e.id.empty());
    BOOST_TEST(e.sequence == 0);
    BOOST_TEST(e.timestamp == 0.0);
    BOOST_TEST((e.type == event_type::agent_message));
    BOOST_TEST(e.content.empty());
    BOOST_TEST(e.actions.empty());
    BOOST_TEST(e.metadata.empty());
    BOOST_TEST(!e.partial);
    BOOST_TEST(!e.usage.has_value());
    BOOST_TEST(!e.signature.has_value());
    BOOST_TEST(e.signer_did.empty());
    BOOST_TEST(!e.prev_signature.has_value());
    BOOST_TEST(e.text().empty());
    BOOST_TEST(e.thinking().empty());
    BOOST_TEST(e.data() == nullptr);
    BOOST_TEST(!e.has_tool_calls());
    BOOST_TEST(e.tool_calls().empty());
    BOOST_TEST(e.tool_responses().empty());
    BOOST_TEST(!e.tool_name().has_value());
    BOOST_TEST(e.tool_input() == nullptr);
    BOOST_TEST(!e.error().has_value());
    BOOST_TEST(!e.is_final_response());
    BOOST_TEST(!e.is_compaction());
    BOOST_TEST(!e.is_signed());
}

BOOST_AUTO_TEST_CASE(text_concatenates_text_parts_only) {
    auto e = agent({txt("Hel"), think("not this"), dat(obj(R"({"x":"nor this"})")), txt("lo"),
                    call("1", "f"), response("1", "f", "err"), file("u"), txt(", world")});
    BOOST_TEST(e.text() == "Hello, world");
}

BOOST_AUTO_TEST_CASE(text_edge_cases) {
    BOOST_TEST(agent({}).text() == "");
    BOOST_TEST(agent({txt("")}).text() == "");
    BOOST_TEST(agent({txt(""), txt("a"), txt("")}).text() == "a");
    BOOST_TEST(agent({think("only thinking")}).text() == "");
    // No separator is inserted.
    BOOST_TEST(agent({txt("a"), txt("b")}).text() == "ab");
    // Embedded NUL and UTF-8 survive.
    BOOST_TEST(agent({txt(std::string("a\0b", 3)), txt("\xc3\xa9")}).text() == std::string("a\0b\xc3\xa9", 5));
}

BOOST_AUTO_TEST_CASE(thinking_concatenates_thinking_parts_only) {
    auto e = agent({think("step 1; "), txt("answer"), think("step 2")});
    BOOST_TEST(e.thinking() == "step 1; step 2");
    BOOST_TEST(e.text() == "answer");
    BOOST_TEST(agent({txt("x")}).thinking() == "");
    BOOST_TEST(agent({}).thinking() == "");
}

BOOST_AUTO_TEST_CASE(data_is_the_first_data_part) {
    auto e = agent({txt("t"), dat(obj(R"({"first":1})")), dat(obj(R"({"second":2})"))});
    const json::object* d = e.data();
    BOOST_TEST_REQUIRE(d != nullptr);
    BOOST_TEST((*d == obj(R"({"first":1})")));
    BOOST_TEST(d == &std::get<data_part>(e.content.parts[1]).data); // points into the event

    BOOST_TEST(agent({txt("t"), think("k")}).data() == nullptr);
    BOOST_TEST(agent({}).data() == nullptr);

    // An empty data part is still the first data part.
    auto empty_first = agent({dat({}), dat(obj(R"({"a":1})"))});
    BOOST_TEST_REQUIRE(empty_first.data() != nullptr);
    BOOST_TEST(empty_first.data()->empty());
}

BOOST_AUTO_TEST_CASE(tool_calls_and_has_tool_calls) {
    auto e = agent({txt("calling"), call("c1", "search", obj(R"({"q":"x"})")), response("c0", "old"),
                    call("c2", "fetch")});
    BOOST_TEST(e.has_tool_calls());
    BOOST_TEST(e.tool_calls().size() == 2u);
    std::vector<std::string> ids;
    for (const auto& c : e.tool_calls()) ids.push_back(c.tool_call_id);
    BOOST_TEST((ids == std::vector<std::string>{"c1", "c2"}));

    BOOST_TEST(e.tool_responses().size() == 1u);
    BOOST_TEST(e.tool_responses().front().tool_call_id == "c0");

    // Responses are not calls.
    auto r = with_parts(event_type::tool_response, {response("c1", "search")});
    BOOST_TEST(!r.has_tool_calls());
    BOOST_TEST(r.tool_calls().empty());
    BOOST_TEST(!agent({txt("x")}).has_tool_calls());
}

BOOST_AUTO_TEST_CASE(tool_name_is_the_first_call_or_response) {
    BOOST_TEST(!agent({}).tool_name().has_value());
    BOOST_TEST(!agent({txt("a"), dat({}), think("t")}).tool_name().has_value());

    auto only_call = agent({txt("a"), call("1", "search"), call("2", "other")});
    BOOST_TEST_REQUIRE(only_call.tool_name().has_value());
    BOOST_TEST(*only_call.tool_name() == "search");

    auto only_response = with_parts(event_type::tool_response, {response("1", "fetch"), response("2", "x")});
    BOOST_TEST_REQUIRE(only_response.tool_name().has_value());
    BOOST_TEST(*only_response.tool_name() == "fetch");

    // Whichever comes first in content order.
    auto call_first = agent({call("1", "the_call"), response("0", "the_response")});
    BOOST_TEST(*call_first.tool_name() == "the_call");
    auto response_first = agent({txt("x"), response("0", "the_response"), call("1", "the_call")});
    BOOST_TEST(*response_first.tool_name() == "the_response");

    // An empty name is a name, not "no tool".
    auto unnamed = agent({call("1", "")});
    BOOST_TEST_REQUIRE(unnamed.tool_name().has_value());
    BOOST_TEST(unnamed.tool_name()->empty());
}

BOOST_AUTO_TEST_CASE(tool_input_is_the_first_calls_args) {
    BOOST_TEST(agent({}).tool_input() == nullptr);
    BOOST_TEST(with_parts(event_type::tool_response, {response("1", "f")}).tool_input() == nullptr);

    auto e = agent({response("0", "r"), call("1", "f", obj(R"({"q":"first"})")), call("2", "g", obj(R"({"q":2})"))});
    const json::object* in = e.tool_input();
    BOOST_TEST_REQUIRE(in != nullptr);
    BOOST_TEST((*in == obj(R"({"q":"first"})")));

    // A call without arguments has an empty (not absent) input.
    auto no_args = agent({call("1", "f")});
    BOOST_TEST_REQUIRE(no_args.tool_input() != nullptr);
    BOOST_TEST(no_args.tool_input()->empty());
}

BOOST_AUTO_TEST_CASE(error_from_tool_response) {
    auto e = with_parts(event_type::tool_response, {response("1", "f", "boom")});
    BOOST_TEST_REQUIRE(e.error().has_value());
    BOOST_TEST(*e.error() == "boom");

    // The first response that carries an error wins over later ones and over the metadata.
    auto two = with_parts(event_type::tool_response, {response("1", "f", "first"), response("2", "g", "second")});
    two.metadata["error"] = true;
    two.content.parts.push_back(txt("text"));
    BOOST_TEST(*two.error() == "first");

    // A successful response has no error.
    auto ok = with_parts(event_type::tool_response, {response("1", "f")});
    std::get<tool_response_part>(ok.content.parts[0]).result = "fine";
    BOOST_TEST(!ok.error().has_value());
}

BOOST_AUTO_TEST_CASE(error_from_metadata_is_the_text) {
    auto e = agent({txt("went "), txt("wrong")});
    BOOST_TEST(!e.error().has_value());
    e.metadata["error"] = true;
    BOOST_TEST_REQUIRE(e.error().has_value());
    BOOST_TEST(*e.error() == "went wrong");

    // Truthy flag with no text: an error with an empty message.
    auto no_text = agent({});
    no_text.metadata["error"] = "yes";
    BOOST_TEST_REQUIRE(no_text.error().has_value());
    BOOST_TEST(no_text.error()->empty());

    // Another key is not the flag.
    auto other = agent({txt("x")});
    other.metadata["errors"] = true;
    other.metadata["Error"] = true;
    BOOST_TEST(!other.error().has_value());
}

BOOST_AUTO_TEST_CASE(error_metadata_truthiness) {
    struct row {
        const char* json_value;
        bool truthy;
    };
    const row rows[] = {
        {"true", true},   {"false", false}, {"1", true},        {"0", false},     {"-1", true},
        {"0.5", true},    {"0.0", false},   {"\"x\"", true},    {"\"\"", false},  {"\"false\"", true},
        {"{}", false},    {"{\"a\":0}", true}, {"[]", false},   {"[0]", true},    {"null", false},
        {"18446744073709551615", true},
    };
    for (const auto& r : rows) {
        BOOST_TEST_CONTEXT("metadata.error = " << r.json_value) {
            auto e = agent({txt("msg")});
            e.metadata["error"] = json::parse(r.json_value);
            if (r.truthy) {
                BOOST_TEST_REQUIRE(e.error().has_value());
                BOOST_TEST(*e.error() == "msg");
                BOOST_TEST(!e.is_final_response());
            } else {
                BOOST_TEST(!e.error().has_value());
                BOOST_TEST(e.is_final_response());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(final_response_text) {
    BOOST_TEST(agent({txt("answer")}).is_final_response());
    BOOST_TEST(agent({think("t"), txt("answer")}).is_final_response());
    // Empty text parts do not count; any non-empty one does.
    BOOST_TEST(!agent({txt("")}).is_final_response());
    BOOST_TEST(!agent({txt(""), txt("")}).is_final_response());
    BOOST_TEST(agent({txt(""), txt("x")}).is_final_response());
    // Thinking alone, a file alone or nothing at all is not an answer.
    BOOST_TEST(!agent({think("just thinking")}).is_final_response());
    BOOST_TEST(!agent({file("file://x")}).is_final_response());
    BOOST_TEST(!agent({}).is_final_response());
}

BOOST_AUTO_TEST_CASE(final_response_data) {
    BOOST_TEST(agent({dat(obj(R"({"k":1})"))}).is_final_response());
    BOOST_TEST(!agent({dat({})}).is_final_response());
    // Only the first data part counts (orxhestra: bool(self.data)).
    BOOST_TEST(!agent({dat({}), dat(obj(R"({"k":1})"))}).is_final_response());
    BOOST_TEST(agent({dat(obj(R"({"k":1})")), dat({})}).is_final_response());
    // Data with falsy values is still a non-empty object.
    BOOST_TEST(agent({dat(obj(R"({"k":null})"))}).is_final_response());
}

BOOST_AUTO_TEST_CASE(final_response_partial) {
    auto e = agent({txt("answer")});
    e.partial = true;
    BOOST_TEST(!e.is_final_response());
    e.actions.skip_summarization = true; // partial wins over skip_summarization
    BOOST_TEST(!e.is_final_response());
}

BOOST_AUTO_TEST_CASE(final_response_only_for_agent_messages) {
    for (auto t : {event_type::user_message, event_type::tool_response, event_type::agent_start,
                   event_type::agent_end}) {
        BOOST_TEST_CONTEXT("type " << to_string(t)) {
            auto e = with_parts(t, {txt("text"), dat(obj(R"({"a":1})"))});
            BOOST_TEST(!e.is_final_response());
            e.actions.skip_summarization = true;
            BOOST_TEST(!e.is_final_response());
        }
    }
}

BOOST_AUTO_TEST_CASE(final_response_not_with_tool_calls) {
    BOOST_TEST(!agent({txt("let me look"), call("1", "search")}).is_final_response());
    auto e = agent({call("1", "search")});
    e.actions.skip_summarization = true;
    BOOST_TEST(!e.is_final_response());
    // A tool *response* part does not block it.
    BOOST_TEST(agent({response("1", "f"), txt("done")}).is_final_response());
}

BOOST_AUTO_TEST_CASE(final_response_not_for_react_steps_or_errors) {
    auto step = agent({txt("Thought: ...")});
    step.metadata["react_step"] = "thought";
    BOOST_TEST(!step.is_final_response());
    step.actions.skip_summarization = true;
    BOOST_TEST(!step.is_final_response());
    step.metadata["react_step"] = ""; // falsy
    BOOST_TEST(step.is_final_response());
    step.metadata["react_step"] = false;
    step.actions.skip_summarization.reset();
    BOOST_TEST(step.is_final_response());
    step.metadata["react_step"] = 1;
    BOOST_TEST(!step.is_final_response());

    auto err = agent({txt("it failed")});
    err.metadata["error"] = true;
    BOOST_TEST(!err.is_final_response());
    err.actions.skip_summarization = true;
    BOOST_TEST(!err.is_final_response());
}

BOOST_AUTO_TEST_CASE(final_response_skip_summarization) {
    // skip_summarization makes an event final even without text or data.
    auto e = agent({});
    e.actions.skip_summarization = true;
    BOOST_TEST(e.is_final_response());
    auto empty_text = agent({txt("")});
    empty_text.actions.skip_summarization = true;
    BOOST_TEST(empty_text.is_final_response());
    // false or unset falls through to the text/data rule.
    empty_text.actions.skip_summarization = false;
    BOOST_TEST(!empty_text.is_final_response());
    empty_text.actions.skip_summarization.reset();
    BOOST_TEST(!empty_text.is_final_response());
}

BOOST_AUTO_TEST_CASE(compaction_and_signature_flags) {
    event e;
    BOOST_TEST(!e.is_compaction());
    e.actions.compaction = event_compaction{};
    BOOST_TEST(e.is_compaction());

    BOOST_TEST(!e.is_signed());
    e.signature = "";
    BOOST_TEST(!e.is_signed());
    e.signature = "c2ln";
    BOOST_TEST(e.is_signed());
}

BOOST_AUTO_TEST_CASE(make_fills_id_and_timestamp) {
    using namespace std::chrono;
    const double before = duration<double>(system_clock::now().time_since_epoch()).count();
    auto e = event::make(event_type::user_message, "user", content::from_text("hi"));
    const double after = duration<double>(system_clock::now().time_since_epoch()).count();

    BOOST_TEST(is_uuid_v4(e.id), "id \"" << e.id << "\" is not a canonical v4 UUID");
    BOOST_TEST(e.timestamp >= before - 0.001);
    BOOST_TEST(e.timestamp <= after + 0.001);
    BOOST_TEST(e.timestamp > 1.7e9); // seconds, not milliseconds
    BOOST_TEST((e.type == event_type::user_message));
    BOOST_TEST(e.author == "user");
    BOOST_TEST(e.text() == "hi");
    // Everything else keeps its default.
    BOOST_TEST(e.sequence == 0);
    BOOST_TEST(e.invocation_id.empty());
    BOOST_TEST(e.branch.empty());
    BOOST_TEST(e.actions.empty());
    BOOST_TEST(!e.partial);

    auto bare = event::make(event_type::agent_end);
    BOOST_TEST(bare.author.empty());
    BOOST_TEST(bare.content.empty());
    BOOST_TEST((bare.type == event_type::agent_end));
}

BOOST_AUTO_TEST_CASE(ids_are_distinct) {
    std::set<std::string> ids;
    for (int i = 0; i < 1000; ++i) ids.insert(event::make(event_type::agent_message).id);
    BOOST_TEST(ids.size() == 1000u);
    for (int i = 0; i < 100; ++i) {
        auto id = event::new_id();
        BOOST_TEST(is_uuid_v4(id));
        BOOST_TEST(ids.insert(id).second);
    }
}

BOOST_AUTO_TEST_CASE(hex8_writes_eight_lower_case_digits_most_significant_first) {
    // Checked against snprintf("%08x") over values that put every nibble value (0-9, a-f)
    // at every position, and the edges.
    auto hex = [](std::uint32_t x) {
        char out[9] = {};
        libretto::detail::hex8(x, out);
        return std::string(out, 8);
    };
    auto printed = [](std::uint32_t x) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%08x", x);
        return std::string(buf);
    };
    BOOST_TEST(hex(0) == "00000000");
    BOOST_TEST(hex(0xFFFFFFFFu) == "ffffffff");
    BOOST_TEST(hex(0x0123ABCDu) == "0123abcd");
    BOOST_TEST(hex(0x9A8F7E6Du) == "9a8f7e6d");
    for (std::uint32_t nibble = 0; nibble < 16; ++nibble)
        for (int pos = 0; pos < 8; ++pos) {
            const std::uint32_t x = (0x5A5A5A5Au & ~(0xFu << (4 * pos))) | (nibble << (4 * pos));
            BOOST_TEST(hex(x) == printed(x));
        }
    std::uint32_t x = 2463534242u; // xorshift32 over many values
    for (int i = 0; i < 10000; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        BOOST_TEST_REQUIRE(hex(x) == printed(x));
    }
    // Writes exactly eight bytes.
    char guard[10] = {'#', '#', '#', '#', '#', '#', '#', '#', '#', '#'};
    libretto::detail::hex8(0x12345678u, guard + 1);
    BOOST_TEST(guard[0] == '#');
    BOOST_TEST(guard[9] == '#');
    BOOST_TEST(std::string(guard + 1, 8) == "12345678");
}

BOOST_AUTO_TEST_CASE(ids_from_different_threads_are_distinct) {
    // Each thread seeds its own generator from the OS: two threads must not repeat each
    // other's sequence.
    std::vector<std::string> a, b;
    std::thread ta([&] {
        for (int i = 0; i < 500; ++i) a.push_back(event::new_id());
    });
    std::thread tb([&] {
        for (int i = 0; i < 500; ++i) b.push_back(event::new_id());
    });
    ta.join();
    tb.join();
    std::set<std::string> all(a.begin(), a.end());
    all.insert(b.begin(), b.end());
    BOOST_TEST(all.size() == 1000u);
    for (const auto& id : b) BOOST_TEST(is_uuid_v4(id));
}

BOOST_AUTO_TEST_CASE(now_is_the_wall_clock_in_seconds) {
    using namespace std::chrono;
    const double a = duration<double>(system_clock::now().time_since_epoch()).count();
    const double n = event::now();
    const double b = duration<double>(system_clock::now().time_since_epoch()).count();
    BOOST_TEST(n >= a);
    BOOST_TEST(n <= b);
    BOOST_TEST(std::isfinite(n));
}

BOOST_AUTO_TEST_CASE(equality_covers_every_field) {
    auto base = event::make(event_type::agent_message, "a", content::from_text("x"));
    auto same = base;
    BOOST_TEST((base == same));
    auto differs = [&](auto mutate) {
        auto c = base;
        mutate(c);
        return c != base;
    };
    BOOST_TEST(differs([](event& e) { e.id = "other"; }));
    BOOST_TEST(differs([](event& e) { e.sequence = 5; }));
    BOOST_TEST(differs([](event& e) { e.timestamp += 1; }));
    BOOST_TEST(differs([](event& e) { e.invocation_id = "i"; }));
    BOOST_TEST(differs([](event& e) { e.session_id = "s"; }));
    BOOST_TEST(differs([](event& e) { e.author = "b"; }));
    BOOST_TEST(differs([](event& e) { e.branch = "r"; }));
    BOOST_TEST(differs([](event& e) { e.type = event_type::agent_end; }));
    BOOST_TEST(differs([](event& e) { e.content.role = "model"; }));
    BOOST_TEST(differs([](event& e) { e.actions.escalate = false; }));
    BOOST_TEST(differs([](event& e) { e.metadata["k"] = 1; }));
    BOOST_TEST(differs([](event& e) { e.partial = true; }));
    BOOST_TEST(differs([](event& e) { e.usage = libretto::usage{}; }));
    BOOST_TEST(differs([](event& e) { e.signature = ""; }));
    BOOST_TEST(differs([](event& e) { e.signer_did = "did:key:z"; }));
    BOOST_TEST(differs([](event& e) { e.prev_signature = ""; }));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(actions_and_compaction)

BOOST_AUTO_TEST_CASE(empty_is_true_only_when_nothing_is_set) {
    BOOST_TEST(event_actions{}.empty());
    auto set = [](auto mutate) {
        event_actions a;
        mutate(a);
        return !a.empty();
    };
    BOOST_TEST(set([](event_actions& a) { a.state_delta["k"] = 1; }));
    BOOST_TEST(set([](event_actions& a) { a.state_delta["k"] = nullptr; })); // a deletion is an action
    BOOST_TEST(set([](event_actions& a) { a.artifact_delta["f.txt"] = 0; }));
    BOOST_TEST(set([](event_actions& a) { a.transfer_to_agent = ""; }));
    BOOST_TEST(set([](event_actions& a) { a.escalate = false; })); // set-to-false is set
    BOOST_TEST(set([](event_actions& a) { a.skip_summarization = false; }));
    BOOST_TEST(set([](event_actions& a) { a.end_of_agent = false; }));
    BOOST_TEST(set([](event_actions& a) { a.compaction = event_compaction{}; }));
}

BOOST_AUTO_TEST_CASE(merge_maps_key_by_key) {
    event_actions a;
    a.state_delta = obj(R"({"keep":1,"over":"old","del":5})");
    a.artifact_delta = obj(R"({"a.txt":1,"b.txt":2})");
    event_actions b;
    b.state_delta = obj(R"({"over":"new","add":[1],"del":null})");
    b.artifact_delta = obj(R"({"b.txt":3,"c.txt":1})");
    a.merge(b);
    // Null is carried over (it is a deletion request), not applied.
    BOOST_TEST((a.state_delta == obj(R"({"keep":1,"over":"new","del":null,"add":[1]})")));
    BOOST_TEST((a.artifact_delta == obj(R"({"a.txt":1,"b.txt":3,"c.txt":1})")));
}

BOOST_AUTO_TEST_CASE(merge_scalars_last_wins_only_when_set) {
    event_actions a;
    a.transfer_to_agent = "first";
    a.escalate = true;
    a.skip_summarization = true;
    a.end_of_agent = true;
    a.compaction = event_compaction{1, 2, 0, 0, "one", 2};

    // An empty later leaves everything as it was.
    auto copy = a;
    copy.merge(event_actions{});
    BOOST_TEST((copy == a));

    // Set members of `later` win, including false.
    event_actions later;
    later.transfer_to_agent = "second";
    later.escalate = false;
    later.end_of_agent = false;
    later.compaction = event_compaction{3, 9, 1.5, 2.5, "two", 7};
    a.merge(later);
    BOOST_TEST((a.transfer_to_agent == std::optional<std::string>("second")));
    BOOST_TEST((a.escalate == std::optional<bool>(false)));
    BOOST_TEST((a.skip_summarization == std::optional<bool>(true))); // unset in later: kept
    BOOST_TEST((a.end_of_agent == std::optional<bool>(false)));
    BOOST_TEST_REQUIRE(a.compaction.has_value());
    BOOST_TEST(a.compaction->summary == "two");
    BOOST_TEST(a.compaction->first_sequence == 3);
    BOOST_TEST(a.compaction->event_count == 7);
}

BOOST_AUTO_TEST_CASE(merge_into_empty_equals_later) {
    event_actions later;
    later.state_delta["x"] = 1;
    later.transfer_to_agent = "t";
    later.escalate = true;
    event_actions a;
    a.merge(later);
    BOOST_TEST((a == later));
}

BOOST_AUTO_TEST_CASE(take_moves_the_actions_out_and_leaves_them_empty) {
    event_actions a;
    a.state_delta = obj(R"({"k":1,"gone":null})");
    a.artifact_delta["f.txt"] = 2;
    a.transfer_to_agent = "sales";
    a.escalate = false;
    a.compaction = event_compaction{1, 4, 0, 0, "sum", 4};
    const event_actions before = a;
    event_actions out = a.take();
    BOOST_TEST((out == before));
    BOOST_TEST(a.empty());
    BOOST_TEST((a == event_actions{}));

    // Taking empty actions gives empty ones; taking twice gives nothing the second time.
    event_actions none;
    BOOST_TEST(none.take().empty());
    BOOST_TEST(none.empty());
    BOOST_TEST(a.take().empty());

    // Each member alone is taken (empty() looks at all of them).
    event_actions only_end;
    only_end.end_of_agent = true;
    BOOST_TEST((only_end.take().end_of_agent == std::optional<bool>(true)));
    BOOST_TEST(!only_end.end_of_agent.has_value());
    event_actions only_skip;
    only_skip.skip_summarization = false;
    BOOST_TEST((only_skip.take().skip_summarization == std::optional<bool>(false)));
    BOOST_TEST(only_skip.empty());
}

BOOST_AUTO_TEST_CASE(clear_empties_and_leaves_empty_actions_alone) {
    event_actions a;
    a.state_delta["k"] = 1;
    a.escalate = true;
    a.clear();
    BOOST_TEST(a.empty());
    BOOST_TEST(a.state_delta.empty());
    BOOST_TEST(!a.escalate.has_value());
    event_actions none;
    none.clear();
    BOOST_TEST((none == event_actions{}));
}

BOOST_AUTO_TEST_CASE(assign_from_takes_the_source_and_replaces_what_was_held) {
    event_actions from;
    from.state_delta["n"] = 3;
    from.transfer_to_agent = "b";
    const event_actions copy = from;

    event_actions to;
    to.assign_from(from);
    BOOST_TEST((to == copy));
    BOOST_TEST(from.empty());

    // An empty source empties the target: assign_from is an assignment, not a merge.
    to.assign_from(from);
    BOOST_TEST(to.empty());

    // A non-empty target's actions are replaced, not merged.
    event_actions held;
    held.state_delta["old"] = 1;
    held.escalate = true;
    event_actions src;
    src.state_delta["new"] = 2;
    held.assign_from(src);
    BOOST_TEST((held.state_delta == obj(R"({"new":2})")));
    BOOST_TEST(!held.escalate.has_value());
    BOOST_TEST(src.empty());
}

BOOST_AUTO_TEST_CASE(compaction_covers_is_inclusive) {
    event_compaction c;
    c.first_sequence = 3;
    c.last_sequence = 7;
    BOOST_TEST(!c.covers(2));
    BOOST_TEST(c.covers(3));
    BOOST_TEST(c.covers(5));
    BOOST_TEST(c.covers(7));
    BOOST_TEST(!c.covers(8));
    BOOST_TEST(!c.covers(-1));
    BOOST_TEST(!c.covers(std::numeric_limits<std::int64_t>::max()));
    BOOST_TEST(!c.covers(std::numeric_limits<std::int64_t>::min()));

    event_compaction single;
    single.first_sequence = single.last_sequence = 4;
    BOOST_TEST(single.covers(4));
    BOOST_TEST(!single.covers(3));
    BOOST_TEST(!single.covers(5));

    // An inverted range covers nothing.
    event_compaction inverted;
    inverted.first_sequence = 5;
    inverted.last_sequence = 4;
    BOOST_TEST(!inverted.covers(4));
    BOOST_TEST(!inverted.covers(5));
}

BOOST_AUTO_TEST_CASE(compaction_contains) {
    auto range = [](std::int64_t f, std::int64_t l) {
        event_compaction c;
        c.first_sequence = f;
        c.last_sequence = l;
        return c;
    };
    const auto outer = range(10, 20);
    BOOST_TEST(outer.contains(outer));
    BOOST_TEST(outer.contains(range(10, 20)));
    BOOST_TEST(outer.contains(range(12, 18)));
    BOOST_TEST(outer.contains(range(10, 10)));
    BOOST_TEST(outer.contains(range(20, 20)));
    BOOST_TEST(!outer.contains(range(9, 15)));
    BOOST_TEST(!outer.contains(range(15, 21)));
    BOOST_TEST(!outer.contains(range(5, 25)));
    BOOST_TEST(!outer.contains(range(1, 5)));
    BOOST_TEST(!range(12, 18).contains(outer));
    // Only the sequence range matters, not the summary or timestamps.
    auto other = range(11, 12);
    other.summary = "different";
    other.start_timestamp = 1e9;
    BOOST_TEST(outer.contains(other));
}

BOOST_AUTO_TEST_CASE(usage_total_tokens) {
    libretto::usage u;
    BOOST_TEST(u.total_tokens() == 0);
    u.input_tokens = 120;
    u.output_tokens = 30;
    BOOST_TEST(u.total_tokens() == 150);
    u.model_version = "m";
    libretto::usage v = u;
    BOOST_TEST((u == v));
    v.model_version = "n";
    BOOST_TEST((u != v));
}

BOOST_AUTO_TEST_SUITE_END()
