// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/event/boxed_optional.hpp>
#include <libretto/event/event.hpp>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

using namespace libretto;

BOOST_AUTO_TEST_SUITE(boxed_optional_suite)

BOOST_AUTO_TEST_CASE(empty_by_default_and_one_pointer_wide) {
    boxed_optional<std::string> b;
    BOOST_TEST(!b.has_value());
    BOOST_TEST(!static_cast<bool>(b));
    BOOST_TEST((b == std::nullopt));
    static_assert(sizeof(boxed_optional<std::string>) == sizeof(void*));
    static_assert(sizeof(boxed_optional<usage>) == sizeof(void*));
}

BOOST_AUTO_TEST_CASE(holds_a_value_assigned_and_replaced) {
    boxed_optional<std::string> b = std::string("first");
    BOOST_TEST(b.has_value());
    BOOST_TEST(*b == "first");
    BOOST_TEST(b->size() == 5u);
    const std::string* box = &*b;
    b = "second"; // assigns into the existing box
    BOOST_TEST(*b == "second");
    BOOST_TEST(&*b == box);
    b = std::nullopt;
    BOOST_TEST(!b.has_value());
    b.emplace(3, 'q'); // std::string(3, 'q')
    BOOST_TEST(*b == "qqq");
    b.reset();
    BOOST_TEST(!b);
}

BOOST_AUTO_TEST_CASE(copies_are_deep_and_moves_leave_the_source_empty) {
    boxed_optional<std::string> a = std::string("value");
    boxed_optional<std::string> c = a;
    BOOST_TEST(*c == "value");
    BOOST_TEST(&*c != &*a);
    *c += "!";
    BOOST_TEST(*a == "value"); // the copy has its own box

    boxed_optional<std::string> m = std::move(a);
    BOOST_TEST(*m == "value");
    BOOST_TEST(!a.has_value()); // NOLINT(bugprone-use-after-move): the state is specified

    boxed_optional<std::string> e;
    c = e; // copying an empty box empties the target
    BOOST_TEST(!c.has_value());
    c = m;
    BOOST_TEST(*c == "value");
    c = c; // self-assignment keeps the value
    BOOST_TEST(*c == "value");
}

BOOST_AUTO_TEST_CASE(value_throws_on_an_empty_box_and_value_or_falls_back) {
    boxed_optional<std::string> b;
    BOOST_CHECK_THROW(b.value(), std::bad_optional_access);
    BOOST_CHECK_THROW(std::as_const(b).value(), std::bad_optional_access);
    BOOST_TEST(b.value_or("fallback") == "fallback");
    b = "set";
    BOOST_TEST(b.value() == "set");
    BOOST_TEST(b.value_or("fallback") == "set");
    std::string moved = std::move(b).value_or("fallback");
    BOOST_TEST(moved == "set");
}

BOOST_AUTO_TEST_CASE(compares_like_std_optional) {
    boxed_optional<std::string> a, b;
    BOOST_TEST((a == b)); // both empty
    a = "x";
    BOOST_TEST(!(a == b));
    BOOST_TEST(!(b == a));
    b = "x";
    BOOST_TEST((a == b));
    b = "y";
    BOOST_TEST(!(a == b));
    BOOST_TEST((a == std::string("x")));
    BOOST_TEST((a == "x"));
    BOOST_TEST(!(a == std::nullopt));
    BOOST_TEST((a == std::optional<std::string>("x")));
    BOOST_TEST(!(a == std::optional<std::string>()));
    BOOST_TEST((boxed_optional<std::string>() == std::optional<std::string>()));
}

BOOST_AUTO_TEST_CASE(converts_to_and_from_std_optional) {
    std::optional<std::string> so = "in";
    boxed_optional<std::string> b = so;
    BOOST_TEST(*b == "in");
    std::optional<std::string> back = b;
    BOOST_TEST(back.value() == "in");
    b = std::optional<std::string>();
    BOOST_TEST(!b.has_value());
    std::optional<std::string> none = b;
    BOOST_TEST(!none.has_value());
    BOOST_TEST(!b.to_optional().has_value());
}

BOOST_AUTO_TEST_CASE(events_keep_their_rarely_set_fields_boxed) {
    // The fields most events leave empty cost a pointer each, not their full size.
    static_assert(sizeof(event) <= 400, "event grew: keep rarely set fields boxed");
    // Containers of events move them on growth only if moving cannot throw.
    static_assert(std::is_nothrow_move_constructible_v<event>);
    static_assert(std::is_nothrow_move_constructible_v<part>);
    event e = event::make(event_type::agent_message, "a", content::from_text("hi"));
    BOOST_TEST(!e.usage.has_value());
    BOOST_TEST(!e.signature.has_value());
    e.usage = usage{3, 4, "m"};
    e.actions.compaction = event_compaction{1, 2, 0.5, 1.5, "sum", 2};
    e.actions.transfer_to_agent = "other";
    e.signature = "sig";
    event copy = e;
    BOOST_TEST((copy == e));
    copy.usage->output_tokens = 5;
    BOOST_TEST(e.usage->output_tokens == 4); // a deep copy
    BOOST_TEST(!(copy == e));
    event moved = std::move(copy);
    BOOST_TEST(moved.actions.compaction->summary == "sum");
    BOOST_TEST(*moved.actions.transfer_to_agent == "other");
}

BOOST_AUTO_TEST_SUITE_END()
