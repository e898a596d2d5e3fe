// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_TURN_OUTPUT_HPP
#define LIBRETTO_RUNNER_DETAIL_TURN_OUTPUT_HPP

// How a runner turn hands its events to the caller's stream: a copy of each stored event
// (run, resume) or the stored node itself (run_shared, resume_shared), through
// emit_or_wait, so that nothing is awaited while the stream has room.

#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace libretto::detail {

// What a turn yields: copies of the stored events (run/resume: an event_stream), or the
// stored nodes themselves (run_shared/resume_shared: a shared_event_stream, no copy per
// event). Partial events are never stored: the shared stream boxes them.
template <class Item>
inline constexpr bool yields_copies = std::is_same_v<Item, event>;

/// Yields a stored event: `ev` (the copy finish_store gave back) or `node`. Returns what to
/// wait for, if anything (stream_writer::emit_or_wait).
using emit_wait_t = std::optional<boost::asio::awaitable<void>>;
template <class = void> // templates: g++ 12 compiles the coroutines they name only where used (detail/config.hpp)
emit_wait_t emit_stored(const event_writer& out, event& ev, const event_list::pointer_type&) {
    return out.emit_or_wait(std::move(ev));
}
template <class = void>
emit_wait_t emit_stored(const shared_event_writer& out, event&, const event_list::pointer_type& node) {
    return out.emit_or_wait(event_list::pointer_type(node));
}
/// Yields an event the turn's session does not hold (a partial one, a compaction summary).
template <class = void>
emit_wait_t emit_unstored(const event_writer& out, event&& ev) { return out.emit_or_wait(std::move(ev)); }
template <class = void>
emit_wait_t emit_unstored(const shared_event_writer& out, event&& ev) {
    return out.emit_or_wait(std::make_shared<const event>(std::move(ev)));
}

} // namespace libretto::detail

#endif
