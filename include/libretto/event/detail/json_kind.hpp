// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_DETAIL_JSON_KIND_HPP
#define LIBRETTO_EVENT_DETAIL_JSON_KIND_HPP

// The name a decoding error gives a JSON value's kind ("expected string, got number").

#include <boost/json/kind.hpp>

namespace libretto::detail {

inline const char* kind_name(boost::json::kind k) noexcept {
    switch (k) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "bool";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_: return "number";
    case boost::json::kind::string: return "string";
    case boost::json::kind::array: return "array";
    case boost::json::kind::object: return "object";
    }
    return "unknown";
}

} // namespace libretto::detail

#endif
