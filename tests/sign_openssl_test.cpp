// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// sign/ed25519_openssl.hpp: RFC 8032 vectors, keys (seed, PEM, files), the signer and the
// verifier, and signed runner turns: every stored event signed (user messages and
// compaction summaries too), temp: keys, per-agent keys, and a chain that continues across
// a restart on the same jsonl directory.
#include <libretto/sign/ed25519_openssl.hpp>

#include <libretto/runner/runner.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/compaction/any_strategy.hpp>
#include <libretto/sign/any_signer.hpp>
#include <libretto/sign/per_agent_signer.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/detail/jsonl_format.hpp>
#include <libretto/store/detail/jsonl_engine.hpp> // the engine's helpers (not in jsonl_store.hpp with separate compilation)
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include "ed25519_test_support.hpp"
#include "runner_test_support.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;
namespace json = boost::json;

using namespace ed25519_test;

// ---- a scripted agent -------------------------------------------------------------------

struct leaf {
    std::string name_;
    std::string_view name() const { return name_; }
    std::string_view description() const { return "a test agent"; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
};

/// A tool call, its response (with a state delta that includes a temp: key) and an answer.
struct tool_agent : leaf {
    std::string answer = "done";
    lb::event_stream run(lb::invocation_context ctx) const {
        std::vector<lb::event> v;
        auto make = [&](lb::event_type t, lb::content c) {
            lb::event e = lb::event::make(t, name_, std::move(c));
            e.invocation_id = ctx.invocation_id();
            e.branch = ctx.branch();
            return e;
        };
        lb::content call;
        call.parts.emplace_back(lb::tool_call_part{"c1", "lookup", json::parse(R"({"q":"Oslo","n":9007199254740993})").as_object(), {}});
        lb::event e1 = make(lb::event_type::agent_message, std::move(call));
        e1.usage = lb::usage{100, 7, "m-1"};
        v.push_back(std::move(e1));
        lb::content resp;
        resp.parts.emplace_back(lb::tool_response_part{"c1", "lookup", json::parse(R"({"temp":-3.25,"ok":true})"), std::nullopt, {}});
        lb::event e2 = make(lb::event_type::tool_response, std::move(resp));
        e2.actions.state_delta["city"] = "Oslo";
        e2.actions.state_delta["temp:scratch"] = 1;
        e2.actions.state_delta["user:lang"] = "nb";
        e2.metadata["latency_ms"] = 12.5;
        v.push_back(std::move(e2));
        lb::event partial = make(lb::event_type::agent_message, lb::content::from_text("do"));
        partial.partial = true;
        v.push_back(std::move(partial));
        v.push_back(make(lb::event_type::agent_message, lb::content::from_text(answer)));
        return lb::make_stream(ctx.get_executor(), std::move(v));
    }
};

/// Summarises everything but the last two events, every turn.
struct every_turn_compaction {
    std::optional<lb::compaction_plan> plan(const lb::session_view& v) const {
        const auto& ev = v.session.events;
        if (ev.size() < 3) return std::nullopt;
        return lb::compaction_plan{ev.front().sequence, ev[ev.size() - 3].sequence};
    }
    asio::awaitable<std::optional<lb::event>> async_compact(const lb::session_view&, lb::compaction_plan p) const {
        lb::event e = lb::event::make(lb::event_type::agent_message, "compaction", lb::content::from_text("summary"));
        e.actions.compaction = lb::event_compaction{p.first_sequence, p.last_sequence, 0, 0, "summary", 1};
        co_return e;
    }
};

/// Every event of the turn, partial ones included (run_to_end's on_event sees them all); a
/// failure is thrown.
std::vector<lb::event> run_turn(asio::io_context&, lb::event_stream s) {
    std::vector<lb::event> all;
    lb::run_to_end_options o;
    o.on_event = [&all](const lb::event& e) { all.push_back(e); };
    lb::turn_result r = lb::run_to_end(std::move(s), std::move(o));
    if (!r.ok()) throw lb::error_with_diagnostics(r.error, r.diag);
    return all;
}

template <class Store>
lb::session load(asio::io_context& io, Store& st, lb::get_options go = {}) {
    std::optional<lb::session> out = runner_support::load_session(io, st, "s1", std::move(go));
    BOOST_TEST_REQUIRE(out.has_value());
    return std::move(*out);
}

lb::run_options opts() { return runner_support::run_opts(); }

lb::ed25519_key test_key(std::uint8_t fill) {
    lb::ed25519_seed s;
    s.fill(fill);
    return lb::ed25519_key::from_seed(s);
}

} // namespace

BOOST_AUTO_TEST_SUITE(ed25519_rfc8032)

// RFC 8032 §7.1, TEST 1 to TEST 3: the public key of each secret key, the signature of
// each message (Ed25519 is deterministic), and verification.
BOOST_AUTO_TEST_CASE(rfc8032_test_vectors) {
    for (const auto& c : rfc8032_cases) {
        BOOST_TEST_CONTEXT("secret " << c.secret) {
            const auto key = lb::ed25519_key::from_seed(unhex_array<32>(c.secret));
            const auto pub = unhex_array<32>(c.pub);
            BOOST_TEST((key.public_key() == pub));
            BOOST_TEST((key.seed() == unhex_array<32>(c.secret)));
            const std::string msg = as_text(unhex(c.msg));
            const auto sig = unhex_array<64>(c.sig);
            BOOST_TEST((key.sign(msg) == sig));
            BOOST_TEST(key.verify(msg, sig));
            BOOST_TEST(lb::ed25519_verify(pub, msg, sig));
            auto bad = sig;
            bad[10] ^= 0x01;
            BOOST_TEST(!lb::ed25519_verify(pub, msg, bad));
            BOOST_TEST(!lb::ed25519_verify(pub, msg + "x", sig));
        }
    }
}

// The did:key specification's vectors give the Ed25519 seed of each DID.
BOOST_AUTO_TEST_CASE(did_key_vectors_from_seeds) {
    const auto& dids = did_key_seed_vectors;
    for (std::uint8_t i = 0; i < 5; ++i) {
        lb::ed25519_seed seed{};
        seed[31] = i;
        BOOST_TEST(lb::ed25519_key::from_seed(seed).did() == dids[i]);
        BOOST_TEST(lb::ed25519_signer(lb::ed25519_key::from_seed(seed)).did() == dids[i]);
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(ed25519_keys)

BOOST_AUTO_TEST_CASE(generated_keys_are_distinct_and_sign) {
    auto a = lb::ed25519_key::generate();
    auto b = lb::ed25519_key::generate();
    BOOST_TEST(a.did() != b.did());
    BOOST_TEST(a.verify("m", a.sign("m")));
    BOOST_TEST(!b.verify("m", a.sign("m")));
    auto copy = a; // shares the key
    BOOST_TEST(copy.did() == a.did());
}

BOOST_AUTO_TEST_CASE(pem_and_seed_round_trips_and_files) {
    const auto key = lb::ed25519_key::generate();
    const std::string pem = key.to_pem();
    BOOST_TEST(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
    BOOST_TEST((lb::ed25519_key::from_pem(pem).seed() == key.seed()));
    const auto dir = scratch("keys");
    std::filesystem::create_directories(dir);
    key.save_pem_file(dir / "k.pem");
    struct stat st{};
    BOOST_TEST_REQUIRE(::stat((dir / "k.pem").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u);
    BOOST_TEST(lb::ed25519_key::load_pem_file(dir / "k.pem").did() == key.did());
    key.save_seed_file(dir / "k.seed");
    BOOST_TEST(std::filesystem::file_size(dir / "k.seed") == 32u);
    BOOST_TEST(lb::ed25519_key::load_seed_file(dir / "k.seed").did() == key.did());
    // Saving over a world-readable file narrows it.
    { std::ofstream(dir / "wide.pem") << "x"; }
    std::filesystem::permissions(dir / "wide.pem", std::filesystem::perms::all);
    key.save_pem_file(dir / "wide.pem");
    BOOST_TEST_REQUIRE(::stat((dir / "wide.pem").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u);
    // The RFC 8032 TEST 1 key through PEM.
    const auto rfc = lb::ed25519_key::from_seed(unhex_array<32>("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"));
    BOOST_TEST((lb::ed25519_key::from_pem(rfc.to_pem()).public_key() ==
                unhex_array<32>("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")));
}

BOOST_AUTO_TEST_CASE(bad_key_material_is_rejected_with_the_reason) {
    BOOST_TEST(throws_code([] { lb::ed25519_key::from_pem("not a key"); }, lb::errc::invalid_argument,
                           "not an unencrypted PEM private key"));
    BOOST_TEST(throws_code([] { lb::ed25519_key::from_pem(""); }, lb::errc::invalid_argument, "PEM"));
    // An EC P-256 key is a private key, but not Ed25519.
    EVP_PKEY* ec = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    BOOST_TEST_REQUIRE(ec != nullptr);
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, ec, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    const std::string ec_pem(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    EVP_PKEY_free(ec);
    BOOST_TEST(throws_code([&] { lb::ed25519_key::from_pem(ec_pem); }, lb::errc::invalid_argument,
                           "not an Ed25519 key but id-ecPublicKey"));
    std::vector<std::uint8_t> short_seed(31, 1);
    BOOST_TEST(throws_code([&] { lb::ed25519_key::from_seed(std::span<const std::uint8_t>(short_seed)); },
                           lb::errc::invalid_argument, "a seed is 32 bytes, got 31"));
    const auto dir = scratch("badkeys");
    std::filesystem::create_directories(dir);
    { std::ofstream(dir / "short.seed", std::ios::binary) << std::string(31, 'x'); }
    { std::ofstream(dir / "long.seed", std::ios::binary) << std::string(40, 'x'); }
    BOOST_TEST(throws_code([&] { lb::ed25519_key::load_seed_file(dir / "short.seed"); }, lb::errc::invalid_argument,
                           "holds 31 bytes, not a 32-byte Ed25519 seed"));
    BOOST_TEST(throws_code([&] { lb::ed25519_key::load_seed_file(dir / "long.seed"); }, lb::errc::invalid_argument,
                           "holds 33+ bytes"));
    BOOST_TEST(throws_code([&] { lb::ed25519_key::load_pem_file(dir / "missing.pem"); }, lb::errc::not_found,
                           "cannot open"));
    BOOST_TEST(throws_code([&] { test_key(1).save_pem_file(dir / "no" / "such" / "dir.pem"); }, lb::errc::io_error,
                           "cannot create"));
}

// OpenSSL reads PEM text from memory with an int length: text over load_pem_file's 64 KiB is
// refused by its size before OpenSSL sees it (an Ed25519 key's PEM is 119 bytes).
BOOST_AUTO_TEST_CASE(oversized_pem_text_is_refused_by_its_size) {
    const std::string pem = test_key(1).to_pem();
    std::string padded = pem + std::string(65536 - pem.size(), '\n');
    BOOST_TEST(lb::ed25519_key::from_pem(padded).did() == test_key(1).did()); // 64 KiB exactly: read
    padded += '\n';
    BOOST_TEST(throws_code([&] { lb::ed25519_key::from_pem(padded); }, lb::errc::invalid_argument,
                           "PEM text of 65537 bytes, more than the 65536"));
}

// A save writes a new file and renames it over the old one: the result is the new key alone,
// mode 0600, and no temporary file is left next to it.
BOOST_AUTO_TEST_CASE(saving_over_a_key_file_replaces_it_whole_with_mode_0600) {
    const auto dir = scratch("replace_keys");
    std::filesystem::create_directories(dir);
    const auto old_key = test_key(21), new_key = test_key(22);
    old_key.save_pem_file(dir / "k.pem");
    std::filesystem::permissions(dir / "k.pem", std::filesystem::perms::all);
    new_key.save_pem_file(dir / "k.pem");
    struct stat st{};
    BOOST_TEST_REQUIRE(::stat((dir / "k.pem").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u);
    BOOST_TEST(file_text(dir / "k.pem") == new_key.to_pem());
    new_key.save_seed_file(dir / "k.seed");
    old_key.save_seed_file(dir / "k.seed");
    BOOST_TEST(lb::ed25519_key::load_seed_file(dir / "k.seed").did() == old_key.did());
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    BOOST_TEST((names == std::vector<std::string>{"k.pem", "k.seed"}));
}

// A save that fails part way (here the file-size limit cuts the write short, as a full disk
// would) leaves the previous key as it was, and says which file and which step failed.
BOOST_AUTO_TEST_CASE(a_failed_save_leaves_the_old_key_file_as_it_was) {
    const auto dir = scratch("failed_save_keys");
    std::filesystem::create_directories(dir);
    const auto old_key = test_key(23);
    old_key.save_pem_file(dir / "k.pem");
    const std::string before = file_text(dir / "k.pem");
    const auto error = throws_with_file_size_limit(16, [&] { test_key(24).save_pem_file(dir / "k.pem"); });
    BOOST_TEST_REQUIRE(error.has_value());
    BOOST_TEST((error->code() == lb::errc::io_error), error->what());
    BOOST_TEST(std::string(error->what()).find("cannot write") != std::string::npos, error->what());
    BOOST_TEST(std::string(error->what()).find((dir / "k.pem").string()) != std::string::npos, error->what());
    BOOST_TEST(file_text(dir / "k.pem") == before);
    BOOST_TEST(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);
    // A directory the process may not write to: the old key stays (root may write anywhere).
    if (::geteuid() != 0) {
        std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
        BOOST_TEST(throws_code([&] { test_key(24).save_pem_file(dir / "k.pem"); }, lb::errc::io_error,
                               (dir / "k.pem").string()));
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
        BOOST_TEST(file_text(dir / "k.pem") == before);
    } else {
        BOOST_TEST_MESSAGE("running as root: the read-only directory case is skipped");
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(ed25519_events)

BOOST_AUTO_TEST_CASE(sign_event_and_verify_signature) {
    const lb::ed25519_signer signer(test_key(7));
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("hi"));
    e.session_id = "s1";
    e.sequence = 1;
    BOOST_TEST(!lb::verify_signature(e)); // unsigned
    signer.sign_event(e);
    BOOST_TEST(e.is_signed());
    BOOST_TEST(e.signer_did == signer.did());
    BOOST_TEST(e.signature->size() == 86u); // 64 bytes, unpadded base64url
    BOOST_TEST(e.signature->find_first_of("+/=") == std::string::npos);
    BOOST_TEST(lb::verify_signature(e));
    // Deterministic: the same event signs to the same bytes.
    lb::event again = e;
    signer.sign_event(again);
    BOOST_TEST(*again.signature == *e.signature);
    // Padded base64url (orxhestra's form) is accepted too.
    lb::event padded = e;
    *padded.signature += "==";
    BOOST_TEST(lb::verify_signature(padded));

    lb::event t = e;
    std::get<lb::text_part>(t.content.parts[0]).text = "ho";
    BOOST_TEST(!lb::verify_signature(t));
    t = e;
    t.signer_did = lb::ed25519_signer(test_key(8)).did(); // claimed by another key
    BOOST_TEST(!lb::verify_signature(t));
    t = e;
    t.signer_did = "did:key:zBAD";
    BOOST_TEST(!lb::verify_signature(t));
    t = e;
    t.metadata["x"] = std::numeric_limits<double>::infinity();
    BOOST_TEST(!lb::verify_signature(t));
}

BOOST_AUTO_TEST_CASE(verifier_reports_why) {
    const lb::ed25519_signer alice(test_key(1)), bob(test_key(2));
    const std::string sig = alice.sign("payload");
    lb::ed25519_verifier v;
    BOOST_TEST(!v.verify("payload", sig, alice.did()));
    BOOST_TEST(v.verify("payload!", sig, alice.did()) == lb::errc::bad_signature);
    BOOST_TEST(v.verify("payload", sig, bob.did()) == lb::errc::bad_signature);
    BOOST_TEST(!v.verify("payload", bob.sign("payload"), bob.did())); // the cache follows the DID
    BOOST_TEST(!v.verify("payload", sig, alice.did()));
    BOOST_TEST(v.verify("payload", sig, "did:web:x") == lb::errc::invalid_argument);
    BOOST_TEST(v.verify("payload", sig.substr(0, 80), alice.did()) == lb::errc::invalid_argument);
    std::string std_b64 = sig;
    std_b64[0] = '+';
    BOOST_TEST(v.verify("payload", std_b64, alice.did()) == lb::errc::invalid_argument);
    std::string stray = sig;
    stray.back() = 'B'; // the last character carries 4 unused bits, which must be zero
    BOOST_TEST(v.verify("payload", stray, alice.did()) == lb::errc::invalid_argument);
    BOOST_TEST(v.verify("payload", "", alice.did()) == lb::errc::invalid_argument);
}

// Signature text is 86 characters, or 88 ending in "==" (orxhestra's padded form); any
// other padding is malformed.
BOOST_AUTO_TEST_CASE(padding_is_two_equals_signs_on_88_characters_or_none) {
    check_signature_padding<lb::ed25519_verifier>(lb::ed25519_signer(test_key(1)));
}

// A small-order public key verifies a signature without anyone's secret (the identity with
// R = B, S = 1 verifies every payload), and a key with y >= p is no canonical encoding:
// both are malformed signers, as with libsodium, and a transcript of such events fails.
BOOST_AUTO_TEST_CASE(a_small_order_or_non_canonical_did_key_is_malformed_and_forges_nothing) {
    const std::string forged = forged_identity_signature();
    check_weak_keys_refused<lb::ed25519_verifier>(lb::ed25519_signer(test_key(1)),
                                                  [](const auto&... a) { return lb::ed25519_verify(a...); });
    // An event "signed" so: not valid, and a transcript of it has a bad signer.
    lb::session s;
    s.id = "s1";
    lb::event e = lb::event::make(lb::event_type::agent_message, "a", lb::content::from_text("forged"));
    lb::chain_event(s, e);
    lb::ed25519_public_key identity{};
    identity[0] = 1;
    e.signer_did = lb::did_key_from_ed25519(identity);
    e.signature = forged;
    BOOST_TEST(!lb::verify_signature(e));
    s.events.push_back(e);
    s.last_sequence = 1;
    const auto r = lb::verify_transcript(s);
    BOOST_TEST(!r.ok);
    BOOST_TEST((r.reason == lb::transcript_fault::bad_signer), r.message);
    lb::transcript_options o;
    o.trusted_dids = {e.signer_did}; // trusting the DID does not make it a key
    BOOST_TEST((lb::verify_transcript(s, o).reason == lb::transcript_fault::bad_signer));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(signed_runner)

// Two turns of tool_agent under every_turn_compaction, signed by `signer`: 2 x (user, call,
// response, answer, summary), every event signed and verifying, no temp: state stored, and
// the transcript verifies.
static void check_two_signed_compacted_turns(const lb::session& s, const lb::ed25519_signer& signer) {
    BOOST_TEST_REQUIRE(s.events.size() == 10u);
    for (const auto& e : s.events) {
        BOOST_TEST_CONTEXT("sequence " << e.sequence) {
            BOOST_TEST(e.is_signed());
            BOOST_TEST(e.signer_did == signer.did());
            BOOST_TEST(lb::verify_signature(e));
            BOOST_TEST(!e.actions.state_delta.contains("temp:scratch"));
        }
    }
    BOOST_TEST((s.events[0].type == lb::event_type::user_message));
    BOOST_TEST(s.events[4].is_compaction());
    BOOST_TEST(s.events[9].is_compaction());
    lb::transcript_options o;
    o.trusted_dids = {std::string(signer.did())};
    const auto report = lb::verify_transcript(s, o);
    BOOST_TEST(report.ok, report.message);
    BOOST_TEST(report.checked == 10u);
}

// Every stored event is signed (the user message and the compaction summary too), the
// stored transcript verifies, and what the caller got equals what was stored.
BOOST_AUTO_TEST_CASE(every_stored_event_is_signed_and_the_transcript_verifies) {
    asio::io_context io;
    lb::memory_store store(io.get_executor());
    tool_agent a;
    a.name_ = "assistant";
    const lb::ed25519_signer signer(test_key(3));
    lb::runner r{a, store, every_turn_compaction{}, signer};
    auto t1 = run_turn(io, r.run(opts(), "weather?"));
    auto t2 = run_turn(io, r.run(opts(), "and tomorrow?"));
    const lb::session s = load(io, store);
    check_two_signed_compacted_turns(s, signer);
    // The streamed events are the stored ones (the partial is unsigned and not stored).
    std::vector<lb::event> stored;
    for (const auto& e : t1) {
        if (e.partial) BOOST_TEST(!e.is_signed());
        else stored.push_back(e);
    }
    BOOST_TEST_REQUIRE(stored.size() == 4u); // yield_user_message is off
    for (std::size_t i = 0; i < stored.size(); ++i) BOOST_TEST((stored[i] == s.events[i + 1]));
    // A tail loaded from the store verifies as a tail.
    lb::get_options go;
    go.from_sequence = 4;
    const lb::session tail = load(io, store, go);
    BOOST_TEST(tail.events.front().sequence == 4);
    BOOST_TEST(lb::verify_transcript(tail).reason == lb::transcript_fault::missing_event);
    lb::transcript_options to;
    to.first_sequence = 0;
    BOOST_TEST(lb::verify_transcript(tail, to).ok);
    // Tampering with the stored copy is caught.
    lb::session bad = s;
    std::get<lb::tool_response_part>(bad.events.modify(2).content.parts[0]).result = "forged";
    const auto br = lb::verify_transcript(bad);
    BOOST_TEST(br.reason == lb::transcript_fault::bad_signature);
    BOOST_TEST(br.sequence == 3);
}

// The chain continues across processes: a new store and runner on the same directory link
// the next turn's first event to the last stored signature.
BOOST_AUTO_TEST_CASE(the_chain_survives_a_restart) {
    const auto dir = scratch("restart_sessions");
    lb::jsonl_store_options so;
    so.directory = dir;
    const lb::ed25519_signer signer(test_key(4));
    tool_agent a;
    a.name_ = "assistant";
    std::string last_signature;
    {
        asio::io_context io;
        lb::jsonl_store store(io.get_executor(), so);
        lb::runner r{a, store, lb::no_compaction{}, signer};
        run_turn(io, r.run(opts(), "first"));
        last_signature = *load(io, store).events.back().signature;
    }
    {
        asio::io_context io;
        lb::jsonl_store store(io.get_executor(), so); // "another process"
        lb::runner r{a, store, lb::no_compaction{}, signer};
        run_turn(io, r.run(opts(), "second"));
        const lb::session s = load(io, store);
        BOOST_TEST_REQUIRE(s.events.size() == 8u);
        BOOST_TEST(s.events[4].sequence == 5);
        BOOST_TEST(s.events[4].prev_signature.value_or("") == last_signature);
        const auto report = lb::verify_transcript(s);
        BOOST_TEST(report.ok, report.message);
    }
    {
        // Read back by a third instance: still verifies (temp: keys, large integers,
        // doubles, all as stored).
        asio::io_context io;
        lb::jsonl_store store(io.get_executor(), so);
        const lb::session s = load(io, store);
        BOOST_TEST(lb::verify_transcript(s).ok);
        BOOST_TEST(s.events[1].tool_input()->at("n").as_int64() == 9007199254740993);
    }
}

// Each agent signs with its own key; the user message and everything by authors without a
// key of their own is signed by the fallback. One chain throughout.
BOOST_AUTO_TEST_CASE(each_agent_signs_with_its_own_did) {
    asio::io_context io;
    lb::memory_store store(io.get_executor());
    tool_agent researcher, writer;
    researcher.name_ = "researcher";
    writer.name_ = "writer";
    writer.answer = "written";
    lb::sequential_agent pipeline{"pipeline", researcher, writer};
    const lb::ed25519_signer host(test_key(10)), rk(test_key(11)), wk(test_key(12));
    lb::per_agent_signer signers{host};
    signers.add("researcher", rk).add("writer", wk);
    BOOST_TEST(signers.did() == host.did());
    lb::runner r{pipeline, store, lb::no_compaction{}, signers};
    run_turn(io, r.run(opts(), "write about Oslo"));
    const lb::session s = load(io, store);
    BOOST_TEST_REQUIRE(s.events.size() >= 7u);
    int by_r = 0, by_w = 0;
    for (const auto& e : s.events) {
        BOOST_TEST_CONTEXT(e.author << " " << e.sequence) {
            BOOST_TEST(e.is_signed());
            if (e.author == "researcher") {
                BOOST_TEST(e.signer_did == rk.did());
                ++by_r;
            } else if (e.author == "writer") {
                BOOST_TEST(e.signer_did == wk.did());
                ++by_w;
            } else {
                BOOST_TEST(e.signer_did == host.did());
            }
        }
    }
    BOOST_TEST(by_r == 3);
    BOOST_TEST(by_w == 3);
    lb::transcript_options o;
    o.trusted_dids = {std::string(host.did()), std::string(rk.did()), std::string(wk.did())};
    BOOST_TEST(lb::verify_transcript(s, o).ok);
    o.trusted_dids.pop_back(); // the writer is not trusted
    const auto report = lb::verify_transcript(s, o);
    BOOST_TEST(report.reason == lb::transcript_fault::untrusted_signer);
    BOOST_TEST(s.events[report.index].author == "writer");
    // An empty any_signer signs nothing.
    lb::any_signer none;
    BOOST_TEST(!none);
    BOOST_TEST(none.did().empty());
    lb::event e;
    none.sign_event(e);
    BOOST_TEST(!e.is_signed());
}

// Every policy chosen at run time (any_store, any_strategy, any_signer: the runner whose
// turns separate compilation builds once): signed and compacted like the typed runner above;
// empty wrappers sign nothing and never compact.
BOOST_AUTO_TEST_CASE(a_runner_of_type_erased_policies_signs_and_compacts_like_the_typed_one) {
    asio::io_context io;
    lb::any_store store(lb::memory_store(io.get_executor()));
    tool_agent a;
    a.name_ = "assistant";
    const lb::ed25519_signer signer(test_key(3));
    lb::runner r{a, store, lb::any_strategy{every_turn_compaction{}}, lb::any_signer{signer}};
    static_assert(std::is_same_v<decltype(r), lb::runner<tool_agent, lb::any_store, lb::any_strategy, lb::any_signer>>);
    run_turn(io, r.run(opts(), "weather?"));
    run_turn(io, r.run(opts(), "and tomorrow?"));
    check_two_signed_compacted_turns(load(io, store), signer);

    // Empty wrappers: nothing signed, nothing compacted (another session of the same store).
    lb::runner plain{a, store, lb::any_strategy{}, lb::any_signer{}};
    run_turn(io, plain.run(runner_support::run_opts("s2"), "weather?"));
    run_turn(io, plain.run(runner_support::run_opts("s2"), "and tomorrow?"));
    const std::optional<lb::session> s2 = runner_support::load_session(io, store, "s2");
    BOOST_TEST_REQUIRE(s2.has_value());
    BOOST_TEST_REQUIRE(s2->events.size() == 8u); // 2 x (user, call, response, answer)
    for (const auto& e : s2->events) {
        BOOST_TEST(!e.is_signed());
        BOOST_TEST(!e.is_compaction());
    }
}

// Tampering with the stored bytes: the jsonl line's CRC-32C catches an accidental change,
// but anyone can recompute it; the signature is what an edit cannot get past.
BOOST_AUTO_TEST_CASE(an_edit_of_the_jsonl_file_with_a_fixed_crc_fails_verification) {
    const auto dir = scratch("tampered_sessions");
    lb::jsonl_store_options so;
    so.directory = dir;
    const lb::ed25519_signer signer(test_key(5));
    tool_agent a;
    a.name_ = "assistant";
    {
        asio::io_context io;
        lb::jsonl_store store(io.get_executor(), so);
        lb::runner r{a, store, lb::no_compaction{}, signer};
        run_turn(io, r.run(opts(), "balance?"));
    }
    const auto file = dir / "apps" / "app" / "users" / "u1" / "sessions" / "s1" / "transcript.jsonl";
    std::vector<std::string> lines;
    {
        std::ifstream in(file, std::ios::binary);
        for (std::string l; std::getline(in, l);) lines.push_back(l);
    }
    BOOST_TEST_REQUIRE(lines.size() == 5u); // header + 4 events; line 3 holds the tool result
    const std::size_t at = lines[3].find("\"temp\":-3.25");
    BOOST_TEST_REQUIRE(at != std::string::npos);
    std::string forged = lines[3];
    forged.replace(at, 13, "\"temp\":-9.25"); // same length: no index entry moves
    auto write = [&](const std::string& line3) {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        for (std::size_t i = 0; i < lines.size(); ++i) out << (i == 3 ? line3 : lines[i]) << '\n';
    };
    // 1. Without fixing the checksum: the store itself refuses the line (a bad line before
    // a good one is damage, not a torn tail).
    write(forged);
    {
        asio::io_context io;
        lb::jsonl_store store(io.get_executor(), so);
        std::exception_ptr failure;
        std::optional<lb::session> out;
        asio::co_spawn(io, runner_support::load_into(&store, lb::session_key{"app", "u1", "s1"}, lb::get_options{}, &out), [&](std::exception_ptr e) { failure = e; });
        io.run();
        BOOST_TEST_REQUIRE(static_cast<bool>(failure));
        try {
            std::rethrow_exception(failure);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == lb::errc::corrupt_data);
        }
    }
    // 2. With the checksum recomputed, the store reads it; the signature does not verify.
    std::string body = forged.substr(0, forged.size() - lb::detail::jsonl::frame_tail) + "}";
    lb::detail::jsonl::frame_line(body);
    body.pop_back(); // the '\n'
    write(body);
    {
        asio::io_context io;
        lb::jsonl_store store(io.get_executor(), so);
        const lb::session s = load(io, store);
        BOOST_TEST_REQUIRE(s.events.size() == 4u);
        BOOST_TEST(s.events[2].tool_responses().front().result.at("temp").as_double() == -9.25);
        const auto report = lb::verify_transcript(s);
        BOOST_TEST(report.reason == lb::transcript_fault::bad_signature);
        BOOST_TEST(report.sequence == 3);
    }
}

BOOST_AUTO_TEST_SUITE_END()

