// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_AWAIT_INLINE_HPP
#define LIBRETTO_STORE_DETAIL_AWAIT_INLINE_HPP

#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace libretto::detail {


/// What co_await gives for a result tuple (error_code, T...): the tuple itself for
/// as_tuple, else void or T.
template <bool AsTuple, class Tuple>
struct awaited_value {
    using type = Tuple;
};
template <class Ec>
struct awaited_value<false, std::tuple<Ec>> {
    using type = void;
};
template <class Ec, class T>
struct awaited_value<false, std::tuple<Ec, T>> {
    using type = T;
};

template <class Token, class Tuple>
using inline_awaitable_t =
    boost::asio::awaitable<typename awaited_value<awaitable_token<std::decay_t<Token>>::as_tuple, Tuple>::type,
                           typename awaitable_token<std::decay_t<Token>>::executor_type>;

/// The result tuple as the token delivers it: whole (as_tuple), or its value, an error
/// thrown as error_with_diagnostics carrying `d`'s message (use_awaitable).
template <class Token, class Tuple>
typename awaited_value<awaitable_token<std::decay_t<Token>>::as_tuple, Tuple>::type unwrap_result(Tuple&& r,
                                                                                                const diagnostics* d) {
    if constexpr (awaitable_token<std::decay_t<Token>>::as_tuple) {
        return std::move(r);
    } else {
        if (std::get<0>(r)) throw error_with_diagnostics(std::get<0>(r), d ? *d : diagnostics{});
        if constexpr (std::tuple_size_v<Tuple> == 2) return std::move(std::get<1>(r));
    }
}

/// For a store whose operation has its result at once (memory_store): the awaitable a
/// use_awaitable-style token gets. Like the token's own initiation, nothing runs until it
/// is awaited; then `fn(diagnostics*)` runs and the caller resumes with its result without
/// suspending (no post, no handler: a coroutine of Asio's awaitable thread that completes at
/// once). `fn` returns the completion's arguments as a tuple (error_code, T...) and writes
/// its failure to the diagnostics it is given: the caller's `d`, or for use_awaitable
/// without one, the coroutine's own (the thrown error carries it).
template <class Token, class Fn, class Tuple = std::invoke_result_t<Fn&, diagnostics*>>
inline_awaitable_t<Token, Tuple> await_inline(diagnostics* d, Fn fn) {
    diagnostics local;
    if (!d && !awaitable_token<std::decay_t<Token>>::as_tuple) d = &local;
    if (d) d->clear();
    co_return unwrap_result<Token>(fn(d), d);
}

/// await_inline for an operation that can often, not always, complete at once
/// (jsonl_store's appends): `now(d)` returns the result tuple if it could, else
/// std::nullopt, and then the awaitable `later(d)` returns is awaited for it.
template <class Token, class Now, class Later,
          class Tuple = typename std::invoke_result_t<Now&, diagnostics*>::value_type>
inline_awaitable_t<Token, Tuple> await_inline_or(diagnostics* d, Now now, Later later) {
    diagnostics local;
    if (!d && !awaitable_token<std::decay_t<Token>>::as_tuple) d = &local;
    if (d) d->clear();
    std::optional<Tuple> done = now(d);
    if (!done) {
        auto op = later(d); // named: g++ 12
        done.emplace(co_await std::move(op));
    }
    co_return unwrap_result<Token>(std::move(*done), d);
}

} // namespace libretto::detail

#endif
