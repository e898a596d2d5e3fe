// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_HTTP_ATTEMPT_HPP
#define LIBRETTO_PROVIDER_DETAIL_HTTP_ATTEMPT_HPP

// One generation over an any_transport: the codecs' decoder on the SSE events and the retry
// policy around whole attempts. Included by the provider models' impl/*.ipp only.

#include <libretto/error.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/http/error.hpp>
#include <libretto/http/header.hpp>
#include <libretto/http/sse_parser.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/model/model.hpp>
#include <libretto/model/retry.hpp>
#include <libretto/provider/detail/http_generation.hpp>
#include <libretto/provider/detail/reply_sniffer.hpp>
#include <libretto/provider/provider_error.hpp>
#include <libretto/provider/provider_http_options.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::detail {

/// Why the transport refused `request` when it says invalid_argument: a header it would not
/// send names the header (never its value, often a key); otherwise the code's message.
inline std::string refused_request_reason(const http::http_request& request, boost::system::error_code ec) {
    if (ec == errc::invalid_argument)
        for (const auto& h : request.headers) {
            const header_fault f = header_problem(h);
            if (f == header_fault::bad_name) return "'" + h.name.substr(0, 64) + "' is not a header name; nothing was sent";
            if (f == header_fault::line_break_in_value)
                return "the value of the header '" + h.name +
                       "' holds a line break (a key read from a file with its newline?); nothing was sent";
        }
    return ec.message();
}

/// One attempt. Emits deltas as they decode (and sets `delivered` at the first with content);
/// returns the final response. Throws only for cancellation.
template <class Decoder>
boost::asio::awaitable<llm_response> http_attempt(http::any_transport& transport, const http::http_request& request,
                                                  const provider_http_options& opts, const llm_writer& out,
                                                  bool& delivered) {
    http::http_request req = request;
    boost::system::error_code ec;
    auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
    auto res = co_await transport.async_request(std::move(req), token);
    if (ec == boost::asio::error::operation_aborted) throw_cancelled();
    if (ec) co_return llm_response::failure(ec, "HTTP request to " + request.url + " failed: " + refused_request_reason(request, ec));

    if (res.status() < 200 || res.status() >= 300) {
        auto [body_ec, body] = co_await http::read_body(res, opts.max_error_body);
        if (body_ec == boost::asio::error::operation_aborted) throw_cancelled();
        // A partial error body still classifies by status; the body is what we have.
        provider_error e = classify_http_error(static_cast<int>(res.status()), body, res.header("retry-after"),
                                               res.header("retry-after-ms"));
        co_return e.to_response();
    }

    Decoder decoder;
    http::sse_parser sse(http::sse_parser_options{.max_event_size = opts.max_event_size, .error_field = true});
    std::vector<char> buf(opts.read_buffer ? opts.read_buffer : 16 * 1024);
    std::vector<llm_chunk> pending;
    // The reply's form is read from its first bytes, whatever was asked and whatever the
    // content-type says: servers ignore `stream`, and some label either form wrongly.
    reply_sniffer sniff;
    std::string whole; // a whole JSON body, as it arrives
    std::size_t streamed = 0;
    auto feed_sse = [&](std::string_view bytes) {
        streamed += bytes.size();
        if (streamed > opts.max_stream_bytes) {
            if (!decoder.done())
                decoder.fail(make_error_code(errc::bad_response),
                             "the streamed reply exceeds max_stream_bytes (" + std::to_string(opts.max_stream_bytes) + " bytes)");
            return;
        }
        const auto pec = sse.feed(bytes, [&](const http::sse_event& e) {
            if (decoder.done()) return;
            llm_chunk c = decoder.feed(e.event, e.data);
            if (!c.empty()) pending.push_back(std::move(c));
        });
        if (pec)
            decoder.fail(make_error_code(errc::bad_response),
                         "an SSE event exceeds max_event_size (" + std::to_string(opts.max_event_size) + " bytes)");
    };
    for (;;) {
        boost::system::error_code rec;
        auto rtoken = boost::asio::redirect_error(boost::asio::use_awaitable, rec);
        const std::size_t n = co_await res.async_read_some(boost::asio::buffer(buf), rtoken);
        if (rec == boost::asio::error::operation_aborted) throw_cancelled();
        if (rec) {
            if (sniff.form() == reply_kind::whole)
                co_return llm_response::failure(rec, "the response body failed after " + std::to_string(whole.size()) +
                                                         " bytes: " + rec.message());
            decoder.fail(rec, "the response stream failed after " + std::to_string(decoder.events()) +
                                  " events: " + rec.message());
            break;
        }
        const std::string_view bytes(buf.data(), n);
        if (sniff.form() == reply_kind::unknown) {
            sniff.add(bytes, n == 0);
            if (sniff.form() == reply_kind::unknown) {
                if (!sniff.failed()) continue;
                // Neither form: read a little more of it for the message, then give up.
                while (n != 0 && !sniff.enough_kept()) {
                    boost::system::error_code kec;
                    auto ktoken = boost::asio::redirect_error(boost::asio::use_awaitable, kec);
                    const std::size_t m = co_await res.async_read_some(boost::asio::buffer(buf), ktoken);
                    if (kec == boost::asio::error::operation_aborted) throw_cancelled();
                    if (kec || m == 0) break;
                    sniff.keep(std::string_view(buf.data(), m));
                }
                co_return llm_response::failure(make_error_code(errc::bad_response),
                                                sniff.problem(res.header("content-type")));
            }
            std::string head = sniff.take(); // the bytes read so far
            if (sniff.form() == reply_kind::whole) whole = std::move(head);
            else feed_sse(head);
        } else if (n != 0) {
            if (sniff.form() == reply_kind::streamed) {
                feed_sse(bytes);
            } else if (whole.size() + n > opts.max_event_size) {
                co_return llm_response::failure(make_error_code(errc::bad_response),
                                                "the JSON reply exceeds max_event_size (" +
                                                    std::to_string(opts.max_event_size) + " bytes)");
            } else {
                whole.append(bytes);
            }
        }
        if (sniff.form() == reply_kind::whole) {
            if (n != 0) continue;
            llm_response r = Decoder::decode_body(whole); // the body is complete
            r.reply = reply_kind::whole;
            co_return r;
        }
        if (n == 0) {
            if (!sse.idle() && !decoder.done())
                decoder.fail(make_error_code(http::http_errc::truncated),
                             "the response body ended inside an SSE event: the answer is incomplete");
            break; // finish() reports a stream that ended before its end marker
        }
        for (auto& c : pending) {
            // Usage, model and finish chunks repeat harmlessly on a retry (the latest wins);
            // content does not.
            if (c.has_content())
                delivered = true;
            co_await out.emit(std::move(c));
        }
        pending.clear();
        if (decoder.done()) {
            // Read what is left (the chunked terminator) so the connection can be reused.
            std::size_t drained = 0;
            while (!res.done() && drained < opts.max_error_body) {
                boost::system::error_code dec;
                auto dtoken = boost::asio::redirect_error(boost::asio::use_awaitable, dec);
                const std::size_t m = co_await res.async_read_some(boost::asio::buffer(buf), dtoken);
                if (dec == boost::asio::error::operation_aborted) throw_cancelled();
                if (dec || m == 0) break;
                drained += m;
            }
            break;
        }
    }
    for (auto& c : pending) { // what the last read decoded (the body's end, a failure)
        if (c.has_content()) delivered = true;
        co_await out.emit(std::move(c));
    }
    llm_response r = decoder.finish();
    r.reply = reply_kind::streamed;
    co_return r;
}

/// The producer of a provider model's llm_stream: attempts with retries, then the final chunk.
template <class Decoder>
boost::asio::awaitable<void> http_generation(http::any_transport transport, http::http_request request,
                                             provider_http_options opts, llm_writer out) {
    retry_schedule schedule(opts.retry);
    std::minstd_rand rng(static_cast<std::minstd_rand::result_type>(
        std::chrono::steady_clock::now().time_since_epoch().count()));
    for (;;) {
        bool delivered = false;
        llm_response r = co_await http_attempt<Decoder>(transport, request, opts, out, delivered);
        // Retry only what failed before the caller saw anything: a retried answer must not
        // repeat or contradict deltas already shown.
        const auto pause = r.ok() || delivered || !is_transient(r.error)
                               ? std::optional<std::chrono::milliseconds>()
                               : schedule.next(r.retry_after, rng);
        if (!pause) {
            llm_chunk last = llm_chunk::last(std::move(r));
            co_await out.emit(std::move(last));
            co_return;
        }
        boost::asio::steady_timer timer(out.get_executor(), *pause);
        boost::system::error_code tec;
        auto ttoken = boost::asio::redirect_error(boost::asio::use_awaitable, tec);
        co_await timer.async_wait(ttoken);
        if (tec == boost::asio::error::operation_aborted) throw_cancelled();
    }
}

/// A provider model's generate(): encodes the request with the protocol's free functions for
/// `Options` (encode_request, request_target, request_headers, found by ADL) and streams the
/// reply through `Decoder`.
template <class Decoder, class Options>
llm_stream generate_over_http(const http::any_transport& transport, const Options& o,
                              const provider_http_options& http, llm_request request) {
    http::http_request req;
    try {
        req.body = encode_request(request, o);
    } catch (const boost::system::system_error& e) {
        return failed_stream(transport.get_executor(), llm_response::failure(e.code(), e.what()));
    }
    req.url = url_origin(o.base_url) + request_target(o);
    req.headers = request_headers(o);
    return llm_stream(transport.get_executor(), [t = transport, req = std::move(req),
                                                 http](llm_writer out) mutable -> boost::asio::awaitable<void> {
        return http_generation<Decoder>(std::move(t), std::move(req), http, std::move(out));
    });
}

} // namespace libretto::detail

#endif
