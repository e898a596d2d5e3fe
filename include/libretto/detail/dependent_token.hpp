// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_DEPENDENT_TOKEN_HPP
#define LIBRETTO_DETAIL_DEPENDENT_TOKEN_HPP

// Completion tokens whose expressions depend on a template parameter. In a template, an
// operation started on an object whose type does not depend on the template's parameters
// (a tool_context, an any_session_index) is compiled where the template is defined, and
// g++ 12 then compiles the coroutine that use_awaitable's initiation is in every file that
// includes the header, used or not (detail/config.hpp). Started with one of these tokens,
// the operation is compiled where the template is instantiated, as any other.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace libretto::detail {

/// as_tuple(use_awaitable), in an expression that depends on V.
template <class V>
constexpr auto dependent_as_tuple_awaitable() noexcept {
    return boost::asio::as_tuple(boost::asio::use_awaitable);
}

/// `t`, in an expression that depends on V (an operation started on it waits for the
/// template's instantiation).
template <class V, class T>
constexpr T& dependent_ref(T& t) noexcept {
    return t;
}

/// use_awaitable, in an expression that depends on V.
template <class V>
constexpr auto dependent_use_awaitable() noexcept {
    return boost::asio::use_awaitable;
}

} // namespace libretto::detail

#endif
