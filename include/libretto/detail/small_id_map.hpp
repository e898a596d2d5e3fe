// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_SMALL_ID_MAP_HPP
#define LIBRETTO_DETAIL_SMALL_ID_MAP_HPP

// small_id_map: a map from string_view keys (tool-call ids borrowed from events) to values,
// for the few ids one context holds. Up to `linear_limit` entries it is a vector searched
// in order, whose first four entries live inside the map: no allocation for a step with a
// few calls, and no hash table (a hash table's first allocation is over 1 KB, which sends
// malloc down its slow path at every model step). Past the limit it adds a hash index, so
// a session with thousands of tool calls stays linear in their number.
// Keys must outlive the map. A pointer from find() or try_emplace() is valid until the
// next insert.

#include <boost/container/small_vector.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace libretto::detail {

template <class T>
class small_id_map {
public:
    static constexpr std::size_t linear_limit = 16;

    /// The value for `key`, or nullptr.
    T* find(std::string_view key) {
        if (!index_.empty()) {
            auto it = index_.find(key);
            return it == index_.end() ? nullptr : &entries_[it->second].second;
        }
        for (auto& e : entries_)
            if (e.first == key) return &e.second;
        return nullptr;
    }
    const T* find(std::string_view key) const { return const_cast<small_id_map*>(this)->find(key); }
    bool contains(std::string_view key) const { return find(key) != nullptr; }

    /// The value for `key` and true if it was inserted now (value-initialised), false if
    /// it was there already.
    std::pair<T*, bool> try_emplace(std::string_view key) {
        if (T* found = find(key)) return {found, false};
        entries_.emplace_back(key, T{});
        if (!index_.empty()) {
            index_.emplace(key, static_cast<std::uint32_t>(entries_.size() - 1));
        } else if (entries_.size() > linear_limit) {
            index_.reserve(entries_.size() * 2);
            for (std::size_t i = 0; i < entries_.size(); ++i)
                index_.emplace(entries_[i].first, static_cast<std::uint32_t>(i));
        }
        return {&entries_.back().second, true};
    }
    T& operator[](std::string_view key) { return *try_emplace(key).first; }

    std::size_t size() const noexcept { return entries_.size(); }
    bool empty() const noexcept { return entries_.empty(); }

private:
    boost::container::small_vector<std::pair<std::string_view, T>, 4> entries_;
    boost::unordered_flat_map<std::string_view, std::uint32_t> index_; // past linear_limit only
};

/// A set of string_view ids, the same way.
class small_id_set {
public:
    /// True if `key` was not in the set and is now.
    bool insert(std::string_view key) { return map_.try_emplace(key).second; }
    bool contains(std::string_view key) const { return map_.contains(key); }
    std::size_t size() const noexcept { return map_.size(); }
    bool empty() const noexcept { return map_.empty(); }

private:
    struct nothing {};
    small_id_map<nothing> map_;
};

} // namespace libretto::detail

#endif
