// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// A stand-in signer and verifier for tests that must run without OpenSSL (the store
// conformance suite, the transcript tests): the "signature" is a keyed FNV-1a hash of the
// payload. Not cryptography; it exercises the payload, the chain and the stores exactly as
// a real signature does. The Ed25519 tests are in sign_openssl_test.cpp.
#ifndef LIBRETTO_TESTS_SIGN_TEST_SUPPORT_HPP
#define LIBRETTO_TESTS_SIGN_TEST_SUPPORT_HPP

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/signer.hpp>
#include <libretto/sign/verifier.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace sign_test {

inline std::string keyed_hash(std::string_view did, std::string_view payload) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::string_view s) {
        for (unsigned char c : s) {
            h ^= c;
            h *= 1099511628211ull;
        }
    };
    mix(did);
    mix("|");
    mix(payload);
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

struct checksum_signer {
    std::string id = "did:test:alice";
    std::string_view did() const noexcept { return id; }
    void sign_event(libretto::event& e) const {
        e.signer_did = id;
        e.signature = keyed_hash(id, libretto::signable_payload(e));
    }
};

struct checksum_verifier {
    int calls = 0;
    boost::system::error_code verify(std::string_view payload, std::string_view sig, std::string_view did) {
        ++calls;
        if (!did.starts_with("did:test:") || sig.size() != 16) return libretto::errc::invalid_argument;
        return keyed_hash(did, payload) == sig ? boost::system::error_code{} : libretto::errc::bad_signature;
    }
};

static_assert(libretto::signer<checksum_signer>);
static_assert(libretto::verifier<checksum_verifier>);

} // namespace sign_test

#endif
