// llm_agent.hpp: the Asio driver, with scripted_model and the runner contract emulated
// (tests/llm_agent_harness.hpp).
#include <libretto/agent/llm_agent.hpp>
#include <libretto/compaction/obligations.hpp>
#include <libretto/agent/parallel_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/tool/function_tool.hpp>

#include "llm_agent_harness.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace harness;

struct add_args {
    int a;
    int b;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))

struct city_args {
    std::string city;
};
BOOST_DESCRIBE_STRUCT(city_args, (), (city))

int add(add_args x) { return x.a + x.b; }

lb::llm_agent<> make_agent(lb::scripted_model m, lb::tool_set t = {}) {
    return lb::llm_agent<>({.name = "assistant", .instruction = "Be brief.", .model = m, .tools = std::move(t)});
}

lb::scripted_model model_of(asio::io_context& io, std::vector<lb::scripted_reply> r) {
    return lb::scripted_model(io.get_executor(), std::move(r));
}

// Tools that sleep and record when they started and finished. Free coroutines (g++ 12:
// coroutine lambdas must not capture), so the record is a namespace-scope variable.
std::vector<std::string> slow_marks;

asio::awaitable<json::value> slow_tool(city_args a) {
    slow_marks.push_back("start " + a.city);
    co_await sleep_ms(300);
    slow_marks.push_back("end " + a.city);
    co_return json::value(a.city + " done");
}

int sleeper_aborted = 0;

asio::awaitable<json::value> sleeper_tool() {
    try {
        co_await sleep_ms(10000);
    } catch (const boost::system::system_error&) {
        ++sleeper_aborted;
        throw;
    }
    co_return json::value("woke");
}

asio::awaitable<json::value> progress_tool(lb::tool_context& tc) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "progress", lb::content::from_text("50%"));
    e.branch = tc.context().branch();
    e.partial = true;
    tc.emit(std::move(e));
    co_await sleep_ms(20);
    co_return json::value("done");
}

// Calls of reporting_tool still sleeping (they push their event first, then sleep).
int reporting_running = 0;

asio::awaitable<json::value> reporting_tool(city_args a, lb::tool_context& tc) {
    ++reporting_running;
    lb::event e = lb::event::make(lb::event_type::agent_message, "progress", lb::content::from_text(a.city + " 50%"));
    e.branch = tc.context().branch();
    e.partial = true;
    tc.emit(std::move(e));
    co_await sleep_ms(30);
    --reporting_running;
    co_return json::value(a.city + " done");
}

/// consume() that also records, for each event from author "progress", how many
/// reporting_tool calls were still sleeping when it arrived.
asio::awaitable<void> consume_noting_running(lb::event_stream* s, lb::invocation_context* ctx, run_result* r,
                                             std::vector<int>* running_at_progress) {
    for (;;) {
        auto next = s->next();
        std::optional<lb::event> e = co_await std::move(next);
        if (!e) break;
        if (e->author == "progress") running_at_progress->push_back(reporting_running);
        store(*ctx, *e);
        r->events.push_back(std::move(*e));
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(llm_agent_tests)

BOOST_AUTO_TEST_CASE(final_answer_streams_partials_then_one_final_event) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("Hello there").in_chunks(3).with_usage(10, 2)});
    auto agent = make_agent(m);
    auto ctx = make_ctx(io, "Hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_REQUIRE(r.events.size() == 4u);
    std::string streamed;
    for (int i = 0; i < 3; ++i) {
        BOOST_TEST(r.events[i].partial);
        streamed += r.events[i].text();
    }
    BOOST_TEST(streamed == "Hello there");
    const lb::event& fin = r.events[3];
    BOOST_TEST(!fin.partial);
    BOOST_TEST(fin.is_final_response());
    BOOST_TEST(fin.text() == "Hello there");
    BOOST_TEST(fin.author == "assistant");
    BOOST_TEST(fin.invocation_id == ctx.invocation_id());
    BOOST_TEST(fin.session_id == "s1");
    BOOST_REQUIRE(fin.usage.has_value());
    BOOST_TEST(fin.usage->input_tokens == 10);
    // The runner stand-in stored the user message and the answer.
    BOOST_TEST(ctx.session().events.size() == 2u);
    // The request: instruction, the user's message, no tools.
    auto req = m.request_at(0);
    BOOST_TEST(req.system_instruction == "Be brief.");
    BOOST_REQUIRE(req.messages.size() == 1u);
    BOOST_TEST(req.messages[0].role == lb::message_role::user);
    BOOST_TEST(req.messages[0].text() == "Hi");
    BOOST_TEST(req.tools.empty());
}

// ADK's rule: the partial events of a model call carry the id of the event that call's
// response becomes, so a client can show the streamed text under that id and replace it
// with the final event. Each call (each step, each attempt) has its own id.
BOOST_AUTO_TEST_CASE(partials_carry_the_id_of_the_event_their_response_becomes) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("Let me add.")
                               .with_tool_call("add", {{"a", 2}, {"b", 3}})
                               .in_chunks(2),
                           lb::scripted_reply::text("It is 5.").in_chunks(3)});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds two integers", add)));
    auto ctx = make_ctx(io, "2+3?");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    // Partials, then the event they stream, per model call; the tool response between.
    std::vector<std::vector<const lb::event*>> calls(1);
    for (const auto& e : r.events) {
        calls.back().push_back(&e);
        if (!e.partial && e.type == lb::event_type::agent_message) calls.emplace_back();
    }
    calls.pop_back(); // after the last final event
    BOOST_REQUIRE_EQUAL(calls.size(), 2u);
    std::vector<std::string> finals;
    for (const auto& c : calls) {
        const lb::event& fin = *c.back();
        int partials = 0;
        for (const auto* e : c) {
            if (!e->partial) continue;
            ++partials;
            BOOST_TEST(e->id == fin.id);
        }
        BOOST_TEST(partials >= 2);
        finals.push_back(fin.id);
    }
    BOOST_TEST(finals[0] != finals[1]);
    // Stored events keep unique ids (partials are never stored).
    auto st = r.stored();
    for (std::size_t i = 0; i < st.size(); ++i)
        for (std::size_t j = i + 1; j < st.size(); ++j) BOOST_TEST(st[i]->id != st[j]->id);
    BOOST_TEST(ctx.session().events.front().id != finals[0]); // the user message
}

namespace {
// A model whose first stream sends a delta and then fails transiently; the second answers.
struct fails_once_model {
    asio::any_io_executor ex;
    std::shared_ptr<int> calls = std::make_shared<int>(0);
    std::string_view name() const { return "fails-once"; }
    asio::any_io_executor get_executor() const { return ex; }
    lb::llm_stream generate(lb::llm_request) {
        const bool first = (*calls)++ == 0;
        std::vector<lb::llm_chunk> chunks(2);
        chunks[0].text = first ? "Hal" : "Whole";
        lb::llm_response r = first ? lb::llm_response::failure(make_error_code(lb::errc::transient), "reset")
                                   : lb::llm_response{};
        if (!first) r.parts.emplace_back(lb::text_part{"Whole", {}});
        chunks[1].final = std::move(r);
        return lb::make_stream(ex, std::move(chunks));
    }
};
static_assert(lb::model<fails_once_model>);
} // namespace

// A retried call is a new attempt: its partials and its answer share a new id, not the one
// the failed attempt's partials had.
BOOST_AUTO_TEST_CASE(a_retried_call_streams_under_a_new_id) {
    asio::io_context io;
    fails_once_model m{io.get_executor()};
    lb::llm_agent<fails_once_model> agent({.name = "assistant", .model = m,
                                           .retry = {.max_attempts = 2, .initial_delay = std::chrono::milliseconds(1)}});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(*m.calls == 2);
    BOOST_REQUIRE_EQUAL(r.events.size(), 3u); // a partial per attempt, then the answer
    BOOST_TEST(r.events[0].partial);
    BOOST_TEST(r.events[1].partial);
    BOOST_TEST(!r.events[2].partial);
    BOOST_TEST(r.events[2].text() == "Whole");
    BOOST_TEST(r.events[1].id == r.events[2].id);
    BOOST_TEST(r.events[0].id != r.events[2].id);
}

BOOST_AUTO_TEST_CASE(tool_turns_until_the_answer) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 3}}),
                           lb::scripted_reply::tool_call("add", {{"a", 5}, {"b", 10}}),
                           lb::scripted_reply::text("15")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds two integers", add)));
    auto ctx = make_ctx(io, "2+3+10?");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(r.stored_texts() == "[assistant:agent_message:][assistant:tool_response:][assistant:agent_message:]"
                                   "[assistant:tool_response:][assistant:agent_message:15]");
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 5u);
    BOOST_TEST(st[0]->tool_calls().front().tool_call_id == "call_1");
    BOOST_TEST(st[1]->tool_responses().front().tool_call_id == "call_1");
    BOOST_TEST(st[1]->tool_responses().front().result == json::value(5));
    BOOST_TEST(st[3]->tool_responses().front().result == json::value(15));
    BOOST_TEST(m.request_count() == 3u);
    // The third request shows both rounds: user, call, result, call, result.
    auto req = m.request_at(2);
    BOOST_REQUIRE(req.messages.size() == 5u);
    BOOST_TEST(req.messages[1].role == lb::message_role::assistant);
    BOOST_TEST(req.messages[2].role == lb::message_role::tool);
    BOOST_TEST(req.messages[4].tool_responses().front().result == json::value(15));
    BOOST_REQUIRE(req.tools.size() == 1u);
    BOOST_TEST(req.tools[0].name == "add");
}

BOOST_AUTO_TEST_CASE(the_agent_sees_its_own_events_without_a_runner) {
    // A consumer that stores nothing: the second step still shows the tool result.
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 1}}), lb::scripted_reply::text("2")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds", add)));
    auto ctx = make_ctx(io, "1+1?");
    auto other = make_ctx(io, "unused"); // the drain stores into this one instead
    auto r = drain(io, other, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(ctx.session().events.size() == 1u);
    auto req = m.request_at(1);
    BOOST_REQUIRE(req.messages.size() == 3u);
    BOOST_TEST(req.messages[2].tool_responses().front().result == json::value(2));
}

BOOST_AUTO_TEST_CASE(tools_of_one_reply_run_concurrently) {
    asio::io_context io;
    slow_marks.clear();
    auto m = model_of(io, {lb::scripted_reply::tool_call("slow", {{"city", "Oslo"}})
                               .with_tool_call("slow", {{"city", "Rome"}}),
                           lb::scripted_reply::text("both done")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("slow", "Takes 300 ms", slow_tool)));
    auto ctx = make_ctx(io, "go");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    // Both started before either finished (the proof), and the run took less than the
    // sum of the two sleeps (600 ms).
    BOOST_REQUIRE(slow_marks.size() == 4u);
    BOOST_TEST(slow_marks[0] == "start Oslo");
    BOOST_TEST(slow_marks[1] == "start Rome");
    BOOST_TEST(r.seconds < 0.58);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    // One TOOL_RESPONSE event, responses in call order.
    auto rs = st[1]->tool_responses();
    BOOST_REQUIRE(rs.size() == 2u);
    auto it = rs.begin();
    BOOST_TEST(it->result == json::value("Oslo done"));
    ++it;
    BOOST_TEST(it->result == json::value("Rome done"));
}

BOOST_AUTO_TEST_CASE(tool_state_writes_become_the_response_events_state_delta) {
    asio::io_context io;
    auto remember = [](city_args a, lb::tool_context& tc) -> json::value {
        tc.state()["last_city"] = a.city;
        return json::value("ok");
    };
    auto m = model_of(io, {lb::scripted_reply::tool_call("remember", {{"city", "Oslo"}}), lb::scripted_reply::text("noted")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("remember", "Remembers a city", remember)));
    auto ctx = make_ctx(io, "remember Oslo");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_TEST(st[1]->actions.state_delta.at("last_city") == json::value("Oslo"));
    BOOST_TEST(ctx.session().state.at("last_city") == json::value("Oslo"));
    BOOST_TEST(*ctx.state().find("last_city") == json::value("Oslo"));
}

BOOST_AUTO_TEST_CASE(escalate_ends_the_run_after_the_response) {
    asio::io_context io;
    auto stop = [](lb::tool_context& tc) -> json::value {
        tc.escalate();
        return json::value("stopping");
    };
    auto m = model_of(io, {lb::scripted_reply::tool_call("stop"), lb::scripted_reply::text("never")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("stop", "Stops the loop", stop)));
    auto ctx = make_ctx(io, "stop");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 2u);
    BOOST_TEST(st[1]->actions.escalate.value_or(false));
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(max_steps_ends_with_an_error_event) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 1}}),
                           lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 1}}),
                           lb::scripted_reply::text("never")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .tools = lb::tools(lb::function_tool("add", "Adds", add)),
                         .max_steps = 2});
    auto ctx = make_ctx(io, "loop");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 5u);
    const lb::event& err = *st[4];
    BOOST_TEST(err.error().value_or("") == "agent 'assistant' reached max_steps (2) without a final answer");
    BOOST_TEST(err.metadata.at("stop_reason") == json::value("max_steps"));
    BOOST_TEST(!err.is_final_response());
    BOOST_TEST(m.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(a_long_running_call_pauses_a_resumable_invocation) {
    asio::io_context io;
    std::atomic<int> started{0};
    auto approve = [&started](city_args) -> json::value {
        ++started;
        return nullptr; // the answer comes from outside
    };
    auto m = model_of(io, {lb::scripted_reply::tool_call("approve", {{"city", "Oslo"}}), lb::scripted_reply::text("later")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("approve", "Asks a human", approve, {.long_running = true})));
    auto ctx = make_ctx(io, "book Oslo", /*resumable=*/true);
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u); // the call; no response (null result), then the pause
    BOOST_TEST(st[0]->tool_calls().front().tool_call_id == "call_1");
    BOOST_TEST(ctx.long_running_tool_ids().contains("call_1"));
    BOOST_TEST(ctx.should_pause_invocation(*st[0]));
    // The stored call is marked, so compaction keeps it open until its final response.
    BOOST_TEST(lb::is_long_running_call(*st[0], st[0]->tool_calls().front()));
    BOOST_TEST(started == 1);
    BOOST_TEST(m.request_count() == 1u);
    // The model was told the tool is long-running.
    BOOST_TEST(m.request_at(0).tools[0].description.find("long-running operation") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_long_running_call_does_not_pause_a_plain_invocation) {
    asio::io_context io;
    auto approve = [](city_args) -> json::value { return json::value("pending"); };
    auto m = model_of(io, {lb::scripted_reply::tool_call("approve", {{"city", "Oslo"}}), lb::scripted_reply::text("asked")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("approve", "Asks a human", approve, {.long_running = true})));
    auto ctx = make_ctx(io, "book Oslo");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(r.stored_texts() == "[assistant:agent_message:][assistant:tool_response:][assistant:agent_message:asked]");
    BOOST_TEST(ctx.long_running_tool_ids().contains("call_1"));
    // The tool's "pending" is an interim status: marked, so the call stays open.
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    BOOST_TEST(lb::is_intermediate_response(st[1]->tool_responses().front()));
}

BOOST_AUTO_TEST_CASE(model_callbacks_veto_and_replace_with_their_actions_applied) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("from the model")});
    // before_model vetoes the call and records state; after_model sees the veto as the
    // response. Both callbacks' state writes land on the final event.
    int after_calls = 0;
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .before_model = [](lb::callback_context& cb, lb::llm_request& req) -> std::optional<lb::llm_response> {
                             cb.state()["seen_messages"] = static_cast<std::int64_t>(req.messages.size());
                             lb::llm_response r;
                             r.parts.emplace_back(lb::text_part{"vetoed", {}});
                             return r;
                         },
                         .after_model = [&after_calls](lb::callback_context& cb, lb::llm_response& r) -> std::optional<lb::llm_response> {
                             ++after_calls;
                             cb.state()["after"] = r.text();
                             return std::nullopt;
                         }});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 0u);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(st[0]->text() == "vetoed");
    BOOST_TEST(st[0]->actions.state_delta.at("seen_messages") == json::value(1));
    BOOST_TEST(st[0]->actions.state_delta.at("after") == json::value("vetoed"));
    BOOST_TEST(after_calls == 1);
    BOOST_TEST(ctx.session().state.at("seen_messages") == json::value(1));
}

BOOST_AUTO_TEST_CASE(after_model_replaces_the_response_and_before_model_edits_the_request) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("raw")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .before_model = [](lb::callback_context&, lb::llm_request& req) -> std::optional<lb::llm_response> {
                             req.system_instruction = "edited";
                             return std::nullopt;
                         },
                         .after_model = [](lb::callback_context& cb, lb::llm_response&) -> std::optional<lb::llm_response> {
                             cb.actions().skip_summarization = true;
                             lb::llm_response r;
                             r.parts.emplace_back(lb::text_part{"replaced", {}});
                             return r;
                         }});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_at(0).system_instruction == "edited");
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(st[0]->text() == "replaced");
    BOOST_TEST(st[0]->actions.skip_summarization.value_or(false));
}

BOOST_AUTO_TEST_CASE(tool_callbacks_veto_edit_and_replace_with_their_actions_applied) {
    asio::io_context io;
    int ran = 0;
    auto counted = [&ran](add_args a) {
        ++ran;
        return a.a + a.b;
    };
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 2}})
                               .with_tool_call("add", {{"a", 100}, {"b", 1}})
                               .with_tool_call("add", {{"a", 7}, {"b", 7}}),
                           lb::scripted_reply::text("done")});
    lb::llm_agent agent(
        {.name = "assistant",
         .model = m,
         .tools = lb::tools(lb::function_tool("add", "Adds", counted)),
         .before_tool = [](lb::tool_context& tc, json::object& args) -> std::optional<json::value> {
             if (args.at("a") == json::value(100)) {
                 tc.state()["vetoed"] = tc.function_call_id();
                 return json::value("not allowed");
             }
             if (args.at("a") == json::value(7)) args["b"] = 0; // edit the arguments
             return std::nullopt;
         },
         .after_tool = [](lb::tool_context& tc, const json::object& args,
                          lb::tool_response_part& resp) -> std::optional<json::value> {
             if (args.at("a") == json::value(1)) {
                 tc.state()["replaced"] = true;
                 return json::value(42);
             }
             return std::nullopt;
         }});
    auto ctx = make_ctx(io, "add");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(ran == 2); // the vetoed call never ran
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    auto rs = st[1]->tool_responses();
    BOOST_REQUIRE(rs.size() == 3u);
    auto it = rs.begin();
    BOOST_TEST(it->result == json::value(42)); // replaced after the call
    ++it;
    BOOST_TEST(it->result == json::value("not allowed"));
    ++it;
    BOOST_TEST(it->result == json::value(7)); // 7 + 0
    BOOST_TEST(st[1]->actions.state_delta.at("vetoed") == json::value("call_2"));
    BOOST_TEST(st[1]->actions.state_delta.at("replaced") == json::value(true));
}

// With only an after_tool callback, the tool and the callback both get the model's
// arguments (the tool's are moved, the callback's copied).
BOOST_AUTO_TEST_CASE(after_tool_alone_sees_the_arguments_the_tool_ran_with) {
    asio::io_context io;
    std::vector<int> tool_saw;
    auto counted = [&tool_saw](add_args a) {
        tool_saw.push_back(a.a);
        return a.a + a.b;
    };
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 3}, {"b", 4}}), lb::scripted_reply::text("7")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .tools = lb::tools(lb::function_tool("add", "Adds", counted)),
                         .after_tool = [](lb::tool_context& tc, const json::object& args,
                                          lb::tool_response_part& resp) -> std::optional<json::value> {
                             tc.state()["seen"] = args;
                             tc.state()["result"] = resp.result;
                             return std::nullopt;
                         }});
    auto ctx = make_ctx(io, "add");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(tool_saw == (std::vector<int>{3}));
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    BOOST_TEST(st[1]->actions.state_delta.at("seen") == json::value({{"a", 3}, {"b", 4}}));
    BOOST_TEST(st[1]->actions.state_delta.at("result") == json::value(7));
    // The stored call keeps its arguments (the tool's copy was the one moved).
    BOOST_TEST(*st[0]->tool_input() == json::object({{"a", 3}, {"b", 4}}));
}

BOOST_AUTO_TEST_CASE(bad_arguments_unknown_tools_and_invalid_json_are_answered_to_the_model) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", "two"}, {"b", 3}})
                               .with_tool_call("subtract", {{"a", 1}})
                               .with_tool_call("add", {}, "call_x"),
                           lb::scripted_reply::raw_tool_call("add", "{a: 1}"),
                           lb::scripted_reply::text("sorry")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds", add)));
    auto ctx = make_ctx(io, "add");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 5u);
    auto rs = st[1]->tool_responses();
    BOOST_REQUIRE(rs.size() == 3u);
    auto it = rs.begin();
    BOOST_TEST(it->error.value_or("") == "args.a: expected integer, got string");
    BOOST_TEST(it->result == json::parse(R"({"error":"args.a: expected integer, got string"})"));
    ++it;
    BOOST_TEST(it->error.value_or("") == "unknown tool 'subtract'; available tools: add");
    ++it;
    BOOST_TEST(it->error.value_or("") == "args.a: missing required field");
    // Invalid JSON: the call is recorded with its raw text and answered with the error.
    const auto& bad_call = st[2]->tool_calls().front();
    BOOST_TEST(bad_call.tool_name == "add");
    BOOST_TEST(bad_call.metadata.at("invalid_arguments") == json::value("{a: 1}"));
    const auto& bad_resp = st[3]->tool_responses().front();
    BOOST_TEST(bad_resp.tool_call_id == bad_call.tool_call_id);
    BOOST_TEST(bad_resp.error.value_or("").starts_with("tool call 'add' (id call_3): arguments are not valid JSON"),
               bad_resp.error.value_or(""));
    BOOST_TEST(bad_resp.result.as_object().at("error") == json::value(*bad_resp.error));
    // The model saw its mistakes.
    auto req = m.request_at(2);
    BOOST_TEST(req.messages.back().tool_responses().front().error.has_value());
    BOOST_TEST(st[4]->text() == "sorry");
}

BOOST_AUTO_TEST_CASE(transient_errors_are_retried_with_backoff) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::transient(), lb::scripted_reply::transient(), lb::scripted_reply::text("ok")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .retry = {.max_attempts = 3,
                                   .initial_delay = std::chrono::milliseconds(20),
                                   .multiplier = 2.0,
                                   .max_delay = std::chrono::milliseconds(1000),
                                   .jitter = lb::retry_jitter::none}});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 3u);
    BOOST_TEST(r.seconds >= 0.058); // 20 ms + 40 ms
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(st[0]->text() == "ok");
}

BOOST_AUTO_TEST_CASE(every_attempt_sends_the_whole_request_and_before_model_sees_each) {
    // The model consumes its request; a retry builds it again from the session: the same
    // messages and tools, and before_model's edit applied to each attempt.
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 2}}), lb::scripted_reply::transient(),
                           lb::scripted_reply::transient(), lb::scripted_reply::text("3")});
    int before = 0;
    lb::llm_agent agent({.name = "assistant",
                         .instruction = "Be brief.",
                         .model = m,
                         .tools = lb::tools(lb::function_tool("add", "Adds", add)),
                         .retry = {.max_attempts = 3, .initial_delay = std::chrono::milliseconds(1)},
                         .before_model = [&before](lb::callback_context&, lb::llm_request& req) -> std::optional<lb::llm_response> {
                             req.system_instruction += " #" + std::to_string(++before);
                             return std::nullopt;
                         }});
    auto ctx = make_ctx(io, "add 1 and 2");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_REQUIRE(m.request_count() == 4u);
    BOOST_TEST(before == 4);
    BOOST_TEST(m.request_at(0).system_instruction == "Be brief. #1");
    BOOST_TEST(m.request_at(0).messages.size() == 1u);
    for (std::size_t i = 1; i < 4; ++i) {
        const lb::llm_request& q = m.request_at(i);
        BOOST_TEST(q.system_instruction == "Be brief. #" + std::to_string(i + 1));
        BOOST_REQUIRE(q.messages.size() == 3u); // user, the call, its response
        BOOST_TEST((q.messages == m.request_at(1).messages));
        BOOST_REQUIRE(q.tools.size() == 1u);
        BOOST_TEST((q.tools[0] == m.request_at(0).tools[0]));
        BOOST_TEST(q.tools.shares_with(m.request_at(0).tools)); // not copied per request
        BOOST_TEST(q.tools.shares_with(agent.declarations()));
        BOOST_TEST(q.tools[0].parameters.contains("properties"));
    }
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    BOOST_TEST(st[2]->text() == "3");
}

BOOST_AUTO_TEST_CASE(exhausted_retries_end_with_a_clear_error_event) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::transient("overloaded (529)"), lb::scripted_reply::transient("overloaded (529)")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .retry = {.max_attempts = 2, .initial_delay = std::chrono::milliseconds(1)}});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(st[0]->error().value_or("") ==
               "model call of agent 'assistant' failed after 2 attempts: temporary failure: retry later: overloaded (529)");
    BOOST_TEST(lb::agent_error_code(*st[0]) == lb::errc::transient);
}

namespace {
// A model that says it retries its own transient failures, as openai_model and
// anthropic_model do: what reaches the agent is the final word.
struct self_retrying_model {
    lb::scripted_model inner;
    std::string_view name() const { return inner.name(); }
    asio::any_io_executor get_executor() const { return inner.get_executor(); }
    lb::llm_stream generate(lb::llm_request r) { return inner.generate(std::move(r)); }
    bool retries_transient() const noexcept { return true; }
};
static_assert(lb::model<self_retrying_model>);
} // namespace

// One retry layer: the agent does not retry a model that retries itself, also when an
// any_model wraps it; it retries one that does not, with its own retry options.
BOOST_AUTO_TEST_CASE(a_model_that_retries_itself_is_not_retried_again) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::transient("503 (after 4 attempts)"), lb::scripted_reply::text("never")});
    self_retrying_model sm{m};
    BOOST_TEST(lb::model_retries_transient(sm));
    BOOST_TEST(!lb::model_retries_transient(m));
    BOOST_TEST(lb::model_retries_transient(lb::any_model(sm)));
    BOOST_TEST(!lb::model_retries_transient(lb::any_model(m)));

    lb::llm_agent<lb::any_model> agent(
        {.name = "assistant", .model = lb::any_model(sm), .retry = {.max_attempts = 4, .initial_delay = std::chrono::milliseconds(1)}});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 1u);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(st[0]->error().value_or("") ==
               "model call of agent 'assistant' failed: temporary failure: retry later: 503 (after 4 attempts)");
    BOOST_TEST(lb::agent_error_code(*st[0]) == lb::errc::transient);

    // The same script without the claim: retried by the agent, which then gets the answer.
    auto m2 = model_of(io, {lb::scripted_reply::transient("503"), lb::scripted_reply::text("ok")});
    lb::llm_agent<lb::any_model> agent2(
        {.name = "assistant", .model = lb::any_model(m2), .retry = {.max_attempts = 4, .initial_delay = std::chrono::milliseconds(1)}});
    auto ctx2 = make_ctx(io, "hi");
    auto r2 = drain(io, ctx2, agent2.run(ctx2));
    BOOST_REQUIRE(!r2.error);
    BOOST_TEST(m2.request_count() == 2u);
    auto st2 = r2.stored();
    BOOST_REQUIRE(st2.size() == 1u);
    BOOST_TEST(st2[0]->text() == "ok");
}

BOOST_AUTO_TEST_CASE(context_overflow_is_surfaced_not_retried) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::context_overflow()});
    auto agent = make_agent(m);
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 1u);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(lb::agent_error_code(*st[0]) == lb::errc::context_overflow);
    BOOST_TEST(st[0]->metadata.at("stop_reason") == json::value("model_error"));
}

BOOST_AUTO_TEST_CASE(output_key_stores_the_final_text_in_state) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("Oslo is sunny")});
    lb::llm_agent agent({.name = "assistant", .model = m, .output_key = "forecast"});
    auto ctx = make_ctx(io, "weather?");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_TEST(st[0]->actions.state_delta.at("forecast") == json::value("Oslo is sunny"));
    BOOST_TEST(ctx.session().state.at("forecast") == json::value("Oslo is sunny"));
    BOOST_TEST(*ctx.state().find("forecast") == json::value("Oslo is sunny"));
}

BOOST_AUTO_TEST_CASE(output_schema_adds_the_parsed_object) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text(R"({"city":"Oslo","temp_c":21})")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .output_key = "weather",
                         .output_schema = obj(R"({"type":"object","properties":{"city":{"type":"string"}}})")});
    auto ctx = make_ctx(io, "weather?");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st[0]->data() != nullptr);
    BOOST_TEST(st[0]->data()->at("temp_c") == json::value(21));
    BOOST_TEST(st[0]->actions.state_delta.at("weather") == json::parse(R"({"city":"Oslo","temp_c":21})"));
    BOOST_TEST(m.request_at(0).output_schema.has_value());
}

BOOST_AUTO_TEST_CASE(output_schema_takes_a_fenced_object_and_refuses_anything_else_clearly) {
    const auto schema = obj(R"({"type":"object","properties":{"city":{"type":"string"}}})");
    {
        asio::io_context io;
        auto m = model_of(io, {lb::scripted_reply::text("```json\n{\"city\": \"Oslo\"}\n```\n")});
        lb::llm_agent agent({.name = "assistant", .model = m, .output_key = "weather", .output_schema = schema});
        auto ctx = make_ctx(io, "weather?");
        auto r = drain(io, ctx, agent.run(ctx));
        BOOST_REQUIRE(!r.error);
        auto st = r.stored();
        BOOST_REQUIRE(st.size() == 1u);
        BOOST_REQUIRE(st[0]->data() != nullptr);
        BOOST_TEST(st[0]->actions.state_delta.at("weather") == json::parse(R"({"city":"Oslo"})"));
    }
    const std::vector<std::pair<std::string, std::string>> bad{
        {"It is sunny in Oslo.", "it is not JSON ("},
        {R"(["Oslo"])", "it is JSON but not an object"},
        {"```\n[1, 2]\n```", "it is JSON but not an object"},
        // JSON no store could keep: the answer's event would be refused and the turn lost.
        {R"({"t": 1e400})", "it is not JSON (number 1e400 "},
        {R"({"city": "Oslo", "city": "Bergen"})", "it is not JSON (the key \"city\" appears twice"},
        {std::string(300, '[') + std::string(300, ']'), "it is not JSON ("},
    };
    for (const auto& [answer, why] : bad) {
        BOOST_TEST_CONTEXT("answer: " << answer) {
            asio::io_context io;
            auto m = model_of(io, {lb::scripted_reply::text(answer)});
            lb::llm_agent agent({.name = "assistant", .model = m, .output_key = "weather", .output_schema = schema});
            auto ctx = make_ctx(io, "weather?");
            auto r = drain(io, ctx, agent.run(ctx));
            BOOST_REQUIRE(!r.error);
            auto st = r.stored();
            BOOST_REQUIRE(st.size() == 2u);
            BOOST_TEST(st[0]->text() == answer); // what the model said is kept
            BOOST_TEST(st[0]->data() == nullptr);
            BOOST_TEST(!st[0]->actions.state_delta.contains("weather")); // nothing half-right in state
            BOOST_TEST(!ctx.session().state.contains("weather"));
            BOOST_TEST(st[1]->metadata.at("stop_reason") == json::value("bad_output"));
            BOOST_TEST((lb::agent_error_code(*st[1]) == lb::errc::bad_response));
            BOOST_TEST(st[1]->text().find("not the JSON object output_schema asks for: " + why) != std::string::npos,
                       st[1]->text());
        }
    }
}

BOOST_AUTO_TEST_CASE(instruction_templates_read_the_state) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("hi Ann")});
    lb::llm_agent agent({.name = "assistant",
                         .instruction = "Help {user:name} with {topic?}. Count: {count}. Literal: {not a key}.",
                         .model = m,
                         .static_instruction = "You are a weather bot."});
    auto ctx = make_ctx(io, "hi", false, obj(R"({"user:name":"Ann","count":3})"));
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_at(0).system_instruction ==
               "You are a weather bot.\n\nHelp Ann with . Count: 3. Literal: {not a key}.");
}

BOOST_AUTO_TEST_CASE(an_instruction_function_gets_the_readonly_context) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("ok")});
    lb::llm_agent agent({.name = "assistant",
                         .instruction = [](const lb::readonly_context& rc) {
                             return "Agent " + rc.agent_name() + ", keep {braces}";
                         },
                         .model = m});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_at(0).system_instruction == "Agent assistant, keep {braces}");
}

BOOST_AUTO_TEST_CASE(a_missing_state_key_is_a_clear_error_event) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("never")});
    lb::llm_agent agent({.name = "assistant", .instruction = "Help {user:name}.", .model = m});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 0u);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u);
    BOOST_TEST(st[0]->error().value_or("") ==
               "instruction of agent 'assistant': state key 'user:name' not found (write {user:name?} for a key "
               "that may be absent)");
    BOOST_TEST(lb::agent_error_code(*st[0]) == lb::errc::not_found);
}

BOOST_AUTO_TEST_CASE(end_invocation_stops_before_the_next_step) {
    asio::io_context io;
    auto ender = [](lb::tool_context& tc) -> json::value {
        tc.context().end_invocation();
        return json::value("bye");
    };
    auto m = model_of(io, {lb::scripted_reply::tool_call("ender"), lb::scripted_reply::text("never")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("ender", "Ends", ender)));
    auto ctx = make_ctx(io, "end");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(r.stored().size() == 2u);
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(events_pushed_by_tools_are_forwarded_live) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("work"), lb::scripted_reply::text("finished")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("work", "Works", progress_tool)));
    auto ctx = make_ctx(io, "work");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    for (const auto& e : r.events) BOOST_TEST_MESSAGE(e.author << " " << e.text() << " partial=" << e.partial);
    BOOST_REQUIRE(r.events.size() == 5u); // call, progress, response, partial, final
    BOOST_TEST(r.events[1].text() == "50%"); // before the tool's response
    BOOST_TEST((r.events[2].type == lb::event_type::tool_response));
    BOOST_TEST(!ctx.event_callback()); // the agent's layer was removed again
}

// A step whose one call is of a synchronous tool (a plain function) runs the call in the
// agent itself, with no coroutine: what the call pushes, writes and answers must come out
// exactly as from the same tool awaited.
json::value sync_progress(city_args a, lb::tool_context& tc) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "progress", lb::content::from_text(a.city + " 50%"));
    e.branch = tc.context().branch();
    e.partial = true;
    tc.emit(std::move(e));
    tc.state()["last_city"] = json::value(a.city);
    if (a.city == "Nowhere") throw lb::tool_error("no such city: Nowhere", lb::errc::not_found);
    return json::value(a.city + " done");
}

asio::awaitable<json::value> awaited_progress(city_args a, lb::tool_context& tc) {
    co_return sync_progress(std::move(a), tc);
}

BOOST_AUTO_TEST_CASE(a_synchronous_tool_gives_the_events_of_the_same_tool_awaited) {
    // What a run yields, without ids and times.
    auto shape = [](const run_result& r) {
        std::vector<std::string> out;
        for (const auto& e : r.events) {
            std::string line = e.author + "|" + std::string(to_string(e.type)) + "|" + e.text() +
                               (e.partial ? "|partial" : "") + "|" + json::serialize(e.actions.state_delta);
            for (const auto& resp : e.tool_responses())
                line += "|" + resp.tool_name + "=" + json::serialize(resp.result) + (resp.error ? "!" + *resp.error : "");
            out.push_back(std::move(line));
        }
        return out;
    };
    for (const std::string city : {"Oslo", "Nowhere"}) {
        BOOST_TEST_CONTEXT("city " << city) {
            std::vector<std::vector<std::string>> shapes;
            for (const bool sync : {true, false}) {
                asio::io_context io;
                auto m = model_of(io, {lb::scripted_reply::tool_call("report", {{"city", city}}),
                                       lb::scripted_reply::text("reported")});
                lb::tool_set t = sync ? lb::tools(lb::function_tool("report", "Reports", sync_progress))
                                      : lb::tools(lb::function_tool("report", "Reports", awaited_progress));
                BOOST_TEST(t.find("report")->synchronous() == sync);
                auto agent = make_agent(m, std::move(t));
                auto ctx = make_ctx(io, "go");
                auto r = drain(io, ctx, agent.run(ctx));
                BOOST_REQUIRE(!r.error);
                BOOST_TEST(!ctx.event_callback()); // the agent's layer was removed again
                BOOST_TEST(ctx.session().state.at("last_city") == json::value(city));
                shapes.push_back(shape(r));
            }
            BOOST_TEST(shapes[0] == shapes[1], boost::test_tools::per_element());
            BOOST_REQUIRE(shapes[0].size() == 5u); // call, progress, response, partial, final
            BOOST_TEST(shapes[0][1].find(city + " 50%|partial") != std::string::npos);
            const std::string expected = city == "Oslo" ? "report=\"Oslo done\"" : "!no such city: Nowhere";
            BOOST_TEST(shapes[0][2].find(expected) != std::string::npos, shapes[0][2]);
            BOOST_TEST(shapes[0][2].find(R"({"last_city":")" + city + "\"}") != std::string::npos, shapes[0][2]);
        }
    }
}

// A call the loop answers itself (its arguments are not JSON) beside one synchronous call:
// the loop's answer and the tool's come in the call event's order, in one tool-response
// event.
BOOST_AUTO_TEST_CASE(a_synchronous_call_beside_a_call_the_loop_answers) {
    asio::io_context io;
    auto first = lb::scripted_reply::raw_tool_call("add", "{a: 1}", "bad");
    first.with_tool_call("add", {{"a", 2}, {"b", 3}}, "good");
    auto m = model_of(io, {std::move(first), lb::scripted_reply::text("5")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds", add)));
    auto ctx = make_ctx(io, "add");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    // The call event lists the parsed call first, then the one recorded from raw text;
    // the responses follow that order.
    std::vector<std::string> call_ids;
    for (const auto& c : st[0]->tool_calls()) call_ids.push_back(c.tool_call_id);
    BOOST_TEST(call_ids == (std::vector<std::string>{"good", "bad"}), boost::test_tools::per_element());
    auto responses = st[1]->tool_responses();
    BOOST_REQUIRE(responses.size() == 2u);
    auto it = responses.begin();
    BOOST_TEST(it->tool_call_id == "good");
    BOOST_TEST(!it->error.has_value());
    BOOST_TEST(it->result == json::value(5));
    ++it;
    BOOST_TEST(it->tool_call_id == "bad");
    BOOST_TEST(it->error.value_or("").starts_with("tool call 'add' (id bad): arguments are not valid JSON"),
               it->error.value_or(""));
    BOOST_TEST(!ctx.event_callback());
}

// One call runs in the agent's coroutine, several are spawned: either way what a call
// pushes reaches the caller while the call is still running, and the responses come after.
BOOST_AUTO_TEST_CASE(pushed_events_arrive_while_the_call_runs_for_one_call_and_for_several) {
    for (const int calls : {1, 2}) {
        BOOST_TEST_CONTEXT("calls " << calls) {
            asio::io_context io;
            reporting_running = 0;
            auto first = lb::scripted_reply::tool_call("report", {{"city", "Oslo"}});
            if (calls == 2) first.with_tool_call("report", {{"city", "Rome"}});
            auto m = model_of(io, {std::move(first), lb::scripted_reply::text("reported")});
            auto agent = make_agent(m, lb::tools(lb::function_tool("report", "Reports", reporting_tool)));
            auto ctx = make_ctx(io, "go");
            lb::event_stream s = agent.run(ctx);
            run_result r;
            std::vector<int> running_at_progress;
            asio::co_spawn(io, consume_noting_running(&s, &ctx, &r, &running_at_progress),
                           [&r](std::exception_ptr p) { r.error = p; });
            io.run();
            BOOST_REQUIRE(!r.error);
            BOOST_REQUIRE(running_at_progress.size() == static_cast<std::size_t>(calls));
            for (int n : running_at_progress) BOOST_TEST(n >= 1); // a call was still sleeping
            BOOST_TEST(reporting_running == 0);
            auto st = r.stored();
            BOOST_REQUIRE(st.size() == 3u); // call, responses, answer
            BOOST_TEST(st[1]->tool_responses().size() == static_cast<std::size_t>(calls));
            BOOST_TEST(st[2]->text() == "reported");
            BOOST_TEST(!ctx.event_callback()); // the agent's layer was removed again
        }
    }
}

BOOST_AUTO_TEST_CASE(cancelling_the_stream_stops_the_tools) {
    asio::io_context io;
    sleeper_aborted = 0;
    auto m = model_of(io, {lb::scripted_reply::tool_call("sleep"), lb::scripted_reply::text("never")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("sleep", "Sleeps", sleeper_tool)));
    auto ctx = make_ctx(io, "sleep");
    lb::event_stream s = agent.run(ctx);
    std::vector<lb::event> seen;
    asio::steady_timer cancel_at(io, std::chrono::milliseconds(50));
    cancel_at.async_wait([&](boost::system::error_code) { s.cancel(); });
    run_result r;
    auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(io, consume(&s, &ctx, &r), [&r](std::exception_ptr p) { r.error = p; });
    io.run();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST(secs < 2.0);
    BOOST_TEST(sleeper_aborted == 1);
    BOOST_REQUIRE(r.error);
    BOOST_TEST(error_text(r.error).find("cancel") != std::string::npos, error_text(r.error));
    BOOST_TEST(r.stored().size() == 1u); // the call event only
}

namespace {
// A model whose stream sends one delta and then waits (10 s) for more.
struct hanging_model {
    asio::any_io_executor ex;
    std::shared_ptr<int> aborted = std::make_shared<int>(0);
    std::string_view name() const { return "hanging"; }
    asio::any_io_executor get_executor() const { return ex; }
    static asio::awaitable<void> produce(std::shared_ptr<int> aborted, lb::llm_writer out) {
        lb::llm_chunk c;
        c.text = "Hel";
        co_await out.emit(std::move(c));
        try {
            co_await sleep_ms(10000);
        } catch (const boost::system::system_error&) {
            ++*aborted;
            throw;
        }
    }
    lb::llm_stream generate(lb::llm_request) {
        auto a = aborted;
        return lb::llm_stream(ex, [a](lb::llm_writer out) { return produce(a, std::move(out)); });
    }
};
static_assert(lb::model<hanging_model>);
} // namespace

BOOST_AUTO_TEST_CASE(cancelling_the_stream_stops_the_model_call) {
    asio::io_context io;
    hanging_model m{io.get_executor()};
    lb::llm_agent<hanging_model> agent({.name = "assistant", .model = m});
    auto ctx = make_ctx(io, "hi");
    lb::event_stream s = agent.run(ctx);
    asio::steady_timer cancel_at(io, std::chrono::milliseconds(50));
    cancel_at.async_wait([&](boost::system::error_code) { s.cancel(); });
    run_result r;
    asio::co_spawn(io, consume(&s, &ctx, &r), [&r](std::exception_ptr p) { r.error = p; });
    auto t0 = std::chrono::steady_clock::now();
    io.run();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST(secs < 2.0);
    BOOST_TEST(*m.aborted == 1);
    BOOST_REQUIRE(r.events.size() == 1u);
    BOOST_TEST(r.events[0].partial);
    BOOST_TEST(r.events[0].text() == "Hel");
}

namespace {
// A model whose stream sends deltas (text and a tool call) and ends without a final response.
struct truncated_model {
    asio::any_io_executor ex;
    std::shared_ptr<int> calls = std::make_shared<int>(0);
    std::string_view name() const { return "truncated"; }
    asio::any_io_executor get_executor() const { return ex; }
    lb::llm_stream generate(lb::llm_request) {
        ++*calls;
        std::vector<lb::llm_chunk> chunks(2);
        chunks[0].text = "Half an ans";
        lb::tool_call_delta d;
        d.index = 0;
        d.id = "call_1";
        d.name = "add";
        d.arguments = "{\"a\": 1, \"b\": 2}";
        chunks[1].tool_calls.push_back(std::move(d));
        return lb::make_stream(ex, std::move(chunks));
    }
};
static_assert(lb::model<truncated_model>);
} // namespace

// The deltas are streamed as partials, but a stream that ends without a final response is a
// bad response: no tool runs, nothing of the deltas is stored, the run ends with an error
// event (not retried).
BOOST_AUTO_TEST_CASE(a_stream_without_a_final_response_is_a_bad_response) {
    asio::io_context io;
    truncated_model m{io.get_executor()};
    int ran = 0;
    auto counted = [&ran](add_args a) {
        ++ran;
        return a.a + a.b;
    };
    lb::llm_agent<truncated_model> agent(
        {.name = "assistant", .model = m, .tools = lb::tools(lb::function_tool("add", "Adds", counted))});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(*m.calls == 1);
    BOOST_TEST(ran == 0);
    BOOST_REQUIRE(!r.events.empty());
    BOOST_TEST(r.events.front().partial);
    BOOST_TEST(r.events.front().text() == "Half an ans");
    auto st = r.stored();
    BOOST_REQUIRE_EQUAL(st.size(), 1u);
    const lb::event& err = *st.front();
    BOOST_TEST((lb::agent_error_code(err) == lb::errc::bad_response));
    BOOST_TEST(err.text().find("ended without a final response") != std::string::npos, err.text());
}

// ---- max_llm_calls: one budget of model calls for the whole invocation ----------------

BOOST_AUTO_TEST_CASE(max_llm_calls_refuses_the_call_past_the_limit_and_ends_the_invocation) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 1}}),
                           lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 2}}),
                           lb::scripted_reply::text("never sent")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds", add)));
    auto ctx = make_ctx(io, "loop", false, {}, 2);
    BOOST_TEST(ctx.max_llm_calls() == 2u);
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 2u); // the third call never reached the model
    BOOST_TEST(ctx.llm_calls() == 2u);
    BOOST_TEST(ctx.is_invocation_ended());
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 5u); // call, response, call, response, error
    const lb::event& err = *st.back();
    BOOST_TEST(err.metadata.at("error") == json::value(true));
    BOOST_TEST(err.metadata.at("stop_reason") == json::value("max_llm_calls"));
    BOOST_TEST((lb::agent_error_code(err) == lb::errc::limit_exceeded));
    BOOST_TEST(err.text().find("2 model calls (max_llm_calls)") != std::string::npos, err.text());
    BOOST_TEST(err.text().find(ctx.invocation_id()) != std::string::npos, err.text());
}

BOOST_AUTO_TEST_CASE(max_llm_calls_counts_retries_and_every_agent_of_the_invocation) {
    asio::io_context io;
    // A retry is a model call: with a budget of 2, a transient error, its retry, and the
    // next agent finds the budget spent.
    auto first = model_of(io, {lb::scripted_reply::transient(), lb::scripted_reply::text("first answer")});
    auto second = model_of(io, {lb::scripted_reply::text("second answer")});
    lb::llm_agent<> a({.name = "a", .model = first, .retry = {.max_attempts = 3, .initial_delay = std::chrono::milliseconds(1)}});
    lb::llm_agent<> b({.name = "b", .model = second});
    auto ctx = make_ctx(io, "hi", false, {}, 2);
    auto ra = drain(io, ctx, a.run(ctx.for_agent("a")));
    BOOST_REQUIRE(!ra.error);
    BOOST_TEST(first.request_count() == 2u);
    BOOST_REQUIRE(ra.stored().size() == 1u);
    BOOST_TEST(ra.stored()[0]->text() == "first answer");
    BOOST_TEST(ctx.llm_calls() == 2u);
    auto rb = drain(io, ctx, b.run(ctx.for_agent("b")));
    BOOST_REQUIRE(!rb.error);
    BOOST_TEST(second.request_count() == 0u);
    BOOST_REQUIRE(rb.stored().size() == 1u);
    BOOST_TEST(rb.stored()[0]->author == "b");
    BOOST_TEST(rb.stored()[0]->metadata.at("stop_reason") == json::value("max_llm_calls"));
}

BOOST_AUTO_TEST_CASE(max_llm_calls_zero_means_no_limit_and_a_veto_is_not_a_call) {
    asio::io_context io;
    BOOST_TEST(lb::invocation_options{}.max_llm_calls == 500u); // ADK's default
    BOOST_TEST(lb::invocation_context{}.max_llm_calls() == 500u);
    auto unlimited = make_ctx(io, "long", false, {}, 0);
    for (int i = 0; i < 1000; ++i) BOOST_REQUIRE(unlimited.count_llm_call());
    BOOST_TEST(unlimited.llm_calls() == 1000u);
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 1}}), lb::scripted_reply::text("done")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("add", "Adds", add)));
    auto r = drain(io, unlimited, agent.run(unlimited));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 2u);
    BOOST_TEST(r.stored().back()->text() == "done");
    BOOST_TEST(unlimited.llm_calls() == 1002u);
    BOOST_TEST(!unlimited.is_invocation_ended());

    // A response supplied by before_model does not spend the budget.
    auto m2 = model_of(io, {lb::scripted_reply::text("from the model")});
    int vetoes = 0;
    lb::llm_agent vetoing({.name = "assistant",
                           .model = m2,
                           .before_model = [&vetoes](lb::callback_context&, lb::llm_request&) -> std::optional<lb::llm_response> {
                               if (vetoes++ > 0) return std::nullopt;
                               lb::llm_response resp;
                               resp.parts.emplace_back(lb::text_part{"cached", {}});
                               return resp;
                           }});
    auto ctx2 = make_ctx(io, "hi", false, {}, 1);
    auto r2 = drain(io, ctx2, vetoing.run(ctx2));
    BOOST_REQUIRE(!r2.error);
    BOOST_TEST(ctx2.llm_calls() == 0u);
    BOOST_TEST(r2.stored().back()->text() == "cached");
}

// ---- actions of the model callbacks: escalate, transfer, end_invocation -------------

BOOST_AUTO_TEST_CASE(after_model_escalate_on_a_tool_step_answers_the_calls_then_stops) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 3}}), lb::scripted_reply::text("never")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .tools = lb::tools(lb::function_tool("add", "Adds", add)),
                         .after_model = [](lb::callback_context& cb, lb::llm_response&) -> std::optional<lb::llm_response> {
                             cb.actions().escalate = true;
                             return std::nullopt;
                         }});
    auto ctx = make_ctx(io, "add and stop");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 1u); // no second step
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 2u); // the call and its response: no half pair
    BOOST_TEST(st[0]->actions.escalate.value_or(false));
    BOOST_TEST(st[0]->tool_calls().size() == 1u);
    BOOST_REQUIRE(st[1]->tool_responses().size() == 1u);
    BOOST_TEST(st[1]->tool_responses().front().result == json::value(5));
}

BOOST_AUTO_TEST_CASE(after_model_transfer_runs_the_target_in_the_same_invocation) {
    for (bool with_tool_call : {false, true}) {
        BOOST_TEST_CONTEXT("with a tool call: " << with_tool_call) {
            asio::io_context io;
            auto root_model = model_of(io, {with_tool_call ? lb::scripted_reply::tool_call("add", {{"a", 1}, {"b", 2}})
                                                           : lb::scripted_reply::text("Let me hand you over."),
                                            lb::scripted_reply::text("never")});
            auto billing_model = model_of(io, {lb::scripted_reply::text("Your bill is 12 EUR.")});
            lb::llm_agent<> billing({.name = "billing", .description = "Bills", .model = billing_model});
            lb::llm_agent<> root({.name = "root",
                                  .model = root_model,
                                  .tools = lb::tools(lb::function_tool("add", "Adds", add)),
                                  .sub_agents = {lb::any_agent(billing)},
                                  .after_model = [](lb::callback_context& cb, lb::llm_response&) -> std::optional<lb::llm_response> {
                                      cb.actions().transfer_to_agent = "billing";
                                      return std::nullopt;
                                  }});
            auto ctx = make_ctx(io, "How much do I owe?");
            auto r = drain(io, ctx, root.run(ctx));
            BOOST_REQUIRE(!r.error);
            BOOST_TEST(root_model.request_count() == 1u);
            BOOST_TEST(billing_model.request_count() == 1u);
            auto st = r.stored();
            BOOST_REQUIRE(!st.empty());
            BOOST_TEST(st.front()->actions.transfer_to_agent.value_or("") == "billing");
            BOOST_TEST(st.back()->author == "billing");
            BOOST_TEST(st.back()->text() == "Your bill is 12 EUR.");
            BOOST_TEST(st.back()->invocation_id == ctx.invocation_id());
            BOOST_TEST(st.size() == (with_tool_call ? 3u : 2u)); // the call is answered first
            if (with_tool_call) BOOST_TEST(st[1]->tool_responses().front().result == json::value(3));
            BOOST_TEST(lb::transfer_hop_count(ctx) == 1u);
        }
    }
}

BOOST_AUTO_TEST_CASE(before_model_end_invocation_stops_the_call_it_was_shown) {
    asio::io_context io;
    auto m = model_of(io, {lb::scripted_reply::text("never")});
    lb::llm_agent agent({.name = "assistant",
                         .model = m,
                         .before_model = [](lb::callback_context& cb, lb::llm_request&) -> std::optional<lb::llm_response> {
                             cb.state()["stopped_by"] = "policy";
                             cb.context().end_invocation();
                             return std::nullopt;
                         }});
    auto ctx = make_ctx(io, "hi");
    auto r = drain(io, ctx, agent.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(m.request_count() == 0u);
    BOOST_TEST(ctx.llm_calls() == 0u);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 1u); // the callback's state write, persisted
    BOOST_TEST(st[0]->actions.state_delta.at("stopped_by") == json::value("policy"));
    BOOST_TEST(st[0]->content.parts.empty());
    BOOST_TEST(ctx.session().state.at("stopped_by") == json::value("policy"));
}

BOOST_AUTO_TEST_CASE(cancelling_the_stream_stops_concurrent_tool_calls) {
    asio::io_context io;
    sleeper_aborted = 0;
    auto m = model_of(io, {lb::scripted_reply::tool_call("sleep").with_tool_call("sleep").with_tool_call("sleep"),
                           lb::scripted_reply::text("never")});
    auto agent = make_agent(m, lb::tools(lb::function_tool("sleep", "Sleeps", sleeper_tool)));
    auto ctx = make_ctx(io, "sleep three times");
    lb::event_stream s = agent.run(ctx);
    asio::steady_timer cancel_at(io, std::chrono::milliseconds(50));
    cancel_at.async_wait([&](boost::system::error_code) { s.cancel(); });
    run_result r;
    auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(io, consume(&s, &ctx, &r), [&r](std::exception_ptr p) { r.error = p; });
    io.run();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST(secs < 2.0);
    BOOST_TEST(sleeper_aborted == 3); // every call, not only the first
    BOOST_REQUIRE(r.error);
    BOOST_TEST(error_text(r.error).find("cancel") != std::string::npos, error_text(r.error));
    BOOST_REQUIRE(r.stored().size() == 1u); // the call event only: no partial answers stored
    BOOST_TEST(r.stored()[0]->tool_calls().size() == 3u);
    // What the next turn's model would see: the unanswered calls are repaired away.
    lb::context_view next = lb::make_context_view(ctx.session().events);
    for (const auto& e : next) BOOST_TEST(e.tool_calls().empty());
}

namespace {
/// Everything a request shows, as text: each message's text and its calls' tool names.
std::string request_text(const lb::llm_request& r) {
    std::string s;
    for (const auto& m : r.messages) {
        s += m.text();
        for (const auto& c : m.tool_calls()) s += " call:" + c.tool_name;
        for (const auto& t : m.tool_responses()) s += " result:" + t.tool_name;
        s += "\n";
    }
    return s;
}
} // namespace

BOOST_AUTO_TEST_CASE(parallel_llm_agents_see_the_shared_history_but_not_each_other) {
    asio::io_context io;
    slow_marks.clear();
    // "before" answers first; then a (a slow tool, then its answer) and b (one answer) run
    // in parallel. b is done long before a's second request is built, and the events of
    // both are in the session by then (harness::drain stores them as the runner does).
    auto before_model = model_of(io, {lb::scripted_reply::text("Shared context: Oslo has 700k people.")});
    auto a_model = model_of(io, {lb::scripted_reply::tool_call("slow", {{"city", "Oslo"}}), lb::scripted_reply::text("a done")});
    auto b_model = model_of(io, {lb::scripted_reply::text("b done")});
    lb::llm_agent<> before({.name = "before", .model = before_model});
    lb::llm_agent<> a({.name = "a", .model = a_model, .tools = lb::tools(lb::function_tool("slow", "Sleeps", slow_tool))});
    lb::llm_agent<> b({.name = "b", .model = b_model});
    lb::parallel_agent research{"research", a, b};
    lb::sequential_agent pipeline{"pipeline", before, research};
    auto ctx = make_ctx(io, "Research Oslo");
    auto r = drain(io, ctx, pipeline.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_REQUIRE(a_model.request_count() == 2u);
    BOOST_REQUIRE(b_model.request_count() == 1u);
    // b's answer was stored before a's tool returned (so before a's second request).
    std::vector<std::string> branches;
    for (const auto* e : r.stored()) branches.push_back(e->author + "@" + e->branch + ":" + e->text());
    BOOST_REQUIRE(branches.size() == 5u);
    BOOST_TEST(branches.front() == "before@:Shared context: Oslo has 700k people.");
    BOOST_TEST(branches.back() == "a@research.a:a done");
    const auto b_at = std::find(branches.begin(), branches.end(), "b@research.b:b done");
    BOOST_REQUIRE((b_at != branches.end()));
    BOOST_TEST((b_at < branches.end() - 2)); // before a's tool response and answer
    const std::string a2 = request_text(a_model.request_at(1));
    BOOST_TEST(a2.find("Research Oslo") != std::string::npos, a2);
    BOOST_TEST(a2.find("Shared context") != std::string::npos, a2); // the history before the fork
    BOOST_TEST(a2.find("call:slow") != std::string::npos, a2);       // its own step
    BOOST_TEST(a2.find("result:slow") != std::string::npos, a2);
    BOOST_TEST(a2.find("b done") == std::string::npos, a2); // not its sibling's answer
    const std::string b1 = request_text(b_model.request_at(0));
    BOOST_TEST(b1.find("Shared context") != std::string::npos, b1);
    BOOST_TEST(b1.find("slow") == std::string::npos, b1); // not its sibling's call
}

BOOST_AUTO_TEST_CASE(construction_checks_and_the_agent_concept) {
    asio::io_context io;
    auto m = model_of(io, {});
    static_assert(lb::agent<lb::llm_agent<lb::scripted_model>>);
    BOOST_CHECK_THROW(lb::llm_agent<>({.name = "", .model = m}), boost::system::system_error);
    // An output_key no state takes: refused here, not stored as the app's empty key later.
    for (std::string key : {"", "app:", "user:", "temp:"}) {
        try {
            lb::llm_agent<> bad({.name = "writer", .model = m, .output_key = key});
            BOOST_ERROR("output_key '" << key << "' was taken");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument));
            BOOST_TEST(std::string(e.what()).find("llm_agent 'writer': output_key: ") != std::string::npos, e.what());
        }
    }
    BOOST_CHECK_NO_THROW(lb::llm_agent<>({.name = "writer", .model = m, .output_key = "app:last"}));
    // Retry options check() refuses: once clamped without a word (a NaN multiplier as 1).
    auto retry_refused = [&](lb::retry_options retry, std::string member) {
        try {
            lb::llm_agent<> bad({.name = "retrier", .model = m, .retry = retry});
            BOOST_ERROR("retry options refused by check() were taken: " << member);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument), e.what());
            BOOST_TEST(std::string(e.what()).find("llm_agent 'retrier': retry." + member) != std::string::npos, e.what());
        }
    };
    lb::retry_options nan;
    nan.multiplier = std::numeric_limits<double>::quiet_NaN();
    retry_refused(nan, "multiplier must be a finite number >= 1");
    lb::retry_options inf;
    inf.multiplier = std::numeric_limits<double>::infinity();
    retry_refused(inf, "multiplier must be a finite number >= 1");
    lb::retry_options negative;
    negative.initial_delay = std::chrono::milliseconds(-5);
    retry_refused(negative, "initial_delay must not be negative");
    lb::retry_options none;
    none.max_attempts = 0;
    retry_refused(none, "max_attempts must be at least 1");
    lb::retry_options below;
    below.max_delay = std::chrono::milliseconds(1);
    retry_refused(below, "max_delay must be at least initial_delay");
    lb::retry_options off;
    off.max_attempts = 1;
    BOOST_CHECK_NO_THROW(lb::llm_agent<>({.name = "retrier", .model = m, .retry = off}));
    lb::llm_agent<> a({.name = "a", .description = "does a", .model = m});
    lb::any_agent any(a);
    BOOST_TEST(any.name() == "a");
    BOOST_TEST(any.description() == "does a");
    BOOST_TEST(any.sub_agents().empty());
}

BOOST_AUTO_TEST_SUITE_END()
