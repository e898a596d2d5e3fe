// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_TYPES_HPP
#define LIBRETTO_MCP_TYPES_HPP

// What an MCP client sends and gets: options, a server's tools, a tool call's result.
// docs/mcp.md.

#include <libretto/diagnostics.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/http/header.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace libretto::mcp {

namespace json = boost::json;

/// The protocol revisions this client speaks, newest first. It asks for the first; a server
/// may answer with any of them.
inline constexpr std::string_view protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

/// How a server is run over stdio: the client starts it and talks newline-delimited
/// JSON-RPC on its stdin and stdout.
struct stdio_options {
    std::string command{};                      ///< a path, or a name looked up in PATH
    std::vector<std::string> args{};
    std::map<std::string, std::string> env{};   ///< set in the server's environment
    bool inherit_environment = true;            ///< false: the server gets only `env`
    std::string working_directory{};            ///< empty: this process's
    /// Each line the server writes to stderr (its log); null: read and dropped.
    std::function<void(std::string_view line)> on_stderr{};
    /// Closing: stdin is closed and the server given this long to exit, then SIGTERM and as
    /// long again, then SIGKILL.
    std::chrono::milliseconds close_timeout{2000};
    /// How many times a server that exited (or crashed) is started again, by the next request
    /// after it ended (initialized anew; requests pending when it ended still fail). 0: never.
    unsigned restarts = 0;
    stdio_options() = default; // not an aggregate: safe as a temporary in co_await on g++ 12
};

/// How a server is reached over Streamable HTTP: each message a POST to `url`, the answers
/// JSON or an SSE stream, a GET stream for what the server sends on its own.
struct http_options {
    std::string url{};                      ///< the MCP endpoint: http://host:port/mcp or https://...
    std::vector<http::http_header> headers{}; ///< sent with every request ("Authorization: Bearer ...")
    /// The HTTP client; unset: a beast_transport (plain http). For https, an https_transport.
    std::optional<http::any_transport> transport{};
    bool open_stream = true; ///< keep a GET stream open for the server's own messages
    /// Before reopening a stream that ended, when the server gave no `retry:`.
    std::chrono::milliseconds reconnect_delay{1000};
    /// The longest wait a server's `retry:` can ask for (a longer one is cut to this).
    std::chrono::milliseconds max_reconnect_delay{60'000};
    http_options() = default; // not an aggregate: safe as a temporary in co_await on g++ 12
    explicit http_options(std::string url) : url(std::move(url)) {}
};

/// How the client behaves, whatever the transport.
struct client_options {
    std::string client_name = "libretto";
    std::string client_version = "1";
    /// A request unanswered this long fails with boost::asio::error::timed_out (and the
    /// server is told it was cancelled).
    std::chrono::milliseconds request_timeout{30'000};
    /// The largest message accepted from the server; a longer one ends the connection with
    /// errc::oversize.
    std::size_t max_message_bytes = 16 * 1024 * 1024;
    /// notifications/progress of a request (its params), when set.
    std::function<void(const json::object& params)> on_progress{};
    /// Every other notification from the server (method, params), when set.
    std::function<void(std::string_view method, const json::object& params)> on_notification{};
    /// Answers a request from the server (sampling/createMessage, elicitation/create,
    /// roots/list, ...): the result object, or a throw (system_error: its message is the
    /// error's). Null, or a method it does not handle (it throws errc::not_found): the
    /// server gets JSON-RPC's "method not found".
    std::function<json::object(std::string_view method, const json::object& params)> on_request{};
    client_options() = default; // not an aggregate: safe as a temporary in co_await on g++ 12
};

/// What the server said about itself at initialize.
struct server_info {
    std::string protocol_version{};
    std::string name{};
    std::string version{};
    std::string instructions{};
    json::object capabilities{};
};

/// One tool of a server, as tools/list describes it.
struct tool_info {
    std::string name{};
    std::string title{};
    std::string description{};
    json::object input_schema{};
    std::optional<json::object> output_schema{};
    json::object annotations{};
};

/// A tool call's result: the content blocks as the server sent them (text, image, audio,
/// resource_link, resource), the structured content, and whether the tool failed.
struct call_result {
    json::array content{};
    std::optional<json::object> structured_content{};
    bool is_error = false;
};

} // namespace libretto::mcp

#endif
