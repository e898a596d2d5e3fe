// event/context_view_builder.hpp: the incremental view equals make_context_view over the
// whole session, whatever compactions arrive, and costs what it shows.
#include <libretto/event/context_view_builder.hpp>
#include <libretto/event/filters.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

namespace lb = libretto;

lb::event raw(std::int64_t seq, std::string text) {
    lb::event e = lb::event::make(seq % 2 ? lb::event_type::user_message : lb::event_type::agent_message,
                                  seq % 2 ? "user" : "assistant", lb::content::from_text(std::move(text)));
    e.sequence = seq;
    return e;
}

lb::event summary(std::int64_t seq, std::int64_t first, std::int64_t last) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "compaction");
    e.sequence = seq;
    e.actions.compaction =
        lb::event_compaction{first, last, 0, 0, "S" + std::to_string(first) + "-" + std::to_string(last), last - first + 1};
    return e;
}

/// What a model would be shown: one line per event (text and, for summaries, the range).
std::vector<std::string> shown(const lb::context_view& v) {
    std::vector<std::string> out;
    for (const auto& e : v) {
        std::string line = std::to_string(e.sequence) + ":" + e.text();
        if (e.metadata.contains("compaction_summary"))
            line += " [" + std::to_string(e.metadata.at("first_sequence").as_int64()) + "," +
                    std::to_string(e.metadata.at("last_sequence").as_int64()) + "]";
        out.push_back(std::move(line));
    }
    return out;
}

std::vector<std::string> via_builder(lb::context_view_builder& b, const std::vector<lb::event>& events) {
    b.sync(events);
    return shown(b.view(events));
}

std::vector<std::string> full(const std::vector<lb::event>& events) { return shown(lb::make_context_view(events)); }

} // namespace

BOOST_AUTO_TEST_SUITE(context_view_builder)

BOOST_AUTO_TEST_CASE(a_rolling_compaction_leaves_the_summary_and_the_tail) {
    std::vector<lb::event> events;
    for (int i = 1; i <= 1000; ++i) events.push_back(raw(i, "m" + std::to_string(i)));
    lb::context_view_builder b;
    b.sync(events);
    BOOST_TEST(b.size() == 1000u);
    events.push_back(summary(1001, 1, 800));
    BOOST_TEST(via_builder(b, events) == full(events));
    BOOST_TEST(b.size() == 201u); // 200 raw and the summary
    events.push_back(raw(1002, "after"));
    events.push_back(summary(1003, 1, 900)); // rolls the first: subsumes it
    BOOST_TEST(via_builder(b, events) == full(events));
    BOOST_TEST(b.size() == 100u + 1 + 1); // 901..1000, 1002, the new summary
    BOOST_TEST(b.seen() == events.size());
}

BOOST_AUTO_TEST_CASE(overlapping_identical_and_late_summaries_match_the_full_view) {
    std::vector<lb::event> events;
    for (int i = 1; i <= 10; ++i) events.push_back(raw(i, "m" + std::to_string(i)));
    lb::context_view_builder b;
    events.push_back(summary(11, 1, 4));
    BOOST_TEST(via_builder(b, events) == full(events));
    events.push_back(summary(12, 3, 8)); // partial overlap: both shown
    BOOST_TEST(via_builder(b, events) == full(events));
    events.push_back(summary(13, 3, 8)); // identical range: the later wins
    BOOST_TEST(via_builder(b, events) == full(events));
    events.push_back(raw(14, "m14"));
    events.push_back(summary(15, 2, 2)); // inside an existing one: hidden
    BOOST_TEST(via_builder(b, events) == full(events));
    events.push_back(summary(16, 9, 7)); // malformed: ignored
    BOOST_TEST(via_builder(b, events) == full(events));
}

BOOST_AUTO_TEST_CASE(random_sessions_always_match_make_context_view) {
    std::mt19937 rng(20261122);
    for (int round = 0; round < 200; ++round) {
        std::vector<lb::event> events;
        lb::context_view_builder b;
        std::int64_t seq = 0;
        const int n = 20 + static_cast<int>(rng() % 60);
        for (int i = 0; i < n; ++i) {
            ++seq;
            if (seq > 3 && rng() % 5 == 0) {
                std::int64_t last = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(seq - 1));
                std::int64_t first = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(last));
                events.push_back(summary(seq, first, last));
            } else {
                events.push_back(raw(seq, "m" + std::to_string(seq)));
            }
            // Check after a random number of appends (sync takes several at once too).
            if (rng() % 3 == 0) BOOST_TEST_REQUIRE(via_builder(b, events) == full(events), "round " << round);
        }
        BOOST_TEST_REQUIRE(via_builder(b, events) == full(events), "round " << round);
    }
}

BOOST_AUTO_TEST_CASE(random_sessions_with_rewinds_match_make_context_view) {
    // Turns of a few events each (one invocation per turn), summaries, and rewinds to an
    // earlier turn (shown, undone, or unknown): the builder agrees after every append.
    std::mt19937 rng(20261128);
    for (int round = 0; round < 200; ++round) {
        std::vector<lb::event> events;
        lb::context_view_builder b;
        std::int64_t seq = 0;
        int turn = 0;
        const int n = 20 + static_cast<int>(rng() % 60);
        for (int i = 0; i < n; ++i) {
            ++seq;
            const unsigned pick = rng() % 10;
            if (seq > 3 && pick == 0) {
                std::int64_t last = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(seq - 1));
                std::int64_t first = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(last));
                events.push_back(summary(seq, first, last));
            } else if (turn > 0 && pick == 1) {
                lb::event r = lb::event::make(lb::event_type::agent_start, "user");
                r.sequence = seq;
                r.invocation_id = "rewind-" + std::to_string(seq);
                r.actions.rewind_before_invocation_id = "t" + std::to_string(rng() % static_cast<unsigned>(turn + 1));
                events.push_back(std::move(r));
            } else {
                if (pick == 2 || turn == 0) ++turn;
                events.push_back(raw(seq, "m" + std::to_string(seq)));
                events.back().invocation_id = "t" + std::to_string(turn);
            }
            if (rng() % 3 == 0) BOOST_TEST_REQUIRE(via_builder(b, events) == full(events), "round " << round);
        }
        BOOST_TEST_REQUIRE(via_builder(b, events) == full(events), "round " << round);
    }
}

BOOST_AUTO_TEST_CASE(a_rewind_brings_back_what_an_undone_summary_hid) {
    std::vector<lb::event> events{raw(1, "a"), raw(2, "b"), raw(3, "c"), summary(4, 1, 3), raw(5, "d")};
    for (std::size_t i = 0; i < events.size(); ++i) events[i].invocation_id = i < 1 ? "t1" : "t2";
    lb::context_view_builder b;
    auto before = via_builder(b, events);
    BOOST_TEST_REQUIRE(before.size() == 2u); // the summary and d
    BOOST_TEST(before[1] == "5:d");
    lb::event r = lb::event::make(lb::event_type::agent_start, "user");
    r.sequence = 6;
    r.invocation_id = "r";
    r.actions.rewind_before_invocation_id = "t2";
    events.push_back(r);
    BOOST_TEST(via_builder(b, events) == (std::vector<std::string>{"1:a"}));
    BOOST_TEST(via_builder(b, events) == full(events));
}

BOOST_AUTO_TEST_CASE(unsequenced_events_are_never_hidden) {
    std::vector<lb::event> events;
    for (int i = 1; i <= 5; ++i) events.push_back(raw(i, "m" + std::to_string(i)));
    lb::event pending = raw(0, "not stored yet");
    events.push_back(pending);
    events.push_back(summary(6, 1, 5));
    lb::context_view_builder b;
    BOOST_TEST(via_builder(b, events) == full(events));
    auto lines = via_builder(b, events);
    BOOST_TEST((std::find(lines.begin(), lines.end(), "0:not stored yet") != lines.end()));
}

BOOST_AUTO_TEST_CASE(another_or_shorter_event_vector_rebuilds) {
    std::vector<lb::event> a;
    for (int i = 1; i <= 6; ++i) a.push_back(raw(i, "a" + std::to_string(i)));
    lb::context_view_builder b;
    b.sync(a);
    BOOST_TEST(b.size() == 6u);
    std::vector<lb::event> shorter(a.begin(), a.begin() + 3);
    BOOST_TEST(via_builder(b, shorter) == full(shorter));
    BOOST_TEST(b.size() == 3u);
    std::vector<lb::event> other;
    for (int i = 1; i <= 4; ++i) other.push_back(raw(i, "other" + std::to_string(i)));
    BOOST_TEST(via_builder(b, other) == full(other)); // same size class, different events
    b.reset();
    BOOST_TEST(b.size() == 0u);
    BOOST_TEST(b.seen() == 0u);
    std::vector<lb::event> none;
    BOOST_TEST(via_builder(b, none).empty());
}

BOOST_AUTO_TEST_SUITE_END()
