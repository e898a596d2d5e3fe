// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_SESSION_HPP
#define LIBRETTO_SESSION_SESSION_HPP

#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace libretto {

/// Which session: the app, the user and the session id.
struct session_key {
    std::string app_name{};
    std::string user_id{};
    std::string session_id{};

    session_key() = default;
    session_key(std::string app_name, std::string user_id, std::string session_id) noexcept
        : app_name(std::move(app_name)), user_id(std::move(user_id)), session_id(std::move(session_id)) {}
};

/// A conversation: its identity, its merged state view (session keys plus the app: and
/// user: keys of its scopes) and the events a get loaded (all of them, or the tail that
/// was asked for).
struct session {
    std::string id;
    std::string app_name;
    std::string user_id;
    json::object state;
    event_list events;
    double last_update_time = 0; ///< UTC seconds since the epoch
    /// The sequence of the newest stored event when this copy was loaded or last appended
    /// to; stores reject appends to a copy whose revision is stale.
    std::int64_t last_sequence = 0;
    /// The session-scope state as created (create_options::state without app:, user: and
    /// temp: keys); filled only by a get with get_options::with_initial_state. Sessions a
    /// SQL store created before schema version 4 have none recorded: empty.
    json::object initial_state;
};

} // namespace libretto

#endif
