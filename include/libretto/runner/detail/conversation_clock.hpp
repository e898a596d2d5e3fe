// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_CONVERSATION_CLOCK_HPP
#define LIBRETTO_RUNNER_DETAIL_CONVERSATION_CLOCK_HPP

// When a conversation's session is no longer fresh (reset_policy): the daily boundary in a
// time zone, and the idle window. The definitions (impl/conversation_clock.ipp) use
// Boost.DateTime, whose headers stay out of a program's files in separate compilation.

#include <libretto/detail/config.hpp>
#include <libretto/runner/reset_policy.hpp>
#include <libretto/store/session_index.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace libretto::detail {

/// A POSIX TZ string in Boost's sign convention, or "" with `why` saying what is wrong.
LIBRETTO_DECL std::string boost_tz_from_posix(std::string_view tz, std::string& why);

struct conversation_zone; // the policy's time zone, a Boost.DateTime posix_time_zone

/// What a runner's conversation turns decide freshness with.
struct conversation_clock {
    reset_policy policy;
    std::shared_ptr<const conversation_zone> zone;

    /// The newest daily boundary at or before `now` (seconds since the epoch).
    LIBRETTO_DECL double last_boundary(double now) const;
    /// "daily" or "idle" when the entry's session is no longer fresh at `now`; "" if it is.
    LIBRETTO_DECL std::string stale_reason(const conversation_entry& e, double now) const;
};

/// The clock of `p`, or null when `p` resets nothing; throws turn_error (invalid_argument)
/// naming what is wrong with `p`.
LIBRETTO_DECL std::shared_ptr<const conversation_clock> make_conversation_clock(const reset_policy& p);

} // namespace libretto::detail

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/runner/impl/conversation_clock.ipp>
#endif

#endif
