// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_DEADLINE_HPP
#define LIBRETTO_DETAIL_DEADLINE_HPP

// Deadlines from users' durations. `now() + d` overflows the steady clock's nanoseconds
// for a "wait forever" milliseconds::max() (undefined behaviour, and in practice a
// deadline in the past: no wait at all), so the sum saturates at the clock's end.

#include <chrono>
#include <string>
#include <string_view>

namespace libretto::detail {

/// steady_clock::now() + d, saturated: past the clock's end is its end; d <= 0 is now.
template <class Rep, class Period>
std::chrono::steady_clock::time_point deadline_after(std::chrono::duration<Rep, Period> d) noexcept {
    using clock = std::chrono::steady_clock;
    const auto now = clock::now();
    if (d <= d.zero()) return now;
    // The room left, in d's unit (rounded down, so the cast back cannot overflow).
    const auto room = std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(clock::time_point::max() - now);
    if (d >= room) return clock::time_point::max();
    return now + std::chrono::duration_cast<clock::duration>(d);
}

/// "<option> is negative (-5 ms)" for a negative `d`, else "".
inline std::string negative_duration_problem(std::string_view option, std::chrono::milliseconds d) {
    if (d.count() >= 0) return {};
    return std::string(option) + " is negative (" + std::to_string(d.count()) + " ms)";
}

} // namespace libretto::detail

#endif
