// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// event_list (a session's shared, immutable events) and event_span.
#include <libretto/event/event_list.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <iterator>
#include <ranges>
#include <string>
#include <vector>

using namespace libretto;

static_assert(std::random_access_iterator<event_list::const_iterator>);
static_assert(std::ranges::random_access_range<const event_list>);
static_assert(std::random_access_iterator<event_span::const_iterator>);
static_assert(std::ranges::random_access_range<const event_span>);
// Reading gives const events only: a change must go through modify().
static_assert(std::is_same_v<decltype(std::declval<event_list&>()[0]), const event&>);
static_assert(std::is_same_v<decltype(*std::declval<event_list&>().begin()), const event&>);

namespace {

event text(std::string s, std::int64_t seq = 0) {
    event e = event::make(event_type::agent_message, "a", content::from_text(std::move(s)));
    e.sequence = seq;
    return e;
}

std::vector<std::string> texts(const event_list& l) {
    std::vector<std::string> out;
    for (const auto& e : l) out.push_back(e.text());
    return out;
}

std::vector<std::string> texts(event_span s) {
    std::vector<std::string> out;
    for (const auto& e : s) out.push_back(e.text());
    return out;
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(event_list_tests)

BOOST_AUTO_TEST_CASE(reads_like_a_vector) {
    event_list l{text("a", 1), text("b", 2), text("c", 3)};
    BOOST_TEST(l.size() == 3u);
    BOOST_TEST(!l.empty());
    BOOST_TEST(l[1].text() == "b");
    BOOST_TEST(l.front().sequence == 1);
    BOOST_TEST(l.back().sequence == 3);
    BOOST_TEST(l.at(2).text() == "c");
    BOOST_CHECK_THROW(l.at(3), std::out_of_range);
    BOOST_TEST((l.end() - l.begin()) == 3);
    BOOST_TEST((l.begin() + 2)->text() == "c");
    BOOST_TEST(l.begin()[1].text() == "b");
    strings rev;
    for (auto it = l.rbegin(); it != l.rend(); ++it) rev.push_back(it->text());
    BOOST_TEST(rev == (strings{"c", "b", "a"}));
    auto it = std::ranges::find_if(l, [](const event& e) { return e.sequence == 2; });
    BOOST_TEST((it - l.begin()) == 1);
    BOOST_TEST(std::ranges::lower_bound(l, 3, {}, &event::sequence)->text() == "c");
    const event_list none;
    BOOST_TEST(none.empty());
    BOOST_TEST((none.begin() == none.end()));
}

BOOST_AUTO_TEST_CASE(copies_share_events_and_modify_copies_on_write) {
    event_list a{text("a"), text("b")};
    event_list b = a;
    // A copy holds the same events, not copies of them.
    BOOST_TEST(a.shared(0).get() == b.shared(0).get());
    BOOST_TEST(&a[1] == &b[1]);
    // Changing b's event leaves a's as it was.
    b.modify(0).content = content::from_text("changed");
    BOOST_TEST(b[0].text() == "changed");
    BOOST_TEST(a[0].text() == "a");
    BOOST_TEST(a.shared(0).get() != b.shared(0).get());
    // The untouched event is still shared.
    BOOST_TEST(a.shared(1).get() == b.shared(1).get());
    // An event held once is changed in place.
    const event* before = &b[0];
    b.modify(0).sequence = 9;
    BOOST_TEST(&b[0] == before);
    BOOST_TEST(b[0].sequence == 9);
    b.modify_back().sequence = 7;
    BOOST_TEST(b.back().sequence == 7);
    BOOST_TEST(a.back().sequence == 0);
}

BOOST_AUTO_TEST_CASE(a_shared_pointer_is_held_not_copied) {
    event_list l;
    auto p = make_shared_event(text("x"));
    l.push_back(p);
    BOOST_TEST(&l[0] == p.get());
    BOOST_TEST(p.use_count() == 2);
    // What the holder of p sees never changes under it.
    l.modify(0).content = content::from_text("y");
    BOOST_TEST(p->text() == "x");
    BOOST_TEST(l[0].text() == "y");
    // A null pointer is not an event.
    l.push_back(event_list::pointer_type{});
    BOOST_TEST(l.size() == 1u);
    l.replace(0, event_list::pointer_type{});
    BOOST_TEST(l[0].text() == "y");
    l.replace(0, p);
    BOOST_TEST(&l[0] == p.get());
    l.replace(0, text("z"));
    BOOST_TEST(l[0].text() == "z");
    BOOST_TEST(p->text() == "x");
}

BOOST_AUTO_TEST_CASE(reordering_and_removal_move_pointers_only) {
    event_list l{text("a", 3), text("b", 1), text("c", 2), text("d", 1)};
    const event* b = &l[1];
    l.sort([](const event& x, const event& y) { return x.sequence < y.sequence; });
    BOOST_TEST(texts(l) == (strings{"b", "d", "c", "a"})); // stable: b before d
    BOOST_TEST(&l[0] == b);
    l.reverse();
    BOOST_TEST(texts(l) == (strings{"a", "c", "d", "b"}));
    l.swap_events(0, 3);
    BOOST_TEST(texts(l) == (strings{"b", "c", "d", "a"}));
    auto next = l.erase(l.begin() + 1);
    BOOST_TEST(next->text() == "d");
    BOOST_TEST(texts(l) == (strings{"b", "d", "a"}));
    l.erase(l.begin(), l.begin() + 2);
    BOOST_TEST(texts(l) == (strings{"a"}));
    l.append(event_list{text("e"), text("f"), text("g")});
    BOOST_TEST(l.erase_if([](const event& e) { return e.text() == "f" || e.text() == "a"; }) == 2u);
    BOOST_TEST(texts(l) == (strings{"e", "g"}));
    BOOST_TEST(l.erase_if([](const event&) { return false; }) == 0u);
    l.pop_back();
    BOOST_TEST(texts(l) == (strings{"e"}));
    l.clear();
    BOOST_TEST(l.empty());
}

BOOST_AUTO_TEST_CASE(values_and_equality) {
    std::vector<event> v{text("a", 1), text("b", 2)};
    event_list l(v);
    BOOST_TEST(l.size() == 2u);
    BOOST_TEST((l == v));
    std::vector<event> back = l.to_vector();
    BOOST_TEST(back.size() == 2u);
    BOOST_TEST((back[1] == v[1]));
    // The vector is a copy: changing it leaves the list alone.
    back[0].sequence = 42;
    BOOST_TEST(l[0].sequence == 1);
    event_list copy = l;
    BOOST_TEST((copy == l));
    event_list other(v.begin(), v.end());
    BOOST_TEST((other == l)); // equal events, different nodes
    other.modify(1).sequence = 5;
    BOOST_TEST(!(other == l));
    BOOST_TEST(!(event_list{text("a", 1)} == l));
    std::vector<event> shorter{text("a", 1)};
    BOOST_TEST(!(l == shorter));
    const event& added = l.emplace_back(text("u"));
    BOOST_TEST(&added == &l.back());
    BOOST_TEST(l.size() == 3u);
}

BOOST_AUTO_TEST_CASE(span_views_either_form) {
    std::vector<event> v{text("a"), text("b"), text("c"), text("d")};
    event_list l(v);
    for (event_span s : {event_span(v), event_span(l)}) {
        BOOST_TEST(s.size() == 4u);
        BOOST_TEST(texts(s) == (strings{"a", "b", "c", "d"}));
        BOOST_TEST(s.front().text() == "a");
        BOOST_TEST(s.back().text() == "d");
        BOOST_TEST(texts(s.subspan(1, 2)) == (strings{"b", "c"}));
        BOOST_TEST(texts(s.subspan(3)) == (strings{"d"}));
        // Out-of-range offsets and counts are clipped, not undefined.
        BOOST_TEST(s.subspan(9).empty());
        BOOST_TEST(texts(s.subspan(2, 100)) == (strings{"c", "d"}));
        BOOST_TEST(texts(s.first(2)) == (strings{"a", "b"}));
        BOOST_TEST(texts(s.last(1)) == (strings{"d"}));
        BOOST_TEST(texts(s.last(10)) == (strings{"a", "b", "c", "d"}));
        BOOST_TEST(std::ranges::count_if(s, [](const event& e) { return e.text() < "c"; }) == 2);
        BOOST_TEST(s.rbegin()->text() == "d");
    }
    // A span over a list reads the list's own events.
    event_span s(l);
    BOOST_TEST(&s[2] == &l[2]);
    BOOST_TEST(event_span(std::span<const event>(v)).size() == 4u);
    BOOST_TEST(event_span(v.data() + 1, 2).front().text() == "b");
    event_span empty;
    BOOST_TEST(empty.empty());
    BOOST_TEST((empty.begin() == empty.end()));
    BOOST_TEST(event_span(std::vector<event>{}).empty());
    BOOST_TEST(event_span(event_list{}).subspan(0).empty());
}

BOOST_AUTO_TEST_SUITE_END()
