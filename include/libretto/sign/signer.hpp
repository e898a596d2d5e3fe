// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_SIGNER_HPP
#define LIBRETTO_SIGN_SIGNER_HPP

// The signer concept: what the runner needs to sign the events it stores. docs/signing.md.
//
// Valid expressions, for a signer type S, `const S s`, `event e`:
//
//   s.did()          -> convertible to std::string_view   the signer's identity ("" for none)
//   s.sign_event(e)  -> void                              sets e.signer_did, then e.signature
//                                                         over signable_payload(e)
//
// Before sign_event the runner completes the event as the store will keep it (id,
// timestamp, session_id, the sequence the store assigns, and prev_signature: the
// signature of the session's previous event), so that what is signed is what is stored.

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

struct no_signer;

/// True for signers that do something (every signer except no_signer).
template <class S>
inline constexpr bool is_signing = !std::is_same_v<std::remove_cvref_t<S>, no_signer>;

} // namespace libretto

#endif
