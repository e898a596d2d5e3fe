// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_JSON_ESCAPE_HPP
#define LIBRETTO_DETAIL_JSON_ESCAPE_HPP

// What JSON string writers share: a test of eight bytes at a time, so that runs needing no
// escape are copied without looking at each byte (event/detail/text_writer.hpp,
// json_stringify.hpp), and the escape of one byte (json_stringify.hpp, sign/canonical_json.hpp).

#include <cstdint>
#include <string>

namespace libretto::detail {

/// True if one of the eight bytes of `w` is a control character, a quote or a backslash
/// (the "has a byte less than / equal to" tricks of Bit Twiddling Hacks; bytes from 0x80
/// on, UTF-8, never match).
constexpr bool needs_json_escape(std::uint64_t w) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101u;
    constexpr std::uint64_t high = 0x8080808080808080u;
    const auto zero_byte = [](std::uint64_t v) { return (v - ones) & ~v & high; };
    const std::uint64_t control = (w - ones * 0x20) & ~w & high;
    return (control | zero_byte(w ^ (ones * '"')) | zero_byte(w ^ (ones * '\\'))) != 0;
}

/// Appends the escape JSON needs for the byte `c` (a control character, a quote or a
/// backslash): backslash-quote, two backslashes, \b \f \n \r \t, else \u00xx in lower case.
inline void append_json_escape(std::string& out, unsigned char c) {
    static constexpr char hex[] = "0123456789abcdef";
    char esc = 0;
    switch (c) {
    case '"': esc = '"'; break;
    case '\\': esc = '\\'; break;
    case '\b': esc = 'b'; break;
    case '\f': esc = 'f'; break;
    case '\n': esc = 'n'; break;
    case '\r': esc = 'r'; break;
    case '\t': esc = 't'; break;
    default: break;
    }
    if (esc) {
        const char e[2] = {'\\', esc};
        out.append(e, 2);
    } else {
        const char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        out.append(u, 6);
    }
}

} // namespace libretto::detail

#endif
