// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_DETAIL_CONNECTION_HPP
#define LIBRETTO_MCP_DETAIL_CONNECTION_HPP

// What a client needs of a transport: whole JSON-RPC messages in and out, and a close.

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace libretto::mcp::detail {

class connection {
public:
    virtual ~connection() = default;
    /// Opens it (stdio: starts the server); on failure `what` says why.
    virtual boost::system::error_code start(std::string& what) = 0;
    /// The next message; nullopt when the server ended the connection (describe_end says
    /// how). Throws system_error for a message past `max_bytes` (errc::oversize).
    virtual boost::asio::awaitable<std::optional<std::string>> read(std::size_t max_bytes) = 0;
    /// Queues a message; a failure shows as the end of the connection on the read side.
    virtual void write(std::string message) = 0;
    /// Ends the connection (politely first).
    virtual boost::asio::awaitable<void> close() = 0;
    virtual std::string describe_end() const = 0;
    /// After initialize: the revision agreed on (HTTP sends it with every request and
    /// opens its stream for the server's own messages).
    virtual void initialized(std::string_view /*protocol_version*/) {}
    /// Ends the connection at once (the client is gone): no waiting.
    virtual void abort() noexcept = 0;
};

} // namespace libretto::mcp::detail

#endif
