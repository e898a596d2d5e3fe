// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_HEADER_HPP
#define LIBRETTO_HTTP_HEADER_HPP

// One HTTP header field: plain strings, the one type the provider codecs produce and the
// transports send (no HTTP library in either's interface).

#include <string>
#include <string_view>
#include <vector>

namespace libretto {

struct http_header {
    std::string name{};  ///< lower case ("authorization", "anthropic-version")
    std::string value{};

    friend bool operator==(const http_header&, const http_header&) = default;
};

using http_headers = std::vector<http_header>;

/// The value of the first field named `name` (case-insensitive), or nullptr.
inline const std::string* find_header(const http_headers& headers, std::string_view name) noexcept {
    for (const auto& h : headers) {
        if (h.name.size() != name.size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < name.size() && same; ++i) {
            char a = h.name[i], b = name[i];
            if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = static_cast<char>(b - 'A' + 'a');
            same = a == b;
        }
        if (same) return &h.value;
    }
    return nullptr;
}

namespace http {
using libretto::http_header;
using libretto::http_headers;
} // namespace http

} // namespace libretto

#endif
