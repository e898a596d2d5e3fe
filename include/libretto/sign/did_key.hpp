// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_DID_KEY_HPP
#define LIBRETTO_SIGN_DID_KEY_HPP

// did:key identities for Ed25519 public keys (W3C CCG did:key method):
//
//   "did:key:z" + base58btc(0xed 0x01 + the 32-byte public key)     e.g. did:key:z6Mk...
//
// 0xed01 is the multicodec varint of ed25519-pub; 'z' is the multibase prefix of base58btc
// (the Bitcoin alphabet). No OpenSSL here: the key bytes are what ed25519_openssl.hpp uses.
//
//   did_key_from_ed25519(key)           -> std::string
//   ed25519_from_did_key(did, &why)     -> result<ed25519_public_key>   never throws
//   parse_did_key(did)                  -> ed25519_public_key          throws system_error
//   base58btc_encode(bytes), base58btc_decode(text, &why)

#include <libretto/error.hpp>

#include <boost/system/result.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

/// A raw Ed25519 public key (RFC 8032 encoding).
using ed25519_public_key = std::array<std::uint8_t, 32>;

/// The did:key prefix of every identity this library writes.
inline constexpr std::string_view did_key_prefix = "did:key:";

namespace detail {

inline constexpr char base58_alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

inline int base58_digit(char c) noexcept {
    for (int i = 0; i < 58; ++i)
        if (base58_alphabet[i] == c) return i;
    return -1;
}

} // namespace detail

/// Base58 with the Bitcoin alphabet; each leading zero byte becomes a '1'.
inline std::string base58btc_encode(std::span<const std::uint8_t> bytes) {
    std::size_t zeros = 0;
    while (zeros < bytes.size() && bytes[zeros] == 0) ++zeros;
    // log(256)/log(58) < 1.37: room for the base-58 digits, least significant last
    std::vector<std::uint8_t> digits((bytes.size() - zeros) * 137 / 100 + 1, 0);
    std::size_t used = 0; // digits in use, at the end of `digits`
    for (std::size_t i = zeros; i < bytes.size(); ++i) {
        unsigned carry = bytes[i];
        std::size_t k = 0;
        for (auto it = digits.rbegin(); (carry != 0 || k < used) && it != digits.rend(); ++it, ++k) {
            carry += 256u * *it;
            *it = static_cast<std::uint8_t>(carry % 58);
            carry /= 58;
        }
        used = k;
    }
    std::string out(zeros, '1');
    out.reserve(zeros + used);
    for (std::size_t i = digits.size() - used; i < digits.size(); ++i) out.push_back(detail::base58_alphabet[digits[i]]);
    return out;
}

/// Decodes base58btc text. An invalid character fails with errc::invalid_argument, and
/// `why` (when given) names it and its position.
inline boost::system::result<std::vector<std::uint8_t>> base58btc_decode(std::string_view text,
                                                                           std::string* why = nullptr) {
    std::size_t ones = 0;
    while (ones < text.size() && text[ones] == '1') ++ones;
    std::vector<std::uint8_t> bytes((text.size() - ones) * 733 / 1000 + 1, 0); // log(58)/log(256)
    std::size_t used = 0;
    for (std::size_t i = ones; i < text.size(); ++i) {
        const int d = detail::base58_digit(text[i]);
        if (d < 0) {
            if (why) {
                const auto c = static_cast<unsigned char>(text[i]);
                *why = "invalid base58btc character ";
                if (c >= 0x20 && c < 0x7f) *why += std::string("'") + text[i] + "'";
                else *why += "(byte " + std::to_string(c) + ")";
                *why += " at position " + std::to_string(i);
            }
            return boost::system::error_code(errc::invalid_argument);
        }
        unsigned carry = static_cast<unsigned>(d);
        std::size_t k = 0;
        for (auto it = bytes.rbegin(); (carry != 0 || k < used) && it != bytes.rend(); ++it, ++k) {
            carry += 58u * *it;
            *it = static_cast<std::uint8_t>(carry & 0xff);
            carry >>= 8;
        }
        used = k;
    }
    std::vector<std::uint8_t> out(ones, 0);
    out.insert(out.end(), bytes.end() - static_cast<std::ptrdiff_t>(used), bytes.end());
    return out;
}

/// The did:key of an Ed25519 public key ("did:key:z6Mk...").
inline std::string did_key_from_ed25519(const ed25519_public_key& key) {
    std::array<std::uint8_t, 34> mc{0xed, 0x01};
    std::copy(key.begin(), key.end(), mc.begin() + 2);
    std::string out(did_key_prefix);
    out += 'z';
    out += base58btc_encode(mc);
    return out;
}

/// The Ed25519 public key a did:key names. Fails with errc::invalid_argument, and `why`
/// (when given) says what is wrong: not a did:key, not base58btc ('z'), a bad character,
/// another key type than Ed25519 (multicodec 0xed01), or a key that is not 32 bytes.
inline boost::system::result<ed25519_public_key> ed25519_from_did_key(std::string_view did,
                                                                      std::string* why = nullptr) {
    auto fail = [&](std::string msg) -> boost::system::result<ed25519_public_key> {
        if (why) *why = std::move(msg);
        return boost::system::error_code(errc::invalid_argument);
    };
    if (did.empty()) return fail("the DID is empty");
    if (did.substr(0, did_key_prefix.size()) != did_key_prefix)
        return fail("not a did:key DID (expected the prefix \"did:key:\")");
    std::string_view id = did.substr(did_key_prefix.size());
    if (id.size() > 64) // an Ed25519 did:key identifier is 48 characters; decoding is quadratic
        return fail("the did:key identifier is " + std::to_string(id.size()) +
                    " characters, too long for an Ed25519 key");
    if (id.find_first_of("#?/") != std::string_view::npos)
        return fail("a did:key identifier has no path, query or fragment");
    if (id.empty() || id[0] != 'z')
        return fail("the did:key identifier is not multibase base58btc (it must start with 'z')");
    std::string inner;
    auto bytes = base58btc_decode(id.substr(1), &inner);
    if (!bytes) return fail(inner + " of the did:key identifier");
    if (bytes->size() < 2 || (*bytes)[0] != 0xed || (*bytes)[1] != 0x01)
        return fail("the did:key is not an Ed25519 public key (multicodec 0xed01 expected)");
    if (bytes->size() != 34)
        return fail("an Ed25519 did:key holds a 32-byte key, this one " + std::to_string(bytes->size() - 2) + " bytes");
    ed25519_public_key key;
    std::copy(bytes->begin() + 2, bytes->end(), key.begin());
    return key;
}

/// ed25519_from_did_key, throwing system_error(errc::invalid_argument) with the reason.
inline ed25519_public_key parse_did_key(std::string_view did) {
    std::string why;
    auto r = ed25519_from_did_key(did, &why);
    if (!r) throw boost::system::system_error(r.error(), "did:key '" + std::string(did.substr(0, 80)) + "': " + why);
    return *r;
}

} // namespace libretto

#endif
