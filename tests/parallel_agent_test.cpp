// parallel_agent: branches, interleaving, isolation rule, failure cancels siblings,
// back-pressure, escalate policy, cancellation, resumability, construction checks.
#include <libretto/agent/parallel_agent.hpp>

#include <libretto/agent/sequential_agent.hpp>

#include "composite_test_agents.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

using namespace ctest;
using strings = std::vector<std::string>;

namespace {

asio::awaitable<void> read_one_then_wait(lb::event_stream* s, std::vector<std::shared_ptr<probe>> ps,
                                         int* produced_while_waiting, outcome* out) {
    asio::awaitable<std::optional<lb::event>> first = s->next();
    std::optional<lb::event> e = co_await std::move(first);
    if (e) out->events.push_back(std::move(*e));
    co_await sleep_for(ms(50));
    *produced_while_waiting = 0;
    for (const auto& p : ps) *produced_while_waiting += p->produced;
    co_await collect(s, out);
}

strings texts_of(const outcome& o, const std::string& author) {
    strings v;
    for (const auto& e : o.events)
        if (e.author == author) v.push_back(e.text());
    return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(parallel_agent_tests)

BOOST_AUTO_TEST_CASE(each_child_runs_on_its_own_branch) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    leaf b{"b", texts({"b1"})};
    lb::parallel_agent research{"research", a, b};
    static_assert(std::is_same_v<decltype(research), lb::parallel_agent<leaf, leaf>>);
    static_assert(lb::agent<decltype(research)>);

    auto top = run_agent(research, make_ctx(io));
    BOOST_TEST(!top.error);
    auto tags = top.tags();
    std::sort(tags.begin(), tags.end());
    BOOST_TEST(tags == (strings{"a:a1@research.a", "b:b1@research.b"}));

    auto nested = run_agent(research, make_ctx(io, "root"));
    tags = nested.tags();
    std::sort(tags.begin(), tags.end());
    BOOST_TEST(tags == (strings{"a:a1@root.research.a", "b:b1@root.research.b"}));
    BOOST_TEST(a.p->agent_names == (strings{"a", "a"}));
    BOOST_TEST(b.p->branches == (strings{"research.b", "root.research.b"}));
}

BOOST_AUTO_TEST_CASE(events_interleave_as_they_arrive) {
    asio::io_context io;
    leaf a{"a", {at("a0", 0), at("a1", 60), at("a2", 120)}};
    leaf b{"b", {at("b0", 30), at("b1", 90), at("b2", 150)}};
    lb::parallel_agent research{"research", a, b};
    auto got = run_agent(research, make_ctx(io));
    // Timers 30 ms apart: only concurrent children produce this order.
    BOOST_TEST(got.tags() == (strings{"a:a0@research.a", "b:b0@research.b", "a:a1@research.a", "b:b1@research.b",
                                      "a:a2@research.a", "b:b2@research.b"}));
}

BOOST_AUTO_TEST_CASE(branch_visibility_rule) {
    using lb::is_branch_visible;
    BOOST_TEST(is_branch_visible("", "research.a"));            // shared history
    BOOST_TEST(is_branch_visible("research.a", "research.a"));  // own events
    BOOST_TEST(is_branch_visible("root", "root.research.a"));   // an ancestor's events
    BOOST_TEST(!is_branch_visible("research.b", "research.a")); // a sibling's
    BOOST_TEST(!is_branch_visible("research.a.x", "research.a")); // a descendant's
    BOOST_TEST(!is_branch_visible("research.a", "research.ab"));  // prefix, not an ancestor
    BOOST_TEST(is_branch_visible("research.a", ""));            // the root sees every branch
}

BOOST_AUTO_TEST_CASE(siblings_see_the_shared_history_but_not_each_other) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    leaf b{"b", texts({"b1"})};
    leaf before{"before", texts({"shared"})};
    lb::parallel_agent research{"research", a, b};
    lb::sequential_agent pipeline{"pipeline", before, research};
    auto got = run_agent(pipeline, make_ctx(io));
    BOOST_REQUIRE(got.events.size() == 3u);
    // What a's context builder keeps (the llm_agent view applies this filter).
    strings seen_by_a, seen_by_b;
    for (const auto& e : got.events) {
        if (lb::is_branch_visible(e.branch, "research.a")) seen_by_a.push_back(e.text());
        if (lb::is_branch_visible(e.branch, "research.b")) seen_by_b.push_back(e.text());
    }
    BOOST_TEST(seen_by_a == (strings{"shared", "a1"}));
    BOOST_TEST(seen_by_b == (strings{"shared", "b1"}));
}

BOOST_AUTO_TEST_CASE(a_failing_child_cancels_its_siblings_and_the_failure_propagates) {
    asio::io_context io;
    leaf a{"a", {at("a1", 0), at("a2", 30)}};
    a.steps[1].fail = true;
    leaf b{"b", {at("b1", 0), at("b2", 10000)}};
    leaf c{"c", {at("c1", 10000)}};
    lb::parallel_agent research{"research", a, b, c};
    auto t0 = std::chrono::steady_clock::now();
    auto got = run_agent(research, make_ctx(io));
    BOOST_TEST(got.what() == "boom from a");
    BOOST_TEST(b.p->cancelled == 1);
    BOOST_TEST(c.p->cancelled == 1);
    BOOST_TEST(b.p->finished + c.p->finished == 0);
    BOOST_TEST(texts_of(got, "c").empty());
    BOOST_TEST(seconds_since(t0) < 5.0);
}

BOOST_AUTO_TEST_CASE(a_slow_consumer_bounds_the_buffered_events) {
    asio::io_context io;
    leaf a{"a", quick_steps("a", 500)};
    leaf b{"b", quick_steps("b", 500)};
    lb::parallel_agent research{"research", a, b};
    lb::event_stream s = research.run(make_ctx(io));
    int produced_while_waiting = 0;
    outcome got;
    asio::co_spawn(io, read_one_then_wait(&s, {a.p, b.p}, &produced_while_waiting, &got), asio::detached);
    io.run();
    // Per child 16 + 1 parked in its stream; 16 + 2 parked (one per pump) in the merge;
    // one parked in the parallel agent's rendezvous; one taken: at most 54 of the 1000.
    BOOST_TEST_MESSAGE("produced while the consumer waited: " << produced_while_waiting);
    BOOST_TEST(produced_while_waiting <= 54);
    BOOST_TEST(produced_while_waiting >= 34);
    BOOST_TEST(!got.error);
    BOOST_REQUIRE(got.events.size() == 1000u);
    strings want_a, want_b;
    for (int i = 0; i < 500; ++i) {
        want_a.push_back("a" + std::to_string(i));
        want_b.push_back("b" + std::to_string(i));
    }
    BOOST_TEST(texts_of(got, "a") == want_a); // each child's order is kept
    BOOST_TEST(texts_of(got, "b") == want_b);
}

BOOST_AUTO_TEST_CASE(escalate_in_one_child_does_not_stop_its_siblings) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    a.steps[0].escalate = true;
    leaf b{"b", {at("b1", 30), at("b2", 60)}};
    lb::parallel_agent research{"research", a, b};
    auto got = run_agent(research, make_ctx(io));
    BOOST_TEST(!got.error);
    BOOST_TEST(got.tags() == (strings{"a:a1@research.a", "b:b1@research.b", "b:b2@research.b"}));
    BOOST_TEST(got.events[0].actions.escalate.value_or(false));
    BOOST_TEST(b.p->finished == 1);
}

BOOST_AUTO_TEST_CASE(cancelling_the_stream_cancels_every_child) {
    for (bool destroy : {false, true}) {
        asio::io_context io;
        leaf a{"a", {at("a1", 0), at("a2", 10000)}};
        leaf b{"b", {at("b1", 10000)}};
        lb::parallel_agent research{"research", a, b};
        auto t0 = std::chrono::steady_clock::now();
        outcome got;
        {
            auto s = std::make_unique<lb::event_stream>(research.run(make_ctx(io)));
            asio::co_spawn(io, read_then_cancel(s.get(), 1, &got, !destroy), asio::detached);
            if (destroy) {
                io.run_for(std::chrono::milliseconds(50));
                s.reset();
            }
            io.run();
        }
        BOOST_TEST(got.tags() == strings{"a:a1@research.a"});
        BOOST_TEST(a.p->cancelled == 1);
        BOOST_TEST(b.p->cancelled == 1);
        BOOST_TEST(seconds_since(t0) < 5.0);
    }
}

BOOST_AUTO_TEST_CASE(compile_time_and_run_time_children) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    leaf b{"b", texts({"b1"})};
    lb::parallel_agent<> dynamic{"dyn", {lb::any_agent{a}, lb::any_agent{b}}};
    lb::parallel_agent dynamic2{lb::parallel_options{.name = "dyn2", .description = "d"}, {lb::any_agent{a}}};
    static_assert(std::is_same_v<decltype(dynamic2), lb::parallel_agent<>>);
    lb::parallel_agent fixed{{.name = "fixed"}, a, lb::any_agent{b}};
    static_assert(std::is_same_v<decltype(fixed), lb::parallel_agent<leaf, lb::any_agent>>);
    BOOST_TEST(dynamic2.description() == "d");
    BOOST_TEST(fixed.sub_agents().size() == 2u);

    auto d = run_agent(dynamic, make_ctx(io)).tags();
    std::sort(d.begin(), d.end());
    BOOST_TEST(d == (strings{"a:a1@dyn.a", "b:b1@dyn.b"}));
    BOOST_TEST(run_agent(dynamic2, make_ctx(io)).tags() == strings{"a:a1@dyn2.a"});
    auto f = run_agent(fixed, make_ctx(io)).tags();
    std::sort(f.begin(), f.end());
    BOOST_TEST(f == (strings{"a:a1@fixed.a", "b:b1@fixed.b"}));
}

BOOST_AUTO_TEST_CASE(duplicate_names_are_rejected) {
    leaf a{"a"};
    auto throws = [](auto make) {
        try {
            make();
        } catch (const boost::system::system_error& e) {
            return e.code() == lb::make_error_code(lb::errc::invalid_argument);
        }
        return false;
    };
    BOOST_TEST(throws([&] { lb::parallel_agent p{"p", a, leaf{"a"}}; }));
    BOOST_TEST(throws([&] { lb::parallel_agent<> p{"p", {lb::any_agent{a}, lb::any_agent{a}}}; }));
    BOOST_TEST(throws([&] { lb::parallel_agent p{"p", lb::sequential_agent{"p", leaf{"x"}}}; }));
    BOOST_TEST(!throws([&] { lb::parallel_agent p{"p", a, leaf{"b"}}; }));
}

BOOST_AUTO_TEST_CASE(resumable_parallel_checkpoints_marks_children_and_ends) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    leaf b{"b", {at("b1", 20)}};
    lb::parallel_agent research{"research", a, b};
    auto ctx = make_ctx(io, {}, true);
    auto got = run_agent(research, ctx);
    BOOST_TEST(got.tags() == (strings{"research:agent_start@", "a:a1@research.a", "a:agent_end@research.a",
                                      "b:b1@research.b", "b:agent_end@research.b", "research:agent_end@"}));
    BOOST_TEST(ctx.is_end_of_agent("research"));
    BOOST_TEST(ctx.is_end_of_agent("a"));
    BOOST_TEST(run_agent(research, ctx).events.empty());
}

BOOST_AUTO_TEST_CASE(a_pause_in_one_child_lets_the_others_finish_and_a_resume_skips_them) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    a.steps[0].tool_call_id = "call-1";
    leaf b{"b", {at("b1", 20)}};
    lb::parallel_agent research{"research", a, b};
    auto ctx = make_ctx(io, {}, true);
    ctx.long_running_tool_ids().insert("call-1");
    auto first = run_agent(research, ctx);
    BOOST_TEST(first.tags() == (strings{"research:agent_start@", "a:a1@research.a", "b:b1@research.b",
                                        "b:agent_end@research.b"}));
    BOOST_TEST(!ctx.is_end_of_agent("research"));
    BOOST_TEST(!ctx.is_end_of_agent("a"));
    BOOST_TEST(ctx.is_end_of_agent("b"));

    ctx.long_running_tool_ids().clear();
    auto second = run_agent(research, ctx);
    BOOST_TEST(second.tags() == (strings{"a:a1@research.a", "a:agent_end@research.a", "research:agent_end@"}));
    BOOST_TEST(b.p->runs == 1);
    BOOST_TEST(a.p->runs == 2);
}

BOOST_AUTO_TEST_CASE(end_invocation_is_seen_by_the_children_and_ends_nothing_else) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    a.steps[0].end_invocation = true;
    leaf b{"b", {at("b1", 20)}};
    lb::parallel_agent research{"research", a, b};
    auto ctx = make_ctx(io, {}, true);
    auto got = run_agent(research, ctx);
    // Running children are not cut; no end-of-agent marks after the kill switch.
    BOOST_TEST(got.tags() == (strings{"research:agent_start@", "a:a1@research.a", "b:b1@research.b"}));
    BOOST_TEST(!ctx.is_end_of_agent("research"));
    BOOST_TEST(run_agent(research, ctx).events.empty()); // ended: starts nothing
}

BOOST_AUTO_TEST_SUITE_END()
