// sequential_agent: order, branch, escalate policy, end_invocation, failures,
// cancellation, back-pressure, resumability, construction checks.
#include <libretto/agent/sequential_agent.hpp>

#include <libretto/agent/loop_agent.hpp>
#include <libretto/agent/parallel_agent.hpp>

#include "composite_test_agents.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <type_traits>
#include <vector>

using namespace ctest;
using strings = std::vector<std::string>;

namespace {

asio::awaitable<void> read_one_then_wait(lb::event_stream* s, std::shared_ptr<probe> p, int* produced_while_waiting,
                                         outcome* out) {
    asio::awaitable<std::optional<lb::event>> first = s->next();
    std::optional<lb::event> e = co_await std::move(first);
    if (e) out->events.push_back(std::move(*e));
    co_await sleep_for(ms(50)); // a slow consumer: the producer runs ahead until the buffers fill
    *produced_while_waiting = p->produced;
    co_await collect(s, out);
}

template <class E>
bool throws_invalid(E&& make) {
    try {
        make();
    } catch (const boost::system::system_error& e) {
        return e.code() == lb::make_error_code(lb::errc::invalid_argument);
    }
    return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sequential_agent_tests)

BOOST_AUTO_TEST_CASE(runs_children_in_order_on_the_parents_branch) {
    asio::io_context io;
    leaf a{"a", texts({"a1", "a2"})};
    leaf b{"b", texts({"b1"})};
    lb::sequential_agent pipeline{"pipeline", a, b};
    static_assert(std::is_same_v<decltype(pipeline), lb::sequential_agent<leaf, leaf>>);
    static_assert(lb::agent<decltype(pipeline)>);

    auto got = run_agent(pipeline, make_ctx(io, "root"));
    BOOST_TEST(!got.error);
    // Nothing of its own (not resumable): exactly the children's events, in order, on the
    // sequence's branch (ADK: only a parallel fork opens a branch).
    BOOST_TEST(got.tags() == (strings{"a:a1@root", "a:a2@root", "b:b1@root"}));
    BOOST_TEST(a.p->agent_names == strings{"a"});
    BOOST_TEST(b.p->agent_names == strings{"b"});
    BOOST_TEST(b.p->branches == strings{"root"});

    auto top = run_agent(pipeline, make_ctx(io));
    BOOST_TEST(top.tags() == (strings{"a:a1@", "a:a2@", "b:b1@"}));
}

BOOST_AUTO_TEST_CASE(compile_time_and_run_time_children) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    leaf b{"b", texts({"b1"})};

    lb::sequential_agent<> dynamic{"dyn", {lb::any_agent{a}, lb::any_agent{b}}};
    lb::sequential_agent dynamic2{"dyn2", {lb::any_agent{a}, lb::any_agent{b}}}; // CTAD picks the list form
    static_assert(std::is_same_v<decltype(dynamic2), lb::sequential_agent<>>);
    std::vector<lb::any_agent> list{lb::any_agent{a}};
    list.push_back(lb::any_agent{b});
    lb::sequential_agent dynamic3{lb::sequential_options{.name = "dyn3", .description = "from a vector"}, list};
    static_assert(std::is_same_v<decltype(dynamic3), lb::sequential_agent<>>);
    BOOST_TEST(dynamic3.description() == "from a vector");

    lb::sequential_agent fixed{{.name = "fixed", .description = "tuple"}, a, lb::any_agent{b}};
    static_assert(std::is_same_v<decltype(fixed), lb::sequential_agent<leaf, lb::any_agent>>);
    BOOST_TEST(std::get<0>(fixed.children()).name() == "a");

    for (lb::agent_ref r : {lb::agent_ref(dynamic), lb::agent_ref(dynamic2), lb::agent_ref(dynamic3),
                            lb::agent_ref(fixed)}) {
        auto got = run_agent(r, make_ctx(io));
        BOOST_TEST(got.tags() == (strings{"a:a1@", "b:b1@"}));
    }
    // A run-time composite held as any_agent (the API sketch's config-file case).
    lb::any_agent root = lb::sequential_agent{"pipeline", {lb::any_agent{a}, lb::any_agent{b}}};
    BOOST_TEST(run_agent(root, make_ctx(io)).tags() == (strings{"a:a1@", "b:b1@"}));
}

BOOST_AUTO_TEST_CASE(sub_agents_view_the_children) {
    leaf a{"a"};
    leaf b{"b"};
    lb::sequential_agent inner{"inner", b};
    lb::sequential_agent<> outer{"outer", {lb::any_agent{a}, lb::any_agent{inner}}};
    auto subs = outer.sub_agents();
    BOOST_REQUIRE(subs.size() == 2u);
    BOOST_TEST(subs[0].name() == "a");
    BOOST_TEST(subs[0].target<leaf>() != nullptr); // an any_agent child is viewed through
    BOOST_TEST(subs[1].sub_agents().size() == 1u);
    auto found = lb::find_agent(outer, "b");
    BOOST_REQUIRE(found);
    BOOST_TEST(found->target<leaf>() != nullptr);
    auto tree = lb::make_agent_tree(outer);
    BOOST_TEST(tree.find("b") != nullptr);

    lb::sequential_agent fixed{"fixed", a, inner};
    BOOST_TEST(fixed.sub_agents()[0].target<leaf>() == &std::get<0>(fixed.children()));
}

BOOST_AUTO_TEST_CASE(duplicate_and_malformed_names_are_rejected) {
    leaf a{"a"};
    leaf a2{"a"};
    BOOST_TEST(throws_invalid([&] { lb::sequential_agent s{"p", a, a2}; }));
    BOOST_TEST(throws_invalid([&] { lb::sequential_agent s{"a", a}; })); // the parent counts too
    BOOST_TEST(throws_invalid([&] {
        lb::sequential_agent inner{"inner", a};
        lb::sequential_agent outer{"outer", leaf{"x"}, lb::sequential_agent{"deep", inner, leaf{"a"}}};
    }));
    BOOST_TEST(throws_invalid([&] { lb::sequential_agent<> s{"p", {lb::any_agent{a}, lb::any_agent{a2}}}; }));
    BOOST_TEST(throws_invalid([&] { lb::sequential_agent s{"", a}; }));
    BOOST_TEST(throws_invalid([&] { lb::sequential_agent s{"p.q", a}; }));
    BOOST_TEST(throws_invalid([&] { lb::sequential_agent s{"p", leaf{"x.y"}}; }));
    try {
        lb::sequential_agent s{"p", a, a2, leaf{"b"}, leaf{"b"}};
        BOOST_FAIL("expected a throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(std::string(e.what()).find("'a' 'b'") != std::string::npos, e.what());
    }
    BOOST_CHECK_NO_THROW((lb::sequential_agent{"p", a, leaf{"b"}}));
}

BOOST_AUTO_TEST_CASE(escalate_does_not_stop_a_sequence) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    a.steps[0].escalate = true;
    leaf b{"b", texts({"b1"})};
    lb::sequential_agent pipeline{"pipeline", a, b};
    auto got = run_agent(pipeline, make_ctx(io));
    BOOST_TEST(got.tags() == (strings{"a:a1@", "b:b1@"}));
    BOOST_TEST(got.events[0].actions.escalate.value_or(false)); // forwarded untouched
}

BOOST_AUTO_TEST_CASE(end_invocation_stops_before_the_next_child) {
    asio::io_context io;
    leaf a{"a", texts({"a1", "a2"})};
    a.steps[0].end_invocation = true;
    leaf b{"b", texts({"b1"})};
    lb::sequential_agent pipeline{"pipeline", a, b};
    auto ctx = make_ctx(io);
    auto got = run_agent(pipeline, ctx);
    // The running child is not cut (it checks the flag itself); the next one never starts.
    BOOST_TEST(got.tags() == (strings{"a:a1@", "a:a2@"}));
    BOOST_TEST(b.p->runs == 0);
    BOOST_TEST(ctx.is_invocation_ended());
    // An ended invocation starts nothing.
    auto again = run_agent(pipeline, ctx);
    BOOST_TEST(again.events.empty());
    BOOST_TEST(a.p->runs == 1);
}

BOOST_AUTO_TEST_CASE(a_failing_child_fails_the_sequence) {
    asio::io_context io;
    leaf a{"a", texts({"a1", "a2"})};
    a.steps[1].fail = true;
    leaf b{"b", texts({"b1"})};
    lb::sequential_agent pipeline{"pipeline", a, b};
    auto got = run_agent(pipeline, make_ctx(io));
    BOOST_TEST(got.tags() == strings{"a:a1@"});
    BOOST_TEST(got.what() == "boom from a");
    BOOST_TEST(b.p->runs == 0);
}

BOOST_AUTO_TEST_CASE(cancelling_the_stream_cancels_the_running_child) {
    for (bool destroy : {false, true}) {
        asio::io_context io;
        leaf a{"a", {at("a1", 0), at("a2", 10000)}};
        leaf b{"b", texts({"b1"})};
        lb::sequential_agent pipeline{"pipeline", a, b};
        auto t0 = std::chrono::steady_clock::now();
        outcome got;
        {
            auto s = std::make_unique<lb::event_stream>(pipeline.run(make_ctx(io)));
            asio::co_spawn(io, read_then_cancel(s.get(), 1, &got, !destroy), asio::detached);
            if (destroy) {
                io.run_for(std::chrono::milliseconds(50)); // a1 arrives; a sleeps
                s.reset();                                 // destroying cancels as well
            }
            io.run();
        }
        BOOST_TEST(got.tags() == strings{"a:a1@"});
        BOOST_TEST(a.p->cancelled == 1);
        BOOST_TEST(a.p->finished == 0);
        BOOST_TEST(b.p->runs == 0);
        BOOST_TEST(seconds_since(t0) < 5.0);
    }
}

BOOST_AUTO_TEST_CASE(a_slow_consumer_bounds_the_buffered_events) {
    asio::io_context io;
    leaf a{"a", quick_steps("e", 1000)};
    lb::sequential_agent pipeline{"pipeline", a};
    lb::event_stream s = pipeline.run(make_ctx(io));
    int produced_while_waiting = 0;
    outcome got;
    asio::co_spawn(io, read_one_then_wait(&s, a.p, &produced_while_waiting, &got), asio::detached);
    io.run();
    // The leaf's buffer of 16 (+1 parked item); the sequence hands over one at a time.
    BOOST_TEST(produced_while_waiting <= 19);
    BOOST_TEST(produced_while_waiting >= 17);
    BOOST_TEST(!got.error);
    BOOST_REQUIRE(got.events.size() == 1000u);
    for (int i = 0; i < 1000; ++i) BOOST_TEST(got.events[i].text() == "e" + std::to_string(i));
}

BOOST_AUTO_TEST_CASE(resumable_sequence_records_its_child_and_ends) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    leaf b{"b", texts({"b1"})};
    lb::sequential_agent pipeline{"pipeline", a, b};
    auto ctx = make_ctx(io, "root", true);
    auto got = run_agent(pipeline, ctx);
    BOOST_TEST(got.tags() == (strings{"pipeline:agent_start@root", "a:a1@root", "pipeline:agent_start@root",
                                      "b:b1@root", "pipeline:agent_end@root"}));
    BOOST_TEST(got.events[0].metadata.at("agent_state").as_object().at("current_sub_agent").as_string() == "a");
    BOOST_TEST(got.events[2].metadata.at("agent_state").as_object().at("current_sub_agent").as_string() == "b");
    BOOST_TEST(got.events[4].actions.end_of_agent.value_or(false));
    BOOST_TEST(got.events[0].invocation_id == ctx.invocation_id());
    BOOST_TEST(ctx.is_end_of_agent("pipeline"));
    BOOST_TEST(ctx.agent_state("pipeline") == nullptr);
    // Finished: running it again in the same (resumed) invocation does nothing.
    BOOST_TEST(run_agent(pipeline, ctx).events.empty());
}

BOOST_AUTO_TEST_CASE(a_pause_stops_the_sequence_and_a_resume_continues_at_that_child) {
    asio::io_context io;
    leaf a{"a", texts({"a1", "a2"})};
    a.steps[0].tool_call_id = "call-1";
    leaf b{"b", texts({"b1"})};
    leaf c{"c", texts({"c1"})};
    lb::sequential_agent pipeline{"pipeline", c, a, b};
    auto ctx = make_ctx(io, {}, true);
    ctx.long_running_tool_ids().insert("call-1");

    auto first = run_agent(pipeline, ctx);
    BOOST_TEST(first.tags() == (strings{"pipeline:agent_start@", "c:c1@", "pipeline:agent_start@", "a:a1@",
                                        "a:a2@"}));
    BOOST_TEST(b.p->runs == 0);
    BOOST_TEST(!ctx.is_end_of_agent("pipeline"));
    BOOST_REQUIRE(ctx.agent_state("pipeline") != nullptr);
    BOOST_TEST(ctx.agent_state("pipeline")->at("current_sub_agent").as_string() == "a");

    // Resume: continue at a (its checkpoint is already recorded), skip c.
    ctx.long_running_tool_ids().clear();
    auto second = run_agent(pipeline, ctx);
    BOOST_TEST(second.tags() == (strings{"a:a1@", "a:a2@", "pipeline:agent_start@", "b:b1@",
                                         "pipeline:agent_end@"}));
    BOOST_TEST(c.p->runs == 1);
    BOOST_TEST(a.p->runs == 2);
}

BOOST_AUTO_TEST_CASE(a_pause_is_ignored_when_not_resumable) {
    asio::io_context io;
    leaf a{"a", texts({"a1"})};
    a.steps[0].tool_call_id = "call-1";
    leaf b{"b", texts({"b1"})};
    lb::sequential_agent pipeline{"pipeline", a, b};
    auto ctx = make_ctx(io);
    ctx.long_running_tool_ids().insert("call-1");
    BOOST_TEST(run_agent(pipeline, ctx).tags() == (strings{"a:a1@", "b:b1@"}));
}

BOOST_AUTO_TEST_CASE(edge_cases) {
    asio::io_context io;
    lb::sequential_agent<> empty{"empty"};
    BOOST_TEST(run_agent(empty, make_ctx(io, {}, true)).events.empty());
    BOOST_TEST(empty.sub_agents().empty());

    // No executor: a usage error, reported by run().
    leaf a{"a", texts({"a1"})};
    lb::sequential_agent one{"one", a};
    BOOST_TEST(throws_invalid([&] { auto s = one.run(lb::invocation_context{}); }));

    // Lazy: nothing runs until next().
    {
        lb::event_stream s = one.run(make_ctx(io));
        io.run();
        io.restart();
        BOOST_TEST(a.p->runs == 0);
    }
    io.run();
    BOOST_TEST(a.p->runs == 0);
}

BOOST_AUTO_TEST_SUITE_END()
