// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_STORE_BATCH_HPP
#define LIBRETTO_STORE_DETAIL_STORE_BATCH_HPP

// The part of an append that the database stores (sqlite_store, postgres_store) share:
// everything that needs no lock — ids, sequences, temp: trimming, serialisation, size checks
// and the per-scope deltas — done before the transaction. The stored revision must equal
// the caller's (or the append is stale), so sequences are assigned from the caller's.

#include <libretto/event/json.hpp>
#include <libretto/store/detail/store_logic.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace libretto::detail {

/// The caller's session as an append needs it: which session, and at which revision.
struct append_target {
    session_key key;
    std::int64_t last_sequence = 0;
};

/// What an append stored: the events as written and their routed deltas, for
/// commit_append on the caller's session (on the caller's executor).
struct append_result {
    std::vector<event> events;
    std::vector<routed_delta> routed;
    std::int64_t last_sequence = 0; ///< of the last stored event; 0 if nothing was stored
};

/// A batch ready to write.
struct prepared_batch {
    std::vector<std::string> rows;  ///< serialized events, parallel to result.events
    json::object app, user, session; ///< merged deltas (unprefixed app/user keys; null deletes)
    std::int64_t compaction_first = 0; ///< of the last compaction in the batch; 0: none
    std::vector<compaction_entry> compactions; ///< the batch's (checked) compactions, in order
    double last_update = 0;
    append_result result; ///< events and routed deltas; last_sequence still 0
    std::int64_t last_sequence = 0; ///< what the session's revision becomes
};

/// Prepares `events` (partial ones are skipped) for `t`. On failure `detail` says which
/// event and why; nothing is prepared.
inline boost::system::error_code prepare_batch(const append_target& t, std::vector<event> events,
                                               std::size_t max_event_bytes, prepared_batch& out, std::string& detail) {
    out = {};
    if (auto ec = validate_key(t.key)) {
        detail = key_problem(t.key);
        return ec;
    }
    session stub; // the caller's session as far as prepare_append looks at it
    stub.id = t.key.session_id;
    stub.app_name = t.key.app_name;
    stub.user_id = t.key.user_id;
    stub.last_sequence = t.last_sequence;
    for (std::size_t i = 0; i < events.size(); ++i) {
        event& e = events[i];
        if (e.partial) continue; // streaming chunks are never stored
        routed_delta routed;
        if (auto ec = prepare_append(stub, e, stub.last_sequence, routed)) {
            out = {};
            detail = "event " + std::to_string(i) + " of the append: " + append_refusal(stub, e, stub.last_sequence);
            return ec;
        }
        std::string row, why;
        if (auto ec = serialize_event_checked(e, row, why)) {
            // A strict JSON reader rejects the text: every later get would fail.
            out = {};
            detail = event_name(e) + " (" + std::to_string(i) + " of the append): " + why;
            return ec;
        }
        if (max_event_bytes && row.size() > max_event_bytes) {
            out = {};
            detail = "event " + std::to_string(i) + " of the append is " + std::to_string(row.size()) +
                     " bytes of JSON, over max_event_bytes (" + std::to_string(max_event_bytes) + ")";
            return errc::oversize;
        }
        for (const auto& kv : routed.app) out.app[kv.key()] = kv.value();
        for (const auto& kv : routed.user) out.user[kv.key()] = kv.value();
        for (const auto& kv : routed.session) out.session[kv.key()] = kv.value();
        if (const auto& c = e.actions.compaction) {
            out.compaction_first = c->first_sequence;
            out.compactions.push_back({e.sequence, c->first_sequence, c->last_sequence});
        }
        stub.last_sequence = e.sequence;
        out.last_update = e.timestamp;
        out.rows.push_back(std::move(row));
        out.result.events.push_back(std::move(e));
        out.result.routed.push_back(std::move(routed));
    }
    out.last_sequence = stub.last_sequence;
    return {};
}

} // namespace libretto::detail

#endif
