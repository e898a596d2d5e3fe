// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/context/invocation_context.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace json = boost::json;
using namespace libretto;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

bool is_uuid(const std::string& s) {
    if (s.size() != 36) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

event make_event(std::string id, std::string invocation, std::string branch, std::string text,
                 event_type t = event_type::agent_message) {
    event e;
    e.id = std::move(id);
    e.invocation_id = std::move(invocation);
    e.branch = std::move(branch);
    e.type = t;
    if (!text.empty()) e.content = content::from_text(std::move(text));
    return e;
}

std::vector<std::string> ids(const std::vector<const event*>& es) {
    std::vector<std::string> out;
    for (const event* e : es) out.push_back(e->id);
    return out;
}

invocation_options opts(std::string invocation_id = "inv", std::string branch = {}) {
    invocation_options o;
    o.invocation_id = std::move(invocation_id);
    o.session_id = "s1";
    o.user_id = "u1";
    o.app_name = "app";
    o.agent_name = "root";
    o.branch = std::move(branch);
    return o;
}

tool_call_part call(std::string id) {
    tool_call_part c;
    c.tool_call_id = std::move(id);
    c.tool_name = "t";
    return c;
}

std::shared_ptr<const agent_node> tree() {
    // root ─ loop ─ a ─ a1
    //      │      └ b
    //      └ other ─ c
    agent_node a{"a", {agent_node{"a1", {}}}};
    agent_node b{"b", {}};
    agent_node loop{"loop", {a, b}};
    agent_node other{"other", {agent_node{"c", {}}}};
    return std::make_shared<const agent_node>(agent_node{"root", {loop, other}});
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(invocation_context_construction)

BOOST_AUTO_TEST_CASE(defaults) {
    invocation_context ctx;
    BOOST_TEST(is_uuid(ctx.invocation_id()), ctx.invocation_id());
    BOOST_TEST(ctx.session_id().empty());
    BOOST_TEST(ctx.user_id().empty());
    BOOST_TEST(ctx.app_name().empty());
    BOOST_TEST(ctx.agent_name().empty());
    BOOST_TEST(ctx.branch().empty());
    BOOST_TEST(!ctx.input_content().has_value());
    BOOST_TEST(!ctx.is_resumable());
    BOOST_TEST(ctx.state().empty());
    BOOST_TEST(ctx.run_config().empty());
    BOOST_TEST(ctx.agent_tree() == nullptr);
    BOOST_TEST(ctx.long_running_tool_ids().empty());
    BOOST_TEST(!ctx.is_invocation_ended());
    BOOST_TEST(!ctx.event_callback());
    BOOST_TEST(ctx.session_ptr() != nullptr);
    BOOST_TEST(ctx.session().events.empty());
    BOOST_TEST(ctx.get_events().empty());
}

BOOST_AUTO_TEST_CASE(fresh_invocation_ids_differ) {
    std::set<std::string> seen;
    for (int i = 0; i < 50; ++i) seen.insert(invocation_context().invocation_id());
    BOOST_TEST(seen.size() == 50u);
}

BOOST_AUTO_TEST_CASE(explicit_identity_is_kept) {
    auto o = opts("inv-7", "root");
    o.input_content = "hello";
    o.is_resumable = true;
    o.run_config = obj(R"({"recursion_limit":5})");
    invocation_context ctx(o);
    BOOST_TEST(ctx.invocation_id() == "inv-7");
    BOOST_TEST(ctx.session_id() == "s1");
    BOOST_TEST(ctx.user_id() == "u1");
    BOOST_TEST(ctx.app_name() == "app");
    BOOST_TEST(ctx.agent_name() == "root");
    BOOST_TEST(ctx.branch() == "root");
    BOOST_TEST((ctx.input_content() == std::optional<std::string>("hello")));
    BOOST_TEST(ctx.is_resumable());
    BOOST_TEST((ctx.run_config() == obj(R"({"recursion_limit":5})")));
    ctx.set_resumable(false);
    BOOST_TEST(!ctx.is_resumable());
}

BOOST_AUTO_TEST_CASE(fresh_session_carries_the_ids) {
    invocation_context ctx(opts());
    BOOST_TEST(ctx.session().id == "s1");
    BOOST_TEST(ctx.session().app_name == "app");
    BOOST_TEST(ctx.session().user_id == "u1");
    BOOST_TEST(ctx.session().events.empty());
    BOOST_TEST(ctx.session().state.empty());
}

BOOST_AUTO_TEST_CASE(given_session_is_used_by_reference) {
    auto s = std::make_shared<session>();
    s->id = "s1";
    s->events.push_back(make_event("e1", "old", "", "hi"));
    auto o = opts();
    o.session = s;
    invocation_context ctx(o);
    BOOST_TEST(ctx.session_ptr() == s);
    BOOST_TEST(&ctx.session() == s.get());
    s->events.push_back(make_event("e2", "inv", "", "later"));
    BOOST_TEST(ctx.get_events().size() == 2u);
}

BOOST_AUTO_TEST_CASE(state_is_copied_from_the_session) {
    auto s = std::make_shared<session>();
    s->state = obj(R"({"a":1,"app:b":2,"dropped":null})");
    auto o = opts();
    o.session = s;
    invocation_context ctx(o);
    BOOST_TEST((ctx.state().values() == obj(R"({"a":1,"app:b":2})")));
    // A copy: writes do not reach the session's own state object, and vice versa.
    ctx.state().set("c", 3);
    BOOST_TEST(!s->state.contains("c"));
    s->state["later"] = 1;
    BOOST_TEST(!ctx.state().contains("later"));
}

BOOST_AUTO_TEST_CASE(explicit_state_wins_over_the_session) {
    auto s = std::make_shared<session>();
    s->state = obj(R"({"from_session":1})");
    auto o = opts();
    o.session = s;
    o.state = obj(R"({"explicit":2})");
    invocation_context ctx(o);
    BOOST_TEST((ctx.state().values() == obj(R"({"explicit":2})")));

    // An explicitly empty state is still explicit.
    auto e = opts();
    e.session = s;
    e.state = json::object{};
    BOOST_TEST(invocation_context(e).state().empty());
}

BOOST_AUTO_TEST_CASE(agent_tree_and_callback_options) {
    auto o = opts();
    o.agent_tree = tree();
    int calls = 0;
    o.event_callback = [&](event) { ++calls; };
    invocation_context ctx(o);
    BOOST_TEST_REQUIRE(ctx.agent_tree() != nullptr);
    BOOST_TEST(ctx.agent_tree()->name == "root");
    BOOST_TEST(static_cast<bool>(ctx.event_callback()));
    BOOST_TEST(ctx.emit(event{}));
    BOOST_TEST(calls == 1);
}

BOOST_AUTO_TEST_CASE(agent_node_find) {
    auto t = tree();
    BOOST_TEST(t->find("root") == t.get());
    BOOST_TEST_REQUIRE(t->find("a1") != nullptr);
    BOOST_TEST(t->find("a1")->name == "a1");
    BOOST_TEST_REQUIRE(t->find("c") != nullptr);
    BOOST_TEST(t->find("c")->sub_agents.empty());
    BOOST_TEST(t->find("loop")->sub_agents.size() == 2u);
    BOOST_TEST(t->find("nope") == nullptr);
    BOOST_TEST(t->find("") == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(invocation_context_derive)

BOOST_AUTO_TEST_CASE(branch_rules) {
    invocation_context root(opts("inv", ""));
    // Empty branch: the suffix alone; default suffix is the agent's name.
    auto a = root.derive("a");
    BOOST_TEST(a.branch() == "a");
    BOOST_TEST(a.agent_name() == "a");
    // Explicit suffix.
    auto b = root.derive("agent_b", "b");
    BOOST_TEST(b.branch() == "b");
    BOOST_TEST(b.agent_name() == "agent_b");
    // Nested: dot-joined.
    auto ab = a.derive("x");
    BOOST_TEST(ab.branch() == "a.x");
    auto abc = ab.derive("y", "why");
    BOOST_TEST(abc.branch() == "a.x.why");
    BOOST_TEST(abc.agent_name() == "y");

    invocation_context rooted(opts("inv", "root"));
    BOOST_TEST(rooted.derive("child").branch() == "root.child");
    BOOST_TEST(rooted.derive("child", "c").branch() == "root.c");

    // The parent is unchanged.
    BOOST_TEST(root.branch().empty());
    BOOST_TEST(root.agent_name() == "root");
    BOOST_TEST(rooted.branch() == "root");
}

BOOST_AUTO_TEST_CASE(empty_agent_name_and_suffix_are_refused) {
    // orxhestra appends an empty segment (f"{branch}.{''}"): "root.", and at the top level
    // the parent's own branch "", where the child sees its siblings' events and they its.
    // Refused here, as is a suffix with an empty segment.
    auto refused = [](auto f, const std::string& why) {
        try {
            (void)f();
            BOOST_ERROR("taken: " << why);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == libretto::errc::invalid_argument));
            BOOST_TEST(std::string(e.what()).find(why) != std::string::npos, e.what());
        }
    };
    invocation_context rooted(opts("inv", "root"));
    invocation_context bare(opts("inv", ""));
    refused([&] { return rooted.derive(""); }, "invocation_context::derive: empty agent name");
    refused([&] { return bare.derive(""); }, "invocation_context::derive: empty agent name");
    refused([&] { return bare.derive("", "x"); }, "empty agent name");
    for (std::string_view bad : {"x.", ".x", "p..c", "."})
        refused([&] { return rooted.derive("d", bad); }, "branch suffix '" + std::string(bad) + "' has an empty segment");
    refused([&] { return rooted.derive("a.", ""); }, "branch suffix 'a.' has an empty segment");
    refused([&] { return rooted.for_agent(""); }, "invocation_context::for_agent: empty agent name");
    // Dots between segments are paths, as parallel_agent's "p.c".
    BOOST_TEST(rooted.derive("c", "p.c").branch() == "root.p.c");
    BOOST_TEST(bare.derive("c", "p.c").branch() == "p.c");
}

BOOST_AUTO_TEST_CASE(identity_is_copied) {
    auto o = opts("inv-1", "r");
    o.input_content = "question";
    o.is_resumable = true;
    invocation_context root(o);
    auto child = root.derive("c");
    BOOST_TEST(child.invocation_id() == "inv-1");
    BOOST_TEST(child.session_id() == "s1");
    BOOST_TEST(child.user_id() == "u1");
    BOOST_TEST(child.app_name() == "app");
    BOOST_TEST((child.input_content() == std::optional<std::string>("question")));
    // The invocation's ids and input are shared by the contexts, not copied into each.
    BOOST_TEST(&child.invocation_id() == &root.invocation_id());
    BOOST_TEST(&child.session_id() == &root.session_id());
    BOOST_TEST(&child.input_content() == &root.input_content());
    BOOST_TEST(&child.for_agent("d").app_name() == &root.app_name());
    BOOST_TEST(child.is_resumable());
    // is_resumable is per context after the copy.
    child.set_resumable(false);
    BOOST_TEST(root.is_resumable());

    // A fresh (generated) invocation id is also shared.
    invocation_context gen;
    BOOST_TEST(gen.derive("x").invocation_id() == gen.invocation_id());
}

BOOST_AUTO_TEST_CASE(state_is_shared_both_ways) {
    invocation_context root(opts());
    auto child = root.derive("c");
    auto grandchild = child.derive("g");
    child.state().set("k", 1);
    BOOST_TEST(root.state().contains("k"));
    BOOST_TEST(grandchild.state().contains("k"));
    root.state().set("k", nullptr);
    BOOST_TEST(!child.state().contains("k"));
    grandchild.state().set("deep", true);
    BOOST_TEST(root.state().contains("deep"));
    BOOST_TEST(&root.state() == &grandchild.state());
}

BOOST_AUTO_TEST_CASE(session_and_services_are_shared) {
    auto o = opts();
    o.agent_tree = tree();
    o.run_config = obj(R"({"a":1})");
    invocation_context root(o);
    auto child = root.derive("c");
    BOOST_TEST(child.session_ptr() == root.session_ptr());
    root.session().events.push_back(make_event("e1", "inv", "", "x"));
    BOOST_TEST(child.get_events().size() == 1u);
    BOOST_TEST(child.agent_tree() == root.agent_tree());
    BOOST_TEST(&child.run_config() == &root.run_config());
}

BOOST_AUTO_TEST_CASE(agent_states_are_shared) {
    invocation_context root(opts());
    auto child = root.derive("c");
    child.set_agent_state("loop", obj(R"({"i":2})"));
    BOOST_TEST_REQUIRE(root.agent_state("loop") != nullptr);
    BOOST_TEST((*root.agent_state("loop") == obj(R"({"i":2})")));
    root.set_agent_state("loop", std::nullopt, true);
    BOOST_TEST(child.is_end_of_agent("loop"));
    BOOST_TEST(child.agent_state("loop") == nullptr);
}

BOOST_AUTO_TEST_CASE(long_running_ids_are_shared) {
    invocation_context root(opts());
    auto child = root.derive("c");
    child.long_running_tool_ids().insert("call-1");
    BOOST_TEST(root.long_running_tool_ids().count("call-1") == 1u);
    root.long_running_tool_ids().erase("call-1");
    BOOST_TEST(child.long_running_tool_ids().empty());
}

BOOST_AUTO_TEST_CASE(end_invocation_is_shared_across_the_tree) {
    // Deliberate difference from orxhestra (which copies the flag): a child can stop its parent.
    invocation_context root(opts());
    auto child = root.derive("c");
    auto grandchild = child.derive("g");
    auto sibling = root.derive("s");
    BOOST_TEST(!root.is_invocation_ended());
    grandchild.end_invocation();
    BOOST_TEST(grandchild.is_invocation_ended());
    BOOST_TEST(child.is_invocation_ended());
    BOOST_TEST(root.is_invocation_ended());
    BOOST_TEST(sibling.is_invocation_ended());
    // Contexts derived afterwards see it too.
    BOOST_TEST(root.derive("late").is_invocation_ended());
    // Idempotent.
    root.end_invocation();
    BOOST_TEST(root.is_invocation_ended());

    // An independent invocation is unaffected.
    invocation_context other(opts("other"));
    BOOST_TEST(!other.is_invocation_ended());
}

BOOST_AUTO_TEST_CASE(event_callback_is_shared_and_can_be_replaced) {
    invocation_context root(opts());
    auto child = root.derive("c");
    BOOST_TEST(!child.emit(event{})); // no callback yet

    std::vector<std::string> got;
    root.set_event_callback([&](event e) { got.push_back("first:" + e.id); });
    auto e1 = make_event("e1", "inv", "c", "");
    BOOST_TEST(child.emit(e1));
    BOOST_TEST(child.derive("g").emit(make_event("e2", "inv", "c.g", "")));

    // Replacing it on a child replaces it for everyone.
    child.set_event_callback([&](event e) { got.push_back("second:" + e.id); });
    BOOST_TEST(root.emit(make_event("e3", "inv", "", "")));
    BOOST_TEST((got == std::vector<std::string>{"first:e1", "first:e2", "second:e3"}));

    // Clearing it.
    root.set_event_callback({});
    BOOST_TEST(!child.emit(event{}));
    BOOST_TEST(got.size() == 3u);
}

BOOST_AUTO_TEST_CASE(emit_passes_the_event_unchanged) {
    invocation_context ctx(opts());
    event received;
    ctx.set_event_callback([&](event e) { received = std::move(e); });
    auto sent = event::make(event_type::tool_response, "tool", content::from_text("result"));
    sent.metadata["k"] = 1;
    BOOST_TEST(ctx.emit(sent));
    BOOST_TEST((received == sent));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(invocation_context_clear_session)

BOOST_AUTO_TEST_CASE(fresh_empty_session_with_same_ids) {
    auto s = std::make_shared<session>();
    s->id = "s1";
    s->app_name = "app";
    s->user_id = "u1";
    s->state = obj(R"({"persisted":1})");
    s->events.push_back(make_event("e1", "old", "", "hi"));
    s->last_sequence = 7;
    auto o = opts();
    o.session = s;
    invocation_context parent(o);
    auto child = parent.derive("tool_agent").clear_session();

    BOOST_TEST(child.session_ptr() != parent.session_ptr());
    BOOST_TEST(child.session().events.empty());
    BOOST_TEST(child.get_events().empty());
    BOOST_TEST(child.session().id == "s1");
    BOOST_TEST(child.session().app_name == "app");
    BOOST_TEST(child.session().user_id == "u1");
    BOOST_TEST(child.session().state.empty()); // no state on the fresh session
    BOOST_TEST(child.session().last_sequence == 0);
    BOOST_TEST(child.session_id() == "s1");
    BOOST_TEST(child.invocation_id() == parent.invocation_id());
    BOOST_TEST(child.branch() == "tool_agent");
    BOOST_TEST(child.agent_name() == "tool_agent");

    // The original session is untouched, and the child's events do not reach it.
    BOOST_TEST(parent.session().events.size() == 1u);
    BOOST_TEST(s->events.size() == 1u);
    child.session().events.push_back(make_event("c1", "inv", "tool_agent", "x"));
    BOOST_TEST(s->events.size() == 1u);
    BOOST_TEST(parent.get_events().size() == 1u);
}

BOOST_AUTO_TEST_CASE(state_and_flags_stay_shared) {
    auto o = opts();
    o.state = obj(R"({"k":1})");
    invocation_context parent(o);
    auto child = parent.clear_session();
    BOOST_TEST(child.state().contains("k")); // the invocation state, not the session's
    child.state().set("from_child", 1);
    BOOST_TEST(parent.state().contains("from_child"));
    child.end_invocation();
    BOOST_TEST(parent.is_invocation_ended());
    child.long_running_tool_ids().insert("x");
    BOOST_TEST(parent.long_running_tool_ids().count("x") == 1u);
}

BOOST_AUTO_TEST_CASE(clearing_twice_gives_distinct_sessions) {
    invocation_context parent(opts());
    auto a = parent.clear_session();
    auto b = parent.clear_session();
    BOOST_TEST(a.session_ptr() != b.session_ptr());
    a.session().events.push_back(event{});
    BOOST_TEST(b.session().events.empty());
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(invocation_context_history)

namespace {

/// Events of two invocations on two branches, in order.
std::shared_ptr<session> history() {
    auto s = std::make_shared<session>();
    s->id = "s1";
    s->events = {
        make_event("old-root", "old", "", "old answer"),
        make_event("old-a", "old", "a", "old a"),
        make_event("cur-root", "cur", "", "hello", event_type::user_message),
        make_event("cur-a", "cur", "a", "a says"),
        make_event("cur-ab", "cur", "a.b", "a.b says"),
        make_event("cur-a2", "cur", "a", "a again"),
        make_event("other-a", "other", "a", "other a"),
    };
    return s;
}

invocation_context on(std::shared_ptr<session> s, std::string branch) {
    auto o = opts("cur", std::move(branch));
    o.session = std::move(s);
    return invocation_context(o);
}

} // namespace

BOOST_AUTO_TEST_CASE(get_events_without_filter_is_everything_in_order) {
    auto ctx = on(history(), "a");
    BOOST_TEST((ids(ctx.get_events()) == std::vector<std::string>{"old-root", "old-a", "cur-root", "cur-a", "cur-ab",
                                                                  "cur-a2", "other-a"}));
    // Pointers into the session, not copies.
    BOOST_TEST(ctx.get_events().front() == &ctx.session().events.front());
}

BOOST_AUTO_TEST_CASE(get_events_current_branch) {
    auto ctx = on(history(), "a");
    event_filter f;
    f.current_branch = true;
    // Exact branch equality: "a.b" is not on branch "a".
    BOOST_TEST((ids(ctx.get_events(f)) == std::vector<std::string>{"old-a", "cur-a", "cur-a2", "other-a"}));
    auto root = on(history(), "");
    BOOST_TEST((ids(root.get_events(f)) == std::vector<std::string>{"old-root", "cur-root"}));
    auto nowhere = on(history(), "zzz");
    BOOST_TEST(nowhere.get_events(f).empty());
}

BOOST_AUTO_TEST_CASE(get_events_current_invocation) {
    auto ctx = on(history(), "a");
    event_filter f;
    f.current_invocation = true;
    BOOST_TEST((ids(ctx.get_events(f)) == std::vector<std::string>{"cur-root", "cur-a", "cur-ab", "cur-a2"}));
}

BOOST_AUTO_TEST_CASE(get_events_both_filters) {
    auto ctx = on(history(), "a");
    event_filter f;
    f.current_branch = true;
    f.current_invocation = true;
    BOOST_TEST((ids(ctx.get_events(f)) == std::vector<std::string>{"cur-a", "cur-a2"}));
    auto ab = on(history(), "a.b");
    BOOST_TEST((ids(ab.get_events(f)) == std::vector<std::string>{"cur-ab"}));
}

BOOST_AUTO_TEST_CASE(get_events_on_empty_session) {
    invocation_context ctx(opts());
    event_filter both;
    both.current_branch = both.current_invocation = true;
    BOOST_TEST(ctx.get_events().empty());
    BOOST_TEST(ctx.get_events(both).empty());
}

BOOST_AUTO_TEST_CASE(previous_final_responses) {
    auto s = std::make_shared<session>();
    auto final_text = make_event("p1", "old", "", "answer 1");
    auto other_branch = make_event("p2", "old2", "x.y", "answer 2");
    auto current = make_event("c1", "cur", "", "current answer");
    auto user = make_event("u1", "old", "", "question", event_type::user_message);
    auto with_call = make_event("t1", "old", "", "calling");
    with_call.content.parts.emplace_back(call("id"));
    auto partial = make_event("pa", "old", "", "partial");
    partial.partial = true;
    auto data_only = make_event("d1", "old", "", "");
    data_only.content = content::from_data(obj(R"({"k":1})"));
    BOOST_TEST(data_only.is_final_response()); // final, but without text
    auto skip_no_text = make_event("sk", "old", "", "");
    skip_no_text.actions.skip_summarization = true;
    BOOST_TEST(skip_no_text.is_final_response());
    auto react = make_event("r1", "old", "", "Thought");
    react.metadata["react_step"] = true;
    auto errored = make_event("er", "old", "", "failed");
    errored.metadata["error"] = true;
    auto tool_resp = make_event("tr", "old", "", "result", event_type::tool_response);
    auto skip_with_text = make_event("st", "old", "", "kept");
    skip_with_text.actions.skip_summarization = true;
    s->events = {final_text, user, with_call, partial, data_only, skip_no_text, react,
                 errored,    current, tool_resp, other_branch, skip_with_text};

    auto o = opts("cur", "somewhere");
    o.session = s;
    invocation_context ctx(o);
    BOOST_TEST((ids(ctx.get_previous_final_responses()) == std::vector<std::string>{"p1", "p2", "st"}));

    // From another invocation's point of view, "cur" is previous and "p1" is its own.
    auto o2 = opts("old", "");
    o2.session = s;
    BOOST_TEST((ids(invocation_context(o2).get_previous_final_responses()) ==
                std::vector<std::string>{"c1", "p2"}));

    invocation_context empty(opts());
    BOOST_TEST(empty.get_previous_final_responses().empty());
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(invocation_context_agent_states)

BOOST_AUTO_TEST_CASE(unknown_agent_has_no_state) {
    invocation_context ctx(opts());
    BOOST_TEST(ctx.agent_state("x") == nullptr);
    BOOST_TEST(!ctx.is_end_of_agent("x"));
}

BOOST_AUTO_TEST_CASE(store_a_state) {
    invocation_context ctx(opts());
    ctx.set_agent_state("loop", obj(R"({"iteration":1})"));
    BOOST_TEST_REQUIRE(ctx.agent_state("loop") != nullptr);
    BOOST_TEST((*ctx.agent_state("loop") == obj(R"({"iteration":1})")));
    BOOST_TEST(!ctx.is_end_of_agent("loop"));
    // Overwrite.
    ctx.set_agent_state("loop", obj(R"({"iteration":2})"));
    BOOST_TEST((*ctx.agent_state("loop") == obj(R"({"iteration":2})")));
    // An empty object is a stored state, not "none".
    ctx.set_agent_state("seq", json::object{});
    BOOST_TEST_REQUIRE(ctx.agent_state("seq") != nullptr);
    BOOST_TEST(ctx.agent_state("seq")->empty());
    // Agents are independent.
    BOOST_TEST((*ctx.agent_state("loop") == obj(R"({"iteration":2})")));
}

BOOST_AUTO_TEST_CASE(end_of_agent_marks_finished_and_drops_state) {
    invocation_context ctx(opts());
    ctx.set_agent_state("a", obj(R"({"step":3})"));
    ctx.set_agent_state("a", std::nullopt, true);
    BOOST_TEST(ctx.is_end_of_agent("a"));
    BOOST_TEST(ctx.agent_state("a") == nullptr);
    // end_of_agent wins over a given state.
    ctx.set_agent_state("b", obj(R"({"x":1})"), true);
    BOOST_TEST(ctx.is_end_of_agent("b"));
    BOOST_TEST(ctx.agent_state("b") == nullptr);
    // Storing a state again un-finishes the agent.
    ctx.set_agent_state("a", obj(R"({"step":0})"));
    BOOST_TEST(!ctx.is_end_of_agent("a"));
    BOOST_TEST(ctx.agent_state("a") != nullptr);
}

BOOST_AUTO_TEST_CASE(neither_clears_both) {
    invocation_context ctx(opts());
    ctx.set_agent_state("a", obj(R"({"step":3})"));
    ctx.set_agent_state("a");
    BOOST_TEST(ctx.agent_state("a") == nullptr);
    BOOST_TEST(!ctx.is_end_of_agent("a"));
    ctx.set_agent_state("b", std::nullopt, true);
    ctx.set_agent_state("b");
    BOOST_TEST(!ctx.is_end_of_agent("b"));
    ctx.set_agent_state("never_set"); // clearing an unknown agent is harmless
    BOOST_TEST(ctx.agent_state("never_set") == nullptr);
}

BOOST_AUTO_TEST_CASE(reset_sub_agent_states_is_recursive_and_spares_the_named_agent) {
    auto o = opts();
    o.agent_tree = tree();
    invocation_context ctx(o);
    for (const char* n : {"root", "loop", "a", "a1", "b", "other", "c"})
        ctx.set_agent_state(n, obj(R"({"s":1})"));
    ctx.set_agent_state("b", std::nullopt, true); // finished: the flag is cleared too

    BOOST_TEST(ctx.reset_sub_agent_states("loop"));
    // loop itself, its ancestors and the other subtree are untouched.
    BOOST_TEST(ctx.agent_state("loop") != nullptr);
    BOOST_TEST(ctx.agent_state("root") != nullptr);
    BOOST_TEST(ctx.agent_state("other") != nullptr);
    BOOST_TEST(ctx.agent_state("c") != nullptr);
    // Every descendant is cleared.
    BOOST_TEST(ctx.agent_state("a") == nullptr);
    BOOST_TEST(ctx.agent_state("a1") == nullptr);
    BOOST_TEST(ctx.agent_state("b") == nullptr);
    BOOST_TEST(!ctx.is_end_of_agent("b"));

    // A leaf has no sub-agents: found, nothing changes.
    BOOST_TEST(ctx.reset_sub_agent_states("c"));
    BOOST_TEST(ctx.agent_state("c") != nullptr);

    // From the root everything below goes.
    BOOST_TEST(ctx.reset_sub_agent_states("root"));
    BOOST_TEST(ctx.agent_state("root") != nullptr);
    for (const char* n : {"loop", "a", "a1", "b", "other", "c"}) BOOST_TEST(ctx.agent_state(n) == nullptr);
}

BOOST_AUTO_TEST_CASE(reset_sub_agent_states_through_a_derived_context) {
    auto o = opts();
    o.agent_tree = tree();
    invocation_context root(o);
    root.set_agent_state("a", obj(R"({"s":1})"));
    auto child = root.derive("loop");
    BOOST_TEST(child.reset_sub_agent_states("loop"));
    BOOST_TEST(root.agent_state("a") == nullptr);
}

BOOST_AUTO_TEST_CASE(reset_sub_agent_states_without_tree_or_unknown_name) {
    invocation_context no_tree(opts());
    no_tree.set_agent_state("a", obj(R"({"s":1})"));
    BOOST_TEST(!no_tree.reset_sub_agent_states("root"));
    BOOST_TEST(no_tree.agent_state("a") != nullptr);

    auto o = opts();
    o.agent_tree = tree();
    invocation_context ctx(o);
    ctx.set_agent_state("a", obj(R"({"s":1})"));
    BOOST_TEST(!ctx.reset_sub_agent_states("nobody"));
    BOOST_TEST(!ctx.reset_sub_agent_states(""));
    BOOST_TEST(ctx.agent_state("a") != nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(invocation_context_pause)

namespace {
event calls(std::initializer_list<const char*> ids_) {
    event e;
    for (const char* id : ids_) e.content.parts.emplace_back(call(id));
    return e;
}
} // namespace

BOOST_AUTO_TEST_CASE(not_resumable_never_pauses) {
    invocation_context ctx(opts());
    ctx.long_running_tool_ids().insert("lr");
    BOOST_TEST(!ctx.should_pause_invocation(calls({"lr"})));
}

BOOST_AUTO_TEST_CASE(empty_id_set_never_pauses) {
    auto o = opts();
    o.is_resumable = true;
    invocation_context ctx(o);
    BOOST_TEST(!ctx.should_pause_invocation(calls({"lr"})));
    BOOST_TEST(!ctx.should_pause_invocation(calls({""})));
}

BOOST_AUTO_TEST_CASE(matching_id_pauses) {
    auto o = opts();
    o.is_resumable = true;
    invocation_context ctx(o);
    ctx.long_running_tool_ids().insert("lr");
    BOOST_TEST(ctx.should_pause_invocation(calls({"lr"})));
    BOOST_TEST(ctx.should_pause_invocation(calls({"a", "b", "lr"}))); // any call matches
    // Set on a derived context, seen by the parent (shared set).
    auto child = ctx.derive("c");
    child.long_running_tool_ids().insert("child-lr");
    BOOST_TEST(ctx.should_pause_invocation(calls({"child-lr"})));
    // Turning resumability off stops pausing.
    ctx.set_resumable(false);
    BOOST_TEST(!ctx.should_pause_invocation(calls({"lr"})));
}

BOOST_AUTO_TEST_CASE(non_matching_ids_do_not_pause) {
    auto o = opts();
    o.is_resumable = true;
    invocation_context ctx(o);
    ctx.long_running_tool_ids().insert("lr");
    BOOST_TEST(!ctx.should_pause_invocation(calls({"other"})));
    BOOST_TEST(!ctx.should_pause_invocation(calls({"LR", "lr2", "l"})));
    BOOST_TEST(!ctx.should_pause_invocation(event{})); // no tool calls at all
    // A tool *response* with that id is not a request.
    event resp;
    tool_response_part r;
    r.tool_call_id = "lr";
    resp.content.parts.emplace_back(r);
    BOOST_TEST(!ctx.should_pause_invocation(resp));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(invocation_context_ids_from_session)

BOOST_AUTO_TEST_CASE(ids_not_given_come_from_the_session) {
    auto s = std::make_shared<libretto::session>();
    s->id = "sid";
    s->app_name = "app";
    s->user_id = "uid";
    libretto::invocation_options o;
    o.session = s;
    libretto::invocation_context ctx(o);
    BOOST_TEST(ctx.session_id() == "sid");
    BOOST_TEST(ctx.app_name() == "app");
    BOOST_TEST(ctx.user_id() == "uid");
    libretto::invocation_options o2;
    o2.session = s;
    o2.session_id = "explicit";
    libretto::invocation_context ctx2(o2);
    BOOST_TEST(ctx2.session_id() == "explicit");
}

BOOST_AUTO_TEST_SUITE_END()
