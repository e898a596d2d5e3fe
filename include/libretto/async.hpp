// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_ASYNC_HPP
#define LIBRETTO_ASYNC_HPP

// The completion-token conventions every libretto operation follows (docs/async.md):
// each async_* function is an Asio initiating function whose token parameter is
// constrained with boost::asio::completion_token_for<Signature> and defaults to
// libretto::default_completion_token_t. The default is asio::deferred (the default Asio
// itself adopted in 1.86; Boost 1.81 has none): `co_await op(...)` works in an awaitable
// coroutine, and the deferred operation can also be composed or launched with any token.

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

namespace libretto {

/// The completion token every async_* operation of the library uses when none is given.
using default_completion_token_t = boost::asio::deferred_t;

/// An instance of the default token, for code that wants to name it.
inline constexpr default_completion_token_t default_completion_token{};

} // namespace libretto

#endif
