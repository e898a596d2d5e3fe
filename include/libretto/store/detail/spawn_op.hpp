// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SPAWN_OP_HPP
#define LIBRETTO_STORE_DETAIL_SPAWN_OP_HPP

// An operation written as a coroutine (rebuild, fork, maintenance), started for any
// completion token: void(error_code, Result). The coroutine throws system_error on failure,
// after writing its words to the caller's diagnostics, which the completion keeps.

#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/store/detail/post_result.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/co_spawn.hpp>

#include <exception>
#include <utility>

namespace libretto::detail {

/// Runs make(diag) (an awaitable<Result>) on `ex`; completes with (error, Result{}) if it
/// throws, else (success, its result).
template <class Result, class Token, class MakeCoro>
auto spawn_op(boost::asio::any_io_executor ex, diagnostics* diag, Token&& token, MakeCoro make) {
    return initiate_with_diagnostics<void(boost::system::error_code, Result)>(
        diag, std::forward<Token>(token),
        [ex](auto handler, diagnostics* d, MakeCoro make) {
            if (d) d->clear();
            boost::asio::co_spawn(ex, make(d), [h = std::move(handler), ex, d](std::exception_ptr e, Result r) mutable {
                boost::system::error_code ec;
                if (e) {
                    diagnostics kept; // the operation's own words, when it wrote them
                    if (d) kept = *d;
                    ec = exception_to_error(e, d);
                    if (d && !kept.message().empty()) *d = std::move(kept);
                    r = Result{};
                }
                post_result(std::move(h), ex, ec, std::move(r));
            });
        },
        std::move(make));
}

} // namespace libretto::detail

#endif
