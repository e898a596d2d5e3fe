// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STREAM_DETAIL_RING_BUFFER_HPP
#define LIBRETTO_STREAM_DETAIL_RING_BUFFER_HPP

#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace libretto::detail {

/// FIFO of T over a circular array that grows geometrically when full and never shrinks.
/// The stream's buffer is bounded by its capacity plus the number of concurrent emitters,
/// so after warm-up it never allocates: no heap allocation per item (std::deque would
/// allocate and free a node every few hundred bytes of traffic).
/// Lazy: nothing is allocated before the first push_back, which allocates
/// `initial_capacity` slots; a stream whose consumer keeps up never needs more than one or
/// two, whatever its capacity (a slot is a whole T: ~630 bytes for an event).
template <class T>
class ring_buffer {
public:
    explicit ring_buffer(std::size_t initial_capacity) noexcept
        : first_cap_(initial_capacity ? initial_capacity : 1) {}

    ring_buffer(const ring_buffer&) = delete;
    ring_buffer& operator=(const ring_buffer&) = delete;

    bool empty() const noexcept { return size() == 0; }
    std::size_t size() const noexcept { return size_ + (ready_.size() - ready_pos_); }

    /// Takes `items` as they are, to be taken before anything pushed later: a stream over
    /// items known up front adopts their vector (no second buffer, no move per item).
    /// Precondition: the buffer is empty.
    void adopt(std::vector<T>&& items) noexcept {
        ready_ = std::move(items);
        ready_pos_ = 0;
    }

    void push_back(T&& value) {
        if (size_ == cap_) grow();
        std::size_t i = head_ + size_;
        if (i >= cap_) i -= cap_;
        slots_[i].emplace(std::move(value));
        ++size_;
    }

    /// Removes the first item and returns it, still in its slot: the caller moves the
    /// item out at once, before the buffer is touched again (a stream's next() moves it
    /// straight into its result, with no copy in between and no temporary in its frame).
    /// The moved-from value stays in the slot until the slot is reused or the buffer goes.
    T& take_front() noexcept {
        if (ready_pos_ < ready_.size()) return ready_[ready_pos_++];
        std::optional<T>& slot = slots_[head_];
        if (++head_ == cap_) head_ = 0;
        --size_;
        return *slot;
    }

    void clear() noexcept {
        ready_.clear();
        ready_pos_ = 0;
        while (size_ != 0) {
            slots_[head_].reset();
            if (++head_ == cap_) head_ = 0;
            --size_;
        }
        head_ = 0;
    }

private:
    void grow() { grow_to(cap_ ? cap_ * 2 : first_cap_); }

    void grow_to(std::size_t new_cap) {
        auto fresh = std::make_unique<std::optional<T>[]>(new_cap);
        for (std::size_t k = 0; k < size_; ++k) {
            std::size_t i = head_ + k;
            if (i >= cap_) i -= cap_;
            fresh[k].emplace(std::move(*slots_[i]));
        }
        slots_ = std::move(fresh);
        cap_ = new_cap;
        head_ = 0;
    }

    std::vector<T> ready_; // adopted items, taken from ready_pos_ on
    std::size_t ready_pos_ = 0;
    std::unique_ptr<std::optional<T>[]> slots_;
    std::size_t first_cap_;
    std::size_t cap_ = 0;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

} // namespace libretto::detail

#endif
