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

/// What a transport refuses to send (header injection): a name that is empty or holds ':',
/// CR or LF, or a value that holds CR or LF.
enum class header_fault { none, bad_name, line_break_in_value };

inline header_fault header_problem(const http_header& h) noexcept {
    if (h.name.empty() || h.name.find_first_of(":\r\n") != std::string::npos) return header_fault::bad_name;
    if (h.value.find_first_of("\r\n") != std::string::npos) return header_fault::line_break_in_value;
    return header_fault::none;
}

namespace http {
using libretto::http_header;
using libretto::http_headers;
} // namespace http

} // namespace libretto

#endif
