// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_ASYNC_OP_HPP
#define LIBRETTO_DETAIL_ASYNC_OP_HPP

// The pieces every libretto initiating function shares (docs/errors.md): the caller's
// diagnostics travel with the operation as a pointer; an operation started with
// use_awaitable and no diagnostics gets one of its own, whose words the thrown
// error_with_diagnostics carries; a coroutine's exception becomes an error_code and words.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

namespace libretto::detail {

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

/// Whether a completion token asks for an awaitable: `use_awaitable` (an error throws
/// system_error) or `as_tuple(use_awaitable)` (the error code comes first in a tuple).
template <class Token>
struct awaitable_token : std::false_type {
    static constexpr bool as_tuple = false;
};

template <class Executor>
struct awaitable_token<boost::asio::use_awaitable_t<Executor>> : std::true_type {
    using executor_type = Executor;
    static constexpr bool as_tuple = false;
};

template <class Executor>
struct awaitable_token<boost::asio::as_tuple_t<boost::asio::use_awaitable_t<Executor>>> : std::true_type {
    using executor_type = Executor;
    static constexpr bool as_tuple = true;
};

template <class Token>
inline constexpr bool is_awaitable_token = awaitable_token<std::decay_t<Token>>::value;

/// Whether Token is use_awaitable_t<Ex> itself (an error throws).
template <class Token>
inline constexpr bool is_throwing_awaitable_token =
    awaitable_token<std::decay_t<Token>>::value && !awaitable_token<std::decay_t<Token>>::as_tuple;

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
/// completes. With use_awaitable the error thrown carries the words.
template <class Sig, class Token, class Init, class... Args>
auto initiate_with_diagnostics(diagnostics* d, Token&& token, Init init, Args&&... args) {
    if constexpr (is_throwing_awaitable_token<Token>) {
        using ex_type = typename awaitable_token<std::decay_t<Token>>::executor_type;
        return throw_with_diagnostics<Sig, ex_type>(d, std::move(init), std::decay_t<Args>(std::forward<Args>(args))...);
    } else {
        return boost::asio::async_initiate<Token, Sig>(std::move(init), token, d, std::forward<Args>(args)...);
    }
}

/// The error_code and words for an exception a coroutine ended with: a system_error keeps
/// its code (and its what() as the words), a bad_alloc is not_enough_memory, anything else
/// errc::unexpected_exception with its what().
inline boost::system::error_code exception_to_error(std::exception_ptr ep, diagnostics* d) {
    try {
        std::rethrow_exception(ep);
    } catch (const error_with_diagnostics& e) {
        if (d) *d = e.get_diagnostics();
        return e.code();
    } catch (const boost::system::system_error& e) {
        if (d) d->assign(e.what());
        return e.code();
    } catch (const std::bad_alloc&) {
        if (d) d->assign("out of memory");
        return make_error_code(boost::system::errc::not_enough_memory);
    } catch (const std::exception& e) {
        if (d) d->assign(e.what());
        return errc::unexpected_exception;
    } catch (...) {
        if (d) d->assign("an exception that is not a std::exception");
        return errc::unexpected_exception;
    }
}

/// Runs the awaitable `make()` returns with co_spawn on `ex` and completes `handler` with
/// (error_code, value) on the handler's associated executor: `finish(value, d)` may turn a
/// value into an error (returns the code). Cancellation through the handler's slot reaches
/// the coroutine.
template <class T, class Handler, class Executor, class Awaitable, class Finish>
void spawn_with_error_code(Handler handler, diagnostics* d, const Executor& ex, Awaitable aw, Finish finish) {
    if (d) d->clear();
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    auto hex = boost::asio::get_associated_executor(handler, ex);
    auto done = [h = std::move(handler), hex, d, finish = std::move(finish)](std::exception_ptr ep, T v) mutable {
        boost::system::error_code ec = ep ? exception_to_error(ep, d) : finish(v, d);
        boost::asio::dispatch(hex, boost::asio::append(std::move(h), ec, std::move(v)));
    };
    boost::asio::co_spawn(ex, std::move(aw), boost::asio::bind_cancellation_slot(slot, std::move(done)));
}

} // namespace libretto::detail

#endif
