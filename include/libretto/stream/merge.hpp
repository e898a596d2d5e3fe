// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STREAM_MERGE_HPP
#define LIBRETTO_STREAM_MERGE_HPP

// merge(): one stream that interleaves the items of several streams as they arrive.
// Semantics in docs/event_stream.md ("Merging").
//
// Design: the merged stream's producer (the coordinator) spawns one pump coroutine per
// source; a pump moves items from its source into the merged stream. Pumps are spawned
// without a cancellation slot and are stopped by cancelling their source (and, when the
// merged stream is cancelled, by the failed emit()), never by a cancellation signal: a
// co_spawn'd thread signalled before it starts can make Asio 1.26 throw out of run().

#include <libretto/stream/event_stream.hpp>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {
namespace detail {

template <class T>
struct merge_state {
    merge_state(const boost::asio::any_io_executor& ex, std::vector<basic_event_stream<T>> s)
        : sources(std::move(s)), running(sources.size()), all_done(ex) {
        all_done.expires_at(boost::asio::steady_timer::time_point::max());
    }

    void cancel_sources() {
        for (auto& s : sources) s.cancel();
    }

    void pump_finished(std::exception_ptr ep) {
        if (ep && !first_error) {
            // The first failure wins; the other sources are cancelled at once (their
            // producers are signalled, e.g. woken from a long timer).
            first_error = std::move(ep);
            cancel_sources();
        }
        if (--running == 0) all_done.cancel();
    }

    std::vector<basic_event_stream<T>> sources;
    std::size_t running;
    std::exception_ptr first_error;
    boost::asio::steady_timer all_done; // never expires; cancel() wakes the coordinator
};

template <class T>
boost::asio::awaitable<void> merge_pump(std::shared_ptr<merge_state<T>> ms, std::size_t index,
                                        stream_writer<T> out) {
    basic_event_stream<T>& source = ms->sources[index]; // the vector is never resized
    for (;;) {
        std::optional<T> item = co_await source.next();
        if (!item) co_return;
        co_await out.emit(std::move(*item));
    }
}

template <class T>
struct merge_pump_done {
    std::shared_ptr<merge_state<T>> ms;
    void operator()(std::exception_ptr ep) { ms->pump_finished(std::move(ep)); }
};

template <class T>
struct merge_producer {
    std::shared_ptr<merge_state<T>> ms;

    boost::asio::awaitable<void> operator()(stream_writer<T> out) {
        const boost::asio::any_io_executor ex = out.get_executor();
        for (std::size_t i = 0; i < ms->sources.size(); ++i) {
            boost::asio::awaitable<void> pump = merge_pump<T>(ms, i, out);
            boost::asio::co_spawn(ex, std::move(pump), merge_pump_done<T>{ms});
        }
        bool cancelled = false;
        while (ms->running > 0 && !cancelled) {
            boost::system::error_code ec;
            try {
                auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
                co_await ms->all_done.async_wait(std::move(token));
            } catch (const boost::system::system_error&) {
                cancelled = true; // already cancelled before suspending
            }
            if (!cancelled) {
                auto cs = co_await boost::asio::this_coro::cancellation_state;
                cancelled = cs.cancelled() != boost::asio::cancellation_type::none;
            }
        }
        if (cancelled) {
            // The merged stream was cancelled or destroyed: stop every source. The pumps
            // wind down on their own (they own the shared merge_state).
            ms->cancel_sources();
            throw boost::system::system_error(make_error_code(errc::cancelled));
        }
        if (ms->first_error) std::rethrow_exception(ms->first_error);
    }
};

} // namespace detail

/// Interleaves the items of `streams` as they arrive, keeping each source's order.
/// Ends when every source has ended. The first source to fail cancels all the others;
/// the merged stream then delivers what is already buffered and throws that error.
/// Cancelling or destroying the merged stream cancels every source.
template <class T>
basic_event_stream<T> merge(boost::asio::any_io_executor ex, std::vector<basic_event_stream<T>> streams,
                            stream_options options = {}) {
    auto ms = std::make_shared<detail::merge_state<T>>(ex, std::move(streams));
    return basic_event_stream<T>(std::move(ex), detail::merge_producer<T>{std::move(ms)}, options);
}

/// Variadic convenience: merge(ex, s1, s2, ...), default options.
template <class T, class... More>
    requires(std::same_as<More, basic_event_stream<T>> && ...)
basic_event_stream<T> merge(boost::asio::any_io_executor ex, basic_event_stream<T> first, More... more) {
    std::vector<basic_event_stream<T>> all;
    all.reserve(1 + sizeof...(More));
    all.push_back(std::move(first));
    (all.push_back(std::move(more)), ...);
    return merge<T>(std::move(ex), std::move(all), stream_options{});
}

} // namespace libretto

#endif
