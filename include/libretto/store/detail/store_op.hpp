// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_STORE_OP_HPP
#define LIBRETTO_STORE_DETAIL_STORE_OP_HPP

// How a store operation carries its words on a failure (docs/errors.md): the caller's
// diagnostics (or none) travels with the operation as a pointer, the code that fails writes
// to it, and the completion follows. An operation started with use_awaitable and no
// diagnostics gets one of its own, whose message the thrown error_with_diagnostics carries.

#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/detail/await_inline.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto::detail {

/// Writes "<store>: <what>" to *d when the caller passed diagnostics; returns `ec`.
inline boost::system::error_code note_failure(diagnostics* d, boost::system::error_code ec, std::string_view store,
                                              std::string_view what) {
    if (d) {
        std::string m;
        m.reserve(store.size() + 2 + what.size());
        m += store;
        m += ": ";
        m += what;
        d->assign(std::move(m));
    }
    return ec;
}

/// A single event as the batch the SQL stores append.
inline std::vector<event> one_event(event e) {
    std::vector<event> v;
    v.push_back(std::move(e));
    return v;
}

} // namespace libretto::detail

#endif
