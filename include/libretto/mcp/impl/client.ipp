// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_IMPL_CLIENT_IPP
#define LIBRETTO_MCP_IMPL_CLIENT_IPP

// The MCP client's coroutines and its two transports: included by client.hpp in a
// header-only build, compiled once by <libretto/src.hpp> with LIBRETTO_SEPARATE_COMPILATION.

#include <libretto/detail/deadline.hpp>
#include <libretto/mcp/client.hpp>

#include <libretto/mcp/detail/child_process.hpp>
#include <libretto/mcp/detail/http_connection.hpp>
#include <libretto/mcp/detail/rpc.hpp>
#include <libretto/mcp/detail/stdio_connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>

namespace libretto::mcp {

struct client::pending {
    explicit pending(const executor_type& ex) : wake(ex) {}
    boost::asio::steady_timer wake;
    std::optional<json::object> answer;
};

LIBRETTO_DECL boost::asio::awaitable<json::object> client::request(std::string method, json::object params) {
    namespace asio = boost::asio;
    co_await asio::this_coro::throw_if_cancelled(false);
    if (ended_ && restarts_left_ > 0 && !closed_ && method != "initialize") co_await restart();
    if (ended_) throw boost::system::system_error(end_code_, method + ": " + end_reason_);
    const std::int64_t id = next_id_++;
    auto p = std::make_shared<pending>(ex_);
    const auto deadline = ::libretto::detail::deadline_after(o_.request_timeout);
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

LIBRETTO_DECL boost::asio::awaitable<std::vector<tool_info>> client::list_tools() {
    if (tools_ && !tools_stale_) co_return *tools_;
    const std::uint64_t generation = tools_generation_;
    std::vector<tool_info> all;
    std::string cursor;
    detail::pager pages{"tools/list"};
    do {
        json::object params;
        if (!cursor.empty()) params["cursor"] = cursor;
        json::object r = co_await request("tools/list", std::move(params));
        detail::read_tools(r, all);
        cursor = pages.next(r);
    } while (!cursor.empty());
    tools_ = all;
    tools_stale_ = tools_generation_ != generation; // changed while listing: list again next time
    co_return all;
}

LIBRETTO_DECL boost::asio::awaitable<json::array> client::list_all(std::string method, std::string key) {
    json::array all;
    std::string cursor;
    detail::pager pages{method};
    do {
        json::object params;
        if (!cursor.empty()) params["cursor"] = cursor;
        json::object r = co_await request(method, std::move(params));
        auto* items = r.if_contains(key);
        if (!items || !items->is_array())
            throw boost::system::system_error(errc::bad_response, method + ": the result has no '" + key + "' array");
        for (auto& i : items->get_array()) all.push_back(std::move(i));
        cursor = pages.next(r);
    } while (!cursor.empty());
    co_return all;
}

LIBRETTO_DECL boost::asio::awaitable<json::array> client::read_resource(std::string uri) {
    json::object params; // named: g++ 12 cannot take a braced json::object inside co_await
    params["uri"] = std::move(uri);
    json::object r = co_await request("resources/read", std::move(params));
    auto* c = r.if_contains("contents");
    if (!c || !c->is_array())
        throw boost::system::system_error(errc::bad_response, "resources/read: the result has no 'contents' array");
    co_return std::move(c->get_array());
}

LIBRETTO_DECL boost::asio::awaitable<call_result> client::call_tool(std::string name, json::object args) {
    json::object params{{"name", name}, {"arguments", std::move(args)}};
    json::object r = co_await request("tools/call", std::move(params));
    co_return detail::read_call_result(std::move(r), name);
}

LIBRETTO_DECL boost::asio::awaitable<json::object> client::close() {
    closed_ = true;
    if (!ended_) end(errc::io_error, "the client closed the connection");
    co_await conn_->close();
    co_return json::object{};
}

LIBRETTO_DECL boost::asio::awaitable<void> client::initialize() {
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

LIBRETTO_DECL boost::asio::awaitable<void> client::restart() {
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

LIBRETTO_DECL boost::asio::awaitable<void> client::read_loop(std::weak_ptr<client> weak,
                                                             std::shared_ptr<detail::connection> conn,
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
            self->end(errc::bad_response,
                      "the server sent something that is not a JSON-RPC message: " + detail::excerpt(*line));
            co_await conn->close();
            co_return;
        }
        self->dispatch(std::move(*msg));
    }
}

LIBRETTO_DECL void client::dispatch(json::object msg) {
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

LIBRETTO_DECL void client::end(boost::system::error_code ec, std::string why) {
    if (ended_) return;
    ended_ = true;
    end_code_ = ec;
    end_reason_ = std::move(why);
    for (auto& [id, p] : pending_) p->wake.cancel();
}

LIBRETTO_DECL std::string find_executable(std::string_view name) { return detail::find_on_path(name); }

LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> detail::connect_over(boost::asio::any_io_executor ex,
                                                                                    std::shared_ptr<connection> conn,
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

LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> connect_stdio(client::executor_type ex, stdio_options so,
                                                                             client_options co) {
    const unsigned restarts = so.restarts;
    auto c = co_await detail::connect_over(ex, std::make_shared<detail::stdio_connection>(ex, so), std::move(co));
    if (restarts > 0) {
        c->restarts_left_ = restarts;
        c->factory_ = [ex, so = std::move(so)] { return std::make_shared<detail::stdio_connection>(ex, so); };
    }
    co_return c;
}

LIBRETTO_DECL boost::asio::awaitable<std::shared_ptr<client>> connect_http(client::executor_type ex, http_options ho,
                                                                            client_options co) {
    return detail::connect_over(ex, std::make_shared<detail::http_connection>(ex, std::move(ho)), std::move(co));
}

} // namespace libretto::mcp

#endif
