// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_DETAIL_STORE_OP_HPP
#define LIBRETTO_SESSION_DETAIL_STORE_OP_HPP

// How a store operation carries its words on a failure (docs/errors.md): the caller's
// diagnostics (or none) travels with the operation as a pointer, the code that fails writes
// to it, and the completion follows. An operation started with use_awaitable and no
// diagnostics gets one of its own, whose message the thrown error_with_diagnostics carries.

#include <libretto/diagnostics.hpp>
#include <libretto/session/detail/await_inline.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

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

/// The value a completion signature void(error_code[, T]) gives to a coroutine.
template <class Sig>
struct sig_value;
template <class Ec>
struct sig_value<void(Ec)> {
    using type = void;
};
template <class Ec, class T>
struct sig_value<void(Ec, T)> {
    using type = T;
};

/// Whether Token is use_awaitable_t<Ex> itself (an error throws).
template <class Token>
struct throwing_awaitable_token : std::false_type {};
template <class Executor>
struct throwing_awaitable_token<boost::asio::use_awaitable_t<Executor>> : std::true_type {};
template <class Token>
inline constexpr bool is_throwing_awaitable_token = throwing_awaitable_token<std::decay_t<Token>>::value;

template <class Sig, class Executor, class Init, class... Args>
boost::asio::awaitable<typename sig_value<Sig>::type, Executor> throw_with_diagnostics(diagnostics* caller, Init init,
                                                                                        Args... args) {
    diagnostics local;
    diagnostics* d = caller ? caller : &local;
    auto token = boost::asio::as_tuple(boost::asio::use_awaitable_t<Executor>{});
    auto op = boost::asio::async_initiate<decltype(token), Sig>(std::move(init), token, d, std::move(args)...);
    auto r = co_await std::move(op);
    throw_on_error(std::get<0>(r), *d);
    if constexpr (!std::is_void_v<typename sig_value<Sig>::type>) co_return std::move(std::get<1>(r));
}

/// async_initiate<Token, Sig>(init, token, d, args...): `init(handler, diagnostics*, args...)`
/// starts the operation, which clears *d (if any) and writes its failure to it before it
/// completes. With use_awaitable the error thrown carries the message.
template <class Sig, class Token, class Init, class... Args>
auto initiate_store_op(diagnostics* d, Token&& token, Init init, Args&&... args) {
    if constexpr (is_throwing_awaitable_token<Token>) {
        using ex_type = typename awaitable_token<std::decay_t<Token>>::executor_type;
        return throw_with_diagnostics<Sig, ex_type>(d, std::move(init), std::decay_t<Args>(std::forward<Args>(args))...);
    } else {
        return boost::asio::async_initiate<Token, Sig>(std::move(init), token, d, std::forward<Args>(args)...);
    }
}

} // namespace libretto::detail

#endif
