// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target did_key (sign/did_key.hpp): the input is taken four ways at once.
//
//   - as a DID: ed25519_from_did_key refuses with errc::invalid_argument and a reason (and
//     parse_did_key throws the same code), or gives a key whose did:key is the input
//     itself (base58 has one spelling per value, so decoding loses nothing);
//   - as base58btc text: decoding refuses with a reason, or gives bytes that encode back
//     to the same text;
//   - as bytes: encoding gives text of the alphabet only, which decodes back to them;
//   - its first 32 bytes as a key: decode(encode(key)) == key, the DID starts "did:key:z6Mk".

#include "fuzz_support.hpp"

#include <libretto/sign/did_key.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lb = libretto;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    // As a DID.
    {
        std::string why;
        auto key = lb::ed25519_from_did_key(text, &why);
        if (key) {
            FUZZ_CHECK(lb::did_key_from_ed25519(*key) == text, "a DID that decodes but is not its key's DID: " +
                                                                   fuzz::shown(text));
            FUZZ_CHECK(lb::parse_did_key(text) == *key, "parse_did_key and ed25519_from_did_key disagree");
        } else {
            FUZZ_CHECK(key.error() == lb::errc::invalid_argument, "refused with " + key.error().message());
            FUZZ_CHECK(!why.empty(), "refused without a reason: " + fuzz::shown(text));
            bool threw = false;
            try {
                (void)lb::parse_did_key(text);
            } catch (const boost::system::system_error& e) {
                threw = e.code() == lb::errc::invalid_argument;
            }
            FUZZ_CHECK(threw, "parse_did_key did not throw invalid_argument for " + fuzz::shown(text));
        }
    }

    // Base58 is quadratic: keep the text to about what an identifier could be.
    const std::string_view small = text.substr(0, 96);

    // As base58btc text.
    {
        std::string why;
        auto bytes = lb::base58btc_decode(small, &why);
        if (bytes) {
            FUZZ_CHECK(lb::base58btc_encode(*bytes) == small, "base58 text that does not encode back: " +
                                                                  fuzz::shown(small));
        } else {
            FUZZ_CHECK(bytes.error() == lb::errc::invalid_argument, "refused with " + bytes.error().message());
            FUZZ_CHECK(!why.empty(), "refused without a reason");
        }
    }

    // As bytes.
    {
        const std::span<const std::uint8_t> raw(data, small.size());
        const std::string enc = lb::base58btc_encode(raw);
        FUZZ_CHECK(enc.find_first_not_of(lb::detail::base58_alphabet) == std::string::npos,
                   "base58btc_encode wrote a character outside the alphabet: " + fuzz::shown(enc));
        auto dec = lb::base58btc_decode(enc);
        FUZZ_CHECK(dec.has_value(), "base58btc_decode refused base58btc_encode's text " + enc);
        FUZZ_CHECK(std::equal(dec->begin(), dec->end(), raw.begin(), raw.end()), "bytes do not round trip: " + enc);
    }

    // Its first 32 bytes as a key.
    {
        lb::ed25519_public_key key{};
        std::memcpy(key.data(), data, std::min(size, key.size()));
        const std::string did = lb::did_key_from_ed25519(key);
        FUZZ_CHECK(did.starts_with("did:key:z6Mk"), "an Ed25519 did:key that does not start with z6Mk: " + did);
        std::string why;
        auto back = lb::ed25519_from_did_key(did, &why);
        FUZZ_CHECK(back.has_value(), "the DID of a key does not decode (" + why + "): " + did);
        FUZZ_CHECK(*back == key, "the key does not round trip: " + did);
    }
    return 0;
}
