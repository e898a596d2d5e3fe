// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_TRANSCRIPT_HPP
#define LIBRETTO_SIGN_TRANSCRIPT_HPP

// Verifying signed events and whole transcripts, with any verifier (ed25519_verifier in
// ed25519_openssl.hpp is the one that checks real signatures).
//
//   verify_signature(e, v)            -> error_code   {} / missing_field (unsigned) /
//                                                      bad_signature / invalid_argument
//   verify_transcript(events, v, o)   -> transcript_report
//   verify_transcript(session, v, o)  -> transcript_report (events must be the session's)
//
// A transcript verifies when, event by event in order: the event is signed (unless
// allow_unsigned), its signer is trusted (when trusted_dids is given), its signature covers
// its signable_payload, it belongs to the session, its sequence is the previous one + 1
// (the first: first_sequence), and its prev_signature is the previous event's signature.
// The report names the first event that fails and why. Deleting the newest events of a
// transcript leaves a shorter valid one: keep the newest signature (or sequence) elsewhere
// to detect that.

#include <libretto/event/event_list.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/session/session.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/verifier.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

namespace libretto {

/// Why a transcript failed to verify.
enum class transcript_fault {
    none,
    unsigned_event,   ///< an event has no signature (and allow_unsigned is off)
    bad_signer,       ///< its signer_did or signature is malformed or of an unsupported kind
    untrusted_signer, ///< its signer is not one of trusted_dids
    bad_signature,    ///< the signature does not verify: the event was changed after signing
    wrong_session,    ///< the event belongs to another session
    missing_event,    ///< a sequence number is skipped: an event was deleted
    reordered,        ///< a sequence number comes out of order or twice: events were moved
    broken_chain,     ///< prev_signature is not the previous event's signature
};

constexpr std::string_view to_string(transcript_fault f) noexcept {
    switch (f) {
    case transcript_fault::none: return "none";
    case transcript_fault::unsigned_event: return "unsigned_event";
    case transcript_fault::bad_signer: return "bad_signer";
    case transcript_fault::untrusted_signer: return "untrusted_signer";
    case transcript_fault::bad_signature: return "bad_signature";
    case transcript_fault::wrong_session: return "wrong_session";
    case transcript_fault::missing_event: return "missing_event";
    case transcript_fault::reordered: return "reordered";
    case transcript_fault::broken_chain: return "broken_chain";
    }
    return "unknown";
}

/// Writes to_string(f), for logs and test diagnostics.
template <class Ostream>
    requires requires(Ostream& os, std::string_view s) { os << s; }
Ostream& operator<<(Ostream& os, transcript_fault f) {
    os << to_string(f);
    return os;
}

struct transcript_options {
    /// Unsigned events pass (their successors then carry no prev_signature). Off: every
    /// event must be signed.
    bool allow_unsigned = false;
    /// The sequence the first event must have: 1 for a whole transcript. 0 accepts any (a
    /// tail, e.g. loaded from the newest compaction on); the first event's chain link is then
    /// checked only against first_prev_signature, when given. Negative: verify_transcript
    /// throws system_error(invalid_argument).
    std::int64_t first_sequence = 1;
    /// With a tail: the signature of the event before its first, when known.
    std::optional<std::string> first_prev_signature{};
    /// Non-empty: every signer_did must be one of these. Without it, anyone can re-sign an
    /// altered transcript with a key of their own, and it verifies.
    std::vector<std::string> trusted_dids{};
    /// Non-empty: every event must carry this session id (the session overload sets it).
    std::string session_id{};
    /// Verify the signatures on this many threads, each with its own copy of the verifier
    /// (the verifier must be copyable); the order and chain checks stay sequential and the
    /// report is the one a single thread gives. 0: one per hardware thread.
    unsigned threads = 1;
};

/// The outcome: ok, or the first bad event (its index in the range and its sequence) and
/// why, in words.
struct transcript_report {
    bool ok = true;
    std::size_t index = 0;     ///< of the first bad event in the range checked
    std::int64_t sequence = 0; ///< that event's sequence as stored
    transcript_fault reason = transcript_fault::none;
    std::string message;
    std::size_t checked = 0; ///< events that passed
    explicit operator bool() const noexcept { return ok; }
};

/// Checks one event's signature with `v`: {} when it verifies, errc::missing_field when the
/// event is unsigned, errc::bad_signature when it does not verify, errc::invalid_argument
/// for a malformed signer_did or signature. Throws what signable_payload throws.
template <verifier V>
boost::system::error_code verify_signature(const event& e, V& v) {
    if (!e.is_signed()) return errc::missing_field;
    std::string payload;
    append_signable_payload(payload, e);
    return v.verify(payload, *e.signature, e.signer_did);
}

namespace detail {

inline transcript_report transcript_failure(std::size_t i, const event& e, transcript_fault f, std::string why) {
    transcript_report r;
    r.ok = false;
    r.index = i;
    r.sequence = e.sequence;
    r.reason = f;
    r.checked = i;
    r.message = "event " + std::to_string(i) + " (sequence " + std::to_string(e.sequence) + ", id '" + e.id +
                "'): " + std::move(why);
    return r;
}

inline std::string short_sig(const std::optional<std::string>& s) {
    if (!s) return "none";
    return "'" + (s->size() > 16 ? s->substr(0, 16) + "..." : *s) + "'";
}

} // namespace detail

namespace detail {

/// One event's signature check, as verify_transcript needs it: ec from the verifier, or
/// `canonical` set to why the event cannot be canonicalised.
struct signature_check {
    boost::system::error_code ec;
    std::optional<std::string> canonical;
};

template <verifier V>
signature_check check_signature(const event& e, V& v, std::string& payload) {
    payload.clear();
    try {
        append_signable_payload(payload, e);
    } catch (const boost::system::system_error& x) {
        return {{}, std::string(x.what())};
    }
    return {v.verify(payload, *e.signature, e.signer_did), std::nullopt};
}

/// The signature checks of every signed event, on up to `threads` threads (this one
/// included), each with a copy of `v` and taking the next unchecked event until none is left.
/// If a thread cannot be started, the others do its share. The first exception a check
/// throws is rethrown once every thread has stopped.
template <verifier V>
std::vector<signature_check> check_signatures(event_span events, const V& v, unsigned threads) {
    std::vector<signature_check> out(events.size());
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
        try {
            V mine = v;
            std::string payload;
            payload.reserve(1024);
            for (std::size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < events.size();)
                if (events[i].is_signed()) out[i] = check_signature(events[i], mine, payload);
        } catch (...) {
            const std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
            failed = true;
        }
    };
    std::vector<std::thread> pool;
    try {
        pool.reserve(threads - 1);
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    } catch (const std::system_error&) {
        // Out of threads: the ones running and this one share the work.
    }
    work();
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
    return out;
}

} // namespace detail

/// Verifies `events` (in stored order) as one transcript; see the top of this header. Throws
/// system_error(invalid_argument) for a negative o.first_sequence, and what the verifier
/// throws.
template <verifier V>
transcript_report verify_transcript(event_span events, V& v, const transcript_options& o = {}) {
    // A mistake in the options, not a verdict on the transcript: no fault fits, and treating
    // it as 0 would accept any start.
    if (o.first_sequence < 0)
        throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                          "verify_transcript: transcript_options::first_sequence is " +
                                              std::to_string(o.first_sequence) +
                                              "; it is 0 (any) or a sequence (1 or more)");
    std::string payload;
    payload.reserve(1024);
    // Signatures are independent of each other: with several threads they are all checked
    // up front, and the loop below reads the results in order.
    std::vector<detail::signature_check> checked;
    if constexpr (std::is_copy_constructible_v<V>) {
        unsigned threads = o.threads != 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
        threads = static_cast<unsigned>(std::min<std::size_t>(threads, events.size() / 16));
        if (threads > 1) checked = detail::check_signatures(events, v, threads);
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
        const event& e = events[i];
        // 1. Is the event authentic, as it stands?
        if (!e.is_signed()) {
            if (!o.allow_unsigned)
                return detail::transcript_failure(i, e, transcript_fault::unsigned_event, "the event is not signed");
        } else {
            if (!o.trusted_dids.empty() &&
                std::find(o.trusted_dids.begin(), o.trusted_dids.end(), e.signer_did) == o.trusted_dids.end())
                return detail::transcript_failure(i, e, transcript_fault::untrusted_signer,
                                                  "signer '" + e.signer_did + "' is not a trusted signer");
            const detail::signature_check c = checked.empty() ? detail::check_signature(e, v, payload) : std::move(checked[i]);
            if (c.canonical)
                return detail::transcript_failure(i, e, transcript_fault::bad_signature,
                                                  "the event cannot be canonicalised: " + *c.canonical);
            const auto ec = c.ec;
            if (ec == errc::bad_signature)
                return detail::transcript_failure(i, e, transcript_fault::bad_signature,
                                                  "the signature does not verify against signer '" + e.signer_did +
                                                      "': the event was changed after it was signed");
            if (ec)
                return detail::transcript_failure(i, e, transcript_fault::bad_signer,
                                                  "the signer or the signature is malformed: " + ec.message() +
                                                      " (signer_did '" + e.signer_did.substr(0, 80) + "')");
        }
        // 2. Is it where it belongs?
        if (!o.session_id.empty() && e.session_id != o.session_id)
            return detail::transcript_failure(i, e, transcript_fault::wrong_session,
                                              "the event belongs to session '" + e.session_id + "', not to '" +
                                                  o.session_id + "'");
        if (i > 0 && events[i - 1].sequence == std::numeric_limits<std::int64_t>::max())
            return detail::transcript_failure(i, e, transcript_fault::reordered,
                                              "the event follows sequence " + std::to_string(events[i - 1].sequence) +
                                                  ", the last one there can be");
        const std::int64_t expected =
            i > 0 ? events[i - 1].sequence + 1 : (o.first_sequence > 0 ? o.first_sequence : e.sequence);
        if (e.sequence != expected) {
            bool later = false; // is the expected event further on? then this one was moved
            for (std::size_t j = i + 1; j < events.size() && !later; ++j) later = events[j].sequence == expected;
            if (e.sequence > expected && !later)
                return detail::transcript_failure(i, e, transcript_fault::missing_event,
                                                  "sequence " + std::to_string(expected) +
                                                      " is missing: the event was deleted");
            return detail::transcript_failure(i, e, transcript_fault::reordered,
                                              "sequence " + std::to_string(expected) + " expected here: the events were reordered");
        }
        if (e.is_signed()) {
            std::optional<std::string> want;
            bool check = true;
            if (i > 0) {
                if (events[i - 1].is_signed()) want = events[i - 1].signature;
            } else if (o.first_sequence > 0 ? e.sequence > 1 : true) {
                want = o.first_prev_signature;
                check = o.first_prev_signature.has_value();
            }
            if (check && e.prev_signature != want)
                return detail::transcript_failure(i, e, transcript_fault::broken_chain,
                                                  "prev_signature " + detail::short_sig(e.prev_signature) +
                                                      " is not the previous event's signature " + detail::short_sig(want));
        }
    }
    transcript_report r;
    r.checked = events.size();
    return r;
}

/// Verifies the events of `s` as its transcript (session_id set to s.id unless given).
template <verifier V>
transcript_report verify_transcript(const session& s, V& v, transcript_options o = {}) {
    if (o.session_id.empty()) o.session_id = s.id;
    return verify_transcript(event_span(s.events), v, o);
}

} // namespace libretto

#endif
