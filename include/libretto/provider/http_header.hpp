// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_HTTP_HEADER_HPP
#define LIBRETTO_PROVIDER_HTTP_HEADER_HPP

// The header type the provider codecs hand to a transport: libretto::http_header, the
// same type http::http_request carries (kept under this name for existing includes).

#include <libretto/http/header.hpp>

#endif
