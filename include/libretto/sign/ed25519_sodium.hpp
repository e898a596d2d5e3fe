// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_ED25519_SODIUM_HPP
#define LIBRETTO_SIGN_ED25519_SODIUM_HPP

// Ed25519 (RFC 8032) on libsodium: the fast back end. Needs the libretto::sodium component
// (libsodium, found through pkg-config). docs/signing.md, "Back ends".
//
//   auto key = lb::sodium_ed25519_key::generate();         // or from_seed, load_seed_file
//   lb::sodium_ed25519_signer signer{key};                 // models `signer`
//   lb::runner runner{agent, store, lb::no_compaction{}, signer};
//   lb::sodium_ed25519_verifier v;                         // models `verifier`
//   auto report = lb::verify_transcript(session, v);
//
// Ed25519 signatures are deterministic, so a key signs every payload with exactly the bytes
// the OpenSSL back end (ed25519_openssl.hpp) produces: either back end verifies the other's
// transcripts, and a key moves between them as its 32-byte seed (ed25519_key::seed(),
// sodium_ed25519_key::from_seed). libsodium signs and verifies about twice as fast as OpenSSL
// 3.0's EVP interface (docs/benchmarks.md: sign_events_s, verify_events_s).

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/sign/detail/basic_ed25519_signer.hpp>
#include <libretto/sign/detail/ed25519_common.hpp>
#include <libretto/sign/did_key.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/signer.hpp>
#include <libretto/sign/verifier.hpp>

#include <sodium.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace libretto {

namespace detail {

/// sodium_init() once per process (it is thread-safe and idempotent, but not free).
inline void sodium_ready() {
    static const int status = ::sodium_init();
    if (status < 0) ed25519_fail(errc::io_error, "libsodium could not be initialised (sodium_init failed)");
}

/// libsodium's 64-byte secret key (seed ‖ public key), wiped when freed.
struct sodium_secret {
    std::array<unsigned char, crypto_sign_SECRETKEYBYTES> sk{};
    ~sodium_secret() { ::sodium_memzero(sk.data(), sk.size()); }
};

} // namespace detail

/// An Ed25519 private key held by libsodium. Cheap to copy (the secret is shared, and wiped
/// when the last copy goes).
class sodium_ed25519_key {
public:
    /// A new key from libsodium's CSPRNG.
    static sodium_ed25519_key generate() {
        detail::sodium_ready();
        auto secret = std::make_shared<detail::sodium_secret>();
        std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> pk;
        if (::crypto_sign_keypair(pk.data(), secret->sk.data()) != 0)
            detail::ed25519_fail(errc::io_error, "libsodium key generation failed");
        return sodium_ed25519_key(std::move(secret));
    }

    /// The key whose RFC 8032 private key is `seed` (the same key as ed25519_key::from_seed).
    static sodium_ed25519_key from_seed(const ed25519_seed& seed) {
        detail::sodium_ready();
        auto secret = std::make_shared<detail::sodium_secret>();
        std::array<unsigned char, crypto_sign_PUBLICKEYBYTES> pk;
        if (::crypto_sign_seed_keypair(pk.data(), secret->sk.data(), seed.data()) != 0)
            detail::ed25519_fail(errc::io_error, "libsodium could not derive a key from the seed");
        return sodium_ed25519_key(std::move(secret));
    }

    /// from_seed of a span; errc::invalid_argument unless it holds exactly 32 bytes.
    static sodium_ed25519_key from_seed(std::span<const std::uint8_t> seed) {
        if (seed.size() != 32)
            detail::ed25519_fail(errc::invalid_argument, "a seed is 32 bytes, got " + std::to_string(seed.size()));
        ed25519_seed s;
        std::copy(seed.begin(), seed.end(), s.begin());
        return from_seed(s);
    }

    /// The key of a file holding exactly the 32 raw seed bytes.
    static sodium_ed25519_key load_seed_file(const std::filesystem::path& path) {
        return from_seed(detail::read_seed_file(path));
    }

    /// Writes the 32 seed bytes to `path` (0600).
    void save_seed_file(const std::filesystem::path& path) const {
        detail::write_private_file(path, std::string_view(reinterpret_cast<const char*>(secret_->sk.data()), 32));
    }

    ed25519_seed seed() const {
        ed25519_seed s;
        std::copy_n(secret_->sk.begin(), 32, s.begin());
        return s;
    }

    ed25519_public_key public_key() const {
        ed25519_public_key p;
        std::copy_n(secret_->sk.begin() + 32, 32, p.begin());
        return p;
    }

    /// "did:key:z6Mk..." of the public key.
    std::string did() const { return did_key_from_ed25519(public_key()); }

    /// The Ed25519 signature of `msg`.
    ed25519_signature sign(std::string_view msg) const noexcept {
        ed25519_signature sig;
        // Cannot fail for a well-formed secret key, which this class always holds.
        ::crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(msg.data()), msg.size(),
                               secret_->sk.data());
        return sig;
    }

    /// True if `sig` is this key's signature of `msg`.
    bool verify(std::string_view msg, const ed25519_signature& sig) const noexcept {
        return ::crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char*>(msg.data()), msg.size(),
                                             secret_->sk.data() + 32) == 0;
    }

private:
    explicit sodium_ed25519_key(std::shared_ptr<detail::sodium_secret> s) : secret_(std::move(s)) {}

    std::shared_ptr<detail::sodium_secret> secret_;
};

/// True if `sig` is `pub`'s Ed25519 signature of `msg` (libsodium; rejects small-order and
/// non-canonical encodings, as RFC 8032's strict verification does).
inline bool sodium_ed25519_verify(const ed25519_public_key& pub, std::string_view msg,
                                  const ed25519_signature& sig) noexcept {
    detail::sodium_ready();
    return ::crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char*>(msg.data()), msg.size(),
                                         pub.data()) == 0;
}

/// Signs events with one Ed25519 key on libsodium; models `signer`. Cheap to copy.
using sodium_ed25519_signer = detail::basic_ed25519_signer<sodium_ed25519_key>;

static_assert(signer<sodium_ed25519_signer>);

/// Verifies Ed25519 signatures by did:key on libsodium; models `verifier`. Keeps the last
/// signer's decoded key, so one per thread.
class sodium_ed25519_verifier {
public:
    sodium_ed25519_verifier() { detail::sodium_ready(); }

    boost::system::error_code verify(std::string_view payload, std::string_view signature, std::string_view did) {
        if (!has_key_ || did != did_) {
            auto pub = ed25519_from_did_key(did);
            if (!pub) return pub.error();
            // A key that is not a point of the curve's main subgroup is malformed, not merely
            // the wrong signer. The shared check first: what the OpenSSL back end refuses.
            if (detail::ed25519_weak_public_key(*pub) ||
                ::crypto_core_ed25519_is_valid_point(pub->data()) != 1)
                return errc::invalid_argument;
            key_ = *pub;
            did_.assign(did.data(), did.size());
            has_key_ = true;
        }
        ed25519_signature sig;
        if (!detail::base64url_decode(signature, sig)) return errc::invalid_argument;
        if (::crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char*>(payload.data()),
                                          payload.size(), key_.data()) != 0)
            return errc::bad_signature;
        return {};
    }

private:
    std::string did_;
    ed25519_public_key key_{};
    bool has_key_ = false;
};

static_assert(verifier<sodium_ed25519_verifier>);

} // namespace libretto

#endif
