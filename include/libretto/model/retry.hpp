// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_RETRY_HPP
#define LIBRETTO_MODEL_RETRY_HPP

// The library's one retry policy for transient model failures (errc::transient, timeouts,
// dropped connections: is_transient): exponential backoff with jitter, a bounded number of
// attempts, and the provider's Retry-After honoured. Pure (the random source is a
// parameter), so the schedule is testable and the driver only sleeps.
//
// One layer retries, with these options (docs/models.md, "Retries"): a model that talks
// HTTP (openai_model, anthropic_model: provider_http_options::retry) retries its own
// transient failures and says so (model_retries_transient, model/model.hpp); llm_agent
// never retries such a model. A model that does not retry itself (scripted_model, a
// user's own) is retried by llm_agent with llm_agent_options::retry, the same type.

#include <libretto/error.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace libretto {

/// How the backoff delay is randomised (AWS Architecture Blog, "Exponential Backoff And
/// Jitter", 2015): jitter spreads the retries of many clients that failed together.
enum class retry_jitter {
    none,         ///< exactly initial × multiplier^(n-1), capped at max_delay
    full,         ///< uniform in [0, that]: the fewest collisions, the default
    equal,        ///< half of it plus uniform in [0, half]: never much shorter than planned
    decorrelated, ///< uniform in [initial, 3 × the previous delay], capped at max_delay
};

/// Plain knobs; every member has a usable default.
struct retry_options {
    /// Attempts in all, the first included: 4 means up to 3 retries; 1 never retries.
    std::size_t max_attempts = 4;
    std::chrono::milliseconds initial_delay{500};
    double multiplier = 2.0;
    std::chrono::milliseconds max_delay{30'000};
    retry_jitter jitter = retry_jitter::full;
    /// A provider's Retry-After is waited for exactly, up to this; a longer one is cut to it
    /// (a quota that resets in an hour is better reported after the last attempt than waited for).
    std::chrono::milliseconds max_retry_after{60'000};

    friend bool operator==(const retry_options&, const retry_options&) = default;
};

/// Why `o` is unusable ("max_attempts must be at least 1"), or empty if it is fine.
/// next_delay() does not fail on bad options: it clamps them (a zero max_attempts counts as
/// 1, a negative delay as 0, a multiplier below 1 or not finite as 1); llm_agent,
/// openai_model and anthropic_model refuse them through require_valid() instead.
inline std::string check(const retry_options& o) {
    if (o.max_attempts < 1) return "retry_options: max_attempts must be at least 1";
    if (o.initial_delay.count() < 0) return "retry_options: initial_delay must not be negative";
    if (!(o.multiplier >= 1.0) || !std::isfinite(o.multiplier))
        return "retry_options: multiplier must be a finite number >= 1";
    if (o.max_delay < o.initial_delay) return "retry_options: max_delay must be at least initial_delay";
    if (o.max_retry_after.count() < 0) return "retry_options: max_retry_after must not be negative";
    return {};
}

/// Throws system_error(errc::invalid_argument) if check() refuses `o`, the message naming
/// where the options were set: "llm_agent 'a': retry.multiplier must be a finite number >= 1"
/// for `where` "llm_agent 'a': retry".
inline void require_valid(const retry_options& o, std::string_view where) {
    std::string why = check(o);
    if (why.empty()) return;
    constexpr std::string_view prefix = "retry_options: ";
    std::string m(where);
    m += '.';
    m.append(why, prefix.size()); // every message of check() starts with the prefix
    throw boost::system::system_error(make_error_code(errc::invalid_argument), m);
}

namespace detail {

/// A fraction in [0, 1) from a UniformRandomBitGenerator (not std::uniform_real_distribution,
/// whose output differs between standard libraries: the schedule is the same everywhere).
template <class URBG>
double unit_fraction(URBG& g) {
    using result = typename std::decay_t<URBG>::result_type;
    const long double lo = static_cast<long double>((std::decay_t<URBG>::min)());
    const long double hi = static_cast<long double>((std::decay_t<URBG>::max)());
    const result r = g();
    return static_cast<double>((static_cast<long double>(r) - lo) / (hi - lo + 1.0L));
}

inline std::chrono::milliseconds to_ms(double v) {
    if (!(v > 0)) return std::chrono::milliseconds(0);
    constexpr double cap = 9.0e15; // far beyond any sane delay, well inside int64
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(v, cap)));
}

} // namespace detail

/// The pause before the next attempt, or nullopt when no attempt is left.
///
/// `attempt` is the number of attempts made so far (1 after the first failure). With a
/// `retry_after` from the provider, the pause is exactly that, cut to `max_retry_after`;
/// otherwise it is `initial_delay × multiplier^(attempt-1)` capped at `max_delay`, randomised
/// by `jitter` with `random` (any UniformRandomBitGenerator, e.g. std::mt19937).
/// `previous` is the pause returned for the previous retry (decorrelated jitter only; zero
/// on the first).
template <class URBG>
std::optional<std::chrono::milliseconds> next_delay(const retry_options& o, std::size_t attempt,
                                                    std::optional<std::chrono::milliseconds> retry_after,
                                                    URBG&& random, std::chrono::milliseconds previous = {}) {
    using std::chrono::milliseconds;
    const std::size_t max_attempts = std::max<std::size_t>(o.max_attempts, 1);
    if (attempt == 0) attempt = 1;
    if (attempt >= max_attempts) return std::nullopt;
    if (retry_after) {
        milliseconds ra = std::max(*retry_after, milliseconds(0));
        return std::min(ra, std::max(o.max_retry_after, milliseconds(0)));
    }
    const double initial = static_cast<double>(std::max<std::int64_t>(o.initial_delay.count(), 0));
    const double cap = std::max(static_cast<double>(o.max_delay.count()), initial);
    const double multiplier = (o.multiplier >= 1.0 && std::isfinite(o.multiplier)) ? o.multiplier : 1.0;
    // No delay stays none (0 x inf would be NaN, which std::min turned into the cap), and a
    // growth past double's range is the cap.
    double planned = 0;
    if (initial > 0) {
        const double grown = initial * std::pow(multiplier, static_cast<double>(attempt - 1));
        planned = !(grown < cap) ? cap : grown;
    }
    switch (o.jitter) {
    case retry_jitter::none: return detail::to_ms(planned);
    case retry_jitter::full: return detail::to_ms(planned * detail::unit_fraction(random));
    case retry_jitter::equal: return detail::to_ms(planned / 2 + planned / 2 * detail::unit_fraction(random));
    case retry_jitter::decorrelated: {
        const double prev = std::max(static_cast<double>(previous.count()), initial);
        const double hi = std::max(prev * 3, initial);
        return detail::to_ms(std::min(cap, initial + (hi - initial) * detail::unit_fraction(random)));
    }
    }
    return detail::to_ms(planned);
}

/// next_delay() with its bookkeeping: one per request, asked after each failed attempt.
///
///     retry_schedule schedule{options};
///     for (;;) {
///         llm_response r = co_await attempt();
///         if (r.ok() || !is_transient(r.error)) return r;
///         auto pause = schedule.next(r.retry_after, rng);
///         if (!pause) return r;                        // attempts exhausted: report the last failure
///         co_await sleep(*pause);
///     }
class retry_schedule {
public:
    explicit retry_schedule(retry_options o = {}) : options_(o) {}

    /// Records a failed attempt; the pause before the next one, or nullopt if none is left.
    template <class URBG>
    std::optional<std::chrono::milliseconds> next(std::optional<std::chrono::milliseconds> retry_after, URBG&& random) {
        ++attempts_;
        auto d = next_delay(options_, attempts_, retry_after, random, previous_);
        if (d) previous_ = *d;
        return d;
    }

    /// Attempts recorded as failed so far.
    std::size_t attempts() const noexcept { return attempts_; }
    const retry_options& options() const noexcept { return options_; }

private:
    retry_options options_;
    std::size_t attempts_ = 0;
    std::chrono::milliseconds previous_{0};
};

} // namespace libretto

#endif
