// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_CONTEXT_LOAD_HPP
#define LIBRETTO_STORE_DETAIL_CONTEXT_LOAD_HPP

// What a get with get_options::context_only reads: the compaction events a context view
// shows, and the events no shown compaction covers. Every store keeps the shown
// compactions of a session (shown_compactions, updated at each append of a valid
// compaction) and reads the sequence ranges load_ranges() names: a rolling summary of
// sequences 1..n costs the summary and the events after n, never the n covered events.
// The runner's session cache prunes its copy with the same rule (select_context).

#include <libretto/event/compaction_check.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace libretto::detail {

/// A compaction as the load needs it: the sequence of the event that records it and the
/// range it covers.
struct compaction_entry {
    std::int64_t sequence = 0;
    std::int64_t first = 0;
    std::int64_t last = 0;
    friend bool operator==(const compaction_entry&, const compaction_entry&) = default;
};

/// Sequences [first, last] to read (inclusive).
struct sequence_range {
    std::int64_t first = 0;
    std::int64_t last = 0;
    friend bool operator==(const sequence_range&, const sequence_range&) = default;
};

/// The compactions a context view of a session shows (apply_compaction's rule): every valid
/// compaction whose range no other one contains; of two identical ranges the later one.
/// Kept as a session grows: add() each valid compaction in append order. Holds only the
/// shown ones (a rolling summary: one entry), in append order.
class shown_compactions {
public:
    /// Adds the compaction of the event at `c.sequence`, appended after every one added
    /// before; the caller checked it (check_compaction).
    void add(const compaction_entry& c) {
        for (const auto& s : items_)
            if (s.first <= c.first && c.last <= s.last && (s.first != c.first || s.last != c.last)) return;
        std::erase_if(items_, [&](const compaction_entry& s) { return c.first <= s.first && s.last <= c.last; });
        items_.push_back(c);
    }
    /// Adds `e`'s compaction if it has a valid one (one check_compaction refuses is ignored).
    void add(const event& e) {
        if (is_valid_compaction(e))
            add(compaction_entry{e.sequence, e.actions.compaction->first_sequence, e.actions.compaction->last_sequence});
    }

    const std::vector<compaction_entry>& items() const noexcept { return items_; }
    bool empty() const noexcept { return items_.empty(); }
    void clear() noexcept { items_.clear(); }

    /// The end of the newest covered range: the largest last sequence shown (0: none).
    std::int64_t covered_end() const noexcept {
        std::int64_t end = 0;
        for (const auto& s : items_) end = std::max(end, s.last);
        return end;
    }

    /// What a context load reads, as ascending, disjoint, non-adjacent ranges: each shown
    /// compaction event, every sequence no shown range covers (the gaps between ranges, and
    /// everything after the newest covered range: the last range is open-ended), and with
    /// `with_newest_range` the range of the newest shown compaction (by append order).
    std::vector<sequence_range> load_ranges(bool with_newest_range) const {
        std::vector<sequence_range> hidden;
        hidden.reserve(items_.size());
        for (const auto& s : items_) hidden.push_back({s.first, s.last});
        std::sort(hidden.begin(), hidden.end(),
                  [](const sequence_range& a, const sequence_range& b) { return a.first < b.first; });
        std::vector<sequence_range> out;
        out.reserve(2 * items_.size() + 2);
        std::int64_t next = 1; // the first sequence not yet known to be hidden
        for (const auto& h : hidden) {
            if (h.first > next) out.push_back({next, h.first - 1});
            next = std::max(next, h.last + 1);
        }
        out.push_back({next, std::numeric_limits<std::int64_t>::max()});
        for (const auto& s : items_) out.push_back({s.sequence, s.sequence});
        if (with_newest_range && !items_.empty()) out.push_back({items_.back().first, items_.back().last});
        return merge(std::move(out));
    }

    /// Sorts `r` and merges overlapping or adjacent ranges.
    static std::vector<sequence_range> merge(std::vector<sequence_range> r) {
        std::sort(r.begin(), r.end(), [](const sequence_range& a, const sequence_range& b) { return a.first < b.first; });
        std::vector<sequence_range> out;
        out.reserve(r.size());
        for (const auto& x : r) {
            if (!out.empty() && (out.back().last == std::numeric_limits<std::int64_t>::max() || x.first <= out.back().last + 1))
                out.back().last = std::max(out.back().last, x.last);
            else
                out.push_back(x);
        }
        return out;
    }

private:
    std::vector<compaction_entry> items_;
};

/// The ranges `ranges` clipped to sequences >= `from` (empty ones dropped).
inline std::vector<sequence_range> clip_ranges(std::vector<sequence_range> ranges, std::int64_t from) {
    std::erase_if(ranges, [&](const sequence_range& r) { return r.last < from; });
    for (auto& r : ranges) r.first = std::max(r.first, from);
    return ranges;
}

/// The first index in [lo, events.size()) whose sequence is >= `seq` (`events` sorted by
/// sequence; size() and operator[] only).
template <class Events>
std::size_t lower_index(const Events& events, std::int64_t seq, std::size_t lo = 0) {
    std::size_t count = events.size() - lo;
    while (count > 0) {
        const std::size_t half = count / 2;
        if (events[lo + half].sequence < seq) {
            lo += half + 1;
            count -= half + 1;
        } else {
            count = half;
        }
    }
    return lo;
}

/// Calls `f(i)` for every index of `events` (sorted by sequence; size() and operator[])
/// whose sequence lies in one of `ranges` (ascending, disjoint), in order: a binary search
/// per range, then the range's events.
template <class Events, class F>
void for_each_in_ranges(const Events& events, const std::vector<sequence_range>& ranges, F f) {
    const std::size_t n = events.size();
    std::size_t lo = 0;
    for (const auto& r : ranges) {
        lo = lower_index(events, r.first, lo);
        while (lo < n && events[lo].sequence <= r.last) f(lo++);
        if (lo == n) return;
    }
}

/// Keeps of `events` (a context load, grown by later events; sorted by sequence, each
/// sequence once) what a context load of the session, whose newest sequence is
/// `last_sequence`, would now return. False, leaving `events` as they were, if they lack
/// some of it (a newer compaction's range reaches before them, with `with_newest_range`):
/// the caller then loads again. Costs a scan for compaction events and a binary search per
/// range; the list is rebuilt only when something is dropped.
inline bool select_context(event_list& events, std::int64_t last_sequence, bool with_newest_range) {
    shown_compactions shown;
    for (std::size_t i = 0; i < events.size(); ++i)
        if (events[i].actions.compaction) shown.add(events[i]);
    if (shown.empty()) return true; // a context load is the whole session
    const auto ranges = shown.load_ranges(with_newest_range);
    std::int64_t want = 0, held = 0;
    for (const auto& r : ranges) {
        if (r.first > last_sequence) break;
        const std::int64_t hi = std::min(r.last, last_sequence);
        want += hi - r.first + 1;
        held += static_cast<std::int64_t>(lower_index(events, hi + 1) - lower_index(events, r.first));
    }
    if (held != want) return false;
    if (held == static_cast<std::int64_t>(events.size())) return true; // nothing to drop
    event_list kept;
    kept.reserve(events.capacity());
    for_each_in_ranges(events, ranges, [&](std::size_t i) { kept.push_back(events.shared(i)); });
    events = std::move(kept);
    return true;
}

} // namespace libretto::detail

#endif
