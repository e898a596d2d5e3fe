// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_NO_SIGNER_HPP
#define LIBRETTO_SIGN_NO_SIGNER_HPP

// The signer that signs nothing, and the minimal signer concept the runner uses. A
// sketch: the signing issue adds ed25519_signer, did:key, the canonical JSON payload and
// the verifier, and may move the concept to its own header.
//
// Valid expressions, for a signer type S, `const S s`, `event e`:
//
//   s.did()          -> convertible to std::string_view   the signer's identity ("" for none)
//   s.sign_event(e)  -> void                              sets e.signature and e.signer_did
//
// Before sign_event the runner sets e.prev_signature to the signature of the session's
// previous stored event (chaining the transcript); for no_signer it sets nothing.

#include <libretto/event/event.hpp>

#include <concepts>
#include <string_view>
#include <type_traits>

namespace libretto {

template <class S>
concept signer = requires(const S& s, event& e) {
    { s.did() } -> std::convertible_to<std::string_view>;
    s.sign_event(e);
};

/// Signs nothing; the runner skips the chaining step for it, so it costs nothing.
struct no_signer {
    std::string_view did() const noexcept { return {}; }
    void sign_event(event&) const noexcept {}
};

static_assert(signer<no_signer>);

/// True for signers that do something (every signer except no_signer).
template <class S>
inline constexpr bool is_signing = !std::is_same_v<std::remove_cvref_t<S>, no_signer>;

} // namespace libretto

#endif
