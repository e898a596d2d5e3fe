// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_DETAIL_EVENT_SLAB_HPP
#define LIBRETTO_EVENT_DETAIL_EVENT_SLAB_HPP

// Memory for the event nodes a bulk load decodes (a jsonl_store get of 100,000 events).
// Each node (a shared_ptr control block with its event, ~400 bytes) is carved out of a
// 2 MiB block asked for as a transparent huge page, instead of one malloc per event on 4
// KiB pages: where page faults are slow, the first touches of fresh pages cost more than
// decoding. A block counts the nodes alive in it and is freed with the last of them, from
// whichever thread drops it. The cost: one surviving event keeps its block's 2 MiB (~5,000
// nodes) alive. Nodes are never reused inside a block; a load fills a block once.

#include <libretto/event/event_list.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace libretto::detail {

class slab_block {
public:
    static constexpr std::size_t block_bytes = std::size_t{2} << 20;

    /// A new block, with one reference held by its filler (released by release()).
    static slab_block* create() {
        void* mem = std::aligned_alloc(block_bytes, block_bytes);
        if (!mem) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        (void)::madvise(mem, block_bytes, MADV_HUGEPAGE);
#endif
        return ::new (mem) slab_block();
    }

    /// Room for `bytes` more (aligned as any object)? The filler asks before each node.
    bool fits(std::size_t bytes) const noexcept { return used_ + round(bytes) <= block_bytes; }

    /// Carves `bytes` out of the block (the caller checked fits()); null if it does not fit.
    void* take(std::size_t bytes) noexcept {
        const std::size_t n = round(bytes);
        if (used_ + n > block_bytes) return nullptr;
        void* p = reinterpret_cast<char*>(this) + used_;
        used_ += n;
        live_.fetch_add(1, std::memory_order_relaxed);
        return p;
    }

    bool owns(const void* p) const noexcept {
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        const auto b = reinterpret_cast<std::uintptr_t>(this);
        return a >= b && a < b + block_bytes;
    }

    /// Drops one reference (a node's, or the filler's); the last one frees the block.
    void release() noexcept {
        if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            this->~slab_block();
            std::free(this);
        }
    }

    std::size_t used() const noexcept { return used_; }
    /// References: the nodes alive in the block, plus one while a filler holds it.
    std::size_t live() const noexcept { return live_.load(std::memory_order_acquire); }

private:
    slab_block() = default;
    static constexpr std::size_t round(std::size_t n) noexcept {
        constexpr std::size_t a = alignof(std::max_align_t);
        return (n + a - 1) & ~(a - 1);
    }
    static constexpr std::size_t header_bytes() noexcept { return round(sizeof(std::atomic<std::size_t>) + sizeof(std::size_t)); }

    std::atomic<std::size_t> live_{1};
    std::size_t used_ = header_bytes();
};

/// The allocator allocate_shared keeps in each node's control block: carves from a block,
/// gives back to it. An allocation that does not fit goes to operator new (and back).
template <class T>
struct slab_allocator {
    using value_type = T;

    slab_block* block = nullptr;

    slab_allocator() = default;
    explicit slab_allocator(slab_block* b) noexcept : block(b) {}
    template <class U>
    slab_allocator(const slab_allocator<U>& o) noexcept : block(o.block) {} // NOLINT: rebinding

    T* allocate(std::size_t n) {
        static_assert(alignof(T) <= alignof(std::max_align_t));
        if (block)
            if (void* p = block->take(n * sizeof(T))) return static_cast<T*>(p);
        return static_cast<T*>(::operator new(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t) noexcept {
        if (block && block->owns(p)) block->release();
        else ::operator delete(p);
    }

    template <class U>
    friend bool operator==(const slab_allocator& a, const slab_allocator<U>& b) noexcept {
        return a.block == b.block;
    }
};

/// One thread's filler: hands out event nodes from its current block, moving to a new
/// block when the current one is nearly full. Not thread-safe; the nodes are.
class event_slab {
public:
    event_slab() = default;
    event_slab(const event_slab&) = delete;
    event_slab& operator=(const event_slab&) = delete;
    event_slab(event_slab&& o) noexcept : block_(std::exchange(o.block_, nullptr)) {}
    event_slab& operator=(event_slab&& o) noexcept {
        if (this != &o) {
            reset();
            block_ = std::exchange(o.block_, nullptr);
        }
        return *this;
    }
    ~event_slab() { reset(); }

    /// A new, empty event in a node of the current block.
    std::shared_ptr<event> make() {
        // A node is the event plus a control block (two counts, a vtable pointer, the
        // allocator): sizeof(event) + 64 is a safe bound for the check.
        if (!block_ || !block_->fits(sizeof(event) + 64)) {
            reset();
            block_ = slab_block::create();
        }
        return std::allocate_shared<event>(slab_allocator<event>(block_));
    }

    /// Lets the current block go (it is freed once its nodes are).
    void reset() noexcept {
        if (block_) std::exchange(block_, nullptr)->release();
    }

    const slab_block* current() const noexcept { return block_; }

private:
    slab_block* block_ = nullptr;
};

} // namespace libretto::detail

#endif
