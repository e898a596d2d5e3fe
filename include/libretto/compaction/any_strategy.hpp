// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_ANY_STRATEGY_HPP
#define LIBRETTO_COMPACTION_ANY_STRATEGY_HPP

// any_strategy: a compaction_strategy chosen at run time (a config file says
// "token_budget" or "sliding_window"), so one runner type serves them all:
//
//   lb::any_strategy s = cfg.kind == "window" ? lb::any_strategy{lb::sliding_window{4, 1}}
//                                             : lb::any_strategy{lb::token_budget{.context_window = 200'000}};
//   lb::runner r{agent, store, s};   // runner<Agent, Store, any_strategy>
//
// Copies share the (immutable) strategy. An empty any_strategy never plans.

#include <libretto/compaction/compaction_strategy.hpp>

#include <concepts>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace libretto {

class any_strategy {
public:
    /// Never plans (like no_compaction, but the runner still offers the overflow hook).
    any_strategy() = default;

    template <class S>
        requires(!std::same_as<std::remove_cvref_t<S>, any_strategy> && compaction_strategy<std::remove_cvref_t<S>>)
    any_strategy(S&& s) // NOLINT(google-explicit-constructor): a strategy is an any_strategy
        : impl_(std::make_shared<model<std::remove_cvref_t<S>>>(std::forward<S>(s))) {}

    std::optional<compaction_plan> plan(const session_view& v) const {
        if (!impl_) return std::nullopt;
        return impl_->plan(v);
    }

    /// The held strategy's plans_from_newest_range (false when empty).
    bool plans_from_newest_range() const { return impl_ && impl_->plans_from_newest_range(); }

    /// True if a strategy is held.
    explicit operator bool() const noexcept { return static_cast<bool>(impl_); }

    /// The held strategy if it is an S, else nullptr.
    template <class S>
    const S* target() const noexcept {
        auto* m = dynamic_cast<const model<S>*>(impl_.get());
        return m ? &m->s : nullptr;
    }

private:
    struct concept_ {
        virtual ~concept_() = default;
        virtual std::optional<compaction_plan> plan(const session_view& v) const = 0;
        virtual bool plans_from_newest_range() const = 0;
    };
    template <class S>
    struct model final : concept_ {
        explicit model(S x) : s(std::move(x)) {}
        std::optional<compaction_plan> plan(const session_view& v) const override { return s.plan(v); }
        bool plans_from_newest_range() const override { return libretto::plans_from_newest_range(s); }
        S s;
    };
    std::shared_ptr<const concept_> impl_;
};

static_assert(compaction_strategy<any_strategy>);

} // namespace libretto

#endif
