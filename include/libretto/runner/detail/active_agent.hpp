// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_ACTIVE_AGENT_HPP
#define LIBRETTO_RUNNER_DETAIL_ACTIVE_AGENT_HPP

// Which agent a new invocation of a session starts with: the one the session last
// transferred to. Compaction events record it (metadata "active_agent"), so that a turn
// that loads only the events after the newest compaction still finds it.

#include <libretto/agent/agent.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/rewinds.hpp>
#include <libretto/session/session.hpp>

#include <string_view>

namespace libretto::detail {

/// The metadata key of a compaction event that names the agent the session had last
/// transferred to when the event was written.
inline constexpr std::string_view active_agent_key = "active_agent";

/// The name of the agent the session last transferred to: the newest transfer's target,
/// else what the newest compaction event that records one says. A load from the newest
/// compaction on may not reach the transfer itself; the compaction record stands in for
/// the events before it. Empty when the session never transferred.
/// Events a rewind undid do not count.
inline std::string_view last_transfer_target(const session& s) {
    const auto undone = undone_ranges(s.events); // empty (no allocation) without rewinds
    auto r = undone.rbegin();
    for (std::size_t i = s.events.size(); i-- > 0;) {
        while (r != undone.rend() && r->first > i) ++r;
        if (r != undone.rend() && r->last >= i) {
            i = r->first; // skip the run
            continue;
        }
        const event& e = s.events[i];
        if (e.actions.transfer_to_agent) return *e.actions.transfer_to_agent;
        if (!e.is_compaction()) continue;
        auto f = e.metadata.find(active_agent_key);
        if (f != e.metadata.end() && f->value().is_string()) return f->value().get_string();
    }
    return {};
}

/// Records in a compaction event about to be stored which agent the session (as it is
/// now, before the event) had last transferred to, unless the event names one already.
inline void record_active_agent(const session& s, event& compaction) {
    if (compaction.metadata.contains(active_agent_key)) return;
    if (std::string_view name = last_transfer_target(s); !name.empty())
        compaction.metadata[active_agent_key] = name;
}

/// The agent that starts a new invocation: the one the session last transferred to
/// (last_transfer_target) when it is in the tree, else the root.
inline agent_ref pick_agent(agent_ref root, const session& s) {
    if (std::string_view name = last_transfer_target(s); !name.empty())
        if (auto found = find_agent(root, name)) return *found;
    return root;
}

} // namespace libretto::detail

#endif
