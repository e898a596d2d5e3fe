// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_RESET_POLICY_HPP
#define LIBRETTO_RUNNER_RESET_POLICY_HPP

// reset_policy: when a runner's conversation turns start a new session for their key
// (runner_options::reset). docs/sessions.md, "Resets".

#include <chrono>
#include <optional>
#include <string>

namespace libretto {

/// When a conversation's current session is replaced by a new one (conversation turns,
/// run_options::conversation): on the first non-background turn after the daily boundary
/// or after the idle window, whichever comes first. Unset members do not apply.
struct reset_policy {
    /// The hour (0 to 23, local time in time_zone) at which each day's conversations
    /// start afresh.
    std::optional<int> daily_at_hour{};
    /// The local time of daily_at_hour, as a POSIX TZ string: "UTC0", "CET-1CEST,M3.5.0,
    /// M10.5.0/3" (Central Europe, with summer time), "EST5EDT,M3.2.0,M11.1.0", "<+0530>-5:30".
    std::string time_zone = "UTC0";
    /// A session whose last interaction (last non-background turn) is older than this.
    std::optional<std::chrono::minutes> idle{};
};

} // namespace libretto

#endif
