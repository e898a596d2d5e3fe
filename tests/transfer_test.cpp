// Transfer between llm_agents (agent/transfer.hpp, llm_agent.hpp): the built-in
// transfer_to_agent tool, the target run in the same invocation, the hop limit.
#include <libretto/agent/llm_agent.hpp>
#include <libretto/agent/transfer.hpp>
#include <libretto/model/scripted_model.hpp>

#include "llm_agent_harness.hpp"

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace harness;

lb::scripted_reply transfer_to(const std::string& name) {
    return lb::scripted_reply::tool_call("transfer_to_agent", {{"agent_name", name}});
}

// Gives the context the runner's agent tree and launcher for `root`.
void install_tree(lb::invocation_context& ctx, lb::agent_ref root) {
    ctx.set_agent_tree(std::make_shared<lb::agent_node>(lb::make_agent_tree(root)));
    ctx.set_agent_launcher(lb::agent_launcher_for(root));
}

} // namespace

BOOST_AUTO_TEST_SUITE(transfer_tests)

BOOST_AUTO_TEST_CASE(transfer_runs_the_sub_agent_in_the_same_invocation) {
    asio::io_context io;
    lb::scripted_model root_model(io.get_executor(), {transfer_to("billing")});
    lb::scripted_model billing_model(io.get_executor(), {lb::scripted_reply::text("Your bill is 12 EUR.")});
    lb::llm_agent<> billing({.name = "billing", .description = "Answers billing questions", .model = billing_model});
    lb::llm_agent<> root({.name = "root", .model = root_model, .sub_agents = {lb::any_agent(billing)}});
    auto ctx = make_ctx(io, "How much do I owe?");
    auto r = drain(io, ctx, root.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(r.stored_texts() ==
               "[root:agent_message:][root:tool_response:][billing:agent_message:Your bill is 12 EUR.]");
    auto st = r.stored();
    BOOST_TEST(st[1]->actions.transfer_to_agent.value_or("") == "billing");
    BOOST_TEST(st[1]->tool_responses().front().result == json::parse(R"({"transferred_to":"billing"})"));
    BOOST_TEST(st[2]->invocation_id == ctx.invocation_id());
    BOOST_TEST(st[2]->branch == ""); // same branch as the agent that transferred (ADK)
    // The root's model was offered the transfer tool, with the target's description.
    auto req = root_model.request_at(0);
    BOOST_REQUIRE(req.tools.size() == 1u);
    BOOST_TEST(req.tools[0].name == "transfer_to_agent");
    BOOST_TEST(req.tools[0].description.find("- billing: Answers billing questions") != std::string::npos);
    BOOST_TEST(req.tools[0].parameters.at("properties").at("agent_name").at("enum") == json::parse(R"(["billing"])"));
    // The target saw the user's question (and the transfer, as context).
    auto breq = billing_model.request_at(0);
    BOOST_TEST(breq.messages.front().text() == "How much do I owe?");
    BOOST_TEST(lb::transfer_hop_count(ctx) == 1u);
}

BOOST_AUTO_TEST_CASE(malformed_hops_in_the_state_are_skipped_not_thrown_on) {
    // The hops live in temp: state any tool or callback can write; a value that is not
    // {from, to} strings once threw Boost.JSON's "not an object" out of the agent's run.
    asio::io_context io;
    auto ctx = make_ctx(io, "hi");
    ctx.state().set(lb::transfer_hops_key, json::parse(R"([1, {"from": 2, "to": "x"}, {"from": "a"}, "s",
                                                         {"from": "root", "to": "billing"}])"));
    BOOST_TEST(lb::transfer_path(ctx) == "root -> billing");
    BOOST_TEST(lb::detail::was_transferred_by(ctx, "root", "billing"));
    BOOST_TEST(!lb::detail::was_transferred_by(ctx, "a", "x"));
    lb::record_transfer_hop(ctx, "billing", "root");
    BOOST_TEST(lb::transfer_path(ctx) == "root -> billing -> root");
    BOOST_TEST(lb::transfer_hop_count(ctx) == 6u);
}

BOOST_AUTO_TEST_CASE(an_unknown_target_is_a_tool_error_the_model_sees) {
    asio::io_context io;
    lb::scripted_model root_model(io.get_executor(), {transfer_to("shipping"), lb::scripted_reply::text("I will answer myself.")});
    lb::scripted_model billing_model(io.get_executor(), {});
    lb::llm_agent<> billing({.name = "billing", .model = billing_model});
    lb::llm_agent<> root({.name = "root", .model = root_model, .sub_agents = {lb::any_agent(billing)}});
    auto ctx = make_ctx(io, "Where is my parcel?");
    auto r = drain(io, ctx, root.run(ctx));
    BOOST_REQUIRE(!r.error);
    auto st = r.stored();
    BOOST_REQUIRE(st.size() == 3u);
    BOOST_TEST(st[1]->tool_responses().front().error.value_or("") ==
               "unknown agent 'shipping'; you can transfer to: billing");
    BOOST_TEST(!st[1]->actions.transfer_to_agent.has_value());
    BOOST_TEST(st[2]->text() == "I will answer myself.");
    BOOST_TEST(billing_model.request_count() == 0u);
}

BOOST_AUTO_TEST_CASE(a_child_can_transfer_back_to_the_parent_that_transferred_to_it) {
    asio::io_context io;
    lb::scripted_model root_model(io.get_executor(), {transfer_to("billing"), lb::scripted_reply::text("Back at the root.")});
    lb::scripted_model billing_model(io.get_executor(), {transfer_to("root")});
    lb::llm_agent<> billing({.name = "billing", .model = billing_model});
    lb::llm_agent<> root({.name = "root", .model = root_model, .sub_agents = {lb::any_agent(billing)}});
    auto ctx = make_ctx(io, "Not a billing question after all");
    install_tree(ctx, root);
    auto r = drain(io, ctx, root.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(r.stored_texts() == "[root:agent_message:][root:tool_response:][billing:agent_message:]"
                                   "[billing:tool_response:][root:agent_message:Back at the root.]");
    auto breq = billing_model.request_at(0);
    BOOST_REQUIRE(breq.tools.size() == 1u);
    BOOST_TEST(breq.tools[0].parameters.at("properties").at("agent_name").at("enum") == json::parse(R"(["root"])"));
}

BOOST_AUTO_TEST_CASE(a_transfer_loop_is_stopped_with_transfer_loop) {
    asio::io_context io;
    lb::scripted_model a_model(io.get_executor(), {transfer_to("b"), transfer_to("b"), transfer_to("b")});
    lb::scripted_model b_model(io.get_executor(), {transfer_to("a"), transfer_to("a"), transfer_to("a")});
    lb::llm_agent<> b({.name = "b", .model = b_model, .max_transfers = 3});
    lb::llm_agent<> a({.name = "a", .model = a_model, .sub_agents = {lb::any_agent(b)}, .max_transfers = 3});
    auto ctx = make_ctx(io, "ping");
    install_tree(ctx, a);
    auto r = drain(io, ctx, a.run(ctx));
    BOOST_TEST_REQUIRE(!r.error, error_text(r.error));
    auto st = r.stored();
    BOOST_REQUIRE(!st.empty());
    const lb::event& last = *st.back();
    BOOST_TEST(lb::agent_error_code(last) == lb::errc::transfer_loop);
    BOOST_TEST(last.author == "b");
    BOOST_TEST(last.error().value_or("") ==
               "agent transfer loop: 3 transfers in this invocation (a -> b -> a -> b); 'b' -> 'a' refused");
    BOOST_TEST(a_model.request_count() == 2u);
    BOOST_TEST(b_model.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(no_transfer_tool_without_targets_and_disallow_flags) {
    asio::io_context io;
    lb::scripted_model root_model(io.get_executor(), {transfer_to("child")});
    lb::scripted_model child_model(io.get_executor(), {lb::scripted_reply::text("child answers")});
    lb::llm_agent<> child({.name = "child", .model = child_model, .disallow_transfer_to_parent = true});
    lb::llm_agent<> root({.name = "root", .model = root_model, .sub_agents = {lb::any_agent(child)}});
    auto ctx = make_ctx(io, "hi");
    install_tree(ctx, root);
    auto r = drain(io, ctx, root.run(ctx));
    BOOST_REQUIRE(!r.error);
    BOOST_TEST(child_model.request_at(0).tools.empty()); // parent disallowed, no peers
}

BOOST_AUTO_TEST_SUITE_END()
