// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_REWINDS_HPP
#define LIBRETTO_EVENT_REWINDS_HPP

// Which events a rewind undid. A rewind event (actions.rewind_before_invocation_id = X,
// appended by async_rewind_session, runner/rewind.hpp) undoes the events from the first
// one of invocation X up to itself. Read newest first, as ADK does: a rewind that an
// later rewind undid undoes nothing, so each event is either shown or undone by exactly
// one rewind. A rewind whose invocation is not among the events undoes only itself. A
// rewind that records where it began (metadata "rewind"."first_sequence") undoes from
// there, so an invocation id used again after a rewind of it is undone from its new run.
//
//   undone_ranges(events)      -> the undone index ranges, ascending and disjoint
//   apply_rewinds(view)        -> the view without undone events (make_context_view's
//                                 first step)
//
// docs/sessions.md, "Rewind".

#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace libretto {

/// True for a rewind event.
inline bool is_rewind(const event& e) noexcept { return e.actions.rewind_before_invocation_id.has_value(); }

/// An undone run of events: indices [first, last], inclusive; `last` is the rewind.
struct undone_range {
    std::size_t first = 0;
    std::size_t last = 0;
    friend bool operator==(const undone_range&, const undone_range&) = default;
};

namespace detail {

/// metadata["rewind"]["first_sequence"] of a rewind event (the sequence of the first event
/// it undid), or 0 if the event does not record one.
inline std::int64_t rewound_from_sequence(const event& e) noexcept {
    const auto* r = e.metadata.if_contains("rewind");
    const auto* o = r ? r->if_object() : nullptr;
    const auto* f = o ? o->if_contains("first_sequence") : nullptr;
    return f && f->is_int64() ? f->get_int64() : 0;
}

/// undone_ranges over `n` events where `at(i)` is the i-th (an event_span, a view's
/// pointers).
template <class At>
std::vector<undone_range> undone_ranges_of(std::size_t n, At at) {
    std::vector<undone_range> out;
    std::size_t i = n;
    while (i > 0) {
        --i;
        const event& e = at(i);
        if (!is_rewind(e)) continue;
        const auto& target = *e.actions.rewind_before_invocation_id;
        std::size_t first = i;
        bool found = false;
        // The sequence async_rewind_session undid from, when the event records it: an id a
        // caller used again after an earlier rewind of it must not take the earlier run
        // (and what came between) along.
        if (const auto from = rewound_from_sequence(e); from > 0)
            for (std::size_t j = i; j-- > 0 && at(j).sequence >= from;)
                if (at(j).sequence == from) {
                    found = at(j).invocation_id == target;
                    if (found) first = j;
                    break;
                }
        for (std::size_t j = 0; !found && j < i; ++j)
            if (at(j).invocation_id == target) {
                first = j;
                found = true;
            }
        out.push_back({first, i});
        i = first; // what lies before the target is read next
    }
    std::reverse(out.begin(), out.end());
    return out;
}

} // namespace detail

/// The runs of `events` (a session's, in order) that rewinds undid, ascending.
/// O(events) without rewinds.
inline std::vector<undone_range> undone_ranges(event_span events) {
    return detail::undone_ranges_of(events.size(), [&](std::size_t i) -> const event& { return events[i]; });
}

/// A mask of `events`: true for each event a rewind undid (rewind events included).
inline std::vector<bool> undone_mask(event_span events) {
    std::vector<bool> out(events.size(), false);
    for (const auto& r : undone_ranges(events))
        for (std::size_t i = r.first; i <= r.last; ++i) out[i] = true;
    return out;
}

} // namespace libretto

#endif
