// compaction/obligations.hpp: open calls, confirmations and long-running calls block a
// compaction; dead calls stop blocking when their invocation is over.
#include <libretto/compaction/obligations.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace {

namespace lb = libretto;
namespace json = boost::json;

// A tiny session builder: events get sequences 1, 2, ... in order.
struct script {
    std::vector<lb::event> events;

    lb::event& add(std::string inv, std::string author = "agent") {
        lb::event e;
        e.sequence = static_cast<std::int64_t>(events.size()) + 1;
        e.invocation_id = std::move(inv);
        e.author = std::move(author);
        events.push_back(std::move(e));
        return events.back();
    }
    script& user(std::string inv, std::string text) {
        add(std::move(inv), "user").content.parts.push_back(lb::text_part{std::move(text)});
        return *this;
    }
    script& say(std::string inv, std::string text) {
        add(std::move(inv)).content.parts.push_back(lb::text_part{std::move(text)});
        return *this;
    }
    script& call(std::string inv, std::string id, std::string tool = "lookup", json::object meta = {}) {
        lb::tool_call_part c;
        c.tool_call_id = std::move(id);
        c.tool_name = std::move(tool);
        c.metadata = std::move(meta);
        add(std::move(inv)).content.parts.push_back(std::move(c));
        return *this;
    }
    script& reply(std::string inv, std::string id, json::object meta = {}) {
        lb::tool_response_part r;
        r.tool_call_id = std::move(id);
        r.tool_name = "lookup";
        r.result = "ok";
        r.metadata = std::move(meta);
        add(std::move(inv)).content.parts.push_back(std::move(r));
        return *this;
    }
    std::ptrdiff_t last_clear(bool over = true) const { return lb::last_clear_index(events, events.size(), over); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(obligations)

BOOST_AUTO_TEST_CASE(a_call_blocks_until_its_response) {
    script s;
    s.user("i1", "hi").call("i1", "c1").say("i1", "thinking").reply("i1", "c1").say("i1", "done");
    lb::obligations_tracker t;
    std::vector<bool> clear_after;
    for (const auto& e : s.events) {
        t.observe(e);
        clear_after.push_back(t.clear());
    }
    BOOST_TEST(clear_after == (std::vector<bool>{true, false, false, true, true}));
    BOOST_TEST(s.last_clear() == 4);
    // A limit before the response: the last clear point is before the call.
    BOOST_TEST(lb::last_clear_index(s.events, 3) == 0);
}

BOOST_AUTO_TEST_CASE(several_calls_in_one_event_all_need_answers) {
    script s;
    s.user("i1", "go");
    auto& e = s.add("i1");
    e.content.parts.push_back(lb::tool_call_part{"a", "t", {}, {}});
    e.content.parts.push_back(lb::tool_call_part{"b", "t", {}, {}});
    s.reply("i1", "b").reply("i1", "a").say("i1", "ok");
    lb::obligations_tracker t;
    for (int i = 0; i < 3; ++i) t.observe(s.events[static_cast<std::size_t>(i)]);
    BOOST_TEST(t.open().size() == 1u);
    BOOST_TEST(t.open()[0].call_id == "a");
    BOOST_TEST(t.open()[0].sequence == 2);
    BOOST_TEST(s.last_clear() == 4);
}

BOOST_AUTO_TEST_CASE(a_dead_call_stops_blocking_after_its_invocation) {
    // ADK #7236: a call whose response never came, then 50 more turns.
    script s;
    s.user("i0", "start").call("i0", "orphan").say("i0", "(crashed before the tool answered)");
    for (int turn = 1; turn <= 50; ++turn) {
        const std::string inv = "i" + std::to_string(turn);
        s.user(inv, "turn " + std::to_string(turn)).call(inv, "c" + std::to_string(turn)).reply(inv, "c" + std::to_string(turn)).say(inv, "answer");
    }
    // Inside invocation i0 the orphan blocks; from its end on, it does not.
    BOOST_TEST(lb::last_clear_index(s.events, 2) == 0);
    BOOST_TEST(lb::last_clear_index(s.events, 3, false) == 2); // i0's last event: i1 follows, so i0 is over
    BOOST_TEST(s.last_clear() == static_cast<std::ptrdiff_t>(s.events.size()) - 1);
    lb::obligations_tracker t;
    for (const auto& e : s.events) t.observe(e);
    BOOST_TEST(t.clear());
}

BOOST_AUTO_TEST_CASE(the_newest_invocation_is_over_only_when_told) {
    script s;
    s.user("i1", "go").call("i1", "c1");
    BOOST_TEST(s.last_clear(false) == 0); // still running: the call may get its answer
    BOOST_TEST(s.last_clear(true) == 1);  // the turn ended without one: dead
}

BOOST_AUTO_TEST_CASE(a_long_running_call_never_dies_and_ignores_intermediate_responses) {
    json::object lr{{"long_running", true}};
    json::object progress{{"intermediate", true}};
    script s;
    s.user("i1", "start the job").call("i1", "job", "run_job", lr).reply("i1", "job", progress).say("i1", "started");
    for (int turn = 2; turn <= 5; ++turn) s.user("i" + std::to_string(turn), "still there?").say("i" + std::to_string(turn), "yes");
    // ADK #5602: the intermediate response shares the id; the call stays open.
    BOOST_TEST(s.last_clear() == 0);
    lb::obligations_tracker t;
    for (const auto& e : s.events) t.observe(e);
    BOOST_REQUIRE(t.open().size() == 1u);
    BOOST_TEST((t.open()[0].kind == lb::obligation_kind::long_running));
    // The final response closes it.
    s.reply("i6", "job").say("i6", "job done");
    BOOST_TEST(s.last_clear() == static_cast<std::ptrdiff_t>(s.events.size()) - 1);
}

BOOST_AUTO_TEST_CASE(long_running_ids_may_be_listed_on_the_event) {
    script s;
    s.user("i1", "go").call("i1", "lr1", "slow").say("i1", "waiting");
    s.events[1].metadata["long_running_tool_ids"] = json::array{"other", "lr1"};
    s.user("i2", "next").say("i2", "ok");
    BOOST_TEST(s.last_clear() == 0);
    BOOST_TEST(lb::is_long_running_call(s.events[1], std::get<lb::tool_call_part>(s.events[1].content.parts[0])));
}

BOOST_AUTO_TEST_CASE(a_pending_confirmation_blocks_across_invocations) {
    // ADK #4740: a confirmation request compacted away breaks the user's answer.
    script s;
    s.user("i1", "delete it").call("i1", "conf1", std::string(lb::confirmation_tool_name)).say("i1", "please confirm");
    s.user("i2", "what was that?").say("i2", "a confirmation request");
    BOOST_TEST(s.last_clear() == 0);
    s.reply("i3", "conf1").say("i3", "deleted");
    BOOST_TEST(s.last_clear() == static_cast<std::ptrdiff_t>(s.events.size()) - 1);
}

BOOST_AUTO_TEST_CASE(responses_without_calls_and_empty_input_are_harmless) {
    script s;
    s.reply("i1", "never-called").say("i1", "hm");
    BOOST_TEST(s.last_clear() == 1);
    std::vector<lb::event> none;
    BOOST_TEST(lb::last_clear_index(none, 10) == -1);
    BOOST_TEST(lb::last_clear_index(s.events, 0) == -1);
    lb::obligations_tracker t;
    BOOST_TEST(t.clear());
    s.call("i1", "x");
    t.observe(s.events.back());
    BOOST_TEST(!t.clear());
    t.reset();
    BOOST_TEST(t.clear());
}

BOOST_AUTO_TEST_CASE(a_call_at_the_start_blocks_everything_while_its_invocation_runs) {
    script s;
    s.call("i1", "c").say("i1", "a").say("i1", "b");
    BOOST_TEST(s.last_clear(false) == -1);
}

BOOST_AUTO_TEST_SUITE_END()
