// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_CHAR_BUDGET_HPP
#define LIBRETTO_COMPACTION_CHAR_BUDGET_HPP

// char_budget: orxhestra's compaction rule. When the events not yet compacted hold more
// than threshold_chars characters, keep the newest events totalling at least
// retention_chars raw and summarise the older ones not yet compacted. The summarised
// range never ends inside an open tool call, confirmation or long-running call
// (obligations.hpp), and what an earlier compaction covered is not summarised again.

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/plan_support.hpp>
#include <libretto/compaction/estimate.hpp>
#include <libretto/compaction/compaction_strategy.hpp>

#include <cstddef>
#include <optional>
#include <span>

namespace libretto {

struct char_budget {
    std::size_t threshold_chars = 100'000;
    std::size_t retention_chars = 20'000;

    std::optional<compaction_plan> plan(const session_view& v) const {
        event_span events(v.session.events);
        const event* prev = detail::newest_compaction(events);
        const std::size_t first = prev ? detail::index_after(events, prev->actions.compaction->last_sequence) : 0;
        // Characters not yet compacted (compaction events themselves are not raw history).
        std::size_t total = 0;
        for (std::size_t i = first; i < events.size(); ++i)
            if (!events[i].actions.compaction) total += event_chars(events[i]);
        if (total <= threshold_chars) return std::nullopt;
        // Keep the newest events totalling at least retention_chars.
        std::size_t kept = 0, keep_from = events.size();
        while (keep_from > first && kept < retention_chars) {
            --keep_from;
            if (!events[keep_from].actions.compaction) kept += event_chars(events[keep_from]);
        }
        if (keep_from <= first) return std::nullopt; // everything is within the retention
        auto end = detail::safe_end(events, first, keep_from - 1);
        if (!end) return std::nullopt;
        return compaction_plan{events[first].sequence, events[*end].sequence};
    }
};

static_assert(compaction_strategy<char_budget>);

} // namespace libretto

#endif
