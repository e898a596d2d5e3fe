// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_IMPL_HTTPS_TRANSPORT_IPP
#define LIBRETTO_HTTP_IMPL_HTTPS_TRANSPORT_IPP

#include <libretto/http/beast_transport.hpp>
#include <libretto/http/https_transport.hpp>
#include <libretto/http/openssl_tls.hpp>

#include <memory>
#include <utility>

namespace libretto::http {

LIBRETTO_DECL https_transport::https_transport(boost::asio::any_io_executor ex, beast_transport_options options,
                                               const tls_options& tls)
    : any_transport(std::make_shared<model<beast_transport<openssl_tls>>>(
          beast_transport<openssl_tls>(std::move(ex), std::move(options), tls))) {}

LIBRETTO_DECL const beast_transport_options& https_transport::options() const noexcept {
    return static_cast<const model<beast_transport<openssl_tls>>&>(impl()).transport.options();
}

LIBRETTO_DECL std::size_t https_transport::connections_opened() const {
    if (!*this) return 0; // moved from
    return static_cast<const model<beast_transport<openssl_tls>>&>(impl()).transport.connections_opened();
}

LIBRETTO_DECL std::size_t https_transport::idle_connections() const {
    if (!*this) return 0; // moved from
    return static_cast<const model<beast_transport<openssl_tls>>&>(impl()).transport.idle_connections();
}

} // namespace libretto::http

#endif
