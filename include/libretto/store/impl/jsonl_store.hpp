// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_IMPL_JSONL_STORE_HPP
#define LIBRETTO_STORE_IMPL_JSONL_STORE_HPP

// The templates of jsonl_store: its asynchronous operations, out of the class so that
// store/jsonl_store.hpp reads as the public surface. They reach the engine only through the
// class's engine_* functions, defined with the engine in impl/jsonl_store.ipp (compiled once
// with LIBRETTO_SEPARATE_COMPILATION), so they need the engine declared, not defined.

#include <libretto/store/jsonl_store.hpp>

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/store/detail/await_inline.hpp>
#include <libretto/store/detail/post_result.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

/// The append on the blocking executor, completing on `ex`.
struct jsonl_store::append_on_pool {
    std::shared_ptr<detail::jsonl::engine> impl;
    executor_type ex;
    template <class Handler>
    void operator()(Handler&& handler, diagnostics* d, session* sess, std::shared_ptr<event> e) const {
        auto work = boost::asio::make_work_guard(ex);
        boost::asio::post(blocking_executor(*impl), [impl = impl, ex = ex, d, sess, e = std::move(e),
                                           h = std::forward<Handler>(handler), work = std::move(work)]() mutable {
            std::int64_t seq = 0;
            auto ec = engine_append(*impl, d, *sess, std::move(e), seq);
            detail::post_result(std::move(h), ex, ec, seq);
            work.reset();
        });
    }
};

template <class Token>
auto jsonl_store::create_op(diagnostics* d, create_options o, Token&& token) {
    return run<create_signature>(d, std::forward<Token>(token),
                                 [o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) mutable {
                                     session out;
                                     auto ec = engine_create(e, d, std::move(o), out);
                                     return std::make_tuple(ec, std::move(out));
                                 });
}
template <class Token>
auto jsonl_store::get_op(diagnostics* d, session_key k, get_options o, Token&& token) {
    return run<get_signature>(d, std::forward<Token>(token),
                              [k = std::move(k), o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) {
                                  std::optional<session> out;
                                  auto ec = engine_get(e, d, k, o, out);
                                  return std::make_tuple(ec, std::move(out));
                              });
}
template <class Token>
auto jsonl_store::list_op(diagnostics* d, list_options o, Token&& token) {
    return run<list_signature>(d, std::forward<Token>(token),
                               [o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) {
                                   list_page out;
                                   auto ec = engine_list(e, d, o, out);
                                   return std::make_tuple(ec, std::move(out));
                               });
}
template <class Token>
auto jsonl_store::delete_op(diagnostics* d, session_key k, Token&& token) {
    return run<delete_signature>(d, std::forward<Token>(token),
                                 [k = std::move(k)](detail::jsonl::engine& e, diagnostics* d) {
                                     return std::make_tuple(engine_remove(e, d, k));
                                 });
}
template <class Token>
auto jsonl_store::flush_op(diagnostics* d, session_key k, Token&& token) {
    return run<flush_signature>(d, std::forward<Token>(token),
                                [k = std::move(k)](detail::jsonl::engine& e, diagnostics* d) {
                                    return std::make_tuple(engine_flush(e, d, k));
                                });
}
template <class Token>
auto jsonl_store::maintain_op(diagnostics* d, jsonl_maintenance_options o, Token&& token) {
    return run<maintain_signature>(d, std::forward<Token>(token),
                                   [o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) {
                                       jsonl_maintenance_report r;
                                       auto ec = engine_maintain(e, d, o, r);
                                       return std::make_tuple(ec, std::move(r));
                                   });
}

template <class Token>
auto jsonl_store::append_op(diagnostics* d, session& s, event&& e, Token&& token) {
    // Boxed once, in the node the caller's session then keeps: completion tokens
    // move their arguments around, and an event's moves are not cheap.
    auto node = std::make_shared<event>(std::move(e));
    if constexpr (detail::is_awaitable_token<Token>) {
        using ex_type = typename detail::awaitable_token<std::decay_t<Token>>::executor_type;
        return detail::await_inline_or<Token>(
            d,
            [impl = impl_, sess = &s,
             node](diagnostics* d) mutable -> std::optional<std::tuple<boost::system::error_code, std::int64_t>> {
                std::int64_t seq = 0;
                boost::system::error_code ec;
                if (!engine_try_append_inline(*impl, d, *sess, node, seq, ec)) return std::nullopt;
                return std::make_tuple(ec, seq);
            },
            [impl = impl_, ex = ex_, sess = &s, node](diagnostics* d) {
                auto tok = boost::asio::as_tuple(boost::asio::use_awaitable_t<ex_type>{});
                return boost::asio::async_initiate<decltype(tok), append_signature>(append_on_pool{impl, ex}, tok, d,
                                                                                    sess, node);
            });
    } else {
        return boost::asio::async_initiate<Token, append_signature>(
            [impl = impl_, ex = ex_](auto handler, diagnostics* d, session* sess, std::shared_ptr<event> e) {
                std::int64_t seq = 0;
                boost::system::error_code ec;
                if (d) d->clear();
                if (engine_try_append_inline(*impl, d, *sess, e, seq, ec)) {
                    detail::post_result(std::move(handler), ex, ec, seq);
                    return;
                }
                append_on_pool{impl, ex}(std::move(handler), d, sess, std::move(e));
            },
            token, d, &s, std::move(node));
    }
}

/// Runs `fn(engine, diagnostics*)` on the blocking executor and completes with its tuple
/// on ex_. With use_awaitable and no caller diagnostics, the error thrown carries the
/// operation's words (detail::initiate_with_diagnostics).
template <class Sig, class Token, class Fn>
auto jsonl_store::run(diagnostics* d, Token&& token, Fn fn) {
    return detail::initiate_with_diagnostics<Sig>(
        d, std::forward<Token>(token),
        [impl = impl_, ex = ex_](auto handler, diagnostics* d, Fn fn) {
            if (d) d->clear();
            auto work = boost::asio::make_work_guard(ex);
            boost::asio::post(blocking_executor(*impl), [impl, ex, d, fn = std::move(fn), h = std::move(handler),
                                               work = std::move(work)]() mutable {
                std::apply([&](auto&&... r) { detail::post_result(std::move(h), ex, std::move(r)...); },
                           fn(*impl, d));
                work.reset();
            });
        },
        std::move(fn));
}

static_assert(session_store<jsonl_store>);
static_assert(flushable_session_store<jsonl_store>);

} // namespace libretto

#endif
