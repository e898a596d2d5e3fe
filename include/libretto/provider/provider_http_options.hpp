// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_PROVIDER_HTTP_OPTIONS_HPP
#define LIBRETTO_PROVIDER_PROVIDER_HTTP_OPTIONS_HPP

// provider_http_options: how openai_model and anthropic_model use their transport
// (docs/provider_models.md). The transport's own limits (timeouts, pool) are its options.

#include <libretto/model/retry.hpp>

#include <cstddef>

namespace libretto {

/// How a provider model uses HTTP (the transport's own limits are the transport's options).
struct provider_http_options {
    retry_options retry{};                        ///< retries of transient failures before any chunk was delivered
    std::size_t max_error_body = 64 * 1024;       ///< the part of an error body read for classification
    std::size_t read_buffer = 16 * 1024;          ///< body bytes read at a time
    std::size_t max_event_size = 8 * 1024 * 1024; ///< the largest SSE event, or whole JSON reply, accepted (errc::bad_response past it)
    /// The most bytes of one streamed reply, its events together (errc::bad_response past
    /// it): a server that never ends its stream cannot grow the answer without bound.
    std::size_t max_stream_bytes = 64 * 1024 * 1024;
};

} // namespace libretto

#endif
