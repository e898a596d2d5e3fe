// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_ERROR_HPP
#define LIBRETTO_HTTP_ERROR_HPP

// The transport's own failures. They name which limit fired, and compare equal to the
// generic conditions libretto::is_transient() looks for (timed_out, connection_aborted),
// so a model's retry policy treats them as temporary without knowing this category.

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/error_condition.hpp>
#include <boost/system/errc.hpp>

#include <string>
#include <type_traits>

namespace libretto::http {

enum class http_errc {
    connect_timeout = 1, ///< TCP connect (and TLS handshake) took longer than timeouts.connect
    first_byte_timeout,  ///< the response headers did not arrive within timeouts.first_byte
    idle_timeout,        ///< no body bytes for timeouts.idle
    total_timeout,       ///< the whole exchange took longer than timeouts.total
    truncated,           ///< the connection closed before the end of the response body
    tls_required,        ///< an https:// URL on a transport built without TLS (no OpenSSL)
};

namespace detail {

class http_category_impl final : public boost::system::error_category {
public:
    http_category_impl() noexcept : boost::system::error_category(0x6c6962682d687474ULL) {}

    const char* name() const noexcept override { return "libretto.http"; }

    std::string message(int ev) const override { return message(ev, nullptr, 0); }

    const char* message(int ev, char*, std::size_t) const noexcept override {
        switch (static_cast<http_errc>(ev)) {
        case http_errc::connect_timeout: return "HTTP connect timeout";
        case http_errc::first_byte_timeout: return "HTTP timeout waiting for the response headers";
        case http_errc::idle_timeout: return "HTTP timeout: the response body stalled";
        case http_errc::total_timeout: return "HTTP timeout: the whole exchange took too long";
        case http_errc::truncated: return "HTTP connection closed before the end of the response body";
        case http_errc::tls_required:
            return "https:// needs a TLS transport: beast_transport<openssl_tls> from <libretto/http/openssl_tls.hpp>";
        }
        return "unknown libretto.http error";
    }

    boost::system::error_condition default_error_condition(int ev) const noexcept override {
        namespace se = boost::system::errc;
        switch (static_cast<http_errc>(ev)) {
        case http_errc::connect_timeout:
        case http_errc::first_byte_timeout:
        case http_errc::idle_timeout:
        case http_errc::total_timeout: return se::make_error_condition(se::timed_out);
        case http_errc::truncated: return se::make_error_condition(se::connection_aborted);
        case http_errc::tls_required: return se::make_error_condition(se::protocol_not_supported);
        }
        return {ev, *this};
    }
};

} // namespace detail

inline const boost::system::error_category& http_category() noexcept {
    static const detail::http_category_impl cat;
    return cat;
}

inline boost::system::error_code make_error_code(http_errc e) noexcept {
    return {static_cast<int>(e), http_category()};
}

/// Writes the code's message, for logs and test diagnostics.
template <class Ostream>
    requires requires(Ostream& os, const char* s) { os << s; }
Ostream& operator<<(Ostream& os, http_errc e) {
    os << http_category().message(static_cast<int>(e), nullptr, 0);
    return os;
}

} // namespace libretto::http

template <>
struct boost::system::is_error_code_enum<libretto::http::http_errc> : std::true_type {};

#endif
