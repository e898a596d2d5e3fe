// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_BOXED_OPTIONAL_HPP
#define LIBRETTO_EVENT_BOXED_OPTIONAL_HPP

#include <compare>
#include <concepts>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace libretto {

/// An optional value that lives on the heap: one pointer wide, null when empty.
///
/// `event` carries several fields that most events leave empty (signatures, usage, a
/// compaction record, a transfer target, a content role). As `std::optional` they cost
/// their full size in every event, in every copy and move of one and in every coroutine
/// frame that holds one; boxed, an empty field is 8 bytes and moves as a pointer. The
/// interface is `std::optional`'s (has_value, `*`, `->`, value, value_or, emplace, reset,
/// assignment from a value or `std::nullopt`, comparisons), so code written against
/// `std::optional` reads the same. Copies are deep; a moved-from box is empty.
template <class T>
class boxed_optional {
    static_assert(!std::is_reference_v<T> && !std::is_array_v<T> && std::is_object_v<T>);
    static_assert(!std::is_same_v<std::remove_cv_t<T>, std::nullopt_t>);

    std::unique_ptr<T> p_;

    template <class U>
    static constexpr bool from_value = std::is_constructible_v<T, U&&> &&
                                       !std::is_same_v<std::remove_cvref_t<U>, boxed_optional> &&
                                       !std::is_same_v<std::remove_cvref_t<U>, std::nullopt_t> &&
                                       !std::is_same_v<std::remove_cvref_t<U>, std::in_place_t> &&
                                       !std::is_same_v<std::remove_cvref_t<U>, std::optional<T>>;

public:
    using value_type = T;

    constexpr boxed_optional() noexcept = default;
    constexpr boxed_optional(std::nullopt_t) noexcept {}
    boxed_optional(const boxed_optional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
    boxed_optional(boxed_optional&&) noexcept = default;

    template <class U = T>
        requires from_value<U>
    boxed_optional(U&& v) : p_(std::make_unique<T>(std::forward<U>(v))) {}

    template <class... Args>
    explicit boxed_optional(std::in_place_t, Args&&... args) : p_(std::make_unique<T>(std::forward<Args>(args)...)) {}

    boxed_optional(const std::optional<T>& o) : p_(o ? std::make_unique<T>(*o) : nullptr) {}
    boxed_optional(std::optional<T>&& o) : p_(o ? std::make_unique<T>(std::move(*o)) : nullptr) {}

    ~boxed_optional() = default;

    boxed_optional& operator=(const boxed_optional& o) {
        if (this == &o) return *this;
        if (!o.p_) p_.reset();
        else if (p_) *p_ = *o.p_; // reuse the box
        else p_ = std::make_unique<T>(*o.p_);
        return *this;
    }
    boxed_optional& operator=(boxed_optional&&) noexcept = default;
    boxed_optional& operator=(std::nullopt_t) noexcept {
        p_.reset();
        return *this;
    }
    template <class U = T>
        requires from_value<U> && std::is_assignable_v<T&, U&&>
    boxed_optional& operator=(U&& v) {
        if (p_) *p_ = std::forward<U>(v);
        else p_ = std::make_unique<T>(std::forward<U>(v));
        return *this;
    }
    boxed_optional& operator=(const std::optional<T>& o) {
        if (!o) p_.reset();
        else *this = *o;
        return *this;
    }
    boxed_optional& operator=(std::optional<T>&& o) {
        if (!o) p_.reset();
        else *this = std::move(*o);
        return *this;
    }

    template <class... Args>
    T& emplace(Args&&... args) {
        p_ = std::make_unique<T>(std::forward<Args>(args)...);
        return *p_;
    }
    void reset() noexcept { p_.reset(); }
    void swap(boxed_optional& o) noexcept { p_.swap(o.p_); }

    bool has_value() const noexcept { return p_ != nullptr; }
    explicit operator bool() const noexcept { return p_ != nullptr; }

    // Unchecked, as std::optional's: the caller knows the box holds a value.
    T& operator*() & noexcept { return *p_; }
    const T& operator*() const& noexcept { return *p_; }
    T&& operator*() && noexcept { return std::move(*p_); }
    T* operator->() noexcept { return p_.get(); }
    const T* operator->() const noexcept { return p_.get(); }

    T& value() & { return p_ ? *p_ : throw std::bad_optional_access(); }
    const T& value() const& { return p_ ? *p_ : throw std::bad_optional_access(); }
    T&& value() && { return p_ ? std::move(*p_) : throw std::bad_optional_access(); }

    template <class U>
    T value_or(U&& fallback) const& {
        return p_ ? *p_ : static_cast<T>(std::forward<U>(fallback));
    }
    template <class U>
    T value_or(U&& fallback) && {
        return p_ ? std::move(*p_) : static_cast<T>(std::forward<U>(fallback));
    }

    /// A `std::optional` copy, for interfaces that take one.
    std::optional<T> to_optional() const { return p_ ? std::optional<T>(*p_) : std::nullopt; }
    operator std::optional<T>() const& { return to_optional(); }
    operator std::optional<T>() && { return p_ ? std::optional<T>(std::move(*p_)) : std::nullopt; }

    friend bool operator==(const boxed_optional& a, const boxed_optional& b)
        requires std::equality_comparable<T>
    {
        if (a.has_value() != b.has_value()) return false;
        return !a.has_value() || *a == *b;
    }
    friend bool operator==(const boxed_optional& a, std::nullopt_t) noexcept { return !a.has_value(); }
    template <class U>
        requires(!std::is_same_v<U, boxed_optional> && !std::is_same_v<U, std::nullopt_t> &&
                 !std::is_same_v<U, std::optional<T>> &&
                 requires(const T& t, const U& u) { { t == u } -> std::convertible_to<bool>; })
    friend bool operator==(const boxed_optional& a, const U& v) {
        return a.has_value() && *a == v;
    }
    friend bool operator==(const boxed_optional& a, const std::optional<T>& b)
        requires std::equality_comparable<T>
    {
        if (a.has_value() != b.has_value()) return false;
        return !a.has_value() || *a == *b;
    }
};

} // namespace libretto

#endif
