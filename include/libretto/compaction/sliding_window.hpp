// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_SLIDING_WINDOW_HPP
#define LIBRETTO_COMPACTION_SLIDING_WINDOW_HPP

// sliding_window: ADK's invocation-based compaction. Once compaction_interval new
// invocations (user turns) have completed since the newest compaction, summarise them
// together with the overlap_size invocations before them. With interval 2 and overlap 1,
// invocations 1..4 give a summary of [1, 2] after the second and one of [2, 4] after the
// fourth; both stay, and the context view shows each in place of its range.
//
// Differences from ADK, on purpose: ranges are by sequence, not timestamp (two events of
// one millisecond are still ordered), and the range ends at the obligations-safe point
// (obligations.hpp) rather than before the first pending call, so a dead call does not
// stop every later compaction (ADK #7236).

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/plan_support.hpp>
#include <libretto/compaction/compaction_strategy.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace libretto {

struct sliding_window {
    std::size_t compaction_interval = 2;
    std::size_t overlap_size = 1;

    /// The overlap invocations lie in the newest compaction's range: a runner loads it.
    bool plans_from_newest_range() const noexcept { return compaction_interval > 0 && overlap_size > 0; }

    std::optional<compaction_plan> plan(const session_view& v) const {
        if (compaction_interval == 0) return std::nullopt;
        event_span events(v.session.events);
        const event* prev = detail::newest_compaction(events);
        const std::int64_t compacted_to = prev ? prev->actions.compaction->last_sequence : 0;
        // Invocations in order of first appearance, with their first and last event index.
        struct inv {
            std::string_view id;
            std::size_t first, last;
        };
        std::vector<inv> invs;
        for (std::size_t i = 0; i < events.size(); ++i) {
            const event& e = events[i];
            if (e.actions.compaction || e.invocation_id.empty()) continue;
            if (!invs.empty() && invs.back().id == e.invocation_id) {
                invs.back().last = i;
                continue;
            }
            bool found = false;
            for (auto it = invs.rbegin(); it != invs.rend(); ++it) // interleaved resumes: rare, short
                if (it->id == e.invocation_id) {
                    it->last = i;
                    found = true;
                    break;
                }
            if (!found) invs.push_back({e.invocation_id, i, i});
        }
        // New invocations: their newest event is past the newest compaction.
        std::size_t first_new = invs.size();
        for (std::size_t k = 0; k < invs.size(); ++k)
            if (events[invs[k].last].sequence > compacted_to) {
                first_new = k;
                break;
            }
        if (invs.size() - first_new < compaction_interval) return std::nullopt;
        const std::size_t start = first_new > overlap_size ? first_new - overlap_size : 0;
        const std::size_t begin = invs[start].first;
        std::size_t end_index = invs.back().last;
        auto end = detail::safe_end(events, begin, end_index);
        if (!end) return std::nullopt;
        if (events[*end].sequence <= compacted_to) return std::nullopt; // nothing new fits
        return compaction_plan{events[begin].sequence, events[*end].sequence};
    }
};

static_assert(compaction_strategy<sliding_window>);

} // namespace libretto

#endif
