// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/session/state.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <map>
#include <string>
#include <string_view>

namespace json = boost::json;
using namespace libretto;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

std::map<std::string, std::string> as_map(const state& s) {
    std::map<std::string, std::string> m;
    for (const auto& kv : s) m.emplace(kv.key(), json::serialize(kv.value()));
    return m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(state_scopes)

BOOST_AUTO_TEST_CASE(prefix_constants) {
    BOOST_TEST(app_prefix == "app:");
    BOOST_TEST(user_prefix == "user:");
    BOOST_TEST(temp_prefix == "temp:");
}

BOOST_AUTO_TEST_CASE(scope_of_each_prefix) {
    BOOST_TEST((scope_of("app:theme") == state_scope::app));
    BOOST_TEST((scope_of("user:name") == state_scope::user));
    BOOST_TEST((scope_of("temp:scratch") == state_scope::temp));
    BOOST_TEST((scope_of("counter") == state_scope::session));
    // The prefix alone is still that scope (with an empty name).
    BOOST_TEST((scope_of("app:") == state_scope::app));
    BOOST_TEST((scope_of("user:") == state_scope::user));
    BOOST_TEST((scope_of("temp:") == state_scope::temp));
    // Only the first prefix counts.
    BOOST_TEST((scope_of("temp:app:x") == state_scope::temp));
    BOOST_TEST((scope_of("user:temp:x") == state_scope::user));
    static_assert(scope_of("app:x") == state_scope::app);
}

BOOST_AUTO_TEST_CASE(scope_of_near_misses_is_session) {
    for (std::string_view k : {"", "app", "appx", "appx:y", "app_x", "App:x", "APP:x", "user", "users:x",
                               "temp", "tmp:x", "Temp:x", " app:x", ":app:x", "x:app:", "session:x"}) {
        BOOST_TEST_CONTEXT("key \"" << k << "\"") { BOOST_TEST((scope_of(k) == state_scope::session)); }
    }
}

BOOST_AUTO_TEST_CASE(state_key_problem_names_empty_and_prefix_only_keys) {
    BOOST_TEST(state_key_problem("") == "a state key is empty");
    BOOST_TEST(state_key_problem("app:") == "state key 'app:' names a scope but no key");
    BOOST_TEST(state_key_problem("user:") == "state key 'user:' names a scope but no key");
    BOOST_TEST(state_key_problem("temp:") == "state key 'temp:' names a scope but no key");
    for (std::string_view ok : {"a", "app:x", "apps:", " ", "app", "user:user:", ":"}) BOOST_TEST(state_key_problem(ok).empty(), ok);
}

BOOST_AUTO_TEST_CASE(unprefixed_strips_one_prefix) {
    BOOST_TEST(unprefixed("app:theme") == "theme");
    BOOST_TEST(unprefixed("user:name") == "name");
    BOOST_TEST(unprefixed("temp:scratch") == "scratch");
    BOOST_TEST(unprefixed("counter") == "counter");
    BOOST_TEST(unprefixed("app:") == "");
    BOOST_TEST(unprefixed("") == "");
    BOOST_TEST(unprefixed("appx") == "appx");
    BOOST_TEST(unprefixed("appx:y") == "appx:y");
    BOOST_TEST(unprefixed("temp:app:x") == "app:x"); // only the outer prefix
    BOOST_TEST(unprefixed("a:b") == "a:b");
    static_assert(unprefixed("user:u") == "u");
}

BOOST_AUTO_TEST_CASE(unprefixed_is_a_view_into_the_key) {
    const std::string key = "user:name";
    std::string_view u = unprefixed(key);
    BOOST_TEST(u.data() == key.data() + 5);
    BOOST_TEST(u.size() == 4u);
}

BOOST_AUTO_TEST_CASE(split_delta_by_scope_keeps_prefixes) {
    const auto d = split_delta(obj(R"({"app:a":1,"user:u":"x","temp:t":[1],"s":true,"appx":2,"del":null,
                                        "app:gone":null})"));
    BOOST_TEST((d.app == obj(R"({"app:a":1,"app:gone":null})")));
    BOOST_TEST((d.user == obj(R"({"user:u":"x"})")));
    BOOST_TEST((d.temp == obj(R"({"temp:t":[1]})")));
    BOOST_TEST((d.session == obj(R"({"s":true,"appx":2,"del":null})")));
}

BOOST_AUTO_TEST_CASE(split_delta_of_empty_and_single_scope) {
    const auto e = split_delta({});
    BOOST_TEST(e.app.empty());
    BOOST_TEST(e.user.empty());
    BOOST_TEST(e.session.empty());
    BOOST_TEST(e.temp.empty());

    const auto only_user = split_delta(obj(R"({"user:a":1,"user:b":2})"));
    BOOST_TEST(only_user.user.size() == 2u);
    BOOST_TEST(only_user.app.empty());
    BOOST_TEST(only_user.session.empty());
    BOOST_TEST(only_user.temp.empty());
}

BOOST_AUTO_TEST_CASE(without_temp_drops_only_temp_keys) {
    BOOST_TEST((without_temp(obj(R"({"temp:a":1,"b":2,"app:c":3,"user:d":null,"temp:":0,"tempx":4})")) ==
                obj(R"({"b":2,"app:c":3,"user:d":null,"tempx":4})")));
    BOOST_TEST(without_temp({}).empty());
    BOOST_TEST(without_temp(obj(R"({"temp:a":1})")).empty());
    // The input is not modified.
    const auto in = obj(R"({"temp:a":1,"b":2})");
    (void)without_temp(in);
    BOOST_TEST(in.size() == 2u);
}

BOOST_AUTO_TEST_CASE(apply_delta_sets_overwrites_and_deletes) {
    json::object target = obj(R"({"keep":1,"over":"old","del":true,"app:x":0})");
    apply_delta(target, obj(R"({"over":{"new":1},"add":[1,2],"del":null,"app:x":5,"missing":null})"));
    BOOST_TEST((target == obj(R"({"keep":1,"over":{"new":1},"add":[1,2],"app:x":5})")));
    BOOST_TEST(!target.contains("missing")); // deleting an absent key is a no-op, not a null entry
}

BOOST_AUTO_TEST_CASE(apply_delta_edge_cases) {
    json::object target = obj(R"({"a":1})");
    apply_delta(target, {});
    BOOST_TEST((target == obj(R"({"a":1})")));

    json::object empty;
    apply_delta(empty, obj(R"({"x":null})"));
    BOOST_TEST(empty.empty());

    // Falsy values other than null are values.
    json::object t2;
    apply_delta(t2, obj(R"({"f":false,"z":0,"s":"","o":{},"a":[]})"));
    BOOST_TEST(t2.size() == 5u);
    BOOST_TEST((t2 == obj(R"({"f":false,"z":0,"s":"","o":{},"a":[]})")));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(state_class)

BOOST_AUTO_TEST_CASE(default_is_empty) {
    state s;
    BOOST_TEST(s.empty());
    BOOST_TEST(s.size() == 0u);
    BOOST_TEST((s.begin() == s.end()));
    BOOST_TEST(s.find("x") == nullptr);
    BOOST_TEST(!s.contains("x"));
    BOOST_TEST(s.values().empty());
}

BOOST_AUTO_TEST_CASE(constructor_drops_nulls) {
    state s(obj(R"({"a":null,"b":1,"c":null,"d":false,"e":null})"));
    BOOST_TEST(s.size() == 2u);
    BOOST_TEST(!s.contains("a"));
    BOOST_TEST(!s.contains("c"));
    BOOST_TEST(!s.contains("e"));
    BOOST_TEST(s.contains("b"));
    BOOST_TEST(s.contains("d")); // false is a value
    BOOST_TEST((s.values() == obj(R"({"b":1,"d":false})")));

    state all_null(obj(R"({"a":null,"b":null})"));
    BOOST_TEST(all_null.empty());

    // Nested nulls are values inside a value, not deletions.
    state nested(obj(R"({"o":{"k":null},"a":[null]})"));
    BOOST_TEST(nested.size() == 2u);
}

BOOST_AUTO_TEST_CASE(find_and_contains) {
    state s(obj(R"({"a":1,"app:b":"x"})"));
    const json::value* a = s.find("a");
    BOOST_TEST_REQUIRE(a != nullptr);
    BOOST_TEST((*a == json::value(1)));
    BOOST_TEST_REQUIRE(s.find("app:b") != nullptr);
    BOOST_TEST(s.find("app:b")->as_string() == "x");
    BOOST_TEST(s.find("b") == nullptr); // keys are matched with their prefix
    BOOST_TEST(s.find("") == nullptr);
    BOOST_TEST(s.find("A") == nullptr); // case-sensitive
    BOOST_TEST(s.contains("a"));
    BOOST_TEST(!s.contains("app:"));
}

BOOST_AUTO_TEST_CASE(set_adds_overwrites_and_null_erases) {
    state s;
    s.set("a", 1);
    s.set("b", "two");
    BOOST_TEST(s.size() == 2u);
    BOOST_TEST((*s.find("a") == json::value(1)));
    s.set("a", json::array{1, 2});
    BOOST_TEST(s.size() == 2u);
    BOOST_TEST((*s.find("a") == json::parse("[1,2]")));
    s.set("a", nullptr);
    BOOST_TEST(!s.contains("a"));
    BOOST_TEST(s.size() == 1u);
    s.set("never", nullptr); // erasing an absent key
    BOOST_TEST(!s.contains("never"));
    BOOST_TEST(s.size() == 1u);
    s.set("", 0); // the empty key is a key
    BOOST_TEST(s.contains(""));
}

BOOST_AUTO_TEST_CASE(erase) {
    state s(obj(R"({"a":1,"b":2})"));
    s.erase("a");
    BOOST_TEST(!s.contains("a"));
    BOOST_TEST(s.size() == 1u);
    s.erase("a");
    s.erase("zzz");
    BOOST_TEST(s.size() == 1u);
    BOOST_TEST(s.contains("b"));
}

BOOST_AUTO_TEST_CASE(apply_a_delta) {
    state s(obj(R"({"a":1,"b":2,"temp:t":3})"));
    s.apply(obj(R"({"a":10,"b":null,"c":"new","temp:t":null,"gone":null})"));
    BOOST_TEST((s.values() == obj(R"({"a":10,"c":"new"})")));
    s.apply({});
    BOOST_TEST(s.size() == 2u);
}

BOOST_AUTO_TEST_CASE(clear_temp_removes_only_temp_keys) {
    state s(obj(R"({"temp:a":1,"b":2,"temp:c":3,"app:d":4,"temp:":5,"user:temp:e":6,"tempf":7,"temp:g":8})"));
    s.clear_temp();
    BOOST_TEST((s.values() == obj(R"({"b":2,"app:d":4,"user:temp:e":6,"tempf":7})")));
    s.clear_temp(); // idempotent
    BOOST_TEST(s.size() == 4u);

    state only_temp(obj(R"({"temp:a":1,"temp:b":2,"temp:c":3})"));
    only_temp.clear_temp();
    BOOST_TEST(only_temp.empty());

    state none;
    none.clear_temp();
    BOOST_TEST(none.empty());
}

BOOST_AUTO_TEST_CASE(iteration_visits_every_entry_once) {
    state s(obj(R"({"x":1,"app:y":"s","temp:z":[true]})"));
    const auto m = as_map(s);
    const std::map<std::string, std::string> expected{{"x", "1"}, {"app:y", "\"s\""}, {"temp:z", "[true]"}};
    BOOST_TEST((m == expected));
    std::size_t n = 0;
    for (auto it = s.begin(); it != s.end(); ++it) ++n;
    BOOST_TEST(n == s.size());
}

BOOST_AUTO_TEST_CASE(copies_are_independent) {
    state a(obj(R"({"k":1})"));
    state b = a;
    b.set("k", 2);
    b.set("n", 3);
    BOOST_TEST((*a.find("k") == json::value(1)));
    BOOST_TEST(a.size() == 1u);
    BOOST_TEST(b.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
