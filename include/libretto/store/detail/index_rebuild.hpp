// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_INDEX_REBUILD_HPP
#define LIBRETTO_STORE_DETAIL_INDEX_REBUILD_HPP

// An index entry's counters from a transcript: what a runner repairs an entry with when the
// transcript has events the entry does not account for (a crash between the two), and what
// a rebuild writes. The transcript is the truth.

#include <libretto/event/event.hpp>
#include <libretto/event/usage.hpp>
#include <libretto/session/session.hpp>
#include <libretto/store/session_index.hpp>

#include <string_view>

namespace libretto::detail {

/// The session-state key a conversation's sessions carry: the conversation key.
inline constexpr std::string_view conversation_state_key = "libretto:conversation";

/// What events add to an entry's counters (the events one turn stored, or a transcript).
struct turn_counts {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::int64_t context_tokens = -1; ///< the latest model call's input; -1: no model call
    std::int64_t compactions = 0;
    double last_interaction_at = 0;   ///< the latest non-background user message
    double memory_flush_at = 0;       ///< the latest memory-flush turn's first event
    std::int64_t compactions_at_flush = 0;

    void add(const event& e) {
        if (e.usage) {
            input_tokens = saturating_add(input_tokens, e.usage->input_tokens);
            output_tokens = saturating_add(output_tokens, e.usage->output_tokens);
            context_tokens = e.usage->input_tokens;
        }
        if (e.is_compaction()) ++compactions;
        if (metadata_flag(e.metadata, "memory_flush")) {
            memory_flush_at = e.timestamp;
            compactions_at_flush = compactions;
        }
        if (e.type == event_type::user_message && !metadata_flag(e.metadata, "background"))
            last_interaction_at = e.timestamp;
    }
};

/// Sets the entry's counters and times from the whole transcript `s` (every event).
inline void count_transcript(const session& s, conversation_entry& e) {
    turn_counts c;
    for (const event& ev : s.events) c.add(ev);
    e.last_sequence = s.last_sequence;
    e.input_tokens = c.input_tokens;
    e.output_tokens = c.output_tokens;
    e.total_tokens = saturating_add(c.input_tokens, c.output_tokens);
    e.context_tokens = c.context_tokens < 0 ? 0 : c.context_tokens;
    e.compaction_count = c.compactions;
    e.memory_flush_at = c.memory_flush_at;
    e.memory_flush_compaction_count = c.compactions_at_flush;
    if (c.last_interaction_at != 0) e.last_interaction_at = c.last_interaction_at;
    if (!s.events.empty() && (e.started_at == 0 || s.events.front().timestamp < e.started_at))
        e.started_at = s.events.front().timestamp;
}

} // namespace libretto::detail

#endif
