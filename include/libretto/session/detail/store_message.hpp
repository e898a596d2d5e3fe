// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_DETAIL_STORE_MESSAGE_HPP
#define LIBRETTO_SESSION_DETAIL_STORE_MESSAGE_HPP

// The detail of one store operation's failure, carried to its completion handler.
//
// A store records what failed (the file, the session, the server's words) where it fails,
// on whatever thread ran the operation, and its last_error_message() keeps the newest
// one. That is the wrong one for a caller whose operation failed while other sessions'
// operations failed too. So the failing thread also notes the message in a thread-local
// slot; the store's completion (post_result) takes it on that thread, and sets it again on
// the thread that runs the handler, just before the handler: a coroutine resumed by the
// handler reads its own operation's message first thing (take_store_message()).

#include <boost/asio/associator.hpp>
#include <boost/asio/post.hpp>

#include <string>
#include <utility>

namespace libretto::detail {

inline std::string& store_message_slot() noexcept {
    thread_local std::string slot;
    return slot;
}

/// Called by a store where it records a failure (with the message its
/// last_error_message() then returns).
inline void note_store_message(const std::string& message) { store_message_slot() = message; }

/// The message the last failure on this thread noted ("" if none since the last take);
/// clears the slot.
inline std::string take_store_message() { return std::exchange(store_message_slot(), std::string()); }

/// Forgets a message no completion took (an operation run on this thread before).
inline void clear_store_message() noexcept { store_message_slot().clear(); }

/// A completion handler that puts `message` in the slot of the thread it runs on, then
/// runs `handler`. Keeps the handler's executor, allocator and cancellation slot.
template <class Handler>
struct with_store_message {
    Handler handler;
    std::string message;

    template <class... Args>
    void operator()(Args&&... args) {
        store_message_slot() = std::move(message);
        std::move(handler)(std::forward<Args>(args)...);
    }
};

} // namespace libretto::detail

namespace boost::asio {

template <template <typename, typename> class Associator, typename Handler, typename DefaultCandidate>
struct associator<Associator, libretto::detail::with_store_message<Handler>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
    static typename Associator<Handler, DefaultCandidate>::type
    get(const libretto::detail::with_store_message<Handler>& h) noexcept {
        return Associator<Handler, DefaultCandidate>::get(h.handler);
    }
    static auto get(const libretto::detail::with_store_message<Handler>& h, const DefaultCandidate& c) noexcept
        -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
        return Associator<Handler, DefaultCandidate>::get(h.handler, c);
    }
};

} // namespace boost::asio

#endif
