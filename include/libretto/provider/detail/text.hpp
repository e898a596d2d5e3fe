// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_TEXT_HPP
#define LIBRETTO_PROVIDER_DETAIL_TEXT_HPP

// Small string helpers shared by the provider codecs (the ASCII ones are in detail/ascii.hpp).

#include <libretto/detail/ascii.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace libretto::detail {

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
