// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_CONVERSATION_KEY_HPP
#define LIBRETTO_STORE_CONVERSATION_KEY_HPP

// Conversation keys: which conversation a message belongs to (routing and isolation), as
// opposed to the session id of its current transcript, which a reset replaces. The shapes
// are OpenClaw's session keys (docs/sessions.md):
//
//   direct_key("assistant")                          agent:assistant:main
//   group_key("assistant", "telegram", "-100123")    agent:assistant:telegram:group:-100123
//   channel_key("assistant", "slack", "C024BE91L")   agent:assistant:slack:channel:C024BE91L
//   room_key("assistant", "matrix", "lobby")         agent:assistant:matrix:room:lobby
//   scheduled_job_key("nightly-backup")              cron:nightly-backup
//   webhook_key("9f1c...")                           hook:9f1c...
//
// Every part is checked: not empty, no ':' (the separator), and what validate_id refuses
// (path separators, "..", control characters, invalid UTF-8); the key as a whole is a valid
// id (at most max_id_length bytes), so it can name a file, a row or a session.

#include <libretto/error.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/system/result.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

/// The shape of a conversation key.
enum class conversation_kind {
    direct,        ///< agent:<agent>:<main key> — one person's conversation with an agent
    group,         ///< agent:<agent>:<channel>:group:<id>
    channel,       ///< agent:<agent>:<channel>:channel:<id> (Discord, Slack channels)
    room,          ///< agent:<agent>:<channel>:room:<id>
    scheduled_job, ///< cron:<job id> — one scheduled job's runs
    webhook,       ///< hook:<id>
};

/// A conversation key taken apart (parse_conversation_key).
struct conversation_parts {
    conversation_kind kind = conversation_kind::direct;
    std::string agent{};   ///< the agent shapes' agent id; empty for scheduled_job and webhook
    std::string channel{}; ///< group, channel, room: the channel ("telegram", "slack"); else empty
    std::string id{};      ///< direct: the main key; group, channel, room: its id; scheduled_job: the job; webhook: the hook

    friend bool operator==(const conversation_parts&, const conversation_parts&) = default;
};

namespace detail {

/// Why `part` cannot be part of a conversation key ("" if it can).
inline std::string conversation_part_problem(std::string_view part) {
    if (part.find(':') != std::string_view::npos) return "contains ':', the key's separator";
    return id_problem(part);
}

[[noreturn]] inline void bad_conversation_key(std::string message) {
    boost::throw_exception(boost::system::system_error(make_error_code(errc::invalid_argument), std::move(message)));
}

/// Joins `parts` with ':' after checking each (named by `names`) and the whole key.
template <std::size_t N>
std::string make_conversation_key(const std::array<std::string_view, N>& parts,
                                  const std::array<std::string_view, N>& names) {
    std::string key;
    for (std::size_t i = 0; i < N; ++i) {
        if (!names[i].empty())
            if (std::string why = conversation_part_problem(parts[i]); !why.empty())
                bad_conversation_key("conversation key: the " + std::string(names[i]) + " " + why);
        if (i) key += ':';
        key += parts[i];
    }
    if (key.size() > max_id_length)
        bad_conversation_key("conversation key: " + std::to_string(key.size()) + " bytes, more than " +
                             std::to_string(max_id_length));
    return key;
}

} // namespace detail

/// agent:<agent>:<main_key>. Throws system_error(errc::invalid_argument) naming the part at
/// fault, as do the other builders.
inline std::string direct_key(std::string_view agent, std::string_view main_key = "main") {
    return detail::make_conversation_key<3>({"agent", agent, main_key}, {"", "agent id", "main key"});
}
/// agent:<agent>:<channel>:group:<group_id>
inline std::string group_key(std::string_view agent, std::string_view channel, std::string_view group_id) {
    return detail::make_conversation_key<5>({"agent", agent, channel, "group", group_id},
                                            {"", "agent id", "channel", "", "group id"});
}
/// agent:<agent>:<channel>:channel:<channel_id>
inline std::string channel_key(std::string_view agent, std::string_view channel, std::string_view channel_id) {
    return detail::make_conversation_key<5>({"agent", agent, channel, "channel", channel_id},
                                            {"", "agent id", "channel", "", "channel id"});
}
/// agent:<agent>:<channel>:room:<room_id>
inline std::string room_key(std::string_view agent, std::string_view channel, std::string_view room_id) {
    return detail::make_conversation_key<5>({"agent", agent, channel, "room", room_id},
                                            {"", "agent id", "channel", "", "room id"});
}
/// cron:<job_id>
inline std::string scheduled_job_key(std::string_view job_id) {
    return detail::make_conversation_key<2>({"cron", job_id}, {"", "job id"});
}
/// hook:<hook_id>
inline std::string webhook_key(std::string_view hook_id) {
    return detail::make_conversation_key<2>({"hook", hook_id}, {"", "hook id"});
}

/// Takes a key apart, or errc::invalid_argument when it is none of the shapes above or a
/// part is not valid (what the builders would refuse). `why`, if given, says what is wrong.
inline boost::system::result<conversation_parts> parse_conversation_key(std::string_view key,
                                                                        std::string* why = nullptr) {
    auto fail = [&](std::string what) -> boost::system::result<conversation_parts> {
        if (why) *why = std::move(what);
        return make_error_code(errc::invalid_argument);
    };
    if (key.size() > max_id_length)
        return fail(std::to_string(key.size()) + " bytes, more than " + std::to_string(max_id_length));
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
        const std::size_t colon = key.find(':', start);
        parts.push_back(key.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
        if (colon == std::string_view::npos) break;
        start = colon + 1;
    }
    for (std::string_view p : parts)
        if (std::string problem = id_problem(p); !problem.empty()) return fail("a part " + problem);
    conversation_parts out;
    if (parts.size() == 2 && (parts[0] == "cron" || parts[0] == "hook")) {
        out.kind = parts[0] == "cron" ? conversation_kind::scheduled_job : conversation_kind::webhook;
        out.id = parts[1];
        return out;
    }
    if (parts[0] == "agent" && parts.size() == 3) {
        out.kind = conversation_kind::direct;
        out.agent = parts[1];
        out.id = parts[2];
        return out;
    }
    if (parts[0] == "agent" && parts.size() == 5) {
        if (parts[3] == "group") out.kind = conversation_kind::group;
        else if (parts[3] == "channel") out.kind = conversation_kind::channel;
        else if (parts[3] == "room") out.kind = conversation_kind::room;
        else return fail("'" + std::string(parts[3]) + "' is not group, channel or room");
        out.agent = parts[1];
        out.channel = parts[2];
        out.id = parts[4];
        return out;
    }
    return fail("not one of the shapes agent:<agent>:<main>, agent:<agent>:<channel>:group|channel|room:<id>, "
                "cron:<job>, hook:<id>");
}

} // namespace libretto

#endif
