// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_OPENAI_MODEL_HPP
#define LIBRETTO_PROVIDER_OPENAI_MODEL_HPP

// A model (see model/model.hpp) for OpenAI Chat Completions and compatible servers:
//
//   lh::https_transport http{ex};                                    // <libretto/http/openssl_tls.hpp>
//   lb::openai_model model{http, lb::openai_options::from_environment({.model = "gpt-4o-mini"})};
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
#include <libretto/provider/openai_protocol.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace libretto {

namespace detail {
/// The generation of every openai_model (impl/openai_model.ipp).
template <>
LIBRETTO_DECL llm_stream provider_generate<openai_options>(const http::any_transport& transport, const openai_options& options,
                                           const provider_http_options& http, llm_request request);
} // namespace detail

/// `Transport` is any http_transport; the model holds it as an http::any_transport, so every
/// openai_model<T> shares one compiled generation.
template <class Transport = http::any_transport>
    requires http::http_transport<Transport>
class openai_model : public detail::http_model<openai_options> {
public:
    /// Throws system_error(errc::invalid_argument) for retry options check() refuses.
    openai_model(Transport transport, openai_options options, provider_http_options http = {})
        : detail::http_model<openai_options>(http::any_transport(std::move(transport)), std::move(options), http) {
        require_valid(http_options().retry, "openai_model: provider_http_options::retry");
    }
};

static_assert(model<openai_model<>>);

} // namespace libretto

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/provider/impl/openai_model.ipp>
#endif

#endif
