// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_TEXT_HPP
#define LIBRETTO_PROVIDER_DETAIL_TEXT_HPP

// Small string helpers shared by the provider codecs.

#include <cstddef>
#include <string>
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

/// At most `limit` bytes of `s`, cut on a UTF-8 character boundary, with "..." when cut:
/// provider error bodies and bad chunks end up in messages, which must stay bounded.
inline std::string bounded_utf8(std::string_view s, std::size_t limit) {
    if (s.size() <= limit) return std::string(s);
    std::size_t shown = limit;
    while (shown > 0 && (static_cast<unsigned char>(s[shown]) & 0xC0) == 0x80) --shown;
    std::string out(s.substr(0, shown));
    out += "...";
    return out;
}

} // namespace libretto::detail

#endif
