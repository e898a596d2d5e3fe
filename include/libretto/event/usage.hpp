// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_USAGE_HPP
#define LIBRETTO_EVENT_USAGE_HPP

#include <cstdint>
#include <string>

namespace libretto {

/// Token accounting of the model call that produced an event.
struct usage {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::string model_version;

    std::int64_t total_tokens() const noexcept { return input_tokens + output_tokens; }
    friend bool operator==(const usage&, const usage&) = default;
};

} // namespace libretto

#endif
