// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_COMPACTOR_HPP
#define LIBRETTO_COMPACTION_COMPACTOR_HPP

// compactor<Strategy, Summarizer>: a strategy (which range) with the summarizer that writes
// the range's summary, as one runner policy:
//
//   lb::runner r{agent, store, lb::compactor{lb::token_budget{.context_window = 128'000},
//                                            lb::make_fallback_summarizer(model)}};
//
// A bare strategy given to the runner is summarised by extractive_summarizer.
//
// Also here, the pure steps the runner takes (usable for manual compaction):
//   prepare_compaction(events, plan)   the summary_request for a plan: previous summary
//                                      (rolling), split-turn prefix, identifiers
//   make_compaction_event(input, sum)  the event that records the summary
//   async_compact(events, plan, s)     both, with the summarizer call in between
//   forced_plan(view)                  what to compact after a context-overflow error when
//                                      the strategy itself sees no need
// docs/compaction.md, "The runner's compaction step".

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/plan_support.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/rewinds.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace libretto {

/// The pre-compaction "memory flush" (OpenClaw): before a compaction the runner runs one
/// silent turn of the agent with `prompt` as the user message, so the agent can write down
/// what it must not forget (to a tool, a file, its state). The turn's events are stored
/// (marked metadata `memory_flush: true`) but not yielded to the caller.
struct memory_flush_options {
    std::string prompt =
        "The conversation above is about to be compacted: older messages will be replaced by a summary. "
        "Save anything you will need later (decisions, facts, identifiers, open tasks) with the tools you have. "
        "Reply with NO_REPLY when done; this reply is not shown to the user.";
};

/// What a compactor does besides planning and summarising.
struct compactor_options {
    identifier_options identifiers{}; ///< bounds of the identifiers the summary must keep
    /// Run a silent memory-flush turn before each compaction after a turn (not before an
    /// overflow compaction: that happens inside a turn).
    std::optional<memory_flush_options> memory_flush{};
    std::string author = "compaction"; ///< the author of compaction events
};

/// A strategy and a summarizer: a compaction_strategy the runner also summarises with.
template <compaction_strategy Strategy, summarizer Summarizer = extractive_summarizer>
class compactor {
public:
    using strategy_type = Strategy;
    using summarizer_type = Summarizer;

    compactor() = default;
    explicit compactor(Strategy s, Summarizer m = {}, compactor_options o = {})
        : strategy_(std::move(s)), summarizer_(std::move(m)), options_(std::move(o)) {}

    std::optional<compaction_plan> plan(const session_view& v) const { return strategy_.plan(v); }
    /// The strategy's (compaction_strategy's plans_from_newest_range).
    bool plans_from_newest_range() const { return libretto::plans_from_newest_range(strategy_); }

    const Strategy& strategy() const noexcept { return strategy_; }
    /// A copy the runner calls (summarizers are cheap handles).
    const Summarizer& summarizer() const noexcept { return summarizer_; }
    const compactor_options& options() const noexcept { return options_; }

private:
    Strategy strategy_{};
    Summarizer summarizer_{};
    compactor_options options_{};
};

template <class Strategy>
compactor(Strategy) -> compactor<Strategy>;
template <class Strategy, class Summarizer>
compactor(Strategy, Summarizer) -> compactor<Strategy, Summarizer>;
template <class Strategy, class Summarizer>
compactor(Strategy, Summarizer, compactor_options) -> compactor<Strategy, Summarizer>;

/// What summarising a plan takes: the request (spans into the events given to
/// prepare_compaction, which must outlive it) and the facts the compaction event records.
struct compaction_input {
    compaction_plan plan{};
    summary_request request{};
    double start_timestamp = 0;
    double end_timestamp = 0;
    std::int64_t event_count = 0; ///< events of the range, compaction events not counted
    /// When rewinds undid events of the range: copies of the others, which request.events
    /// and request.turn_prefix then point into (an undone event is never summarised).
    std::shared_ptr<const std::vector<event>> shown{};
};

namespace detail {

/// The compaction a plan rolls up: the newest valid compaction event inside the plan's range
/// whose range starts where the plan starts and ends inside it; nullptr if none.
inline const event* rolled_compaction(event_span events, const compaction_plan& plan) {
    const std::size_t lo = index_from(events, plan.first_sequence);
    for (std::size_t i = index_after(events, plan.last_sequence); i-- > lo;) {
        const auto& c = events[i].actions.compaction;
        if (c && c->first_sequence == plan.first_sequence && c->last_sequence <= plan.last_sequence &&
            is_valid_compaction(events[i]))
            return &events[i];
    }
    return nullptr;
}

/// True if `events` (sorted by sequence, each sequence once) hold every sequence of [first, last].
inline bool holds_sequences(event_span events, std::int64_t first, std::int64_t last) {
    if (first > last) return true;
    const std::size_t n = index_after(events, last) - index_from(events, first);
    // last - first in unsigned arithmetic: exact for any first <= last, where the signed
    // form overflows for a range as wide as {0, INT64_MAX} (a custom strategy's plan).
    return n > 0 && static_cast<std::uint64_t>(n - 1) == static_cast<std::uint64_t>(last) - static_cast<std::uint64_t>(first);
}

/// The newest sequence of `events` (0: none stored).
inline std::int64_t newest_sequence(event_span events) {
    for (std::size_t i = events.size(); i-- > 0;)
        if (events[i].sequence > 0) return events[i].sequence;
    return 0;
}

[[noreturn]] inline void refuse_compaction(const std::string& message) {
    throw boost::system::system_error(make_error_code(errc::invalid_argument), message);
}

} // namespace detail

/// True if `events` (sorted by sequence) hold what prepare_compaction needs for `plan`: every
/// event of its range, or, for a plan that rolls up a compaction (same first sequence), that
/// compaction and every event after its range. A runner's session loaded with
/// get_options::context_only holds the latter for a rolling summary: no read of the
/// covered events.
inline bool holds_plan_events(event_span events, const compaction_plan& plan) {
    if (detail::holds_sequences(events, plan.first_sequence, plan.last_sequence)) return true;
    const event* prev = detail::rolled_compaction(events, plan);
    if (!prev) return false;
    const std::int64_t rolled_last = prev->actions.compaction->last_sequence;
    return rolled_last >= plan.last_sequence || detail::holds_sequences(events, rolled_last + 1, plan.last_sequence);
}

/// The summary_request for `plan` over `events` (sorted by sequence; holds_plan_events must
/// hold). nullopt when the range holds no event.
///
/// - Refused with boost::system::system_error(errc::invalid_argument) and a message naming
///   the field: a plan that check_compaction refuses for a session whose newest event is
///   the newest of `events` (reversed, starting before 1, ending past the last event), or
///   events that do not hold what the plan needs.
/// - Rolling: when a compaction event in `events` covers a range that starts where the plan
///   starts and ends inside it, its summary becomes `previous_summary` and only the events
///   after its range are summarised (the new summary updates and subsumes it). Only that
///   compaction and the events after its range need to be given.
/// - Split turn: when the event after the range is not a user message and the range holds
///   the start of that turn (a user message), the turn's start goes to `turn_prefix`.
/// - Identifiers: critical_identifiers() of the range.
inline std::optional<compaction_input> prepare_compaction(event_span events, const compaction_plan& plan,
                                                          const identifier_options& ids = {}) {
    {
        event_compaction c; // the plan as the event will record it (the summary comes later)
        c.first_sequence = plan.first_sequence;
        c.last_sequence = plan.last_sequence;
        c.summary = "-";
        if (auto bad = check_compaction(c, detail::newest_sequence(events))) detail::refuse_compaction(bad.message);
    }
    if (!holds_plan_events(events, plan))
        detail::refuse_compaction("prepare_compaction: the events given do not hold sequences " +
                                  std::to_string(plan.first_sequence) + " to " + std::to_string(plan.last_sequence) +
                                  " of the plan (nor a compaction it rolls up and the events after it)");
    const std::size_t lo = detail::index_from(events, plan.first_sequence);
    const std::size_t hi = detail::index_after(events, plan.last_sequence);
    if (lo >= hi) return std::nullopt;

    compaction_input in;
    in.plan = plan;
    in.end_timestamp = events[hi - 1].timestamp;
    const event* prev = detail::rolled_compaction(events, plan);
    const bool whole = detail::holds_sequences(events, plan.first_sequence, plan.last_sequence);
    if (whole) {
        in.start_timestamp = events[lo].timestamp;
        for (std::size_t i = lo; i < hi; ++i)
            if (!events[i].is_compaction()) ++in.event_count;
    } else { // a context load: the rolled-up summary stands for its range
        const auto& pc = *prev->actions.compaction;
        in.start_timestamp = pc.start_timestamp;
        in.event_count = pc.event_count;
        for (std::size_t i = detail::index_after(events, pc.last_sequence); i < hi; ++i)
            if (!events[i].is_compaction()) ++in.event_count;
    }

    // The newest compaction inside the plan that starts where it starts: rolled into this one.
    std::size_t from = lo;
    if (prev) {
        in.request.previous_summary = prev->actions.compaction->summary;
        from = detail::index_after(events, prev->actions.compaction->last_sequence);
    }
    // Compaction events the previous summary already stands for are not summarised again.
    while (from < hi && events[from].is_compaction() && prev &&
           prev->actions.compaction->contains(*events[from].actions.compaction))
        ++from;

    std::size_t split = hi;
    if (hi < events.size() && events[hi].type != event_type::user_message) {
        for (std::size_t i = hi; i-- > from;) {
            if (events[i].type == event_type::user_message) {
                split = i;
                break;
            }
        }
    }
    in.request.events = events.subspan(from, split - from);
    in.request.turn_prefix = events.subspan(split, hi - split);
    if (const auto undone = undone_ranges(events);
        std::any_of(undone.begin(), undone.end(), [&](const undone_range& r) { return r.first < hi && r.last >= from; })) {
        auto kept = std::make_shared<std::vector<event>>();
        std::size_t before_split = 0;
        auto r = undone.begin();
        for (std::size_t i = from; i < hi; ++i) {
            while (r != undone.end() && r->last < i) ++r;
            if (r != undone.end() && r->first <= i) continue;
            kept->push_back(events[i]);
            if (i < split) ++before_split;
        }
        const event_span all(*kept);
        in.request.events = all.subspan(0, before_split);
        in.request.turn_prefix = all.subspan(before_split);
        in.request.identifiers = critical_identifiers(all, ids);
        in.shown = std::move(kept);
        return in;
    }
    in.request.identifiers = critical_identifiers(events.subspan(from, hi - from), ids);
    return in;
}

/// The compaction event for `in`, recording `s` (not stored: no sequence, id or signature).
/// Refused with boost::system::system_error(errc::invalid_argument) and a message naming the
/// field when check_compaction refuses it: an empty (or whitespace) summary, a reversed
/// range or one starting before 1.
inline event make_compaction_event(const compaction_input& in, summary s, std::string author = "compaction") {
    event_compaction c;
    c.first_sequence = in.plan.first_sequence;
    c.last_sequence = in.plan.last_sequence;
    c.start_timestamp = in.start_timestamp;
    c.end_timestamp = in.end_timestamp;
    c.summary = std::move(s.text);
    c.event_count = in.event_count;
    if (auto bad = check_compaction(c)) detail::refuse_compaction(bad.message);
    event e = event::make(event_type::agent_message, std::move(author));
    e.actions.compaction = std::move(c);
    e.usage = std::move(s.usage); // the summarizer's own tokens; never a trigger (token_budget)
    if (!s.produced_by.empty()) e.metadata["produced_by"] = s.produced_by;
    if (!s.fallback_reason.empty()) e.metadata["fallback_reason"] = s.fallback_reason;
    return e;
}

/// Summarises `plan` over `events` with `s` and returns the compaction event; nullopt when
/// the range holds no event. The events must outlive the operation. Summarizer failures
/// and refusals (prepare_compaction, make_compaction_event) propagate
/// (boost::system::system_error).
template <summarizer S>
boost::asio::awaitable<std::optional<event>> async_compact(event_span events, compaction_plan plan, S s,
                                                           compactor_options o = {}) {
    std::optional<compaction_input> in = prepare_compaction(events, plan, o.identifiers);
    if (!in) co_return std::nullopt;
    summary_request req = in->request;
    boost::asio::awaitable<summary> op = s.async_summarize(std::move(req));
    summary sum = co_await std::move(op);
    co_return make_compaction_event(*in, std::move(sum), std::move(o.author));
}

/// What to compact when the model reported a context overflow: the strategy's own plan if it
/// has one, else everything before the current turn (the newest user message), or, when the
/// turn is all there is, the turn but its newest event; rolled into the newest compaction
/// (same first sequence) and never past an open obligation. nullopt: nothing can go.
template <compaction_strategy C>
std::optional<compaction_plan> forced_plan(const C& strategy, const session_view& v) {
    if (auto p = strategy.plan(v)) return p;
    event_span events(v.session.events);
    if (events.empty()) return std::nullopt;
    const event* prev = detail::newest_compaction(events);
    const std::size_t raw_first = prev ? detail::index_after(events, prev->actions.compaction->last_sequence) : 0;
    std::size_t turn = events.size();
    for (std::size_t i = events.size(); i-- > raw_first;) {
        if (events[i].type == event_type::user_message) {
            turn = i;
            break;
        }
    }
    std::optional<std::size_t> end;
    if (turn != events.size() && turn > raw_first) end = detail::safe_end(events, raw_first, turn - 1);
    if (!end && events.size() >= raw_first + 2) end = detail::safe_end(events, raw_first, events.size() - 2);
    // A range of compaction events only would summarise nothing new.
    while (end && events[*end].is_compaction()) {
        if (*end == raw_first) {
            end.reset();
            break;
        }
        end = *end - 1;
    }
    if (!end || *end < raw_first) return std::nullopt;
    const std::int64_t first = prev ? prev->actions.compaction->first_sequence : events[raw_first].sequence;
    return compaction_plan{first, events[*end].sequence};
}

namespace detail {

template <class C>
struct is_compactor : std::false_type {};
template <class St, class Su>
struct is_compactor<compactor<St, Su>> : std::true_type {};

} // namespace detail

} // namespace libretto

#endif
