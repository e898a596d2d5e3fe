// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_TRANSPORT_HPP
#define LIBRETTO_HTTP_TRANSPORT_HPP

// The HTTP transport concept: what a provider model needs to send one request and read the
// reply incrementally. For a transport `t` (an lvalue T), a const one `ct`, a request `r`,
// a response `res` (an lvalue T::response_type), a const one `cres`, a buffer `b`
// (asio::mutable_buffer) and a header name `n`:
//
//   t.async_request(std::move(r), token)  void(error_code, T::response_type): connects (or
//                                          reuses a kept-alive connection), sends, reads the
//                                          status line and headers; the body is not read yet
//   ct.get_executor()                      convertible to asio::any_io_executor
//   cres.status()                          the HTTP status code (unsigned)
//   cres.header(n)                         the first value of header n (case-insensitive), or ""
//   cres.done()                            true once the whole body was read
//   res.async_read_some(b, token)          void(error_code, std::size_t): copies the next body
//                                          bytes into b; 0 bytes without error = end of body
//
// plus copy construction of T (copies share the connection pool) and move construction of
// the response. Non-2xx statuses are responses, not errors; errors are transport failures
// (see http/error.hpp). A response must stay at one address while an operation on it runs.

#include <libretto/detail/token_archetype.hpp>
#include <libretto/error.hpp>
#include <libretto/http/header.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::http {

/// One request. The URL is absolute: `http://host[:port]/path?query` or `https://...`.
struct http_request {
    std::string method = "POST";
    std::string url;
    std::vector<http_header> headers; ///< sent as given (Host, Content-Length are added)
    std::string body;
};

template <class R>
concept http_response =
    std::move_constructible<R> && requires(R& res, const R& cres, boost::asio::mutable_buffer b, std::string_view n,
                                           libretto::detail::token_archetype tok) {
        { cres.status() } -> std::convertible_to<unsigned>;
        { cres.header(n) } -> std::convertible_to<std::string_view>;
        { cres.done() } -> std::convertible_to<bool>;
        {
            res.async_read_some(b, tok)
        } -> std::same_as<libretto::detail::archetype_result<void(boost::system::error_code, std::size_t)>>;
    };

template <class T>
concept http_transport = std::copy_constructible<T> && http_response<typename T::response_type> &&
                         requires(T& t, const T& ct, http_request r, libretto::detail::token_archetype tok) {
                             {
                                 t.async_request(std::move(r), tok)
                             } -> std::same_as<libretto::detail::archetype_result<
                                 void(boost::system::error_code, typename T::response_type)>>;
                             { ct.get_executor() } -> std::convertible_to<boost::asio::any_io_executor>;
                         };

/// Reads the rest of a response body into a string (error bodies, small JSON replies).
/// A body longer than `limit` bytes is errc::oversize (what was read is kept).
template <class Response>
    requires http_response<Response>
boost::asio::awaitable<std::pair<boost::system::error_code, std::string>> read_body(Response& res,
                                                                                    std::size_t limit = 1 << 20) {
    std::pair<boost::system::error_code, std::string> out;
    char buf[4096];
    for (;;) {
        boost::system::error_code ec;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
        const std::size_t n = co_await res.async_read_some(boost::asio::buffer(buf), token);
        if (ec) {
            out.first = ec;
            break;
        }
        if (n == 0) break;
        if (out.second.size() + n > limit) {
            out.first = make_error_code(errc::oversize);
            break;
        }
        out.second.append(buf, n);
    }
    co_return out;
}

} // namespace libretto::http

#endif
