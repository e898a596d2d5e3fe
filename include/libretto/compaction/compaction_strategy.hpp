// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_COMPACTION_STRATEGY_HPP
#define LIBRETTO_COMPACTION_COMPACTION_STRATEGY_HPP

// The compaction_strategy concept: what the runner asks of a compaction policy
// (docs/compaction.md, "The concept").
//
// Valid expressions, for a strategy type C, `const C c`, `const session_view v`:
//
//   c.plan(v) -> std::optional<compaction_plan>   pure, no I/O: which range to summarise
//
// The runner calls plan() after a turn's stream has ended (never mid-stream). When a plan
// comes back it asks the strategy for the summary event, with
//
//   c.async_compact(v, plan) -> asio::awaitable<std::optional<event>>
//
// and appends that event like any other. A strategy without async_compact (or that
// returns nullopt) leaves the session as it is.

#include <libretto/session/session.hpp>

#include <concepts>
#include <cstdint>
#include <optional>

namespace libretto {

/// What a strategy plans from: the session as the runner holds it after a turn (what a
/// context view of it needs — the shown summaries and the events after the newest covered
/// range, plus the newest range's events for a strategy that plans_from_newest_range — and
/// the turn's own events).
struct session_view {
    const libretto::session& session;
};

/// The events to summarise, by sequence (inclusive).
struct compaction_plan {
    std::int64_t first_sequence = 0;
    std::int64_t last_sequence = 0;
    friend bool operator==(const compaction_plan&, const compaction_plan&) = default;
};

template <class C>
concept compaction_strategy = requires(const C& c, const session_view& v) {
    { c.plan(v) } -> std::same_as<std::optional<compaction_plan>>;
};

/// True if strategy `c` plans from the events of the newest compaction's range too, not only
/// from what a context view shows (sliding_window with an overlap starts its next range
/// inside the previous one): a runner then loads those events as well
/// (get_options::with_newest_range). A strategy says so with a member
/// `bool plans_from_newest_range() const`; without one it does not.
template <class C>
bool plans_from_newest_range(const C& c) {
    if constexpr (requires { { c.plans_from_newest_range() } -> std::convertible_to<bool>; })
        return c.plans_from_newest_range();
    else
        return false;
}

} // namespace libretto

#endif
