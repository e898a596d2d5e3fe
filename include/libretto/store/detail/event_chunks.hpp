// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_EVENT_CHUNKS_HPP
#define LIBRETTO_STORE_DETAIL_EVENT_CHUNKS_HPP

// memory_store's container of a session's stored events.

#include <libretto/event/event_list.hpp>

#include <bit>
#include <cstddef>
#include <utility>
#include <vector>

namespace libretto::detail {

/// A session's events in chunks: an append never moves the events already stored (a
/// vector would move all of them, and touch twice their memory, each time it grows),
/// and a chunk is small enough for the allocator to reuse freed memory. The first
/// chunks are small (8, 8, 16, 32 events) so that a short session costs ~5 KB rather
/// than a 40 KB chunk; from the 65th event on every chunk holds 64.
class event_chunks {
public:
    static constexpr std::size_t first_chunk = 8;
    static constexpr std::size_t chunk_size = 64; // ~40 KB of events per chunk

    std::size_t size() const noexcept { return size_; }
    const event& operator[](std::size_t i) const noexcept { return *shared(i); }
    /// The stored event as the shared node a get hands out (no copy).
    const event_list::pointer_type& shared(std::size_t i) const noexcept {
        const auto [c, k] = locate(i);
        return chunks_[c][k];
    }
    void push_back(event_list::pointer_type e) {
        if (chunks_.empty() || chunks_.back().size() == chunks_.back().capacity()) {
            chunks_.emplace_back();
            chunks_.back().reserve(chunk_capacity(chunks_.size() - 1));
        }
        chunks_.back().push_back(std::move(e));
        ++size_;
    }

    /// Chunk c holds first_chunk << (c - 1) events for c in 1..3 (8 for c == 0), then 64.
    static constexpr std::size_t chunk_capacity(std::size_t c) noexcept {
        return c == 0 ? first_chunk : c < 4 ? first_chunk << (c - 1) : chunk_size;
    }
    /// (chunk, index in it) of event i. Chunks 0..3 cover [0, 8), [8, 16), [16, 32),
    /// [32, 64): for 8 <= i < 64 the chunk is bit_width(i) - 3.
    static constexpr std::pair<std::size_t, std::size_t> locate(std::size_t i) noexcept {
        if (i < first_chunk) return {0, i};
        if (i < chunk_size) {
            const std::size_t c = static_cast<std::size_t>(std::bit_width(i)) - 3;
            return {c, i - (std::size_t{1} << (c + 2))};
        }
        return {i / chunk_size + 3, i % chunk_size};
    }

private:
    std::vector<std::vector<event_list::pointer_type>> chunks_;
    std::size_t size_ = 0;
};

} // namespace libretto::detail

#endif
