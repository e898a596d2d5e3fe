// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_ASCII_HPP
#define LIBRETTO_DETAIL_ASCII_HPP

// ASCII case and white space, for protocol words and tokens (the provider codecs' error
// types and headers, the runner's silent token): no locale.

#include <cstddef>
#include <string_view>

namespace libretto::detail {

inline constexpr char ascii_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline constexpr bool is_http_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline constexpr std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_http_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_http_space(s.back())) s.remove_suffix(1);
    return s;
}

inline constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

} // namespace libretto::detail

#endif
