// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SRC_OPENSSL_HPP
#define LIBRETTO_SRC_OPENSSL_HPP

// The separately compiled definitions that need OpenSSL (link libretto::openssl): include it
// in one source file next to <libretto/src.hpp> (see there).

#ifndef LIBRETTO_SEPARATE_COMPILATION
#error "<libretto/src_openssl.hpp> needs LIBRETTO_SEPARATE_COMPILATION defined (in every file of the program)"
#endif

#include <libretto/http/impl/https_transport.ipp>

#endif
