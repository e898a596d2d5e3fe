// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_ED25519_OPENSSL_HPP
#define LIBRETTO_SIGN_ED25519_OPENSSL_HPP

// Ed25519 (RFC 8032) on OpenSSL 3's EVP interface: keys, the event signer, the verifier.
// Needs the libretto::openssl component (link OpenSSL::Crypto). docs/signing.md.
//
//   auto key = lb::ed25519_key::generate();               // or from_seed, from_pem, load_*_file
//   key.save_pem_file("agent.pem");                        // PKCS#8, file mode 0600
//   lb::ed25519_signer signer{key};                        // models `signer`
//   signer.did();                                          // "did:key:z6Mk..."
//   lb::runner runner{agent, store, lb::no_compaction{}, signer};
//
//   lb::ed25519_verifier v;                                // models `verifier`
//   auto report = lb::verify_transcript(session, v);       // or verify_transcript(session)
//   bool ok = lb::verify_signature(event);                 // orxhestra's event.verify_signature()
//
// Signatures are the 64 raw bytes in unpadded base64url (86 characters); padded base64url
// (orxhestra's 88 characters, ending "==") is accepted when verifying.

#include <libretto/event/event_list.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/session/session.hpp>
#include <libretto/sign/detail/basic_ed25519_signer.hpp>
#include <libretto/sign/detail/ed25519_common.hpp>
#include <libretto/sign/did_key.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/signer.hpp>
#include <libretto/sign/transcript.hpp>
#include <libretto/sign/verifier.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace libretto {

namespace detail {

struct pkey_free {
    void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct md_ctx_free {
    void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};
struct bio_free {
    void operator()(BIO* p) const noexcept { BIO_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, md_ctx_free>;
using bio_ptr = std::unique_ptr<BIO, bio_free>;

/// OpenSSL's queued errors as text (and clears the queue).
inline std::string openssl_errors() {
    std::string out;
    while (unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        if (!out.empty()) out += "; ";
        out += buf;
    }
    return out.empty() ? "no OpenSSL error queued" : out;
}

/// The OpenSSL key of `pub`; null for a small-order or non-canonical key, which OpenSSL
/// would take (it checks only the length) and then verify forgeries against.
inline pkey_ptr public_pkey(const ed25519_public_key& pub) {
    if (ed25519_weak_public_key(pub)) return nullptr;
    return pkey_ptr(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, pub.data(), pub.size()));
}

/// load_pem_file's limit, and from_pem's: an Ed25519 key's PEM is 119 bytes, and
/// BIO_new_mem_buf takes an int length.
inline constexpr std::size_t max_pem_size = 1 << 16;

/// Ed25519 verification of `sig` over `msg` by `key`.
inline bool ed25519_verify_with(EVP_PKEY* key, std::string_view msg, const ed25519_signature& sig) {
    md_ctx_ptr ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1) {
        ERR_clear_error();
        return false;
    }
    const int r = EVP_DigestVerify(ctx.get(), sig.data(), sig.size(), reinterpret_cast<const unsigned char*>(msg.data()),
                                   msg.size());
    if (r != 1) ERR_clear_error();
    return r == 1;
}

} // namespace detail

/// An Ed25519 private key (and its public half). Copies share the OpenSSL key object, which
/// is never modified, so one key may sign on several threads at once.
class ed25519_key {
public:
    /// A fresh key from OpenSSL's random generator.
    static ed25519_key generate() {
        EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
        if (!raw) detail::ed25519_fail(errc::io_error, "key generation failed: " + detail::openssl_errors());
        return ed25519_key(detail::pkey_ptr(raw));
    }

    /// The key of a 32-byte seed (RFC 8032's secret key; the test vectors' "SECRET KEY").
    static ed25519_key from_seed(const ed25519_seed& seed) {
        EVP_PKEY* raw = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed.data(), seed.size());
        if (!raw) detail::ed25519_fail(errc::invalid_argument, "cannot load the seed: " + detail::openssl_errors());
        return ed25519_key(detail::pkey_ptr(raw));
    }

    /// from_seed from bytes; throws system_error(invalid_argument) unless there are 32.
    static ed25519_key from_seed(std::span<const std::uint8_t> seed) {
        if (seed.size() != 32)
            detail::ed25519_fail(errc::invalid_argument,
                                 "a seed is 32 bytes, got " + std::to_string(seed.size()));
        ed25519_seed s;
        std::copy(seed.begin(), seed.end(), s.begin());
        return from_seed(s);
    }

    /// The key in PEM text ("-----BEGIN PRIVATE KEY-----", PKCS#8, unencrypted). Throws
    /// system_error(invalid_argument) if it is not PEM, not an Ed25519 private key, or over
    /// 64 KiB.
    static ed25519_key from_pem(std::string_view pem) {
        if (pem.size() > detail::max_pem_size)
            detail::ed25519_fail(errc::invalid_argument, "PEM text of " + std::to_string(pem.size()) +
                                                             " bytes, more than the " +
                                                             std::to_string(detail::max_pem_size) +
                                                             " a key may take");
        detail::bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
        if (!bio) detail::ed25519_fail(errc::io_error, "out of memory");
        // A null passphrase callback: an encrypted key fails instead of prompting on a tty.
        EVP_PKEY* raw = PEM_read_bio_PrivateKey(bio.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
        if (!raw)
            detail::ed25519_fail(errc::invalid_argument,
                                 "the text is not an unencrypted PEM private key: " + detail::openssl_errors());
        detail::pkey_ptr key(raw);
        if (EVP_PKEY_get_base_id(raw) != EVP_PKEY_ED25519)
            detail::ed25519_fail(errc::invalid_argument, std::string("the PEM key is not an Ed25519 key but ") +
                                                             (OBJ_nid2sn(EVP_PKEY_get_base_id(raw)) ? OBJ_nid2sn(EVP_PKEY_get_base_id(raw)) : "unknown"));
        return ed25519_key(std::move(key));
    }

    /// from_pem of a file's contents.
    static ed25519_key load_pem_file(const std::filesystem::path& path) {
        return from_pem(detail::read_key_file(path, detail::max_pem_size));
    }

    /// The key of a file holding exactly the 32 raw seed bytes.
    static ed25519_key load_seed_file(const std::filesystem::path& path) { return from_seed(detail::read_seed_file(path)); }

    /// PKCS#8 PEM text of the private key.
    std::string to_pem() const {
        detail::bio_ptr bio(BIO_new(BIO_s_mem()));
        if (!bio || PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
            detail::ed25519_fail(errc::io_error, "PEM encoding failed: " + detail::openssl_errors());
        char* data = nullptr;
        const long n = BIO_get_mem_data(bio.get(), &data);
        return std::string(data, static_cast<std::size_t>(n));
    }

    /// Writes to_pem() to `path`, readable by the owner only (0600), replacing the file whole
    /// (write_private_file: a failed save leaves the old file).
    void save_pem_file(const std::filesystem::path& path) const { detail::write_private_file(path, to_pem()); }

    /// Writes the 32 seed bytes to `path` (0600).
    void save_seed_file(const std::filesystem::path& path) const {
        const auto s = seed();
        detail::write_private_file(path, std::string_view(reinterpret_cast<const char*>(s.data()), s.size()));
    }

    ed25519_seed seed() const {
        ed25519_seed s{};
        std::size_t n = s.size();
        if (EVP_PKEY_get_raw_private_key(key_.get(), s.data(), &n) != 1 || n != s.size())
            detail::ed25519_fail(errc::io_error, "cannot read the seed: " + detail::openssl_errors());
        return s;
    }

    ed25519_public_key public_key() const {
        ed25519_public_key p{};
        std::size_t n = p.size();
        if (EVP_PKEY_get_raw_public_key(key_.get(), p.data(), &n) != 1 || n != p.size())
            detail::ed25519_fail(errc::io_error, "cannot read the public key: " + detail::openssl_errors());
        return p;
    }

    /// "did:key:z6Mk..." of the public key.
    std::string did() const { return did_key_from_ed25519(public_key()); }

    /// The Ed25519 signature of `msg`.
    ed25519_signature sign(std::string_view msg) const {
        detail::md_ctx_ptr ctx(EVP_MD_CTX_new());
        ed25519_signature sig{};
        std::size_t n = sig.size();
        if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
            EVP_DigestSign(ctx.get(), sig.data(), &n, reinterpret_cast<const unsigned char*>(msg.data()), msg.size()) != 1 ||
            n != sig.size())
            detail::ed25519_fail(errc::io_error, "signing failed: " + detail::openssl_errors());
        return sig;
    }

    /// True if `sig` is this key's signature of `msg`.
    bool verify(std::string_view msg, const ed25519_signature& sig) const {
        return detail::ed25519_verify_with(key_.get(), msg, sig);
    }

    EVP_PKEY* native_handle() const noexcept { return key_.get(); }

private:
    explicit ed25519_key(detail::pkey_ptr k) : key_(std::move(k)) {}

    std::shared_ptr<EVP_PKEY> key_;
};

/// True if `sig` is the Ed25519 signature of `msg` by `pub` (raw RFC 8032 form); false for
/// a small-order or non-canonical `pub`, whatever `sig` is.
inline bool ed25519_verify(const ed25519_public_key& pub, std::string_view msg, const ed25519_signature& sig) {
    detail::pkey_ptr key = detail::public_pkey(pub);
    if (!key) {
        ERR_clear_error();
        return false;
    }
    return detail::ed25519_verify_with(key.get(), msg, sig);
}

/// Signs events with one Ed25519 key (OpenSSL); models `signer`. Cheap to copy (shares the
/// key). sign_event sets e.signer_did, then e.signature over signable_payload(e).
using ed25519_signer = detail::basic_ed25519_signer<ed25519_key>;

static_assert(signer<ed25519_signer>);

/// Verifies Ed25519 signatures by did:key; models `verifier`. Keeps the last signer's
/// decoded key (transcripts have few signers, and decoding costs about as much as a
/// verification), so it is not for concurrent use: one per thread.
class ed25519_verifier {
public:
    ed25519_verifier() = default;
    // A copy decodes its own key on first use (verify_transcript's threads each take one).
    ed25519_verifier(const ed25519_verifier&) {}
    ed25519_verifier& operator=(const ed25519_verifier&) {
        did_.clear();
        key_.reset();
        return *this;
    }
    ed25519_verifier(ed25519_verifier&&) noexcept = default;
    ed25519_verifier& operator=(ed25519_verifier&&) noexcept = default;

    boost::system::error_code verify(std::string_view payload, std::string_view signature, std::string_view did) {
        if (did != did_ || !key_) {
            auto pub = ed25519_from_did_key(did);
            if (!pub) return pub.error();
            // A small-order or non-canonical key is malformed (as libsodium has it), not
            // merely the wrong signer: the identity verifies forgeries of every payload.
            detail::pkey_ptr key = detail::public_pkey(*pub);
            if (!key) {
                ERR_clear_error();
                return errc::invalid_argument;
            }
            key_ = std::move(key);
            did_.assign(did.data(), did.size());
        }
        ed25519_signature sig;
        if (!detail::base64url_decode(signature, sig)) return errc::invalid_argument;
        if (!detail::ed25519_verify_with(key_.get(), payload, sig)) return errc::bad_signature;
        return {};
    }

private:
    std::string did_;
    detail::pkey_ptr key_;
};

static_assert(verifier<ed25519_verifier>);

/// orxhestra's event.verify_signature(): true if `e` is signed and its Ed25519 signature
/// verifies against its signer_did; false if unsigned, malformed or altered.
inline bool verify_signature(const event& e) {
    ed25519_verifier v;
    try {
        return !verify_signature(e, v);
    } catch (const boost::system::system_error&) { // not canonicalisable: cannot be valid
        return false;
    }
}

/// verify_transcript with Ed25519 signatures.
inline transcript_report verify_transcript(event_span events, const transcript_options& o = {}) {
    ed25519_verifier v;
    return verify_transcript(events, v, o);
}

/// verify_transcript of a session with Ed25519 signatures.
inline transcript_report verify_transcript(const session& s, transcript_options o = {}) {
    ed25519_verifier v;
    return verify_transcript(s, v, std::move(o));
}

} // namespace libretto

#endif
