// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_STORE_LOGIC_HPP
#define LIBRETTO_STORE_DETAIL_STORE_LOGIC_HPP

// The store rules every backend shares, as pure functions: the append checks and state
// routing, event selection for get_options, page tokens. Backends only do the I/O.

#include <libretto/error.hpp>
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/store/detail/context_load.hpp>
#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/system/result.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::detail {

/// A delta routed to its scopes. app/user keys are stored without their prefix.
struct routed_delta {
    json::object app;     // unprefixed
    json::object user;    // unprefixed
    json::object session; // session keys
    json::object temp;    // prefixed; applied to the caller only
};

inline routed_delta route_delta(const json::object& delta) {
    routed_delta r;
    if (delta.empty()) return r; // the common case: most events change no state
    for (const auto& kv : delta) {
        switch (scope_of(kv.key())) {
        case state_scope::app: r.app.emplace(unprefixed(kv.key()), kv.value()); break;
        case state_scope::user: r.user.emplace(unprefixed(kv.key()), kv.value()); break;
        case state_scope::temp: r.temp.emplace(kv.key(), kv.value()); break;
        case state_scope::session: r.session.emplace(kv.key(), kv.value()); break;
        }
    }
    return r;
}

/// The merged state view a get returns: session keys, then app: and user: keys prefixed.
inline json::object merged_state(const json::object& session_state, const json::object* app_state,
                                 const json::object* user_state) {
    json::object out = session_state;
    if (app_state)
        for (const auto& kv : *app_state) out[std::string(app_prefix) + std::string(kv.key())] = kv.value();
    if (user_state)
        for (const auto& kv : *user_state) out[std::string(user_prefix) + std::string(kv.key())] = kv.value();
    return out;
}

/// Why a create's initial state cannot be stored (json_limits.hpp), naming the member:
/// "initial state: number inf is not finite: ... in member \"k\"", or "" if it can. The
/// state is checked as a member of the session's header (one level below a root).
inline std::string state_problem(const json::object& state) {
    for (const auto& kv : state)
        if (auto why = state_key_problem(kv.key()); !why.empty()) return "initial state: " + why;
    if (auto f = check_json_object(state, 1)) return "initial state: " + f->message();
    return {};
}

/// The first key of `delta` state_key_problem refuses, with why; nullptr if none.
inline const json::key_value_pair* bad_state_key(const json::object& delta, std::string& why) {
    for (const auto& kv : delta)
        if (why = state_key_problem(kv.key()); !why.empty()) return &kv;
    return nullptr;
}

/// How a diagnostic names an event: "event <id>" (or says that the id itself is not
/// UTF-8, rather than copy its bytes into the message).
inline std::string event_name(const event& e) {
    if (find_invalid_utf8(e.id)) return "an event whose id is not valid UTF-8";
    return "event " + e.id;
}

/// Checks an append and prepares the event to store. On success: the event has its
/// sequence and session id, its state_delta holds no temp: keys, and `routed` says where
/// each key goes. The caller's session is not touched yet (see commit_append). On failure
/// the event is unchanged and append_refusal says why. `appended_before`: events of the
/// same batch stored before this one (a compaction may cover them).
inline boost::system::error_code prepare_append(const session& caller, event& e, std::int64_t stored_last_sequence,
                                                routed_delta& routed, std::int64_t appended_before = 0) {
    if (caller.last_sequence != stored_last_sequence) return errc::stale_session;
    if (!e.session_id.empty() && e.session_id != caller.id) return errc::invalid_argument;
    if (e.actions.compaction && check_compaction(*e.actions.compaction, stored_last_sequence + appended_before))
        return errc::invalid_argument;
    if (!e.actions.state_delta.empty()) {
        std::string why;
        if (bad_state_key(e.actions.state_delta, why)) return errc::invalid_argument;
    }
    e.session_id = caller.id;
    if (e.id.empty()) e.id = event::new_id();
    if (e.timestamp == 0) e.timestamp = event::now();
    e.sequence = stored_last_sequence + 1;
    if (!e.actions.state_delta.empty()) {
        routed = route_delta(e.actions.state_delta);
    } else { // the common case: nothing to route (and no four objects to move in)
        if (!routed.app.empty()) routed.app.clear();
        if (!routed.user.empty()) routed.user.clear();
        if (!routed.session.empty()) routed.session.clear();
        if (!routed.temp.empty()) routed.temp.clear();
    }
    if (!routed.temp.empty())
        for (const auto& kv : routed.temp) e.actions.state_delta.erase(kv.key());
    return {};
}

/// Why prepare_append refused `e` (the same arguments), naming the session, the event and
/// the field: "session demo/u1/s1 is at sequence 7, the caller's copy at 5", "event <id>
/// names session 's2', not demo/u1/s1", "event <id>: actions.compaction.summary is empty".
inline std::string append_refusal(const session& caller, const event& e, std::int64_t stored_last_sequence,
                                  std::int64_t appended_before = 0) {
    const std::string name = caller.app_name + "/" + caller.user_id + "/" + caller.id;
    if (caller.last_sequence != stored_last_sequence)
        return "session " + name + " is at sequence " + std::to_string(stored_last_sequence) + ", the caller's copy at " +
               std::to_string(caller.last_sequence);
    if (!e.session_id.empty() && e.session_id != caller.id)
        return event_name(e) + " names session '" + e.session_id + "', not " + name;
    if (e.actions.compaction)
        if (auto c = check_compaction(*e.actions.compaction, stored_last_sequence + appended_before))
            return event_name(e) + " in session " + name + ": " + c.message;
    if (std::string why; bad_state_key(e.actions.state_delta, why))
        return event_name(e) + " in session " + name + ": actions.state_delta: " + why;
    return {};
}

/// After the store has written the event: the caller's session sees the delta (temp:
/// keys included), the event, and the new revision.
inline void commit_append(session& caller, event_list::pointer_type e, const routed_delta& routed) {
    if (!e->actions.state_delta.empty()) apply_delta(caller.state, e->actions.state_delta);
    if (!routed.temp.empty()) apply_delta(caller.state, routed.temp);
    caller.last_sequence = e->sequence;
    caller.last_update_time = e->timestamp;
    caller.events.push_back(std::move(e));
}
inline void commit_append(session& caller, event&& e, const routed_delta& routed) {
    commit_append(caller, make_shared_event(std::move(e)), routed);
}

/// The index range [first, last) of `events` (sorted by sequence) that `o` selects,
/// before context_only, the timestamp filter and num_recent_events. `Events` is any
/// container with size() and operator[] (a span, a vector, a chunked store).
template <class Events>
std::pair<std::size_t, std::size_t> select_range(const Events& events, const get_options& o) {
    std::int64_t from = 0;
    if (o.from_sequence) from = *o.from_sequence;
    // lower_bound by sequence, through operator[] only
    std::size_t lo = 0, n = events.size();
    while (n > 0) {
        const std::size_t half = n / 2;
        if (events[lo + half].sequence < from) {
            lo += half + 1;
            n -= half + 1;
        } else {
            n = half;
        }
    }
    return {lo, static_cast<std::size_t>(events.size())};
}

/// Event i of `events` onto `out`: shared when the container keeps shared events (no copy).
template <class Events>
void push_selected(const Events& events, std::size_t i, event_list& out) {
    if constexpr (requires { events.shared(i); }) out.push_back(events.shared(i));
    else out.push_back(events[i]);
}

/// Copies the events `o` selects from a sequence-sorted container into `out`, with room
/// for `spare` more (what the caller will append: a vector filled exactly full moves
/// every event at its next push_back). `shown`: the session's shown compactions (for
/// context_only).
template <class Events>
void select_events(const Events& events, const get_options& o, const shown_compactions& shown, event_list& out,
                   std::size_t spare = 0) {
    out.clear();
    if (o.num_recent_events && *o.num_recent_events == 0) return;
    if (o.context_only && !shown.empty()) {
        std::vector<std::size_t> keep;
        for_each_in_ranges(events, clip_ranges(shown.load_ranges(o.with_newest_range), o.from_sequence.value_or(0)),
                           [&](std::size_t i) {
                               if (!o.from_timestamp || events[i].timestamp >= *o.from_timestamp) keep.push_back(i);
                           });
        std::size_t skip = 0;
        if (o.num_recent_events && keep.size() > *o.num_recent_events) skip = keep.size() - *o.num_recent_events;
        out.reserve(keep.size() - skip + spare);
        for (std::size_t k = skip; k < keep.size(); ++k) push_selected(events, keep[k], out);
        return;
    }
    auto [first, last] = select_range(events, o);
    if (o.from_timestamp) {
        std::vector<std::size_t> keep;
        for (std::size_t i = first; i < last; ++i)
            if (events[i].timestamp >= *o.from_timestamp) keep.push_back(i);
        std::size_t skip = 0;
        if (o.num_recent_events && keep.size() > *o.num_recent_events) skip = keep.size() - *o.num_recent_events;
        out.reserve(keep.size() - skip + spare);
        for (std::size_t k = skip; k < keep.size(); ++k) push_selected(events, keep[k], out);
        return;
    }
    if (o.num_recent_events && last - first > *o.num_recent_events) first = last - *o.num_recent_events;
    out.reserve(last - first + spare);
    for (std::size_t i = first; i < last; ++i) push_selected(events, i, out);
}

/// Page tokens are cursors: the (last_update_time, user id, session id) of the last
/// session of a page, as "<time>|<user>/<id>" ('/' is in no id), in a form no caller
/// should need to read. The user is part of it: listing an app, two users' sessions may
/// share an id and a time, and a cursor without the user would skip the second.
inline std::string make_page_token(double last_update, std::string_view user, std::string_view id) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, last_update);
    std::string t(buf, r.ptr);
    t += '|';
    t += user;
    t += '/';
    t += id;
    return t;
}

struct page_cursor {
    double last_update = 0;
    std::string id;
    std::string user; ///< empty in a token of an earlier version ("<time>|<id>")
};

inline boost::system::result<page_cursor> parse_page_token(std::string_view t) {
    auto bar = t.find('|');
    if (bar == std::string_view::npos) return boost::system::error_code(errc::invalid_argument);
    page_cursor c;
    auto r = std::from_chars(t.data(), t.data() + bar, c.last_update);
    // from_chars also reads "nan" and "inf", which no token of ours holds: a NaN cursor
    // would compare false with every time and end the listing early.
    if (r.ec != std::errc{} || r.ptr != t.data() + bar || !std::isfinite(c.last_update))
        return boost::system::error_code(errc::invalid_argument);
    std::string_view rest = t.substr(bar + 1);
    if (auto slash = rest.find('/'); slash != std::string_view::npos) {
        c.user = std::string(rest.substr(0, slash));
        if (validate_id(c.user)) return boost::system::error_code(errc::invalid_argument);
        rest.remove_prefix(slash + 1);
    }
    c.id = std::string(rest);
    if (validate_id(c.id)) return boost::system::error_code(errc::invalid_argument);
    return c;
}

/// Why the option `name` cannot be a duration ("" when it can): NaN, an infinity or a
/// negative number of seconds would select every session, or none, for removal.
inline std::string seconds_option_problem(std::string_view name, const std::optional<double>& v) {
    if (!v || (*v >= 0 && std::isfinite(*v))) return {};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *v);
    return std::string(name) + " is " + buf + ", not a finite number of seconds >= 0";
}

/// Why `max_bytes` and `high_water_bytes` do not go together ("" when they do).
inline std::string byte_budget_problem(const std::optional<std::uint64_t>& max_bytes,
                                       const std::optional<std::uint64_t>& high_water_bytes) {
    if (!max_bytes || !high_water_bytes || *high_water_bytes <= *max_bytes) return {};
    return "high_water_bytes (" + std::to_string(*high_water_bytes) + ") is above max_bytes (" +
           std::to_string(*max_bytes) + ")";
}

/// Newest first; ties by session id, then by user id, so pages are stable.
inline bool list_before(double a_time, std::string_view a_user, std::string_view a_id, double b_time,
                        std::string_view b_user, std::string_view b_id) {
    if (a_time != b_time) return a_time > b_time;
    if (a_id != b_id) return a_id < b_id;
    return a_user < b_user;
}
/// True if a session sorts after the page `c` ended with (list_before).
inline bool after_cursor(const page_cursor& c, double time, std::string_view user, std::string_view id) {
    return list_before(c.last_update, c.user, c.id, time, user, id);
}

inline boost::system::error_code validate_key(std::string_view app, std::string_view user, std::string_view id) {
    if (auto ec = validate_id(app)) return ec;
    if (auto ec = validate_id(user)) return ec;
    return validate_id(id);
}

inline boost::system::error_code validate_key(const session_key& k) {
    return validate_key(k.app_name, k.user_id, k.session_id);
}

/// Which id of a key validate_key refuses, and why: "user id 'a/b' contains a path
/// separator ('/' or '\\')" ("" if none).
inline std::string key_problem(std::string_view app, std::string_view user, std::string_view id) {
    if (auto p = id_problem(app); !p.empty()) return "app name " + p;
    if (auto p = id_problem(user); !p.empty()) return "user id " + p;
    if (auto p = id_problem(id); !p.empty()) return "session id " + p;
    return {};
}
inline std::string key_problem(const session_key& k) { return key_problem(k.app_name, k.user_id, k.session_id); }

/// Why a get cannot take `o`, or "": a NaN from_timestamp compares false with every time,
/// and the back ends then disagreed (no events from one, all from another). An infinity
/// is a time like any other (+inf: none, -inf: all).
inline std::string get_options_problem(const get_options& o) {
    if (o.from_timestamp && std::isnan(*o.from_timestamp)) return "get_options::from_timestamp is NaN";
    return {};
}

} // namespace libretto::detail

#endif
