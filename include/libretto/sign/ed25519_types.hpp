// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_ED25519_TYPES_HPP
#define LIBRETTO_SIGN_ED25519_TYPES_HPP

// The raw Ed25519 values both back ends (OpenSSL, libsodium) take and give.

#include <array>
#include <cstdint>

namespace libretto {

/// A raw Ed25519 signature.
using ed25519_signature = std::array<std::uint8_t, 64>;
/// A raw Ed25519 private key seed (RFC 8032's 32-byte private key).
using ed25519_seed = std::array<std::uint8_t, 32>;

} // namespace libretto

#endif
