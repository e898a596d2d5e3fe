// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// sign/canonical_json.hpp: RFC 8785 (JCS) against the RFC's own examples; detail/json_stringify.hpp
// (what requests to models are written with) against the same numbers.
#include <libretto/sign/canonical_json.hpp>
#include <libretto/json_stringify.hpp>

#include <libretto/event/json.hpp> // detail::parse_precise: Boost 1.81's parser can be 1 ulp off

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>
#include <boost/system/system_error.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace json = boost::json;
using namespace libretto;

namespace {

bool throws_invalid(const json::value& v, std::string_view mention) {
    try {
        canonical_json(v);
    } catch (const boost::system::system_error& e) {
        return e.code() == errc::invalid_argument && std::string(e.what()).find(mention) != std::string::npos;
    }
    return false;
}

struct number_vector {
    std::uint64_t bits;
    const char* text;
};

// RFC 8785 Appendix B: IEEE 754 bit patterns and their ECMAScript text.
const number_vector appendix_b[] = {
    {0x0000000000000000, "0"},
    {0x8000000000000000, "0"},
    {0x0000000000000001, "5e-324"},
    {0x8000000000000001, "-5e-324"},
    {0x7fefffffffffffff, "1.7976931348623157e+308"},
    {0xffefffffffffffff, "-1.7976931348623157e+308"},
    {0x4340000000000000, "9007199254740992"},
    {0xc340000000000000, "-9007199254740992"},
    {0x4430000000000000, "295147905179352830000"},
    {0x44b52d02c7e14af5, "9.999999999999997e+22"},
    {0x44b52d02c7e14af6, "1e+23"},
    {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
    {0x444b1ae4d6e2ef4e, "999999999999999700000"},
    {0x444b1ae4d6e2ef4f, "999999999999999900000"},
    {0x444b1ae4d6e2ef50, "1e+21"},
    {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
    {0x3eb0c6f7a0b5ed8d, "0.000001"},
    {0x41b3de4355555553, "333333333.3333332"},
    {0x41b3de4355555554, "333333333.33333325"},
    {0x41b3de4355555555, "333333333.3333333"},
    {0x41b3de4355555556, "333333333.3333334"},
    {0x41b3de4355555557, "333333333.33333343"},
    {0xbecbf647612f3696, "-0.0000033333333333333333"},
    {0x43143ff3c1cb0959, "1424953923781206.2"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(canonical_json_rfc8785)

BOOST_AUTO_TEST_CASE(appendix_b_numbers) {
    for (const auto& c : appendix_b) {
        const double d = std::bit_cast<double>(c.bits);
        BOOST_TEST_CONTEXT("bits " << std::hex << c.bits) {
            BOOST_TEST(canonical_number(d) == c.text);
            BOOST_TEST(canonical_json(json::value(d)) == c.text);
        }
    }
}

BOOST_AUTO_TEST_CASE(more_number_forms) {
    BOOST_TEST(canonical_number(1.0) == "1");
    BOOST_TEST(canonical_number(-1.5) == "-1.5");
    BOOST_TEST(canonical_number(1e20) == "100000000000000000000");
    BOOST_TEST(canonical_number(1e21) == "1e+21");
    BOOST_TEST(canonical_number(1e-6) == "0.000001");
    BOOST_TEST(canonical_number(1e-7) == "1e-7");
    BOOST_TEST(canonical_number(0.1) == "0.1");
    BOOST_TEST(canonical_number(123.456) == "123.456");
    BOOST_TEST(canonical_number(1717171717.25) == "1717171717.25");
    BOOST_TEST(canonical_number(1.5e-300) == "1.5e-300");
}

BOOST_AUTO_TEST_CASE(non_finite_numbers_are_rejected) {
    BOOST_TEST(throws_invalid(json::value(std::numeric_limits<double>::quiet_NaN()), "NaN or infinite"));
    BOOST_TEST(throws_invalid(json::value(std::numeric_limits<double>::infinity()), "NaN or infinite"));
    json::object o;
    o["x"] = json::array{1, -std::numeric_limits<double>::infinity()};
    BOOST_TEST(throws_invalid(o, "NaN or infinite"));
}

// Integers are kept exact (a documented departure beyond 2^53); within 2^53 they print as
// the RFC prints the equal double, so an int and a double of one value canonicalise alike.
BOOST_AUTO_TEST_CASE(integers_exact_and_equal_to_their_doubles) {
    BOOST_TEST(canonical_json(json::value(std::int64_t{42})) == canonical_json(json::value(42.0)));
    BOOST_TEST(canonical_json(json::value(std::int64_t{-9007199254740992})) == "-9007199254740992");
    BOOST_TEST(canonical_json(json::value(std::int64_t{9007199254740993})) == "9007199254740993");
    BOOST_TEST(canonical_json(json::value(std::numeric_limits<std::int64_t>::min())) == "-9223372036854775808");
    BOOST_TEST(canonical_json(json::value(std::numeric_limits<std::uint64_t>::max())) == "18446744073709551615");
    // Two integers that one double cannot tell apart stay apart.
    BOOST_TEST(canonical_json(json::value(std::int64_t{9007199254740993})) !=
               canonical_json(json::value(std::int64_t{9007199254740992})));
}

// RFC 8785 §3.2.2 / §3.2.4: the example of the whole transformation.
BOOST_AUTO_TEST_CASE(rfc_example_of_the_whole_transformation) {
    boost::system::error_code ec;
    const auto v = libretto::detail::parse_precise(R"({
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    })", ec, {});
    BOOST_TEST_REQUIRE(!ec);
    const std::string want = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
                             "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
    BOOST_TEST(canonical_json(v) == want);
}

// RFC 8785 §3.2.3: member names sort by UTF-16 code units (the emoji's surrogates sort
// before U+FB33, though its code point is larger).
BOOST_AUTO_TEST_CASE(rfc_example_of_sorting) {
    const auto v = json::parse(R"({
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\ud83d\ude00": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis"
    })");
    const std::string want = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
                             "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\","
                             "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
                             "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}";
    BOOST_TEST(canonical_json(v) == want);
}

BOOST_AUTO_TEST_CASE(string_escaping) {
    // Only what JSON requires is escaped, in the short forms where they exist.
    std::string s = "a\"b\\c\b\f\n\r\t";
    s += '\0';
    s += "\x01\x1f\x7f/\xc3\xa9";
    BOOST_TEST(canonical_json(json::value(s)) == "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\x7f/\xc3\xa9\"");
    BOOST_TEST(canonical_json(json::value("")) == "\"\"");
}

BOOST_AUTO_TEST_CASE(nesting_and_empty_containers) {
    const auto v = json::parse(R"({"b":[],"a":{},"c":[{"z":1,"y":[true,{"x":null}]}]})");
    BOOST_TEST(canonical_json(v) == R"({"a":{},"b":[],"c":[{"y":[true,{"x":null}],"z":1}]})");
    BOOST_TEST(canonical_json(json::value(json::array{})) == "[]");
    BOOST_TEST(canonical_json(json::value(nullptr)) == "null");
}

BOOST_AUTO_TEST_CASE(key_order_of_insertion_does_not_matter) {
    json::object a, b;
    a["alpha"] = 1; a["beta"] = json::array{1, 2}; a["gamma"] = "g";
    b["gamma"] = "g"; b["alpha"] = 1; b["beta"] = json::array{1, 2};
    BOOST_TEST(canonical_json(a) == canonical_json(b));
    BOOST_TEST(canonical_json(a) == R"({"alpha":1,"beta":[1,2],"gamma":"g"})");
    // Prefixes sort first.
    json::object p;
    p["ab"] = 1; p["a"] = 2; p[""] = 3;
    BOOST_TEST(canonical_json(p) == R"({"":3,"a":2,"ab":1})");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_rejected) {
    BOOST_TEST(throws_invalid(json::value("\xff"), "a string is not valid UTF-8"));
    BOOST_TEST(throws_invalid(json::value("ok\xc3"), "not valid UTF-8 (byte 2 of 3)"));   // truncated
    BOOST_TEST(throws_invalid(json::value("\xc0\xaf"), "not valid UTF-8"));               // overlong
    BOOST_TEST(throws_invalid(json::value("\xed\xa0\x80"), "not valid UTF-8"));           // surrogate
    BOOST_TEST(throws_invalid(json::value("\xf4\x90\x80\x80"), "not valid UTF-8"));       // > U+10FFFF
    json::object o;
    o["\xfe"] = 1;
    BOOST_TEST(throws_invalid(o, "a member name is not valid UTF-8"));
}

BOOST_AUTO_TEST_CASE(excessive_nesting_is_rejected) {
    json::value v = json::array{};
    for (int i = 0; i < 1100; ++i) {
        json::array a;
        a.push_back(std::move(v));
        v = std::move(a);
    }
    BOOST_TEST(throws_invalid(v, "nesting deeper than 1000"));
}

BOOST_AUTO_TEST_CASE(utf16_order_helper) {
    using libretto::detail::utf16_less;
    BOOST_TEST(utf16_less("a", "b"));
    BOOST_TEST(!utf16_less("b", "a"));
    BOOST_TEST(!utf16_less("a", "a"));
    BOOST_TEST(utf16_less("a", "ab"));
    BOOST_TEST(utf16_less("\xf0\x9f\x98\x80", "\xef\xac\xb3"));  // U+1F600 < U+FB33 in UTF-16
    BOOST_TEST(utf16_less("\xe2\x82\xac", "\xf0\x9f\x98\x80"));  // U+20AC < U+1F600
    BOOST_TEST(utf16_less("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x81")); // same high surrogate
}

BOOST_AUTO_TEST_SUITE_END()

// JSON.stringify's text: what the providers send a model (numbers as JavaScript writes them,
// members in their order, nothing sorted or rejected that a peer would accept).
BOOST_AUTO_TEST_SUITE(json_stringify)

BOOST_AUTO_TEST_CASE(numbers_as_javascript_writes_them) {
    for (const auto& c : appendix_b) {
        const double d = std::bit_cast<double>(c.bits);
        BOOST_TEST_CONTEXT("bits " << std::hex << c.bits) { BOOST_TEST(stringify(json::value(d)) == c.text); }
    }
    // What Boost.JSON writes as 4.2E1, 6.98E1, 7E-1, 1E0, 1E21.
    BOOST_TEST(json::serialize(json::value(42.0)) == "4.2E1"); // the reason for this writer
    BOOST_TEST(stringify(json::value(42.0)) == "42");
    BOOST_TEST(stringify(json::value(69.8)) == "69.8");
    BOOST_TEST(stringify(json::value(0.7)) == "0.7");
    BOOST_TEST(stringify(json::value(1.0)) == "1");
    BOOST_TEST(stringify(json::value(-0.0)) == "0");
    BOOST_TEST(stringify(json::value(1e20)) == "100000000000000000000"); // no exponent below 1e21
    BOOST_TEST(stringify(json::value(1e21)) == "1e+21");
    BOOST_TEST(stringify(json::value(1e-7)) == "1e-7");
}

BOOST_AUTO_TEST_CASE(integers_exact_and_non_finite_as_null) {
    BOOST_TEST(stringify(json::value(std::int64_t{-9007199254740993})) == "-9007199254740993");
    BOOST_TEST(stringify(json::value(std::uint64_t{18446744073709551615u})) == "18446744073709551615");
    json::array a{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                  -std::numeric_limits<double>::infinity(), nullptr, true, false};
    BOOST_TEST(stringify(a) == "[null,null,null,null,true,false]");
}

BOOST_AUTO_TEST_CASE(members_in_their_order_strings_escaped) {
    json::object o;
    o["z"] = 1;
    o["a"] = json::array{};
    o["m"] = json::object{};
    o["s"] = std::string_view("q\"b\\ \b\f\n\r\t \x01\x1f \x7f caf\xc3\xa9 \xff", 23);
    BOOST_TEST(stringify(o) == "{\"z\":1,\"a\":[],\"m\":{},\"s\":\"q\\\"b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f \x7f caf\xc3\xa9 \xff\"}");
    // Boost.JSON reads it back as the same value (bytes that are not UTF-8 aside).
    json::object p = o;
    p["s"] = "\x01 caf\xc3\xa9";
    BOOST_TEST(json::parse(stringify(p)) == json::value(p));
    BOOST_TEST(stringify(json::value("")) == "\"\"");
    BOOST_TEST(stringify(json::object{}) == "{}");
}

// Runs without escapes are copied eight bytes at a time: an escape at every offset within
// and across those words, and UTF-8 next to them, is still found.
BOOST_AUTO_TEST_CASE(escapes_at_every_offset) {
    for (std::size_t before = 0; before < 20; ++before) {
        for (std::size_t after = 0; after < 12; ++after) {
            for (std::string_view special : {"\"", "\\", "\n", "\x01", "\x1f"}) {
                const std::string text = std::string(before, 'a') + std::string(special) + "\xC3\xA9" + std::string(after, 'b');
                std::string escaped = special == "\"" ? "\\\"" : special == "\\" ? "\\\\" : special == "\n" ? "\\n"
                                    : special == "\x01" ? "\\u0001" : "\\u001f";
                const std::string want = "\"" + std::string(before, 'a') + escaped + "\xC3\xA9" + std::string(after, 'b') + "\"";
                BOOST_TEST_CONTEXT("before " << before << ", after " << after) {
                    BOOST_TEST(stringify(json::value(text)) == want);
                }
            }
        }
    }
    const std::string plain(1000, 'x');
    BOOST_TEST(stringify(json::value(plain)) == "\"" + plain + "\"");
}

BOOST_AUTO_TEST_CASE(round_trips_through_a_parser) {
    const json::value v = json::parse(R"({"a":[1,-2,3.25,1e300,-1.5e-300,"x",{"b":null}],"c":{"d":[[]]},"e":0.1})");
    boost::system::error_code ec;
    BOOST_TEST(detail::parse_precise(stringify(v), ec, {}) == v);
    BOOST_TEST(!ec);
    BOOST_TEST(stringify(v) == R"({"a":[1,-2,3.25,1e+300,-1.5e-300,"x",{"b":null}],"c":{"d":[[]]},"e":0.1})");
}

BOOST_AUTO_TEST_CASE(excessive_nesting_is_refused) {
    json::value v = 1;
    for (int i = 0; i < 1002; ++i) v = json::array{std::move(v)};
    try {
        stringify(v);
        BOOST_FAIL("no error for 1002 levels");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("deeper than 1000 levels") != std::string::npos, e.what());
    }
    json::value ok = 1;
    for (int i = 0; i < 1000; ++i) ok = json::array{std::move(ok)};
    BOOST_TEST(stringify(ok).size() == 2001u);
}

BOOST_AUTO_TEST_SUITE_END()
