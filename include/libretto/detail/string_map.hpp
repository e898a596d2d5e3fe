// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_STRING_MAP_HPP
#define LIBRETTO_DETAIL_STRING_MAP_HPP

// string_map: an open-addressing hash map keyed by std::string and looked up by
// std::string_view, for the maps a turn touches (sessions, per-session locks, the runner's
// session cache): no node allocated per insert, and no key string built per look-up.
// Elements move on rehash: hold keys, not pointers or references into the map.

#include <boost/container_hash/hash.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace libretto::detail {

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return boost::hash<std::string_view>{}(s); }
};

template <class T>
using string_map = boost::unordered_flat_map<std::string, T, string_hash, std::equal_to<>>;

} // namespace libretto::detail

#endif
