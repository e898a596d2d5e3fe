// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_TURN_STATE_HPP
#define LIBRETTO_RUNNER_DETAIL_TURN_STATE_HPP

// turn_state: what the steps of one runner turn share (the session key, the turn's session,
// the store's scratch copy, the diagnostics of its store calls), and the turn's error
// messages: every failure a turn reports is a system_error whose text names the session.

#include <libretto/diagnostics.hpp>
#include <libretto/runner/detail/silent_reply.hpp>
#include <libretto/session/session.hpp>

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace libretto::detail {

struct conversation_turn;

[[noreturn]] inline void throw_turn_error(boost::system::error_code ec, const std::string& what) {
    throw boost::system::system_error(ec, "libretto::runner: " + what);
}

inline std::string session_name(const session_key& k) {
    return "session '" + k.app_name + "/" + k.user_id + "/" + k.session_id + "'";
}

/// "" or " (what the store said)", for an error message.
inline std::string store_said_suffix(std::string said) {
    if (said.empty()) return said;
    return " (" + said + ")";
}

/// Per-turn bookkeeping shared by the turn's steps.
struct turn_state {
    session_key key;
    std::shared_ptr<libretto::session> sess; ///< the session the context points to
    /// What the store appends to. The store may update it on another thread (its pool), so
    /// it is never the context's session: the turn mirrors each stored event into `sess`
    /// on the turn's own executor.
    libretto::session scratch;
    std::size_t stored = 0; ///< events stored by this turn
    std::int64_t loaded_sequence = 0; ///< the session's last sequence when the turn loaded it
    /// What the store said about the turn's latest failed call (docs/errors.md): one per
    /// turn, as the turn's store calls come one after the other.
    diagnostics diag;
    /// run_options::silent_token's filter; null when the turn has none.
    std::unique_ptr<silent_reply_filter> silent;
    /// A conversation turn's state (turn_conversation.hpp); null for a plain turn.
    std::unique_ptr<conversation_turn> conv;

    turn_state();
    ~turn_state();
    turn_state(turn_state&&) noexcept;
};

/// The index in `t.sess->events` of the first event the turn stored (events.size() if none).
inline std::size_t first_stored_by_turn(const turn_state& t) {
    const auto& events = t.sess->events;
    std::size_t first = events.size();
    while (first > 0 && events[first - 1].sequence > t.loaded_sequence) --first;
    return first;
}

} // namespace libretto::detail

#endif
