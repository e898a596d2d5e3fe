// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_DETAIL_JSON_TEXT_HPP
#define LIBRETTO_EVENT_DETAIL_JSON_TEXT_HPP

// The rules of json_limits.hpp as code: UTF-8 checks, the faults a writer reports, and the
// one parser every stored document and parse_event goes through (exact doubles, finite
// numbers, max_json_depth, each key once).

#include <libretto/detail/config.hpp>
#include <libretto/event/detail/json_read.hpp>
#include <libretto/error.hpp>
#include <libretto/event/json_limits.hpp>

#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_stack.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace libretto::detail {

// ---- UTF-8 -----------------------------------------------------------------------------

/// Length of the well-formed UTF-8 sequence that starts at `p` (a byte >= 0x80), or 0 if
/// it is not one: a continuation byte, an overlong form (C0, C1, E0 80..9F, F0 80..8F), a
/// surrogate (ED A0..BF), above U+10FFFF (F4 90.., F5..FF), or cut short by `end`.
inline std::size_t utf8_sequence(const unsigned char* p, const unsigned char* end) noexcept {
    const unsigned c = p[0];
    const std::ptrdiff_t left = end - p;
    const auto cont = [](unsigned char b) { return (b & 0xC0) == 0x80; };
    if (c < 0xC2) return 0;
    if (c < 0xE0) return left >= 2 && cont(p[1]) ? 2 : 0;
    if (c < 0xF0) {
        if (left < 3) return 0;
        const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && cont(p[2]) ? 3 : 0;
    }
    if (c < 0xF5) {
        if (left < 4) return 0;
        const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && cont(p[2]) && cont(p[3]) ? 4 : 0;
    }
    return 0;
}

/// Where a string stops being UTF-8: the offset (in that string) of the first byte that
/// does not start a well-formed sequence, and that byte.
struct utf8_fault {
    std::size_t offset = 0;
    unsigned char byte = 0;

    /// "string is not valid UTF-8 (byte 0xff at offset 3)".
    std::string message() const {
        static constexpr char hex[] = "0123456789abcdef";
        std::string m = "string is not valid UTF-8 (byte 0x";
        m += hex[byte >> 4];
        m += hex[byte & 15];
        m += " at offset " + std::to_string(offset) + ")";
        return m;
    }
};

/// True if every byte of `s` is ASCII: eight bytes at a time, OR-ed together (no branch per
/// word), so that the usual short ASCII string costs a few instructions and no call.
[[gnu::always_inline]] inline bool all_ascii(std::string_view s) noexcept {
    const char* p = s.data();
    const char* const end = p + s.size();
    std::uint64_t acc = 0;
    for (; end - p >= 8; p += 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        acc |= w;
    }
    for (; p != end; ++p) acc |= static_cast<unsigned char>(*p);
    return (acc & 0x8080808080808080u) == 0;
}

/// find_invalid_utf8 past its ASCII fast path.
[[gnu::noinline]] inline std::optional<utf8_fault> find_invalid_utf8_slow(std::string_view s) noexcept {
    const auto* const b = reinterpret_cast<const unsigned char*>(s.data());
    const auto* const end = b + s.size();
    for (const unsigned char* p = b; p != end;) {
        if (*p < 0x80) {
            ++p;
            continue;
        }
        const std::size_t k = utf8_sequence(p, end);
        if (!k) return utf8_fault{static_cast<std::size_t>(p - b), *p};
        p += k;
    }
    return std::nullopt;
}

/// The first fault of `s`, if it is not valid UTF-8. memory_store checks every string of
/// every event with it: ASCII (most text, every id) takes the inlined fast path.
[[gnu::always_inline]] inline std::optional<utf8_fault> find_invalid_utf8(std::string_view s) noexcept {
    if (all_ascii(s)) [[likely]]
        return std::nullopt;
    return find_invalid_utf8_slow(s);
}

// ---- what cannot be stored -------------------------------------------------------------

/// Why a value cannot be stored as JSON text that reads back equal (json_limits.hpp).
struct json_fault {
    enum class kind : unsigned char { invalid_utf8, not_finite, too_deep };
    kind what = kind::invalid_utf8;
    std::size_t offset = 0; ///< invalid_utf8: of the bad byte, in its string
    unsigned char byte = 0; ///< invalid_utf8: the bad byte
    double number = 0;      ///< not_finite: the number
    std::string key;        ///< the innermost member holding it; empty at the top level

    /// "number inf is not finite ... in member \"temperature\"".
    std::string message() const {
        std::string m;
        switch (what) {
        case kind::invalid_utf8: m = utf8_fault{offset, byte}.message(); break;
        case kind::not_finite:
            m = std::string("number ") + (std::isnan(number) ? "NaN" : number > 0 ? "inf" : "-inf") +
                " is not finite: JSON has no text for it";
            break;
        case kind::too_deep:
            m = "arrays and objects nest deeper than max_json_depth (" + std::to_string(max_json_depth) + ")";
            break;
        }
        if (!key.empty()) m += " in member \"" + key.substr(0, 64) + "\"";
        return m;
    }
};

inline std::optional<json_fault> check_json_object(const json::object& o, std::size_t depth = 0,
                                                   std::string_view key = {});

/// The first fault of `v` in document order, if any: a string that is not UTF-8, a
/// number that is not finite, or nesting deeper than max_json_depth. `depth` is the
/// number of arrays and objects that enclose `v` in its document; `key` the member
/// holding it. Stops descending past the limit (a deeper value is refused anyway).
inline std::optional<json_fault> check_json_value(const json::value& v, std::size_t depth = 0,
                                                  std::string_view key = {}) {
    switch (v.kind()) {
    case json::kind::double_:
        if (!std::isfinite(v.get_double()))
            return json_fault{json_fault::kind::not_finite, 0, 0, v.get_double(), std::string(key)};
        return std::nullopt;
    case json::kind::string:
        if (auto f = find_invalid_utf8(v.get_string()))
            return json_fault{json_fault::kind::invalid_utf8, f->offset, f->byte, 0, std::string(key)};
        return std::nullopt;
    case json::kind::array:
        if (depth + 1 > max_json_depth) return json_fault{json_fault::kind::too_deep, 0, 0, 0, std::string(key)};
        for (const auto& x : v.get_array())
            if (auto f = check_json_value(x, depth + 1, key)) return f;
        return std::nullopt;
    case json::kind::object: return check_json_object(v.get_object(), depth, key);
    default: return std::nullopt;
    }
}

/// check_json_value for the members of `o` (an object at nesting level `depth + 1`).
inline std::optional<json_fault> check_json_object(const json::object& o, std::size_t depth,
                                                   std::string_view key) {
    if (depth + 1 > max_json_depth) return json_fault{json_fault::kind::too_deep, 0, 0, 0, std::string(key)};
    for (const auto& kv : o) {
        if (auto f = find_invalid_utf8(kv.key()))
            return json_fault{json_fault::kind::invalid_utf8, f->offset, f->byte, 0, std::string(key)};
        if (auto f = check_json_value(kv.value(), depth + 1, kv.key())) return f;
    }
    return std::nullopt;
}

// ---- reading ---------------------------------------------------------------------------

/// Options for parsing text a store wrote: strings that are not UTF-8 are accepted (earlier
/// versions wrote them as they were; what was stored must read back, never as corrupt).
inline json::parse_options stored_parse_options() noexcept {
    json::parse_options opt;
    opt.allow_invalid_utf8 = true;
    opt.max_depth = max_json_depth;
    return opt;
}

/// Members of every object in `v`, recursively.
inline std::size_t count_members(const json::value& v) noexcept {
    std::size_t n = 0;
    if (const json::object* o = v.if_object()) {
        n = o->size();
        for (const auto& kv : *o) n += count_members(kv.value());
    } else if (const json::array* a = v.if_array()) {
        for (const auto& x : *a) n += count_members(x);
    }
    return n;
}

/// "the key \"k\" appears twice in one object" for the first repeated key of `text`.
LIBRETTO_DECL std::string repeated_key_message(std::string_view text);

/// Parses `text` as one JSON document by the rules of json_limits.hpp, with exact doubles
/// (json::parse can be 1 ulp off before Boost 1.83). On failure `ec` is set, the result is
/// null and `why` (if given) says what was wrong: the parser's word, a number out of
/// range, nesting past max_json_depth, or a repeated key.
/// `max_depth`: less than max_json_depth for a document that is stored as a member of
/// another (a tool call's arguments are at level 5 of their event).
LIBRETTO_DECL json::value parse_precise(std::string_view text, json::error_code& ec, json::storage_ptr sp,
                                        std::string* why = nullptr, std::size_t max_depth = max_json_depth);

} // namespace libretto::detail

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/event/impl/json_text.ipp>
#endif

#endif
