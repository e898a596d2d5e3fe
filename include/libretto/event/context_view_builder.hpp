// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_CONTEXT_VIEW_BUILDER_HPP
#define LIBRETTO_EVENT_CONTEXT_VIEW_BUILDER_HPP

// context_view_builder: the events a context view starts from, kept up to date as a
// session grows instead of rescanning it for every model call.
//
//   lb::context_view_builder b;
//   b.sync(session.events);                          // O(new events)
//   lb::context_view v = b.view(session.events);     // == make_context_view(session.events)
//
// It holds the session's events minus those a rewind undid and those hidden by a
// compaction (raw events inside a shown summary's range, and summaries another one
// subsumes). The steps of
// make_context_view over items() give what make_context_view gives over the whole
// session, but cost what is shown, not
// what is stored: after a compaction of a 100,000-event session to a 200-event tail the
// next view looks at ~200 events. A compaction event costs O(log n + summaries + tail)
// (O(shown) when some events have no sequence yet: they are never hidden).
// docs/context_view.md, "Incremental views".

#include <libretto/event/compaction_check.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/event/rewinds.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace libretto {

class context_view_builder {
public:
    /// Brings the builder up to date with `events`, a session's events in sequence order
    /// that only grew since the last call (anything else — fewer events, or a different
    /// event where the last seen one was — rebuilds from scratch).
    void sync(event_span events) {
        if (events.size() < seen_ || (seen_ > 0 && events[seen_ - 1].id != last_id_)) reset();
        // Room for every new event at once (an agent's first sync sees the whole loaded
        // session: no growth one doubling at a time).
        if (events.size() > seen_) {
            const std::size_t need = items_.size() + (events.size() - seen_);
            if (need > items_.capacity()) items_.reserve(std::max(need, 2 * items_.capacity()));
        }
        for (std::size_t i = seen_; i < events.size(); ++i) {
            if (is_rewind(events[i])) rebuild_after_rewind(events, i);
            else add(events, i);
        }
        seen_ = events.size();
        if (seen_ > 0) last_id_ = events[seen_ - 1].id;
    }

    /// Forgets everything (the next sync starts over).
    void reset() noexcept {
        items_.clear();
        compactions_.clear();
        seen_ = 0;
        last_id_.clear();
        unsequenced_ = false;
    }

    /// The events not hidden by a compaction, in session order, as pointers into `events`
    /// (the span given to the last sync; valid while it does not change).
    std::vector<const event*> pointers(event_span events) const {
        std::vector<const event*> out;
        out.reserve(items_.size());
        for (std::size_t i : items_) out.push_back(&events[i]);
        return out;
    }

    /// pointers() as a context_view, ready for make_context_view's steps.
    context_view items(event_span events) const { return context_view(pointers(events)); }

    /// What make_context_view(events) gives, from items(): compaction, filters, repair
    /// (items() has no undone events).
    context_view view(event_span events) const {
        return repair_tool_pairs(filter_events(apply_compaction(items(events))));
    }

    /// How many events items() holds.
    std::size_t size() const noexcept { return items_.size(); }
    /// How many events sync() has seen.
    std::size_t seen() const noexcept { return seen_; }

private:
    // A rewind (rare) can bring back events a summary it undid had hidden: start over from
    // the events no rewind up to `i` undid. O(events up to i).
    void rebuild_after_rewind(event_span events, std::size_t i) {
        const auto undone = undone_ranges(events.subspan(0, i + 1));
        items_.clear();
        compactions_.clear();
        unsequenced_ = false;
        std::size_t next = 0;
        for (const auto& r : undone) {
            for (std::size_t j = next; j < r.first; ++j) add(events, j);
            next = r.last + 1;
        }
        for (std::size_t j = next; j <= i; ++j) add(events, j);
    }

    void add(event_span events, std::size_t i) {
        const event& e = events[i];
        const auto& c = e.actions.compaction;
        if (e.sequence == 0) unsequenced_ = true;
        if (!c || !is_valid_compaction(e)) { // apply_compaction ignores (and reports) a bad one
            items_.push_back(i);
            return;
        }
        // Summaries this one subsumes (identical ranges: the later wins).
        std::vector<std::size_t> gone;
        std::erase_if(compactions_, [&](std::size_t k) {
            const auto& o = *events[k].actions.compaction;
            if (!c->contains(o)) return false;
            gone.push_back(k);
            return true;
        });
        // Raw events inside the range (events without a sequence are never hidden): with
        // every event sequenced, one contiguous run of items. Summaries in it that this one
        // does not subsume stay.
        auto seq_of = [&](std::size_t k) { return events[k].sequence; };
        if (unsequenced_) { // no order to search by: one pass
            std::erase_if(items_, [&](std::size_t k) {
                const event& x = events[k];
                if (x.sequence == 0 || !c->covers(x.sequence)) return false;
                return !x.actions.compaction || c->contains(*x.actions.compaction);
            });
        } else {
            auto lo = std::lower_bound(items_.begin(), items_.end(), c->first_sequence,
                                       [&](std::size_t k, std::int64_t s) { return seq_of(k) < s; });
            auto hi = std::upper_bound(lo, items_.end(), c->last_sequence,
                                       [&](std::int64_t s, std::size_t k) { return s < seq_of(k); });
            std::vector<std::size_t> keep; // summaries in the run (few)
            for (std::size_t k : compactions_)
                if (std::binary_search(lo, hi, k)) keep.push_back(k);
            auto tail = items_.erase(lo, hi);
            items_.insert(tail, keep.begin(), keep.end());
        }
        for (std::size_t k : gone) {
            auto it = std::lower_bound(items_.begin(), items_.end(), k);
            if (it != items_.end() && *it == k) items_.erase(it);
        }
        items_.push_back(i);
        compactions_.push_back(i);
    }

    std::vector<std::size_t> items_;       // indices into the events, ascending
    std::vector<std::size_t> compactions_; // the shown summaries among them, ascending
    std::size_t seen_ = 0;
    std::string last_id_;
    bool unsequenced_ = false; // an event without a sequence was seen: search linearly
};

} // namespace libretto

#endif
