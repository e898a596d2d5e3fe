// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_TURN_STORE_HPP
#define LIBRETTO_RUNNER_DETAIL_TURN_STORE_HPP

// How a runner turn stores: each event stamped (id, time, signature) and appended, then
// mirrored into the turn's session; the flush at the turn's end. A store that never blocks
// (memory_store) is called directly, without a coroutine frame (store_or_wait); the others
// through their asynchronous operations.

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/signer.hpp>
#include <libretto/store/never_blocking_store.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail {

/// store_event's first part: what the runner fills in before the store sees the event (and
/// its signature, with a signer).
template <class Core>
void stamp_event(Core& core, const session& s, event& ev) {
    if (ev.id.empty()) ev.id = event::new_id();
    if (ev.timestamp == 0) ev.timestamp = event::now();
    if (ev.session_id.empty()) ev.session_id = s.id;
    if constexpr (is_signing<typename Core::signer_type>) {
        // Sign the event as the store will keep it: with the sequence it will assign (the
        // session's last + 1: an append from any other revision fails as stale) and linked
        // to the session's newest event. Stores drop temp: keys from the delta; the payload
        // leaves them out, so the signature holds for the stored event too.
        chain_event(s, ev);
        core.signer.sign_event(ev);
    } else {
        (void)core;
    }
}

/// store_event's last part, once the store answered: the stored event replaces the one the
/// turn's session took at `index` (the node it holds already, with a never-blocking store),
/// and `ev` becomes a copy of it (what the caller is given) if `give_back`; `node_out`, if
/// given, receives the stored node itself. A failure takes the event out of the turn's
/// session again and throws.
inline void finish_store(turn_state& t, event& ev, std::size_t index, boost::system::error_code ec,
                         std::int64_t seq, bool give_back, event_list::pointer_type* node_out = nullptr,
                         std::string_view store_said = {}) {
    session& s = *t.sess;
    if (ec || t.scratch.events.empty()) {
        if (!ec) ec = make_error_code(errc::io_error);
        std::string what = "storing event " + std::to_string(t.stored + 1) + " of the turn (" +
                           std::string(to_string(s.events[index].type)) + " by '" + s.events[index].author +
                           "') in " + session_name(t.key) + " failed: " + ec.message();
        if (!store_said.empty()) {
            what += " (";
            what += store_said;
            what += ")";
        }
        if (index + 1 == s.events.size()) s.events.pop_back();
        if (ec == errc::stale_session)
            what += " (another writer, e.g. another process, appended to the session during this turn; the turn "
                    "stopped; the next turn loads the session again)";
        throw_turn_error(ec, what);
    }
    event_list::pointer_type stored = t.scratch.events.shared(t.scratch.events.size() - 1);
    t.scratch.events.clear();
    s.last_sequence = seq;
    s.last_update_time = stored->timestamp;
    if (give_back) ev = *stored;
    if (node_out) *node_out = stored;
    s.events.replace(index, std::move(stored));
    ++t.stored;
}

/// store_event with a never-blocking store: a plain call. The event is boxed once; the
/// turn's session takes the node at once (an agent whose stream has capacity 0 finds each
/// event it emitted in ctx.session() when its emit() returns), and the store stamps and
/// keeps that same node. Without `give_back`, `ev` is left moved-from (the caller does not
/// yield it, or yields the node `node_out` receives: no copy).
template <class Core>
void store_event_now(Core& core, turn_state& t, event& ev, bool give_back = true,
                     event_list::pointer_type* node_out = nullptr) {
    session& s = *t.sess;
    stamp_event(core, s, ev);
    auto node = std::make_shared<event>(std::move(ev));
    s.events.push_back(event_list::pointer_type(node));
    const std::size_t index = s.events.size() - 1;
    if (!node->actions.state_delta.empty()) apply_delta(s.state, node->actions.state_delta);
    t.scratch.last_sequence = s.last_sequence;
    t.scratch.events.clear();
    std::int64_t seq = 0;
    const auto ec = core.store->append_shared(t.scratch, std::move(node), seq, &t.diag);
    finish_store(t, ev, index, ec, seq, give_back, node_out, ec ? t.diag.message() : std::string_view());
}

/// Stores `ev` (a non-partial event of the turn) and mirrors it into the turn's session.
/// On return `ev` is the event as stored (sequence, session id; no temp: keys). Taken by
/// reference so that the caller's frame, not a second one, holds the event. Hot paths call
/// store_or_wait instead (no frame at all when the store never blocks).
template <class Core>
boost::asio::awaitable<void> store_event(Core& core, turn_state& t, event& ev, bool give_back = true,
                                         event_list::pointer_type* node_out = nullptr) {
    if constexpr (never_blocking_store<typename Core::store_type>) {
        store_event_now(core, t, ev, give_back, node_out);
        co_return;
    } else {
        session& s = *t.sess;
        stamp_event(core, s, ev);
        // The agent sees the event in ctx.session() as soon as the runner has taken it (its
        // sequence is filled in once stored).
        s.events.push_back(ev);
        const std::size_t index = s.events.size() - 1;
        if (const event& taken = s.events[index]; !taken.actions.state_delta.empty())
            apply_delta(s.state, taken.actions.state_delta);
        t.scratch.last_sequence = s.last_sequence;
        t.scratch.events.clear();
        boost::system::error_code ec;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
        auto op = core.store->async_append(t.scratch, std::move(ev), t.diag, std::move(token));
        const std::int64_t seq = co_await std::move(op);
        finish_store(t, ev, index, ec, seq, give_back, node_out, ec ? t.diag.message() : std::string_view());
    }
}

/// store_event without a coroutine frame when the store never blocks: stores `ev` at once
/// and returns nothing; else returns store_event's awaitable, for the caller to co_await.
template <class Core>
std::optional<boost::asio::awaitable<void>> store_or_wait(Core& core, turn_state& t, event& ev, bool give_back = true,
                                                          event_list::pointer_type* node_out = nullptr) {
    if constexpr (never_blocking_store<typename Core::store_type>) {
        store_event_now(core, t, ev, give_back, node_out);
        return std::nullopt;
    } else {
        return store_event(core, t, ev, give_back, node_out);
    }
}

template <class Store>
concept flushable_store = flushable_session_store<Store>;

/// The turn's flush; a failure comes with what the store said about it.
struct flush_result {
    boost::system::error_code ec;
    diagnostics diag;
};

template <class Core>
boost::asio::awaitable<flush_result> flush_turn(Core& core, const turn_state& t) {
    flush_result r;
    if constexpr (flushable_store<typename Core::store_type>) {
        if (t.stored == 0) co_return r;
        session_key k = t.key;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, r.ec);
        auto op = core.store->async_flush(std::move(k), r.diag, std::move(token));
        co_await std::move(op);
    }
    co_return r;
}

} // namespace libretto::detail

#endif
