// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_SIGNABLE_PAYLOAD_HPP
#define LIBRETTO_SIGN_SIGNABLE_PAYLOAD_HPP

// What a signature covers: the RFC 8785 canonical JSON of the whole event as a store keeps
// it (event/json.hpp's encoding), without `signature`. That is every part (tool calls and
// tool results included), the actions, metadata, usage, ids (event, session, invocation),
// author, branch, timestamp, sequence, signer_did and prev_signature. One exception:
// state_delta keys with the `temp:` prefix, which stores never persist, are left out, so
// the payload of the event the runner signed equals that of the event read back.
//
//   signable_payload(e)                 -> std::string (canonical JSON bytes)
//   append_signable_payload(out, e)     appends them to `out`
//   chain_event(s, e)                   completes `e` as the store will keep it, as the next
//                                       event of `s`, linked to `s`'s newest event
//
// orxhestra spells these as members (event.signable_payload(), event.verify_signature());
// here they are free functions of the sign/ headers, so event.hpp needs no crypto.

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/json.hpp>
#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/sign/canonical_json.hpp>

#include <boost/json/monotonic_resource.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace libretto {

/// Appends the bytes a signature of `e` covers. Throws system_error(invalid_argument) for
/// what JSON cannot hold (a NaN or infinite number, invalid UTF-8), naming it.
inline void append_signable_payload(std::string& out, const event& e) {
    unsigned char buf[8192]; // most events encode without a heap allocation
    json::monotonic_resource mr(buf, sizeof buf);
    json::value v = encode(e, &mr);
    json::object& o = v.get_object();
    o.erase("signature");
    if (auto* actions = o.if_contains("actions")) {
        json::object& a = actions->get_object();
        if (auto* delta = a.if_contains("state_delta")) {
            json::object& d = delta->get_object();
            for (auto it = d.begin(); it != d.end();) {
                if (scope_of(it->key()) == state_scope::temp) it = d.erase(it);
                else ++it;
            }
            if (d.empty()) a.erase("state_delta");
        }
        if (a.empty()) o.erase("actions");
    }
    append_canonical_json(out, v);
}

/// The bytes a signature of `e` covers.
inline std::string signable_payload(const event& e) {
    std::string out;
    out.reserve(512);
    append_signable_payload(out, e);
    return out;
}

/// Completes `e` as the next event of `s` (a session copy that holds its newest event, as
/// the store's get and append leave it): a fresh id and the current time if unset, the
/// session id, the sequence the store will assign (s.last_sequence + 1) and prev_signature
/// (the newest event's signature; unset when that event is unsigned or `s` has none).
/// Throws system_error(invalid_argument), leaving `e` as it was, when `s` is not the session
/// `e` names or is at the largest sequence there is (INT64_MAX: nothing can follow); and when
/// `s` has events but not its newest one (loaded with num_recent_events = 0, say).
inline void chain_event(const session& s, event& e) {
    if (!e.session_id.empty() && e.session_id != s.id)
        throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                          "chain_event: the event belongs to session '" + e.session_id +
                                              "', not to '" + s.id + "'");
    if (s.last_sequence == std::numeric_limits<std::int64_t>::max())
        throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                          "chain_event: session '" + s.id + "' is at sequence " +
                                              std::to_string(s.last_sequence) +
                                              ", the last there can be: no event can follow it");
    if (e.id.empty()) e.id = event::new_id();
    if (e.timestamp == 0) e.timestamp = event::now();
    e.session_id = s.id;
    e.sequence = s.last_sequence + 1;
    e.prev_signature.reset();
    if (s.last_sequence == 0) return;
    if (s.events.empty() || s.events.back().sequence != s.last_sequence)
        throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                          "chain_event: the copy of session '" + s.id + "' does not hold its newest event (" +
                                              std::to_string(s.last_sequence) + "), whose signature the next event links to");
    if (s.events.back().is_signed()) e.prev_signature = s.events.back().signature;
}

} // namespace libretto

#endif
