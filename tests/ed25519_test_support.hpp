// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// What the Ed25519 back-end tests share (sign_openssl_test.cpp, sign_sodium_test.cpp): hex
// helpers, an exception matcher, a scratch directory, the published test vectors, the keys
// both back ends must refuse (and a signature the identity key would accept), and a way to
// make a file write fail even as root.
#ifndef LIBRETTO_TESTS_ED25519_TEST_SUPPORT_HPP
#define LIBRETTO_TESTS_ED25519_TEST_SUPPORT_HPP

#include <libretto/error.hpp>
#include <libretto/sign/detail/ed25519_common.hpp>
#include <libretto/sign/did_key.hpp>
#include <libretto/sign/ed25519_types.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <csignal>
#include <sys/resource.h>

namespace ed25519_test {

inline std::vector<std::uint8_t> unhex(std::string_view h) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
    return out;
}

template <std::size_t N>
std::array<std::uint8_t, N> unhex_array(std::string_view h) {
    auto v = unhex(h);
    BOOST_TEST_REQUIRE(v.size() == N);
    std::array<std::uint8_t, N> a;
    std::copy(v.begin(), v.end(), a.begin());
    return a;
}

inline std::string as_text(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }

/// True if f() throws system_error with `code` and a message containing `mention`.
template <class F>
bool throws_code(F f, libretto::errc code, std::string_view mention) {
    try {
        f();
    } catch (const boost::system::system_error& e) {
        if (e.code() != code) return false;
        if (std::string(e.what()).find(mention) == std::string::npos) {
            BOOST_TEST_MESSAGE("message: " << e.what());
            return false;
        }
        return true;
    }
    return false;
}

/// An empty directory path under the test's working directory (ctest runs each test in its
/// own scratch directory).
inline std::filesystem::path scratch(const std::string& name) {
    auto p = std::filesystem::current_path() / name;
    std::filesystem::remove_all(p);
    return p;
}

/// RFC 8032 §7.1, TEST 1 to TEST 3: secret key, public key, message, signature (hex).
struct rfc8032_case {
    const char *secret, *pub, *msg, *sig;
};
inline constexpr rfc8032_case rfc8032_cases[] = {
    {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
    {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
    {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
};

/// The did:key specification's Ed25519 vectors: the DID of the seed 00…00 0i (i = 0..4).
inline constexpr const char* did_key_seed_vectors[] = {
    "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp", "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG",
    "did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf", "did:key:z6MkvqoYXQfDDJRv8L4wKzxYeuKyVZBfi9Qo6Ro8MiLH3kDQ",
    "did:key:z6MkwW6aqMnjgrhJXFUko3NnZPGzVpkNzhYK7yEhnsibmLwL"};

/// Public keys that are well-formed did:keys but no signer's key: small-order points (a
/// signature "by" one can be made without any secret) and encodings with y >= p.
struct weak_key_case {
    const char *what, *hex;
};
inline constexpr weak_key_case weak_keys[] = {
    {"the identity (y = 1)", "0100000000000000000000000000000000000000000000000000000000000000"},
    {"the identity with the sign bit set", "0100000000000000000000000000000000000000000000000000000000000080"},
    {"the identity as y = p + 1", "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"},
    {"a point of order 8", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"},
    {"a point of order 4 (y = 0)", "0000000000000000000000000000000000000000000000000000000000000000"},
    {"y = 2^255 - 1 >= p", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"},
};

/// The signature that every payload has under the identity key: R = the base point B and
/// S = 1, so that [S]B = R + [k]A holds whatever k (the payload's hash) is, as A = 0.
inline std::string forged_identity_signature() {
    const auto r = unhex("5866666666666666666666666666666666666666666666666666666666666666");
    std::vector<std::uint8_t> sig(r);
    sig.resize(64, 0);
    sig[32] = 1;
    std::string out;
    libretto::detail::base64url_append(out, sig);
    return out;
}

inline std::string file_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Runs f() with files limited to `bytes` (RLIMIT_FSIZE, which binds root too: a write past
/// it fails with EFBIG) and returns what it threw. Nothing else may write a file meanwhile,
/// so no BOOST_TEST inside.
template <class F>
std::optional<boost::system::system_error> throws_with_file_size_limit(rlim_t bytes, F f) {
    rlimit old{};
    BOOST_TEST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    rlimit small = old;
    small.rlim_cur = bytes;
    auto* old_handler = std::signal(SIGXFSZ, SIG_IGN); // EFBIG instead of a core dump
    BOOST_TEST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::optional<boost::system::system_error> out;
    try {
        f();
    } catch (const boost::system::system_error& e) {
        out = e;
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    return out;
}


/// The padding rule, on a back end: signature text is 86 characters, or 88 ending in "==";
/// any other padding is malformed.
template <class Verifier, class Signer>
void check_signature_padding(const Signer& alice) {
    const std::string sig = alice.sign("payload");
    BOOST_TEST_REQUIRE(sig.size() == 86u);
    Verifier v;
    BOOST_TEST(!v.verify("payload", sig, alice.did()));
    BOOST_TEST(!v.verify("payload", sig + "==", alice.did()));
    for (std::size_t n : {1u, 3u, 10u}) {
        BOOST_TEST_CONTEXT(n << " '='") {
            BOOST_TEST((v.verify("payload", sig + std::string(n, '='), alice.did()) == libretto::errc::invalid_argument));
        }
    }
    BOOST_TEST((v.verify("payload", sig.substr(0, 85) + "===", alice.did()) == libretto::errc::invalid_argument));
}

/// Every weak key is a malformed signer for a back end's verifier, whatever the payload and
/// signature (the forged one included), and for its raw verify function; the verifier still
/// works afterwards.
template <class Verifier, class Signer, class RawVerify>
void check_weak_keys_refused(const Signer& alice, RawVerify raw_verify) {
    const std::string forged = forged_identity_signature();
    Verifier v;
    for (const auto& k : weak_keys) {
        BOOST_TEST_CONTEXT(k.what) {
            const auto pub = unhex_array<32>(k.hex);
            const std::string did = libretto::did_key_from_ed25519(pub);
            for (const char* payload : {"anything", "else"}) {
                BOOST_TEST((v.verify(payload, forged, did) == libretto::errc::invalid_argument));
                BOOST_TEST((v.verify(payload, alice.sign(payload), did) == libretto::errc::invalid_argument));
                BOOST_TEST(!raw_verify(pub, payload, unhex_array<64>(
                    "5866666666666666666666666666666666666666666666666666666666666666"
                    "0100000000000000000000000000000000000000000000000000000000000000")));
            }
            BOOST_TEST(!v.verify("payload", alice.sign("payload"), alice.did()));
        }
    }
}

} // namespace ed25519_test

#endif
