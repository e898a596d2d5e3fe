// agent_tool.hpp: an agent as a tool: fresh session, shared state, events pushed to the
// parent's stream, the final text (or output_key value) as the result.
#include <libretto/agent/agent_tool.hpp>
#include <libretto/agent/llm_agent.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/tool/function_tool.hpp>

#include "llm_agent_harness.hpp"

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace {
using namespace harness;

json::value note(lb::tool_context& tc) {
    tc.state()["child_was_here"] = true;
    return json::value("noted");
}
} // namespace

BOOST_AUTO_TEST_SUITE(agent_tool_tests)

BOOST_AUTO_TEST_CASE(declaration_from_the_agent) {
    asio::io_context io;
    lb::scripted_model m(io.get_executor(), {});
    lb::llm_agent<> a({.name = "summarizer", .description = "Summarises text", .model = m});
    auto t = lb::agent_tool_of(a);
    static_assert(lb::tool<decltype(t)>);
    BOOST_TEST(t.declaration().name == "summarizer");
    BOOST_TEST(t.declaration().description == "Summarises text");
    BOOST_TEST(t.declaration().parameters.at("required") == json::parse(R"(["request"])"));
    lb::llm_agent<> b({.name = "quiet", .model = m});
    BOOST_TEST(lb::agent_tool_of(b).declaration().description == "Delegate work to the quiet agent.");
    BOOST_TEST(lb::agent_tool_of(b, {.name = "ask_quiet"}).declaration().name == "ask_quiet");
}

BOOST_AUTO_TEST_CASE(the_child_runs_fresh_and_its_answer_is_the_result) {
    asio::io_context io;
    lb::scripted_model child_model(io.get_executor(), {lb::scripted_reply::tool_call("note"),
                                                       lb::scripted_reply::text("Short summary.")});
    lb::scripted_model parent_model(io.get_executor(), {lb::scripted_reply::tool_call("summarizer", {{"request", "Summarise X"}}),
                                                        lb::scripted_reply::text("Done: Short summary.")});
    lb::llm_agent<> child({.name = "summarizer", .model = child_model, .tools = lb::tools(lb::function_tool("note", "Notes", note))});
    lb::llm_agent<> parent({.name = "assistant", .model = parent_model, .tools = lb::tools(lb::agent_tool_of(child))});
    auto ctx = make_ctx(io, "Please summarise X");
    auto r = drain(io, ctx, parent.run(ctx));
    BOOST_TEST_REQUIRE(!r.error, error_text(r.error));
    BOOST_TEST(r.stored_texts() == "[assistant:agent_message:]"
                                   "[summarizer:agent_message:][summarizer:tool_response:][summarizer:agent_message:Short summary.]"
                                   "[assistant:tool_response:][assistant:agent_message:Done: Short summary.]");
    auto st = r.stored();
    BOOST_TEST(st[1]->branch == "summarizer");
    BOOST_TEST(st[1]->metadata.at("agent_tool") == json::value("summarizer"));
    BOOST_TEST(st[4]->tool_responses().front().result == json::value("Short summary."));
    // Fresh session: the child saw only the request.
    auto creq = child_model.request_at(0);
    BOOST_REQUIRE(creq.messages.size() == 1u);
    BOOST_TEST(creq.messages[0].text() == "Summarise X");
    // Its second step saw its own tool round.
    BOOST_TEST(child_model.request_at(1).messages.size() == 3u);
    // Shared state: the child's tool wrote it; its event carries the delta to the parent's session.
    BOOST_TEST(ctx.state().find("child_was_here") != nullptr);
    BOOST_TEST(ctx.session().state.at("child_was_here") == json::value(true));
    // The parent's model saw the call and the result, not the child's work.
    auto preq = parent_model.request_at(1);
    BOOST_TEST(preq.messages.size() == 3u);
}

BOOST_AUTO_TEST_CASE(output_key_value_is_the_result) {
    asio::io_context io;
    lb::scripted_model child_model(io.get_executor(), {lb::scripted_reply::text(R"({"score":7})")});
    lb::scripted_model parent_model(io.get_executor(), {lb::scripted_reply::tool_call("rater", {{"request", "rate it"}}),
                                                        lb::scripted_reply::text("7")});
    lb::llm_agent<> child({.name = "rater", .model = child_model, .output_key = "rating",
                           .output_schema = obj(R"({"type":"object"})")});
    lb::llm_agent<> parent({.name = "assistant", .model = parent_model, .tools = lb::tools(lb::agent_tool_of(lb::any_agent(child)))});
    auto ctx = make_ctx(io, "rate");
    auto r = drain(io, ctx, parent.run(ctx));
    BOOST_TEST_REQUIRE(!r.error, error_text(r.error));
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 4u);
    BOOST_TEST(st[2]->tool_responses().front().result == json::parse(R"({"score":7})"));
    BOOST_TEST(ctx.session().state.at("rating") == json::parse(R"({"score":7})"));
}

BOOST_AUTO_TEST_CASE(bad_arguments_and_a_failing_child_are_tool_errors) {
    asio::io_context io;
    lb::scripted_model child_model(io.get_executor(), {lb::scripted_reply::auth_failed()});
    lb::scripted_model parent_model(io.get_executor(), {lb::scripted_reply::tool_call("helper", {{"req", 1}})
                                                            .with_tool_call("helper", {{"request", "help"}}),
                                                        lb::scripted_reply::text("gave up")});
    lb::llm_agent<> child({.name = "helper", .model = child_model});
    lb::llm_agent<> parent({.name = "assistant", .model = parent_model, .tools = lb::tools(lb::agent_tool_of(child))});
    auto ctx = make_ctx(io, "help");
    auto r = drain(io, ctx, parent.run(ctx));
    BOOST_TEST_REQUIRE(!r.error, error_text(r.error));
    const lb::event* resp = nullptr;
    for (const auto* e : r.stored())
        if (e->type == lb::event_type::tool_response && e->author == "assistant") resp = e;
    BOOST_REQUIRE(resp);
    auto rs = resp->tool_responses();
    BOOST_REQUIRE(rs.size() == 2u);
    auto it = rs.begin();
    BOOST_TEST(it->error.value_or("") == "args.request: missing required field");
    ++it;
    BOOST_TEST(it->error.value_or("").starts_with("agent 'helper' failed: model call of agent 'helper' failed: "),
               it->error.value_or(""));
}

BOOST_AUTO_TEST_CASE(a_request_of_the_wrong_type_or_an_extra_field_is_a_tool_error) {
    asio::io_context io;
    lb::scripted_model child_model(io.get_executor(), {lb::scripted_reply::text("unused")});
    lb::scripted_model parent_model(io.get_executor(), {lb::scripted_reply::tool_call("helper", {{"request", 5}})
                                                            .with_tool_call("helper", {{"request", "x"}, {"extra", 1}})
                                                            .with_tool_call("helper", {{"request", nullptr}}),
                                                        lb::scripted_reply::text("gave up")});
    lb::llm_agent<> child({.name = "helper", .model = child_model});
    lb::llm_agent<> parent({.name = "assistant", .model = parent_model, .tools = lb::tools(lb::agent_tool_of(child))});
    auto ctx = make_ctx(io, "help");
    auto r = drain(io, ctx, parent.run(ctx));
    BOOST_TEST_REQUIRE(!r.error, error_text(r.error));
    const lb::event* resp = nullptr;
    for (const auto* e : r.stored())
        if (e->type == lb::event_type::tool_response && e->author == "assistant") resp = e;
    BOOST_REQUIRE(resp);
    std::vector<std::string> errors;
    for (const auto& t : resp->tool_responses()) errors.push_back(t.error.value_or("(none)"));
    BOOST_TEST(errors == (std::vector<std::string>{"args.request: expected string, got integer",
                                                   "args.extra: unknown field (expected one of: request)",
                                                   "args.request: expected string, got null"}),
               boost::test_tools::per_element());
    BOOST_TEST(child_model.requests().empty()); // the child never ran
}

BOOST_AUTO_TEST_SUITE_END()
