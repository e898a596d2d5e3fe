// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_TLS_OPTIONS_HPP
#define LIBRETTO_HTTP_TLS_OPTIONS_HPP

// How https_transport (and beast_transport<openssl_tls>) verifies servers.

#include <string>

namespace libretto::http {

struct tls_options {
    bool verify_peer = true; ///< false accepts any certificate: for tests against throw-away servers only
    std::string ca_file;     ///< a PEM bundle of trusted CAs; with ca_path empty too: the system store
    std::string ca_path;     ///< a directory of hashed CA certificates (c_rehash)
};

} // namespace libretto::http

#endif
