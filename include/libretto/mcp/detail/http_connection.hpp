// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_DETAIL_HTTP_CONNECTION_HPP
#define LIBRETTO_MCP_DETAIL_HTTP_CONNECTION_HPP

// The Streamable HTTP transport: each message is a POST to the endpoint; the answer is a
// JSON body or an SSE stream (progress first, then the response). The session id the
// server gives at initialize goes with every later request; a GET stream carries what the
// server sends on its own (list changes, its requests), resumed with Last-Event-ID; a
// DELETE ends the session on close. A POST stream cut before its response is resumed the
// same way (GET with Last-Event-ID after the server's retry delay).

#include <libretto/error.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/sse_parser.hpp>
#include <libretto/http/transport.hpp>
#include <libretto/mcp/detail/connection.hpp>
#include <libretto/mcp/detail/rpc.hpp>
#include <libretto/mcp/types.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace libretto::mcp::detail {

class http_connection final : public connection, public std::enable_shared_from_this<http_connection> {
public:
    http_connection(boost::asio::any_io_executor ex, http_options o)
        : ex_(ex), o_(std::move(o)), transport_(o_.transport ? *o_.transport : http::any_transport(http::beast_transport(ex))),
          wake_(ex) {
        wake_.expires_at(std::chrono::steady_clock::time_point::max());
    }

    boost::system::error_code start(std::string& what) override {
        if (!o_.url.starts_with("http://") && !o_.url.starts_with("https://")) {
            what = "http_options.url must start with http:// or https:// (got " + excerpt(o_.url) + ")";
            return errc::invalid_argument;
        }
        return {};
    }

    boost::asio::awaitable<std::optional<std::string>> read(std::size_t max_bytes) override {
        max_bytes_ = max_bytes;
        for (;;) {
            if (!inbox_.empty()) {
                std::string m = std::move(inbox_.front());
                inbox_.pop_front();
                co_return m;
            }
            if (ended_) {
                if (oversize_) throw boost::system::system_error(errc::oversize, end_reason_);
                co_return std::nullopt;
            }
            (void)co_await wake_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        }
    }

    void write(std::string message) override {
        if (closed_) return;
        boost::asio::co_spawn(ex_, post(shared_from_this(), std::move(message)), boost::asio::detached);
    }

    void initialized(std::string_view protocol_version) override {
        protocol_version_ = protocol_version;
        if (o_.open_stream) boost::asio::co_spawn(ex_, listen(shared_from_this()), boost::asio::detached);
    }

    boost::asio::awaitable<void> close() override {
        if (closed_) co_return;
        closed_ = true;
        stream_stop_.emit(boost::asio::cancellation_type::terminal);
        if (!session_id_.empty()) { // end the session (a server without sessions may answer 405)
            http::http_request r = base_request("DELETE");
            auto [ec, res] = co_await transport_.async_request(std::move(r), boost::asio::as_tuple(boost::asio::use_awaitable));
            (void)ec;
        }
        finish("the client closed the connection");
    }

    void abort() noexcept override {
        closed_ = true;
        stream_stop_.emit(boost::asio::cancellation_type::terminal);
        finish("the client closed the connection");
    }

    std::string describe_end() const override { return end_reason_; }

private:
    http::http_request base_request(std::string method) const {
        http::http_request r;
        r.method = std::move(method);
        r.url = o_.url;
        r.headers = o_.headers;
        if (!session_id_.empty()) r.headers.push_back({"mcp-session-id", session_id_});
        if (!protocol_version_.empty()) r.headers.push_back({"mcp-protocol-version", protocol_version_});
        return r;
    }

    void deliver(std::string message) {
        inbox_.push_back(std::move(message));
        wake_.cancel();
    }

    void finish(std::string why) {
        if (ended_) return;
        ended_ = true;
        end_reason_ = std::move(why);
        wake_.cancel();
    }

    /// A failed POST of a request: its caller gets an error response naming what happened;
    /// a notification's failure has no one to tell.
    void refuse(const std::optional<std::int64_t>& id, std::string why) {
        if (!id) return;
        json::object e{{"jsonrpc", "2.0"}, {"id", *id}, {"error", json::object{{"code", -32000}, {"message", std::move(why)}}}};
        deliver(json::serialize(e));
    }

    /// The wait before reopening a stream: the server's `retry:`, at most max_reconnect_delay
    /// (a peer's number: 1e13 ms would overflow the timer, and a wait outlives close()).
    std::chrono::milliseconds reconnect_after(const std::optional<std::uint64_t>& retry_ms) const {
        const auto most = static_cast<std::uint64_t>(std::max<std::int64_t>(0, o_.max_reconnect_delay.count()));
        return retry_ms ? std::chrono::milliseconds(static_cast<std::int64_t>(std::min(*retry_ms, most))) : o_.reconnect_delay;
    }

    /// Reads an SSE body into messages; true if it carried the answer to `id`.
    template <class Response>
    boost::asio::awaitable<bool> read_events(Response& res, const std::optional<std::int64_t>& id,
                                             std::optional<std::uint64_t>& retry_ms) {
        // The event limit is the message limit (plus its "data: " framing).
        http::sse_parser_options po;
        po.max_event_size = max_bytes_ + 1024;
        http::sse_parser parser(po);
        bool answered = false;
        char buf[16 * 1024];
        for (;;) {
            auto [ec, n] = co_await res.async_read_some(boost::asio::buffer(buf), boost::asio::as_tuple(boost::asio::use_awaitable));
            if (ec || n == 0) break;
            bool too_big = false;
            auto pec = parser.feed(std::string_view(buf, n), [&](const http::sse_event& e) {
                if (!e.id.empty()) last_event_id_ = e.id;
                if (e.data.empty()) return;
                if (e.data.size() > max_bytes_) {
                    too_big = true;
                    return;
                }
                if (id) {
                    auto m = parse_message(e.data);
                    if (m)
                        if (const auto* mid = m->if_contains("id"); mid && mid->is_int64() && mid->get_int64() == *id &&
                                                                    !m->contains("method"))
                            answered = true;
                }
                deliver(std::string(e.data));
            });
            if (too_big || pec) {
                oversize_ = true;
                finish("the server sent a message longer than " + std::to_string(max_bytes_) + " bytes");
                co_return answered;
            }
        }
        retry_ms = parser.retry_ms();
        co_return answered;
    }

    static boost::asio::awaitable<void> post(std::shared_ptr<http_connection> self, std::string message) {
        namespace asio = boost::asio;
        std::optional<std::int64_t> id;
        bool is_request = false;
        if (auto m = parse_message(message)) {
            if (const auto* i = m->if_contains("id"); i && i->is_int64()) id = i->get_int64();
            is_request = m->contains("method") && id.has_value();
        }
        if (!is_request) id.reset();
        http::http_request r = self->base_request("POST");
        r.headers.push_back({"content-type", "application/json"});
        r.headers.push_back({"accept", "application/json, text/event-stream"});
        r.body = std::move(message);
        auto [ec, res] = co_await self->transport_.async_request(std::move(r), asio::as_tuple(asio::use_awaitable));
        if (ec) {
            self->refuse(id, "the HTTP request to " + self->o_.url + " failed: " + ec.message());
            co_return;
        }
        if (auto sid = res.header("mcp-session-id"); !sid.empty()) self->session_id_ = std::string(sid);
        const unsigned status = res.status();
        if (status == 202 || (status >= 200 && status < 300 && !id)) co_return; // accepted (a notification, an answer)
        if (status == 404 && !self->session_id_.empty()) {
            self->finish("the server ended the session (HTTP 404)");
            co_return;
        }
        if (status < 200 || status >= 300) {
            auto [bec, body] = co_await http::read_body(res, 64 * 1024);
            self->refuse(id, "HTTP " + std::to_string(status) + " from " + self->o_.url + ": " + excerpt(body));
            co_return;
        }
        const std::string type(res.header("content-type"));
        if (type.find("text/event-stream") != std::string::npos) {
            std::optional<std::uint64_t> retry;
            bool answered = co_await self->read_events(res, id, retry);
            // Cut before its answer: resume from the last event the server numbered.
            for (int attempt = 0; !answered && !self->closed_ && !self->ended_ && !self->last_event_id_.empty() && attempt < 5;
                 ++attempt) {
                asio::steady_timer t(self->ex_, self->reconnect_after(retry));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                http::http_request g = self->base_request("GET");
                g.headers.push_back({"accept", "text/event-stream"});
                g.headers.push_back({"last-event-id", self->last_event_id_});
                auto [gec, gres] = co_await self->transport_.async_request(std::move(g), asio::as_tuple(asio::use_awaitable));
                if (gec || gres.status() != 200) continue;
                answered = co_await self->read_events(gres, id, retry);
            }
            if (!answered && !self->ended_) self->refuse(id, "the server's event stream ended before the answer");
            co_return;
        }
        auto [bec, body] = co_await http::read_body(res, self->max_bytes_);
        if (bec == errc::oversize) {
            self->oversize_ = true;
            self->finish("the server sent a message longer than " + std::to_string(self->max_bytes_) + " bytes");
            co_return;
        }
        if (bec) { // cut short: this request fails now, with the reason, and the connection lives
            self->refuse(id, "reading the answer from " + self->o_.url + " failed: " + bec.message());
            co_return;
        }
        boost::system::error_code pec;
        json::value v = json::parse(body, pec);
        if (!pec && v.is_array()) { // a batch
            for (const auto& m : v.get_array()) self->deliver(json::serialize(m));
        } else if (!body.empty()) {
            self->deliver(std::move(body)); // the reader judges it (not JSON-RPC: the connection ends)
        }
    }

    /// The GET stream: what the server sends on its own. Reopened (with Last-Event-ID) when
    /// it ends, until the connection closes; a server without one (405) is left alone.
    static boost::asio::awaitable<void> listen(std::shared_ptr<http_connection> self) {
        namespace asio = boost::asio;
        int failures = 0;
        while (!self->closed_ && !self->ended_ && failures < 5) {
            http::http_request g = self->base_request("GET");
            g.headers.push_back({"accept", "text/event-stream"});
            if (!self->last_event_id_.empty()) g.headers.push_back({"last-event-id", self->last_event_id_});
            auto [ec, res] = co_await self->transport_.async_request(
                std::move(g), asio::bind_cancellation_slot(self->stream_stop_.slot(), asio::as_tuple(asio::use_awaitable)));
            if (self->closed_) co_return;
            if (!ec && res.status() == 405) co_return;
            std::optional<std::uint64_t> retry;
            if (!ec && res.status() == 200) {
                failures = 0;
                (void)co_await self->read_events(res, std::nullopt, retry);
            } else {
                ++failures;
            }
            if (self->closed_) co_return;
            asio::steady_timer t(self->ex_, self->reconnect_after(retry));
            (void)co_await t.async_wait(asio::bind_cancellation_slot(self->stream_stop_.slot(), asio::as_tuple(asio::use_awaitable)));
        }
    }

    boost::asio::any_io_executor ex_;
    http_options o_;
    http::any_transport transport_;
    boost::asio::steady_timer wake_;
    std::deque<std::string> inbox_;
    std::string session_id_;
    std::string protocol_version_;
    std::string last_event_id_;
    std::size_t max_bytes_ = 16 * 1024 * 1024;
    boost::asio::cancellation_signal stream_stop_;
    bool closed_ = false;
    bool ended_ = false;
    bool oversize_ = false;
    std::string end_reason_;
};

} // namespace libretto::mcp::detail

#endif
