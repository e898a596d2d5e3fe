// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_OBLIGATIONS_HPP
#define LIBRETTO_COMPACTION_OBLIGATIONS_HPP

// The obligations tracker: which tool calls, long-running calls and confirmation requests
// are still waiting for their answer at a point of a session. A compaction may only end
// where nothing is open — summarising a call away while its response is still to come
// loses the call (ADK #4740: a pending confirmation compacted away; #5602: a long-running
// call "resolved" by its intermediate response and summarised).
//
// Rules (pure; events in sequence order):
//   - a tool_call part opens an obligation under its call id; so does a confirmation
//     request (a call of the tool named confirmation_tool_name) and a long-running call
//     (tool_call metadata "long_running": true, or the id listed in the event's metadata
//     "long_running_tool_ids");
//   - a tool_response part with the same id closes it — except a response whose metadata
//     has "intermediate": true (a long-running tool's progress update), which keeps the
//     call open (#5602);
//   - an ordinary call whose invocation ended without a response is dead: it stops
//     blocking once its invocation is over (ADK #7236: one orphaned call otherwise
//     disables compaction for the rest of the session). Long-running calls and
//     confirmation requests are answered in a later invocation by design, so they never
//     die.
//
// The tracker keeps string_views of the call ids: the events must outlive it. The open set
// is small (the calls of one step, a few pending long-running ones), so it is a vector.

#include <libretto/event/event_list.hpp>
#include <libretto/event/event.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

namespace libretto {

/// A call of this tool is a request for the user's confirmation (human in the loop).
inline constexpr std::string_view confirmation_tool_name = "request_confirmation";

enum class obligation_kind { tool_call, long_running, confirmation };

struct open_obligation {
    std::string_view call_id;
    obligation_kind kind = obligation_kind::tool_call;
    std::int64_t sequence = 0;        ///< of the event that opened it
    std::string_view invocation_id{}; ///< of that event
};

/// True if `call` (a part of `e`) is a long-running call.
inline bool is_long_running_call(const event& e, const tool_call_part& call) noexcept {
    if (auto it = call.metadata.find("long_running"); it != call.metadata.end() && it->value().is_bool() &&
                                                      it->value().get_bool())
        return true;
    if (auto it = e.metadata.find("long_running_tool_ids"); it != e.metadata.end() && it->value().is_array())
        for (const auto& id : it->value().get_array())
            if (id.is_string() && id.get_string() == call.tool_call_id) return true;
    return false;
}

/// True if `r` is an intermediate response (progress) of a long-running call.
inline bool is_intermediate_response(const tool_response_part& r) noexcept {
    auto it = r.metadata.find("intermediate");
    return it != r.metadata.end() && it->value().is_bool() && it->value().get_bool();
}

class obligations_tracker {
public:
    /// Feeds the next event (in sequence order).
    void observe(const event& e) {
        if (!e.invocation_id.empty() && e.invocation_id != invocation_) {
            end_invocation(); // a new invocation began: the previous one is over
            invocation_ = e.invocation_id;
        }
        for (const auto& p : e.content.parts) {
            if (const auto* call = std::get_if<tool_call_part>(&p)) {
                obligation_kind k = obligation_kind::tool_call;
                if (call->tool_name == confirmation_tool_name) k = obligation_kind::confirmation;
                else if (is_long_running_call(e, *call)) k = obligation_kind::long_running;
                open_.push_back({call->tool_call_id, k, e.sequence, e.invocation_id});
            } else if (const auto* resp = std::get_if<tool_response_part>(&p)) {
                if (is_intermediate_response(*resp)) continue;
                close(resp->tool_call_id);
            }
        }
    }

    /// The current invocation is over: its unanswered ordinary calls are dead.
    void end_invocation() {
        std::erase_if(open_, [&](const open_obligation& o) {
            return o.kind == obligation_kind::tool_call && o.invocation_id == invocation_;
        });
    }

    /// Nothing is open: a compaction may end here.
    bool clear() const noexcept { return open_.empty(); }

    /// Nothing would be open once the current invocation is over (end_invocation() would
    /// leave the set empty); does not change the tracker.
    bool clear_after_invocation() const noexcept {
        for (const auto& o : open_)
            if (o.kind != obligation_kind::tool_call || o.invocation_id != invocation_) return false;
        return true;
    }

    /// What is open, oldest first.
    const std::vector<open_obligation>& open() const noexcept { return open_; }

    /// Forgets everything (for reuse without reallocating).
    void reset() noexcept {
        open_.clear();
        invocation_ = {};
    }

private:
    void close(std::string_view id) {
        for (auto it = open_.begin(); it != open_.end(); ++it)
            if (it->call_id == id) {
                open_.erase(it);
                return;
            }
        // A response without an open call: its call was dead, or compacted earlier, or
        // never existed. Nothing to close.
    }

    std::vector<open_obligation> open_;
    std::string_view invocation_{};
};

/// The largest index i < limit (an index into `events`, which are in sequence order) such
/// that a compaction covering events[0..i] leaves nothing open; -1 if there is none.
/// `last_invocation_over`: the newest invocation in `events` has ended (true after a turn,
/// when the runner compacts), so its unanswered ordinary calls are dead too.
inline std::ptrdiff_t last_clear_index(event_span events, std::size_t limit,
                                       bool last_invocation_over = true) {
    limit = std::min(limit, events.size());
    obligations_tracker t;
    std::ptrdiff_t best = -1;
    for (std::size_t i = 0; i < limit; ++i) {
        t.observe(events[i]);
        // Look ahead: if the next event starts another invocation (or this is the last
        // event and the invocation is over), this invocation's open calls are dead here.
        const bool invocation_ends =
            i + 1 < events.size()
                ? (!events[i + 1].invocation_id.empty() && events[i + 1].invocation_id != events[i].invocation_id)
                : last_invocation_over;
        if (invocation_ends ? t.clear_after_invocation() : t.clear()) best = static_cast<std::ptrdiff_t>(i);
    }
    return best;
}

} // namespace libretto

#endif
