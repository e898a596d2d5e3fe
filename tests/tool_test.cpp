// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/event/json.hpp>
#include <libretto/tool/any_tool.hpp>
#include <libretto/tool/run_tool_call.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <functional>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace libretto;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

/// Runs `a` on a fresh io_context and returns its result (rethrows its exception).
template <class T>
T run(asio::awaitable<T> a) {
    asio::io_context io;
    std::optional<T> out;
    std::exception_ptr ep;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
        ep = e;
        if (!e) out = std::move(v);
    });
    io.run();
    if (ep) std::rethrow_exception(ep);
    BOOST_REQUIRE(out.has_value());
    return std::move(*out);
}

tool_declaration decl(std::string name, std::string description = "d") {
    tool_declaration d;
    d.name = std::move(name);
    d.description = std::move(description);
    d.parameters = obj(R"({"type":"object"})");
    return d;
}

/// Returns its arguments.
struct echo_tool {
    tool_declaration d = decl("echo", "Echoes its arguments");
    const tool_declaration& declaration() const noexcept { return d; }
    asio::awaitable<json::value> call(json::object args, tool_context&) const {
        json::value v(std::move(args));
        co_return v;
    }
};

/// Behaves as `mode` says: "throw_tool_error", "throw_runtime", "throw_int", "state",
/// "state_then_throw", "escalate", "sleep" (10 ms, counting concurrent calls), "forever".
struct scripted_tool {
    tool_declaration d;
    std::string mode;
    std::shared_ptr<int> active = std::make_shared<int>(0);
    std::shared_ptr<int> max_active = std::make_shared<int>(0);

    scripted_tool(std::string name, std::string m) : d(decl(std::move(name))), mode(std::move(m)) {}
    const tool_declaration& declaration() const noexcept { return d; }
    asio::awaitable<json::value> call(json::object args, tool_context& ctx) const {
        if (mode == "throw_tool_error") {
            json::object details = obj(R"({"hint":"try again"})");
            throw tool_error("quota exceeded", errc::busy, std::move(details));
        }
        if (mode == "throw_runtime") throw std::runtime_error("disk on fire");
        if (mode == "throw_int") throw 42;
        if (mode == "state" || mode == "state_then_throw") {
            ctx.state()["counter"] = json::value(7);
            ctx.state()["temp:scratch"] = json::value("x");
            if (mode == "state_then_throw") throw std::runtime_error("after writing");
        }
        if (mode == "escalate") {
            ctx.escalate();
            ctx.skip_summarization();
            ctx.transfer_to_agent("other");
        }
        if (mode == "sleep" || mode == "forever") {
            ++*active;
            if (*active > *max_active) *max_active = *active;
            auto ex = co_await asio::this_coro::executor;
            asio::steady_timer t(ex, mode == "sleep" ? std::chrono::milliseconds(10) : std::chrono::hours(1));
            co_await t.async_wait(asio::use_awaitable);
            --*active;
        }
        json::object out;
        out["mode"] = mode;
        out["args"] = std::move(args);
        out["call_id"] = ctx.function_call_id();
        json::value v(std::move(out));
        co_return v;
    }
};

/// Counts its copies (any_tool must not copy the tool when it is copied).
struct counting_tool {
    tool_declaration d = decl("counting");
    std::shared_ptr<int> copies = std::make_shared<int>(0);
    counting_tool() = default;
    counting_tool(const counting_tool& o) : d(o.d), copies(o.copies) { ++*copies; }
    counting_tool(counting_tool&&) = default;
    const tool_declaration& declaration() const noexcept { return d; }
    asio::awaitable<json::value> call(json::object, tool_context&) const { co_return json::value(nullptr); }
};

// Not tools.
struct no_declaration {
    asio::awaitable<json::value> call(json::object, tool_context&) const;
};
struct non_const_call {
    const tool_declaration& declaration() const noexcept;
    asio::awaitable<json::value> call(json::object, tool_context&);
};
struct wrong_result {
    const tool_declaration& declaration() const noexcept;
    asio::awaitable<std::string> call(json::object, tool_context&) const;
};
struct declaration_by_value {
    tool_declaration declaration() const;
    asio::awaitable<json::value> call(json::object, tool_context&) const;
};

/// Throws what `fail` throws.
struct throwing_tool {
    tool_declaration d = decl("thrower");
    std::function<void()> fail;
    const tool_declaration& declaration() const noexcept { return d; }
    asio::awaitable<json::value> call(json::object, tool_context&) const {
        fail();
        co_return json::value(nullptr);
    }
};

/// Why the tool_response event holding `r` cannot be stored; empty if it can.
std::string store_fault(const tool_response_part& r) {
    content c;
    c.parts.emplace_back(r);
    event e = event::make(event_type::tool_response, "assistant", std::move(c));
    std::string text, why;
    if (serialize_event_checked(e, text, why)) return why.empty() ? "refused" : why;
    return {};
}

invocation_options opts() {
    invocation_options o;
    o.invocation_id = "inv";
    o.session_id = "s1";
    o.user_id = "u1";
    o.app_name = "app";
    o.agent_name = "assistant";
    o.branch = "root";
    o.state = obj(R"({"existing":1})");
    return o;
}

tool_call_part call_of(std::string name, std::string_view args = "{}", std::string id = "call-1") {
    tool_call_part c;
    c.tool_call_id = std::move(id);
    c.tool_name = std::move(name);
    c.args = obj(args);
    return c;
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(tool_concept)

static_assert(tool<echo_tool>);
static_assert(tool<scripted_tool>);
static_assert(tool<any_tool>);
static_assert(!tool<no_declaration>);
static_assert(!tool<non_const_call>);
static_assert(!tool<wrong_result>);
static_assert(!tool<declaration_by_value>);
static_assert(!tool<int>);

BOOST_AUTO_TEST_CASE(tool_names_follow_the_provider_rule) {
    BOOST_TEST(is_valid_tool_name("get_weather"));
    BOOST_TEST(is_valid_tool_name("a"));
    BOOST_TEST(is_valid_tool_name("Tool-2_x"));
    BOOST_TEST(is_valid_tool_name(std::string(64, 'a')));
    BOOST_TEST(!is_valid_tool_name(std::string(65, 'a')));
    BOOST_TEST(!is_valid_tool_name(""));
    BOOST_TEST(!is_valid_tool_name("get weather"));
    BOOST_TEST(!is_valid_tool_name("ns.tool"));
    BOOST_TEST(!is_valid_tool_name("caf\xc3\xa9"));
    static_assert(is_valid_tool_name("constexpr_ok"));
}

BOOST_AUTO_TEST_CASE(tool_error_carries_message_code_and_details) {
    tool_error plain("boom");
    BOOST_TEST(std::string(plain.what()) == "boom");
    BOOST_TEST((plain.code() == errc::tool_error));
    BOOST_TEST(plain.details().empty());

    tool_error full("no quota", errc::busy, obj(R"({"retry_after":3})"));
    BOOST_TEST((full.code() == errc::busy));
    BOOST_TEST(full.details() == obj(R"({"retry_after":3})"));
    const std::exception& base = full; // catchable as std::exception
    BOOST_TEST(std::string(base.what()) == "no quota");
}

BOOST_AUTO_TEST_CASE(error_response_puts_the_message_in_result_and_error) {
    tool_response_part r = tool_error_response("c1", "search", "index offline");
    BOOST_TEST(r.tool_call_id == "c1");
    BOOST_TEST(r.tool_name == "search");
    BOOST_TEST((r.error == std::optional<std::string>("index offline")));
    BOOST_TEST(r.result == json::parse(R"({"error":"index offline"})"));
    BOOST_TEST(r.metadata.empty());

    tool_response_part d = tool_error_response("c2", "search", "bad", obj(R"({"field":"q"})"));
    BOOST_TEST(d.result == json::parse(R"({"error":"bad","details":{"field":"q"}})"));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(tool_context_tests)

BOOST_AUTO_TEST_CASE(knows_its_call_and_the_invocation) {
    invocation_context inv(opts());
    tool_context ctx(inv, "call-9", "echo");
    BOOST_TEST(ctx.function_call_id() == "call-9");
    BOOST_TEST(ctx.tool_name() == "echo");
    BOOST_TEST(ctx.invocation_id() == "inv");
    BOOST_TEST(ctx.session_id() == "s1");
    BOOST_TEST(ctx.user_id() == "u1");
    BOOST_TEST(ctx.app_name() == "app");
    BOOST_TEST(ctx.agent_name() == "assistant");
    BOOST_TEST(ctx.branch() == "root");
    BOOST_TEST(&ctx.context() == &inv);
    BOOST_TEST(ctx.actions().empty());

    tool_call_part c = call_of("search", R"({"q":"x"})", "call-3");
    tool_context from_call(inv, c);
    BOOST_TEST(from_call.function_call_id() == "call-3");
    BOOST_TEST(from_call.tool_name() == "search");

    tool_context no_name(inv, "call-4");
    BOOST_TEST(no_name.tool_name().empty());
}

BOOST_AUTO_TEST_CASE(state_writes_reach_the_state_and_the_delta) {
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "t");
    ctx.state()["city"] = json::value("Oslo");
    ctx.state().erase("existing");
    BOOST_TEST(*inv.state().find("city") == json::value("Oslo"));
    BOOST_TEST(inv.state().find("existing") == nullptr);
    BOOST_TEST(ctx.actions().state_delta == obj(R"({"city":"Oslo","existing":null})"));

    event_actions taken = ctx.take_actions();
    BOOST_TEST(taken.state_delta == obj(R"({"city":"Oslo","existing":null})"));
    BOOST_TEST(ctx.actions().empty());
}

BOOST_AUTO_TEST_CASE(actions_escalate_transfer_skip_summarization) {
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "t");
    ctx.escalate();
    ctx.transfer_to_agent("billing");
    ctx.skip_summarization();
    BOOST_TEST((ctx.actions().escalate == std::optional<bool>(true)));
    BOOST_TEST((ctx.actions().transfer_to_agent == std::optional<std::string>("billing")));
    BOOST_TEST((ctx.actions().skip_summarization == std::optional<bool>(true)));
    BOOST_TEST(ctx.actions().state_delta.empty());
}

BOOST_AUTO_TEST_CASE(two_calls_have_separate_actions_over_one_state) {
    invocation_context inv(opts());
    tool_context a(inv, "a", "t");
    tool_context b(inv, "b", "t");
    a.state()["x"] = json::value(1);
    b.state()["y"] = json::value(2);
    a.escalate();
    BOOST_TEST(a.actions().state_delta == obj(R"({"x":1})"));
    BOOST_TEST(b.actions().state_delta == obj(R"({"y":2})"));
    BOOST_TEST(!b.actions().escalate.has_value());
    BOOST_TEST(inv.state().values() == obj(R"({"existing":1,"x":1,"y":2})"));
}

BOOST_AUTO_TEST_CASE(emit_goes_through_the_event_callback) {
    invocation_context without(opts());
    tool_context quiet(without, "c", "t");
    BOOST_TEST(!quiet.emit(event::make(event_type::agent_message, "t")));

    std::vector<event> seen;
    invocation_options o = opts();
    o.event_callback = [&](event e) { seen.push_back(std::move(e)); };
    invocation_context with(std::move(o));
    const tool_context ctx(with, "c", "t");
    BOOST_TEST(ctx.emit(event::make(event_type::agent_message, "progress", content::from_text("50%"))));
    BOOST_REQUIRE(seen.size() == 1u);
    BOOST_TEST(seen[0].author == "progress");
    BOOST_TEST(seen[0].text() == "50%");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(any_tool_tests)

BOOST_AUTO_TEST_CASE(forwards_declaration_and_call) {
    any_tool t = echo_tool{};
    BOOST_TEST(t.name() == "echo");
    BOOST_TEST((t.declaration() == decl("echo", "Echoes its arguments")));
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "echo");
    json::value out = run(t.call(obj(R"({"a":[1,2]})"), ctx));
    BOOST_TEST(out == json::parse(R"({"a":[1,2]})"));
}

BOOST_AUTO_TEST_CASE(copies_share_the_tool) {
    counting_tool c;
    auto copies = c.copies;
    any_tool a = std::move(c);
    BOOST_TEST(*copies == 0);
    any_tool b = a;
    any_tool d = b;
    BOOST_TEST(*copies == 0);
    BOOST_REQUIRE(a.target<counting_tool>() != nullptr);
    BOOST_TEST(a.target<counting_tool>() == d.target<counting_tool>());
    BOOST_TEST(&a.declaration() == &d.declaration());
    BOOST_TEST(a.target<echo_tool>() == nullptr);

    counting_tool e;
    any_tool from_lvalue = e; // one copy into the wrapper, at construction
    BOOST_TEST(*e.copies == 1);
}

BOOST_AUTO_TEST_CASE(wrapping_an_any_tool_does_not_nest) {
    any_tool a = echo_tool{};
    any_tool b(a);
    BOOST_TEST(b.target<echo_tool>() == a.target<echo_tool>());
    BOOST_TEST(b.target<any_tool>() == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(tool_set_tests)

BOOST_AUTO_TEST_CASE(empty_set) {
    tool_set s;
    BOOST_TEST(s.empty());
    BOOST_TEST(s.size() == 0u);
    BOOST_TEST(s.find("echo") == nullptr);
    BOOST_TEST(s.declarations().empty());
    BOOST_TEST(s.names().empty());
    BOOST_TEST((s.begin() == s.end()));
}

BOOST_AUTO_TEST_CASE(keeps_declaration_order_and_finds_by_name) {
    tool_set s = tools(scripted_tool("zeta", "ok"), echo_tool{}, scripted_tool("alpha", "ok"),
                       scripted_tool("mid", "ok"));
    BOOST_TEST(s.size() == 4u);
    std::vector<std::string_view> expected_names{"zeta", "echo", "alpha", "mid"};
    BOOST_TEST(s.names() == expected_names, boost::test_tools::per_element());
    for (std::string_view n : expected_names) {
        BOOST_REQUIRE(s.find(n) != nullptr);
        BOOST_TEST(s.find(n)->name() == n);
        BOOST_TEST(s.contains(n));
    }
    BOOST_TEST(s.find("alph") == nullptr);
    BOOST_TEST(s.find("alphaa") == nullptr);
    BOOST_TEST(s.find("") == nullptr);
    BOOST_TEST(!s.contains("nope"));
    BOOST_TEST(s[1].target<echo_tool>() != nullptr);

    std::vector<tool_declaration> ds = s.declarations();
    BOOST_REQUIRE(ds.size() == 4u);
    BOOST_TEST((ds[0] == decl("zeta")));
    BOOST_TEST((ds[1] == decl("echo", "Echoes its arguments")));
    BOOST_TEST((ds[2] == decl("alpha")));
    BOOST_TEST((ds[3] == decl("mid")));

    std::vector<std::string> iterated;
    for (const any_tool& t : s) iterated.push_back(t.name());
    BOOST_TEST(iterated == (std::vector<std::string>{"zeta", "echo", "alpha", "mid"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(initializer_list_and_add) {
    tool_set s{echo_tool{}, scripted_tool("b", "ok")};
    BOOST_TEST(s.size() == 2u);
    s.add(scripted_tool("a", "ok"));
    BOOST_TEST(s.size() == 3u);
    BOOST_TEST(s.contains("a"));
    BOOST_TEST(s[2].name() == "a");
}

BOOST_AUTO_TEST_CASE(duplicate_names_are_rejected) {
    try {
        tool_set s = tools(echo_tool{}, scripted_tool("x", "ok"), echo_tool{});
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("duplicate tool name 'echo'") != std::string::npos);
    }

    tool_set s{echo_tool{}};
    BOOST_CHECK_THROW(s.add(echo_tool{}), boost::system::system_error);
    BOOST_TEST(s.size() == 1u); // unchanged
    BOOST_TEST(s.names() == (std::vector<std::string_view>{"echo"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_names_are_rejected) {
    for (std::string bad : {std::string(), std::string("has space"), std::string(65, 'x')}) {
        try {
            tool_set s{scripted_tool(bad, "ok")};
            BOOST_FAIL("no exception for '" << bad << "'");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == errc::invalid_argument));
            BOOST_TEST(std::string(e.what()).find("invalid tool name") != std::string::npos);
        }
    }
}

BOOST_AUTO_TEST_CASE(copies_share_tools) {
    tool_set a = tools(echo_tool{});
    tool_set b = a;
    BOOST_TEST(a.find("echo")->target<echo_tool>() == b.find("echo")->target<echo_tool>());
    b.add(scripted_tool("more", "ok"));
    BOOST_TEST(a.size() == 1u);
    BOOST_TEST(b.size() == 2u);
}

BOOST_AUTO_TEST_CASE(many_tools_are_all_found) {
    tool_set s;
    std::vector<std::string> names;
    for (int i = 40; i > 0; --i) names.push_back("t" + std::to_string(i * 7 % 41));
    for (const auto& n : names) s.add(scripted_tool(n, "ok"));
    for (const auto& n : names) {
        BOOST_REQUIRE(s.find(n) != nullptr);
        BOOST_TEST(s.find(n)->name() == n);
    }
    BOOST_TEST(s.find("t0") == nullptr);
    BOOST_TEST(s[0].name() == names[0]);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(run_tool_call_tests)

BOOST_AUTO_TEST_CASE(success_returns_the_result) {
    tool_set s = tools(echo_tool{}, scripted_tool("other", "ok"));
    invocation_context inv(opts());
    tool_call_part c = call_of("echo", R"({"q":"hello","n":2})", "call-7");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST(r.tool_call_id == "call-7");
    BOOST_TEST(r.tool_name == "echo");
    BOOST_TEST(!r.error.has_value());
    BOOST_TEST(r.result == json::parse(R"({"q":"hello","n":2})"));
    BOOST_TEST(ctx.actions().empty());
}

BOOST_AUTO_TEST_CASE(tool_sees_its_call_id) {
    tool_set s = tools(scripted_tool("s", "ok"));
    invocation_context inv(opts());
    tool_call_part c = call_of("s", "{}", "abc");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST(r.result == json::parse(R"({"mode":"ok","args":{},"call_id":"abc"})"));
}

BOOST_AUTO_TEST_CASE(unknown_tool_names_it_and_lists_the_known_ones) {
    tool_set s = tools(echo_tool{}, scripted_tool("search", "ok"));
    invocation_context inv(opts());
    tool_call_part c = call_of("serach", "{}", "c1");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST(r.tool_call_id == "c1");
    BOOST_TEST(r.tool_name == "serach");
    const std::string msg = "unknown tool 'serach'; available tools: echo, search";
    BOOST_TEST((r.error == std::optional<std::string>(msg)));
    BOOST_TEST(r.result == json::value(json::object{{"error", msg}}));
}

BOOST_AUTO_TEST_CASE(a_result_no_store_could_keep_is_an_error_the_model_reads) {
    // echo_tool answers with its arguments, so each case is the result it returns.
    tool_set s = tools(echo_tool{});
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "echo");
    json::value deep = 1;
    for (int i = 0; i < 252; ++i) deep = json::array{std::move(deep)}; // the result is at level 5 of its event
    const std::vector<std::pair<json::object, std::string>> cases = {
        {{{"v", std::numeric_limits<double>::infinity()}}, "number inf is not finite: JSON has no text for it in member \"v\""},
        {{{"a", json::array{1, std::numeric_limits<double>::quiet_NaN()}}}, "number NaN is not finite"},
        {{{"name", "caf\xc3"}}, "string is not valid UTF-8 (byte 0xc3 at offset 3) in member \"name\""},
        {{{"deep", deep}}, "nest deeper than max_json_depth"},
    };
    for (const auto& [result, why] : cases) {
        tool_response_part r = run(run_tool_call(s, "c1", "echo", json::value(result), ctx));
        BOOST_TEST(r.tool_call_id == "c1");
        BOOST_TEST_REQUIRE(r.error.has_value(), why);
        BOOST_TEST(r.error->starts_with("the tool's result cannot be stored: "), *r.error);
        BOOST_TEST(r.error->find(why) != std::string::npos, *r.error);
        BOOST_TEST(r.result.is_object()); // {"error": ...}: storable
    }
    // One level less deep is kept as it is.
    json::value ok = deep.as_array().front();
    tool_response_part r = run(run_tool_call(s, "c2", "echo", json::value(json::object{{"deep", ok}}), ctx));
    BOOST_TEST(!r.error.has_value(), r.error.value_or(""));
}

BOOST_AUTO_TEST_CASE(unknown_tool_in_an_empty_set) {
    tool_set s;
    invocation_context inv(opts());
    tool_call_part c = call_of("anything");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST((r.error == std::optional<std::string>("unknown tool 'anything'; no tools are available")));
}

BOOST_AUTO_TEST_CASE(arguments_that_are_not_an_object) {
    tool_set s = tools(echo_tool{});
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "echo");
    struct kase {
        std::string json;
        std::string expected;
    };
    std::vector<kase> cases{{"[1,2]", "args: expected object, got array"},
                            {"\"{}\"", "args: expected object, got string"},
                            {"null", "args: expected object, got null"},
                            {"3", "args: expected object, got integer"},
                            {"1.5", "args: expected object, got number"},
                            {"true", "args: expected object, got boolean"}};
    for (const auto& k : cases) {
        json::value args = json::parse(k.json);
        tool_response_part r = run(run_tool_call(s, "c1", "echo", std::move(args), ctx));
        BOOST_TEST(r.tool_call_id == "c1");
        BOOST_TEST(r.tool_name == "echo");
        BOOST_TEST((r.error == std::optional<std::string>(k.expected)), k.json);
    }
    // An object through the same overload works.
    json::value ok = json::parse(R"({"a":1})");
    tool_response_part r = run(run_tool_call(s, "c2", "echo", std::move(ok), ctx));
    BOOST_TEST(!r.error.has_value());
    BOOST_TEST(r.result == json::parse(R"({"a":1})"));
    // Unknown tool is reported before the arguments.
    json::value bad = json::parse("[]");
    tool_response_part u = run(run_tool_call(s, "c3", "nope", std::move(bad), ctx));
    BOOST_TEST((u.error == std::optional<std::string>("unknown tool 'nope'; available tools: echo")));
}

BOOST_AUTO_TEST_CASE(thrown_tool_error_becomes_an_error_response_with_details) {
    tool_set s = tools(scripted_tool("quota", "throw_tool_error"));
    invocation_context inv(opts());
    tool_call_part c = call_of("quota", "{}", "c1");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST((r.error == std::optional<std::string>("quota exceeded")));
    BOOST_TEST(r.result == json::parse(R"({"error":"quota exceeded","details":{"hint":"try again"}})"));
    BOOST_TEST(r.tool_call_id == "c1");
}

BOOST_AUTO_TEST_CASE(any_exception_becomes_an_error_response) {
    tool_set s = tools(scripted_tool("rt", "throw_runtime"), scripted_tool("int", "throw_int"));
    invocation_context inv(opts());
    {
        tool_call_part c = call_of("rt");
        tool_context ctx(inv, c);
        tool_response_part r = run(run_tool_call(s, c, ctx));
        BOOST_TEST((r.error == std::optional<std::string>("disk on fire")));
        BOOST_TEST(r.result == json::parse(R"({"error":"disk on fire"})"));
    }
    {
        tool_call_part c = call_of("int");
        tool_context ctx(inv, c);
        tool_response_part r = run(run_tool_call(s, c, ctx));
        BOOST_TEST((r.error == std::optional<std::string>("the tool failed with an unknown exception")));
    }
}

BOOST_AUTO_TEST_CASE(an_error_no_store_could_keep_is_made_storable) {
    // Details with a NaN, or a what() naming a Latin-1 file, once made a response event the
    // stores refused, which ended the turn instead of telling the model.
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "thrower");
    auto answer = [&](std::function<void()> fail) {
        throwing_tool t;
        t.fail = std::move(fail);
        tool_set s = tools(std::move(t));
        return run(run_tool_call(s, "c1", "thrower", json::value(json::object{}), ctx));
    };
    {
        tool_response_part r = answer([] {
            json::object details;
            details["ratio"] = std::numeric_limits<double>::quiet_NaN();
            throw tool_error("quota exceeded", errc::busy, std::move(details));
        });
        BOOST_TEST(store_fault(r).empty(), store_fault(r));
        BOOST_TEST_REQUIRE(r.error.has_value());
        BOOST_TEST(r.error->starts_with("quota exceeded (the tool's error details were left out"), *r.error);
        BOOST_TEST(r.error->find("number NaN is not finite") != std::string::npos, *r.error);
        BOOST_TEST(r.error->find("\"ratio\"") != std::string::npos, *r.error);
        BOOST_TEST(!r.result.as_object().contains("details"));
    }
    {
        tool_response_part r = answer([] { throw std::runtime_error("cannot open caf\xe9.txt"); });
        BOOST_TEST(store_fault(r).empty(), store_fault(r));
        BOOST_TEST((r.error == std::optional<std::string>("cannot open caf\xEF\xBF\xBD.txt")));
        BOOST_TEST(r.result == json::value(json::object{{"error", "cannot open caf\xEF\xBF\xBD.txt"}}));
    }
    {
        // A stray continuation byte and a cut sequence each become one U+FFFD; the valid é
        // before them stays. A key that is not UTF-8 drops the details; storable ones stay.
        json::object bad_key;
        bad_key["caf\xe9"] = 1;
        tool_response_part r = answer([&] { throw tool_error("\xc3\xa9\x80 \xc3", errc::tool_error, json::object{}); });
        BOOST_TEST(store_fault(r).empty(), store_fault(r));
        BOOST_TEST((r.error == std::optional<std::string>("\xc3\xa9\xEF\xBF\xBD \xEF\xBF\xBD")));
        tool_response_part k = answer([&] { throw tool_error("bad", errc::tool_error, bad_key); });
        BOOST_TEST(store_fault(k).empty(), store_fault(k));
        BOOST_TEST(k.error->find("string is not valid UTF-8") != std::string::npos, *k.error);
        json::object ok;
        ok["hint"] = "caf\xc3\xa9";
        tool_response_part g = answer([&] { throw tool_error("bad", errc::tool_error, ok); });
        BOOST_TEST((g.error == std::optional<std::string>("bad")));
        BOOST_TEST(g.result == json::value(json::object{{"error", "bad"}, {"details", ok}}));
    }
}

BOOST_AUTO_TEST_CASE(state_writes_are_recorded_as_a_delta) {
    tool_set s = tools(scripted_tool("writer", "state"));
    invocation_context inv(opts());
    tool_call_part c = call_of("writer");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST(!r.error.has_value());
    BOOST_TEST(*inv.state().find("counter") == json::value(7));
    event_actions a = ctx.take_actions();
    BOOST_TEST(a.state_delta == obj(R"({"counter":7,"temp:scratch":"x"})"));

    // The agent merges them into the TOOL_RESPONSE event.
    event ev = event::make(event_type::tool_response, "assistant");
    ev.content.parts.emplace_back(std::move(r));
    ev.actions.merge(std::move(a));
    BOOST_TEST(ev.actions.state_delta == obj(R"({"counter":7,"temp:scratch":"x"})"));
}

BOOST_AUTO_TEST_CASE(state_writes_before_a_failure_stay_recorded) {
    tool_set s = tools(scripted_tool("writer", "state_then_throw"));
    invocation_context inv(opts());
    tool_call_part c = call_of("writer");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST((r.error == std::optional<std::string>("after writing")));
    BOOST_TEST(*inv.state().find("counter") == json::value(7));
    BOOST_TEST(ctx.actions().state_delta == obj(R"({"counter":7,"temp:scratch":"x"})"));
}

BOOST_AUTO_TEST_CASE(actions_set_by_the_tool_stay_in_its_context) {
    tool_set s = tools(scripted_tool("esc", "escalate"));
    invocation_context inv(opts());
    tool_call_part c = call_of("esc");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST(!r.error.has_value());
    BOOST_TEST((ctx.actions().escalate == std::optional<bool>(true)));
    BOOST_TEST((ctx.actions().skip_summarization == std::optional<bool>(true)));
    BOOST_TEST((ctx.actions().transfer_to_agent == std::optional<std::string>("other")));
}

BOOST_AUTO_TEST_CASE(calls_run_concurrently_when_spawned) {
    scripted_tool sleeper("sleeper", "sleep");
    auto max_active = sleeper.max_active;
    tool_set s = tools(sleeper);
    invocation_context inv(opts());
    std::vector<tool_call_part> calls{call_of("sleeper", R"({"i":0})", "c0"), call_of("sleeper", R"({"i":1})", "c1"),
                                      call_of("sleeper", R"({"i":2})", "c2")};
    std::vector<std::unique_ptr<tool_context>> ctxs;
    for (const auto& c : calls) ctxs.push_back(std::make_unique<tool_context>(inv, c));
    std::vector<std::optional<tool_response_part>> out(calls.size());

    asio::io_context io;
    auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < calls.size(); ++i)
        asio::co_spawn(io, run_tool_call(s, calls[i], *ctxs[i]), [&out, i](std::exception_ptr e, tool_response_part r) {
            BOOST_TEST(!e);
            out[i] = std::move(r);
        });
    io.run();
    auto elapsed = std::chrono::steady_clock::now() - start;
    BOOST_TEST(*max_active == 3);
    BOOST_TEST(elapsed < std::chrono::milliseconds(25)); // three 10 ms calls overlapped
    for (std::size_t i = 0; i < calls.size(); ++i) {
        BOOST_REQUIRE(out[i].has_value());
        BOOST_TEST(out[i]->tool_call_id == "c" + std::to_string(i));
        BOOST_TEST(out[i]->result.as_object().at("args") == json::value(json::object{{"i", static_cast<int>(i)}}));
    }
}

BOOST_AUTO_TEST_CASE(cancellation_propagates_instead_of_becoming_a_response) {
    tool_set s = tools(scripted_tool("slow", "forever"));
    invocation_context inv(opts());
    tool_call_part c = call_of("slow");
    tool_context ctx(inv, c);

    asio::io_context io;
    asio::cancellation_signal sig;
    std::exception_ptr ep;
    bool done = false;
    bool got_response = false;
    asio::co_spawn(io, run_tool_call(s, c, ctx),
                   asio::bind_cancellation_slot(sig.slot(), [&](std::exception_ptr e, tool_response_part) {
                       done = true;
                       ep = e;
                       got_response = !e;
                   }));
    asio::steady_timer t(io, std::chrono::milliseconds(5));
    t.async_wait([&](boost::system::error_code) { sig.emit(asio::cancellation_type::terminal); });
    io.run();
    BOOST_TEST(done);
    BOOST_TEST(!got_response);
    BOOST_REQUIRE(ep);
    try {
        std::rethrow_exception(ep);
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == asio::error::operation_aborted));
    }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// Synchronous tools: call_now answers at once, with the responses run_tool_call gives.
BOOST_AUTO_TEST_SUITE(synchronous_tools)

/// scripted_tool's synchronous modes, as a synchronous_tool: call() is call_now() in a
/// coroutine, so the two paths can be compared.
struct sync_scripted_tool {
    tool_declaration d;
    std::string mode;
    sync_scripted_tool(std::string name, std::string m) : d(decl(std::move(name))), mode(std::move(m)) {}
    const tool_declaration& declaration() const noexcept { return d; }
    json::value call_now(json::object args, tool_context& ctx) const {
        if (mode == "throw_tool_error") throw tool_error("quota exceeded", errc::busy, obj(R"({"hint":"try again"})"));
        if (mode == "throw_runtime") throw std::runtime_error("disk on fire");
        if (mode == "throw_empty") throw std::runtime_error("");
        if (mode == "throw_int") throw 42;
        if (mode == "state") ctx.state()["counter"] = json::value(7);
        json::object out;
        out["mode"] = mode;
        out["args"] = std::move(args);
        out["call_id"] = ctx.function_call_id();
        return out;
    }
    asio::awaitable<json::value> call(json::object args, tool_context& ctx) const {
        co_return call_now(std::move(args), ctx);
    }
};

static_assert(synchronous_tool<sync_scripted_tool>);
static_assert(!synchronous_tool<echo_tool>);
static_assert(!synchronous_tool<scripted_tool>);
static_assert(synchronous_tool<any_tool>); // at run time: any_tool::synchronous()

BOOST_AUTO_TEST_CASE(any_tool_says_whether_its_tool_is_synchronous) {
    any_tool s(sync_scripted_tool("s", "ok"));
    any_tool e(echo_tool{});
    BOOST_TEST(s.synchronous());
    BOOST_TEST(!e.synchronous());
    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "s");
    json::value v = s.call_now(obj(R"({"a":1})"), ctx);
    BOOST_TEST(v == json::parse(R"({"mode":"ok","args":{"a":1},"call_id":"c1"})"));
    try {
        (void)e.call_now(obj("{}"), ctx);
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& x) {
        BOOST_TEST((x.code() == errc::invalid_argument));
        BOOST_TEST(std::string(x.what()).find("tool 'echo' is not synchronous") != std::string::npos);
    }
}

// Every outcome of a call, through run_tool_call_now and through the coroutine: the same
// response, and the same state writes.
BOOST_AUTO_TEST_CASE(run_tool_call_now_answers_as_run_tool_call_does) {
    tool_set s = tools(sync_scripted_tool("ok", "ok"), sync_scripted_tool("quota", "throw_tool_error"),
                       sync_scripted_tool("rt", "throw_runtime"), sync_scripted_tool("empty", "throw_empty"),
                       sync_scripted_tool("int", "throw_int"), sync_scripted_tool("writer", "state"));
    struct kase {
        std::string tool;
        std::string args;
        std::string expected_error; // "" for a result
    };
    std::vector<kase> cases{
        {"ok", R"({"x":[1,2]})", ""},
        {"quota", "{}", "quota exceeded"},
        {"rt", "{}", "disk on fire"},
        {"empty", "{}", "the tool failed"},
        {"int", "{}", "the tool failed with an unknown exception"},
        {"writer", R"({"n":1})", ""},
        {"ok", "[1]", "args: expected object, got array"},
        {"ok", "null", "args: expected object, got null"},
    };
    for (const auto& k : cases) {
        invocation_context inv_now(opts());
        invocation_context inv_co(opts());
        tool_context ctx_now(inv_now, "c1", k.tool);
        tool_context ctx_co(inv_co, "c1", k.tool);
        const any_tool* t = s.find(k.tool);
        BOOST_TEST_REQUIRE(t);
        BOOST_TEST_REQUIRE(t->synchronous());
        tool_response_part now = detail::run_tool_call_now(s, *t, "c1", k.tool, json::parse(k.args), ctx_now);
        tool_response_part co = run(run_tool_call(s, "c1", k.tool, json::parse(k.args), ctx_co));
        BOOST_TEST((now == co), k.tool << " " << k.args);
        BOOST_TEST(now.tool_call_id == "c1");
        BOOST_TEST(now.tool_name == k.tool);
        if (k.expected_error.empty()) {
            BOOST_TEST(!now.error.has_value(), k.tool);
        } else {
            BOOST_TEST((now.error == std::optional<std::string>(k.expected_error)), k.tool << " " << k.args);
        }
        event_actions a_now = ctx_now.take_actions();
        event_actions a_co = ctx_co.take_actions();
        BOOST_TEST((a_now == a_co), k.tool);
    }
    // A tool_error's details reach the model, as through the coroutine.
    invocation_context inv(opts());
    tool_context ctx(inv, "c9", "quota");
    tool_response_part r = detail::run_tool_call_now(s, *s.find("quota"), "c9", "quota", json::object{}, ctx);
    BOOST_TEST(r.result == json::parse(R"({"error":"quota exceeded","details":{"hint":"try again"}})"));
    // State written by the tool is in the invocation's state and the call's delta.
    invocation_context inv2(opts());
    tool_context ctx2(inv2, "c2", "writer");
    (void)detail::run_tool_call_now(s, *s.find("writer"), "c2", "writer", json::object{}, ctx2);
    BOOST_TEST(*inv2.state().find("counter") == json::value(7));
    BOOST_TEST(ctx2.take_actions().state_delta == obj(R"({"counter":7})"));
}

BOOST_AUTO_TEST_SUITE_END()
