// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/tool/function_tool.hpp>

#include <boost/test/unit_test.hpp>

#include <libretto/tool/arguments.hpp>
#include <libretto/tool/run_tool_call.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe/class.hpp>
#include <boost/describe/enum.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace libretto;

namespace fixtures {

enum class temp_unit { celsius, fahrenheit };
BOOST_DESCRIBE_ENUM(temp_unit, celsius, fahrenheit)

struct weather_args {
    std::string city;
    std::optional<temp_unit> unit;
};
BOOST_DESCRIBE_STRUCT(weather_args, (), (city, unit))

struct address {
    std::string street;
    std::optional<std::string> zip;
};
BOOST_DESCRIBE_STRUCT(address, (), (street, zip))

struct line_item {
    std::string sku;
    std::int32_t qty = 0;
};
BOOST_DESCRIBE_STRUCT(line_item, (), (sku, qty))

struct order_args {
    std::vector<line_item> items;
    address ship_to;
    std::optional<std::string> note;
};
BOOST_DESCRIBE_STRUCT(order_args, (), (items, ship_to, note))

struct all_types {
    std::string s;
    bool b = false;
    std::int8_t i8 = 0;
    std::uint16_t u16 = 0;
    int i32 = 0;
    std::int64_t i64 = 0;
    std::uint64_t u64 = 0;
    float f = 0;
    double d = 0;
    temp_unit e = temp_unit::celsius;
    std::optional<int> opt;
    std::vector<std::vector<int>> grid;
    std::map<std::string, double> scores;
    json::value any;
    json::object obj;
    json::array arr;
};
BOOST_DESCRIBE_STRUCT(all_types, (), (s, b, i8, u16, i32, i64, u64, f, d, e, opt, grid, scores, any, obj, arr))

struct base_args {
    std::string id;
};
BOOST_DESCRIBE_STRUCT(base_args, (), (id))
struct derived_args : base_args {
    int n = 0;
};
BOOST_DESCRIBE_STRUCT(derived_args, (base_args), (n))

struct sum_result {
    int sum = 0;
    std::string label;
};
BOOST_DESCRIBE_STRUCT(sum_result, (), (sum, label))

struct add_args {
    int a = 0;
    int b = 0;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))

asio::awaitable<json::value> get_weather(weather_args args, tool_context& ctx) {
    ctx.state()["last_city"] = json::value(args.city);
    json::object out;
    out["city"] = args.city;
    out["temp"] = 21;
    out["unit"] = args.unit && *args.unit == temp_unit::fahrenheit ? "F" : "C";
    json::value v(std::move(out));
    co_return v;
}

int add(add_args a) noexcept { return a.a + a.b; }

sum_result add_labelled(const add_args& a, tool_context& ctx) {
    return sum_result{a.a + a.b, ctx.function_call_id()};
}

} // namespace fixtures

using namespace fixtures;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

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

invocation_options opts() {
    invocation_options o;
    o.invocation_id = "inv";
    o.session_id = "s1";
    o.agent_name = "assistant";
    return o;
}

/// Calls `t` with `args` (JSON text) through run_tool_call; returns the response.
template <class T>
tool_response_part call(const T& t, std::string_view args, invocation_context& inv, std::string id = "c1") {
    tool_set s = tools(t);
    tool_call_part c;
    c.tool_call_id = std::move(id);
    c.tool_name = t.declaration().name;
    c.args = obj(args);
    tool_context ctx(inv, c);
    return run(run_tool_call(s, c, ctx));
}

template <class T>
tool_response_part call(const T& t, std::string_view args) {
    invocation_context inv(opts());
    return call(t, args, inv);
}

/// The error message parse_arguments<T> reports for `args`, and its code.
template <class T>
std::pair<std::string, boost::system::error_code> parse_error(std::string_view args) {
    try {
        (void)parse_arguments<T>(json::parse(args));
    } catch (const tool_error& e) {
        return {e.what(), e.code()};
    }
    return {"<no error>", {}};
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(schema)

BOOST_AUTO_TEST_CASE(weather_schema) {
    json::object expected = obj(R"({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        },
        "required": ["city"],
        "additionalProperties": false
    })");
    BOOST_TEST(arguments_schema<weather_args>() == expected);
}

BOOST_AUTO_TEST_CASE(every_type_maps_as_documented) {
    json::object expected = obj(R"({
        "type": "object",
        "properties": {
            "s":   {"type": "string"},
            "b":   {"type": "boolean"},
            "i8":  {"type": "integer", "minimum": -128, "maximum": 127},
            "u16": {"type": "integer", "minimum": 0, "maximum": 65535},
            "i32": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647},
            "i64": {"type": "integer"},
            "u64": {"type": "integer", "minimum": 0, "maximum": 18446744073709551615},
            "f":   {"type": "number"},
            "d":   {"type": "number"},
            "e":   {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "opt": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647},
            "grid": {"type": "array", "items": {"type": "array", "items":
                        {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}}},
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
            "any": {},
            "obj": {"type": "object"},
            "arr": {"type": "array"}
        },
        "required": ["s","b","i8","u16","i32","i64","u64","f","d","e","grid","scores","any","obj","arr"],
        "additionalProperties": false
    })");
    json::object got = arguments_schema<all_types>();
    BOOST_TEST(got == expected, json::serialize(got));
    // "required" follows the declaration order.
    BOOST_TEST(got.at("required") == expected.at("required"));
}

BOOST_AUTO_TEST_CASE(nested_structs_and_arrays_of_structs) {
    json::object expected = obj(R"({
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}
                },
                "required": ["sku", "qty"],
                "additionalProperties": false
            }},
            "ship_to": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["street"],
                "additionalProperties": false
            },
            "note": {"type": "string"}
        },
        "required": ["items", "ship_to"],
        "additionalProperties": false
    })");
    BOOST_TEST(arguments_schema<order_args>() == expected);
}

BOOST_AUTO_TEST_CASE(inherited_members_come_first) {
    json::object expected = obj(R"({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "n": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}
        },
        "required": ["id", "n"],
        "additionalProperties": false
    })");
    BOOST_TEST(arguments_schema<derived_args>() == expected);
}

BOOST_AUTO_TEST_CASE(no_arguments_schema) {
    BOOST_TEST(arguments_schema<no_arguments>() ==
               obj(R"({"type":"object","properties":{},"required":[],"additionalProperties":false})"));
}

BOOST_AUTO_TEST_CASE(field_descriptions_by_path) {
    field_descriptions d{{"items", "What to order"},
                         {"items.qty", "How many"},
                         {"ship_to.street", "Street and number"},
                         {"note", "For the courier"}};
    json::object s = arguments_schema<order_args>(d);
    auto& props = s.at("properties").as_object();
    BOOST_TEST(props.at("items").at("description") == json::value("What to order"));
    BOOST_TEST(props.at("items").at("items").at("properties").at("qty") ==
               json::parse(R"({"type":"integer","minimum":-2147483648,"maximum":2147483647,"description":"How many"})"));
    BOOST_TEST(props.at("ship_to").at("properties").at("street") ==
               json::parse(R"({"type":"string","description":"Street and number"})"));
    BOOST_TEST(props.at("note") == json::parse(R"({"type":"string","description":"For the courier"})"));
    BOOST_TEST(!props.at("ship_to").as_object().contains("description"));
    BOOST_TEST(!props.at("items").at("items").at("properties").at("sku").as_object().contains("description"));
}

BOOST_AUTO_TEST_CASE(a_description_for_no_field_is_an_error) {
    field_descriptions d{{"city", "ok"}, {"cty", "typo"}};
    try {
        (void)arguments_schema<weather_args>(d);
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("field description for unknown field 'cty'") != std::string::npos);
    }
    field_descriptions nested{{"ship_to.street.x", "too deep"}};
    BOOST_CHECK_THROW((void)arguments_schema<order_args>(nested), boost::system::system_error);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(parsing)

BOOST_AUTO_TEST_CASE(every_type_decodes) {
    all_types a = parse_arguments<all_types>(json::parse(R"({
        "s": "text", "b": true, "i8": -128, "u16": 65535, "i32": 3.0, "i64": -9223372036854775808,
        "u64": 18446744073709551615, "f": 1.5, "d": 7, "e": "fahrenheit", "opt": 4,
        "grid": [[1, 2], [], [3]], "scores": {"math": 1.25, "art": 2},
        "any": [null, "x"], "obj": {"k": 1}, "arr": [1, "two"]
    })"));
    BOOST_TEST(a.s == "text");
    BOOST_TEST(a.b);
    BOOST_TEST(a.i8 == -128);
    BOOST_TEST(a.u16 == 65535);
    BOOST_TEST(a.i32 == 3);
    BOOST_TEST(a.i64 == INT64_MIN);
    BOOST_TEST(a.u64 == UINT64_MAX);
    BOOST_TEST(a.f == 1.5f);
    BOOST_TEST(a.d == 7.0);
    BOOST_TEST((a.e == temp_unit::fahrenheit));
    BOOST_TEST((a.opt == std::optional<int>(4)));
    BOOST_TEST((a.grid == std::vector<std::vector<int>>{{1, 2}, {}, {3}}));
    BOOST_TEST((a.scores == std::map<std::string, double>{{"art", 2.0}, {"math", 1.25}}));
    BOOST_TEST(a.any == json::parse(R"([null,"x"])"));
    BOOST_TEST(a.obj == obj(R"({"k":1})"));
    BOOST_TEST(json::value(a.arr) == json::parse(R"([1,"two"])"));
}

BOOST_AUTO_TEST_CASE(optional_absent_or_null_is_empty) {
    weather_args a = parse_arguments<weather_args>(json::parse(R"({"city":"Oslo"})"));
    BOOST_TEST(a.city == "Oslo");
    BOOST_TEST(!a.unit.has_value());
    weather_args b = parse_arguments<weather_args>(json::parse(R"({"city":"Oslo","unit":null})"));
    BOOST_TEST(!b.unit.has_value());
    weather_args c = parse_arguments<weather_args>(json::parse(R"({"city":"","unit":"celsius"})"));
    BOOST_TEST(c.city.empty());
    BOOST_TEST((c.unit == std::optional<temp_unit>(temp_unit::celsius)));
}

BOOST_AUTO_TEST_CASE(nested_and_inherited_decode) {
    order_args o = parse_arguments<order_args>(json::parse(R"({
        "items": [{"sku": "A", "qty": 2}, {"sku": "B", "qty": 1}],
        "ship_to": {"street": "Main 1"}
    })"));
    BOOST_REQUIRE(o.items.size() == 2u);
    BOOST_TEST(o.items[1].sku == "B");
    BOOST_TEST(o.items[1].qty == 1);
    BOOST_TEST(o.ship_to.street == "Main 1");
    BOOST_TEST(!o.ship_to.zip.has_value());
    BOOST_TEST(!o.note.has_value());

    derived_args d = parse_arguments<derived_args>(json::parse(R"({"id":"x","n":5})"));
    BOOST_TEST(d.id == "x");
    BOOST_TEST(d.n == 5);
}

BOOST_AUTO_TEST_CASE(missing_required_field) {
    auto [m, c] = parse_error<weather_args>(R"({"unit":"celsius"})");
    BOOST_TEST(m == "args.city: missing required field");
    BOOST_TEST((c == errc::missing_field));
    auto [m2, c2] = parse_error<order_args>(R"({"items":[],"ship_to":{}})");
    BOOST_TEST(m2 == "args.ship_to.street: missing required field");
    auto [m3, c3] = parse_error<derived_args>(R"({"n":1})");
    BOOST_TEST(m3 == "args.id: missing required field");
}

BOOST_AUTO_TEST_CASE(unknown_fields) {
    auto [m, c] = parse_error<weather_args>(R"({"city":"Oslo","country":"NO"})");
    BOOST_TEST(m == "args.country: unknown field (expected one of: city, unit)");
    BOOST_TEST((c == errc::invalid_argument));
    // An unknown key that makes the key count equal the member count (unit absent).
    auto [m2, c2] = parse_error<weather_args>(R"({"city":"Oslo","units":"celsius"})");
    BOOST_TEST(m2 == "args.units: unknown field (expected one of: city, unit)");
    auto [m3, c3] = parse_error<order_args>(R"({"items":[{"sku":"A","qty":1,"price":3}],"ship_to":{"street":"s"}})");
    BOOST_TEST(m3 == "args.items[0].price: unknown field (expected one of: sku, qty)");
    auto [m4, c4] = parse_error<no_arguments>(R"({"x":1})");
    BOOST_TEST(m4 == "args.x: unknown field (no fields are accepted)");
    BOOST_TEST(parse_error<no_arguments>("{}").first == "<no error>");
}

BOOST_AUTO_TEST_CASE(wrong_types_name_the_path) {
    struct kase {
        std::string_view args;
        std::string_view message;
    };
    const kase cases[] = {
        {R"({"city":3})", "args.city: expected string, got integer"},
        {R"({"city":null})", "args.city: expected string, got null"},
        {R"({"city":["Oslo"]})", "args.city: expected string, got array"},
        {R"({"city":"Oslo","unit":1})", "args.unit: expected string, got integer"},
    };
    for (const auto& k : cases) {
        auto [m, c] = parse_error<weather_args>(k.args);
        BOOST_TEST(m == k.message);
        BOOST_TEST((c == errc::wrong_type));
    }
    auto [m, c] = parse_error<order_args>(
        R"({"items":[{"sku":"A","qty":1},{"sku":"B","qty":2},{"sku":"C","qty":"3"}],"ship_to":{"street":"s"}})");
    BOOST_TEST(m == "args.items[2].qty: expected integer, got string");
    BOOST_TEST((c == errc::wrong_type));
    BOOST_TEST(parse_error<order_args>(R"({"items":{},"ship_to":{"street":"s"}})").first ==
               "args.items: expected array, got object");
    BOOST_TEST(parse_error<order_args>(R"({"items":[],"ship_to":"Main 1"})").first ==
               "args.ship_to: expected object, got string");
    BOOST_TEST(parse_error<order_args>(R"({"items":[7],"ship_to":{"street":"s"}})").first ==
               "args.items[0]: expected object, got integer");
    BOOST_TEST(parse_error<all_types>(R"({"grid":[[1],[2,"x"]]})").first == "args.s: missing required field");
}

BOOST_AUTO_TEST_CASE(scalar_strictness) {
    const std::string base = R"("s":"","i8":0,"u16":0,"i32":0,"i64":0,"u64":0,"f":0,"d":0,"e":"celsius",)"
                             R"("grid":[],"scores":{},"any":null,"obj":{},"arr":[])";
    auto with = [&](std::string_view extra) { return "{" + base + "," + std::string(extra) + "}"; };
    BOOST_TEST(parse_error<all_types>(with(R"("b":"true")")).first == "args.b: expected boolean, got string");
    BOOST_TEST(parse_error<all_types>(with(R"("b":1)")).first == "args.b: expected boolean, got integer");
    std::string ok = with(R"("b":false)");
    BOOST_TEST(parse_error<all_types>(ok).first == "<no error>");
    // grid's nested error
    std::string bad_grid = "{" + base.substr(0, base.find("\"grid\"")) + R"("grid":[[1],[2,"x"]],"scores":{},)" +
                           R"("any":null,"obj":{},"arr":[],"b":true})";
    BOOST_TEST(parse_error<all_types>(bad_grid).first == "args.grid[1][1]: expected integer, got string");
    std::string bad_map = "{" + base.substr(0, base.find("\"scores\"")) + R"("scores":{"math":"A"},)" +
                          R"("any":null,"obj":{},"arr":[],"b":true})";
    BOOST_TEST(parse_error<all_types>(bad_map).first == "args.scores.math: expected number, got string");
    std::string bad_obj = "{" + base.substr(0, base.find("\"obj\"")) + R"("obj":[],"arr":[],"b":true})";
    BOOST_TEST(parse_error<all_types>(bad_obj).first == "args.obj: expected object, got array");
    std::string bad_arr = "{" + base.substr(0, base.find("\"arr\"")) + R"("arr":{},"b":true})";
    BOOST_TEST(parse_error<all_types>(bad_arr).first == "args.arr: expected array, got object");
    BOOST_TEST(parse_error<all_types>(with(R"("b":true,"f":"1")")).first == "args.f: expected number, got string");
}

BOOST_AUTO_TEST_CASE(integer_range_and_overflow) {
    const std::string base = R"("s":"","b":true,"u16":0,"i32":0,"i64":0,"u64":0,"f":0,"d":0,"e":"celsius",)"
                             R"("grid":[],"scores":{},"any":null,"obj":{},"arr":[])";
    auto i8 = [&](std::string_view v) { return parse_error<all_types>("{" + base + ",\"i8\":" + std::string(v) + "}"); };
    BOOST_TEST(i8("127").first == "<no error>");
    BOOST_TEST(i8("-128").first == "<no error>");
    BOOST_TEST(i8("128").first == "args.i8: integer 128 out of range [-128, 127]");
    BOOST_TEST((i8("128").second == errc::invalid_argument));
    BOOST_TEST(i8("-129").first == "args.i8: integer -129 out of range [-128, 127]");
    BOOST_TEST(i8("18446744073709551615").first == "args.i8: integer 18446744073709551615 out of range [-128, 127]");
    BOOST_TEST(i8("2.5").first == "args.i8: expected integer, got number");
    BOOST_TEST((i8("2.5").second == errc::wrong_type));
    BOOST_TEST(i8("1e300").first == "args.i8: integer 1e+300 out of range [-128, 127]");
    BOOST_TEST(i8("-0.0").first == "<no error>");
    BOOST_TEST(i8("\"5\"").first == "args.i8: expected integer, got string");

    auto field = [&](std::string_view name, std::string_view v) {
        std::string b = base;
        std::string key = "\"" + std::string(name) + "\":0";
        b.replace(b.find(key), key.size(), "\"" + std::string(name) + "\":" + std::string(v));
        return parse_error<all_types>("{" + b + ",\"i8\":0}").first;
    };
    BOOST_TEST(field("u16", "65536") == "args.u16: integer 65536 out of range [0, 65535]");
    BOOST_TEST(field("u16", "-1") == "args.u16: integer -1 out of range [0, 65535]");
    BOOST_TEST(field("u64", "-1") == "args.u64: integer -1 out of range [0, 18446744073709551615]");
    BOOST_TEST(field("u64", "18446744073709551615") == "<no error>");
    BOOST_TEST(field("u64", "1.8446744073709552E19") ==
               "args.u64: integer 18446744073709552000 out of range [0, 18446744073709551615]");
    BOOST_TEST(field("i64", "9223372036854775808") ==
               "args.i64: integer 9223372036854775808 out of range [-9223372036854775808, 9223372036854775807]");
    BOOST_TEST(field("i64", "9.223372036854775807E18") ==
               "args.i64: integer 9223372036854776000 out of range [-9223372036854775808, 9223372036854775807]");
    BOOST_TEST(field("i64", "-9.223372036854775808E18") == "<no error>");
    BOOST_TEST(field("i32", "2147483648") == "args.i32: integer 2147483648 out of range [-2147483648, 2147483647]");
    BOOST_TEST(field("f", "1e300") == "args.f: number 1e+300 out of range");
    BOOST_TEST(field("f", "3.4e38") == "<no error>");
    BOOST_TEST(field("d", "1e300") == "<no error>");
}

BOOST_AUTO_TEST_CASE(enum_values) {
    auto [m, c] = parse_error<weather_args>(R"({"city":"Oslo","unit":"kelvin"})");
    BOOST_TEST(m == R"(args.unit: unknown value "kelvin" (expected one of: celsius, fahrenheit))");
    BOOST_TEST((c == errc::unknown_enum_value));
    BOOST_TEST(parse_error<weather_args>(R"({"city":"Oslo","unit":"Celsius"})").second == errc::unknown_enum_value);
}

BOOST_AUTO_TEST_CASE(top_level_must_be_an_object) {
    BOOST_TEST(parse_error<weather_args>("[]").first == "args: expected object, got array");
    BOOST_TEST(parse_error<weather_args>("null").first == "args: expected object, got null");
}

BOOST_AUTO_TEST_CASE(non_throwing_form_reports_code_and_path) {
    weather_args out;
    decode_error e;
    BOOST_TEST(!try_parse_arguments(json::parse(R"({"city":1})"), out, e));
    BOOST_TEST((e.code == errc::wrong_type));
    BOOST_TEST(e.path == "city");
    BOOST_TEST(e.detail == "expected string, got integer");
    BOOST_TEST(arguments_error_message(e) == "args.city: expected string, got integer");
    decode_error top;
    BOOST_TEST(!try_parse_arguments(json::parse("1"), out, top));
    BOOST_TEST(top.path.empty());
    BOOST_TEST(arguments_error_message(top) == "args: expected object, got integer");
    BOOST_TEST(try_parse_arguments(json::parse(R"({"city":"x"})"), out, e));
    BOOST_TEST(out.city == "x");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(function_tool_tests)

BOOST_AUTO_TEST_CASE(declaration_from_the_callable) {
    auto t = function_tool("get_weather", "Current weather in a city", get_weather);
    static_assert(tool<decltype(t)>);
    static_assert(std::is_same_v<decltype(t)::arguments_type, weather_args>);
    static_assert(decltype(t)::takes_context);
    const tool_declaration& d = t.declaration();
    BOOST_TEST(d.name == "get_weather");
    BOOST_TEST(d.description == "Current weather in a city");
    BOOST_TEST(!d.long_running);
    BOOST_TEST(d.parameters == obj(R"({
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
        "additionalProperties": false
    })"));
}

BOOST_AUTO_TEST_CASE(options_long_running_and_descriptions) {
    function_tool_options o;
    o.long_running = true;
    o.descriptions = {{"city", "City name, in English"}};
    auto t = function_tool("get_weather", "d", get_weather, o);
    BOOST_TEST(t.declaration().long_running);
    BOOST_TEST(t.declaration().description == "d"); // the agent tells the model, not the tool
    BOOST_TEST(t.declaration().parameters.at("properties").at("city") ==
               json::parse(R"({"type":"string","description":"City name, in English"})"));

    function_tool_options typo;
    typo.descriptions = {{"town", "?"}};
    BOOST_CHECK_THROW(function_tool("get_weather", "d", get_weather, typo), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(invalid_name_is_rejected_at_construction) {
    try {
        auto t = function_tool("get weather", "d", get_weather);
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("invalid tool name 'get weather'") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(awaitable_callable_with_context_writes_state) {
    auto t = function_tool("get_weather", "d", get_weather);
    invocation_context inv(opts());
    tool_set s = tools(t);
    tool_call_part c;
    c.tool_call_id = "w1";
    c.tool_name = "get_weather";
    c.args = obj(R"({"city":"Oslo","unit":"fahrenheit"})");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(s, c, ctx));
    BOOST_TEST(!r.error.has_value());
    BOOST_TEST(r.result == json::parse(R"({"city":"Oslo","temp":21,"unit":"F"})"));
    BOOST_TEST(*inv.state().find("last_city") == json::value("Oslo"));
    BOOST_TEST(ctx.take_actions().state_delta == obj(R"({"last_city":"Oslo"})"));
}

BOOST_AUTO_TEST_CASE(synchronous_callables) {
    // R(Args), noexcept function pointer
    auto adder = function_tool("add", "Adds", add);
    static_assert(!decltype(adder)::takes_context);
    BOOST_TEST(call(adder, R"({"a":2,"b":40})").result == json::value(42));

    // R(const Args&, tool_context&) with a described struct result
    auto labelled = function_tool("add_labelled", "Adds", add_labelled);
    invocation_context inv(opts());
    BOOST_TEST(call(labelled, R"({"a":1,"b":2})", inv, "call-x").result ==
               json::parse(R"({"sum":3,"label":"call-x"})"));

    // a capturing, non-mutable lambda with state behind a pointer; Args by rvalue reference
    auto seen = std::make_shared<std::vector<std::string>>();
    auto logger = function_tool("log", "Logs", [seen](weather_args&& a) { seen->push_back(a.city); });
    tool_response_part r = call(logger, R"({"city":"Bergen"})");
    BOOST_TEST(!r.error.has_value());
    BOOST_TEST(r.result.is_null()); // void -> null
    BOOST_TEST((*seen == std::vector<std::string>{"Bergen"}));

    // returning std::string, std::vector, json::object
    auto upper = function_tool("city", "", [](weather_args a) { return a.city + "!"; });
    BOOST_TEST(call(upper, R"({"city":"x"})").result == json::value("x!"));
    auto list = function_tool("list", "", [](add_args a) { return std::vector<int>{a.a, a.b}; });
    BOOST_TEST(call(list, R"({"a":1,"b":2})").result == json::parse("[1,2]"));
}

BOOST_AUTO_TEST_CASE(tools_without_arguments) {
    auto count = std::make_shared<int>(0);
    auto ping = function_tool("ping", "Pings", [count] {
        ++*count;
        return std::string("pong");
    });
    static_assert(std::is_same_v<decltype(ping)::arguments_type, no_arguments>);
    BOOST_TEST(ping.declaration().parameters ==
               obj(R"({"type":"object","properties":{},"required":[],"additionalProperties":false})"));
    BOOST_TEST(call(ping, "{}").result == json::value("pong"));
    tool_response_part r = call(ping, R"({"x":1})");
    BOOST_TEST(r.error.value_or("<no error>") == std::string("args.x: unknown field (no fields are accepted)"));
    BOOST_TEST(*count == 1); // not run on bad arguments

    auto stop = function_tool("exit_loop", "Stops the loop", [](tool_context& ctx) -> asio::awaitable<void> {
        ctx.escalate();
        co_return;
    });
    static_assert(decltype(stop)::takes_context);
    invocation_context inv(opts());
    tool_set s = tools(stop);
    tool_call_part c;
    c.tool_call_id = "e";
    c.tool_name = "exit_loop";
    tool_context ctx(inv, c);
    tool_response_part done = run(run_tool_call(s, c, ctx));
    BOOST_TEST(!done.error.has_value());
    BOOST_TEST(done.result.is_null());
    BOOST_TEST((ctx.actions().escalate == std::optional<bool>(true)));
}

BOOST_AUTO_TEST_CASE(awaitable_callables_suspend) {
    auto slow_add = function_tool("slow_add", "", [](add_args a) -> asio::awaitable<int> {
        auto ex = co_await asio::this_coro::executor;
        co_await asio::post(ex, asio::use_awaitable);
        co_return a.a + a.b;
    });
    BOOST_TEST(call(slow_add, R"({"a":20,"b":22})").result == json::value(42));

    auto structured = function_tool("structured", "", [](add_args a, tool_context&) -> asio::awaitable<sum_result> {
        sum_result r{a.a * a.b, "product"};
        co_return r;
    });
    BOOST_TEST(call(structured, R"({"a":6,"b":7})").result == json::parse(R"({"sum":42,"label":"product"})"));
}

BOOST_AUTO_TEST_CASE(raw_json_arguments) {
    function_tool_options o;
    o.parameters = obj(R"({"type":"object","properties":{"q":{"type":"string"}}})");
    auto raw = function_tool("raw", "", [](json::object args) { return args.size(); }, o);
    static_assert(std::is_same_v<decltype(raw)::arguments_type, json::object>);
    BOOST_TEST(raw.declaration().parameters == *o.parameters);
    BOOST_TEST(call(raw, R"({"q":"x","extra":1})").result == json::value(2));

    auto untyped = function_tool("untyped", "", [](const json::object& args) { return json::value(args); });
    BOOST_TEST(untyped.declaration().parameters == obj(R"({"type":"object"})"));

    function_tool_options both;
    both.parameters = obj(R"({"type":"object"})");
    both.descriptions = {{"city", "x"}};
    BOOST_CHECK_THROW(function_tool("w", "", get_weather, both), boost::system::system_error);
    // A schema by hand replaces the generated one; decoding stays strict.
    function_tool_options by_hand;
    by_hand.parameters = obj(R"({"type":"object","properties":{"city":{"type":"string","minLength":1}}})");
    auto w = function_tool("w", "", get_weather, by_hand);
    BOOST_TEST(w.declaration().parameters == *by_hand.parameters);
    BOOST_TEST(call(w, R"({"city":"x","town":"x"})").error.value_or("<no error>") == std::string("args.town: unknown field (expected one of: city, unit)"));
}

BOOST_AUTO_TEST_CASE(bad_arguments_reach_the_model_and_the_callable_does_not_run) {
    auto runs = std::make_shared<int>(0);
    auto t = function_tool("order", "", [runs](order_args) {
        ++*runs;
        return true;
    });
    BOOST_TEST(call(t, R"({"items":[{"sku":"A","qty":1},{"sku":"B","qty":"2"}],"ship_to":{"street":"s"}})").error.value_or("<no error>") ==
               std::string("args.items[1].qty: expected integer, got string"));
    BOOST_TEST(call(t, R"({"items":[]})").error.value_or("<no error>") == std::string("args.ship_to: missing required field"));
    BOOST_TEST(call(t, R"({"items":[],"ship_to":{"street":"s"},"x":0})").error.value_or("<no error>") ==
               std::string("args.x: unknown field (expected one of: items, ship_to, note)"));
    BOOST_TEST(call(t, R"({"items":[{"sku":"A","qty":3000000000}],"ship_to":{"street":"s"}})").error.value_or("<no error>") ==
               std::string("args.items[0].qty: integer 3000000000 out of range [-2147483648, 2147483647]"));
    BOOST_TEST(*runs == 0);
    tool_response_part ok = call(t, R"({"items":[],"ship_to":{"street":"s"}})");
    BOOST_TEST(ok.result == json::value(true));
    BOOST_TEST(*runs == 1);

    // Directly: call() throws tool_error with the argument error's code.
    invocation_context inv(opts());
    tool_context ctx(inv, "c", "order");
    try {
        (void)run(t.call(obj(R"({"items":[]})"), ctx));
        BOOST_FAIL("no exception");
    } catch (const tool_error& e) {
        BOOST_TEST((e.code() == errc::missing_field));
        BOOST_TEST(std::string(e.what()) == "args.ship_to: missing required field");
    }
}

BOOST_AUTO_TEST_CASE(a_plain_callable_makes_a_synchronous_tool_whose_call_now_matches_call) {
    auto adder = function_tool("add", "Adds", add);
    auto labelled = function_tool("add_labelled", "Adds", add_labelled);
    auto logger = function_tool("log", "Logs", [](weather_args) {});
    auto weather = function_tool("get_weather", "d", get_weather);
    static_assert(synchronous_tool<decltype(adder)>);
    static_assert(synchronous_tool<decltype(labelled)>);
    static_assert(synchronous_tool<decltype(logger)>);
    static_assert(!synchronous_tool<decltype(weather)>); // a coroutine: awaited
    BOOST_TEST(any_tool(adder).synchronous());
    BOOST_TEST(!any_tool(weather).synchronous());

    invocation_context inv(opts());
    tool_context ctx(inv, "c1", "add");
    BOOST_TEST(adder.call_now(obj(R"({"a":2,"b":3})"), ctx) == json::value(5));
    BOOST_TEST(run(adder.call(obj(R"({"a":2,"b":3})"), ctx)) == json::value(5));
    BOOST_TEST(logger.call_now(obj(R"({"city":"Oslo"})"), ctx).is_null());

    // The context reaches the callable: add_labelled labels the sum with the call's id.
    tool_context lctx(inv, "c2", "add_labelled");
    json::value now = labelled.call_now(obj(R"({"a":1,"b":1})"), lctx);
    invocation_context inv2(opts());
    tool_context lctx2(inv2, "c2", "add_labelled");
    json::value co = run(labelled.call(obj(R"({"a":1,"b":1})"), lctx2));
    BOOST_TEST(now == co);
    BOOST_TEST((lctx.take_actions() == lctx2.take_actions()));

    // Bad arguments: the same tool_error, naming the field, and the callable does not run.
    try {
        (void)adder.call_now(obj(R"({"a":"x","b":1})"), ctx);
        BOOST_FAIL("no exception");
    } catch (const tool_error& e) {
        BOOST_TEST((e.code() == errc::wrong_type));
        BOOST_TEST(std::string(e.what()) == "args.a: expected integer, got string");
    }
}

BOOST_AUTO_TEST_CASE(callable_that_throws) {
    auto boom = function_tool("boom", "", [](weather_args a) -> int {
        if (a.city == "tool") throw tool_error("no such city: tool", errc::not_found);
        throw std::out_of_range("city index out of range");
    });
    BOOST_TEST(call(boom, R"({"city":"x"})").error.value_or("<no error>") == std::string("city index out of range"));
    tool_response_part r = call(boom, R"({"city":"tool"})");
    BOOST_TEST(r.error.value_or("<no error>") == std::string("no such city: tool"));
    BOOST_TEST(r.result == json::parse(R"({"error":"no such city: tool"})"));

    auto async_boom = function_tool("async_boom", "", [](tool_context& ctx) -> asio::awaitable<json::value> {
        ctx.state()["tried"] = json::value(true);
        auto ex = co_await asio::this_coro::executor;
        co_await asio::post(ex, asio::use_awaitable);
        throw std::runtime_error("gave up after suspending");
    });
    invocation_context inv(opts());
    tool_response_part a = call(async_boom, "{}", inv);
    BOOST_TEST(a.error.value_or("<no error>") == std::string("gave up after suspending"));
    BOOST_TEST(*inv.state().find("tried") == json::value(true));
}

BOOST_AUTO_TEST_CASE(mixed_with_other_tools_in_a_set) {
    tool_set s = tools(function_tool("get_weather", "Weather", get_weather), function_tool("add", "Adds", add));
    std::vector<tool_declaration> ds = s.declarations();
    BOOST_REQUIRE(ds.size() == 2u);
    BOOST_TEST(ds[0].name == "get_weather");
    BOOST_TEST(ds[1].name == "add");
    BOOST_TEST(ds[1].parameters == obj(R"({
        "type":"object",
        "properties":{"a":{"type":"integer","minimum":-2147483648,"maximum":2147483647},
                      "b":{"type":"integer","minimum":-2147483648,"maximum":2147483647}},
        "required":["a","b"],
        "additionalProperties":false})"));
    BOOST_CHECK_THROW(tools(function_tool("add", "", add), function_tool("add", "", add)), boost::system::system_error);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(docs_example)

namespace {
struct doc_weather_args {
    std::string city;
    std::optional<std::string> unit;
};
BOOST_DESCRIBE_STRUCT(doc_weather_args, (), (city, unit))

asio::awaitable<json::value> doc_get_weather(doc_weather_args args, tool_context& ctx) {
    ctx.state()["last_city"] = args.city; // as docs/tools.md writes it
    json::object out{{"city", args.city}, {"temp_c", 21}};
    co_return out;
}
} // namespace

// The example at the top of docs/tools.md, as written there.
BOOST_AUTO_TEST_CASE(quick_start_compiles_and_runs) {
    tool_set ts = tools(function_tool("get_weather", "Current weather in a city", doc_get_weather));
    invocation_context inv(opts());
    tool_call_part c;
    c.tool_call_id = "q";
    c.tool_name = "get_weather";
    c.args = obj(R"({"city":"Oslo"})");
    tool_context ctx(inv, c);
    tool_response_part r = run(run_tool_call(ts, c, ctx));
    BOOST_TEST(r.result == json::parse(R"({"city":"Oslo","temp_c":21})"));
    BOOST_TEST(ctx.take_actions().state_delta == obj(R"({"last_city":"Oslo"})"));
    BOOST_TEST(ts.declarations().at(0).parameters ==
               obj(R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},)"
                   R"("required":["city"],"additionalProperties":false})"));
}

BOOST_AUTO_TEST_SUITE_END()
