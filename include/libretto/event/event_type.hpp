// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_EVENT_TYPE_HPP
#define LIBRETTO_EVENT_EVENT_TYPE_HPP

#include <optional>
#include <string_view>

namespace libretto {

/// What an event records. Tool *calls* are agent messages carrying tool_call parts,
/// as in orxhestra; only their results have a type of their own.
enum class event_type {
    user_message,  ///< the user's input, persisted by the runner at the start of a turn
    agent_message, ///< a model reply: text, thinking, data or tool-call requests
    tool_response, ///< the result (or error) of a tool call
    agent_start,   ///< lifecycle: an agent began running
    agent_end,     ///< lifecycle: an agent finished
};

/// The wire name of `t` ("user_message", ...).
constexpr std::string_view to_string(event_type t) noexcept {
    switch (t) {
    case event_type::user_message: return "user_message";
    case event_type::agent_message: return "agent_message";
    case event_type::tool_response: return "tool_response";
    case event_type::agent_start: return "agent_start";
    case event_type::agent_end: return "agent_end";
    }
    return "unknown";
}

/// Parses a wire name; std::nullopt for anything else (case-sensitive).
constexpr std::optional<event_type> event_type_from_string(std::string_view s) noexcept {
    if (s == "user_message") return event_type::user_message;
    if (s == "agent_message") return event_type::agent_message;
    if (s == "tool_response") return event_type::tool_response;
    if (s == "agent_start") return event_type::agent_start;
    if (s == "agent_end") return event_type::agent_end;
    return std::nullopt;
}

} // namespace libretto

#endif
