// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// sign/did_key.hpp: did:key for Ed25519 keys, base58btc, and the errors for malformed DIDs.
#include <libretto/sign/did_key.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/system/system_error.hpp>

#include <string>
#include <vector>

using namespace libretto;

namespace {

std::vector<std::uint8_t> b58(std::string_view s) {
    auto r = base58btc_decode(s);
    BOOST_TEST_REQUIRE(r.has_value());
    return *r;
}

std::string why_of(std::string_view did) {
    std::string why;
    auto r = ed25519_from_did_key(did, &why);
    BOOST_TEST(!r.has_value());
    if (!r) BOOST_TEST(r.error() == errc::invalid_argument);
    return why;
}

} // namespace

BOOST_AUTO_TEST_SUITE(did_key)

// The did:key specification's test vectors (w3c-ccg/did-method-key, test-vectors/
// ed25519-x25519.json) and one from ACA-Py's tests: each DID names the key whose base58
// form is its publicKeyBase58.
BOOST_AUTO_TEST_CASE(specification_vectors) {
    const struct {
        const char* did;
        const char* public_key_base58;
    } cases[] = {
        {"did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp", "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"},
        {"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG", "6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"},
        {"did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf", "8pM1DN3RiT8vbom5u1sNryaNT1nyL8CTTW3b5PwWXRBH"},
        {"did:key:z6MkvqoYXQfDDJRv8L4wKzxYeuKyVZBfi9Qo6Ro8MiLH3kDQ", "HPYVwAQmskwT1qEEeRzhoomyfyupJGASQQtCXSNG8XS2"},
        {"did:key:z6MkwW6aqMnjgrhJXFUko3NnZPGzVpkNzhYK7yEhnsibmLwL", "J3qYF7YJMKCqQke47UQwiHizgFUXapHxRxKmxbkar89x"},
        {"did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th", "8HH5gYEeNc3z7PYXmd54d4x6qAfCNrqQqEB3nS7Zfu7K"},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.did) {
            const std::vector<std::uint8_t> raw = b58(c.public_key_base58);
            BOOST_TEST_REQUIRE(raw.size() == 32u);
            ed25519_public_key key;
            std::copy(raw.begin(), raw.end(), key.begin());
            BOOST_TEST(did_key_from_ed25519(key) == c.did);
            auto back = ed25519_from_did_key(c.did);
            BOOST_TEST_REQUIRE(back.has_value());
            BOOST_TEST((*back == key));
            BOOST_TEST((parse_did_key(c.did) == key));
            BOOST_TEST(base58btc_encode(raw) == c.public_key_base58);
        }
    }
}

BOOST_AUTO_TEST_CASE(every_ed25519_did_starts_with_z6Mk) {
    ed25519_public_key zero{}, ones;
    ones.fill(0xff);
    BOOST_TEST(did_key_from_ed25519(zero).starts_with("did:key:z6Mk"));
    BOOST_TEST(did_key_from_ed25519(ones).starts_with("did:key:z6Mk"));
    BOOST_TEST((parse_did_key(did_key_from_ed25519(zero)) == zero));
    BOOST_TEST((parse_did_key(did_key_from_ed25519(ones)) == ones));
}

BOOST_AUTO_TEST_CASE(base58_edge_cases) {
    BOOST_TEST(base58btc_encode(std::vector<std::uint8_t>{}) == "");
    BOOST_TEST(base58btc_encode(std::vector<std::uint8_t>{0, 0}) == "11");
    BOOST_TEST(base58btc_encode(std::vector<std::uint8_t>{0, 0, 1}) == "112");
    BOOST_TEST(base58btc_encode(std::vector<std::uint8_t>{57}) == "z");
    BOOST_TEST(base58btc_encode(std::vector<std::uint8_t>{58}) == "21");
    // "Hello World!" from the base58 draft (draft-msporny-base58).
    const std::string hello = "Hello World!";
    BOOST_TEST(base58btc_encode(std::vector<std::uint8_t>(hello.begin(), hello.end())) == "2NEpo7TZRRrLZSi2U");
    const auto back = b58("2NEpo7TZRRrLZSi2U");
    BOOST_TEST(std::string(back.begin(), back.end()) == hello);
    BOOST_TEST(b58("").empty());
    BOOST_TEST((b58("11") == std::vector<std::uint8_t>{0, 0}));
    std::string why;
    BOOST_TEST(!base58btc_decode("abc0def", &why).has_value()); // '0' is not in the alphabet
    BOOST_TEST(why == "invalid base58btc character '0' at position 3");
    BOOST_TEST(!base58btc_decode("Il", &why).has_value());
    BOOST_TEST(why == "invalid base58btc character 'I' at position 0");
    BOOST_TEST(!base58btc_decode("a\x01", &why).has_value());
    BOOST_TEST(why == "invalid base58btc character (byte 1) at position 1");
}

BOOST_AUTO_TEST_CASE(malformed_dids_are_rejected_with_the_reason) {
    BOOST_TEST(why_of("") == "the DID is empty");
    BOOST_TEST(why_of("did:web:example.com").find("not a did:key DID") != std::string::npos);
    BOOST_TEST(why_of("DID:KEY:z6Mk").find("not a did:key DID") != std::string::npos);
    BOOST_TEST(why_of("did:key:").find("must start with 'z'") != std::string::npos);
    BOOST_TEST(why_of("did:key:u6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp").find("must start with 'z'") !=
               std::string::npos);
    BOOST_TEST(why_of("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooW0") ==
               "invalid base58btc character '0' at position 46 of the did:key identifier");
    BOOST_TEST(why_of("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp#z6Mk").find("fragment") !=
               std::string::npos);
    // An X25519 key (multicodec 0xec01) from the same specification.
    BOOST_TEST(why_of("did:key:z6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW").find("not an Ed25519 public key") !=
               std::string::npos);
    // The did:key test suite's "invalid key length" DIDs: 0xed01 + 3 bytes, and one that is
    // not 0xed01-prefixed at all.
    BOOST_TEST(why_of("did:key:zTjsVPtY") == "an Ed25519 did:key holds a 32-byte key, this one 3 bytes");
    BOOST_TEST(why_of("did:key:z6MkA9MEcFWsoUVqj2zX6LACFaikLQ28i9WAsJnURDS3HLGKSkUbwUbiLH22ohgZ2BwgpQ6qC3VBTNV3pLhYDTVgR")
                   .find("too long for an Ed25519 key") != std::string::npos);
    BOOST_TEST(why_of("did:key:z" + std::string(5000, 'a')) ==
               "the did:key identifier is 5001 characters, too long for an Ed25519 key");
    // 0xed01 + 31 bytes
    std::vector<std::uint8_t> short_key(33, 7);
    short_key[0] = 0xed;
    short_key[1] = 0x01;
    BOOST_TEST(why_of("did:key:z" + base58btc_encode(short_key)) ==
               "an Ed25519 did:key holds a 32-byte key, this one 31 bytes");
}

BOOST_AUTO_TEST_CASE(parse_did_key_throws_with_the_reason) {
    try {
        parse_did_key("did:key:zzz");
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == errc::invalid_argument);
        BOOST_TEST(std::string(e.what()).find("did:key 'did:key:zzz': the did:key is not an Ed25519 public key") !=
                   std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
