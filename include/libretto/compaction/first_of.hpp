// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_FIRST_OF_HPP
#define LIBRETTO_COMPACTION_FIRST_OF_HPP

// first_of<S...>: strategies tried in order; the first plan wins. ADK's combination is
// first_of<token_budget, sliding_window>: when the token path compacts, the sliding
// window is skipped for that turn.

#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/compaction/no_compaction.hpp>

#include <optional>
#include <tuple>
#include <utility>

namespace libretto {

template <compaction_strategy... S>
struct first_of {
    std::tuple<S...> strategies;

    first_of() = default;
    template <class... A>
        requires(sizeof...(A) == sizeof...(S) && sizeof...(S) > 0)
    explicit first_of(A&&... s) : strategies(std::forward<A>(s)...) {}

    /// True if any of the strategies does.
    bool plans_from_newest_range() const {
        return std::apply([](const auto&... s) { return (libretto::plans_from_newest_range(s) || ...); }, strategies);
    }

    std::optional<compaction_plan> plan(const session_view& v) const {
        std::optional<compaction_plan> out;
        std::apply([&](const auto&... s) { (void)((out = s.plan(v)).has_value() || ...); }, strategies);
        return out;
    }
};

template <class... S>
first_of(S...) -> first_of<S...>;

static_assert(compaction_strategy<first_of<no_compaction>>);

} // namespace libretto

#endif
