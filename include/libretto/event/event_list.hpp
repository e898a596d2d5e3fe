// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_EVENT_LIST_HPP
#define LIBRETTO_EVENT_EVENT_LIST_HPP

// event_list: a session's events, shared. Reads like a std::vector<event> (size, [],
// iteration, front/back give `const event&`), but holds each event through a
// std::shared_ptr<const event>, so that a store, the session a get returns and a runner's
// copy keep one event instead of three deep copies: copying a list copies pointers, and a
// store's append hands the caller the event it keeps. Stored events are immutable; a
// change goes through modify(i), which copies the event first if anyone else holds it.
//
// event_span: a read-only view of events in either form (a list, or contiguous events such
// as a std::vector<event>), what the functions that read a run of events take.

#include <libretto/event/event.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace libretto {

/// A new shared event. Made as a non-const `event` (held through a pointer to const) so that
/// event_list::modify may change it in place when nothing else holds it.
inline std::shared_ptr<const event> make_shared_event(event e) {
    return std::make_shared<event>(std::move(e));
}

namespace detail {

/// A random-access iterator over `const event&`, reading through `Get(base, i)`.
template <class Base, class Get>
class event_iterator {
public:
    using iterator_category = std::random_access_iterator_tag;
    using iterator_concept = std::random_access_iterator_tag;
    using value_type = event;
    using difference_type = std::ptrdiff_t;
    using pointer = const event*;
    using reference = const event&;

    event_iterator() = default;
    event_iterator(Base b, std::size_t i) noexcept : b_(b), i_(i) {}

    reference operator*() const noexcept { return Get{}(b_, i_); }
    pointer operator->() const noexcept { return &Get{}(b_, i_); }
    reference operator[](difference_type n) const noexcept { return Get{}(b_, i_ + static_cast<std::size_t>(n)); }

    event_iterator& operator++() noexcept { ++i_; return *this; }
    event_iterator operator++(int) noexcept { auto t = *this; ++i_; return t; }
    event_iterator& operator--() noexcept { --i_; return *this; }
    event_iterator operator--(int) noexcept { auto t = *this; --i_; return t; }
    event_iterator& operator+=(difference_type n) noexcept { i_ = static_cast<std::size_t>(static_cast<difference_type>(i_) + n); return *this; }
    event_iterator& operator-=(difference_type n) noexcept { return *this += -n; }
    friend event_iterator operator+(event_iterator it, difference_type n) noexcept { return it += n; }
    friend event_iterator operator+(difference_type n, event_iterator it) noexcept { return it += n; }
    friend event_iterator operator-(event_iterator it, difference_type n) noexcept { return it -= n; }
    friend difference_type operator-(const event_iterator& a, const event_iterator& b) noexcept {
        return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const event_iterator& a, const event_iterator& b) noexcept { return a.i_ == b.i_; }
    friend auto operator<=>(const event_iterator& a, const event_iterator& b) noexcept { return a.i_ <=> b.i_; }

    std::size_t index() const noexcept { return i_; }

private:
    Base b_{};
    std::size_t i_ = 0;
};

struct shared_slot_get {
    const event& operator()(const std::shared_ptr<const event>* p, std::size_t i) const noexcept { return *p[i]; }
};

/// What an event_span iterator reads: contiguous events, or a list's pointers.
struct span_base {
    const event* flat = nullptr;
    const std::shared_ptr<const event>* shared = nullptr;
};
struct span_get {
    const event& operator()(const span_base& b, std::size_t i) const noexcept { return b.flat ? b.flat[i] : *b.shared[i]; }
};

} // namespace detail

class event_list {
public:
    using value_type = event;
    using size_type = std::size_t;
    using pointer_type = std::shared_ptr<const event>;
    using const_iterator = detail::event_iterator<const pointer_type*, detail::shared_slot_get>;
    using iterator = const_iterator;
    using const_reverse_iterator = std::reverse_iterator<const_iterator>;
    using reverse_iterator = const_reverse_iterator;

    event_list() = default;
    event_list(std::initializer_list<event> events) {
        items_.reserve(events.size());
        for (const auto& e : events) push_back(e);
    }
    /// From events by value (tests and callers that build a session by hand).
    event_list(std::vector<event> events) { // NOLINT: implicit, like the vector it replaces
        items_.reserve(events.size());
        for (auto& e : events) push_back(std::move(e));
    }
    template <std::input_iterator It>
    event_list(It first, It last) {
        for (; first != last; ++first) push_back(*first);
    }

    // ---- reading -----------------------------------------------------------------------

    size_type size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }
    size_type capacity() const noexcept { return items_.capacity(); }

    const event& operator[](size_type i) const noexcept { return *items_[i]; }
    const event& at(size_type i) const { return *items_.at(i); }
    const event& front() const noexcept { return *items_.front(); }
    const event& back() const noexcept { return *items_.back(); }

    const_iterator begin() const noexcept { return {items_.data(), 0}; }
    const_iterator end() const noexcept { return {items_.data(), items_.size()}; }
    const_iterator cbegin() const noexcept { return begin(); }
    const_iterator cend() const noexcept { return end(); }
    const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
    const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

    /// The shared pointer behind event i (a store keeps it instead of a copy).
    const pointer_type& shared(size_type i) const noexcept { return items_[i]; }
    std::span<const pointer_type> shared_items() const noexcept { return items_; }

    // ---- changing ----------------------------------------------------------------------

    void reserve(size_type n) { items_.reserve(n); }
    void clear() noexcept { items_.clear(); }
    void pop_back() noexcept { items_.pop_back(); }
    void shrink_to_fit() { items_.shrink_to_fit(); }

    void push_back(const event& e) { items_.push_back(std::make_shared<event>(e)); }
    void push_back(event&& e) { items_.push_back(std::make_shared<event>(std::move(e))); }
    /// Shares `p` (no copy). A null pointer is not an event: ignored. `p` must point to an
    /// event created non-const (make_shared_event does), as modify() may change it in place.
    void push_back(pointer_type p) {
        if (p) items_.push_back(std::move(p));
    }
    template <class... Args>
    const event& emplace_back(Args&&... args) {
        items_.push_back(std::make_shared<event>(std::forward<Args>(args)...));
        return *items_.back();
    }

    /// Event i, to change it. Copied first if another list or a store shares it: the others
    /// keep what they had.
    event& modify(size_type i) {
        pointer_type& p = items_[i];
        if (p.use_count() != 1) p = std::make_shared<event>(*p);
        // Sole owner: another thread may just have dropped its reference after reading the
        // event; its reads must happen before our writes (use_count() is a relaxed load).
        else std::atomic_thread_fence(std::memory_order_acquire);
        // Every event of a list is created non-const and held through a pointer to const
        // (see push_back), so this cast is defined.
        return const_cast<event&>(*p);
    }
    event& modify_back() { return modify(items_.size() - 1); }

    /// Exchanges events i and j (pointers only).
    void swap_events(size_type i, size_type j) noexcept { std::swap(items_[i], items_[j]); }

    /// Replaces event i.
    void replace(size_type i, event e) { items_[i] = std::make_shared<event>(std::move(e)); }
    /// Replaces event i by a shared one (no copy; a null pointer is ignored).
    void replace(size_type i, pointer_type p) noexcept {
        if (p) items_[i] = std::move(p);
    }

    const_iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
    const_iterator erase(const_iterator first, const_iterator last) {
        const auto b = items_.begin() + static_cast<std::ptrdiff_t>(first.index());
        const auto e = items_.begin() + static_cast<std::ptrdiff_t>(last.index());
        items_.erase(b, e);
        return {items_.data(), first.index()};
    }
    /// Appends every event of `other` (shared, no copies).
    void append(const event_list& other) { items_.insert(items_.end(), other.items_.begin(), other.items_.end()); }

    /// Reverses the order (pointers only).
    void reverse() noexcept { std::reverse(items_.begin(), items_.end()); }
    /// Sorts by `less(const event&, const event&)`, stably (pointers only).
    template <class Less>
    void sort(Less less) {
        std::stable_sort(items_.begin(), items_.end(),
                         [&](const pointer_type& a, const pointer_type& b) { return less(*a, *b); });
    }

    /// Removes the events for which `pred(const event&)` holds; returns how many.
    template <class Pred>
    size_type erase_if(Pred pred) {
        return std::erase_if(items_, [&](const pointer_type& p) { return pred(*p); });
    }

    /// The events as values (copies).
    std::vector<event> to_vector() const {
        std::vector<event> out;
        out.reserve(items_.size());
        for (const auto& p : items_) out.push_back(*p);
        return out;
    }

    /// Element-wise equality of the events (not of the pointers).
    friend bool operator==(const event_list& a, const event_list& b) {
        if (a.size() != b.size()) return false;
        for (size_type i = 0; i < a.size(); ++i)
            if (a.items_[i] != b.items_[i] && !(*a.items_[i] == *b.items_[i])) return false;
        return true;
    }
    friend bool operator==(const event_list& a, const std::vector<event>& b) {
        if (a.size() != b.size()) return false;
        for (size_type i = 0; i < a.size(); ++i)
            if (!(a[i] == b[i])) return false;
        return true;
    }

private:
    std::vector<pointer_type> items_;
};

/// A read-only run of events: a (part of an) event_list, or contiguous events.
class event_span {
public:
    using value_type = event;
    using size_type = std::size_t;

    event_span() = default;
    event_span(std::span<const event> events) noexcept : flat_(events.data()), size_(events.size()) {}
    event_span(const std::vector<event>& events) noexcept : flat_(events.data()), size_(events.size()) {}
    event_span(const event_list& events) noexcept
        : shared_(events.shared_items().data()), size_(events.size()) {}
    event_span(const event* first, size_type n) noexcept : flat_(first), size_(n) {}

    size_type size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    const event& operator[](size_type i) const noexcept { return flat_ ? flat_[i] : *shared_[i]; }
    const event& front() const noexcept { return (*this)[0]; }
    const event& back() const noexcept { return (*this)[size_ - 1]; }

    using const_iterator = detail::event_iterator<detail::span_base, detail::span_get>;
    using iterator = const_iterator;

    const_iterator begin() const noexcept { return {detail::span_base{flat_, shared_}, 0}; }
    const_iterator end() const noexcept { return {detail::span_base{flat_, shared_}, size_}; }
    std::reverse_iterator<const_iterator> rbegin() const noexcept { return std::reverse_iterator(end()); }
    std::reverse_iterator<const_iterator> rend() const noexcept { return std::reverse_iterator(begin()); }

    /// Events [offset, offset + count) (count clipped to the end).
    event_span subspan(size_type offset, size_type count = static_cast<size_type>(-1)) const noexcept {
        if (offset > size_) offset = size_;
        if (count > size_ - offset) count = size_ - offset;
        event_span s;
        s.flat_ = flat_ ? flat_ + offset : nullptr;
        s.shared_ = shared_ ? shared_ + offset : nullptr;
        s.size_ = count;
        return s;
    }
    event_span first(size_type n) const noexcept { return subspan(0, n); }
    event_span last(size_type n) const noexcept { return subspan(n > size_ ? 0 : size_ - n); }

private:
    const event* flat_ = nullptr;
    const std::shared_ptr<const event>* shared_ = nullptr;
    size_type size_ = 0;
};

} // namespace libretto

#endif
