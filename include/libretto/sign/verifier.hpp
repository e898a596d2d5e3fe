// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_VERIFIER_HPP
#define LIBRETTO_SIGN_VERIFIER_HPP

// The verifier concept: checks one signature against the identity that claims it.
//
// Valid expressions, for a verifier type V, `V v`, string_views `payload`, `sig`, `did`:
//
//   v.verify(payload, sig, did) -> boost::system::error_code
//        {}                       the signature is `did`'s over exactly `payload`
//        errc::bad_signature      it is not (wrong key, altered payload or signature)
//        errc::invalid_argument   `did` or `sig` is malformed or of an unsupported kind
//
// verify() may cache (the last key it decoded), so it need not be const, and a verifier
// object is not for concurrent use: give each thread its own copy.

#include <libretto/error.hpp>

#include <concepts>
#include <string_view>

namespace libretto {

template <class V>
concept verifier = requires(V& v, std::string_view payload, std::string_view sig, std::string_view did) {
    { v.verify(payload, sig, did) } -> std::same_as<boost::system::error_code>;
};

} // namespace libretto

#endif
