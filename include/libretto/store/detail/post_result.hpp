// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_POST_RESULT_HPP
#define LIBRETTO_STORE_DETAIL_POST_RESULT_HPP

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace libretto::detail {

/// Completes `handler` with `args` through a post, so a synchronous result never runs the
/// continuation inside the initiating call. post() through `ex` still delivers on the
/// handler's associated executor when it has one. (Posting straight to the associated
/// executor does not compile for any_completion_handler in Boost 1.81.)
template <class Handler, class Executor, class... Args>
void post_result(Handler&& handler, const Executor& ex, Args&&... args) {
    boost::asio::post(ex, boost::asio::append(std::forward<Handler>(handler), std::forward<Args>(args)...));
}

} // namespace libretto::detail

#endif
