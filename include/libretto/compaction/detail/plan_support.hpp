// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_DETAIL_PLAN_SUPPORT_HPP
#define LIBRETTO_COMPACTION_DETAIL_PLAN_SUPPORT_HPP

// What the strategies share: where the newest compaction is, where the raw (not yet
// compacted) events start, and the obligations-safe end of a range.

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/obligations.hpp>
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/event.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace libretto::detail {

/// The newest compaction event (by position: the last appended), or nullptr. One that
/// check_compaction refuses (written by another tool) is ignored, as the context view does.
inline const event* newest_compaction(event_span events) {
    for (std::size_t i = events.size(); i-- > 0;)
        if (events[i].actions.compaction && is_valid_compaction(events[i])) return &events[i];
    return nullptr;
}

/// Index of the first event (in sequence order) with sequence > `seq`.
inline std::size_t index_after(event_span events, std::int64_t seq) noexcept {
    auto it = std::upper_bound(events.begin(), events.end(), seq,
                               [](std::int64_t s, const event& e) { return s < e.sequence; });
    return static_cast<std::size_t>(it - events.begin());
}

/// Index of the first event with sequence >= `seq`.
inline std::size_t index_from(event_span events, std::int64_t seq) noexcept {
    auto it = std::lower_bound(events.begin(), events.end(), seq,
                               [](const event& e, std::int64_t s) { return e.sequence < s; });
    return static_cast<std::size_t>(it - events.begin());
}

/// The last index in [first, last] (inclusive) where a compaction of events[first..i]
/// leaves no obligation open, or nullopt. The tracker starts at `first`: what an older
/// compaction covered was closed when it was planned.
inline std::optional<std::size_t> safe_end(event_span events, std::size_t first, std::size_t last) {
    if (first > last || last >= events.size()) return std::nullopt;
    auto tail = events.subspan(first);
    const auto i = last_clear_index(tail, last - first + 1, true);
    if (i < 0) return std::nullopt;
    return first + static_cast<std::size_t>(i);
}

inline bool is_user_message(const event& e) noexcept { return e.type == event_type::user_message; }

} // namespace libretto::detail

#endif
