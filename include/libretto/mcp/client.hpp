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
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/mcp/detail/connection.hpp>
#include <libretto/mcp/detail/rpc.hpp>
#include <libretto/mcp/detail/http_connection.hpp>
#include <libretto/mcp/detail/stdio_connection.hpp>
#include <libretto/mcp/types.hpp>
#include <libretto/store/detail/spawn_op.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
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

    /// Sends `method` and waits for its answer: the result object. Throws system_error.
    boost::asio::awaitable<json::object> request(std::string method, json::object params) {
        namespace asio = boost::asio;
        co_await asio::this_coro::throw_if_cancelled(false);
        if (ended_ && restarts_left_ > 0 && !closed_ && method != "initialize") co_await restart();
        if (ended_) throw boost::system::system_error(end_code_, method + ": " + end_reason_);
        const std::int64_t id = next_id_++;
        auto p = std::make_shared<pending>(ex_);
        const auto deadline = std::chrono::steady_clock::now() + o_.request_timeout;
        p->wake.expires_at(deadline);
        pending_.emplace(id, p);
        conn_->write(detail::make_request(id, method, std::move(params)));
        (void)co_await p->wake.async_wait(asio::as_tuple(asio::use_awaitable));
        pending_.erase(id);
        if (p->answer) co_return detail::take_result(std::move(*p->answer), method);
        if (ended_) throw boost::system::system_error(end_code_, method + ": " + end_reason_);
        const bool timed_out = std::chrono::steady_clock::now() >= deadline;
        conn_->write(detail::make_cancelled(id, timed_out ? "timed out" : "cancelled by the client"));
        if (timed_out)
            throw boost::system::system_error(asio::error::timed_out,
                                              method + ": no answer within " + std::to_string(o_.request_timeout.count()) + " ms");
        throw boost::system::system_error(errc::cancelled, method + ": cancelled");
    }

    boost::asio::awaitable<std::vector<tool_info>> list_tools() {
        if (tools_ && !tools_stale_) co_return *tools_;
        const std::uint64_t generation = tools_generation_;
        std::vector<tool_info> all;
        std::string cursor;
        for (int page = 0; page < 10'000; ++page) {
            json::object params;
            if (!cursor.empty()) params["cursor"] = cursor;
            json::object r = co_await request("tools/list", std::move(params));
            detail::read_tools(r, all);
            const auto* next = r.if_contains("nextCursor");
            if (!next || !next->is_string() || next->get_string().empty()) break;
            cursor = std::string(next->get_string());
        }
        tools_ = all;
        tools_stale_ = tools_generation_ != generation; // changed while listing: list again next time
        co_return all;
    }

    /// Every item of a paginated list (`key` of each page), following nextCursor.
    boost::asio::awaitable<json::array> list_all(std::string method, std::string key) {
        json::array all;
        std::string cursor;
        for (int page = 0; page < 10'000; ++page) {
            json::object params;
            if (!cursor.empty()) params["cursor"] = cursor;
            json::object r = co_await request(method, std::move(params));
            auto* items = r.if_contains(key);
            if (!items || !items->is_array())
                throw boost::system::system_error(errc::bad_response, method + ": the result has no '" + key + "' array");
            for (auto& i : items->get_array()) all.push_back(std::move(i));
            const auto* next = r.if_contains("nextCursor");
            if (!next || !next->is_string() || next->get_string().empty()) break;
            cursor = std::string(next->get_string());
        }
        co_return all;
    }

    boost::asio::awaitable<json::array> read_resource(std::string uri) {
        json::object params; // named: g++ 12 cannot take a braced json::object inside co_await
        params["uri"] = std::move(uri);
        json::object r = co_await request("resources/read", std::move(params));
        auto* c = r.if_contains("contents");
        if (!c || !c->is_array())
            throw boost::system::system_error(errc::bad_response, "resources/read: the result has no 'contents' array");
        co_return std::move(c->get_array());
    }

    boost::asio::awaitable<call_result> call_tool(std::string name, json::object args) {
        json::object params{{"name", name}, {"arguments", std::move(args)}};
        json::object r = co_await request("tools/call", std::move(params));
        co_return detail::read_call_result(std::move(r), name);
    }

    boost::asio::awaitable<json::object> close() {
        closed_ = true;
        if (!ended_) end(errc::io_error, "the client closed the connection");
        co_await conn_->close();
        co_return json::object{};
    }

    // ---- set up by the connect operations ----------------------------------------------

    /// Starts reading, initializes and sends notifications/initialized.
    boost::asio::awaitable<void> initialize() {
        boost::asio::co_spawn(ex_, read_loop(weak_from_this(), conn_, o_.max_message_bytes), boost::asio::detached);
        json::object r = co_await request("initialize", detail::initialize_params(o_));
        info_ = detail::read_server_info(r);
        if (!detail::supported_version(info_.protocol_version)) {
            co_await close();
            throw boost::system::system_error(errc::bad_response, "the server answered initialize with protocol version '" +
                                                                     info_.protocol_version + "', which this client does not speak");
        }
        conn_->initialized(info_.protocol_version); // first: HTTP sends the version with the notification
        conn_->write(detail::make_notification("notifications/initialized", {}));
    }

private:
    struct pending {
        explicit pending(const executor_type& ex) : wake(ex) {}
        boost::asio::steady_timer wake;
        std::optional<json::object> answer;
    };

    /// A new connection from the factory, initialized; concurrent callers wait for the one
    /// restart under way.
    boost::asio::awaitable<void> restart() {
        namespace asio = boost::asio;
        while (restarting_) {
            asio::steady_timer t(ex_, std::chrono::milliseconds(5));
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        if (!ended_ || restarts_left_ == 0) co_return;
        restarting_ = true;
        --restarts_left_;
        ++restarted_;
        std::exception_ptr failure;
        try {
            auto conn = factory_();
            std::string what;
            if (auto ec = conn->start(what)) throw boost::system::system_error(ec, what);
            conn_ = std::move(conn);
            ended_ = false;
            end_reason_.clear();
            tools_stale_ = true;
            co_await initialize();
        } catch (...) {
            failure = std::current_exception();
        }
        restarting_ = false;
        if (failure) {
            if (!ended_) end(errc::io_error, "the restarted server failed to initialize");
            std::rethrow_exception(failure);
        }
    }

    template <class Result, class Token, class Make>
    auto op(diagnostics* d, Token&& token, Make make) {
        return libretto::detail::spawn_op<Result>(ex_, d, std::forward<Token>(token), std::move(make));
    }

    // Holds the client weakly: dropping the last reference ends the connection (abort),
    // which ends this loop.
    static boost::asio::awaitable<void> read_loop(std::weak_ptr<client> weak, std::shared_ptr<detail::connection> conn,
                                                  std::size_t max_bytes) {
        for (;;) {
            std::optional<std::string> line;
            boost::system::error_code failed;
            std::string why;
            try {
                line = co_await conn->read(max_bytes);
            } catch (const boost::system::system_error& e) {
                failed = e.code();
                why = e.what();
            }
            auto self = weak.lock();
            if (!self || self->ended_ || self->conn_ != conn) co_return; // gone, ended, or replaced by a restart
            if (failed) {
                self->end(failed, why);
                co_await conn->close();
                co_return;
            }
            if (!line) {
                self->end(errc::io_error, conn->describe_end());
                co_return;
            }
            if (line->empty()) continue;
            auto msg = detail::parse_message(*line);
            if (!msg) {
                self->end(errc::bad_response, "the server sent something that is not a JSON-RPC message: " +
                                                  detail::excerpt(*line));
                co_await conn->close();
                co_return;
            }
            self->dispatch(std::move(*msg));
        }
    }

    void dispatch(json::object msg) {
        const json::value* id = msg.if_contains("id");
        const json::value* method = msg.if_contains("method");
        if (method && method->is_string()) {
            const std::string m(method->get_string());
            json::object params;
            if (const auto* p = msg.if_contains("params"); p && p->is_object()) params = p->get_object();
            if (id && !id->is_null()) { // a request from the server
                conn_->write(detail::answer_server_request(*id, m, params, o_.on_request));
                return;
            }
            if (m == "notifications/tools/list_changed") {
                tools_stale_ = true;
                ++tools_generation_;
            }
            if (m == "notifications/progress" && o_.on_progress) o_.on_progress(params);
            else if (o_.on_notification) o_.on_notification(m, params);
            return;
        }
        if (!id || !id->is_int64()) return; // a response to nothing we sent: ignored
        auto it = pending_.find(id->get_int64());
        if (it == pending_.end()) return; // answered after a timeout or a cancel
        it->second->answer = std::move(msg);
        it->second->wake.cancel();
    }

    void end(boost::system::error_code ec, std::string why) {
        if (ended_) return;
        ended_ = true;
        end_code_ = ec;
        end_reason_ = std::move(why);
        for (auto& [id, p] : pending_) p->wake.cancel();
    }

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

    template <class Connection>
    friend boost::asio::awaitable<std::shared_ptr<client>> connect_over(executor_type, std::shared_ptr<Connection>,
                                                                        client_options);
    friend boost::asio::awaitable<std::shared_ptr<client>> connect_stdio(executor_type, stdio_options, client_options);
};

/// Where `name` is on PATH, as the stdio transport will look for a command ("" if nowhere):
/// to say that a server's runtime is missing before starting it.
inline std::string find_executable(std::string_view name) { return detail::find_on_path(name); }

/// Starts `conn`, then initializes a client over it.
template <class Connection>
boost::asio::awaitable<std::shared_ptr<client>> connect_over(client::executor_type ex, std::shared_ptr<Connection> conn,
                                                             client_options co) {
    std::string what;
    if (auto ec = conn->start(what)) throw boost::system::system_error(ec, what);
    auto c = std::make_shared<client>(client::private_tag{}, ex, conn, std::move(co));
    std::exception_ptr failure;
    try {
        co_await c->initialize();
    } catch (...) {
        failure = std::current_exception();
    }
    if (failure) {
        c->end(errc::io_error, "initialize failed");
        co_await conn->close(); // a server that never answered is stopped, not left running
        std::rethrow_exception(failure);
    }
    co_return c;
}

/// Starts the server of `so`, connects and initializes: the client, ready.
inline boost::asio::awaitable<std::shared_ptr<client>> connect_stdio(client::executor_type ex, stdio_options so,
                                                                      client_options co = {}) {
    const unsigned restarts = so.restarts;
    auto c = co_await connect_over(ex, std::make_shared<detail::stdio_connection>(ex, so), std::move(co));
    if (restarts > 0) {
        c->restarts_left_ = restarts;
        c->factory_ = [ex, so = std::move(so)] { return std::make_shared<detail::stdio_connection>(ex, so); };
    }
    co_return c;
}

/// Connects to the Streamable HTTP endpoint of `ho` and initializes: the client, ready.
inline boost::asio::awaitable<std::shared_ptr<client>> connect_http(client::executor_type ex, http_options ho,
                                                                     client_options co = {}) {
    return connect_over(ex, std::make_shared<detail::http_connection>(ex, std::move(ho)), std::move(co));
}

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

#endif
