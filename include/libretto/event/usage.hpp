// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_USAGE_HPP
#define LIBRETTO_EVENT_USAGE_HPP

#include <cstdint>
#include <limits>
#include <string>

namespace libretto {

namespace detail {

/// a + b, clamped to the range of int64 (token counts come from providers: never wrap).
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
    constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    if (b > 0 && a > hi - b) return hi;
    if (b < 0 && a < lo - b) return lo;
    return a + b;
}

} // namespace detail

/// Token accounting of the model call that produced an event.
struct usage {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::string model_version;

    /// input + output, saturated at the int64 limits.
    std::int64_t total_tokens() const noexcept { return detail::saturating_add(input_tokens, output_tokens); }
    friend bool operator==(const usage&, const usage&) = default;
};

} // namespace libretto

#endif
