// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_BASE64_HPP
#define LIBRETTO_DETAIL_BASE64_HPP

// Base64 encoding (RFC 4648): the standard alphabet with padding (file parts' inline bytes)
// and base64url without it (signatures).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace libretto::detail {

/// Appends `bytes` in base64: `url` picks RFC 4648 §5's alphabet, `pad` the trailing '='.
inline void append_base64(std::string& out, std::span<const std::uint8_t> bytes, bool url, bool pad) {
    static constexpr char standard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static constexpr char urlsafe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char* alphabet = url ? urlsafe : standard;
    out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
        const char quad[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63], alphabet[v & 63]};
        out.append(quad, 4);
    }
    if (const std::size_t rest = bytes.size() - i; rest > 0) {
        std::uint32_t v = std::uint32_t{bytes[i]} << 16;
        if (rest == 2) v |= std::uint32_t{bytes[i + 1]} << 8;
        out += alphabet[v >> 18];
        out += alphabet[(v >> 12) & 63];
        if (rest == 2) out += alphabet[(v >> 6) & 63];
        if (pad) out.append(rest == 2 ? 1 : 2, '=');
    }
}

/// `data` in standard, padded base64.
inline std::string base64(std::string_view data) {
    std::string out;
    append_base64(out, std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()), false, true);
    return out;
}

} // namespace libretto::detail

#endif
