// loop_agent: max_iterations, escalate, reset of sub-agent states, end_invocation,
// nesting, cancellation, resumability, compile-time and run-time children, a branch per
// iteration.
#include <libretto/agent/loop_agent.hpp>

#include <libretto/agent/llm_agent.hpp>
#include <libretto/agent/parallel_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/model/scripted_model.hpp>

#include "composite_test_agents.hpp"
#include "llm_agent_harness.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

using namespace ctest;
using strings = std::vector<std::string>;

namespace {

asio::awaitable<void> cancel_after(lb::event_stream* s, ms d) {
    co_await sleep_for(d);
    s->cancel();
}

// The texts of a request's messages, in order.
strings message_texts(const lb::llm_request& r) {
    strings v;
    for (const auto& m : r.messages) v.push_back(m.text());
    return v;
}

bool has_text(const lb::llm_request& r, const std::string& text) {
    strings v = message_texts(r);
    return std::find(v.begin(), v.end(), text) != v.end();
}

} // namespace

BOOST_AUTO_TEST_SUITE(loop_agent_tests)

BOOST_AUTO_TEST_CASE(max_iterations_repeats_the_children_in_order) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    leaf b{"b", texts({"b"})};
    lb::loop_agent refine{{.name = "refine", .max_iterations = 3}, a, b};
    static_assert(std::is_same_v<decltype(refine), lb::loop_agent<leaf, leaf>>);
    static_assert(lb::agent<decltype(refine)>);
    BOOST_TEST(refine.max_iterations() == 3u);
    auto got = run_agent(refine, make_ctx(io, "root"));
    BOOST_TEST(!got.error);
    // Same branch every iteration (ADK): the next iteration sees this one's work.
    BOOST_TEST(got.tags() == (strings{"a:a@root", "b:b@root", "a:a@root", "b:b@root", "a:a@root", "b:b@root"}));
    BOOST_TEST(a.p->agent_names == (strings{"a", "a", "a"}));
}

// Each iteration is a new stream whose first next() starts its producer inline, and the
// child never waits: without a bound on the inline nesting (stream_state's
// max_inline_depth) the iterations nest on the stack until it overflows (it did, at 20,000).
BOOST_AUTO_TEST_CASE(many_iterations_that_never_wait_keep_the_stack_bounded) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    lb::loop_agent refine{{.name = "refine", .max_iterations = 20000}, a};
    auto got = run_agent(refine, make_ctx(io, "root"));
    BOOST_TEST(!got.error);
    BOOST_REQUIRE(got.events.size() == 20000u);
    BOOST_TEST(got.events.back().text() == "a");
    BOOST_TEST(a.p->runs == 20000);
}

BOOST_AUTO_TEST_CASE(escalate_stops_the_loop_at_once) {
    asio::io_context io;
    leaf b{"b", texts({"b1"})};
    leaf c{"c", {at("c1", 0), at("c2", 0), at("c3", 10000)}};
    c.steps[1].escalate = true; // c3 would come 10 s later
    lb::loop_agent until{"until", c, b}; // no limit
    auto t0 = std::chrono::steady_clock::now();
    auto got = run_agent(until, make_ctx(io));
    BOOST_TEST(got.tags() == (strings{"c:c1@", "c:c2@"}));
    BOOST_TEST(got.events[1].actions.escalate.value_or(false));
    BOOST_TEST(c.p->cancelled == 1); // the escalating child's stream was dropped
    BOOST_TEST(b.p->runs == 0);      // the rest of the iteration does not run
    BOOST_TEST(seconds_since(t0) < 5.0);
}

BOOST_AUTO_TEST_CASE(escalate_on_a_later_iteration) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    a.escalate_from_run = 3;
    leaf b{"b", texts({"b"})};
    lb::loop_agent refine{"refine", a, b}; // until escalate
    BOOST_TEST(refine.max_iterations() == 0u);
    auto got = run_agent(refine, make_ctx(io));
    BOOST_TEST(got.tags() == (strings{"a:a@", "b:b@", "a:a@", "b:b@", "a:a@"}));
    BOOST_TEST(b.p->runs == 2);
}

BOOST_AUTO_TEST_CASE(escalate_inside_a_sequence_stops_the_rest_of_it_and_the_loop) {
    asio::io_context io;
    leaf critic{"critic", texts({"review"})};
    critic.escalate_from_run = 2;
    leaf editor{"editor", texts({"draft"})};
    lb::loop_agent refine{{.name = "refine", .max_iterations = 10}, lb::sequential_agent{"round", critic, editor}};
    auto got = run_agent(refine, make_ctx(io));
    BOOST_TEST(got.tags() == (strings{"critic:review@", "editor:draft@", "critic:review@"}));
    BOOST_TEST(editor.p->runs == 1);
}

BOOST_AUTO_TEST_CASE(escalate_in_a_parallel_child_stops_the_loop_and_cancels_the_siblings) {
    asio::io_context io;
    leaf a{"a", {at("a1", 20)}};
    a.steps[0].escalate = true;
    leaf b{"b", {at("b1", 0), at("b2", 10000)}};
    leaf after{"after", texts({"x"})};
    lb::loop_agent refine{"refine", lb::parallel_agent{"par", a, b}, after};
    auto t0 = std::chrono::steady_clock::now();
    auto got = run_agent(refine, make_ctx(io));
    BOOST_TEST(got.tags() == (strings{"b:b1@par.b", "a:a1@par.a"}));
    BOOST_TEST(b.p->cancelled == 1);
    BOOST_TEST(after.p->runs == 0);
    BOOST_TEST(seconds_since(t0) < 5.0);
}

BOOST_AUTO_TEST_CASE(an_escalation_ends_the_innermost_loop_only) {
    // outer{round{inner{critic}, summarizer}}: the critic's escalate ends the inner loop,
    // which marks the event spent; the round goes on to the summarizer, and the outer loop
    // runs its rounds. It used to end the outer loop too, before the summarizer.
    asio::io_context io;
    leaf critic{"critic", texts({"review"})};
    critic.escalate_from_run = 1; // every run escalates
    leaf summarizer{"summarizer", texts({"summary"})};
    lb::loop_agent inner{{.name = "inner", .max_iterations = 5}, critic};
    lb::loop_agent outer{{.name = "outer", .max_iterations = 3}, lb::sequential_agent{"round", inner, summarizer}};
    auto got = run_agent(outer, make_ctx(io));
    BOOST_TEST(!got.error);
    BOOST_TEST(got.tags() == (strings{"critic:review@", "summarizer:summary@", "critic:review@", "summarizer:summary@",
                                      "critic:review@", "summarizer:summary@"}));
    BOOST_TEST(critic.p->runs == 3);
    BOOST_TEST(summarizer.p->runs == 3);
    BOOST_TEST(got.events[0].actions.escalate.value_or(false)); // forwarded as it came, marked
    BOOST_TEST(got.events[0].metadata.at("escalation_ended_loop") == "inner");
    // An escalation that is not inside an inner loop still ends the outer one.
    leaf quitter{"quitter", texts({"done"})};
    quitter.escalate_from_run = 1;
    leaf never{"never", texts({"x"})};
    lb::loop_agent both{{.name = "both", .max_iterations = 3},
                        lb::sequential_agent{"round", lb::loop_agent{{.name = "inner", .max_iterations = 2}, never}, quitter}};
    auto got2 = run_agent(both, make_ctx(io));
    BOOST_TEST(got2.tags() == (strings{"never:x@", "never:x@", "quitter:done@"}));
    BOOST_TEST(got2.events.back().metadata.at("escalation_ended_loop") == "both");
}

BOOST_AUTO_TEST_CASE(sub_agent_states_are_reset_every_iteration) {
    for (bool with_tree : {false, true}) {
        asio::io_context io;
        leaf a{"a", texts({"a"})};
        a.record_state = true; // leaves {"run": n} behind
        leaf b{"b", texts({"b"})};
        lb::loop_agent refine{{.name = "refine", .max_iterations = 3}, lb::sequential_agent{"round", a, b}};
        auto ctx = make_ctx(io, {}, true);
        if (with_tree) ctx.set_agent_tree(std::make_shared<lb::agent_node>(lb::make_agent_tree(refine)));
        auto got = run_agent(refine, ctx);
        BOOST_TEST(!got.error);
        // Without the reset, "round" would be end-of-agent after iteration 1 and a's own
        // state would still be there at the start of iteration 2.
        BOOST_TEST(a.p->runs == 3);
        BOOST_TEST(b.p->runs == 3);
        BOOST_TEST(a.p->state_clear == (std::vector<bool>{true, true, true}));
        BOOST_TEST(ctx.is_end_of_agent("refine"));
    }
}

BOOST_AUTO_TEST_CASE(end_invocation_stops_the_loop) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    a.end_invocation_on_run = 2;
    leaf b{"b", texts({"b"})};
    lb::loop_agent refine{"refine", a, b};
    auto ctx = make_ctx(io);
    auto got = run_agent(refine, ctx);
    BOOST_TEST(got.tags() == (strings{"a:a@", "b:b@", "a:a@"}));
    BOOST_TEST(ctx.is_invocation_ended());
}

BOOST_AUTO_TEST_CASE(nesting_loop_of_sequence_of_parallel) {
    asio::io_context io;
    leaf x{"x", texts({"x"})};
    leaf p1{"p1", {at("p1", 20)}};
    leaf p2{"p2", {at("p2", 0)}};
    lb::loop_agent nest{{.name = "nest", .max_iterations = 2},
                        lb::sequential_agent{"seq", x, lb::parallel_agent{"par", p1, p2}}};
    static_assert(lb::agent<decltype(nest)>);
    auto names = lb::make_agent_tree(nest);
    BOOST_TEST(names.find("p2") != nullptr);
    auto got = run_agent(nest, make_ctx(io, "root"));
    BOOST_TEST(!got.error);
    BOOST_TEST(got.tags() == (strings{"x:x@root", "p2:p2@root.par.p2", "p1:p1@root.par.p1", "x:x@root",
                                      "p2:p2@root.par.p2", "p1:p1@root.par.p1"}));
    BOOST_TEST(p1.p->agent_names == (strings{"p1", "p1"}));

    // The same shape from run-time lists.
    lb::parallel_agent<> par{"par", {lb::any_agent{p1}, lb::any_agent{p2}}};
    lb::sequential_agent<> seq{"seq", {lb::any_agent{x}, lb::any_agent{par}}};
    lb::loop_agent<> dyn{{.name = "nest", .max_iterations = 2}, {lb::any_agent{seq}}};
    auto got2 = run_agent(dyn, make_ctx(io, "root"));
    BOOST_TEST(got2.tags() == got.tags());
}

BOOST_AUTO_TEST_CASE(cancelling_the_stream_mid_run) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    leaf slow{"slow", {at("s1", 0), at("s2", 10000)}};
    lb::loop_agent refine{"refine", a, lb::parallel_agent{"par", slow, leaf{"quick", texts({"q"})}}};
    auto t0 = std::chrono::steady_clock::now();
    outcome got;
    lb::event_stream s = refine.run(make_ctx(io));
    asio::co_spawn(io, read_then_cancel(&s, 3, &got), asio::detached);
    io.run();
    BOOST_TEST(got.events.size() == 3u);
    BOOST_TEST(slow.p->cancelled == 1);
    BOOST_TEST(a.p->runs == 1);
    BOOST_TEST(seconds_since(t0) < 5.0);
}

BOOST_AUTO_TEST_CASE(a_loop_of_silent_children_can_be_cancelled) {
    asio::io_context io;
    leaf quiet{"quiet"}; // yields nothing, never escalates
    lb::loop_agent forever{"forever", quiet};
    lb::event_stream s = forever.run(make_ctx(io));
    outcome got;
    asio::co_spawn(io, collect(&s, &got), asio::detached);
    asio::co_spawn(io, cancel_after(&s, ms(30)), asio::detached);
    io.run();
    BOOST_TEST(has_code(got.error, lb::errc::cancelled));
    BOOST_TEST(quiet.p->runs > 1);
}

BOOST_AUTO_TEST_CASE(a_failing_child_fails_the_loop) {
    asio::io_context io;
    leaf a{"a", texts({"a1", "a2"})};
    a.steps[1].fail = true;
    lb::loop_agent refine{{.name = "refine", .max_iterations = 3}, a};
    auto got = run_agent(refine, make_ctx(io));
    BOOST_TEST(got.tags() == strings{"a:a1@"});
    BOOST_TEST(got.what() == "boom from a");
    BOOST_TEST(a.p->runs == 1);
}

BOOST_AUTO_TEST_CASE(compile_time_and_run_time_children) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    lb::loop_agent<> dyn{{.name = "dyn", .max_iterations = 2}, {lb::any_agent{a}}};
    lb::loop_agent dyn2{"dyn2", {lb::any_agent{a}}};
    static_assert(std::is_same_v<decltype(dyn2), lb::loop_agent<>>);
    lb::loop_agent fixed{{.name = "fixed", .description = "twice", .max_iterations = 2}, lb::any_agent{a}};
    static_assert(std::is_same_v<decltype(fixed), lb::loop_agent<lb::any_agent>>);
    BOOST_TEST(fixed.description() == "twice");
    BOOST_TEST(run_agent(dyn, make_ctx(io)).tags() == (strings{"a:a@", "a:a@"}));
    BOOST_TEST(run_agent(fixed, make_ctx(io)).tags() == (strings{"a:a@", "a:a@"}));
    lb::loop_agent<> empty{"empty"};
    BOOST_TEST(run_agent(empty, make_ctx(io)).events.empty()); // nothing to repeat: ends at once
}

BOOST_AUTO_TEST_CASE(duplicate_names_are_rejected) {
    auto throws = [](auto make) {
        try {
            make();
        } catch (const boost::system::system_error& e) {
            return e.code() == lb::make_error_code(lb::errc::invalid_argument);
        }
        return false;
    };
    leaf a{"a"};
    BOOST_TEST(throws([&] { lb::loop_agent l{"l", a, lb::sequential_agent{"s", leaf{"a"}}}; }));
    BOOST_TEST(throws([&] { lb::loop_agent<> l{"l", {lb::any_agent{a}, lb::any_agent{a}}}; }));
    BOOST_TEST(!throws([&] { lb::loop_agent l{"l", a}; }));
}

BOOST_AUTO_TEST_CASE(resumable_loop_records_child_and_iteration_and_resumes_there) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    leaf b{"b", texts({"b"})};
    // b's event carries a tool call; it pauses only while its id is long-running.
    b.steps[0].tool_call_id = "call-1";
    lb::loop_agent refine{{.name = "refine", .max_iterations = 2}, a, b}; // copies a and b
    auto ctx = make_ctx(io, {}, true);

    auto plain = run_agent(refine, ctx);
    BOOST_TEST(plain.tags() == (strings{"refine:agent_start@", "a:a@", "refine:agent_start@", "b:b@",
                                        "refine:agent_start@", "a:a@", "refine:agent_start@", "b:b@",
                                        "refine:agent_end@"}));
    const auto& st = plain.events[6].metadata.at("agent_state").as_object();
    BOOST_TEST(st.at("current_sub_agent").as_string() == "b");
    BOOST_TEST(st.at("times_looped").as_int64() == 1);

    // Fresh invocation: pause at b in the first iteration, then resume.
    auto ctx2 = make_ctx(io, {}, true);
    ctx2.long_running_tool_ids().insert("call-1");
    auto paused = run_agent(refine, ctx2);
    BOOST_TEST(paused.tags() == (strings{"refine:agent_start@", "a:a@", "refine:agent_start@", "b:b@"}));
    BOOST_TEST(!ctx2.is_end_of_agent("refine"));
    BOOST_TEST(ctx2.agent_state("refine")->at("times_looped").as_int64() == 0);

    ctx2.long_running_tool_ids().clear();
    auto resumed = run_agent(refine, ctx2);
    // Continues at b of iteration 0 (no second checkpoint for it), then iteration 1.
    BOOST_TEST(resumed.tags() == (strings{"b:b@", "refine:agent_start@", "a:a@", "refine:agent_start@", "b:b@",
                                          "refine:agent_end@"}));
    BOOST_TEST(a.p->runs == 2 + 2);
}

BOOST_AUTO_TEST_CASE(branch_per_iteration_names_a_branch_for_each_iteration) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    leaf b{"b", texts({"b"})};
    lb::loop_agent same{{.name = "refine", .max_iterations = 2}, a, b};
    BOOST_TEST(!same.options().branch_per_iteration); // off by default
    BOOST_TEST(run_agent(same, make_ctx(io, "root")).tags() ==
               (strings{"a:a@root", "b:b@root", "a:a@root", "b:b@root"}));

    // On: "<branch>.<loop>.iter_<i>"; the children of one iteration share it.
    lb::loop_agent split{{.name = "refine", .max_iterations = 2, .branch_per_iteration = true}, a, b};
    BOOST_TEST(run_agent(split, make_ctx(io, "root")).tags() ==
               (strings{"a:a@root.refine.iter_0", "b:b@root.refine.iter_0", "a:a@root.refine.iter_1",
                        "b:b@root.refine.iter_1"}));
    BOOST_TEST(a.p->agent_names == (strings{"a", "a", "a", "a"}));
    // At the top the loop's branch is empty, as with ctx.derive.
    BOOST_TEST(run_agent(split, make_ctx(io)).tags() ==
               (strings{"a:a@refine.iter_0", "b:b@refine.iter_0", "a:a@refine.iter_1", "b:b@refine.iter_1"}));

    // Run-time children, and composites below the iteration branch.
    lb::loop_agent<> dyn{{.name = "refine", .max_iterations = 2, .branch_per_iteration = true},
                         {lb::any_agent{a}, lb::any_agent{lb::parallel_agent{"par", b}}}};
    BOOST_TEST(run_agent(dyn, make_ctx(io, "root")).tags() ==
               (strings{"a:a@root.refine.iter_0", "b:b@root.refine.iter_0.par.b", "a:a@root.refine.iter_1",
                        "b:b@root.refine.iter_1.par.b"}));
}

// An llm_agent in the loop builds its history with is_branch_visible: with a branch per
// iteration it no longer sees its own earlier drafts, but still sees what came before the
// loop (the user's message, on the empty branch).
BOOST_AUTO_TEST_CASE(branch_per_iteration_hides_earlier_iterations_from_an_llm_agent) {
    for (bool per_iteration : {false, true}) {
        BOOST_TEST_CONTEXT("branch_per_iteration " << per_iteration) {
            asio::io_context io;
            lb::scripted_model model(io.get_executor(), {lb::scripted_reply::text("draft 1"),
                                                         lb::scripted_reply::text("draft 2")});
            lb::llm_agent<> writer({.name = "writer", .instruction = "Write.", .model = model});
            lb::loop_agent<> refine{
                {.name = "refine", .max_iterations = 2, .branch_per_iteration = per_iteration},
                {lb::any_agent{writer}}};
            lb::invocation_context ctx = harness::make_ctx(io, "write a poem");
            harness::run_result r = harness::drain(io, ctx, refine.run(ctx));
            BOOST_TEST(!r.error, harness::error_text(r.error));
            BOOST_REQUIRE(model.requests().size() == 2u);
            const lb::llm_request second = model.requests()[1];
            BOOST_TEST(has_text(second, "write a poem"));
            BOOST_TEST(has_text(second, "draft 1") == !per_iteration);
            if (per_iteration) BOOST_TEST(message_texts(second) == message_texts(model.requests()[0]));
        }
    }
}

BOOST_AUTO_TEST_CASE(branch_per_iteration_survives_pause_and_resume) {
    asio::io_context io;
    leaf a{"a", texts({"a"})};
    leaf b{"b", texts({"b"})};
    b.steps[0].tool_call_id = "call-1"; // pauses while "call-1" is long-running
    lb::loop_agent refine{{.name = "refine", .max_iterations = 2, .branch_per_iteration = true}, a, b};

    // Pause at b in iteration 0, resume: b runs again on iteration 0's branch.
    auto ctx = make_ctx(io, "root", true);
    ctx.long_running_tool_ids().insert("call-1");
    auto paused = run_agent(refine, ctx);
    BOOST_TEST(paused.tags() == (strings{"refine:agent_start@root", "a:a@root.refine.iter_0",
                                         "refine:agent_start@root", "b:b@root.refine.iter_0"}));
    ctx.long_running_tool_ids().clear();
    auto resumed = run_agent(refine, ctx);
    BOOST_TEST(resumed.tags() == (strings{"b:b@root.refine.iter_0", "refine:agent_start@root",
                                          "a:a@root.refine.iter_1", "refine:agent_start@root",
                                          "b:b@root.refine.iter_1", "refine:agent_end@root"}));

    // A checkpoint of a later iteration (as left by a pause there) resumes on its branch.
    auto ctx2 = make_ctx(io, "root", true);
    lb::json::object st;
    st["current_sub_agent"] = "b";
    st["times_looped"] = 1;
    ctx2.set_agent_state("refine", std::move(st));
    auto later = run_agent(refine, ctx2);
    BOOST_TEST(later.tags() == (strings{"b:b@root.refine.iter_1", "refine:agent_end@root"}));
}

BOOST_AUTO_TEST_SUITE_END()
