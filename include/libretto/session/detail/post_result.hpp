// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_DETAIL_POST_RESULT_HPP
#define LIBRETTO_SESSION_DETAIL_POST_RESULT_HPP

#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace libretto::detail {

/// Completes `handler` with `args` through a post to its associated executor (default
/// `ex`), so a synchronous result never runs the continuation inside the initiating call.
template <class Handler, class Executor, class... Args>
void post_result(Handler&& handler, const Executor& ex, Args&&... args) {
    auto hex = boost::asio::get_associated_executor(handler, ex);
    boost::asio::post(hex, boost::asio::append(std::forward<Handler>(handler), std::forward<Args>(args)...));
}

} // namespace libretto::detail

#endif
