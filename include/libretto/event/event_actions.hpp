// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_EVENT_ACTIONS_HPP
#define LIBRETTO_EVENT_EVENT_ACTIONS_HPP

#include <libretto/event/boxed_optional.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace libretto {

namespace json = boost::json;

/// A summary that stands in for the events with sequence in [first_sequence, last_sequence].
/// Ranges are by sequence, the store's order of truth; timestamps are kept for display only.
struct event_compaction {
    std::int64_t first_sequence = 0;
    std::int64_t last_sequence = 0;
    double start_timestamp = 0;
    double end_timestamp = 0;
    std::string summary;
    std::int64_t event_count = 0;

    /// True if `seq` lies inside the covered range (inclusive).
    bool covers(std::int64_t seq) const noexcept { return first_sequence <= seq && seq <= last_sequence; }
    /// True if this range contains `o`'s range.
    bool contains(const event_compaction& o) const noexcept {
        return first_sequence <= o.first_sequence && o.last_sequence <= last_sequence;
    }
    friend bool operator==(const event_compaction&, const event_compaction&) = default;
};

/// Side effects an event asks for. Empty members mean "no effect".
struct event_actions {
    json::object state_delta;    ///< merged into state; a null value deletes the key
    json::object artifact_delta; ///< artifact file name -> version number saved
    boxed_optional<std::string> transfer_to_agent;
    std::optional<bool> escalate;
    std::optional<bool> skip_summarization;
    std::optional<bool> end_of_agent;
    boxed_optional<event_compaction> compaction;
    /// Set on a rewind event (runner/rewind.hpp): the events from the first one of this
    /// invocation up to the rewind event are undone, and its deltas restore what they changed.
    boxed_optional<std::string> rewind_before_invocation_id;

    /// True when no action is set.
    bool empty() const noexcept {
        return state_delta.empty() && artifact_delta.empty() && !transfer_to_agent && !escalate &&
               !skip_summarization && !end_of_agent && !compaction && !rewind_before_invocation_id;
    }

    /// Folds `later` into this: maps merge key by key, scalars are last-wins when set.
    /// Moves the actions out, leaving these empty. Empty actions (a step's usual case)
    /// move nothing: moving the two JSON objects costs ~250 instructions, a test of empty()
    /// a few.
    event_actions take() {
        if (empty()) return {};
        return std::exchange(*this, {});
    }

    /// Empties the actions (a no-op on empty ones).
    void clear() {
        if (!empty()) *this = {};
    }

    /// Sets these (empty) actions to `from`'s, taking them. Replaces any actions held.
    void assign_from(event_actions& from) {
        if (from.empty()) {
            clear();
            return;
        }
        *this = std::exchange(from, {});
    }

    void merge(event_actions later) {
        for (auto& kv : later.state_delta) state_delta[kv.key()] = std::move(kv.value());
        for (auto& kv : later.artifact_delta) artifact_delta[kv.key()] = std::move(kv.value());
        if (later.transfer_to_agent) transfer_to_agent = std::move(later.transfer_to_agent);
        if (later.escalate) escalate = later.escalate;
        if (later.skip_summarization) skip_summarization = later.skip_summarization;
        if (later.end_of_agent) end_of_agent = later.end_of_agent;
        if (later.compaction) compaction = std::move(later.compaction);
        if (later.rewind_before_invocation_id) rewind_before_invocation_id = std::move(later.rewind_before_invocation_id);
    }

    friend bool operator==(const event_actions&, const event_actions&) = default;
};

} // namespace libretto

#endif
