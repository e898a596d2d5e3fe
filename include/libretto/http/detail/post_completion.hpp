// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_DETAIL_POST_COMPLETION_HPP
#define LIBRETTO_HTTP_DETAIL_POST_COMPLETION_HPP

// The transports' name for libretto::detail::post_completion (the stores use it too, and may
// not include the http layer).

#include <libretto/detail/post_completion.hpp>

namespace libretto::http::detail {
using ::libretto::detail::post_completion;
} // namespace libretto::http::detail

#endif
