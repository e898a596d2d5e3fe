// Tests for event/filters.hpp: should_include_event, apply_compaction, repair_tool_pairs,
// make_context_view.
#include <libretto/event/filters.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace libretto;

namespace {

event raw(std::int64_t seq, std::string text = {}) {
    event e;
    e.id = "e" + std::to_string(seq);
    e.sequence = seq;
    e.timestamp = static_cast<double>(seq);
    e.type = event_type::agent_message;
    e.content = content::from_text(text.empty() ? "Event " + std::to_string(seq) : text);
    return e;
}

event summary_event(std::int64_t seq, std::int64_t first, std::int64_t last) {
    event e;
    e.id = "c" + std::to_string(seq);
    e.sequence = seq;
    e.timestamp = static_cast<double>(seq);
    e.type = event_type::agent_message;
    event_compaction c;
    c.first_sequence = first;
    c.last_sequence = last;
    c.start_timestamp = static_cast<double>(first);
    c.end_timestamp = static_cast<double>(last);
    c.summary = "Summary " + std::to_string(first) + "-" + std::to_string(last);
    c.event_count = last - first + 1;
    e.actions.compaction = c;
    return e;
}

event call(std::int64_t seq, std::vector<std::string> ids, std::string text = {}) {
    event e;
    e.id = "call" + std::to_string(seq);
    e.sequence = seq;
    e.type = event_type::agent_message;
    if (!text.empty()) e.content.parts.emplace_back(text_part{text, {}});
    for (auto& id : ids) e.content.parts.emplace_back(tool_call_part{id, "tool_" + id, {}, {}});
    return e;
}

event response(std::int64_t seq, std::vector<std::string> ids) {
    event e;
    e.id = "resp" + std::to_string(seq);
    e.sequence = seq;
    e.type = event_type::tool_response;
    for (auto& id : ids) e.content.parts.emplace_back(tool_response_part{id, "tool_" + id, json::value("ok " + id), {}, {}});
    return e;
}

// What a model would be shown: summaries as "Summary a-b", everything else by text, or
// "calls:<ids>" / "responses:<ids>".
std::vector<std::string> render(const context_view& v) {
    std::vector<std::string> out;
    for (const auto& e : v) {
        if (auto it = e.metadata.find("compaction_summary"); it != e.metadata.end()) {
            const std::string t = e.text();
            out.push_back(t.substr(t.find("\n\n") + 2));
            continue;
        }
        std::string s;
        for (const auto& c : e.tool_calls()) s += (s.empty() ? "calls:" : ",") + c.tool_call_id;
        for (const auto& r : e.tool_responses()) s += (s.empty() ? "responses:" : ",") + r.tool_call_id;
        std::string t = e.text();
        if (!t.empty()) s = s.empty() ? t : t + "|" + s;
        out.push_back(s);
    }
    return out;
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(should_include)

BOOST_AUTO_TEST_CASE(plain_messages_are_included) {
    BOOST_TEST(should_include_event(raw(1)));
    event u = event::make(event_type::user_message, "user", content::from_text("hi"));
    BOOST_TEST(should_include_event(u));
    BOOST_TEST(should_include_event(response(2, {"a"})));
    BOOST_TEST(should_include_event(call(3, {"a"})));
}

BOOST_AUTO_TEST_CASE(partial_lifecycle_error_scratchpad_are_excluded) {
    event p = raw(1);
    p.partial = true;
    BOOST_TEST(!should_include_event(p));
    event s = event::make(event_type::agent_start, "a");
    event n = event::make(event_type::agent_end, "a");
    BOOST_TEST(!should_include_event(s));
    BOOST_TEST(!should_include_event(n));
    event err = raw(2);
    err.metadata["error"] = true;
    BOOST_TEST(!should_include_event(err));
    event errs = raw(2);
    errs.metadata["error"] = "boom";
    BOOST_TEST(!should_include_event(errs));
    event not_err = raw(2);
    not_err.metadata["error"] = false; // falsy: kept
    BOOST_TEST(should_include_event(not_err));
    event pad = raw(3);
    pad.metadata["scratchpad"] = "notes";
    BOOST_TEST(!should_include_event(pad));
}

BOOST_AUTO_TEST_CASE(empty_agent_messages_are_excluded) {
    event e;
    e.type = event_type::agent_message;
    BOOST_TEST(!should_include_event(e)); // no parts
    e.content = content::from_text("");
    BOOST_TEST(!should_include_event(e)); // empty text
    e.content = content::from_thinking("hmm");
    BOOST_TEST(!should_include_event(e)); // thinking only
    e.content = content::from_data({});
    BOOST_TEST(!should_include_event(e)); // empty data object
    e.content = content::from_data({{"k", 1}});
    BOOST_TEST(should_include_event(e));
    // An empty user message is not an agent message: kept.
    event u;
    u.type = event_type::user_message;
    BOOST_TEST(should_include_event(u));
}

BOOST_AUTO_TEST_CASE(compaction_events_are_kept_despite_empty_content) {
    BOOST_TEST(should_include_event(summary_event(5, 1, 4)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(compaction)

// ADK test_get_contents_with_multiple_compactions: [1-4], [6-9] -> Summary 1-4, Event 5,
// Summary 6-9, Event 10.
BOOST_AUTO_TEST_CASE(adk_multiple_compactions) {
    std::vector<event> evs;
    for (int i = 1; i <= 10; ++i) evs.push_back(raw(i));
    evs.push_back(summary_event(11, 1, 4));
    evs.push_back(summary_event(12, 6, 9));
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Summary 1-4", "Event 5", "Summary 6-9", "Event 10"}),
               boost::test_tools::per_element());
}

// ADK test_get_contents_subsumed_compaction_is_hidden: C[1,1] and C[1,3] -> Summary 1-3,
// Event 4, Event 6, Event 7, Event 9 (5 and 8 are the compaction events).
BOOST_AUTO_TEST_CASE(adk_subsumed_compaction_is_hidden) {
    std::vector<event> evs{raw(1), raw(2), raw(3), raw(4), summary_event(5, 1, 1), raw(6), raw(7),
                           summary_event(8, 1, 3), raw(9)};
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Summary 1-3", "Event 4", "Event 6", "Event 7", "Event 9"}),
               boost::test_tools::per_element());
}

// ADK test_get_contents_compaction_appended_late_keeps_newer_events: C[1,3] appended at 6,
// after events 4 and 5 -> Summary 1-3, Event 4, Event 5.
BOOST_AUTO_TEST_CASE(adk_compaction_appended_late_keeps_newer_events) {
    std::vector<event> evs{raw(1), raw(2), raw(3), raw(4), raw(5), summary_event(6, 1, 3)};
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Summary 1-3", "Event 4", "Event 5"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(partially_overlapping_sliding_window_summaries_are_both_shown) {
    // The ADK sliding-window example: interval 2, overlap 1 -> [1,2] then [2,4].
    std::vector<event> evs{raw(1), raw(2), summary_event(3, 1, 2), raw(4), raw(5), summary_event(6, 2, 5), raw(7)};
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Summary 1-2", "Summary 2-5", "Event 7"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(identical_ranges_later_summary_wins) {
    std::vector<event> evs{raw(1), raw(2), summary_event(3, 1, 2), summary_event(4, 1, 2), raw(5)};
    evs[3].actions.compaction->summary = "second";
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"second", "Event 5"}), boost::test_tools::per_element());
    BOOST_TEST(v[0].id == "c4");
}

BOOST_AUTO_TEST_CASE(rolling_summary_subsumes_its_predecessor_whatever_the_order) {
    std::vector<event> evs{raw(1), raw(2), raw(3), summary_event(4, 1, 3), raw(5), raw(6),
                           summary_event(7, 1, 6), raw(8)};
    auto a = apply_compaction(context_view(evs));
    BOOST_TEST(render(a) == (strings{"Summary 1-6", "Event 8"}), boost::test_tools::per_element());
    // Same summaries listed the other way round: same answer (deterministic).
    std::swap(evs[3], evs[6]);
    std::vector<const event*> ptrs;
    for (auto& e : evs) ptrs.push_back(&e);
    auto b = apply_compaction(context_view(ptrs));
    BOOST_TEST(render(b) == render(a), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(summary_event_shape) {
    std::vector<event> evs{raw(1), raw(2), summary_event(3, 1, 2), raw(4)};
    evs[2].invocation_id = "inv";
    evs[2].branch = "root.child";
    evs[2].author = "root";
    auto v = apply_compaction(context_view(evs));
    BOOST_REQUIRE_EQUAL(v.size(), 2u);
    const event& s = v[0];
    BOOST_TEST(v.is_synthesized(0));
    BOOST_TEST(!v.is_synthesized(1));
    BOOST_TEST((s.type == event_type::user_message));
    BOOST_TEST(s.text() == "[Summary of 2 earlier events]\n\nSummary 1-2");
    BOOST_TEST(s.invocation_id == "inv");
    BOOST_TEST(s.branch == "root.child");
    BOOST_TEST(s.author == "root");
    BOOST_TEST(s.timestamp == 2.0);
    BOOST_TEST(s.metadata.at("first_sequence").as_int64() == 1);
    BOOST_TEST(s.metadata.at("last_sequence").as_int64() == 2);
    BOOST_TEST(!s.is_compaction());
    // The stored events are untouched and the view points into them.
    BOOST_TEST(evs[2].is_compaction());
    BOOST_TEST(&v[1] == &evs[3]);
}

BOOST_AUTO_TEST_CASE(no_compaction_leaves_view_unchanged) {
    std::vector<event> evs{raw(1), raw(2), raw(3)};
    auto v = apply_compaction(context_view(evs));
    BOOST_REQUIRE_EQUAL(v.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(&v[i] == &evs[i]);
}

BOOST_AUTO_TEST_CASE(empty_view) {
    auto v = apply_compaction(context_view(std::span<const event>{}));
    BOOST_TEST(v.empty());
}

BOOST_AUTO_TEST_CASE(unsequenced_events_are_never_hidden_and_come_after_summaries) {
    std::vector<event> evs{raw(1), raw(2), summary_event(3, 1, 2)};
    event fresh = raw(0, "fresh");
    evs.push_back(fresh);
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Summary 1-2", "fresh"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(malformed_range_is_ignored) {
    std::vector<event> evs{raw(1), raw(2), summary_event(3, 2, 1), raw(4)};
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Event 1", "Event 2", "Event 4"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(summary_covering_everything) {
    std::vector<event> evs{raw(1), raw(2), raw(3), summary_event(4, 1, 3)};
    auto v = apply_compaction(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Summary 1-3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tool_pairs)

BOOST_AUTO_TEST_CASE(answered_calls_are_kept_untouched) {
    std::vector<event> evs{call(1, {"a", "b"}), response(2, {"a"}), response(3, {"b"}), raw(4)};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_REQUIRE_EQUAL(v.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(&v[i] == &evs[i]);
}

BOOST_AUTO_TEST_CASE(unanswered_call_is_removed_from_a_copy) {
    std::vector<event> evs{call(1, {"a", "b"}, "thinking aloud"), response(2, {"a"}), raw(3)};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_TEST(render(v) == (strings{"thinking aloud|calls:a", "responses:a", "Event 3"}),
               boost::test_tools::per_element());
    BOOST_TEST(v.is_synthesized(0));
    // Stored event unchanged.
    BOOST_TEST(evs[0].tool_calls().size() == 2u);
}

BOOST_AUTO_TEST_CASE(message_with_only_unanswered_calls_is_dropped) {
    std::vector<event> evs{raw(1), call(2, {"x"}), raw(3)};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Event 1", "Event 3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(orphan_response_is_dropped) {
    std::vector<event> evs{raw(1), response(2, {"ghost"}), raw(3)};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_TEST(render(v) == (strings{"Event 1", "Event 3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(response_before_its_call_is_an_orphan) {
    std::vector<event> evs{response(1, {"a"}), call(2, {"a"})};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_TEST(v.empty());
}

BOOST_AUTO_TEST_CASE(many_ids_keep_every_answered_pair_and_drop_the_rest) {
    // 60 calls (more ids than the linear search covers): every third one unanswered, and
    // one response whose id no call made.
    std::vector<std::string> ids;
    for (int i = 0; i < 60; ++i) ids.push_back("id" + std::to_string(i));
    std::vector<event> evs{call(1, ids)};
    std::vector<std::string> answered;
    for (int i = 0; i < 60; ++i)
        if (i % 3 != 0) answered.push_back(ids[static_cast<std::size_t>(i)]);
    for (std::size_t k = 0; k < answered.size(); ++k)
        evs.push_back(response(static_cast<std::int64_t>(k + 2), {answered[k]}));
    evs.push_back(response(100, {"ghost"}));
    auto v = repair_tool_pairs(context_view(evs));
    std::string want_calls = "calls:";
    for (std::size_t k = 0; k < answered.size(); ++k) want_calls += (k ? "," : "") + answered[k];
    strings want{want_calls};
    for (const auto& id : answered) want.push_back("responses:" + id);
    BOOST_TEST(render(v) == want, boost::test_tools::per_element());
    BOOST_TEST(v.is_synthesized(0));
    for (std::size_t i = 1; i < v.size(); ++i) BOOST_TEST(&v[i] == &evs[i]);
}

BOOST_AUTO_TEST_CASE(mixed_response_event_keeps_its_answered_part) {
    std::vector<event> evs{call(1, {"a"}), response(2, {"a", "ghost"})};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_TEST(render(v) == (strings{"calls:a", "responses:a"}), boost::test_tools::per_element());
    BOOST_TEST(v.is_synthesized(1));
}

BOOST_AUTO_TEST_CASE(only_the_last_of_several_responses_is_kept) {
    std::vector<event> evs{call(1, {"lr"}), response(2, {"lr"}), raw(3), response(4, {"lr"})};
    evs[1].content.parts[0] = tool_response_part{"lr", "tool_lr", json::value("pending"), {}, {}};
    auto v = repair_tool_pairs(context_view(evs));
    BOOST_TEST(render(v) == (strings{"calls:lr", "Event 3", "responses:lr"}), boost::test_tools::per_element());
    BOOST_TEST(&v[2] == &evs[3]);
}

BOOST_AUTO_TEST_CASE(a_reused_call_id_pairs_each_response_with_the_nearest_unanswered_call) {
    // Servers that number calls per reply send id "0" at every step.
    auto text_of = [](const event& e) {
        const auto& r = e.tool_responses();
        return r.empty() ? std::string() : std::string(r.front().result.as_string());
    };
    auto answer = [](std::int64_t seq, std::string result) {
        event e = response(seq, {"0"});
        std::get<tool_response_part>(e.content.parts[0]).result = json::value(result);
        return e;
    };
    {
        // Both answered: nothing to repair.
        std::vector<event> evs{call(1, {"0"}), answer(2, "first"), call(3, {"0"}), answer(4, "second")};
        auto v = repair_tool_pairs(context_view(evs));
        BOOST_REQUIRE_EQUAL(v.size(), 4u);
        for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(&v[i] == &evs[i]);
    }
    {
        // The second response missing: the second call alone is dropped.
        std::vector<event> evs{call(1, {"0"}), answer(2, "first"), call(3, {"0"}), raw(4)};
        auto v = repair_tool_pairs(context_view(evs));
        BOOST_TEST(render(v) == (strings{"calls:0", "responses:0", "Event 4"}), boost::test_tools::per_element());
        BOOST_TEST(&v[0] == &evs[0]);
        BOOST_TEST(&v[1] == &evs[1]);
    }
    {
        // The first call never answered (a crash): the response is the second call's, and
        // the first call goes (once both were kept: two calls "0", one response).
        std::vector<event> evs{call(1, {"0"}), call(2, {"0"}), answer(3, "second"), raw(4)};
        auto v = repair_tool_pairs(context_view(evs));
        BOOST_TEST(render(v) == (strings{"calls:0", "responses:0", "Event 4"}), boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(v.size() == 3u);
        BOOST_TEST(&v[0] == &evs[1]);
    }
    {
        // An interim and a final answer to the second call: the final one supersedes the
        // interim one only (once the first call's answer was dropped with it).
        std::vector<event> evs{call(1, {"0"}), answer(2, "first"), call(3, {"0"}), answer(4, "interim"),
                               answer(5, "final")};
        auto v = repair_tool_pairs(context_view(evs));
        BOOST_TEST(render(v) == (strings{"calls:0", "responses:0", "calls:0", "responses:0"}),
                   boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(v.size() == 4u);
        BOOST_TEST(text_of(v[1]) == "first");
        BOOST_TEST(text_of(v[3]) == "final");
    }
}

BOOST_AUTO_TEST_CASE(compaction_hiding_a_call_makes_its_response_an_orphan) {
    std::vector<event> evs{call(1, {"a"}), raw(2), summary_event(3, 1, 2), response(4, {"a"}), raw(5)};
    auto v = make_context_view(evs);
    BOOST_TEST(render(v) == (strings{"Summary 1-2", "Event 5"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pipeline)

BOOST_AUTO_TEST_CASE(make_context_view_runs_all_three_steps) {
    std::vector<event> evs;
    evs.push_back(raw(1));
    evs.push_back(raw(2));
    event partial = raw(3, "chunk");
    partial.partial = true;
    evs.push_back(partial);
    evs.push_back(summary_event(4, 1, 2));
    event start = event::make(event_type::agent_start, "a");
    start.sequence = 5;
    evs.push_back(start);
    evs.push_back(call(6, {"a", "b"}));
    evs.push_back(response(7, {"a"}));
    event err = raw(8, "failed");
    err.metadata["error"] = true;
    evs.push_back(err);
    evs.push_back(raw(9));
    auto v = make_context_view(evs);
    BOOST_TEST(render(v) == (strings{"Summary 1-2", "calls:a", "responses:a", "Event 9"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(view_is_movable_and_pointers_survive) {
    std::vector<event> evs{call(1, {"a", "b"}), response(2, {"a"})};
    auto v = make_context_view(evs);
    const event* synthesized = &v[0];
    context_view moved = std::move(v);
    BOOST_TEST(&moved[0] == synthesized);
    BOOST_TEST(moved[0].tool_calls().size() == 1u);
}

BOOST_AUTO_TEST_CASE(filter_with_custom_predicate) {
    std::vector<event> evs{raw(1), raw(2), raw(3)};
    context_view v(evs);
    v.filter([](const event& e) { return e.sequence != 2; });
    BOOST_TEST(render(v) == (strings{"Event 1", "Event 3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pipeline_order)

// make_context_view runs compaction before the filters; DESIGN.md lists the filters
// first. Both orders must show the same thing: check on many random sessions.
BOOST_AUTO_TEST_CASE(compaction_and_filters_commute) {
    std::uint64_t seed = 12345;
    auto rnd = [&](std::uint64_t n) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        return (seed >> 33) % n;
    };
    for (int round = 0; round < 300; ++round) {
        std::vector<event> evs;
        const std::int64_t n = 5 + static_cast<std::int64_t>(rnd(40));
        for (std::int64_t s = 1; s <= n; ++s) {
            switch (rnd(9)) {
            case 0: {
                const std::int64_t a = 1 + static_cast<std::int64_t>(rnd(static_cast<std::uint64_t>(s)));
                const std::int64_t b = a + static_cast<std::int64_t>(rnd(static_cast<std::uint64_t>(s - a + 1)));
                evs.push_back(summary_event(s, a, std::min(b, s - 1 > 0 ? s - 1 : 1)));
                break;
            }
            case 1: {
                event p = raw(s, "partial");
                p.partial = true;
                evs.push_back(p);
                break;
            }
            case 2: {
                event e = event::make(event_type::agent_end, "a");
                e.sequence = s;
                evs.push_back(e);
                break;
            }
            case 3: {
                event e = raw(s, "err");
                e.metadata["error"] = true;
                evs.push_back(e);
                break;
            }
            case 4: evs.push_back(call(s, {"id" + std::to_string(rnd(5))})); break;
            case 5: evs.push_back(response(s, {"id" + std::to_string(rnd(5))})); break;
            case 6: {
                event e;
                e.sequence = s;
                e.type = event_type::agent_message; // empty reply
                evs.push_back(e);
                break;
            }
            default: evs.push_back(raw(s)); break;
            }
        }
        auto a = repair_tool_pairs(apply_compaction(filter_events(context_view(evs))));
        auto b = make_context_view(evs);
        BOOST_TEST_CONTEXT("round " << round) {
            BOOST_TEST(render(a) == render(b), boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_CASE(summary_text_counts_the_range_or_says_the_count) {
    auto text = [](std::int64_t first, std::int64_t last, std::int64_t count) {
        event_compaction c;
        c.first_sequence = first;
        c.last_sequence = last;
        c.event_count = count;
        c.summary = "S";
        return summary_text(c);
    };
    BOOST_TEST(text(3, 7, 0) == "[Summary of 5 earlier events]\n\nS");
    BOOST_TEST(text(3, 7, 12) == "[Summary of 12 earlier events]\n\nS"); // a rolled-up summary counts more
    BOOST_TEST(text(4, 4, 0) == "[Summary of 1 earlier events]\n\nS");
    // Ranges no store takes are still shown, without overflow (UBSan once stopped here).
    BOOST_TEST(text(-1, std::numeric_limits<std::int64_t>::max(), 0) == "[Summary of 9223372036854775809 earlier events]\n\nS");
    BOOST_TEST(text(7, 3, 0) == "[Summary of no earlier events]\n\nS");
}

BOOST_AUTO_TEST_SUITE(rewinds)

namespace {
event in(event e, std::string invocation) {
    e.invocation_id = std::move(invocation);
    return e;
}
event rewind_to(std::int64_t seq, std::string target) {
    event e = raw(seq);
    e.type = event_type::agent_start;
    e.content = {};
    e.invocation_id = "r" + std::to_string(seq);
    e.actions.rewind_before_invocation_id = std::move(target);
    return e;
}
} // namespace

BOOST_AUTO_TEST_CASE(a_rewind_undoes_from_the_invocation_to_itself) {
    std::vector<event> s{in(raw(1), "a"), in(raw(2), "a"), in(raw(3), "b"), in(raw(4), "c"), rewind_to(5, "b"),
                         in(raw(6), "d")};
    BOOST_TEST((undone_ranges(s) == std::vector<undone_range>{{2, 4}}));
    BOOST_TEST((undone_mask(s) == std::vector<bool>{false, false, true, true, true, false}));
    BOOST_TEST((render(make_context_view(s)) == strings{"Event 1", "Event 2", "Event 6"}));
    BOOST_TEST(is_rewind(s[4]));
    BOOST_TEST(!is_rewind(s[3]));
}

BOOST_AUTO_TEST_CASE(a_rewind_undone_by_a_later_one_undoes_nothing) {
    // r5 undid b; r7 undoes everything from a on, r5 included: read newest first, r5 is
    // never applied.
    std::vector<event> s{in(raw(1), "a"), in(raw(2), "b"), in(raw(3), "b"), rewind_to(4, "b"), in(raw(5), "c"),
                         rewind_to(6, "a"), in(raw(7), "d")};
    BOOST_TEST((undone_ranges(s) == std::vector<undone_range>{{0, 5}}));
    BOOST_TEST((render(make_context_view(s)) == strings{"Event 7"}));
    // Two independent rewinds: both apply.
    std::vector<event> t{in(raw(1), "a"), in(raw(2), "b"), rewind_to(3, "b"), in(raw(4), "c"), rewind_to(5, "c"),
                         in(raw(6), "d")};
    BOOST_TEST((undone_ranges(t) == std::vector<undone_range>{{1, 2}, {3, 4}}));
    BOOST_TEST((render(make_context_view(t)) == strings{"Event 1", "Event 6"}));
}

BOOST_AUTO_TEST_CASE(a_rewind_that_records_its_start_undoes_from_there) {
    // Invocation x ran, was rewound, z ran, then x again (a caller's id used twice); the
    // second rewind of x records that it began at sequence 6. Without the record the first
    // event of x (sequence 1) would be taken, and z undone with it.
    auto recorded = [](std::int64_t seq, std::string target, json::value first) {
        event e = rewind_to(seq, std::move(target));
        e.metadata["rewind"] = json::object{{"before_invocation_id", "x"}, {"first_sequence", first}};
        return e;
    };
    std::vector<event> s{in(raw(1), "x"), in(raw(2), "x"), recorded(3, "x", 1), in(raw(4), "z"), in(raw(5), "z"),
                         in(raw(6), "x"), recorded(7, "x", 6), in(raw(8), "w")};
    BOOST_TEST((undone_ranges(s) == std::vector<undone_range>{{0, 2}, {5, 6}}));
    BOOST_TEST((render(make_context_view(s)) == strings{"Event 4", "Event 5", "Event 8"}));
    // A record that names no event of the target (or is not a sequence) falls back to the
    // target's first event, as a rewind without a record does.
    std::vector<event> t{in(raw(1), "x"), in(raw(2), "z"), in(raw(3), "x"), recorded(4, "x", 2), in(raw(5), "w")};
    BOOST_TEST((undone_ranges(t) == std::vector<undone_range>{{0, 3}}));
    std::vector<event> u{in(raw(1), "x"), in(raw(2), "z"), recorded(3, "x", "2"), in(raw(4), "w")};
    BOOST_TEST((undone_ranges(u) == std::vector<undone_range>{{0, 2}}));
    std::vector<event> v{in(raw(1), "x"), recorded(2, "x", 99), in(raw(3), "w")};
    BOOST_TEST((undone_ranges(v) == std::vector<undone_range>{{0, 1}}));
}

BOOST_AUTO_TEST_CASE(a_rewind_to_an_unknown_invocation_undoes_only_itself) {
    std::vector<event> s{in(raw(1), "a"), rewind_to(2, "zzz"), in(raw(3), "b")};
    BOOST_TEST((undone_ranges(s) == std::vector<undone_range>{{1, 1}}));
    BOOST_TEST((render(make_context_view(s)) == strings{"Event 1", "Event 3"}));
    std::vector<event> none{in(raw(1), "a")};
    BOOST_TEST(undone_ranges(none).empty());
    BOOST_TEST(undone_ranges(std::vector<event>{}).empty());
}

BOOST_AUTO_TEST_CASE(a_summary_the_rewind_undid_hides_nothing) {
    std::vector<event> s{in(raw(1), "a"), in(raw(2), "b"), in(summary_event(3, 1, 2), "b"), in(raw(4), "c"),
                         rewind_to(5, "b")};
    BOOST_TEST((render(make_context_view(s)) == strings{"Event 1"}));
    // A summary before the rewound invocation stays.
    std::vector<event> t{in(raw(1), "a"), in(summary_event(2, 1, 1), "a"), in(raw(3), "b"), rewind_to(4, "b")};
    BOOST_TEST((render(make_context_view(t)) == strings{"Summary 1-1"}));
}

BOOST_AUTO_TEST_SUITE_END()
