// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_BEAST_TRANSPORT_HPP
#define LIBRETTO_HTTP_BEAST_TRANSPORT_HPP

// An http_transport on Boost.Beast: HTTP/1.1 over TCP, and over TLS when the TLS policy is
// openssl_tls (<libretto/http/openssl_tls.hpp>, needs libretto::openssl). No proxies.
// Beast parses and reads the messages over plain Asio streams (ip::tcp::socket, ssl::stream),
// with one timer per connection for the timeouts (detail/beast_connection.hpp).
//
//   beast_transport<> plain{ex};                       // http:// only, no OpenSSL needed
//   beast_transport<openssl_tls> t{ex, {.timeouts = {.idle = 30s}}};
//   auto res = co_await t.async_request(req, asio::use_awaitable);
//   while (std::size_t n = co_await res.async_read_some(asio::buffer(buf), asio::use_awaitable))
//       parser.feed({buf, n}, on_event);
//
// Connections are kept alive and reused per (scheme, host, port), up to max_idle_per_host
// idle ones each; a connection goes back to the pool only after its body was read to the
// end (a response dropped early closes it). A pooled connection the server closed meanwhile
// is noticed when no response byte arrives, and the request is sent once more on a new one.
// Cancellation (the completion handler's cancellation slot, e.g. a cancelled coroutine)
// closes the socket at once; the operation completes with asio::error::operation_aborted.
// Copies share the pool; the pool is guarded by a mutex, so copies may run on any threads.

#include <libretto/detail/deadline.hpp>
#include <libretto/async.hpp>
#include <libretto/error.hpp>
#include <libretto/http/beast_transport_options.hpp>
#include <libretto/http/detail/beast_connection.hpp>
#include <libretto/http/detail/check_options.hpp>
#include <libretto/http/detail/post_completion.hpp>
#include <libretto/http/detail/url.hpp>
#include <libretto/http/error.hpp>
#include <libretto/http/header.hpp>
#include <libretto/http/transport.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace libretto::http {

/// The TLS policy of a plain-TCP transport: https:// URLs fail with http_errc::tls_required.
/// A TLS policy names its stream_type (whose next_layer() is the ip::tcp::socket), context and
/// options, and provides prepare(), async_handshake() and is_truncation(), as openssl_tls does.
struct no_tls {
    static constexpr bool enabled = false;
    struct options {};
    struct context {
        explicit context(const options&) {}
    };
    struct stream_type {};
    static bool is_truncation(const boost::system::error_code&) noexcept { return false; }
};

template <class Tls = no_tls>
class beast_transport {
    using clock = std::chrono::steady_clock;
    using error_code = boost::system::error_code;

    using connection = detail::beast_connection<Tls>;

    struct shared_state {
        shared_state(boost::asio::any_io_executor e, beast_transport_options o, const typename Tls::options& t)
            : ex(std::move(e)), opts(std::move(o)), tls_ctx(t) {}

        boost::asio::any_io_executor ex;
        beast_transport_options opts;
        typename Tls::context tls_ctx;
        std::mutex mutex;
        std::unordered_map<std::string, std::vector<std::shared_ptr<connection>>> idle;
        std::size_t opened = 0;

        std::shared_ptr<connection> take(const std::string& key) {
            std::lock_guard lock(mutex);
            auto it = idle.find(key);
            if (it == idle.end()) return nullptr;
            const auto now = clock::now();
            while (!it->second.empty()) {
                std::shared_ptr<connection> c = std::move(it->second.back());
                it->second.pop_back();
                // Compared in milliseconds: max_idle_time in the clock's nanoseconds could overflow.
                const auto idle_for = std::chrono::floor<std::chrono::milliseconds>(now - c->idle_since);
                if (opts.max_idle_time.count() == 0 || idle_for <= opts.max_idle_time) return c;
                c->close(); // stale: the server has probably dropped it already
            }
            return nullptr;
        }

        void give_back(std::shared_ptr<connection> c) {
            c->disarm();
            // Bytes after the body, or a deadline that passed as the body ended: not reusable.
            if (c->buffer.size() != 0 || c->timed_out) return c->close();
            c->idle_since = clock::now();
            std::lock_guard lock(mutex);
            auto& v = idle[c->key];
            if (v.size() >= opts.max_idle_per_host) return c->close();
            v.push_back(std::move(c));
        }
    };

    // When the next step must end: its own limit, or the total's deadline if that is nearer.
    struct step_limit {
        std::optional<clock::time_point> until;
        bool total_binds = false;
    };
    static step_limit limit(std::chrono::milliseconds step, std::optional<clock::time_point> total) {
        step_limit l;
        // Saturated: milliseconds::max() ("wait forever") as the steady clock's nanoseconds
        // overflowed and fired at once.
        if (step.count() > 0) l.until = ::libretto::detail::deadline_after(step);
        if (total && (!l.until || *total < *l.until)) l = {*total, true};
        return l;
    }
    static void arm(connection& c, const step_limit& l) {
        if (l.until) c.arm(*l.until);
        else c.disarm();
    }

    // Cancellation: the initiating handler's slot gets a handler that closes whatever the
    // operation is waiting on (socket or resolver), so the pending Beast/Asio operation ends
    // at once with operation_aborted. The operations themselves run with an empty slot.
    struct cancel_hook {
        connection* conn = nullptr;
        boost::asio::ip::tcp::resolver* resolver = nullptr;
        bool cancelled = false;
        void fire() {
            cancelled = true;
            if (conn) conn->close();
            if (resolver) resolver->cancel();
        }
    };
    // While alive, a cancellation closes `c`.
    struct watch {
        cancel_hook& hook;
        watch(cancel_hook& h, connection& c) : hook(h) { hook.conn = &c; }
        watch(cancel_hook& h, boost::asio::ip::tcp::resolver& r) : hook(h) { hook.resolver = &r; }
        ~watch() {
            hook.conn = nullptr;
            hook.resolver = nullptr;
        }
        watch(const watch&) = delete;
        watch& operator=(const watch&) = delete;
    };

    // Starts `op` (an awaitable<R> factory taking the hook) on the transport's executor and
    // completes `handler` with R's two members.
    template <class Handler, class Make>
    static void launch(const boost::asio::any_io_executor& ex, Handler&& handler, Make make) {
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        auto hex = boost::asio::get_associated_executor(handler, ex);
        auto hook = std::make_shared<cancel_hook>();
        if (slot.is_connected()) slot.assign([hook](boost::asio::cancellation_type) { hook->fire(); });
        using result_type = typename decltype(make(hook))::value_type;
        auto done = [h = std::forward<Handler>(handler), slot, hook](std::exception_ptr e, result_type r) mutable {
            if (slot.is_connected()) slot.clear();
            if (e || hook->cancelled) r.first = boost::asio::error::operation_aborted;
            std::move(h)(r.first, std::move(r.second));
        };
        boost::asio::co_spawn(ex, make(hook), boost::asio::bind_executor(hex, std::move(done)));
    }

    static auto op_token(error_code& ec) {
        return boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(),
                                                   boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }

    static bool is_cut(const error_code& ec) {
        namespace be = boost::beast;
        return ec == be::http::error::partial_message || ec == be::http::error::end_of_stream ||
               ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
               ec == boost::asio::error::broken_pipe || ec == boost::asio::error::connection_aborted ||
               Tls::is_truncation(ec);
    }

public:
    class response {
    public:
        response() = default;
        response(response&&) noexcept = default;
        response& operator=(response&& o) noexcept {
            if (this != &o) {
                drop();
                state_ = std::move(o.state_);
                conn_ = std::move(o.conn_);
                parser_ = std::move(o.parser_);
                total_ = o.total_;
                done_ = o.done_;
                reused_ = o.reused_;
            }
            return *this;
        }
        ~response() { drop(); }

        unsigned status() const noexcept { return parser_ ? parser_->get().result_int() : 0; }

        std::string_view header(std::string_view name) const {
            if (!parser_) return {};
            const auto& h = parser_->get();
            auto it = h.find(boost::beast::string_view(name.data(), name.size()));
            if (it == h.end()) return {};
            const auto v = it->value();
            return {v.data(), v.size()};
        }

        bool done() const noexcept { return done_; }

        /// True if the request went over a kept-alive connection from the pool.
        bool reused_connection() const noexcept { return reused_; }

        /// Reads the next body bytes into `buf` (void(error_code, std::size_t); 0 = the end).
        /// On a default-constructed or moved-from response: asio::error::not_connected.
        template <boost::asio::completion_token_for<void(error_code, std::size_t)> CompletionToken =
                      default_completion_token_t>
        auto async_read_some(boost::asio::mutable_buffer buf, CompletionToken&& token = {}) {
            return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
                [this](auto handler, boost::asio::mutable_buffer b) {
                    if (!state_) { // a default-constructed or moved-from response
                        detail::post_completion({}, std::move(handler), error_code(boost::asio::error::not_connected),
                                                std::size_t{0});
                        return;
                    }
                    launch(executor(), std::move(handler),
                           [this, b](std::shared_ptr<cancel_hook> hook) { return read_some(b, std::move(hook)); });
                },
                token, buf);
        }

    private:
        friend class beast_transport;

        boost::asio::any_io_executor executor() const {
            return state_ ? state_->ex : boost::asio::any_io_executor();
        }

        void drop() noexcept {
            if (conn_) conn_->close(); // a body not read to the end: the connection is unusable
            conn_.reset();
        }

        void finish() {
            done_ = true;
            if (parser_->keep_alive()) state_->give_back(std::move(conn_));
            else drop();
        }

        boost::asio::awaitable<std::pair<error_code, std::size_t>> read_some(boost::asio::mutable_buffer b,
                                                                             std::shared_ptr<cancel_hook> hook) {
            std::pair<error_code, std::size_t> out{};
            if (done_) co_return out;
            if (!conn_ || !parser_) {
                out.first = boost::asio::error::not_connected; // an earlier read failed
                co_return out;
            }
            if (b.size() == 0) {
                out.first = make_error_code(errc::invalid_argument); // 0 would read as "end of body"
                co_return out;
            }
            if (hook->cancelled) {
                out.first = boost::asio::error::operation_aborted;
                co_return out;
            }
            const step_limit lim = limit(state_->opts.timeouts.idle, total_);
            auto& body = parser_->get().body();
            error_code ec;
            std::size_t n = 0;
            bool network = true;
            if (conn_->buffer.size() != 0) {
                // Bytes already read: parsed here first, as Beast's read would, with no socket
                // operation and no deadline to start and cancel. Only when the parser needs
                // more does the read go to the network.
                body.data = b.data();
                body.size = b.size();
                conn_->buffer.consume(parser_->put(conn_->buffer.data(), ec));
                n = b.size() - body.size;
                if (ec == boost::beast::http::error::need_buffer || ec == boost::beast::http::error::need_more) ec = {};
                network = !ec && n == 0 && !parser_->is_done();
            }
            if (network) {
                arm(*conn_, lim);
                watch guard(*hook, *conn_);
                for (;;) {
                    body.data = b.data();
                    body.size = b.size();
                    auto token = op_token(ec);
                    if constexpr (Tls::enabled) {
                        if (conn_->tls) co_await boost::beast::http::async_read_some(*conn_->tls, conn_->buffer, *parser_, token);
                        else co_await boost::beast::http::async_read_some(*conn_->tcp, conn_->buffer, *parser_, token);
                    } else {
                        co_await boost::beast::http::async_read_some(*conn_->tcp, conn_->buffer, *parser_, token);
                    }
                    if (ec == boost::beast::http::error::need_buffer) ec = {};
                    n = b.size() - body.size;
                    if (ec || n > 0 || parser_->is_done()) break;
                }
                conn_->disarm();
            }
            if (hook->cancelled) {
                out.first = boost::asio::error::operation_aborted;
            } else if (ec && conn_->timed_out) {
                out.first = make_error_code(lim.total_binds ? http_errc::total_timeout : http_errc::idle_timeout);
            } else if (ec && is_cut(ec)) {
                out.first = make_error_code(http_errc::truncated);
            } else {
                out.first = ec;
            }
            if (out.first) {
                drop();
                co_return out;
            }
            out.second = n;
            if (parser_->is_done()) finish();
            co_return out;
        }

        std::shared_ptr<shared_state> state_;
        std::shared_ptr<connection> conn_;
        std::unique_ptr<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
        std::optional<clock::time_point> total_;
        bool done_ = false;
        bool reused_ = false;
    };

    using response_type = response;
    using tls_options = typename Tls::options;

    /// Throws system_error (errc::invalid_argument) for a negative timeout or max_idle_time,
    /// naming it, and when the TLS options are unusable (a CA file that cannot be loaded).
    explicit beast_transport(boost::asio::any_io_executor ex, beast_transport_options options = {},
                             const tls_options& tls = {})
        : state_(std::make_shared<shared_state>(std::move(ex), detail::checked(std::move(options)), tls)) {}

    boost::asio::any_io_executor get_executor() const noexcept { return state_->ex; }

    const beast_transport_options& options() const noexcept { return state_->opts; }

    /// Connections opened so far (by this transport and its copies).
    std::size_t connections_opened() const {
        std::lock_guard lock(state_->mutex);
        return state_->opened;
    }

    /// Idle kept-alive connections in the pool now.
    std::size_t idle_connections() const {
        std::lock_guard lock(state_->mutex);
        std::size_t n = 0;
        for (const auto& [key, v] : state_->idle) n += v.size();
        return n;
    }

    /// Sends `request` and reads the response headers: void(error_code, response).
    /// Bad input (not an absolute http(s) URL, an unknown method) is errc::invalid_argument.
    template <boost::asio::completion_token_for<void(error_code, response)> CompletionToken =
                  default_completion_token_t>
    auto async_request(http_request request, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, response)>(
            [st = state_](auto handler, http_request r) {
                auto ex = st->ex;
                launch(ex, std::move(handler), [st = std::move(st), r = std::move(r)](std::shared_ptr<cancel_hook> hook) mutable {
                    return run_request(std::move(st), std::move(r), std::move(hook));
                });
            },
            token, std::move(request));
    }

private:
    static boost::asio::awaitable<error_code> connect(shared_state& st, connection& c, const detail::parsed_url& url,
                                                      std::optional<clock::time_point> total, cancel_hook& hook) {
        namespace ip = boost::asio::ip;
        error_code ec;
        if constexpr (Tls::enabled) {
            if (url.tls) {
                c.tls.emplace(st.ex, st.tls_ctx.native());
                if (auto e = Tls::prepare(*c.tls, url.host, st.tls_ctx)) co_return e;
            }
        }
        if (!c.tls) c.tcp.emplace(st.ex);
        auto& socket = c.lowest();
        {
            std::lock_guard lock(st.mutex);
            ++st.opened;
        }
        const step_limit lim = limit(st.opts.timeouts.connect, total);
        std::vector<ip::tcp::endpoint> endpoints;
        if (auto addr = ip::make_address(url.host, ec); !ec) {
            endpoints.emplace_back(addr, url.port); // a literal address: no resolver round trip
        } else {
            ip::tcp::resolver resolver(st.ex);
            ec = {};
            watch guard(hook, resolver);
            auto token = op_token(ec);
            auto results = co_await resolver.async_resolve(url.host, std::to_string(url.port), token);
            if (hook.cancelled) co_return boost::asio::error::operation_aborted;
            if (ec) co_return ec;
            for (const auto& r : results) endpoints.push_back(r.endpoint());
            if (endpoints.empty()) co_return boost::asio::error::host_not_found;
        }
        {
            if (hook.cancelled) co_return boost::asio::error::operation_aborted;
            watch guard(hook, c);
            arm(c, lim);
            // The endpoints in turn, until one accepts; a timeout or cancellation (which
            // close the socket) ends the loop.
            for (const auto& endpoint : endpoints) {
                socket.close(ec);
                socket.open(endpoint.protocol(), ec);
                if (!ec) {
                    auto token = op_token(ec);
                    co_await socket.async_connect(endpoint, token);
                }
                if (!ec || c.timed_out || hook.cancelled) break;
            }
            if (!ec) {
                socket.set_option(ip::tcp::no_delay(true), ec);
                ec = {};
            }
            if constexpr (Tls::enabled) {
                if (!ec && c.tls && !c.timed_out) {
                    auto htoken = op_token(ec);
                    co_await Tls::async_handshake(*c.tls, htoken);
                }
            }
            c.disarm();
        }
        if (hook.cancelled) co_return boost::asio::error::operation_aborted;
        if (c.timed_out) // also when the deadline closed the socket just as the step succeeded
            co_return make_error_code(lim.total_binds ? http_errc::total_timeout : http_errc::connect_timeout);
        co_return ec;
    }

    static boost::asio::awaitable<std::pair<error_code, response>> run_request(std::shared_ptr<shared_state> st,
                                                                               http_request req,
                                                                               std::shared_ptr<cancel_hook> hook) {
        namespace bh = boost::beast::http;
        std::pair<error_code, response> out{};
        detail::parsed_url url;
        if (auto ec = detail::parse_url(req.url, url)) {
            out.first = ec;
            co_return out;
        }
        if (url.tls && !Tls::enabled) {
            out.first = make_error_code(http_errc::tls_required);
            co_return out;
        }
        const bh::verb method = bh::string_to_verb(req.method);
        if (method == bh::verb::unknown) {
            out.first = make_error_code(errc::invalid_argument);
            co_return out;
        }
        bh::request<bh::string_body> msg{method, url.target, 11};
        msg.set(bh::field::host, url.authority);
        if (!st->opts.user_agent.empty()) msg.set(bh::field::user_agent, st->opts.user_agent);
        for (const auto& h : req.headers) {
            if (header_problem(h) != header_fault::none) {
                out.first = make_error_code(errc::invalid_argument); // header injection
                co_return out;
            }
            msg.insert(h.name, h.value);
        }
        msg.body() = std::move(req.body);
        msg.keep_alive(true);
        msg.prepare_payload();
        // The request's bytes, sent with one plain async_write: Beast's asynchronous
        // serializer is the costliest instantiation of a program that uses this transport
        // (docs/building.md, "Compile time"), and a request is a few kilobytes.
        std::ostringstream head;
        head << msg.base();
        std::string wire = std::move(head).str();
        wire += msg.body();

        std::optional<clock::time_point> total;
        if (st->opts.timeouts.total.count() > 0) total = ::libretto::detail::deadline_after(st->opts.timeouts.total);
        // A second attempt only when a pooled connection turned out to be closed.
        for (int attempt = 0;; ++attempt) {
            std::shared_ptr<connection> conn = attempt == 0 ? st->take(url.key) : nullptr;
            const bool reused = conn != nullptr;
            if (!conn) {
                conn = std::make_shared<connection>(st->ex);
                conn->key = url.key;
                if (auto ec = co_await connect(*st, *conn, url, total, *hook)) {
                    conn->close();
                    out.first = ec;
                    co_return out;
                }
            }
            auto parser = std::make_unique<bh::response_parser<bh::buffer_body>>();
            parser->header_limit(st->opts.header_limit);
            parser->body_limit(boost::none); // the body streams through the caller's buffer
            const step_limit lim = limit(st->opts.timeouts.first_byte, total);
            error_code ec;
            if (hook->cancelled) {
                out.first = boost::asio::error::operation_aborted;
                co_return out;
            }
            {
                watch guard(*hook, *conn);
                arm(*conn, lim);
                auto wtoken = op_token(ec);
                const auto bytes = boost::asio::buffer(wire);
                if constexpr (Tls::enabled) {
                    if (conn->tls) co_await boost::asio::async_write(*conn->tls, bytes, wtoken);
                    else co_await boost::asio::async_write(*conn->tcp, bytes, wtoken);
                } else {
                    co_await boost::asio::async_write(*conn->tcp, bytes, wtoken);
                }
                if (!ec) {
                    auto rtoken = op_token(ec);
                    if constexpr (Tls::enabled) {
                        if (conn->tls) co_await bh::async_read_header(*conn->tls, conn->buffer, *parser, rtoken);
                        else co_await bh::async_read_header(*conn->tcp, conn->buffer, *parser, rtoken);
                    } else {
                        co_await bh::async_read_header(*conn->tcp, conn->buffer, *parser, rtoken);
                    }
                }
                conn->disarm();
            }
            if (hook->cancelled) {
                conn->close();
                out.first = boost::asio::error::operation_aborted;
                co_return out;
            }
            if (ec) {
                conn->close();
                if (reused && is_cut(ec) && !parser->got_some()) continue; // the server dropped the idle connection
                if (conn->timed_out)
                    ec = make_error_code(lim.total_binds ? http_errc::total_timeout : http_errc::first_byte_timeout);
                else if (is_cut(ec))
                    ec = make_error_code(http_errc::truncated);
                out.first = ec;
                co_return out;
            }
            response& res = out.second;
            res.state_ = st;
            res.conn_ = std::move(conn);
            res.parser_ = std::move(parser);
            res.total_ = total;
            res.reused_ = reused;
            if (res.parser_->is_done()) res.finish(); // no body (204, 304, Content-Length: 0)
            co_return out;
        }
    }

    std::shared_ptr<shared_state> state_;
};

static_assert(http_transport<beast_transport<>>);

} // namespace libretto::http

#endif
