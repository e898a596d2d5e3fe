// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_JSON_STRINGIFY_HPP
#define LIBRETTO_JSON_STRINGIFY_HPP

// JSON text as JavaScript's JSON.stringify writes it, for what goes to a model or another
// JavaScript-minded peer, and for showing values to people:
//
//   std::string text = libretto::stringify(v);      // {"celsius":21,"f":69.8}
//   libretto::append_stringify(out, v);
//
// Members in their order, no white space, doubles as ECMAScript numbers ("42", "69.8",
// "1e+21"; Boost.JSON's serializer writes "4.2E1", "6.98E1"), a NaN or infinity as null.
// Strings are escaped as Boost.JSON escapes them (\" \\ \b \f \n \r \t, other control
// characters as \u00xx), other bytes written as they are. Integers held as int64/uint64 are
// written exactly (JavaScript would round those beyond 2^53). A value nested deeper than
// max_stringify_depth throws system_error(errc::invalid_argument).

#include <libretto/detail/ecma_number.hpp>
#include <libretto/detail/json_escape.hpp>
#include <libretto/error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace libretto {

namespace json = boost::json;

/// Deeper values are refused (system_error, errc::invalid_argument): no peer reads them, and
/// the writer recurses.
inline constexpr std::size_t max_stringify_depth = 1000;

namespace detail {

inline void append_stringify_string(std::string& out, std::string_view s) {
    out.push_back('"');
    std::size_t run = 0; // start of the pending run of bytes written as they are
    for (std::size_t i = 0; i < s.size(); ++i) {
        // Eight bytes that need no escape at a time (most text is such runs).
        while (i + 8 <= s.size()) {
            std::uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            if (needs_json_escape(w)) break;
            i += 8;
        }
        if (i >= s.size()) break;
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        append_json_escape(out, c);
    }
    out.append(s.data() + run, s.size() - run);
    out.push_back('"');
}

} // namespace detail

inline void append_stringify(std::string& out, const json::object& o, std::size_t depth = 0);

/// Appends `v` as JSON.stringify(v) writes it. `depth`: the levels already open around it.
inline void append_stringify(std::string& out, const json::value& v, std::size_t depth = 0) {
    if (depth > max_stringify_depth)
        boost::throw_exception(boost::system::system_error(
            make_error_code(errc::invalid_argument),
            "JSON value nested deeper than " + std::to_string(max_stringify_depth) + " levels"));
    char buf[24];
    switch (v.kind()) {
    case json::kind::null: out.append("null", 4); break;
    case json::kind::bool_: v.get_bool() ? out.append("true", 4) : out.append("false", 5); break;
    case json::kind::int64: out.append(buf, std::to_chars(buf, buf + sizeof buf, v.get_int64()).ptr); break;
    case json::kind::uint64: out.append(buf, std::to_chars(buf, buf + sizeof buf, v.get_uint64()).ptr); break;
    case json::kind::double_:
        if (std::isfinite(v.get_double())) detail::append_ecma_number(out, v.get_double());
        else out.append("null", 4); // as JSON.stringify writes them
        break;
    case json::kind::string: detail::append_stringify_string(out, v.get_string()); break;
    case json::kind::array: {
        out.push_back('[');
        bool first = true;
        for (const auto& x : v.get_array()) {
            if (!first) out.push_back(',');
            first = false;
            append_stringify(out, x, depth + 1);
        }
        out.push_back(']');
        break;
    }
    case json::kind::object: append_stringify(out, v.get_object(), depth); break;
    }
}

inline void append_stringify(std::string& out, const json::object& o, std::size_t depth) {
    out.push_back('{');
    bool first = true;
    for (const auto& m : o) {
        if (!first) out.push_back(',');
        first = false;
        detail::append_stringify_string(out, m.key());
        out.push_back(':');
        append_stringify(out, m.value(), depth + 1);
    }
    out.push_back('}');
}

/// `v` as JSON.stringify(v) writes it (see the file's comment).
inline std::string stringify(const json::value& v) {
    std::string out;
    out.reserve(64);
    append_stringify(out, v);
    return out;
}

inline std::string stringify(const json::object& o) {
    std::string out;
    out.reserve(256);
    append_stringify(out, o);
    return out;
}

} // namespace libretto

#endif
