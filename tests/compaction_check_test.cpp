// check_compaction (event/compaction_check.hpp), what the context view does with a
// compaction it refuses, and the pure parts of a context load (session/detail/
// context_load.hpp): which ranges a store reads, how a cached copy is pruned, and how an
// append is refused.
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/context_view_builder.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/store/detail/context_load.hpp>
#include <libretto/store/detail/store_logic.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace libretto::detail {
// For the checks' failure messages.
inline std::ostream& operator<<(std::ostream& o, const sequence_range& r) { return o << r.first << ".." << r.last; }
inline std::ostream& operator<<(std::ostream& o, const compaction_entry& c) {
    return o << c.sequence << ":" << c.first << ".." << c.last;
}
} // namespace libretto::detail

namespace {

namespace lb = libretto;
using lb::detail::compaction_entry;
using lb::detail::sequence_range;

constexpr std::int64_t open_end = std::numeric_limits<std::int64_t>::max();

lb::event_compaction range(std::int64_t first, std::int64_t last, std::string summary = "s") {
    return lb::event_compaction{first, last, 0, 0, std::move(summary), last - first + 1};
}

lb::event text(std::int64_t seq, std::string t) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text(std::move(t)));
    e.sequence = seq;
    return e;
}

lb::event summary(std::int64_t seq, std::int64_t first, std::int64_t last, std::string s = "s") {
    lb::event e = lb::event::make(lb::event_type::agent_message, "compaction");
    e.sequence = seq;
    e.actions.compaction = range(first, last, std::move(s));
    return e;
}

std::vector<std::string> texts(const lb::context_view& v) {
    std::vector<std::string> out;
    for (const auto& e : v) out.push_back(e.text());
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(compaction_check)

BOOST_AUTO_TEST_CASE(valid_ranges_pass) {
    BOOST_TEST(!lb::check_compaction(range(1, 1), 1));
    BOOST_TEST(!lb::check_compaction(range(1, 10), 10)); // up to the last stored event
    BOOST_TEST(!lb::check_compaction(range(4, 7), 100));
    BOOST_TEST(!lb::check_compaction(range(3, 9))); // no bound given
    BOOST_TEST(lb::check_compaction(range(1, 1), 1).message.empty());
}

BOOST_AUTO_TEST_CASE(each_refusal_names_its_field) {
    struct bad {
        lb::event_compaction c;
        std::int64_t last_stored;
        const char* message;
    };
    const bad cases[] = {
        {range(0, 3), 5, "actions.compaction.first_sequence is 0; sequences start at 1"},
        {range(-2, 3), 5, "actions.compaction.first_sequence is -2; sequences start at 1"},
        {range(4, 3), 5, "actions.compaction.first_sequence 4 is after last_sequence 3 (a reversed range)"},
        {range(2, 6), 5,
         "actions.compaction.last_sequence 6 is past the session's last stored sequence 5 (a compaction covers "
         "events stored before it)"},
        {range(1, 1), 0,
         "actions.compaction.last_sequence 1 is past the session's last stored sequence 0 (a compaction covers "
         "events stored before it)"},
        {range(1, 3, ""), 5, "actions.compaction.summary is empty"},
        {range(1, 3, " \t\r\n"), 5, "actions.compaction.summary holds only whitespace"},
    };
    for (const auto& b : cases) {
        BOOST_TEST_CONTEXT(b.message) {
            auto r = lb::check_compaction(b.c, b.last_stored);
            BOOST_TEST(static_cast<bool>(r));
            BOOST_TEST((r.code == lb::errc::invalid_argument));
            BOOST_TEST(r.message == b.message);
        }
    }
    // The first problem found is the one named: a reversed range with an empty summary.
    BOOST_TEST(lb::check_compaction(range(5, 2, ""), 9).message.find("reversed") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_stored_event_must_cover_only_events_before_it) {
    BOOST_TEST(lb::is_valid_compaction(summary(5, 1, 4)));
    BOOST_TEST(!lb::is_valid_compaction(summary(5, 1, 5)));   // its own sequence
    BOOST_TEST(!lb::is_valid_compaction(summary(5, 2, 9)));   // past itself
    BOOST_TEST(!lb::is_valid_compaction(summary(5, 3, 2)));   // reversed
    BOOST_TEST(!lb::is_valid_compaction(summary(5, 1, 4, ""))); // no summary
    BOOST_TEST(!lb::is_valid_compaction(text(5, "no compaction")));
    BOOST_TEST(lb::is_valid_compaction(summary(0, 1, 9))); // not stored yet: no bound
    auto r = lb::check_compaction(summary(5, 2, 9));
    BOOST_TEST(r.message == "actions.compaction.last_sequence 9 is past the session's last stored sequence 4 "
                            "(a compaction covers events stored before it)");
    BOOST_TEST(!lb::check_compaction(text(3, "x"))); // nothing to check
}

// ---- the context view -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(the_view_ignores_a_bad_compaction_and_says_why) {
    std::vector<lb::event> events{text(1, "one"), text(2, "two"), text(3, "three"), summary(4, 3, 1, "reversed"),
                                  summary(5, 1, 9, "past its end"), summary(6, 1, 3, ""), text(7, "seven")};
    auto view = lb::make_context_view(events);
    BOOST_TEST(texts(view) == (std::vector<std::string>{"one", "two", "three", "seven"}), boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(view.ignored_compactions().size(), 3u);
    BOOST_TEST(view.ignored_compactions()[0].source == &events[3]);
    BOOST_TEST(view.ignored_compactions()[0].reason.find("(a reversed range)") != std::string::npos);
    BOOST_TEST(view.ignored_compactions()[1].reason.find("last_sequence 9") != std::string::npos);
    BOOST_TEST(view.ignored_compactions()[2].reason == "actions.compaction.summary is empty");

    // A good one among them still applies; the incremental builder agrees.
    events.push_back(summary(8, 1, 2, "one and two"));
    events.push_back(text(9, "nine"));
    auto again = lb::make_context_view(events);
    BOOST_REQUIRE_EQUAL(again.size(), 4u);
    BOOST_TEST(again[0].text().find("one and two") != std::string::npos);
    BOOST_TEST(texts(again)[1] == "three");
    BOOST_TEST(again.ignored_compactions().size() == 3u);
    lb::context_view_builder b;
    b.sync(events);
    auto built = b.view(events);
    BOOST_TEST(texts(built) == texts(again), boost::test_tools::per_element());
    BOOST_TEST(built.ignored_compactions().size() == 3u);
    BOOST_TEST(lb::make_context_view(std::vector<lb::event>{text(1, "x")}).ignored_compactions().empty());
}

// ---- what a context load reads ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(shown_compactions_keep_only_what_a_view_shows) {
    lb::detail::shown_compactions s;
    BOOST_TEST(s.load_ranges(false) == (std::vector<sequence_range>{{1, open_end}}), boost::test_tools::per_element());
    s.add(compaction_entry{11, 1, 6});
    s.add(compaction_entry{14, 1, 12}); // rolls the first one up
    BOOST_TEST(s.items() == (std::vector<compaction_entry>{{14, 1, 12}}), boost::test_tools::per_element());
    BOOST_TEST(s.covered_end() == 12);
    BOOST_TEST(s.load_ranges(false) == (std::vector<sequence_range>{{13, open_end}}), boost::test_tools::per_element());
    BOOST_TEST(s.load_ranges(true) == (std::vector<sequence_range>{{1, open_end}}), boost::test_tools::per_element());
    s.add(compaction_entry{20, 3, 5}); // inside 1..12: not shown
    BOOST_TEST(s.items().size() == 1u);
    s.add(compaction_entry{21, 1, 12}); // identical: the later one wins
    BOOST_TEST(s.items() == (std::vector<compaction_entry>{{21, 1, 12}}), boost::test_tools::per_element());

    // Ranges that follow each other with a gap, and a summary hidden by a later range.
    lb::detail::shown_compactions w;
    w.add(compaction_entry{5, 1, 4});
    w.add(compaction_entry{12, 8, 10});
    w.add(compaction_entry{14, 5, 9}); // overlaps 8..10, contains neither
    BOOST_TEST(w.items().size() == 3u);
    // Hidden: 1..10 (1..4, 5..9, 8..10 merge); summary 5 lies inside 5..9: read on its own.
    BOOST_TEST(w.load_ranges(false) == (std::vector<sequence_range>{{5, 5}, {11, open_end}}),
               boost::test_tools::per_element());
    // The newest (14) covers 5..9: read with it.
    BOOST_TEST(w.load_ranges(true) == (std::vector<sequence_range>{{5, 9}, {11, open_end}}),
               boost::test_tools::per_element());
    lb::detail::shown_compactions g;
    g.add(compaction_entry{9, 3, 4});
    g.add(compaction_entry{10, 6, 7});
    BOOST_TEST(g.load_ranges(false) == (std::vector<sequence_range>{{1, 2}, {5, 5}, {8, open_end}}),
               boost::test_tools::per_element());
    BOOST_TEST(lb::detail::clip_ranges(g.load_ranges(false), 6) == (std::vector<sequence_range>{{8, open_end}}),
               boost::test_tools::per_element());
    BOOST_TEST(lb::detail::clip_ranges(g.load_ranges(false), 2) ==
                   (std::vector<sequence_range>{{2, 2}, {5, 5}, {8, open_end}}),
               boost::test_tools::per_element());
    // A bad compaction is never added.
    lb::detail::shown_compactions b;
    b.add(summary(5, 1, 5));
    b.add(summary(6, 1, 4, " "));
    BOOST_TEST(b.empty());
    b.add(summary(7, 1, 4));
    BOOST_TEST(b.items() == (std::vector<compaction_entry>{{7, 1, 4}}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_cached_copy_is_pruned_to_what_a_load_returns) {
    lb::event_list events;
    for (int i = 1; i <= 6; ++i) events.push_back(text(i, "e" + std::to_string(i)));
    BOOST_TEST(lb::detail::select_context(events, 6, false)); // no compaction: everything
    BOOST_TEST(events.size() == 6u);
    events.push_back(summary(7, 1, 4));
    events.push_back(text(8, "e8"));
    BOOST_TEST(lb::detail::select_context(events, 8, false));
    std::vector<std::int64_t> seqs;
    for (const auto& e : events) seqs.push_back(e.sequence);
    BOOST_TEST(seqs == (std::vector<std::int64_t>{5, 6, 7, 8}), boost::test_tools::per_element());
    // with_newest_range asks for 1..4, which the pruned copy no longer has: load again.
    BOOST_TEST(!lb::detail::select_context(events, 8, true));
    BOOST_TEST(events.size() == 4u); // left as it was
    // A copy that lacks an event it should hold (a gap) is refused too.
    lb::event_list holey;
    holey.push_back(summary(7, 1, 4));
    holey.push_back(text(9, "e9"));
    BOOST_TEST(!lb::detail::select_context(holey, 9, false));
}

// ---- an append of a bad compaction -------------------------------------------------------

BOOST_AUTO_TEST_CASE(prepare_append_refuses_a_bad_compaction_and_leaves_the_event_alone) {
    lb::session s;
    s.id = "s1";
    s.app_name = "app";
    s.user_id = "u1";
    s.last_sequence = 3;
    lb::detail::routed_delta routed;
    lb::event e = summary(0, 2, 4);
    e.id = "ev-1";
    const lb::event before = e;
    BOOST_TEST((lb::detail::prepare_append(s, e, 3, routed) == lb::errc::invalid_argument));
    BOOST_TEST((e == before));
    BOOST_TEST(lb::detail::append_refusal(s, e, 3) ==
               "event ev-1 in session app/u1/s1: actions.compaction.last_sequence 4 is past the session's last "
               "stored sequence 3 (a compaction covers events stored before it)");
    // In a batch, the events before it count.
    BOOST_TEST(!lb::detail::prepare_append(s, e, 3, routed, 1));
    BOOST_TEST(e.sequence == 4);
    // The other refusals keep their words.
    lb::event other = text(0, "x");
    other.id = "ev-2";
    other.session_id = "s2";
    BOOST_TEST((lb::detail::prepare_append(s, other, 3, routed) == lb::errc::invalid_argument));
    BOOST_TEST(lb::detail::append_refusal(s, other, 3) == "event ev-2 names session 's2', not app/u1/s1");
    BOOST_TEST((lb::detail::prepare_append(s, other, 5, routed) == lb::errc::stale_session));
    BOOST_TEST(lb::detail::append_refusal(s, other, 5) == "session app/u1/s1 is at sequence 5, the caller's copy at 3");
}

BOOST_AUTO_TEST_SUITE_END()
