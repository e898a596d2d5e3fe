// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// sign/signable_payload.hpp and sign/transcript.hpp, with the stand-in signer of
// sign_test_support.hpp (no OpenSSL needed): what the payload covers, chaining, and the
// transcript verifier's verdicts on tampered transcripts.
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/transcript.hpp>

#include "sign_test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>
#include <boost/system/system_error.hpp>

#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace json = boost::json;
using namespace libretto;
using sign_test::checksum_signer;
using sign_test::checksum_verifier;

namespace {

event rich_event() {
    event e;
    e.id = "e-1";
    e.timestamp = 1700000000.5;
    e.invocation_id = "inv-1";
    e.session_id = "s1";
    e.author = "assistant";
    e.branch = "root.assistant";
    e.type = event_type::agent_message;
    e.content.parts.emplace_back(text_part{"Hello", {}});
    e.content.parts.emplace_back(thinking_part{"hmm", {}});
    e.content.parts.emplace_back(tool_call_part{"c1", "weather", json::parse(R"({"city":"Oslo"})").as_object(), {}});
    e.content.parts.emplace_back(tool_response_part{"c1", "weather", json::parse(R"({"temp":-3.5})"), std::nullopt, {}});
    e.actions.state_delta["k"] = 1;
    e.metadata["trace"] = "t-9";
    e.usage = usage{10, 20, "m-1"};
    return e;
}

/// A session of `n` signed events, chained as the runner chains them.
session signed_session(int n, const checksum_signer& signer = {}) {
    session s;
    s.id = "s1";
    for (int i = 1; i <= n; ++i) {
        event e = event::make(event_type::agent_message, "a", content::from_text("m" + std::to_string(i)));
        if (i == 2) e.content.parts.emplace_back(tool_response_part{"c", "t", json::value("result"), std::nullopt, {}});
        if (i == 3) e.actions.state_delta["x"] = i;
        chain_event(s, e);
        signer.sign_event(e);
        s.last_sequence = e.sequence;
        s.events.push_back(std::move(e));
    }
    return s;
}

transcript_report check(const session& s, transcript_options o = {}) {
    checksum_verifier v;
    return verify_transcript(s, v, std::move(o));
}

void resign(event& e) { checksum_signer{}.sign_event(e); }

} // namespace

BOOST_AUTO_TEST_SUITE(signable_payload_tests)

// The payload is the canonical JSON of the stored form: written out by hand here.
BOOST_AUTO_TEST_CASE(payload_of_a_small_event) {
    event e;
    e.id = "id1";
    e.sequence = 3;
    e.timestamp = 2.5;
    e.session_id = "s";
    e.author = "bot";
    e.type = event_type::user_message;
    e.content = content::from_text("hi");
    e.signer_did = "did:test:x";
    e.signature = "SIG";
    e.prev_signature = "PREV";
    BOOST_TEST(signable_payload(e) ==
               R"({"author":"bot","content":{"parts":[{"text":"hi","type":"text"}]},"id":"id1",)"
               R"("prev_signature":"PREV","sequence":3,"session_id":"s","signer_did":"did:test:x","timestamp":2.5,)"
               R"("type":"user_message"})");
}

BOOST_AUTO_TEST_CASE(payload_equals_canonical_stored_json_without_signature) {
    event e = rich_event();
    e.signature = "whatever";
    json::value v = encode(e);
    v.get_object().erase("signature");
    BOOST_TEST(signable_payload(e) == canonical_json(v));
    // and the signature never changes it
    event f = e;
    f.signature = "other";
    BOOST_TEST(signable_payload(e) == signable_payload(f));
}

// Every field the store keeps is covered: changing any one changes the payload.
BOOST_AUTO_TEST_CASE(every_stored_field_is_covered) {
    const event base = rich_event();
    const std::string p0 = signable_payload(base);
    std::vector<std::pair<const char*, std::function<void(event&)>>> edits = {
        {"id", [](event& e) { e.id = "e-2"; }},
        {"sequence", [](event& e) { e.sequence = 9; }},
        {"timestamp", [](event& e) { e.timestamp += 1e-6; }},
        {"invocation_id", [](event& e) { e.invocation_id = "inv-2"; }},
        {"session_id", [](event& e) { e.session_id = "s2"; }},
        {"author", [](event& e) { e.author = "mallory"; }},
        {"branch", [](event& e) { e.branch = "root"; }},
        {"type", [](event& e) { e.type = event_type::tool_response; }},
        {"text", [](event& e) { std::get<text_part>(e.content.parts[0]).text = "Hellp"; }},
        {"thinking", [](event& e) { std::get<thinking_part>(e.content.parts[1]).thinking = "hmmm"; }},
        {"tool args", [](event& e) { std::get<tool_call_part>(e.content.parts[2]).args["city"] = "Bergen"; }},
        {"tool result", [](event& e) { std::get<tool_response_part>(e.content.parts[3]).result = json::parse(R"({"temp":3.5})"); }},
        {"tool error", [](event& e) { std::get<tool_response_part>(e.content.parts[3]).error = "boom"; }},
        {"part metadata", [](event& e) { std::get<text_part>(e.content.parts[0]).metadata["x"] = 1; }},
        {"role", [](event& e) { e.content.role = "model"; }},
        {"state_delta", [](event& e) { e.actions.state_delta["k"] = 2; }},
        {"artifact_delta", [](event& e) { e.actions.artifact_delta["f.txt"] = 1; }},
        {"escalate", [](event& e) { e.actions.escalate = true; }},
        {"transfer", [](event& e) { e.actions.transfer_to_agent = "other"; }},
        {"end_of_agent", [](event& e) { e.actions.end_of_agent = true; }},
        {"compaction", [](event& e) { e.actions.compaction = event_compaction{1, 2, 1, 2, "sum", 2}; }},
        {"metadata", [](event& e) { e.metadata["trace"] = "t-10"; }},
        {"usage", [](event& e) { e.usage->output_tokens = 21; }},
        {"signer_did", [](event& e) { e.signer_did = "did:test:bob"; }},
        {"prev_signature", [](event& e) { e.prev_signature = "p"; }},
        {"part order", [](event& e) { std::swap(e.content.parts[0], e.content.parts[1]); }},
    };
    for (auto& [what, edit] : edits) {
        event e = base;
        edit(e);
        BOOST_TEST_CONTEXT(what) { BOOST_TEST(signable_payload(e) != p0); }
    }
}

// Stores drop temp: keys from the stored delta, so the payload leaves them out.
BOOST_AUTO_TEST_CASE(temp_keys_are_not_covered) {
    event e = rich_event();
    const std::string p0 = signable_payload(e);
    e.actions.state_delta["temp:scratch"] = 42;
    BOOST_TEST(signable_payload(e) == p0);
    event only_temp = rich_event();
    only_temp.actions = {};
    const std::string p1 = signable_payload(only_temp);
    only_temp.actions.state_delta["temp:x"] = 1;
    BOOST_TEST(signable_payload(only_temp) == p1); // no empty "actions" left behind
    e.actions.state_delta["app:k"] = 1;             // other scopes are stored: covered
    BOOST_TEST(signable_payload(e) != p0);
}

BOOST_AUTO_TEST_CASE(unrepresentable_values_are_rejected) {
    event e = rich_event();
    e.metadata["bad"] = std::numeric_limits<double>::quiet_NaN();
    BOOST_CHECK_EXCEPTION(signable_payload(e), boost::system::system_error, [](const auto& x) {
        return x.code() == errc::invalid_argument && std::string(x.what()).find("NaN") != std::string::npos;
    });
    event f = rich_event();
    f.content.parts.emplace_back(text_part{"\xff", {}});
    BOOST_CHECK_THROW(signable_payload(f), boost::system::system_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(chain_event_tests)

BOOST_AUTO_TEST_CASE(fills_what_the_store_would_and_links) {
    session s;
    s.id = "s1";
    event e1;
    chain_event(s, e1);
    BOOST_TEST(e1.id.size() == 36u);
    BOOST_TEST(e1.timestamp > 0);
    BOOST_TEST(e1.session_id == "s1");
    BOOST_TEST(e1.sequence == 1);
    BOOST_TEST(!e1.prev_signature.has_value());
    e1.signature = "S1";
    s.events.push_back(e1);
    s.last_sequence = 1;
    event e2;
    e2.id = "fixed";
    e2.timestamp = 5;
    e2.prev_signature = "stale";
    chain_event(s, e2);
    BOOST_TEST(e2.id == "fixed");
    BOOST_TEST(e2.timestamp == 5);
    BOOST_TEST(e2.sequence == 2);
    BOOST_TEST(e2.prev_signature.value_or("") == "S1");
    // The previous event is unsigned: no link.
    s.events.modify_back().signature.reset();
    chain_event(s, e2);
    BOOST_TEST(!e2.prev_signature.has_value());
}

BOOST_AUTO_TEST_CASE(rejects_a_foreign_event_and_a_copy_without_its_newest_event) {
    session s;
    s.id = "s1";
    event e;
    e.session_id = "other";
    BOOST_CHECK_EXCEPTION(chain_event(s, e), boost::system::system_error, [](const auto& x) {
        return x.code() == errc::invalid_argument &&
               std::string(x.what()).find("belongs to session 'other', not to 's1'") != std::string::npos;
    });
    s.last_sequence = 4; // loaded without events
    event f;
    BOOST_CHECK_EXCEPTION(chain_event(s, f), boost::system::system_error, [](const auto& x) {
        return x.code() == errc::invalid_argument && std::string(x.what()).find("does not hold its newest event (4)") != std::string::npos;
    });
}

// No sequence follows the largest int64: the next one cannot be computed, so chain_event
// refuses (and leaves the event as it was) instead of overflowing.
BOOST_AUTO_TEST_CASE(refuses_to_follow_the_largest_sequence) {
    session s;
    s.id = "s1";
    event last = event::make(event_type::agent_message, "a", content::from_text("x"));
    last.session_id = "s1";
    last.sequence = std::numeric_limits<std::int64_t>::max();
    s.events.push_back(last);
    s.last_sequence = last.sequence;
    event e;
    e.id = "next";
    BOOST_CHECK_EXCEPTION(chain_event(s, e), boost::system::system_error, [](const auto& x) {
        return x.code() == errc::invalid_argument &&
               std::string(x.what()).find("session 's1' is at sequence 9223372036854775807, the last there can be") !=
                   std::string::npos;
    });
    BOOST_TEST(e.sequence == 0);
    BOOST_TEST(e.session_id.empty());
    s.last_sequence = last.sequence - 1; // one before it: still fine
    s.events.modify_back().sequence = s.last_sequence;
    chain_event(s, e);
    BOOST_TEST(e.sequence == std::numeric_limits<std::int64_t>::max());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(verify_transcript_tests)

BOOST_AUTO_TEST_CASE(an_intact_transcript_verifies) {
    const session s = signed_session(6);
    checksum_verifier v;
    const auto r = verify_transcript(s, v);
    BOOST_TEST(r.ok);
    BOOST_TEST(static_cast<bool>(r));
    BOOST_TEST(r.checked == 6u);
    BOOST_TEST(r.reason == transcript_fault::none);
    BOOST_TEST(v.calls == 6);
    BOOST_TEST(!verify_signature(s.events[2], v));
    BOOST_TEST(check(session{}).ok); // empty: nothing to fail
}

BOOST_AUTO_TEST_CASE(tampered_text_tool_result_state_delta_and_sequence) {
    const session s = signed_session(6);
    struct tamper {
        const char* what;
        std::size_t index;
        std::function<void(event&)> edit;
    };
    const tamper cases[] = {
        {"text", 0, [](event& e) { std::get<text_part>(e.content.parts[0]).text = "forged"; }},
        {"tool result", 1, [](event& e) { std::get<tool_response_part>(e.content.parts[1]).result = "forged"; }},
        {"state_delta", 2, [](event& e) { e.actions.state_delta["x"] = 1000; }},
        {"sequence", 3, [](event& e) { e.sequence = 40; }},
        {"author", 4, [](event& e) { e.author = "mallory"; }},
        {"signature", 5, [](event& e) { e.signature->back() = e.signature->back() == '0' ? '1' : '0'; }},
    };
    for (const auto& t : cases) {
        BOOST_TEST_CONTEXT(t.what) {
            session bad = s;
            t.edit(bad.events.modify(t.index));
            const auto r = check(bad);
            BOOST_TEST(!r.ok);
            BOOST_TEST(r.index == t.index);
            BOOST_TEST(r.reason == transcript_fault::bad_signature);
            BOOST_TEST(r.checked == t.index);
            BOOST_TEST(r.message.find("event " + std::to_string(t.index) + " (sequence ") == 0u);
            BOOST_TEST(r.message.find("changed after it was signed") != std::string::npos);
        }
    }
}

BOOST_AUTO_TEST_CASE(deleted_events_are_missing) {
    session s = signed_session(6);
    s.events.erase(s.events.begin() + 2); // sequence 3
    auto r = check(s);
    BOOST_TEST(r.reason == transcript_fault::missing_event);
    BOOST_TEST(r.index == 2u);
    BOOST_TEST(r.sequence == 4);
    BOOST_TEST(r.message.find("sequence 3 is missing") != std::string::npos);
    session first = signed_session(3);
    first.events.erase(first.events.begin());
    r = check(first);
    BOOST_TEST(r.reason == transcript_fault::missing_event);
    BOOST_TEST(r.index == 0u);
}

BOOST_AUTO_TEST_CASE(swapped_events_are_reordered) {
    session s = signed_session(6);
    s.events.swap_events(3, 4);
    auto r = check(s);
    BOOST_TEST(r.reason == transcript_fault::reordered);
    BOOST_TEST(r.index == 3u);
    BOOST_TEST(r.sequence == 5);
    session dup = signed_session(4);
    dup.events.push_back(dup.events[1]); // sequence 2 again at the end
    r = check(dup);
    BOOST_TEST(r.reason == transcript_fault::reordered);
    BOOST_TEST(r.index == 4u);
}

// Renumbering and re-signing with the same key hides a deletion from the sequence check,
// but not from the chain: the link still names the deleted event.
BOOST_AUTO_TEST_CASE(a_resigned_splice_breaks_the_chain) {
    session s = signed_session(5);
    s.events.erase(s.events.begin() + 2);
    for (std::size_t i = 2; i < s.events.size(); ++i) {
        s.events.modify(i).sequence = static_cast<std::int64_t>(i) + 1;
        resign(s.events.modify(i));
    }
    const auto r = check(s);
    BOOST_TEST(r.reason == transcript_fault::broken_chain);
    BOOST_TEST(r.index == 2u);
    BOOST_TEST(r.message.find("is not the previous event's signature") != std::string::npos);
    // A first event that claims a predecessor.
    session t = signed_session(2);
    t.events.modify(0).prev_signature = "x";
    resign(t.events.modify(0));
    BOOST_TEST(check(t).reason == transcript_fault::broken_chain);
}

BOOST_AUTO_TEST_CASE(unsigned_untrusted_malformed_and_foreign_events) {
    session s = signed_session(3);
    s.events.modify(1).signature.reset();
    auto r = check(s);
    BOOST_TEST(r.reason == transcript_fault::unsigned_event);
    BOOST_TEST(r.index == 1u);

    transcript_options lax;
    lax.allow_unsigned = true;
    // event 2's link names event 1's signature, which is gone now that 1 is unsigned
    BOOST_TEST(check(s, lax).reason == transcript_fault::broken_chain);

    session t = signed_session(3);
    transcript_options trusted;
    trusted.trusted_dids = {"did:test:bob"};
    r = check(t, trusted);
    BOOST_TEST(r.reason == transcript_fault::untrusted_signer);
    BOOST_TEST(r.index == 0u);
    trusted.trusted_dids.push_back("did:test:alice");
    BOOST_TEST(check(t, trusted).ok);

    session m = signed_session(3);
    m.events.modify(2).signer_did = "did:key:zzz";
    r = check(m);
    BOOST_TEST(r.reason == transcript_fault::bad_signer);
    BOOST_TEST(r.message.find("did:key:zzz") != std::string::npos);

    session w = signed_session(3);
    w.id = "s2";
    r = check(w);
    BOOST_TEST(r.reason == transcript_fault::wrong_session);
    BOOST_TEST(r.message.find("belongs to session 's1', not to 's2'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_transcript_with_unsigned_events_allowed) {
    session s;
    s.id = "s1";
    checksum_signer signer;
    for (int i = 1; i <= 4; ++i) {
        event e = event::make(event_type::agent_message, "a", content::from_text("x"));
        chain_event(s, e);
        if (i != 2) signer.sign_event(e); // event 2 unsigned: 3 links to nothing
        s.last_sequence = e.sequence;
        s.events.push_back(std::move(e));
    }
    BOOST_TEST(!s.events[2].prev_signature.has_value());
    BOOST_TEST(check(s).reason == transcript_fault::unsigned_event);
    transcript_options lax;
    lax.allow_unsigned = true;
    BOOST_TEST(check(s, lax).ok);
}

// A tail (loaded from the newest compaction on) starts at a sequence > 1.
BOOST_AUTO_TEST_CASE(a_tail_of_a_transcript) {
    const session s = signed_session(8);
    session tail = s;
    tail.events.erase(tail.events.begin(), tail.events.begin() + 3); // sequences 4..8
    auto r = check(tail);
    BOOST_TEST(r.reason == transcript_fault::missing_event); // a whole transcript starts at 1
    transcript_options o;
    o.first_sequence = 0;
    BOOST_TEST(check(tail, o).ok);
    o.first_sequence = 4;
    BOOST_TEST(check(tail, o).ok);
    o.first_prev_signature = s.events[2].signature;
    BOOST_TEST(check(tail, o).ok);
    o.first_prev_signature = "not it";
    BOOST_TEST(check(tail, o).reason == transcript_fault::broken_chain);
    o = {};
    o.first_sequence = 5;
    BOOST_TEST(check(tail, o).reason == transcript_fault::reordered);
}

// first_sequence is 0 (any) or a sequence; a negative one is a mistake, not "any".
BOOST_AUTO_TEST_CASE(a_negative_first_sequence_is_refused) {
    const session s = signed_session(3);
    for (std::int64_t bad : {std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()}) {
        transcript_options o;
        o.first_sequence = bad;
        BOOST_CHECK_EXCEPTION(check(s, o), boost::system::system_error, [&](const auto& x) {
            return x.code() == errc::invalid_argument &&
                   std::string(x.what()).find("first_sequence is " + std::to_string(bad)) != std::string::npos;
        });
        BOOST_CHECK_THROW(check(session{}, o), boost::system::system_error); // even with nothing to check
    }
}

// A tail whose first event claims the largest sequence there is: the next one cannot
// follow it (and computing "its sequence + 1" must not overflow).
BOOST_AUTO_TEST_CASE(nothing_follows_the_largest_sequence) {
    session s;
    s.id = "s1";
    for (std::int64_t seq : {std::numeric_limits<std::int64_t>::max(), std::int64_t{1}}) {
        event e = event::make(event_type::agent_message, "a", content::from_text("x"));
        e.session_id = "s1";
        e.sequence = seq;
        s.events.push_back(std::move(e));
    }
    transcript_options o;
    o.first_sequence = 0;
    o.allow_unsigned = true;
    auto r = check(s, o);
    BOOST_TEST(!r.ok);
    BOOST_TEST(r.reason == transcript_fault::reordered);
    BOOST_TEST(r.message.find("follows sequence 9223372036854775807, the last one there can be") != std::string::npos,
               r.message);
    s.events.pop_back(); // alone, it is a tail of one event
    BOOST_TEST(check(s, o).ok, check(s, o).message);
}

BOOST_AUTO_TEST_CASE(verify_signature_of_one_event) {
    session s = signed_session(1);
    checksum_verifier v;
    BOOST_TEST(!verify_signature(s.events[0], v));
    event e = s.events[0];
    e.signature.reset();
    BOOST_TEST(verify_signature(e, v) == errc::missing_field);
    e = s.events[0];
    e.timestamp += 1;
    BOOST_TEST(verify_signature(e, v) == errc::bad_signature);
    e = s.events[0];
    e.signer_did = "nope";
    BOOST_TEST(verify_signature(e, v) == errc::invalid_argument);
}

// Several threads check the signatures up front; the report must be the one a single thread
// gives, whatever is wrong and wherever (the first fault in stored order wins).
BOOST_AUTO_TEST_CASE(threads_give_the_same_report) {
    const session base = signed_session(200);
    struct variant {
        const char* what;
        std::function<void(session&)> edit;
    };
    const variant cases[] = {
        {"intact", [](session&) {}},
        {"text at 150", [](session& s) { std::get<text_part>(s.events.modify(150).content.parts[0]).text = "x"; }},
        {"two edits: 170 and 5", [](session& s) {
             std::get<text_part>(s.events.modify(170).content.parts[0]).text = "x";
             s.events.modify(5).author = "mallory";
         }},
        {"a deletion at 60 after a bad signature at 90", [](session& s) {
             s.events.modify(90).signature->back() = s.events.modify(90).signature->back() == '0' ? '1' : '0';
             s.events.erase(s.events.begin() + 60);
         }},
        {"a swap", [](session& s) { s.events.swap_events(30, 31); }},
        {"a malformed signer", [](session& s) { s.events.modify(100).signer_did = "did:web:nope"; }},
        {"not canonicalisable", [](session& s) { s.events.modify(120).metadata["x"] = std::numeric_limits<double>::quiet_NaN(); }},
        {"unsigned", [](session& s) { s.events.modify(7).signature.reset(); }},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.what) {
            session s = base;
            c.edit(s);
            const auto one = check(s);
            for (unsigned threads : {2u, 3u, 0u}) {
                transcript_options o;
                o.threads = threads;
                const auto many = check(s, o);
                BOOST_TEST(many.ok == one.ok);
                BOOST_TEST(many.index == one.index);
                BOOST_TEST(many.sequence == one.sequence);
                BOOST_TEST(many.reason == one.reason);
                BOOST_TEST(many.checked == one.checked);
                BOOST_TEST(many.message == one.message);
            }
        }
    }
    // And the single-thread reports are the expected ones (so the comparison means something).
    session t = base;
    std::get<text_part>(t.events.modify(150).content.parts[0]).text = "x";
    transcript_options o;
    o.threads = 4;
    const auto r = check(t, o);
    BOOST_TEST(r.index == 150u);
    BOOST_TEST(r.reason == transcript_fault::bad_signature);
    BOOST_TEST(check(base, o).checked == 200u);
}

// A verifier that throws on one thread: the exception reaches the caller after every thread
// has finished.
BOOST_AUTO_TEST_CASE(a_throwing_verifier_on_a_thread) {
    struct throwing_verifier : checksum_verifier {
        boost::system::error_code verify(std::string_view payload, std::string_view sig, std::string_view did) {
            if (payload.find("\"m77\"") != std::string_view::npos) throw std::runtime_error("verifier broke on m77");
            return checksum_verifier::verify(payload, sig, did);
        }
    };
    static_assert(verifier<throwing_verifier>);
    const session s = signed_session(120);
    throwing_verifier v;
    transcript_options o;
    o.threads = 3;
    BOOST_CHECK_EXCEPTION(verify_transcript(s, v, o), std::runtime_error,
                          [](const std::runtime_error& e) { return std::string(e.what()) == "verifier broke on m77"; });
}

BOOST_AUTO_TEST_CASE(fault_names) {
    BOOST_TEST(to_string(transcript_fault::none) == "none");
    BOOST_TEST(to_string(transcript_fault::broken_chain) == "broken_chain");
    BOOST_TEST(to_string(transcript_fault::missing_event) == "missing_event");
    BOOST_TEST(to_string(static_cast<transcript_fault>(99)) == "unknown");
}

BOOST_AUTO_TEST_SUITE_END()
