// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_NO_COMPACTION_HPP
#define LIBRETTO_COMPACTION_NO_COMPACTION_HPP

// The compaction policy that never compacts: the runner's default.

#include <libretto/compaction/compaction_strategy.hpp>

#include <optional>

namespace libretto {

/// Never compacts; costs nothing (the runner does not even build a view for it).
struct no_compaction {
    std::optional<compaction_plan> plan(const session_view&) const noexcept { return std::nullopt; }
};

static_assert(compaction_strategy<no_compaction>);

} // namespace libretto

#endif
