// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_POST_COMPLETION_HPP
#define LIBRETTO_DETAIL_POST_COMPLETION_HPP

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <type_traits>
#include <utility>

namespace libretto::detail {

/// Completes `h` with `args` on its associated executor, never inside the initiating call.
/// Posting through `ex` (the I/O object's executor) also serves handlers whose associated
/// executor is an asio::any_completion_executor (an any_completion_handler's), which Boost
/// 1.81 cannot post to directly. Without `ex` (an I/O object that was default-constructed
/// or moved from) the handler's own executor is used, or else the system executor.
template <class Handler, class... Args>
void post_completion(const boost::asio::any_io_executor& ex, Handler&& h, Args&&... args) {
    auto f = boost::asio::append(std::forward<Handler>(h), std::forward<Args>(args)...);
    if (ex) {
        boost::asio::post(ex, std::move(f));
        return;
    }
    auto hex = boost::asio::get_associated_executor(f);
    if constexpr (std::is_convertible_v<decltype(hex), boost::asio::any_io_executor>)
        boost::asio::post(boost::asio::any_io_executor(hex), std::move(f));
    else
        boost::asio::post(boost::asio::system_executor(), std::move(f));
}

} // namespace libretto::detail

#endif
