// detail/llm_loop.hpp and detail/llm_instruction.hpp: the llm_agent turn loop without
// Asio, driven by hand; {key} templating; retry pauses; history selection.
#include <libretto/agent/detail/llm_instruction.hpp>
#include <libretto/agent/detail/llm_loop.hpp>

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace lb = libretto;
namespace json = boost::json;
using lb::detail::llm_action_kind;
using ms = std::chrono::milliseconds;

json::object obj(std::string_view t) { return json::parse(t).as_object(); }

lb::detail::llm_loop_config config() {
    lb::detail::llm_loop_config c;
    c.agent_name = "assistant";
    c.invocation_id = "inv1";
    c.session_id = "s1";
    lb::tool_declaration add{"add", "Adds", obj(R"({"type":"object"})"), false};
    lb::tool_declaration approve{"approve", "Asks a human", obj(R"({"type":"object"})"), true};
    c.tools = {add, approve};
    static const lb::retry_options retry{.max_attempts = 3, .initial_delay = ms(100), .multiplier = 2.0,
                                         .max_delay = ms(150), .jitter = lb::retry_jitter::none};
    c.retry = &retry;
    return c;
}

std::vector<lb::event> history(const std::string& user_text, const std::string& inv = "inv1") {
    lb::event u = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text(user_text));
    u.invocation_id = inv;
    return {u};
}

lb::llm_response text(std::string t) {
    lb::llm_response r;
    r.parts.emplace_back(lb::text_part{std::move(t), {}});
    return r;
}

lb::llm_response calls(std::vector<lb::tool_call_part> cs) {
    lb::llm_response r;
    for (auto& c : cs) r.parts.emplace_back(std::move(c));
    r.finish = lb::finish_reason::tool_calls;
    return r;
}

lb::tool_call_part call(std::string id, std::string name, json::object args = {}) {
    return lb::tool_call_part{std::move(id), std::move(name), std::move(args), {}};
}

lb::tool_response_part result(std::string id, std::string name, json::value v) {
    return lb::tool_response_part{std::move(id), std::move(name), std::move(v), std::nullopt, {}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(llm_loop_tests)

BOOST_AUTO_TEST_CASE(begin_step_builds_the_request) {
    auto c = config();
    c.output_schema = obj(R"({"type":"object"})");
    c.generation.temperature = 0.5;
    c.transfer_targets = {{"billing", "Bills"}};
    lb::detail::llm_loop loop(c);
    auto h = history("Hi");
    auto a = loop.begin_step(h, "Be brief.");
    BOOST_TEST((a.kind == llm_action_kind::call_model));
    BOOST_TEST(a.emit.empty());
    const auto& req = loop.request();
    BOOST_TEST(req.system_instruction == "Be brief.");
    BOOST_REQUIRE(req.messages.size() == 1u);
    BOOST_TEST(req.messages[0].text() == "Hi");
    BOOST_REQUIRE(req.tools.size() == 3u);
    BOOST_TEST(req.tools[0].description == "Adds");
    BOOST_TEST(req.tools[1].description ==
               "Asks a human\n\nNOTE: This is a long-running operation. Do not call this tool again if it has already "
               "returned some intermediate or pending status.");
    BOOST_TEST(req.tools[2].name == "transfer_to_agent");
    BOOST_TEST(req.tools[2].description ==
               "Hands the conversation to another agent that is better suited to answer the user, according to its "
               "description. Available agents:\n- billing: Bills");
    // The note and the transfer tool went into the run's own list, not the agent's.
    BOOST_TEST(!req.tools.shares_with(c.tools));
    BOOST_TEST(c.tools.size() == 2u);
    BOOST_TEST(c.tools[1].description == "Asks a human");
    BOOST_TEST(req.output_schema.has_value());
    BOOST_TEST(req.options.temperature.value_or(0) == 0.5);
    BOOST_TEST(loop.steps() == 1u);
}

BOOST_AUTO_TEST_CASE(a_text_reply_is_the_final_answer) {
    auto c = config();
    c.output_key = "answer";
    lb::detail::llm_loop loop(c);
    auto h = history("Hi");
    loop.begin_step(h, "");
    lb::event_actions cb;
    cb.state_delta["from_callback"] = 1;
    auto a = loop.on_model_response(text("Hello"), cb);
    BOOST_TEST((a.kind == llm_action_kind::done));
    BOOST_TEST((a.reason == lb::llm_stop::final_answer));
    BOOST_REQUIRE(a.emit.size() == 1u);
    const auto& e = a.emit[0];
    BOOST_TEST(e.text() == "Hello");
    BOOST_TEST(e.author == "assistant");
    BOOST_TEST(e.invocation_id == "inv1");
    BOOST_TEST(e.is_final_response());
    BOOST_TEST(e.actions.state_delta == obj(R"({"from_callback":1,"answer":"Hello"})"));
}

BOOST_AUTO_TEST_CASE(an_empty_reply_does_not_write_the_output_key) {
    auto c = config();
    c.output_key = "answer";
    lb::detail::llm_loop loop(c);
    auto h = history("Hi");
    loop.begin_step(h, "");
    auto a = loop.on_model_response(lb::llm_response{});
    BOOST_TEST((a.kind == llm_action_kind::done));
    BOOST_TEST(a.emit.at(0).actions.state_delta.empty());
}

BOOST_AUTO_TEST_CASE(tool_calls_then_results_then_the_next_step) {
    auto c = config();
    c.transfer_targets = {{"billing", ""}};
    lb::detail::llm_loop loop(c);
    auto h = history("2+3?");
    loop.begin_step(h, "");
    auto r = calls({call("c1", "add", obj(R"({"a":2,"b":3})")), call("c2", "nope")});
    r.invalid_tool_calls.push_back(lb::invalid_tool_call{"c3", "add", "{a:", "tool call 'add' (id c3): bad"});
    auto a = loop.on_model_response(r);
    BOOST_TEST((a.kind == llm_action_kind::run_tools));
    BOOST_REQUIRE(a.emit.size() == 1u);
    BOOST_TEST(a.emit[0].tool_calls().size() == 3u); // the invalid call is recorded too
    BOOST_REQUIRE(a.calls.size() == 3u);
    BOOST_TEST(!a.calls[0].answer.has_value());
    BOOST_TEST(!a.calls[1].answer.has_value()); // an unknown name is run_tool_call's to answer
    BOOST_REQUIRE(a.calls[2].answer.has_value());
    BOOST_TEST(a.calls[2].answer->error.value_or("") == "tool call 'add' (id c3): bad");
    BOOST_TEST(a.calls[2].answer->result == json::parse(R"({"error":"tool call 'add' (id c3): bad"})"));

    std::vector<std::optional<lb::tool_response_part>> results;
    results.push_back(result("c1", "add", 5));
    results.push_back(result("c2", "nope", "x"));
    results.emplace_back(); // filled in by the loop
    lb::event_actions acts;
    acts.state_delta["k"] = "v";
    auto b = loop.on_tool_results(std::move(results), acts);
    BOOST_TEST((b.kind == llm_action_kind::next_step));
    BOOST_REQUIRE(b.emit.size() == 1u);
    const auto& e = b.emit[0];
    BOOST_TEST((e.type == lb::event_type::tool_response));
    auto rs = e.tool_responses();
    BOOST_REQUIRE(rs.size() == 3u);
    std::vector<std::string> ids;
    for (const auto& x : rs) ids.push_back(x.tool_call_id);
    BOOST_TEST((ids == std::vector<std::string>{"c1", "c2", "c3"}));
    BOOST_TEST(e.actions.state_delta.at("k") == json::value("v"));
}

BOOST_AUTO_TEST_CASE(transfer_calls_are_answered_by_the_loop) {
    auto c = config();
    c.transfer_targets = {{"billing", ""}, {"support", ""}};
    lb::detail::llm_loop loop(c);
    auto h = history("bill?");
    loop.begin_step(h, "");
    auto a = loop.on_model_response(calls({call("t1", "transfer_to_agent", obj(R"({"agent_name":"sales"})")),
                                           call("t2", "transfer_to_agent", obj(R"({"agent_name":"billing"})"))}));
    BOOST_REQUIRE(a.calls.size() == 2u);
    BOOST_TEST(a.calls[0].answer->error.value_or("") == "unknown agent 'sales'; you can transfer to: billing, support");
    BOOST_TEST(a.calls[1].answer->result == json::parse(R"({"transferred_to":"billing"})"));
    auto b = loop.on_tool_results({}, {});
    BOOST_TEST((b.kind == llm_action_kind::transfer));
    BOOST_TEST(b.transfer_target == "billing");
    BOOST_TEST(b.emit.at(0).actions.transfer_to_agent.value_or("") == "billing");
}

BOOST_AUTO_TEST_CASE(without_targets_transfer_to_agent_is_an_ordinary_unknown_tool) {
    lb::detail::llm_loop loop(config());
    auto h = history("x");
    loop.begin_step(h, "");
    BOOST_TEST(loop.request().tools.size() == 2u);
    auto a = loop.on_model_response(calls({call("t1", "transfer_to_agent", obj(R"({"agent_name":"b"})"))}));
    BOOST_TEST(!a.calls.at(0).answer.has_value());
}

BOOST_AUTO_TEST_CASE(escalate_skip_and_pause_end_the_loop) {
    auto h = history("x");
    {
        lb::detail::llm_loop loop(config());
        loop.begin_step(h, "");
        loop.on_model_response(calls({call("c1", "add")}));
        lb::event_actions acts;
        acts.escalate = true;
        auto b = loop.on_tool_results({result("c1", "add", 1)}, acts);
        BOOST_TEST((b.kind == llm_action_kind::done));
        BOOST_TEST((b.reason == lb::llm_stop::escalated));
    }
    {
        lb::detail::llm_loop loop(config());
        loop.begin_step(h, "");
        loop.on_model_response(calls({call("c1", "add")}));
        lb::event_actions acts;
        acts.skip_summarization = true;
        auto b = loop.on_tool_results({result("c1", "add", 1)}, acts);
        BOOST_TEST((b.reason == lb::llm_stop::skip_summarization));
    }
    {
        auto c = config();
        c.resumable = true;
        lb::detail::llm_loop loop(c);
        loop.begin_step(h, "");
        auto a = loop.on_model_response(calls({call("c1", "add"), call("c2", "approve")}));
        BOOST_TEST(!a.calls[0].long_running);
        BOOST_TEST(a.calls[1].long_running);
        std::vector<std::optional<lb::tool_response_part>> rs;
        rs.push_back(result("c1", "add", 1));
        rs.emplace_back(); // no result yet: it comes from outside
        auto b = loop.on_tool_results(std::move(rs), {});
        BOOST_TEST((b.kind == llm_action_kind::done));
        BOOST_TEST((b.reason == lb::llm_stop::paused));
        BOOST_TEST(b.emit.at(0).tool_responses().size() == 1u);
    }
    {
        lb::detail::llm_loop loop(config()); // not resumable: the loop goes on
        loop.begin_step(h, "");
        loop.on_model_response(calls({call("c2", "approve")}));
        std::vector<std::optional<lb::tool_response_part>> rs(1);
        auto b = loop.on_tool_results(std::move(rs), {});
        BOOST_TEST((b.kind == llm_action_kind::next_step));
        BOOST_TEST(b.emit.empty()); // nothing to record
    }
}

BOOST_AUTO_TEST_CASE(max_steps_is_an_error_event) {
    auto c = config();
    c.max_steps = 1;
    lb::detail::llm_loop loop(c);
    auto h = history("x");
    BOOST_TEST((loop.begin_step(h, "").kind == llm_action_kind::call_model));
    loop.on_model_response(calls({call("c1", "add")}));
    loop.on_tool_results({result("c1", "add", 1)}, {});
    auto a = loop.begin_step(h, "");
    BOOST_TEST((a.kind == llm_action_kind::done));
    BOOST_TEST((a.reason == lb::llm_stop::max_steps));
    BOOST_TEST(a.emit.at(0).error().value_or("") == "agent 'assistant' reached max_steps (1) without a final answer");
    BOOST_TEST((lb::agent_error_code(a.emit.at(0)) == lb::errc::limit_exceeded));
}

BOOST_AUTO_TEST_CASE(transient_failures_are_retried_then_reported) {
    lb::detail::llm_loop loop(config());
    auto h = history("x");
    loop.begin_step(h, "");
    lb::event_actions cb;
    cb.state_delta["kept"] = true;
    auto a1 = loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "429"), cb);
    BOOST_TEST((a1.kind == llm_action_kind::retry_model));
    BOOST_TEST(a1.delay.count() == 100);
    auto a2 = loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "429"));
    BOOST_TEST(a2.delay.count() == 150); // 200, capped
    auto a3 = loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "429"));
    BOOST_TEST((a3.kind == llm_action_kind::done));
    BOOST_TEST((a3.reason == lb::llm_stop::model_error));
    const auto& e = a3.emit.at(0);
    BOOST_TEST(e.error().value_or("") ==
               "model call of agent 'assistant' failed after 3 attempts: temporary failure: retry later: 429");
    BOOST_TEST(lb::agent_error_code(e) == lb::errc::transient);
    BOOST_TEST(e.actions.state_delta.at("kept") == json::value(true)); // callback actions survive retries
}

BOOST_AUTO_TEST_CASE(a_retry_then_success_keeps_the_callback_actions) {
    lb::detail::llm_loop loop(config());
    auto h = history("x");
    loop.begin_step(h, "");
    lb::event_actions cb;
    cb.state_delta["kept"] = true;
    loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "503"), cb);
    auto a = loop.on_model_response(text("ok"));
    BOOST_TEST(a.emit.at(0).actions.state_delta.at("kept") == json::value(true));
}

BOOST_AUTO_TEST_CASE(other_failures_are_not_retried) {
    lb::detail::llm_loop loop(config());
    auto h = history("x");
    loop.begin_step(h, "");
    auto a = loop.on_model_response(lb::llm_response::failure(lb::errc::context_overflow, "too long"));
    BOOST_TEST((a.kind == llm_action_kind::done));
    BOOST_TEST(a.emit.at(0).error().value_or("") ==
               "model call of agent 'assistant' failed: model context window exceeded: too long");
    BOOST_TEST(lb::agent_error_code(a.emit.at(0)) == lb::errc::context_overflow);
}

BOOST_AUTO_TEST_CASE(retry_pauses_follow_the_retry_options) {
    // The loop's pauses are next_delay's (model/retry.hpp), the one policy of the library:
    // the exponential backoff, and a provider's Retry-After waited for exactly, cut to
    // max_retry_after.
    auto c = config();
    const lb::retry_options retry{.max_attempts = 5, .initial_delay = ms(500), .multiplier = 2.0, .max_delay = ms(3000),
                                  .jitter = lb::retry_jitter::none, .max_retry_after = ms(10'000)};
    c.retry = &retry;
    lb::detail::llm_loop loop(c);
    auto h = history("x");
    loop.begin_step(h, "");
    auto fail = [&](std::optional<ms> retry_after) {
        return loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "503", retry_after));
    };
    BOOST_TEST(fail(std::nullopt).delay.count() == 500);
    BOOST_TEST(fail(std::nullopt).delay.count() == 1000);
    BOOST_TEST(fail(ms(1200)).delay.count() == 1200);   // Retry-After, exactly (shorter than 2000)
    BOOST_TEST(fail(ms(60'000)).delay.count() == 10'000); // cut to max_retry_after
    auto last = fail(std::nullopt);                         // the fifth attempt failed: no more
    BOOST_TEST((last.kind == llm_action_kind::done));
    BOOST_TEST(loop.failed_attempts() == 5);
    // A new step starts a new count.
    loop.begin_step(h, "");
    BOOST_TEST(fail(std::nullopt).delay.count() == 500);
}

BOOST_AUTO_TEST_CASE(the_default_config_does_not_retry) {
    // What the driver gives a model that retries itself: one attempt per step.
    auto c = config();
    c.retry = lb::detail::llm_loop_config{}.retry;
    BOOST_TEST(c.retry == nullptr);
    lb::detail::llm_loop loop(c);
    auto h = history("x");
    loop.begin_step(h, "");
    auto a = loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "503 after 4 attempts"));
    BOOST_TEST((a.kind == llm_action_kind::done));
    BOOST_TEST((a.reason == lb::llm_stop::model_error));
    BOOST_TEST(a.emit.at(0).error().value_or("") ==
               "model call of agent 'assistant' failed: temporary failure: retry later: 503 after 4 attempts");
}

BOOST_AUTO_TEST_CASE(jittered_pauses_stay_under_the_backoff) {
    auto c = config();
    const lb::retry_options retry{.max_attempts = 4, .initial_delay = ms(400), .multiplier = 2.0,
                                  .max_delay = ms(30'000)}; // full jitter: uniform in [0, 400 x 2^(n-1))
    c.retry = &retry;
    lb::detail::llm_loop loop(c);
    auto h = history("x");
    loop.begin_step(h, "");
    const long bounds[] = {400, 800, 1600};
    for (long bound : bounds) {
        auto a = loop.on_model_response(lb::llm_response::failure(lb::errc::transient, "503"));
        BOOST_TEST_REQUIRE((a.kind == llm_action_kind::retry_model));
        BOOST_TEST(a.delay.count() >= 0);
        BOOST_TEST(a.delay.count() < bound);
    }
}

BOOST_AUTO_TEST_CASE(history_selection_by_branch_and_scope) {
    auto c = config();
    c.branch = "par.a";
    std::vector<lb::event> h = history("q");
    auto mk = [](std::string author, std::string branch, std::string text, std::string inv) {
        lb::event e = lb::event::make(lb::event_type::agent_message, std::move(author), lb::content::from_text(std::move(text)));
        e.branch = std::move(branch);
        e.invocation_id = std::move(inv);
        return e;
    };
    h.push_back(mk("a", "par.a", "mine", "inv1"));
    h.push_back(mk("b", "par.b", "sibling", "inv1"));
    h.push_back(mk("old", "", "earlier turn", "inv0"));
    lb::event tool_child = mk("child", "par.a.child", "child work", "inv1");
    tool_child.metadata["agent_tool"] = "child";
    h.push_back(tool_child);
    auto texts = [&](lb::history_scope s) {
        auto cc = c;
        cc.history = s;
        cc.agent_name = "a";
        lb::detail::llm_loop loop(cc);
        loop.begin_step(h, "");
        std::string out;
        for (const auto& m : loop.request().messages) out += "|" + m.text();
        return out;
    };
    BOOST_TEST(texts(lb::history_scope::branch) == "|q|mine|For context:[old] said: earlier turn");
    BOOST_TEST(texts(lb::history_scope::all) == "|q|mine|For context:[b] said: sibling|For context:[old] said: earlier turn");
    BOOST_TEST(texts(lb::history_scope::current_turn) == "|q|mine");
}

BOOST_AUTO_TEST_CASE(state_templating_follows_adk) {
    auto st = obj(R"({"name":"Ann","n":3,"app:tier":"gold","user:lang":"nb","obj":{"a":1},"none":null})");
    using lb::detail::inject_state;
    BOOST_TEST(inject_state("Hi {name}, {n} items", st).text == "Hi Ann, 3 items");
    BOOST_TEST(inject_state("{app:tier}/{user:lang}", st).text == "gold/nb");
    BOOST_TEST(inject_state("{ name }", st).text == "Ann");
    BOOST_TEST(inject_state("{{name}}", st).text == "Ann"); // ADK strips extra braces
    BOOST_TEST(inject_state("[{missing?}]", st).text == "[]");
    BOOST_TEST(inject_state("{obj}", st).text == R"({"a":1})");
    BOOST_TEST(inject_state("[{none}]", st).text == "[]");
    BOOST_TEST(inject_state("JSON: {\"a\": 1} and {not valid} and {x:y} {1abc}", st).text ==
               "JSON: {\"a\": 1} and {not valid} and {x:y} {1abc}");
    BOOST_TEST(inject_state("unclosed { name", st).text == "unclosed { name");
    auto r = inject_state("Hi {name}, {who}", st);
    BOOST_REQUIRE(r.missing_key.has_value());
    BOOST_TEST(*r.missing_key == "who");
    BOOST_TEST(lb::detail::is_state_placeholder("temp:k"));
    BOOST_TEST(!lb::detail::is_state_placeholder("other:k"));
}

BOOST_AUTO_TEST_SUITE_END()
