// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_CLIENT_HPP
#define LIBRETTO_MCP_CLIENT_HPP

// An MCP (Model Context Protocol) client: one connection to one server. docs/mcp.md.
//
//   lb::mcp::stdio_options so;
//   so.command = "npx"; so.args = {"-y", "@modelcontextprotocol/server-everything"};
//   std::shared_ptr<lb::mcp::client> c = co_await lb::mcp::async_connect_stdio(ex, so);
//   std::vector<lb::mcp::tool_info> tools = co_await c->async_list_tools();
//   lb::json::object args;
//   args["message"] = "hi";           // named: g++ 12 cannot take a braced json::object in co_await
//   lb::mcp::call_result r = co_await c->async_call_tool("echo", std::move(args));
//   co_await c->async_close();
//
// The client initializes (asking for the newest revision of protocol_versions, accepting
// any of them), then serves any number of concurrent requests on its executor (one
// thread, or a strand). Every request has a timeout; a request whose caller is cancelled
// (Asio per-operation cancellation) or that times out is cancelled at the server too
// (notifications/cancelled). When the server ends the connection — exits, crashes, writes
// something that is not JSON-RPC, or a message past max_message_bytes — every pending and
// later request fails with the reason (errc::io_error, bad_response, oversize).
//
// Operations take any completion token (default: libretto's default completion token) and
// optional diagnostics (what went wrong, in words).

#include <libretto/async.hpp>
#include <libretto/detail/config.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/mcp/detail/connection.hpp>
#include <libretto/mcp/types.hpp>
#include <libretto/store/detail/spawn_op.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::mcp {

using tools_signature = void(boost::system::error_code, std::vector<tool_info>);
using call_signature = void(boost::system::error_code, call_result);
using request_signature = void(boost::system::error_code, json::object);
using list_signature = void(boost::system::error_code, json::array);
using done_signature = void(boost::system::error_code);

class client;
using connect_signature = void(boost::system::error_code, std::shared_ptr<client>);

LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> connect_stdio(boost::asio::any_io_executor ex,
                                                                             stdio_options so, client_options co);

namespace detail {
/// Starts `conn`, then initializes a client over it.
LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> connect_over(boost::asio::any_io_executor ex,
                                                                            std::shared_ptr<connection> conn,
                                                                            client_options co);
} // namespace detail

class client : public std::enable_shared_from_this<client> {
    struct private_tag {};

public:
    using executor_type = boost::asio::any_io_executor;

    client(private_tag, executor_type ex, std::shared_ptr<detail::connection> conn, client_options o)
        : ex_(std::move(ex)), conn_(std::move(conn)), o_(std::move(o)) {}
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    /// Without a close first: the server is stopped at once (stdio: SIGKILL).
    ~client() { conn_->abort(); }

    executor_type get_executor() const noexcept { return ex_; }
    /// What the server said at initialize.
    const server_info& server() const noexcept { return info_; }
    /// False once the connection ended (closed, or the server went away).
    bool is_open() const noexcept { return !ended_; }
    /// Why the connection ended ("" while open).
    const std::string& end_reason() const noexcept { return end_reason_; }
    /// How many times the server was started again (stdio_options::restarts).
    unsigned restarts() const noexcept { return restarted_; }

    /// Every tool of the server (all pages of tools/list). Cached; refreshed after the
    /// server sends notifications/tools/list_changed.
    template <boost::asio::completion_token_for<tools_signature> Token = default_completion_token_t>
    auto async_list_tools(diagnostics& d, Token&& token = {}) {
        return op<std::vector<tool_info>>(&d, std::forward<Token>(token), [self = shared_from_this()](diagnostics*) {
            return self->list_tools();
        });
    }
    template <boost::asio::completion_token_for<tools_signature> Token = default_completion_token_t>
    auto async_list_tools(Token&& token = {}) {
        return op<std::vector<tool_info>>(nullptr, std::forward<Token>(token), [self = shared_from_this()](diagnostics*) {
            return self->list_tools();
        });
    }

    /// tools/call. A tool's own failure is a result with is_error (not an error here).
    template <boost::asio::completion_token_for<call_signature> Token = default_completion_token_t>
    auto async_call_tool(std::string name, json::object args, diagnostics& d, Token&& token = {}) {
        return op<call_result>(&d, std::forward<Token>(token),
                               [self = shared_from_this(), name = std::move(name), args = std::move(args)](diagnostics*) mutable {
                                   return self->call_tool(std::move(name), std::move(args));
                               });
    }
    template <boost::asio::completion_token_for<call_signature> Token = default_completion_token_t>
    auto async_call_tool(std::string name, json::object args = {}, Token&& token = {}) {
        return op<call_result>(nullptr, std::forward<Token>(token),
                               [self = shared_from_this(), name = std::move(name), args = std::move(args)](diagnostics*) mutable {
                                   return self->call_tool(std::move(name), std::move(args));
                               });
    }

    /// Any request (resources/list, resources/read, prompts/get, ...): its result object.
    template <boost::asio::completion_token_for<request_signature> Token = default_completion_token_t>
    auto async_request(std::string method, json::object params, diagnostics& d, Token&& token = {}) {
        return op<json::object>(&d, std::forward<Token>(token),
                                [self = shared_from_this(), m = std::move(method), p = std::move(params)](diagnostics*) mutable {
                                    return self->request(std::move(m), std::move(p));
                                });
    }
    template <boost::asio::completion_token_for<request_signature> Token = default_completion_token_t>
    auto async_request(std::string method, json::object params = {}, Token&& token = {}) {
        return op<json::object>(nullptr, std::forward<Token>(token),
                                [self = shared_from_this(), m = std::move(method), p = std::move(params)](diagnostics*) mutable {
                                    return self->request(std::move(m), std::move(p));
                                });
    }

    /// Resources and prompts: every page of resources/list, resources/templates/list and
    /// prompts/list (the items as the server sent them), resources/read (its contents) and
    /// prompts/get (its result: description, messages).
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list_resources(Token&& token = {}) {
        return op<json::array>(nullptr, std::forward<Token>(token),
                               [self = shared_from_this()](diagnostics*) { return self->list_all("resources/list", "resources"); });
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list_resource_templates(Token&& token = {}) {
        return op<json::array>(nullptr, std::forward<Token>(token), [self = shared_from_this()](diagnostics*) {
            return self->list_all("resources/templates/list", "resourceTemplates");
        });
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_read_resource(std::string uri, Token&& token = {}) {
        return op<json::array>(nullptr, std::forward<Token>(token),
                               [self = shared_from_this(), uri = std::move(uri)](diagnostics*) mutable {
                                   return self->read_resource(std::move(uri));
                               });
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list_prompts(Token&& token = {}) {
        return op<json::array>(nullptr, std::forward<Token>(token),
                               [self = shared_from_this()](diagnostics*) { return self->list_all("prompts/list", "prompts"); });
    }
    template <boost::asio::completion_token_for<request_signature> Token = default_completion_token_t>
    auto async_get_prompt(std::string name, json::object args = {}, Token&& token = {}) {
        json::object params{{"name", std::move(name)}, {"arguments", std::move(args)}};
        return async_request("prompts/get", std::move(params), std::forward<Token>(token));
    }

    /// ping.
    template <boost::asio::completion_token_for<request_signature> Token = default_completion_token_t>
    auto async_ping(Token&& token = {}) {
        return async_request("ping", {}, std::forward<Token>(token));
    }

    /// Ends the connection: pending requests fail, the server is stopped (stdio: stdin
    /// closed, then SIGTERM, then SIGKILL, each after stdio_options::close_timeout).
    template <boost::asio::completion_token_for<request_signature> Token = default_completion_token_t>
    auto async_close(Token&& token = {}) {
        return op<json::object>(nullptr, std::forward<Token>(token), [self = shared_from_this()](diagnostics*) {
            return self->close();
        });
    }

    // ---- the coroutines behind the operations (for code already in a coroutine) -------
    // Defined in impl/client.ipp: compiled once with LIBRETTO_SEPARATE_COMPILATION.

    /// Sends `method` and waits for its answer: the result object. Throws system_error.
    LIBRETTO_DECL boost::asio::awaitable<json::object> request(std::string method, json::object params);
    LIBRETTO_DECL boost::asio::awaitable<std::vector<tool_info>> list_tools();
    /// Every item of a paginated list (`key` of each page), following nextCursor.
    LIBRETTO_DECL boost::asio::awaitable<json::array> list_all(std::string method, std::string key);
    LIBRETTO_DECL boost::asio::awaitable<json::array> read_resource(std::string uri);
    LIBRETTO_DECL boost::asio::awaitable<call_result> call_tool(std::string name, json::object args);
    LIBRETTO_DECL boost::asio::awaitable<json::object> close();

    // ---- set up by the connect operations ----------------------------------------------

    /// Starts reading, initializes and sends notifications/initialized.
    LIBRETTO_DECL boost::asio::awaitable<void> initialize();

private:
    struct pending; // a request waiting for its answer

    /// A new connection from the factory, initialized; concurrent callers wait for the one
    /// restart under way.
    LIBRETTO_DECL boost::asio::awaitable<void> restart();

    template <class Result, class Token, class Make>
    auto op(diagnostics* d, Token&& token, Make make) {
        return libretto::detail::spawn_op<Result>(ex_, d, std::forward<Token>(token), std::move(make));
    }

    // Holds the client weakly: dropping the last reference ends the connection (abort),
    // which ends this loop.
    LIBRETTO_DECL static boost::asio::awaitable<void> read_loop(std::weak_ptr<client> weak,
                                                                std::shared_ptr<detail::connection> conn,
                                                                std::size_t max_bytes);
    LIBRETTO_DECL void dispatch(json::object msg);
    LIBRETTO_DECL void end(boost::system::error_code ec, std::string why);

    executor_type ex_;
    std::shared_ptr<detail::connection> conn_;
    client_options o_;
    server_info info_;
    std::map<std::int64_t, std::shared_ptr<pending>> pending_;
    std::int64_t next_id_ = 1;
    bool ended_ = false;
    boost::system::error_code end_code_;
    std::string end_reason_;
    std::optional<std::vector<tool_info>> tools_;
    bool tools_stale_ = false;
    std::uint64_t tools_generation_ = 0; ///< list_changed notifications seen
    bool closed_ = false;     ///< close() was called: no restart
    bool restarting_ = false;
    unsigned restarts_left_ = 0;
    unsigned restarted_ = 0;
    std::function<std::shared_ptr<detail::connection>()> factory_; ///< a new connection, for restarts

    friend boost::asio::awaitable<std::shared_ptr<client>> detail::connect_over(executor_type,
                                                                                std::shared_ptr<detail::connection>,
                                                                                client_options);
    friend boost::asio::awaitable<std::shared_ptr<client>> connect_stdio(executor_type, stdio_options, client_options);
};

/// Where `name` is on PATH, as the stdio transport will look for a command ("" if nowhere):
/// to say that a server's runtime is missing before starting it.
LIBRETTO_DECL std::string find_executable(std::string_view name);

/// Starts the server of `so`, connects and initializes: the client, ready.
LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> connect_stdio(client::executor_type ex, stdio_options so,
                                                                             client_options co = {});

/// Connects to the Streamable HTTP endpoint of `ho` and initializes: the client, ready.
LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> connect_http(client::executor_type ex, http_options ho,
                                                                            client_options co = {});

/// connect_stdio as an asynchronous operation.
template <boost::asio::completion_token_for<connect_signature> Token = default_completion_token_t>
auto async_connect_stdio(boost::asio::any_io_executor ex, stdio_options so, client_options co, diagnostics& d,
                         Token&& token = {}) {
    return libretto::detail::spawn_op<std::shared_ptr<client>>(
        ex, &d, std::forward<Token>(token),
        [ex, so = std::move(so), co = std::move(co)](diagnostics*) mutable { return connect_stdio(ex, std::move(so), std::move(co)); });
}
template <boost::asio::completion_token_for<connect_signature> Token = default_completion_token_t>
auto async_connect_stdio(boost::asio::any_io_executor ex, stdio_options so, client_options co = {}, Token&& token = {}) {
    return libretto::detail::spawn_op<std::shared_ptr<client>>(
        ex, nullptr, std::forward<Token>(token),
        [ex, so = std::move(so), co = std::move(co)](diagnostics*) mutable { return connect_stdio(ex, std::move(so), std::move(co)); });
}

/// connect_http as an asynchronous operation.
template <boost::asio::completion_token_for<connect_signature> Token = default_completion_token_t>
auto async_connect_http(boost::asio::any_io_executor ex, http_options ho, client_options co, diagnostics& d,
                        Token&& token = {}) {
    return libretto::detail::spawn_op<std::shared_ptr<client>>(
        ex, &d, std::forward<Token>(token),
        [ex, ho = std::move(ho), co = std::move(co)](diagnostics*) mutable { return connect_http(ex, std::move(ho), std::move(co)); });
}
template <boost::asio::completion_token_for<connect_signature> Token = default_completion_token_t>
auto async_connect_http(boost::asio::any_io_executor ex, http_options ho, client_options co = {}, Token&& token = {}) {
    return libretto::detail::spawn_op<std::shared_ptr<client>>(
        ex, nullptr, std::forward<Token>(token),
        [ex, ho = std::move(ho), co = std::move(co)](diagnostics*) mutable { return connect_http(ex, std::move(ho), std::move(co)); });
}

} // namespace libretto::mcp

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/mcp/impl/client.ipp>
#endif

#endif
