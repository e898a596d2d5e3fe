// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// sign/ed25519_sodium.hpp: RFC 8032 and did:key vectors, keys and seed files, the signer and
// the verifier (with every malformed input), signed transcripts with tampering, and — when
// the OpenSSL component exists too — byte-for-byte agreement with the OpenSSL back end.
#include <libretto/sign/ed25519_sodium.hpp>

#include <libretto/session/session.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/transcript.hpp>
#ifdef LIBRETTO_TEST_HAVE_OPENSSL
#include <libretto/sign/ed25519_openssl.hpp>
#endif

#include <boost/test/unit_test.hpp>

#include "ed25519_test_support.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace {

namespace lb = libretto;

using namespace ed25519_test;

lb::sodium_ed25519_key test_key(std::uint8_t fill) {
    lb::ed25519_seed s;
    s.fill(fill);
    return lb::sodium_ed25519_key::from_seed(s);
}

/// A session of `n` events, each with a tool result or text, chained and signed.
lb::session signed_session(int n, const lb::sodium_ed25519_signer& signer) {
    lb::session s;
    s.app_name = "app";
    s.user_id = "u";
    s.id = "s-1";
    for (int i = 0; i < n; ++i) {
        lb::event e = i % 2 ? lb::event::make(lb::event_type::agent_message, "bot",
                                              lb::content::from_text("answer " + std::to_string(i)))
                            : lb::event::make(lb::event_type::user_message, "user",
                                              lb::content::from_text("question " + std::to_string(i)));
        e.actions.state_delta["k"] = i;
        lb::chain_event(s, e);
        signer.sign_event(e);
        s.last_sequence = e.sequence;
        s.events.push_back(std::move(e));
    }
    return s;
}

lb::transcript_report check(const lb::session& s, const lb::sodium_ed25519_signer& signer) {
    lb::sodium_ed25519_verifier v;
    lb::transcript_options o;
    o.trusted_dids = {std::string(signer.did())};
    return lb::verify_transcript(s, v, o);
}

} // namespace

BOOST_AUTO_TEST_SUITE(sodium_vectors)

// RFC 8032 §7.1, TEST 1 to TEST 3 (the same vectors as the OpenSSL back end's tests).
BOOST_AUTO_TEST_CASE(rfc8032_test_vectors) {
    for (const auto& c : rfc8032_cases) {
        BOOST_TEST_CONTEXT("secret " << c.secret) {
            const auto key = lb::sodium_ed25519_key::from_seed(unhex_array<32>(c.secret));
            const auto pub = unhex_array<32>(c.pub);
            BOOST_TEST((key.public_key() == pub));
            BOOST_TEST((key.seed() == unhex_array<32>(c.secret)));
            const auto m = unhex(c.msg);
            const std::string msg(m.begin(), m.end());
            const auto sig = unhex_array<64>(c.sig);
            BOOST_TEST((key.sign(msg) == sig));
            BOOST_TEST(key.verify(msg, sig));
            BOOST_TEST(lb::sodium_ed25519_verify(pub, msg, sig));
            auto bad = sig;
            bad[10] ^= 0x01;
            BOOST_TEST(!lb::sodium_ed25519_verify(pub, msg, bad));
            BOOST_TEST(!key.verify(msg, bad));
            BOOST_TEST(!lb::sodium_ed25519_verify(pub, msg + "x", sig));
        }
    }
}

BOOST_AUTO_TEST_CASE(did_key_vectors_from_seeds) {
    const auto& dids = did_key_seed_vectors;
    for (std::uint8_t i = 0; i < 5; ++i) {
        lb::ed25519_seed seed{};
        seed[31] = i;
        BOOST_TEST(lb::sodium_ed25519_key::from_seed(seed).did() == dids[i]);
        BOOST_TEST(lb::sodium_ed25519_signer(lb::sodium_ed25519_key::from_seed(seed)).did() == dids[i]);
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sodium_keys)

BOOST_AUTO_TEST_CASE(generated_keys_are_distinct_and_sign) {
    const auto a = lb::sodium_ed25519_key::generate();
    const auto b = lb::sodium_ed25519_key::generate();
    BOOST_TEST(a.did() != b.did());
    BOOST_TEST(a.verify("m", a.sign("m")));
    BOOST_TEST(!b.verify("m", a.sign("m")));
    const auto copy = a; // shares the secret
    BOOST_TEST(copy.did() == a.did());
    BOOST_TEST((lb::sodium_ed25519_key::from_seed(a.seed()).public_key() == a.public_key()));
}

BOOST_AUTO_TEST_CASE(seed_files_round_trip_with_owner_only_mode) {
    const auto key = lb::sodium_ed25519_key::generate();
    const auto dir = scratch("sodium_keys");
    std::filesystem::create_directories(dir);
    { std::ofstream(dir / "k.seed") << "old, world-readable"; }
    std::filesystem::permissions(dir / "k.seed", std::filesystem::perms::all);
    key.save_seed_file(dir / "k.seed");
    struct stat st{};
    BOOST_TEST_REQUIRE(::stat((dir / "k.seed").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u);
    BOOST_TEST(std::filesystem::file_size(dir / "k.seed") == 32u);
    BOOST_TEST(lb::sodium_ed25519_key::load_seed_file(dir / "k.seed").did() == key.did());
}

BOOST_AUTO_TEST_CASE(bad_key_material_is_rejected_with_the_reason) {
    std::vector<std::uint8_t> short_seed(31, 1);
    BOOST_TEST(throws_code([&] { lb::sodium_ed25519_key::from_seed(std::span<const std::uint8_t>(short_seed)); },
                           lb::errc::invalid_argument, "a seed is 32 bytes, got 31"));
    std::vector<std::uint8_t> empty;
    BOOST_TEST(throws_code([&] { lb::sodium_ed25519_key::from_seed(std::span<const std::uint8_t>(empty)); },
                           lb::errc::invalid_argument, "got 0"));
    const auto dir = scratch("sodium_badkeys");
    std::filesystem::create_directories(dir);
    { std::ofstream(dir / "short.seed", std::ios::binary) << std::string(31, 'x'); }
    { std::ofstream(dir / "long.seed", std::ios::binary) << std::string(40, 'x'); }
    BOOST_TEST(throws_code([&] { lb::sodium_ed25519_key::load_seed_file(dir / "short.seed"); },
                           lb::errc::invalid_argument, "holds 31 bytes, not a 32-byte Ed25519 seed"));
    BOOST_TEST(throws_code([&] { lb::sodium_ed25519_key::load_seed_file(dir / "long.seed"); },
                           lb::errc::invalid_argument, "holds 33+ bytes"));
    BOOST_TEST(throws_code([&] { lb::sodium_ed25519_key::load_seed_file(dir / "missing.seed"); },
                           lb::errc::not_found, "cannot open"));
    BOOST_TEST(throws_code([&] { test_key(1).save_seed_file(dir / "no" / "such" / "dir.seed"); },
                           lb::errc::io_error, "cannot create"));
}

// A seed save cut short (the file-size limit, as a full disk would) leaves the old seed.
BOOST_AUTO_TEST_CASE(a_failed_seed_save_leaves_the_old_file_as_it_was) {
    const auto dir = scratch("sodium_failed_save");
    std::filesystem::create_directories(dir);
    test_key(5).save_seed_file(dir / "k.seed");
    const auto error = throws_with_file_size_limit(16, [&] { test_key(6).save_seed_file(dir / "k.seed"); });
    BOOST_TEST_REQUIRE(error.has_value());
    BOOST_TEST((error->code() == lb::errc::io_error), error->what());
    BOOST_TEST(std::string(error->what()).find("cannot write '" + (dir / "k.seed").string()) != std::string::npos,
               error->what());
    BOOST_TEST(lb::sodium_ed25519_key::load_seed_file(dir / "k.seed").did() == test_key(5).did());
    BOOST_TEST(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sodium_events)

BOOST_AUTO_TEST_CASE(sign_event_and_verify) {
    const lb::sodium_ed25519_signer signer(test_key(7));
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("hi"));
    e.session_id = "s1";
    e.sequence = 1;
    signer.sign_event(e);
    BOOST_TEST(e.is_signed());
    BOOST_TEST(e.signer_did == signer.did());
    BOOST_TEST(e.signature->size() == 86u);
    BOOST_TEST(e.signature->find_first_of("+/=") == std::string::npos);
    lb::sodium_ed25519_verifier v;
    BOOST_TEST(!lb::verify_signature(e, v));
    lb::event again = e;
    signer.sign_event(again);
    BOOST_TEST(*again.signature == *e.signature); // deterministic
    lb::event padded = e;
    *padded.signature += "==";
    BOOST_TEST(!lb::verify_signature(padded, v));
    lb::event t = e;
    std::get<lb::text_part>(t.content.parts[0]).text = "ho";
    BOOST_TEST(lb::verify_signature(t, v) == lb::errc::bad_signature);
    t = e;
    t.signer_did = lb::sodium_ed25519_signer(test_key(8)).did();
    BOOST_TEST(lb::verify_signature(t, v) == lb::errc::bad_signature);
    t = e;
    t.signature.reset();
    BOOST_TEST(lb::verify_signature(t, v) == lb::errc::missing_field);
}

BOOST_AUTO_TEST_CASE(verifier_reports_why) {
    const lb::sodium_ed25519_signer alice(test_key(1)), bob(test_key(2));
    const std::string sig = alice.sign("payload");
    lb::sodium_ed25519_verifier v;
    BOOST_TEST(!v.verify("payload", sig, alice.did()));
    BOOST_TEST(v.verify("payload!", sig, alice.did()) == lb::errc::bad_signature);
    BOOST_TEST(v.verify("payload", sig, bob.did()) == lb::errc::bad_signature);
    BOOST_TEST(!v.verify("payload", bob.sign("payload"), bob.did())); // the cache follows the DID
    BOOST_TEST(!v.verify("payload", sig, alice.did()));
    BOOST_TEST(v.verify("payload", sig, "did:web:x") == lb::errc::invalid_argument);
    BOOST_TEST(v.verify("payload", sig, "did:key:zBAD") == lb::errc::invalid_argument);
    BOOST_TEST(v.verify("payload", sig.substr(0, 80), alice.did()) == lb::errc::invalid_argument);
    std::string std_b64 = sig;
    std_b64[0] = '+';
    BOOST_TEST(v.verify("payload", std_b64, alice.did()) == lb::errc::invalid_argument);
    std::string stray = sig;
    stray.back() = 'B'; // the last character carries 4 unused bits, which must be zero
    BOOST_TEST(v.verify("payload", stray, alice.did()) == lb::errc::invalid_argument);
    BOOST_TEST(v.verify("payload", "", alice.did()) == lb::errc::invalid_argument);
    // The identity point (y = 1) is a well-formed did:key but a small-order key: malformed.
    lb::ed25519_public_key identity{};
    identity[0] = 1;
    BOOST_TEST(v.verify("payload", sig, lb::did_key_from_ed25519(identity)) == lb::errc::invalid_argument);
    BOOST_TEST(!v.verify("payload", sig, alice.did())); // and the verifier still works after it
}

// Signature text is 86 characters, or 88 ending in "=="; any other padding is malformed.
BOOST_AUTO_TEST_CASE(padding_is_two_equals_signs_on_88_characters_or_none) {
    check_signature_padding<lb::sodium_ed25519_verifier>(lb::sodium_ed25519_signer(test_key(1)));
}

// Small-order keys (which verify signatures made without a secret) and y >= p: malformed
// signers, the same answer as the OpenSSL back end's.
BOOST_AUTO_TEST_CASE(a_small_order_or_non_canonical_did_key_is_malformed_and_forges_nothing) {
    const std::string forged = forged_identity_signature();
    lb::sodium_ed25519_verifier v;
    check_weak_keys_refused<lb::sodium_ed25519_verifier>(lb::sodium_ed25519_signer(test_key(1)),
                                                         [](const auto&... a) { return lb::sodium_ed25519_verify(a...); });
    lb::session s;
    s.id = "s1";
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("forged"));
    lb::chain_event(s, e);
    lb::ed25519_public_key identity{};
    identity[0] = 1;
    e.signer_did = lb::did_key_from_ed25519(identity);
    e.signature = forged;
    BOOST_TEST((lb::verify_signature(e, v) == lb::errc::invalid_argument));
    s.events.push_back(e);
    s.last_sequence = 1;
    const auto r = lb::verify_transcript(s, v);
    BOOST_TEST((r.reason == lb::transcript_fault::bad_signer), r.message);
}

BOOST_AUTO_TEST_CASE(transcripts_verify_and_tampering_is_found) {
    const lb::sodium_ed25519_signer signer(test_key(3));
    const lb::session s = signed_session(12, signer);
    const auto ok = check(s, signer);
    BOOST_TEST(ok.ok, ok.message);
    BOOST_TEST(ok.checked == 12u);
    {
        const lb::session big = signed_session(64, signer);
        lb::session bad = big;
        bad.events.modify(40).actions.state_delta["k"] = -1;
        lb::sodium_ed25519_verifier v;
        lb::transcript_options o;
        o.trusted_dids = {std::string(signer.did())};
        o.threads = 2;
        BOOST_TEST(lb::verify_transcript(big, v, o).ok);
        const auto r = lb::verify_transcript(bad, v, o);
        BOOST_TEST(r.index == 40u);
        BOOST_TEST((r.reason == lb::transcript_fault::bad_signature));
    }

    lb::session t = s;
    std::get<lb::text_part>(t.events.modify(5).content.parts[0]).text += "!";
    auto r = check(t, signer);
    BOOST_TEST(!r.ok);
    BOOST_TEST(r.index == 5u);
    BOOST_TEST((r.reason == lb::transcript_fault::bad_signature));

    t = s;
    t.events.modify(7).actions.state_delta["k"] = 99;
    r = check(t, signer);
    BOOST_TEST(!r.ok);
    BOOST_TEST(r.index == 7u);

    t = s;
    t.events.erase(t.events.begin() + 4);
    r = check(t, signer);
    BOOST_TEST(!r.ok);
    BOOST_TEST(r.index == 4u);

    t = s;
    t.events.swap_events(2, 3);
    r = check(t, signer);
    BOOST_TEST(!r.ok);
    BOOST_TEST(r.index == 2u);

    // Re-signed by another key: every signature verifies, but the signer is not trusted.
    const lb::sodium_ed25519_signer mallory(test_key(9));
    t = s;
    std::get<lb::text_part>(t.events.modify(0).content.parts[0]).text = "forged";
    mallory.sign_event(t.events.modify(0));
    r = check(t, signer);
    BOOST_TEST(!r.ok);
    BOOST_TEST(r.index == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

#ifdef LIBRETTO_TEST_HAVE_OPENSSL
BOOST_AUTO_TEST_SUITE(sodium_and_openssl)

// Ed25519 is deterministic: both back ends must produce the same bytes for the same seed
// and message, and accept each other's signatures and transcripts.
BOOST_AUTO_TEST_CASE(both_back_ends_agree_byte_for_byte) {
    std::mt19937_64 rng(20261122);
    for (int round = 0; round < 50; ++round) {
        lb::ed25519_seed seed;
        for (auto& b : seed) b = static_cast<std::uint8_t>(rng());
        const auto sk = lb::sodium_ed25519_key::from_seed(seed);
        const auto ok = lb::ed25519_key::from_seed(seed);
        BOOST_TEST_REQUIRE((sk.public_key() == ok.public_key()));
        BOOST_TEST(sk.did() == ok.did());
        std::string msg(rng() % 2000, '\0');
        for (auto& c : msg) c = static_cast<char>(rng());
        const auto a = sk.sign(msg);
        const auto b = ok.sign(msg);
        BOOST_TEST((a == b));
        BOOST_TEST(ok.verify(msg, a));
        BOOST_TEST(sk.verify(msg, b));
    }
}

BOOST_AUTO_TEST_CASE(transcripts_cross_verify) {
    const lb::sodium_ed25519_signer signer(test_key(4));
    const lb::session s = signed_session(6, signer);
    lb::ed25519_verifier ov;
    lb::transcript_options o;
    o.trusted_dids = {std::string(signer.did())};
    const auto r = lb::verify_transcript(s, ov, o);
    BOOST_TEST(r.ok, r.message);
    // On several threads, each with its own copy of the verifier (an ed25519_verifier copy
    // decodes its own key).
    const lb::session big = signed_session(80, signer);
    o.threads = 3;
    const auto par = lb::verify_transcript(big, ov, o);
    BOOST_TEST(par.ok, par.message);
    BOOST_TEST(par.checked == 80u);
    lb::session bad = big;
    std::get<lb::text_part>(bad.events.modify(61).content.parts[0]).text += "?";
    const auto rp = lb::verify_transcript(bad, ov, o);
    BOOST_TEST(!rp.ok);
    BOOST_TEST(rp.index == 61u);
    BOOST_TEST((rp.reason == lb::transcript_fault::bad_signature));
    const lb::ed25519_signer osigner(lb::ed25519_key::from_seed(test_key(4).seed()));
    lb::event e = s.events.back();
    lb::event e2 = e;
    osigner.sign_event(e2);
    BOOST_TEST(*e2.signature == *e.signature);
}

BOOST_AUTO_TEST_SUITE_END()
#endif
