// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STREAM_STREAM_OPTIONS_HPP
#define LIBRETTO_STREAM_STREAM_OPTIONS_HPP

#include <cstddef>

namespace libretto {

/// Options of a basic_event_stream.
struct stream_options {
    /// Items the producer may emit ahead of the consumer before emit() suspends.
    /// 0 means rendezvous: emit() completes only once the consumer has taken the item.
    std::size_t capacity = 16;
};

} // namespace libretto

#endif
