// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_BEAST_TRANSPORT_OPTIONS_HPP
#define LIBRETTO_HTTP_BEAST_TRANSPORT_OPTIONS_HPP

// The options of beast_transport and https_transport, apart from the transports so that a
// program that only configures one does not parse Beast.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace libretto::http {

/// Limits on one exchange; zero means no limit, a negative one is refused by the transport's
/// constructor, and one past the steady clock's range (milliseconds::max()) waits that long.
/// Every limit closes the connection when it fires, and the operation fails with the
/// matching http_errc.
struct http_timeouts {
    std::chrono::milliseconds connect{10'000};    ///< TCP connect plus the TLS handshake
    std::chrono::milliseconds first_byte{60'000}; ///< sending the request until its headers arrived
    std::chrono::milliseconds idle{60'000};       ///< between two body reads that return bytes
    std::chrono::milliseconds total{0};           ///< the whole exchange, headers to the end of the body
};

struct beast_transport_options {
    http_timeouts timeouts{};
    std::size_t max_idle_per_host = 16;              ///< idle kept-alive connections per (scheme, host, port)
    std::chrono::milliseconds max_idle_time{30'000}; ///< idle longer: closed, not reused (0: any age)
    std::uint32_t header_limit = 64 * 1024;          ///< largest response header block
    std::string user_agent = "libretto/0.1";
};

} // namespace libretto::http

#endif
