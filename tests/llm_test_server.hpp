// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// A loopback HTTP/1.1 server for transport and provider tests. It runs on its own thread and
// io_context, listens on 127.0.0.1 on a random port, records every request, and answers from
// a per-test script of replies:
//
//   llm_test::server srv;
//   srv.push(llm_test::openai_stream({.text = {"Hel", "lo"}, .input_tokens = 9}).in_pieces(5));
//   srv.push(llm_test::rate_limited(llm_test::protocol::anthropic, 2));
//   ... requests to srv.base_url() + "/v1/chat/completions" ...
//   srv.requests()[0].json().at("model")
//
// Streamed replies follow the providers' API references: OpenAI chat.completion.chunk objects
// (`choices[].delta` with content / tool_calls[index] / reasoning_content, a final
// `finish_reason` chunk, the usage chunk with empty `choices` when the request asked for
// `stream_options.include_usage`, then `data: [DONE]`), and Anthropic Messages events
// (message_start, ping, content_block_start/delta/stop with text_delta, thinking_delta,
// signature_delta and input_json_delta, message_delta with stop_reason and usage,
// message_stop, and `error` events). Faults: any status with provider-shaped error bodies,
// Retry-After, slow pieces, a stall, a cut connection, no answer at all, Connection: close.
#ifndef LIBRETTO_TESTS_LLM_TEST_SERVER_HPP
#define LIBRETTO_TESTS_LLM_TEST_SERVER_HPP

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace llm_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace json = boost::json;

enum class protocol { any, openai, anthropic };

struct tool_call {
    std::string id;
    std::string name;
    std::vector<std::string> argument_fragments; ///< the arguments JSON, cut anywhere
};

struct stream_error {
    std::string type = "overloaded_error"; ///< Anthropic error type / OpenAI error type
    std::string message = "Overloaded";
};

/// What a streamed reply says; rendered in the shape of the protocol it is sent for.
struct reply_description {
    std::vector<std::string> text;     ///< text pieces, one delta each
    std::vector<std::string> thinking; ///< reasoning pieces (Anthropic thinking_delta; OpenAI-compatible reasoning_content)
    std::string signature = "c2lnbmF0dXJlLXRlc3Q="; ///< Anthropic signature_delta after thinking
    std::vector<tool_call> tool_calls;
    int input_tokens = 10;
    int output_tokens = 5;
    std::string model = "test-model";
    std::string stop_reason; ///< "" = derived (tool calls: tool_calls / tool_use; else stop / end_turn)
    bool ping = true;        ///< Anthropic: a ping event after message_start
    std::optional<stream_error> error; ///< sent after the content, instead of the end of the message
};

/// One scripted answer.
struct reply {
    protocol proto = protocol::any;   ///< openai / anthropic: only served on that route
    unsigned status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::optional<reply_description> stream; ///< rendered per request (include_usage) into the body
    std::function<bool(std::string&)> source; ///< a lazily produced body: fills the next piece, false at the end
    std::size_t piece_size = 0;        ///< write the body in pieces of this many bytes (0: one write)
    std::uint32_t random_pieces = 0;   ///< non-zero: pieces of 1..piece_size bytes, from this seed
    bool chunked = true;               ///< Transfer-Encoding: chunked; false: Content-Length
    std::chrono::milliseconds delay{0};        ///< pause before each piece after the first (slow stream)
    std::chrono::milliseconds header_delay{0}; ///< pause before the status line
    std::optional<std::size_t> cut_after;      ///< close the connection after this many body bytes
    std::optional<std::size_t> stall_after;    ///< stop sending after this many body bytes; keep the connection
    bool no_response = false;          ///< read the request and never answer
    bool close = false;                ///< Connection: close, then close
    bool drop_after = false;           ///< says keep-alive, then closes the idle connection anyway

    reply&& in_pieces(std::size_t n) && { piece_size = n; return std::move(*this); }
    reply&& in_random_pieces(std::size_t max, std::uint32_t seed) && {
        piece_size = max;
        random_pieces = seed ? seed : 1;
        return std::move(*this);
    }
    reply&& slow(std::chrono::milliseconds d) && { delay = d; return std::move(*this); }
    reply&& cut(std::size_t after) && { cut_after = after; return std::move(*this); }
    reply&& stall(std::size_t after) && { stall_after = after; return std::move(*this); }
    reply&& content_length() && { chunked = false; return std::move(*this); }
    reply&& closing() && { close = true; return std::move(*this); }
    reply&& dropping() && { drop_after = true; return std::move(*this); }
};

inline reply text_reply(std::string body, unsigned status = 200) {
    reply r;
    r.status = status;
    r.headers = {{"Content-Type", "text/plain"}};
    r.body = std::move(body);
    return r;
}

inline reply openai_stream(reply_description d) {
    reply r;
    r.proto = protocol::openai;
    r.headers = {{"Content-Type", "text/event-stream"}, {"x-request-id", "req_test"}};
    r.stream = std::move(d);
    return r;
}

inline reply anthropic_stream(reply_description d) {
    reply r;
    r.proto = protocol::anthropic;
    r.headers = {{"Content-Type", "text/event-stream; charset=utf-8"}, {"request-id", "req_test"}};
    r.stream = std::move(d);
    return r;
}

/// An OpenAI error body: {"error": {"message", "type", "param", "code"}}.
inline reply openai_error(unsigned status, std::string type, std::string code, std::string message) {
    reply r;
    r.proto = protocol::openai;
    r.status = status;
    r.headers = {{"Content-Type", "application/json"}};
    json::object err{{"message", message}, {"type", type}, {"param", nullptr}};
    err["code"] = code.empty() ? json::value(nullptr) : json::value(code);
    r.body = json::serialize(json::object{{"error", std::move(err)}});
    r.chunked = false;
    return r;
}

/// An Anthropic error body: {"type": "error", "error": {"type", "message"}}.
inline reply anthropic_error(unsigned status, std::string type, std::string message) {
    reply r;
    r.proto = protocol::anthropic;
    r.status = status;
    r.headers = {{"Content-Type", "application/json"}, {"request-id", "req_test"}};
    r.body = json::serialize(
        json::object{{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}});
    r.chunked = false;
    return r;
}

inline reply context_overflow(protocol p) {
    if (p == protocol::openai)
        return openai_error(400, "invalid_request_error", "context_length_exceeded",
                            "This model's maximum context length is 128000 tokens. However, your messages resulted "
                            "in 130412 tokens. Please reduce the length of the messages.");
    return anthropic_error(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum");
}

inline reply rate_limited(protocol p, int retry_after_seconds) {
    reply r = p == protocol::openai
                  ? openai_error(429, "requests", "rate_limit_exceeded",
                                 "Rate limit reached for requests. Please try again in 2s.")
                  : anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.");
    r.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
    return r;
}

/// 500 (both), 529 overloaded (Anthropic), 503 (OpenAI).
inline reply server_error(protocol p, unsigned status = 500) {
    if (p == protocol::openai)
        return openai_error(status, "server_error", "", "The server had an error while processing your request.");
    if (status == 529) return anthropic_error(529, "overloaded_error", "Overloaded");
    return anthropic_error(status, "api_error", "Internal server error");
}

inline reply unauthorized(protocol p) {
    if (p == protocol::openai)
        return openai_error(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test.");
    return anthropic_error(401, "authentication_error", "invalid x-api-key");
}

/// A request as the server received it.
struct recorded_request {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::size_t connection = 0; ///< which accepted connection carried it (1-based)

    std::string header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (std::equal(n.begin(), n.end(), name.begin(), name.end(),
                           [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); }))
                return v;
        return {};
    }
    json::value json() const { return json::parse(body); }
};

// ---- rendering ----------------------------------------------------------------------------

inline std::string sse(std::string_view event, const json::value& data) {
    std::string s;
    if (!event.empty()) s.append("event: ").append(event).append("\n");
    s.append("data: ").append(json::serialize(data)).append("\n\n");
    return s;
}

inline std::string render_openai(const reply_description& d, bool include_usage) {
    std::string out;
    auto chunk = [&](json::object delta, json::value finish) {
        json::object choice{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", std::move(finish)}};
        json::object c{{"id", "chatcmpl-test"}, {"object", "chat.completion.chunk"}, {"created", 1700000000},
                       {"model", d.model}, {"system_fingerprint", "fp_test"},
                       {"choices", json::array{std::move(choice)}}};
        if (include_usage) c["usage"] = nullptr;
        out += sse("", c);
    };
    chunk(json::object{{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}, nullptr);
    for (const auto& t : d.thinking) chunk(json::object{{"reasoning_content", t}}, nullptr);
    for (const auto& t : d.text) chunk(json::object{{"content", t}}, nullptr);
    for (std::size_t i = 0; i < d.tool_calls.size(); ++i) {
        const auto& tc = d.tool_calls[i];
        json::object first{{"index", i}, {"id", tc.id}, {"type", "function"},
                           {"function", json::object{{"name", tc.name}, {"arguments", ""}}}};
        chunk(json::object{{"tool_calls", json::array{std::move(first)}}}, nullptr);
        for (const auto& f : tc.argument_fragments)
            chunk(json::object{{"tool_calls", json::array{json::object{{"index", i}, {"function", json::object{{"arguments", f}}}}}}},
                  nullptr);
    }
    if (d.error) {
        out += sse("", json::object{{"error", json::object{{"message", d.error->message}, {"type", d.error->type},
                                                           {"param", nullptr}, {"code", nullptr}}}});
        return out;
    }
    std::string finish = d.stop_reason.empty() ? (d.tool_calls.empty() ? "stop" : "tool_calls") : d.stop_reason;
    chunk(json::object{}, json::value(finish));
    if (include_usage) {
        json::object c{{"id", "chatcmpl-test"}, {"object", "chat.completion.chunk"}, {"created", 1700000000},
                       {"model", d.model}, {"system_fingerprint", "fp_test"}, {"choices", json::array{}},
                       {"usage", json::object{{"prompt_tokens", d.input_tokens}, {"completion_tokens", d.output_tokens},
                                              {"total_tokens", d.input_tokens + d.output_tokens}}}};
        out += sse("", c);
    }
    out += "data: [DONE]\n\n";
    return out;
}

inline std::string render_anthropic(const reply_description& d) {
    std::string out;
    json::object start_usage{{"input_tokens", d.input_tokens}, {"output_tokens", 1}};
    out += sse("message_start",
               json::object{{"type", "message_start"},
                            {"message", json::object{{"id", "msg_test"}, {"type", "message"}, {"role", "assistant"},
                                                     {"content", json::array{}}, {"model", d.model},
                                                     {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                                                     {"usage", std::move(start_usage)}}}});
    if (d.ping) out += sse("ping", json::object{{"type", "ping"}});
    std::size_t index = 0;
    auto delta = [&](json::object dl) {
        out += sse("content_block_delta",
                   json::object{{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(dl)}});
    };
    auto block = [&](json::object content_block, auto&& body) {
        out += sse("content_block_start", json::object{{"type", "content_block_start"}, {"index", index},
                                                       {"content_block", std::move(content_block)}});
        body();
        out += sse("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", index}});
        ++index;
    };
    if (!d.thinking.empty())
        block(json::object{{"type", "thinking"}, {"thinking", ""}}, [&] {
            for (const auto& t : d.thinking) delta(json::object{{"type", "thinking_delta"}, {"thinking", t}});
            delta(json::object{{"type", "signature_delta"}, {"signature", d.signature}});
        });
    if (!d.text.empty())
        block(json::object{{"type", "text"}, {"text", ""}}, [&] {
            for (const auto& t : d.text) delta(json::object{{"type", "text_delta"}, {"text", t}});
        });
    for (const auto& tc : d.tool_calls)
        block(json::object{{"type", "tool_use"}, {"id", tc.id}, {"name", tc.name}, {"input", json::object{}}}, [&] {
            for (const auto& f : tc.argument_fragments) delta(json::object{{"type", "input_json_delta"}, {"partial_json", f}});
        });
    if (d.error) {
        out += sse("error", json::object{{"type", "error"},
                                         {"error", json::object{{"type", d.error->type}, {"message", d.error->message}}}});
        return out;
    }
    std::string stop = d.stop_reason.empty() ? (d.tool_calls.empty() ? "end_turn" : "tool_use") : d.stop_reason;
    out += sse("message_delta", json::object{{"type", "message_delta"},
                                             {"delta", json::object{{"stop_reason", stop}, {"stop_sequence", nullptr}}},
                                             {"usage", json::object{{"output_tokens", d.output_tokens}}}});
    out += sse("message_stop", json::object{{"type", "message_stop"}});
    return out;
}

// ---- the server ---------------------------------------------------------------------------

class server {
public:
    /// Listens on `address` ("::1" for IPv6 loopback) at a free port.
    explicit server(const char* address = "127.0.0.1")
        : acceptor_(ioc_, asio::ip::tcp::endpoint(asio::ip::make_address(address), 0)) {
        acceptor_.listen(asio::socket_base::max_listen_connections);
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { ioc_.run(); });
    }

    ~server() { stop(); }

    /// Stops the server thread (idempotent); pending sessions are dropped with the io_context.
    void stop() {
        ioc_.stop();
        if (thread_.joinable()) thread_.join();
    }

    server(const server&) = delete;
    server& operator=(const server&) = delete;

    unsigned short port() const { return acceptor_.local_endpoint().port(); }
    std::string base_url() const {
        const auto a = acceptor_.local_endpoint().address();
        const std::string host = a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
        return "http://" + host + ":" + std::to_string(port());
    }

    /// Appends a reply to the script (served in order, whatever the connection).
    void push(reply r) {
        std::lock_guard lock(mutex_);
        script_.push_back(std::move(r));
    }

    /// The reply used when the script is empty (otherwise: 500 "no scripted reply").
    void set_default(reply r) {
        std::lock_guard lock(mutex_);
        default_ = std::move(r);
    }

    std::vector<recorded_request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    std::size_t request_count() const {
        std::lock_guard lock(mutex_);
        return requests_.size();
    }
    std::size_t connections_accepted() const { return accepted_.load(); }
    /// Connections the server saw end (the client closed, or the server cut it).
    std::size_t connections_closed() const { return closed_.load(); }

    asio::io_context& context() { return ioc_; }

    /// Serves HTTP/1.1 requests on an accepted stream until it closes (used by the TLS tests
    /// with their own ssl stream, on this server's io_context).
    template <class Stream>
    asio::awaitable<void> serve(Stream& s, std::size_t connection) {
        beast::flat_buffer buf;
        for (;;) {
            beast::http::request<beast::http::string_body> req;
            boost::system::error_code ec;
            auto token = asio::redirect_error(asio::use_awaitable, ec);
            co_await beast::http::async_read(s, buf, req, token);
            if (ec) break;
            recorded_request rec{std::string(req.method_string()), std::string(req.target()), {}, req.body(), connection};
            for (const auto& f : req) rec.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
            const bool client_keep_alive = req.keep_alive();
            reply r = next_reply(rec);
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(rec);
            }
            if (r.no_response) {
                co_await wait_closed(s);
                break;
            }
            if (r.header_delay.count() > 0) co_await sleep(r.header_delay);
            const bool keep = client_keep_alive && !r.close;
            const bool alive = co_await write_reply(s, r, rec, keep);
            if (!alive || !keep) break;
            if (r.drop_after) {
                co_await sleep(std::chrono::milliseconds(20)); // let the client pool the connection first
                break;
            }
        }
        boost::system::error_code ignored;
        beast::get_lowest_layer(s).close(ignored);
    }

private:
    reply next_reply(const recorded_request& rec) {
        reply r;
        {
            std::lock_guard lock(mutex_);
            if (!script_.empty()) {
                r = std::move(script_.front());
                script_.erase(script_.begin());
            } else if (default_) {
                r = *default_;
            } else {
                return text_reply("llm_test::server: no scripted reply for " + rec.method + " " + rec.target, 500);
            }
        }
        const std::string_view want = r.proto == protocol::openai      ? "/v1/chat/completions"
                                      : r.proto == protocol::anthropic ? "/v1/messages"
                                                                       : "";
        if (!want.empty() && (rec.target != want || rec.method != "POST"))
            return text_reply("llm_test::server: the scripted reply is for POST " + std::string(want) + ", got " +
                                  rec.method + " " + rec.target,
                              404);
        if (r.stream) {
            if (r.proto == protocol::openai) {
                bool include_usage = false;
                boost::system::error_code ec;
                json::value v = json::parse(rec.body, ec);
                if (!ec && v.is_object())
                    if (auto* so = v.as_object().if_contains("stream_options"); so && so->is_object())
                        if (auto* iu = so->as_object().if_contains("include_usage"); iu && iu->is_bool())
                            include_usage = iu->as_bool();
                r.body = render_openai(*r.stream, include_usage);
            } else {
                r.body = render_anthropic(*r.stream);
            }
        }
        return r;
    }

    asio::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            auto token = asio::redirect_error(asio::use_awaitable, ec);
            asio::ip::tcp::socket sock = co_await acceptor_.async_accept(token);
            if (ec) {
                if (ec == asio::error::operation_aborted) co_return;
                continue; // e.g. too many open files: keep serving the others
            }
            sock.set_option(asio::ip::tcp::no_delay(true), ec);
            const std::size_t id = ++accepted_;
            asio::co_spawn(ioc_, session(std::move(sock), id), asio::detached);
        }
    }

    asio::awaitable<void> session(asio::ip::tcp::socket sock, std::size_t id) {
        co_await serve(sock, id);
        ++closed_;
    }

    asio::awaitable<void> sleep(std::chrono::milliseconds d) {
        asio::steady_timer t(ioc_, d);
        boost::system::error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        co_await t.async_wait(token);
    }

    // Stalls until the client closes the connection (or the server stops).
    template <class Stream>
    asio::awaitable<void> wait_closed(Stream& s) {
        char byte[256];
        for (;;) {
            boost::system::error_code ec;
            auto token = asio::redirect_error(asio::use_awaitable, ec);
            co_await s.async_read_some(asio::buffer(byte), token);
            if (ec) co_return;
        }
    }

    template <class Stream>
    asio::awaitable<bool> write_all(Stream& s, std::string_view data) {
        boost::system::error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        co_await asio::async_write(s, asio::buffer(data.data(), data.size()), token);
        co_return !ec;
    }

    // Returns false when the connection is gone (cut, or the client went away).
    template <class Stream>
    asio::awaitable<bool> write_reply(Stream& s, reply& r, const recorded_request&, bool keep) {
        std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " +
                           std::string(beast::http::obsolete_reason(beast::http::int_to_status(r.status))) + "\r\n";
        if (head.ends_with(" \r\n")) head.insert(head.size() - 2, "Status");
        for (const auto& [n, v] : r.headers) head += n + ": " + v + "\r\n";
        const bool chunked = r.chunked || static_cast<bool>(r.source);
        if (chunked) head += "Transfer-Encoding: chunked\r\n";
        else head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
        head += keep ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
        if (!co_await write_all(s, head)) co_return false;

        std::uint32_t rng = r.random_pieces;
        auto next_size = [&](std::size_t left) -> std::size_t {
            std::size_t n = r.piece_size == 0 ? left : r.piece_size;
            if (r.random_pieces) {
                rng = rng * 1664525u + 1013904223u;
                n = 1 + (rng >> 8) % r.piece_size;
            }
            return std::min(n, left);
        };
        std::size_t sent = 0; // body bytes so far
        bool first = true;
        std::string piece, frame;
        std::size_t body_off = 0;
        for (;;) {
            // The next piece of the body.
            if (r.source) {
                piece.clear();
                if (!r.source(piece)) break;
            } else {
                if (body_off == r.body.size()) break;
                const std::size_t n = next_size(r.body.size() - body_off);
                piece.assign(r.body, body_off, n);
                body_off += n;
            }
            if (piece.empty()) continue;
            if (!first && r.delay.count() > 0) co_await sleep(r.delay);
            first = false;
            std::string_view p = piece;
            const std::optional<std::size_t> limit = r.cut_after ? r.cut_after : r.stall_after;
            const bool stops_here = limit && sent + p.size() >= *limit;
            if (stops_here) p = p.substr(0, *limit - sent);
            frame.clear();
            if (chunked && !p.empty()) {
                char hex[20];
                std::snprintf(hex, sizeof hex, "%zx\r\n", p.size());
                frame.append(hex).append(p).append("\r\n");
            } else {
                frame.assign(p);
            }
            if (stops_here && r.cut_after && chunked && frame.size() >= 2) frame.resize(frame.size() - 2); // inside the chunk
            if (!frame.empty() && !co_await write_all(s, frame)) co_return false;
            sent += p.size();
            if (stops_here) {
                if (r.cut_after) {
                    boost::system::error_code ignored;
                    beast::get_lowest_layer(s).close(ignored);
                    co_return false;
                }
                co_await wait_closed(s);
                co_return false;
            }
        }
        if (chunked && !co_await write_all(s, "0\r\n\r\n")) co_return false;
        co_return true;
    }

    asio::io_context ioc_;
    asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::vector<reply> script_;
    std::optional<reply> default_;
    std::vector<recorded_request> requests_;
    std::atomic<std::size_t> accepted_{0};
    std::atomic<std::size_t> closed_{0};
};

} // namespace llm_test

#endif
