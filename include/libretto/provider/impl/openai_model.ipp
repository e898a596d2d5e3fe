// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_IMPL_OPENAI_MODEL_IPP
#define LIBRETTO_PROVIDER_IMPL_OPENAI_MODEL_IPP

#include <libretto/provider/detail/http_attempt.hpp>
#include <libretto/provider/openai_model.hpp>

#include <utility>

namespace libretto::detail {

template <>
LIBRETTO_DECL llm_stream provider_generate<openai_options>(const http::any_transport& transport, const openai_options& options,
                                           const provider_http_options& http, llm_request request) {
    return generate_over_http<openai_stream_decoder>(transport, options, http, std::move(request));
}

} // namespace libretto::detail

#endif
