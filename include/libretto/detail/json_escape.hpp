// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_JSON_ESCAPE_HPP
#define LIBRETTO_DETAIL_JSON_ESCAPE_HPP

// Eight bytes of a JSON string at a time: the writers (event/detail/text_writer.hpp,
// json_stringify.hpp) copy runs that need no escape without looking at each byte.

#include <cstdint>

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

} // namespace libretto::detail

#endif
