// char_budget, sliding_window, token_budget and first_of: which range each plans.
#include <libretto/compaction/char_budget.hpp>
#include <libretto/compaction/first_of.hpp>
#include <libretto/compaction/sliding_window.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/compaction/token_budget.hpp>

#include <limits>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

namespace {

namespace lb = libretto;
namespace json = boost::json;

// Builds a session; events get sequences 1, 2, ...
struct builder {
    lb::session s;

    lb::event& add(std::string inv, lb::event_type t, std::string author) {
        lb::event e;
        e.sequence = static_cast<std::int64_t>(s.events.size()) + 1;
        e.timestamp = 1000.0 + static_cast<double>(e.sequence);
        e.invocation_id = std::move(inv);
        e.type = t;
        e.author = std::move(author);
        s.events.push_back(std::move(e));
        s.last_sequence = s.events.back().sequence;
        return s.events.modify_back();
    }
    builder& user(std::string inv, std::string text) {
        add(std::move(inv), lb::event_type::user_message, "user").content.parts.push_back(lb::text_part{std::move(text)});
        return *this;
    }
    builder& model(std::string inv, std::string text, std::optional<lb::usage> u = std::nullopt) {
        auto& e = add(std::move(inv), lb::event_type::agent_message, "agent");
        e.content.parts.push_back(lb::text_part{std::move(text)});
        e.usage = std::move(u);
        return *this;
    }
    builder& call(std::string inv, std::string id, json::object meta = {}) {
        auto& e = add(std::move(inv), lb::event_type::agent_message, "agent");
        e.content.parts.push_back(lb::tool_call_part{std::move(id), "lookup", json::object{{"q", "x"}}, std::move(meta)});
        return *this;
    }
    builder& reply(std::string inv, std::string id, std::string result = "ok") {
        auto& e = add(std::move(inv), lb::event_type::tool_response, "agent");
        e.content.parts.push_back(lb::tool_response_part{std::move(id), "lookup", json::value(std::move(result)), {}, {}});
        return *this;
    }
    // Appends the compaction event a runner would append for `p`.
    builder& compact(const lb::compaction_plan& p, std::string summary = "summary", std::optional<lb::usage> u = std::nullopt) {
        auto& e = add("compaction", lb::event_type::agent_message, "agent");
        lb::event_compaction c;
        c.first_sequence = p.first_sequence;
        c.last_sequence = p.last_sequence;
        c.summary = std::move(summary);
        e.actions.compaction = c;
        e.usage = std::move(u);
        return *this;
    }
    // A whole turn: user message and one reply.
    builder& turn(std::string inv, std::size_t chars = 10) {
        return user(inv, std::string(chars, 'u')).model(inv, std::string(chars, 'm'));
    }
    lb::session_view view() const { return lb::session_view{s}; }
};

lb::compaction_plan P(std::int64_t a, std::int64_t b) { return lb::compaction_plan{a, b}; }

} // namespace

BOOST_AUTO_TEST_SUITE(sliding_window_strategy)

BOOST_AUTO_TEST_CASE(the_documented_example_interval_2_overlap_1) {
    // ADK's docstring: invocations 1..4 → CompactedEvent(inv=[1,2]) after 2, then [2,4] after 4.
    lb::sliding_window sw{.compaction_interval = 2, .overlap_size = 1};
    builder b;
    b.turn("1"); // events 1, 2
    BOOST_TEST(!sw.plan(b.view()).has_value());
    b.turn("2"); // 3, 4
    auto p1 = sw.plan(b.view());
    BOOST_REQUIRE(p1);
    BOOST_TEST((*p1 == P(1, 4))); // invocations 1..2
    b.compact(*p1);               // 5
    BOOST_TEST(!sw.plan(b.view()).has_value());
    b.turn("3"); // 6, 7
    BOOST_TEST(!sw.plan(b.view()).has_value()); // one new invocation: below the interval
    b.turn("4"); // 8, 9
    auto p2 = sw.plan(b.view());
    BOOST_REQUIRE(p2);
    BOOST_TEST((*p2 == P(3, 9))); // invocations 2..4: from inv 2's first event to inv 4's last
    b.compact(*p2);
    BOOST_TEST(!sw.plan(b.view()).has_value());
}

BOOST_AUTO_TEST_CASE(overlap_zero_and_larger_intervals) {
    lb::sliding_window sw{.compaction_interval = 3, .overlap_size = 0};
    builder b;
    b.turn("a").turn("b");
    BOOST_TEST(!sw.plan(b.view()).has_value());
    b.turn("c");
    auto p = sw.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 6)));
    b.compact(*p).turn("d").turn("e").turn("f");
    p = sw.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(8, 13))); // no overlap: d..f only
    lb::sliding_window never{.compaction_interval = 0, .overlap_size = 0};
    BOOST_TEST(!never.plan(b.view()).has_value());
}

BOOST_AUTO_TEST_CASE(a_pending_long_running_call_ends_the_range_before_it) {
    lb::sliding_window sw{.compaction_interval = 2, .overlap_size = 0};
    builder b;
    b.turn("1");                                                   // 1, 2
    b.user("2", "start the job").call("2", "job", {{"long_running", true}}); // 3, 4
    auto p = sw.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 3))); // the call (4) stays raw
}

BOOST_AUTO_TEST_CASE(a_dead_call_does_not_stop_compaction_for_50_turns) {
    lb::sliding_window sw{.compaction_interval = 2, .overlap_size = 0};
    builder b;
    b.user("0", "go").call("0", "orphan"); // the tool never answered; the turn ended
    int compactions = 0;
    for (int t = 1; t <= 50; ++t) {
        b.turn(std::to_string(t));
        if (auto p = sw.plan(b.view())) {
            b.compact(*p);
            ++compactions;
        }
    }
    BOOST_TEST(compactions == 25);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(char_budget_strategy)

BOOST_AUTO_TEST_CASE(keeps_the_retention_and_summarises_the_rest_once) {
    lb::char_budget cb{.threshold_chars = 100, .retention_chars = 40};
    builder b;
    b.turn("1", 10).turn("2", 10); // 40 chars
    BOOST_TEST(!cb.plan(b.view()).has_value());
    b.turn("3", 10).turn("4", 10).turn("5", 10).turn("6", 10); // 120 chars in 12 events
    auto p = cb.plan(b.view());
    BOOST_REQUIRE(p);
    // The newest 4 events (40 chars) stay; 1..8 are summarised.
    BOOST_TEST((*p == P(1, 8)));
    b.compact(*p);
    BOOST_TEST(!cb.plan(b.view()).has_value()); // 40 raw chars left
    b.turn("7", 20).turn("8", 20);              // 120 raw chars after the compaction
    p = cb.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST(p->first_sequence == 9); // not re-summarising 1..8
    BOOST_TEST(p->last_sequence == 15); // 16 and 17 (40 chars) stay
}

BOOST_AUTO_TEST_CASE(an_unanswered_call_in_the_range_is_not_cut) {
    lb::char_budget cb{.threshold_chars = 50, .retention_chars = 10};
    builder b;
    b.user("1", std::string(30, 'a')).call("1", "c1").model("1", std::string(30, 'b')).reply("1", "c1").model("1", std::string(20, 'z'));
    // Retention keeps event 5; the range 1..4 holds the call and its response: fine.
    auto p = cb.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 4)));
    // Without the response yet (the invocation still running? no: plans run after a turn,
    // so an unanswered ordinary call is dead) — a long-running one blocks.
    builder c;
    c.user("1", std::string(30, 'a')).call("1", "job", {{"long_running", true}}).model("1", std::string(60, 'b'));
    p = cb.plan(c.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 1)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(the_size_estimates_count_what_a_model_reads) {
    // approx_json_chars: exact for ASCII strings without escapes; numbers count 8.
    BOOST_TEST(lb::approx_json_chars(json::value("abc")) == 5u);                       // "abc"
    BOOST_TEST(lb::approx_json_chars(json::value(nullptr)) == 4u);
    BOOST_TEST(lb::approx_json_chars(json::value(true)) == 5u);
    BOOST_TEST(lb::approx_json_chars(json::value(12)) == 8u);
    BOOST_TEST(lb::approx_json_chars(json::object{}) == 2u);                            // {}
    BOOST_TEST(lb::approx_json_chars(json::object{{"k", "v"}}) == 2u + 1u + 4u + 3u);  // {"k":"v"}
    BOOST_TEST(lb::approx_json_chars(json::value(json::array{1, "x"})) == 2u + 9u + 4u);
    // event_chars: text, thinking, tool name and arguments, results and errors, data; a
    // file 4800; a compaction its summary.
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("hello"));
    BOOST_TEST(lb::event_chars(e) == 5u);
    e.content.parts.emplace_back(lb::thinking_part{"hmm"});
    e.content.parts.emplace_back(lb::tool_call_part{"c1", "add", {{"a", 1}}, {}});
    BOOST_TEST(lb::event_chars(e) == 5u + 3u + 3u + (2u + 1u + 4u + 8u));
    lb::event r = lb::event::make(lb::event_type::tool_response, "a", lb::content{});
    lb::tool_response_part failed{"c1", "add", json::value(nullptr), {}, {}};
    failed.error = std::string("boom");
    r.content.parts.emplace_back(failed);
    BOOST_TEST(lb::event_chars(r) == 4u + 4u);
    lb::event c = lb::event::make(lb::event_type::agent_message, "compaction", lb::content{});
    c.actions.compaction = lb::event_compaction{1, 2, 0, 0, "sum", 2};
    BOOST_TEST(lb::event_chars(c) == 3u);
    BOOST_TEST(lb::event_chars(lb::event{}) == 0u);
    // estimate_tokens: characters / 4 rounded up, without wrapping at the top.
    BOOST_TEST(lb::estimate_tokens(0) == 0);
    BOOST_TEST(lb::estimate_tokens(1) == 1);
    BOOST_TEST(lb::estimate_tokens(4) == 1);
    BOOST_TEST(lb::estimate_tokens(5) == 2);
    constexpr auto max = std::numeric_limits<std::size_t>::max();
    BOOST_TEST(lb::estimate_tokens(max) == static_cast<std::int64_t>(max / 4 + 1)); // (max + 3) / 4 wrapped to 0
    BOOST_TEST(lb::estimate_tokens(max - 1) > 0);
    BOOST_TEST(lb::event_tokens(e) == lb::estimate_tokens(lb::event_chars(e)));
}

BOOST_AUTO_TEST_SUITE(token_budget_strategy)

BOOST_AUTO_TEST_CASE(triggers_on_reported_usage_strictly_above_the_budget) {
    lb::token_budget tb{.context_window = 1000, .reserve_tokens = 200, .keep_recent_tokens = 10};
    builder b;
    b.turn("1", 40).user("2", std::string(40, 'q')).model("2", "answer", lb::usage{790, 10, "m"});
    BOOST_TEST(tb.context_tokens(b.s.events) == 800);
    BOOST_TEST(!tb.plan(b.view()).has_value()); // 800 is not above 1000 - 200
    b.user("3", std::string(4, 'x'));            // one more token estimated after the usage
    BOOST_TEST(tb.context_tokens(b.s.events) == 801);
    auto p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    // Keep ≥ 10 tokens: events 5 (1 token), 4 (2) and 3 (10) → summarise 1..2.
    BOOST_TEST((*p == P(1, 2)));
}

BOOST_AUTO_TEST_CASE(a_budget_that_cannot_hold_is_refused_naming_the_member) {
    builder b;
    b.turn("1", 40).user("2", std::string(40, 'q'));
    auto refused = [&](const lb::token_budget& tb, const std::string& why) {
        try {
            (void)tb.plan(b.view());
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == lb::errc::invalid_argument);
            BOOST_TEST(std::string(e.what()).find(why) != std::string::npos, e.what());
            return;
        }
        BOOST_ERROR("no refusal: " + why);
    };
    // The default reserve with a small window would compact on every turn.
    refused({.context_window = 8000}, "token_budget: reserve_tokens (16384) leaves no room in context_window (8000)");
    refused({.context_window = 100, .reserve_tokens = 100}, "leaves no room");
    refused({.context_window = -1, .reserve_tokens = 0}, "context_window is -1, below 0");
    refused({.context_window = 100, .reserve_tokens = -5}, "reserve_tokens is -5, below 0");
    refused({.context_window = 100, .reserve_tokens = 0, .keep_recent_tokens = -1}, "keep_recent_tokens is -1, below 0");
    // Keeping a window's worth raw: the model would overflow before compaction made room.
    refused({.context_window = 32'000, .keep_recent_tokens = 32'000},
            "token_budget: keep_recent_tokens (32000) is not below context_window (32000)");
    refused({.context_window = 1000, .reserve_tokens = 0, .keep_recent_tokens = 5000}, "is not below context_window");
    // A window of 32,000 with the default reserve and keep (more than the window minus the
    // reserve, less than the window): it compacts once the kept tail outgrows 20,000 tokens.
    BOOST_CHECK_NO_THROW(lb::token_budget{.context_window = 32'000}.check());
    // The edges hold: one token of room, and nothing kept raw.
    const lb::token_budget edge{.context_window = 101, .reserve_tokens = 100, .keep_recent_tokens = 0};
    BOOST_CHECK_NO_THROW(edge.check());
    BOOST_TEST(edge.plan(b.view()).has_value());
}

BOOST_AUTO_TEST_CASE(usage_near_int64_max_saturates_instead_of_turning_negative) {
    // A provider's counts are read as they come (each up to INT64_MAX): their sum with the
    // estimate after them saturates, so the strategy still sees a context over its budget.
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    lb::token_budget tb{.context_window = 1000, .reserve_tokens = 200, .keep_recent_tokens = 10};
    builder b;
    b.turn("1", 40).user("2", std::string(40, 'q')).model("2", "answer", lb::usage{max, max, "m"});
    BOOST_TEST(tb.context_tokens(b.s.events) == max);
    b.user("3", std::string(400, 'x'));
    BOOST_TEST(tb.context_tokens(b.s.events) == max);
    BOOST_TEST(tb.plan(b.view()).has_value());
    // add_usage (a summarizer chain's spent tokens) saturates the same way.
    std::optional<lb::usage> total = lb::usage{max - 1, 5, ""};
    lb::add_usage(total, lb::usage{7, max, "m2"});
    BOOST_TEST(total->input_tokens == max);
    BOOST_TEST(total->output_tokens == max);
    BOOST_TEST(total->model_version == "m2");
    lb::add_usage(total, lb::usage{-3, 0, ""});
    BOOST_TEST(total->input_tokens == max - 3);
}

BOOST_AUTO_TEST_CASE(estimates_without_usage) {
    lb::token_budget tb{.context_window = 100, .reserve_tokens = 50, .keep_recent_tokens = 20};
    builder b;
    for (int i = 0; i < 5; ++i) b.turn(std::to_string(i), 20); // 10 events of 5 tokens
    BOOST_TEST(tb.context_tokens(b.s.events) == 50);
    BOOST_TEST(!tb.plan(b.view()).has_value());
    b.turn("5", 20);
    auto p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 8))); // the newest 4 events (20 tokens) stay
}

BOOST_AUTO_TEST_CASE(the_kept_tail_never_starts_at_a_tool_result) {
    lb::token_budget tb{.context_window = 100, .reserve_tokens = 0, .keep_recent_tokens = 3};
    builder b;
    b.user("1", std::string(400, 'u')).call("1", "c1").reply("1", "c1", std::string(8, 'r')).model("1", "ok");
    // Walking back: "ok" (1 token), the reply (3 tokens) → the tail would start at the
    // reply; the cut moves back to its call, so only the user message is summarised.
    auto p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 1)));
    // pi's cut-point rule in the other direction: a response whose call is kept stays.
    builder c;
    c.user("1", std::string(400, 'u')).model("1", "x").call("1", "c1").reply("1", "c1", std::string(40, 'r'));
    p = tb.plan(c.view());
    BOOST_REQUIRE(p);
    BOOST_TEST(p->last_sequence <= 2); // the call (3) and its reply (4) are not separated
}

BOOST_AUTO_TEST_CASE(a_pending_long_running_call_is_never_compacted_away) {
    lb::token_budget tb{.context_window = 100, .reserve_tokens = 0, .keep_recent_tokens = 1};
    builder b;
    b.user("1", "start").call("1", "job", {{"long_running", true}});
    for (int t = 2; t < 10; ++t) b.turn(std::to_string(t), 100);
    auto p = tb.plan(b.view());
    // Only the user message before the call may be summarised.
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 1)));
    b.compact(*p);
    BOOST_TEST(!tb.plan(b.view()).has_value()); // the call still blocks; nothing new fits
}

BOOST_AUTO_TEST_CASE(rolling_summaries_subsume_the_previous_one) {
    lb::token_budget tb{.context_window = 100, .reserve_tokens = 0, .keep_recent_tokens = 10};
    builder b;
    for (int i = 0; i < 6; ++i) b.turn(std::to_string(i), 40); // 12 events of 10 tokens
    auto p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 11)));
    b.compact(*p, "first summary");
    BOOST_TEST(!tb.plan(b.view()).has_value()); // 2 + 10 tokens
    for (int i = 6; i < 12; ++i) b.turn(std::to_string(i), 40);
    p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    BOOST_TEST(p->first_sequence == 1); // the new summary covers (and replaces) the old range
    BOOST_TEST(p->last_sequence == 24);
}

BOOST_AUTO_TEST_CASE(the_summarizers_own_usage_does_not_retrigger) {
    lb::token_budget tb{.context_window = 1000, .reserve_tokens = 0, .keep_recent_tokens = 5};
    builder b;
    b.turn("1", 100).turn("2", 100);
    b.model("2", "big", lb::usage{5000, 10, "m"});
    auto p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    b.compact(*p, "short", lb::usage{90'000, 500, "summarizer"}); // the summarizer's call was big
    BOOST_TEST(tb.context_tokens(b.s.events) < 1000);
    BOOST_TEST(!tb.plan(b.view()).has_value());
    // A usage reported before the compaction is stale and not used either.
    BOOST_TEST(tb.context_tokens(b.s.events) != 5010);
}

BOOST_AUTO_TEST_CASE(a_split_turn_ends_inside_the_turn) {
    lb::token_budget tb{.context_window = 100, .reserve_tokens = 0, .keep_recent_tokens = 30};
    builder b;
    b.turn("1", 200);
    b.user("2", "long task").model("2", std::string(200, 'a')).model("2", std::string(120, 'b'));
    auto p = tb.plan(b.view());
    BOOST_REQUIRE(p);
    // The tail (event 5) starts mid-turn: turn 2's user message (3) and first reply (4) are
    // summarised; the runner gives the summarizer 3..4 as the split turn's prefix.
    BOOST_TEST((*p == P(1, 4)));
    BOOST_TEST((b.s.events[4].type == lb::event_type::agent_message));
}

BOOST_AUTO_TEST_CASE(empty_and_small_sessions_do_nothing) {
    lb::token_budget tb{};
    builder b;
    BOOST_TEST(!tb.plan(b.view()).has_value());
    b.turn("1");
    BOOST_TEST(!tb.plan(b.view()).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(first_of_strategy)

BOOST_AUTO_TEST_CASE(token_budget_first_then_sliding_window) {
    lb::first_of both{lb::token_budget{.context_window = 1000, .reserve_tokens = 0, .keep_recent_tokens = 10},
                      lb::sliding_window{.compaction_interval = 2, .overlap_size = 0}};
    static_assert(lb::compaction_strategy<decltype(both)>);
    builder b;
    b.turn("1").turn("2");
    auto p = both.plan(b.view()); // token budget is fine: the window plans
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 4)));
    builder big;
    big.turn("1", 2000).turn("2", 2000).turn("3", 8);
    p = both.plan(big.view()); // over budget: the token plan wins (the window would take 1..6)
    BOOST_REQUIRE(p);
    BOOST_TEST((*p == P(1, 3)));
    lb::first_of<> none;
    BOOST_TEST(!none.plan(b.view()).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
