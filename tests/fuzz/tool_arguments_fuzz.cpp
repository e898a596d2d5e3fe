// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target tool_arguments: a model's tool-call arguments against the schema of a
// function_tool (tool/arguments.hpp, tool/function_tool.hpp). The input is [type: 1 byte]
// [arguments text]; the text is parsed as the response accumulator parses a model's
// arguments, then decoded strictly as function_tool::call decodes them.
//
//   - no crash; the arguments read hold no NaN or infinite number; a refusal is a
//     tool_error with a code and a message naming the field;
//   - a value accepted is accepted again, and decodes to an equal struct, after a
//     serialize/parse round trip (read back with exact doubles);
//   - what the decoder accepts is valid against the schema the model is given
//     (declaration().parameters), where a null for an optional member stands for its
//     absence, as the decoder reads it;
//   - for the types without float members, what is valid against the schema is accepted,
//     where an integer schema without bounds (int64) means int64's range. (float: the
//     schema says "number", the decoder refuses what float cannot hold.)

#include "fuzz_support.hpp"

#include <libretto/event/json.hpp> // detail::parse_precise, as llm_response_accumulator reads arguments
#include <libretto/event/json_limits.hpp>
#include <libretto/tool/arguments.hpp>
#include <libretto/tool/function_tool.hpp>

#include <boost/describe/enum.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fuzz_args {

namespace json = boost::json;

enum class temp_unit { celsius, fahrenheit, kelvin };
BOOST_DESCRIBE_ENUM(temp_unit, celsius, fahrenheit, kelvin)

struct weather_args {
    std::string city;
    std::optional<temp_unit> unit;
    std::optional<std::int32_t> days;
    friend bool operator==(const weather_args&, const weather_args&) = default;
};
BOOST_DESCRIBE_STRUCT(weather_args, (), (city, unit, days))

struct line_item {
    std::string sku;
    std::uint16_t qty = 0;
    std::optional<double> price;
    friend bool operator==(const line_item&, const line_item&) = default;
};
BOOST_DESCRIBE_STRUCT(line_item, (), (sku, qty, price))

struct order_args {
    std::vector<line_item> items;
    std::int8_t priority = 0;
    std::map<std::string, std::int64_t> tags;
    std::optional<std::vector<std::vector<bool>>> grid;
    std::optional<std::uint64_t> big;
    std::optional<json::object> extra;
    std::optional<json::array> list;
    std::optional<json::value> any;
    friend bool operator==(const order_args&, const order_args&) = default;
};
BOOST_DESCRIBE_STRUCT(order_args, (), (items, priority, tags, grid, big, extra, list, any))

struct wide_args {
    std::optional<float> f;
    std::optional<double> d;
    std::optional<std::int64_t> i64;
    std::optional<std::uint32_t> u32;
    std::optional<std::int16_t> i16;
    std::optional<std::string> s;
    std::optional<bool> b;
    std::optional<temp_unit> u;
    std::optional<std::map<std::string, line_item>> by_name;
    friend bool operator==(const wide_args&, const wide_args&) = default;
};
BOOST_DESCRIBE_STRUCT(wide_args, (), (f, d, i64, u32, i16, s, b, u, by_name))

// ---- a JSON Schema validator for the subset arguments_schema writes ----------------------

/// The exact order of two JSON numbers (long double holds every int64, uint64 and double).
long double as_long_double(const json::value& v) {
    if (v.is_int64()) return static_cast<long double>(v.get_int64());
    if (v.is_uint64()) return static_cast<long double>(v.get_uint64());
    return static_cast<long double>(v.get_double());
}

bool valid(const json::value& v, const json::object& schema, bool implicit_int64, std::string& why,
           const std::string& path = "args") {
    auto bad = [&](const std::string& what) {
        why = path + ": " + what;
        return false;
    };
    if (const auto* t = schema.if_contains("type")) {
        const std::string_view type = t->as_string();
        bool ok = false;
        if (type == "object") ok = v.is_object();
        else if (type == "array") ok = v.is_array();
        else if (type == "string") ok = v.is_string();
        else if (type == "boolean") ok = v.is_bool();
        else if (type == "number") ok = v.is_number();
        else if (type == "integer")
            ok = v.is_int64() || v.is_uint64() ||
                 (v.is_double() && std::isfinite(v.get_double()) && std::trunc(v.get_double()) == v.get_double());
        else return bad("the schema has a type this validator does not know: " + std::string(type));
        if (!ok) return bad("not of type " + std::string(type));
        if (type == "integer" && implicit_int64 && !schema.contains("minimum") && !schema.contains("maximum")) {
            const long double x = as_long_double(v);
            if (x < -9223372036854775808.0L || x >= 9223372036854775808.0L) return bad("outside int64");
        }
    }
    if (const auto* e = schema.if_contains("enum")) {
        bool found = false;
        for (const auto& x : e->as_array()) found = found || x == v;
        if (!found) return bad("not one of the enum");
    }
    if (const auto* m = schema.if_contains("minimum"); m && as_long_double(v) < as_long_double(*m)) return bad("below minimum");
    if (const auto* m = schema.if_contains("maximum"); m && as_long_double(v) > as_long_double(*m)) return bad("above maximum");
    if (const auto* items = schema.if_contains("items")) {
        const auto& a = v.as_array();
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!valid(a[i], items->as_object(), implicit_int64, why, path + "[" + std::to_string(i) + "]")) return false;
    }
    if (v.is_object() && (schema.contains("properties") || schema.contains("additionalProperties"))) {
        const auto& o = v.get_object();
        const json::object* props = schema.contains("properties") ? &schema.at("properties").as_object() : nullptr;
        if (const auto* req = schema.if_contains("required"))
            for (const auto& name : req->as_array())
                if (!o.contains(name.as_string())) return bad("required member " + std::string(name.as_string()) + " missing");
        const json::value* extra = schema.if_contains("additionalProperties");
        for (const auto& kv : o) {
            const std::string child = path + "." + std::string(kv.key());
            if (props && props->contains(kv.key())) {
                bool required = false;
                if (const auto* req = schema.if_contains("required"))
                    for (const auto& name : req->as_array()) required = required || name.as_string() == kv.key();
                if (!required && kv.value().is_null()) continue; // an optional member's absence
                if (!valid(kv.value(), props->at(kv.key()).as_object(), implicit_int64, why, child)) return false;
            } else if (extra && extra->is_bool()) {
                if (!extra->get_bool()) return bad("unknown member " + std::string(kv.key()));
            } else if (extra) {
                if (!valid(kv.value(), extra->as_object(), implicit_int64, why, child)) return false;
            }
        }
    }
    return true;
}

bool has_non_finite(const json::value& v) {
    switch (v.kind()) {
    case json::kind::double_: return !std::isfinite(v.get_double());
    case json::kind::array:
        for (const auto& x : v.get_array())
            if (has_non_finite(x)) return true;
        return false;
    case json::kind::object:
        for (const auto& kv : v.get_object())
            if (has_non_finite(kv.value())) return true;
        return false;
    default: return false;
    }
}

template <class T>
struct tool_for {
    // The tool as an application declares it: its declaration carries the schema.
    static const libretto::tool_declaration& declaration() {
        static const auto t = libretto::function_tool("fuzz_tool", "a tool under fuzzing", [](T) { return 0; });
        return t.declaration();
    }
};

template <class T>
void check(const json::value& v, bool schema_means_accepted) {
    const json::object& schema = tool_for<T>::declaration().parameters;
    T out{};
    libretto::decode_error err;
    const bool accepted = libretto::try_parse_arguments(v, out, err);

    std::string why;
    if (!accepted) {
        FUZZ_CHECK(err.code.failed(), "a refusal without an error code");
        const std::string message = libretto::arguments_error_message(err);
        FUZZ_CHECK(message.size() > 6, "a refusal without words: " + message);
        bool threw = false;
        try {
            (void)libretto::parse_arguments<T>(v);
        } catch (const libretto::tool_error& e) {
            // what() is a C string: a field name holding "\u0000" ends it early.
            threw = e.code() == err.code && std::string_view(message).substr(0, message.find('\0')) == e.what();
        }
        FUZZ_CHECK(threw, "parse_arguments did not throw the tool_error try_parse_arguments describes: " + message);
        if (schema_means_accepted)
            FUZZ_CHECK(!valid(v, schema, true, why), "valid against the schema but refused (" + message +
                                                         "): " + fuzz::shown(json::serialize(v)));
        return;
    }
    FUZZ_CHECK(valid(v, schema, false, why), "accepted but not valid against the schema (" + why +
                                                 "): " + fuzz::shown(json::serialize(v)));

    // Read back as they were read (json::parse would not do: Boost 1.81's parser can be 1 ulp
    // off, -1.25e300 -> -1.2499999999999999e300, so its round trip is not a fixed point).
    const std::string text = json::serialize(v);
    boost::system::error_code ec;
    const json::value again = libretto::detail::parse_precise(text, ec, {}, nullptr, libretto::max_json_depth - 4);
    FUZZ_CHECK(!ec, "accepted arguments do not parse back (" + ec.message() + "): " + fuzz::shown(text));
    T out2{};
    libretto::decode_error err2;
    FUZZ_CHECK(libretto::try_parse_arguments(again, out2, err2),
               "accepted, then refused after a round trip (" + libretto::arguments_error_message(err2) + "): " +
                   fuzz::shown(text));
    FUZZ_CHECK(out2 == out, "decoded differently after a round trip: " + fuzz::shown(text));
}

} // namespace fuzz_args

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fuzz_args;
    fuzz::input in(data, size);
    const std::uint8_t type = in.byte();
    const std::string_view text = in.rest();

    // As llm_response_accumulator reads a model's arguments: the stored-JSON rule (exact
    // doubles, no 1e400, each key once), nesting that fits at level 5 of an event.
    boost::system::error_code ec;
    const json::value v = libretto::detail::parse_precise(text, ec, {}, nullptr, libretto::max_json_depth - 4);
    if (ec) return 0;
    FUZZ_CHECK(!has_non_finite(v), "the arguments reader gave a non-finite number for " + fuzz::shown(text));

    switch (type % 4) {
    case 0: check<weather_args>(v, true); break;
    case 1: check<order_args>(v, true); break;
    case 2: check<wide_args>(v, false); break;
    default: check<libretto::no_arguments>(v, true); break;
    }
    return 0;
}
