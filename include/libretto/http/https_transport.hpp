// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_HTTPS_TRANSPORT_HPP
#define LIBRETTO_HTTP_HTTPS_TRANSPORT_HPP

// The transport for the real APIs: http:// and https:// URLs, TLS through OpenSSL (link
// libretto::openssl), connections kept alive and reused (beast_transport<openssl_tls>).
//
//   libretto::http::https_transport t{ex};                                   // system CA store
//   libretto::http::https_transport t{ex, {}, {.ca_file = "/etc/my-ca.pem"}}; // a private CA
//
// It is an any_transport (its response is an any_response) whose functions are compiled
// once: in every file that includes this header, or, with LIBRETTO_SEPARATE_COMPILATION,
// only in <libretto/src_openssl.hpp> (docs/building.md, "Separate compilation"). This
// header does not include Beast or OpenSSL.

#include <libretto/detail/config.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/http/beast_transport_options.hpp>
#include <libretto/http/tls_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>

namespace libretto::http {

class https_transport : public any_transport {
public:
    using response = any_response;

    /// Throws system_error (errc::invalid_argument) for a negative timeout or max_idle_time,
    /// naming it, and when the TLS options are unusable (a CA file that cannot be loaded).
    LIBRETTO_DECL explicit https_transport(boost::asio::any_io_executor ex, beast_transport_options options = {},
                                           const tls_options& tls = {});

    /// Not on a moved-from transport (it has no options); its requests fail with
    /// asio::error::not_connected, as any_transport's.
    LIBRETTO_DECL const beast_transport_options& options() const noexcept;

    /// Connections opened so far (by this transport and its copies); 0 when moved from.
    LIBRETTO_DECL std::size_t connections_opened() const;

    /// Idle kept-alive connections in the pool now; 0 when moved from.
    LIBRETTO_DECL std::size_t idle_connections() const;
};

static_assert(http_transport<https_transport>);

} // namespace libretto::http

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/http/impl/https_transport.ipp>
#endif

#endif
