// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/context/callback_context.hpp>

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <vector>

#include <libretto/context/readonly_context.hpp>

#include <boost/json/parse.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace json = boost::json;
using namespace libretto;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

invocation_options opts() {
    invocation_options o;
    o.invocation_id = "inv";
    o.session_id = "s1";
    o.user_id = "u1";
    o.app_name = "app";
    o.agent_name = "writer";
    o.branch = "root.writer";
    o.input_content = "question";
    o.state = obj(R"({"existing":1})");
    return o;
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(readonly_context_view)

// state() is read-only: it returns a const reference, and no non-const overload exists.
static_assert(std::is_same_v<decltype(std::declval<readonly_context&>().state()), const libretto::state&>);
static_assert(std::is_same_v<decltype(std::declval<const readonly_context&>().state()), const libretto::state&>);
static_assert(std::is_same_v<decltype(std::declval<readonly_context&>().context()), const invocation_context&>);
// A cheap view: constructible from a const context, copyable.
static_assert(std::is_nothrow_constructible_v<readonly_context, const invocation_context&>);
static_assert(std::is_nothrow_copy_constructible_v<readonly_context>);
// Not implicitly convertible from a context (explicit constructor).
static_assert(!std::is_convertible_v<const invocation_context&, readonly_context>);

BOOST_AUTO_TEST_CASE(exposes_the_identity) {
    invocation_context ctx(opts());
    readonly_context ro(ctx);
    BOOST_TEST(ro.invocation_id() == "inv");
    BOOST_TEST(ro.session_id() == "s1");
    BOOST_TEST(ro.user_id() == "u1");
    BOOST_TEST(ro.app_name() == "app");
    BOOST_TEST(ro.agent_name() == "writer");
    BOOST_TEST(ro.branch() == "root.writer");
    BOOST_TEST((ro.input_content() == std::optional<std::string>("question")));
    BOOST_TEST(&ro.context() == &ctx);
    // References into the context, not copies.
    BOOST_TEST(&ro.invocation_id() == &ctx.invocation_id());
}

BOOST_AUTO_TEST_CASE(reads_the_live_shared_state) {
    invocation_context ctx(opts());
    const readonly_context ro(ctx);
    BOOST_TEST(&ro.state() == &ctx.state());
    BOOST_TEST(ro.state().contains("existing"));
    ctx.state().set("later", 2);
    BOOST_TEST(ro.state().contains("later")); // not a snapshot
    // A view of a derived context reads the same state, with the child's identity.
    auto child = ctx.derive("c");
    readonly_context cro(child);
    BOOST_TEST(cro.state().contains("later"));
    BOOST_TEST(cro.branch() == "root.writer.c");
    BOOST_TEST(cro.agent_name() == "c");
}

BOOST_AUTO_TEST_CASE(defaults_of_an_empty_context) {
    invocation_context ctx;
    readonly_context ro(ctx);
    BOOST_TEST(ro.invocation_id().size() == 36u);
    BOOST_TEST(ro.session_id().empty());
    BOOST_TEST(!ro.input_content().has_value());
    BOOST_TEST(ro.state().empty());
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(callback_context_state)

static_assert(std::is_base_of_v<readonly_context, callback_context>);
// Non-const: a writable handle; const: the read-only state.
static_assert(std::is_same_v<decltype(std::declval<callback_context&>().state()), callback_context::state_ref>);
static_assert(std::is_same_v<decltype(std::declval<const callback_context&>().state()), const libretto::state&>);

BOOST_AUTO_TEST_CASE(subscript_assignment_writes_state_and_delta) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    BOOST_TEST(cb.actions().empty());
    cb.state()["k"] = "v";
    cb.state()["n"] = 42;
    BOOST_TEST_REQUIRE(ctx.state().find("k") != nullptr);
    BOOST_TEST(ctx.state().find("k")->as_string() == "v");
    BOOST_TEST((*ctx.state().find("n") == json::value(42)));
    BOOST_TEST((cb.actions().state_delta == obj(R"({"k":"v","n":42})")));
    // Identity comes from the base class.
    BOOST_TEST(cb.agent_name() == "writer");
    BOOST_TEST(cb.invocation_id() == "inv");
}

BOOST_AUTO_TEST_CASE(subscript_assignment_takes_what_value_from_takes) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    const std::string city = "Oslo";
    cb.state()["city"] = city;                                  // std::string: two conversions away
    cb.state()["tags"] = std::vector<std::string>{"a", "b"};    // a container
    cb.state()["pair"] = std::map<std::string, int>{{"x", 1}};  // a map becomes an object
    BOOST_TEST((cb.actions().state_delta == obj(R"({"city":"Oslo","tags":["a","b"],"pair":{"x":1}})")));
    BOOST_TEST(ctx.state().find("city")->as_string() == "Oslo");
}

BOOST_AUTO_TEST_CASE(overwrite_records_the_last_value) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.state()["existing"] = 2;
    cb.state()["existing"] = json::parse(R"({"deep":[1]})");
    BOOST_TEST((*ctx.state().find("existing") == json::parse(R"({"deep":[1]})")));
    BOOST_TEST((cb.actions().state_delta == obj(R"({"existing":{"deep":[1]}})")));
}

BOOST_AUTO_TEST_CASE(proxy_reads) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    auto st = cb.state();
    const json::value& existing = st["existing"];
    BOOST_TEST((existing == json::value(1)));
    // A missing key reads as null, and reading records nothing.
    const json::value& missing = st["missing"];
    BOOST_TEST(missing.is_null());
    BOOST_TEST(st["missing"].get() == nullptr);
    BOOST_TEST_REQUIRE(st["existing"].get() != nullptr);
    BOOST_TEST(cb.actions().state_delta.empty());
    BOOST_TEST(!ctx.state().contains("missing"));
    // Chained assignment.
    st["a"] = 1;
    BOOST_TEST((static_cast<const json::value&>(st["a"]) == json::value(1)));
}

BOOST_AUTO_TEST_CASE(set_find_contains_values) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    auto st = cb.state();
    BOOST_TEST(st.contains("existing"));
    BOOST_TEST(!st.contains("x"));
    st.set("x", true);
    BOOST_TEST(st.contains("x"));
    BOOST_TEST_REQUIRE(st.find("x") != nullptr);
    BOOST_TEST(st.find("x")->as_bool());
    BOOST_TEST(&st.values() == &ctx.state().values());
    BOOST_TEST((cb.actions().state_delta == obj(R"({"x":true})")));
}

BOOST_AUTO_TEST_CASE(erase_records_null_and_removes) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.state().erase("existing");
    BOOST_TEST(!ctx.state().contains("existing"));
    BOOST_TEST((cb.actions().state_delta == obj(R"({"existing":null})")));
    // Erasing an absent key still records the deletion.
    cb.state().erase("absent");
    BOOST_TEST((cb.actions().state_delta == obj(R"({"existing":null,"absent":null})")));
    // Assigning null is the same as erasing.
    cb.state()["z"] = 1;
    cb.state()["z"] = nullptr;
    BOOST_TEST(!ctx.state().contains("z"));
    BOOST_TEST(cb.actions().state_delta.at("z").is_null());
}

BOOST_AUTO_TEST_CASE(set_then_erase_then_set) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.state().set("k", 1);
    cb.state().erase("k");
    cb.state().set("k", 3);
    BOOST_TEST((*ctx.state().find("k") == json::value(3)));
    BOOST_TEST((cb.actions().state_delta == obj(R"({"k":3})")));
}

BOOST_AUTO_TEST_CASE(scoped_keys_are_recorded_with_their_prefix) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.state()["temp:scratch"] = "t";
    cb.state()["app:theme"] = "dark";
    cb.state()["user:lang"] = "en";
    BOOST_TEST(ctx.state().contains("temp:scratch"));
    BOOST_TEST(ctx.state().contains("app:theme"));
    BOOST_TEST((cb.actions().state_delta ==
                obj(R"({"temp:scratch":"t","app:theme":"dark","user:lang":"en"})")));
    // The temp: key is recorded; what gets persisted is up to without_temp().
    BOOST_TEST((without_temp(cb.actions().state_delta) == obj(R"({"app:theme":"dark","user:lang":"en"})")));
    // clear_temp at the end of the invocation removes it from the shared state.
    ctx.state().clear_temp();
    BOOST_TEST(!ctx.state().contains("temp:scratch"));
}

BOOST_AUTO_TEST_CASE(writes_are_visible_to_the_whole_tree) {
    invocation_context root(opts());
    auto child = root.derive("tool");
    callback_context cb(child);
    cb.state()["from_tool"] = 1;
    BOOST_TEST(root.state().contains("from_tool"));
    const readonly_context ro(root);
    BOOST_TEST(ro.state().contains("from_tool"));
    // The const view of the callback context is the same state.
    const callback_context& ccb = cb;
    BOOST_TEST(&ccb.state() == &root.state());
}

BOOST_AUTO_TEST_CASE(two_callback_contexts_record_separately) {
    invocation_context ctx(opts());
    callback_context a(ctx);
    callback_context b(ctx);
    a.state()["x"] = 1;
    b.state()["y"] = 2;
    BOOST_TEST((a.actions().state_delta == obj(R"({"x":1})")));
    BOOST_TEST((b.actions().state_delta == obj(R"({"y":2})")));
    BOOST_TEST(ctx.state().contains("x"));
    BOOST_TEST(ctx.state().contains("y"));
}

BOOST_AUTO_TEST_CASE(direct_state_delta_edits_do_not_touch_state) {
    // actions().state_delta is a plain record: writing it directly does not apply it.
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.actions().state_delta["direct"] = 1;
    BOOST_TEST(!ctx.state().contains("direct"));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(callback_context_actions)

BOOST_AUTO_TEST_CASE(actions_are_recorded) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.actions().escalate = true;
    cb.actions().transfer_to_agent = "reviewer";
    cb.actions().skip_summarization = true;
    cb.actions().artifact_delta["out.md"] = 2;
    const callback_context& ccb = cb;
    BOOST_TEST((ccb.actions().escalate == std::optional<bool>(true)));
    BOOST_TEST((ccb.actions().transfer_to_agent == std::optional<std::string>("reviewer")));
    BOOST_TEST(!ccb.actions().empty());
}

BOOST_AUTO_TEST_CASE(take_actions_hands_over_and_resets) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    cb.state()["k"] = 1;
    cb.actions().escalate = false;
    event_actions taken = cb.take_actions();
    BOOST_TEST((taken.state_delta == obj(R"({"k":1})")));
    BOOST_TEST((taken.escalate == std::optional<bool>(false)));
    BOOST_TEST(cb.actions().empty());
    BOOST_TEST(cb.take_actions().empty()); // nothing new since
    // The state write stays applied.
    BOOST_TEST(ctx.state().contains("k"));
    // Recording continues after a take.
    cb.state()["k2"] = 2;
    BOOST_TEST((cb.actions().state_delta == obj(R"({"k2":2})")));
}

BOOST_AUTO_TEST_CASE(merge_into_an_events_actions) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    auto e = event::make(event_type::agent_message, "writer", content::from_text("done"));
    e.actions.state_delta = obj(R"({"model_key":"m","k":"event value"})");
    e.actions.transfer_to_agent = "first";

    cb.state()["k"] = "callback value";
    cb.state()["cb_only"] = true;
    cb.state().erase("existing");
    cb.actions().escalate = true;
    e.actions.merge(cb.take_actions());

    // The callback's actions come later, so they win key by key; the rest is kept.
    BOOST_TEST((e.actions.state_delta ==
                obj(R"({"model_key":"m","k":"callback value","cb_only":true,"existing":null})")));
    BOOST_TEST((e.actions.escalate == std::optional<bool>(true)));
    BOOST_TEST((e.actions.transfer_to_agent == std::optional<std::string>("first"))); // unset in cb: kept
    BOOST_TEST(cb.actions().empty());

    // Applying the merged delta to a state reproduces what the callback did.
    libretto::state replay(obj(R"({"existing":1})"));
    replay.apply(e.actions.state_delta);
    BOOST_TEST(!replay.contains("existing"));
    BOOST_TEST(replay.find("k")->as_string() == "callback value");
}

BOOST_AUTO_TEST_CASE(context_accessor_gives_the_writable_context) {
    invocation_context ctx(opts());
    callback_context cb(ctx);
    BOOST_TEST(&cb.context() == &ctx);
    cb.context().end_invocation();
    BOOST_TEST(ctx.is_invocation_ended());
    static_assert(std::is_same_v<decltype(cb.context()), invocation_context&>);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(callback_context_regressions)

// A proxy kept in a variable outlives the state_ref temporary it came from.
BOOST_AUTO_TEST_CASE(proxy_outlives_state_ref) {
    libretto::invocation_context ctx;
    libretto::callback_context cb(ctx);
    auto p = cb.state()["k"];
    p = 1;
    BOOST_TEST(ctx.state().contains("k"));
    BOOST_TEST(cb.actions().state_delta.contains("k"));
}

BOOST_AUTO_TEST_SUITE_END()
