// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_ANTHROPIC_MODEL_HPP
#define LIBRETTO_PROVIDER_ANTHROPIC_MODEL_HPP

// A model (see model/model.hpp) for the Anthropic Messages API (and servers that speak it):
//
//   lh::https_transport http{ex};                                    // <libretto/http/openssl_tls.hpp>
//   lb::anthropic_model model{http, lb::anthropic_options::from_environment({.model = "claude-sonnet-4-5"})};
//   lb::llm_stream s = model.generate(std::move(request));
//
// Any http_transport works (beast_transport<> for a local http:// server, fake_transport in
// tests). Copies share the transport's connection pool. Failures arrive as the final
// response's `error` (classified by provider_error.hpp); transient ones are retried by the
// retry policy while nothing has been delivered to the caller.

#include <libretto/detail/config.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/http/transport.hpp>
#include <libretto/model/model.hpp>
#include <libretto/provider/detail/http_generation.hpp>
#include <libretto/provider/provider_http_options.hpp>
#include <libretto/provider/anthropic_protocol.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace libretto {

namespace detail {
/// The generation of every anthropic_model (impl/anthropic_model.ipp).
template <>
LIBRETTO_DECL llm_stream provider_generate<anthropic_options>(const http::any_transport& transport, const anthropic_options& options,
                                           const provider_http_options& http, llm_request request);
} // namespace detail

/// `Transport` is any http_transport; the model holds it as an http::any_transport, so every
/// anthropic_model<T> shares one compiled generation.
template <class Transport = http::any_transport>
    requires http::http_transport<Transport>
class anthropic_model : public detail::http_model<anthropic_options> {
public:
    /// Throws system_error(errc::invalid_argument) for retry options check() refuses.
    anthropic_model(Transport transport, anthropic_options options, provider_http_options http = {})
        : detail::http_model<anthropic_options>(http::any_transport(std::move(transport)), std::move(options), http) {
        require_valid(http_options().retry, "anthropic_model: provider_http_options::retry");
    }
};

static_assert(model<anthropic_model<>>);

} // namespace libretto

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/provider/impl/anthropic_model.ipp>
#endif

#endif
