// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_TOKEN_BUDGET_HPP
#define LIBRETTO_COMPACTION_TOKEN_BUDGET_HPP

// token_budget: pi/OpenClaw's rule. Compact when the context is larger than
// context_window − reserve_tokens (strictly, as pi), keeping the newest events worth at
// least keep_recent_tokens raw.
//
//   context tokens  the newest model usage (input + output) reported after the newest
//                   compaction, plus an estimate (characters / 4) of the events after it;
//                   without such usage, an estimate of the whole view (the newest summary
//                   and the raw events after it). A compaction event's own usage (the
//                   summarizer's call) is never used: summarising must not re-trigger.
//   cut point       walking back from the newest event until keep_recent_tokens are kept;
//                   the kept tail never starts at a tool response (the cut moves back to
//                   the call), and the summarised range
//                   ends where no call, confirmation or long-running call is open.
//   rolling         with an earlier compaction, the new plan starts at that compaction's
//                   first sequence: the new summary updates the previous one and subsumes
//                   it (the summarizer gets the previous summary and only the new events).
//   split turn      when the kept tail starts inside a turn (not at a user message), the
//                   range still ends there; the summarizer sees the turn's start as the
//                   turn prefix (see the runner's compaction step).

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/plan_support.hpp>
#include <libretto/compaction/estimate.hpp>
#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/error.hpp>

#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>

namespace libretto {

struct token_budget {
    std::int64_t context_window = 128'000;
    std::int64_t reserve_tokens = 16'384;
    std::int64_t keep_recent_tokens = 20'000;

    /// The context size plan() compares with the budget (exposed for tests and logs).
    std::int64_t context_tokens(event_span events) const noexcept {
        const event* prev = detail::newest_compaction(events);
        const std::int64_t prev_seq = prev ? prev->sequence : 0;
        // Newest usage after the newest compaction event, from a model reply.
        std::int64_t est_after = 0;
        for (std::size_t i = events.size(); i-- > 0;) {
            const event& e = events[i];
            if (e.sequence <= prev_seq && prev) break;
            if (e.usage && !e.actions.compaction && !e.partial)
                return detail::saturating_add(e.usage->total_tokens(), est_after); // counts from a provider: saturate
            est_after += event_tokens(e);
        }
        // No usable usage: estimate the view (the newest summary and the raw events after its range).
        std::int64_t est = 0;
        std::size_t first = 0;
        if (prev) {
            est += estimate_tokens(prev->actions.compaction->summary.size());
            first = detail::index_after(events, prev->actions.compaction->last_sequence);
        }
        for (std::size_t i = first; i < events.size(); ++i)
            if (!events[i].actions.compaction) est += event_tokens(events[i]);
        return est;
    }

    /// Throws system_error(errc::invalid_argument) naming what cannot hold: a negative
    /// member, a context_window not above reserve_tokens (every turn would compact), or
    /// keep_recent_tokens not below context_window (the kept events alone fill the window,
    /// so no compaction could make room).
    void check() const {
        auto refuse = [](std::string what) {
            boost::throw_exception(boost::system::system_error(make_error_code(errc::invalid_argument), "token_budget: " + what));
        };
        for (auto [name, v] : {std::pair{"context_window", context_window}, {"reserve_tokens", reserve_tokens},
                               {"keep_recent_tokens", keep_recent_tokens}})
            if (v < 0) refuse(std::string(name) + " is " + std::to_string(v) + ", below 0");
        if (context_window <= reserve_tokens)
            refuse("reserve_tokens (" + std::to_string(reserve_tokens) + ") leaves no room in context_window (" +
                   std::to_string(context_window) + "): every turn would compact");
        if (keep_recent_tokens >= context_window)
            refuse("keep_recent_tokens (" + std::to_string(keep_recent_tokens) + ") is not below context_window (" +
                   std::to_string(context_window) + "): the kept events alone would fill it");
    }

    /// Throws as check() does.
    std::optional<compaction_plan> plan(const session_view& v) const {
        check();
        event_span events(v.session.events);
        if (events.empty()) return std::nullopt;
        if (context_tokens(events) <= context_window - reserve_tokens) return std::nullopt;
        const event* prev = detail::newest_compaction(events);
        const std::size_t raw_first = prev ? detail::index_after(events, prev->actions.compaction->last_sequence) : 0;
        // Walk back until keep_recent_tokens are kept.
        std::int64_t kept = 0;
        std::size_t keep_from = events.size();
        while (keep_from > raw_first && kept < keep_recent_tokens) {
            --keep_from;
            if (!events[keep_from].actions.compaction) kept += event_tokens(events[keep_from]);
        }
        // The tail must not start at a tool response (its call would be summarised away):
        // move the cut back to the call, keeping a little more than the budget (OpenClaw
        // shifts the boundary to the tool-call message the same way).
        while (keep_from > raw_first && keep_from < events.size() && starts_with_response(events[keep_from])) --keep_from;
        if (keep_from <= raw_first) return std::nullopt;
        auto end = detail::safe_end(events, raw_first, keep_from - 1);
        if (!end) return std::nullopt;
        const std::int64_t first_seq = prev ? prev->actions.compaction->first_sequence : events[raw_first].sequence;
        return compaction_plan{first_seq, events[*end].sequence};
    }

private:
    static bool starts_with_response(const event& e) noexcept {
        for (const auto& p : e.content.parts)
            if (std::holds_alternative<tool_response_part>(p)) return true;
        return false;
    }
};

static_assert(compaction_strategy<token_budget>);

} // namespace libretto

#endif
