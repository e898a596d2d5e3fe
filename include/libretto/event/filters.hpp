// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_FILTERS_HPP
#define LIBRETTO_EVENT_FILTERS_HPP

// What a model gets to see of a session. Four steps, each a pure function over a
// context_view (a list of pointers to events, never copies of stored events):
//
//   0. apply_rewinds          drops the events rewinds undid (event/rewinds.hpp)
//   1. should_include_event   drops partials, lifecycle, error and scratchpad events, empty replies
//   2. apply_compaction       shows each summary in place of the sequence range it covers
//   3. repair_tool_pairs      drops unanswered tool calls and orphan tool responses
//
// make_context_view runs them all (rewinds, then compaction: a summary a rewind undid
// hides nothing; then the filters, which give the same result after compaction as before,
// for less work). Stored events are never modified: where a step must
// change an event (a summary, a reply with one of its two calls removed) the view owns a
// new event and points at it.

#include <libretto/detail/small_id_map.hpp>
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/rewinds.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

/// True if `e` belongs in a model's context (orxhestra's rules). Excluded: partial
/// chunks; agent_start/agent_end; events whose `metadata["error"]` or
/// `metadata["scratchpad"]` is truthy; agent messages with no text, no non-empty data and
/// no tool calls. Compaction events are always kept (apply_compaction needs them), even
/// though they carry no content of their own.
inline bool should_include_event(const event& e) noexcept {
    if (e.partial) return false;
    if (e.type == event_type::agent_start || e.type == event_type::agent_end) return false;
    if (e.is_compaction()) return true;
    if (detail::metadata_flag(e.metadata, "error") || detail::metadata_flag(e.metadata, "scratchpad")) return false;
    if (e.type == event_type::agent_message) {
        for (const auto& p : e.content.parts) {
            if (auto t = std::get_if<text_part>(&p); t && !t->text.empty()) return true;
            if (auto d = std::get_if<data_part>(&p); d && !d->data.empty()) return true;
            if (std::holds_alternative<tool_call_part>(p)) return true;
        }
        return false;
    }
    return true;
}

/// A compaction event a context view ignored, and why (check_compaction's message: a range
/// that is reversed, starts before 1 or does not end before the event, an empty summary).
struct ignored_compaction {
    const event* source = nullptr;
    std::string reason{};
};

/// An ordered view of events for a model's context. It points at the caller's events
/// (which must outlive it) and owns the few events a step had to synthesise. Move-only:
/// moving keeps every pointer valid.
class context_view {
public:
    class iterator {
    public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = event;
        using difference_type = std::ptrdiff_t;
        using pointer = const event*;
        using reference = const event&;

        iterator() = default;
        explicit iterator(const event* const* p) : p_(p) {}
        reference operator*() const { return **p_; }
        pointer operator->() const { return *p_; }
        reference operator[](difference_type n) const { return *p_[n]; }
        iterator& operator++() { ++p_; return *this; }
        iterator operator++(int) { auto t = *this; ++p_; return t; }
        iterator& operator--() { --p_; return *this; }
        iterator operator--(int) { auto t = *this; --p_; return t; }
        iterator& operator+=(difference_type n) { p_ += n; return *this; }
        iterator& operator-=(difference_type n) { p_ -= n; return *this; }
        friend iterator operator+(iterator a, difference_type n) { return a += n; }
        friend iterator operator+(difference_type n, iterator a) { return a += n; }
        friend iterator operator-(iterator a, difference_type n) { return a -= n; }
        friend difference_type operator-(iterator a, iterator b) { return a.p_ - b.p_; }
        friend bool operator==(iterator a, iterator b) { return a.p_ == b.p_; }
        friend auto operator<=>(iterator a, iterator b) { return a.p_ <=> b.p_; }

    private:
        const event* const* p_ = nullptr;
    };

    context_view() = default;
    context_view(context_view&&) noexcept = default;
    context_view& operator=(context_view&&) noexcept = default;
    context_view(const context_view&) = delete;
    context_view& operator=(const context_view&) = delete;

    /// A view of every event of `events`, in order.
    explicit context_view(event_span events) {
        items_.reserve(events.size());
        for (const auto& e : events) items_.push_back(&e);
    }

    /// A view of the given events, in the given order.
    explicit context_view(std::vector<const event*> items) : items_(std::move(items)) {}

    iterator begin() const noexcept { return iterator(items_.data()); }
    iterator end() const noexcept { return iterator(items_.data() + items_.size()); }
    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }
    const event& operator[](std::size_t i) const noexcept { return *items_[i]; }
    const event& front() const noexcept { return *items_.front(); }
    const event& back() const noexcept { return *items_.back(); }

    /// The pointers themselves, for algorithms that want them.
    std::span<const event* const> pointers() const noexcept { return items_; }

    /// True if the i-th event was made by a step (a summary or a repaired copy), rather
    /// than being one of the caller's events.
    bool is_synthesized(std::size_t i) const noexcept {
        for (const auto& o : owned_)
            if (o.get() == items_[i]) return true;
        return false;
    }

    /// Keeps only the events for which `pred(const event&)` is true.
    template <class Pred>
    context_view& filter(Pred pred) {
        std::erase_if(items_, [&](const event* e) { return !pred(*e); });
        return *this;
    }

    /// The compaction events apply_compaction ignored (written by another tool with a bad
    /// range or an empty summary): a diagnostic. The events such a compaction claims to
    /// cover stay in the view; the compaction event itself is not shown.
    const std::vector<ignored_compaction>& ignored_compactions() const noexcept { return ignored_; }

    // Used by the steps: the raw item list and a way to own a synthesised event.
    std::vector<const event*>& items() noexcept { return items_; }
    const event* own(event e) {
        owned_.push_back(std::make_unique<event>(std::move(e)));
        return owned_.back().get();
    }
    void note_ignored(const event* e, std::string reason) { ignored_.push_back({e, std::move(reason)}); }

private:
    std::vector<const event*> items_;
    std::vector<std::unique_ptr<event>> owned_;
    std::vector<ignored_compaction> ignored_;
};

/// Drops the events rewinds undid (undone_ranges), rewind events included. A view without
/// a rewind is returned as it is after one scan.
inline context_view apply_rewinds(context_view view) {
    auto& items = view.items();
    if (std::none_of(items.begin(), items.end(), [](const event* e) { return is_rewind(*e); })) return view;
    const auto undone = detail::undone_ranges_of(items.size(), [&](std::size_t i) -> const event& { return *items[i]; });
    std::vector<const event*> kept;
    kept.reserve(items.size());
    std::size_t next = 0;
    for (const auto& r : undone) {
        kept.insert(kept.end(), items.begin() + static_cast<std::ptrdiff_t>(next), items.begin() + static_cast<std::ptrdiff_t>(r.first));
        next = r.last + 1;
    }
    kept.insert(kept.end(), items.begin() + static_cast<std::ptrdiff_t>(next), items.end());
    items = std::move(kept);
    return view;
}

/// Applies should_include_event to every event of the view.
inline context_view filter_events(context_view view) {
    view.filter([](const event& e) { return should_include_event(e); });
    return view;
}

/// The text a summary is shown with in a model's context.
inline std::string summary_text(const event_compaction& c) {
    // The count of a range in unsigned arithmetic (a bad range must not overflow); a
    // range that names no events says so.
    std::string t = "[Summary of ";
    if (c.event_count > 0) t += std::to_string(c.event_count);
    else if (c.first_sequence <= c.last_sequence)
        t += std::to_string(static_cast<std::uint64_t>(c.last_sequence) - static_cast<std::uint64_t>(c.first_sequence) + 1);
    else t += "no";
    t += " earlier events]\n\n";
    t += c.summary;
    return t;
}

/// Replaces compacted ranges by their summaries.
///
/// Every event with `actions.compaction` names a sequence range [first, last]. A range
/// contained in another is subsumed and dropped; of two identical ranges the one appended
/// later wins. Each remaining summary is shown as a user_message (text: summary_text,
/// metadata `compaction_summary: true`, `first_sequence`, `last_sequence`) placed where
/// its range ended, i.e. before the first shown event whose sequence is above `last`.
/// Partially overlapping summaries are both shown, in order of their range ends. Raw
/// events whose sequence lies in any shown range are hidden; events without a sequence
/// (0: not yet stored) are never hidden. The compaction events themselves are not shown
/// in their own position. A compaction that check_compaction refuses (a reversed range,
/// one starting before 1 or not ending before its own event, an empty summary) hides
/// nothing and is not shown; ignored_compactions() lists it with the reason. Input must be
/// in sequence order (a session's order).
inline context_view apply_compaction(context_view view) {
    struct summary {
        const event* source;
        std::size_t position; // index in the input view: later appended wins ties
    };
    std::vector<summary> all;
    for (std::size_t i = 0; i < view.size(); ++i) {
        if (!view[i].actions.compaction) continue;
        if (auto bad = check_compaction(view[i])) view.note_ignored(&view[i], std::move(bad.message));
        else all.push_back({&view[i], i});
    }
    auto& items = view.items();
    if (all.empty()) {
        std::erase_if(items, [](const event* e) { return e->is_compaction(); });
        return view;
    }

    // Drop subsumed ranges: sort by first asc, last desc, later-appended first; a range
    // is subsumed when an earlier one in that order reaches at least as far.
    std::sort(all.begin(), all.end(), [](const summary& a, const summary& b) {
        const auto& ca = *a.source->actions.compaction;
        const auto& cb = *b.source->actions.compaction;
        if (ca.first_sequence != cb.first_sequence) return ca.first_sequence < cb.first_sequence;
        if (ca.last_sequence != cb.last_sequence) return ca.last_sequence > cb.last_sequence;
        return a.position > b.position;
    });
    std::vector<const event*> kept;
    std::int64_t reach = std::numeric_limits<std::int64_t>::min();
    for (const auto& s : all) {
        const auto& c = *s.source->actions.compaction;
        if (c.last_sequence <= reach) continue;
        reach = c.last_sequence;
        kept.push_back(s.source);
    }

    // Hidden sequences: the union of kept ranges, as disjoint sorted intervals.
    std::vector<std::pair<std::int64_t, std::int64_t>> hidden;
    for (const event* k : kept) {
        const auto& c = *k->actions.compaction;
        if (!hidden.empty() && c.first_sequence <= hidden.back().second + 1)
            hidden.back().second = std::max(hidden.back().second, c.last_sequence);
        else
            hidden.emplace_back(c.first_sequence, c.last_sequence);
    }
    auto is_hidden = [&](std::int64_t seq) {
        if (seq <= 0) return false;
        auto it = std::upper_bound(hidden.begin(), hidden.end(), seq,
                                   [](std::int64_t s, const auto& iv) { return s < iv.first; });
        return it != hidden.begin() && seq <= std::prev(it)->second;
    };

    // Materialise the summaries, in order of range end.
    std::sort(kept.begin(), kept.end(), [](const event* a, const event* b) {
        return a->actions.compaction->last_sequence < b->actions.compaction->last_sequence;
    });
    std::vector<const event*> shown;
    shown.reserve(kept.size());
    for (const event* k : kept) {
        const auto& c = *k->actions.compaction;
        event s;
        s.id = k->id;
        s.sequence = k->sequence;
        s.timestamp = c.end_timestamp;
        s.invocation_id = k->invocation_id;
        s.session_id = k->session_id;
        s.author = k->author;
        s.branch = k->branch;
        s.type = event_type::user_message;
        s.content = content::from_text(summary_text(c));
        s.metadata["compaction_summary"] = true;
        s.metadata["first_sequence"] = c.first_sequence;
        s.metadata["last_sequence"] = c.last_sequence;
        shown.push_back(view.own(std::move(s)));
    }

    std::vector<const event*> out;
    out.reserve(items.size() + shown.size());
    std::size_t next = 0;
    for (const event* e : items) {
        if (e->is_compaction()) continue;
        if (is_hidden(e->sequence)) continue;
        const std::int64_t key = e->sequence > 0 ? e->sequence : std::numeric_limits<std::int64_t>::max();
        while (next < shown.size() && kept[next]->actions.compaction->last_sequence < key)
            out.push_back(shown[next++]);
        out.push_back(e);
    }
    while (next < shown.size()) out.push_back(shown[next++]);
    items = std::move(out);
    return view;
}

/// Removes tool calls that have no later response, and tool responses that have no
/// earlier call, from the view. A response answers the nearest earlier unanswered call with
/// its id (servers that number calls per reply reuse an id at every step); when every such
/// call is answered it supersedes the response of the one answered last, so of several
/// responses to one call only the last is kept (a long-running tool's final result
/// supersedes its interim ones). An event that loses some of its parts is replaced by a
/// copy without them; one that loses all of its parts (and has nothing else to show) is
/// dropped.
inline context_view repair_tool_pairs(context_view view) {
    auto& items = view.items();
    constexpr std::size_t none = SIZE_MAX;
    struct ids {
        std::size_t open = SIZE_MAX;     // the latest unanswered call (a ref): a stack through next_open
        std::size_t answered = SIZE_MAX; // the call answered last
    };
    struct ref {
        std::size_t item;
        const part* p;
        std::size_t peer = SIZE_MAX;      // a call: its response; a response: the call it answers
        std::size_t next_open = SIZE_MAX; // a call: the unanswered call of its id made before it
    };
    detail::small_id_map<ids> by_id;
    std::vector<ref> refs;
    // One scan: every event is touched once; afterwards only events with tool parts are.
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::size_t first_ref = refs.size();
        for (const auto& p : items[i]->content.parts) {
            if (std::holds_alternative<tool_call_part>(p)) {
                refs.push_back({i, &p});
            } else if (auto t = std::get_if<tool_response_part>(&p)) {
                // Only calls of earlier events are answered: this event's are stacked below.
                const std::size_t me = refs.size();
                refs.push_back({i, &p});
                ids* slot = by_id.find(t->tool_call_id);
                if (!slot) continue;
                std::size_t call = slot->open;
                if (call != none) slot->open = refs[call].next_open;
                else call = slot->answered;
                if (call == none) continue;
                slot->answered = call;
                refs[call].peer = me;
                refs[me].peer = call;
            }
        }
        // Stacked last to first: calls of one id in one event are answered in order.
        for (std::size_t k = refs.size(); k-- > first_ref;) {
            const auto* c = std::get_if<tool_call_part>(refs[k].p);
            if (!c) continue;
            ids& slot = by_id[c->tool_call_id];
            refs[k].next_open = slot.open;
            slot.open = k;
        }
    }
    if (refs.empty()) return view;

    // A call is kept if answered; a response if it is its call's (last) answer.
    auto keep = [&](std::size_t k) {
        const ref& r = refs[k];
        if (r.peer == none) return false;
        return std::holds_alternative<tool_call_part>(*r.p) || refs[r.peer].peer == k;
    };
    // Items that lose at least one part, in item order.
    std::vector<std::size_t> damaged;
    for (std::size_t k = 0; k < refs.size(); ++k)
        if (!keep(k) && (damaged.empty() || damaged.back() != refs[k].item)) damaged.push_back(refs[k].item);
    if (damaged.empty()) return view;

    std::vector<const event*> out;
    out.reserve(items.size());
    std::size_t next_damaged = 0;
    std::size_t next_ref = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
        while (next_ref < refs.size() && refs[next_ref].item < i) ++next_ref;
        if (next_damaged == damaged.size() || damaged[next_damaged] != i) {
            out.push_back(items[i]);
            continue;
        }
        ++next_damaged;
        const event* e = items[i];
        event copy;
        copy.id = e->id;
        copy.sequence = e->sequence;
        copy.timestamp = e->timestamp;
        copy.invocation_id = e->invocation_id;
        copy.session_id = e->session_id;
        copy.author = e->author;
        copy.branch = e->branch;
        copy.type = e->type;
        copy.content.role = e->content.role;
        copy.actions = e->actions;
        copy.metadata = e->metadata;
        copy.partial = e->partial;
        copy.usage = e->usage;
        copy.signature = e->signature;
        copy.signer_did = e->signer_did;
        copy.prev_signature = e->prev_signature;
        std::size_t r = next_ref;
        for (const auto& p : e->content.parts) {
            if (r < refs.size() && refs[r].item == i && refs[r].p == &p) {
                if (keep(r++)) copy.content.parts.push_back(p);
            } else {
                copy.content.parts.push_back(p);
            }
        }
        // Nothing left worth showing: drop the event instead of showing an empty one.
        if (copy.content.parts.empty()) continue;
        if (copy.type == event_type::agent_message && !should_include_event(copy)) continue;
        out.push_back(view.own(std::move(copy)));
    }
    items = std::move(out);
    return view;
}

/// The whole pipeline: what a model is shown of `events`. Compaction runs before the
/// filters: the result is the same either way (the filters never drop a compaction event,
/// and a summary's place depends only on the sequences of the events shown after it), and
/// the filters then only look at the events left visible, not at the whole history.
inline context_view make_context_view(event_span events) {
    return repair_tool_pairs(filter_events(apply_compaction(apply_rewinds(context_view(events)))));
}

} // namespace libretto

#endif
