// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_DETAIL_URL_HPP
#define LIBRETTO_HTTP_DETAIL_URL_HPP

// The absolute http(s) URLs a transport accepts: scheme://host[:port][/path][?query].
// Only what an API base URL needs: no user info, no fragments, IPv6 literals in brackets.

#include <libretto/error.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace libretto::http::detail {

struct parsed_url {
    bool tls = false;
    std::string host;   // without brackets for IPv6
    std::uint16_t port = 0;
    std::string target; // path and query, "/" when empty
    std::string key;    // "scheme://host:port", the connection pool's key
    bool default_port = true;
    std::string authority; // the Host header: "host[:port]", an IPv6 address in brackets
};

inline boost::system::error_code parse_url(std::string_view url, parsed_url& out) {
    const auto bad = make_error_code(errc::invalid_argument);
    std::string_view rest;
    if (url.starts_with("http://")) {
        out.tls = false;
        rest = url.substr(7);
    } else if (url.starts_with("https://")) {
        out.tls = true;
        rest = url.substr(8);
    } else {
        return bad; // not an absolute http(s) URL
    }
    const auto slash = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, slash);
    std::string_view target = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (authority.empty() || authority.find('@') != std::string_view::npos) return bad;
    if (target.find('#') != std::string_view::npos) return bad;
    for (char c : target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad; // spaces, controls: not a request target
    std::string_view host = authority, port;
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) return bad;
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') return bad;
            port = after.substr(1);
        }
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
    }
    if (host.empty()) return bad;
    for (char c : host)
        if (static_cast<unsigned char>(c) <= 0x20 || c == '/' || c == '\\') return bad;
    out.default_port = port.empty();
    if (port.empty()) {
        out.port = out.tls ? 443 : 80;
    } else {
        if (port.size() > 5) return bad;
        unsigned v = 0;
        for (char c : port) {
            if (c < '0' || c > '9') return bad;
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (v == 0 || v > 65535) return bad;
        out.port = static_cast<std::uint16_t>(v);
    }
    out.host.assign(host);
    out.target = target.empty() ? std::string("/") : std::string(target.front() == '?' ? "/" : "").append(target);
    // An IPv6 address (the only host with a ':') keeps its brackets in the Host header.
    const bool ipv6 = out.host.find(':') != std::string::npos;
    out.authority = ipv6 ? "[" + out.host + "]" : out.host;
    if (!out.default_port) out.authority += ":" + std::to_string(out.port);
    out.key = (out.tls ? "https://" : "http://") + out.host + ":" + std::to_string(out.port);
    return {};
}

} // namespace libretto::http::detail

#endif
