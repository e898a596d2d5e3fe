// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_DETAIL_BASIC_ED25519_SIGNER_HPP
#define LIBRETTO_SIGN_DETAIL_BASIC_ED25519_SIGNER_HPP

// The event signer of both Ed25519 back ends: ed25519_signer (OpenSSL) and
// sodium_ed25519_signer (libsodium) are this template over their key type.

#include <libretto/event/event.hpp>
#include <libretto/sign/detail/ed25519_common.hpp>
#include <libretto/sign/signable_payload.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail {

/// Signs events with one Ed25519 key; models `signer`. Key: sign(msg) -> ed25519_signature,
/// did(). Cheap to copy when the key is (both back ends share theirs).
template <class Key>
class basic_ed25519_signer {
public:
    explicit basic_ed25519_signer(Key key) : key_(std::move(key)), did_(key_.did()) {}

    std::string_view did() const noexcept { return did_; }
    const Key& key() const noexcept { return key_; }

    /// The unpadded base64url signature of `payload` (86 characters).
    std::string sign(std::string_view payload) const {
        const ed25519_signature sig = key_.sign(payload);
        std::string out;
        out.reserve(88);
        base64url_append(out, sig);
        return out;
    }

    /// Sets e.signer_did to this signer's DID, then e.signature over signable_payload(e)
    /// (which covers the DID too). The event must already be as it will be stored
    /// (chain_event; the runner does that).
    void sign_event(event& e) const {
        e.signer_did = did_;
        std::string payload;
        payload.reserve(1024);
        append_signable_payload(payload, e);
        e.signature = sign(payload);
    }

private:
    Key key_;
    std::string did_;
};

} // namespace libretto::detail

#endif
