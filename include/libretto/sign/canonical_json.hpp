// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_CANONICAL_JSON_HPP
#define LIBRETTO_SIGN_CANONICAL_JSON_HPP

// RFC 8785 JSON Canonicalization Scheme (JCS): one byte sequence per JSON value, so a
// signature over it survives any store that keeps the value (not its text).
//
//   canonical_json(v)                 -> std::string
//   append_canonical_json(out, v)     appends to `out`
//   canonical_number(d)               ECMAScript Number.prototype.toString of a finite double
//
// The RFC's rules: no whitespace; object members sorted by their names as arrays of UTF-16
// code units; strings escaped only where JSON must (\" \\ \b \f \n \r \t, other control
// characters as \u00xx, lowercase hex), everything else written as UTF-8; numbers as
// ECMAScript prints doubles (shortest round trip; -0 as 0).
//
// One documented departure: Boost.JSON keeps integers as int64/uint64, and those are written
// exactly in decimal. For |n| <= 2^53 that is what the RFC writes; beyond, the RFC would
// round to the nearest double (as an ECMAScript parser reads it), which would let two
// different stored integers share one canonical form. Exact digits keep them apart, and
// stores keep integers exact, so a signature over them verifies after a round trip.
//
// Errors (system_error, errc::invalid_argument): a NaN or infinite number, a string or
// member name that is not valid UTF-8 (the message says which).

#include <libretto/detail/ecma_number.hpp>
#include <libretto/detail/json_escape.hpp>
#include <libretto/error.hpp>

#include <boost/container/small_vector.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

namespace libretto {

namespace json = boost::json;

inline void append_canonical_number(std::string& out, double d);

namespace detail {

[[noreturn]] inline void jcs_fail(const std::string& what) {
    throw boost::system::system_error(make_error_code(errc::invalid_argument), "canonical JSON: " + what);
}

/// Decodes the code point at s[i] (valid UTF-8 assumed, checked by jcs_check_utf8), advancing i.
inline char32_t utf8_next(std::string_view s, std::size_t& i) noexcept {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    int n = b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : 1;
    char32_t cp = b0 & (0x3F >> n);
    ++i;
    while (n-- > 0 && i < s.size()) cp = (cp << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
    return cp;
}

/// The length of the valid UTF-8 sequence at s[i], or 0 (overlong forms, surrogates and
/// code points above U+10FFFF are invalid, as in RFC 3629).
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
    const auto b0 = static_cast<unsigned char>(s[i]);
    auto cont = [&](std::size_t k) { return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; };
    if (b0 < 0x80) return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        const auto b1 = static_cast<unsigned char>(s[i + 1]);
        if (b0 == 0xE0 && b1 < 0xA0) return 0; // overlong
        if (b0 == 0xED && b1 >= 0xA0) return 0; // surrogate
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        const auto b1 = static_cast<unsigned char>(s[i + 1]);
        if (b0 == 0xF0 && b1 < 0x90) return 0; // overlong
        if (b0 == 0xF4 && b1 >= 0x90) return 0; // above U+10FFFF
        return 4;
    }
    return 0;
}

/// The first UTF-16 code unit of `cp` (a high surrogate for supplementary code points).
constexpr std::uint32_t utf16_lead(char32_t cp) noexcept {
    return cp >= 0x10000 ? 0xD800 + ((cp - 0x10000) >> 10) : static_cast<std::uint32_t>(cp);
}

/// a < b comparing the UTF-16 encodings code unit by code unit (RFC 8785 §3.2.3). UTF-8
/// byte order is code point order, which differs from UTF-16 order only between a
/// supplementary code point and one in U+E000..U+FFFF.
inline bool utf16_less(std::string_view a, std::string_view b) noexcept {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (static_cast<unsigned char>(a[i]) < 0x80 && static_cast<unsigned char>(b[j]) < 0x80) {
            if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
            ++i, ++j;
            continue;
        }
        const char32_t ca = utf8_next(a, i), cb = utf8_next(b, j);
        if (ca == cb) continue;
        const std::uint32_t ua = utf16_lead(ca), ub = utf16_lead(cb);
        if (ua != ub) return ua < ub;
        return ca < cb; // same high surrogate: the low surrogates order as the code points
    }
    return i == a.size() && j < b.size();
}

inline void jcs_string(std::string& out, std::string_view s, const char* what) {
    out.push_back('"');
    std::size_t run = 0; // start of the pending run of bytes written as they are
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence_length(s, i);
            if (n == 0)
                jcs_fail(std::string(what) + " is not valid UTF-8 (byte " + std::to_string(i) + " of " +
                         std::to_string(s.size()) + ")");
            i += n;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            ++i;
            continue;
        }
        out.append(s.data() + run, i - run);
        append_json_escape(out, c);
        run = ++i;
    }
    out.append(s.data() + run, s.size() - run);
    out.push_back('"');
}

inline void jcs_value(std::string& out, const json::value& v, int depth);

inline void jcs_object(std::string& out, const json::object& o, int depth) {
    using kv = const json::key_value_pair*;
    boost::container::small_vector<kv, 16> members;
    members.reserve(o.size());
    for (const auto& m : o) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](kv a, kv b) { return utf16_less(a->key(), b->key()); });
    out.push_back('{');
    bool first = true;
    for (kv m : members) {
        if (!first) out.push_back(',');
        first = false;
        jcs_string(out, m->key(), "a member name");
        out.push_back(':');
        jcs_value(out, m->value(), depth + 1);
    }
    out.push_back('}');
}

inline void jcs_value(std::string& out, const json::value& v, int depth) {
    if (depth > 1000) jcs_fail("nesting deeper than 1000 levels");
    char buf[32];
    switch (v.kind()) {
    case json::kind::null: out.append("null"); break;
    case json::kind::bool_: out.append(v.get_bool() ? "true" : "false"); break;
    case json::kind::int64: {
        auto r = std::to_chars(buf, buf + sizeof buf, v.get_int64());
        out.append(buf, r.ptr);
        break;
    }
    case json::kind::uint64: {
        auto r = std::to_chars(buf, buf + sizeof buf, v.get_uint64());
        out.append(buf, r.ptr);
        break;
    }
    case json::kind::double_: append_canonical_number(out, v.get_double()); break;
    case json::kind::string: jcs_string(out, v.get_string(), "a string"); break;
    case json::kind::array: {
        out.push_back('[');
        bool first = true;
        for (const auto& x : v.get_array()) {
            if (!first) out.push_back(',');
            first = false;
            jcs_value(out, x, depth + 1);
        }
        out.push_back(']');
        break;
    }
    case json::kind::object: jcs_object(out, v.get_object(), depth); break;
    }
}

} // namespace detail

/// Appends ECMAScript's Number.prototype.toString(d) (RFC 8785 §3.2.2.3). Throws
/// system_error(errc::invalid_argument) for NaN and infinities, which JSON cannot hold.
inline void append_canonical_number(std::string& out, double d) {
    if (!std::isfinite(d)) detail::jcs_fail("a number is NaN or infinite");
    detail::append_ecma_number(out, d);
}

/// canonical_number as a string.
inline std::string canonical_number(double d) {
    std::string out;
    append_canonical_number(out, d);
    return out;
}

/// Appends the canonical form of `v` to `out`. On error `out` may hold a partial value.
inline void append_canonical_json(std::string& out, const json::value& v) { detail::jcs_value(out, v, 0); }

/// The canonical form of `v`.
inline std::string canonical_json(const json::value& v) {
    std::string out;
    out.reserve(256);
    append_canonical_json(out, v);
    return out;
}

} // namespace libretto

#endif
