// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SESSION_STORE_HPP
#define LIBRETTO_STORE_SESSION_STORE_HPP

// The session_store concept: what the runner needs from a place that keeps sessions.
// Shared vocabulary (ids, options, list pages) and the rules every store follows are
// here; the stores are memory_store, jsonl_store, sqlite_store and postgres_store.
//
// Every operation is asynchronous, takes the caller's diagnostics (optional on the shipped
// stores) and any completion token (default: libretto::default_completion_token_t, so
// `co_await store.async_get(...)` works; Boost 1.81 has no default token of its own):
//
//   async_create(create_options[, diag])             -> void(error_code, session)
//   async_get(session_key, get_options[, diag])      -> void(error_code, std::optional<session>)
//   async_list(list_options[, diag])                 -> void(error_code, list_page)
//   async_delete(session_key[, diag])                -> void(error_code)
//   async_append(session&, event[, diag])            -> void(error_code, std::int64_t sequence)
//   optional: async_flush(session_key[, diag])       -> void(error_code)
//             async_append_batch(session&, vector<event>[, diag]) -> void(error_code, std::int64_t)

#include <libretto/async.hpp>
#include <libretto/detail/token_archetype.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/json.hpp>
#include <libretto/session/session.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/system/result.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

// session_key (session/session.hpp), create_options and list_options have constructors, so they are not
// aggregates: g++ 12 destroys an aggregate temporary with non-trivial members twice when it
// is made inside a co_await expression (`co_await store.async_get(session_key{"app", "u",
// "s"})` aborted), and spares a temporary made by a constructor. get_options stays an
// aggregate (designated initializers) because it is trivially destructible, which the
// miscompile cannot hurt. docs/building.md, "g++ 12 and coroutines".

/// How to create a session. An empty id asks the store for a fresh UUID. The initial state
/// is split by scope like a delta (temp: keys are dropped).
struct create_options {
    std::string app_name{};
    std::string user_id{};
    std::string session_id{};
    json::object state{};

    create_options() = default;
    create_options(std::string app_name, std::string user_id, std::string session_id = {}, json::object state = {})
        : app_name(std::move(app_name)), user_id(std::move(user_id)), session_id(std::move(session_id)),
          state(std::move(state)) {}
};

/// Which events a get loads. The range filters combine (all must hold); then
/// `num_recent_events` keeps the newest N of what is left (0: no events at all).
struct get_options {
    std::optional<std::size_t> num_recent_events{};
    std::optional<std::int64_t> from_sequence{};  ///< sequence >= this
    std::optional<double> from_timestamp{};       ///< timestamp >= this
    /// Only what a context view of the session needs (what a runner loads): the compaction
    /// events the view shows (valid ones whose range no other contains), and every event
    /// no shown compaction covers: the events after the newest covered range, and any in a
    /// gap between ranges. Never the covered events themselves: a rolling summary of
    /// sequences 1..n loads the summary and the events after n. A compaction that
    /// check_compaction refuses (written by another tool) covers nothing. A session without
    /// compaction loads whole. docs/stores.md, "What a runner loads".
    bool context_only = false;
    /// With context_only: also every event of the newest shown compaction's range (covered
    /// or not), which a strategy that overlaps its ranges plans from (sliding_window with
    /// an overlap; compaction_strategy's plans_from_newest_range).
    bool with_newest_range = false;
    /// Also the session-scope state the session was created with (session::initial_state),
    /// which a rewind needs to restore keys no event had set before the rewound invocation.
    bool with_initial_state = false;
};
static_assert(std::is_trivially_destructible_v<get_options>, "a get_options temporary in co_await is safe on g++ 12 only while trivially destructible");

/// A page of sessions, newest (last update) first, without events.
struct list_options {
    std::string app_name{};
    std::optional<std::string> user_id{}; ///< unset: every user of the app
    std::size_t page_size = 50;           ///< 1..1000
    std::string page_token{};             ///< from the previous page; empty: the first page

    list_options() = default;
    list_options(std::string app_name, std::optional<std::string> user_id = {}, std::size_t page_size = 50,
                 std::string page_token = {})
        : app_name(std::move(app_name)), user_id(std::move(user_id)), page_size(page_size),
          page_token(std::move(page_token)) {}
};
static_assert(!std::is_aggregate_v<session_key> && !std::is_aggregate_v<create_options> && !std::is_aggregate_v<list_options>,
              "g++ 12 destroys aggregate temporaries in co_await twice (see above)");

struct list_page {
    std::vector<session> sessions{};
    std::string next_page_token{}; ///< empty on the last page
};

/// Longest accepted app, user or session id, in bytes.
inline constexpr std::size_t max_id_length = 128;

namespace detail {

/// validate_id's rules with another length limit (artifact names have 255 bytes).
inline boost::system::error_code validate_name(std::string_view id, std::size_t max_length) noexcept {
    if (id.empty() || id.size() > max_length) return errc::invalid_argument;
    if (id == ".") return errc::invalid_argument;
    // One pass (every store call checks three ids): control characters, separators and
    // "..", and whether any byte is not ASCII, for the UTF-8 check only then.
    bool ascii = true;
    unsigned char prev = 0;
    for (unsigned char c : id) {
        if (c < 0x20 || c == 0x7f || c == '/' || c == '\\' || (c == '.' && prev == '.')) return errc::invalid_argument;
        ascii = ascii && c < 0x80;
        prev = c;
    }
    if (!ascii && detail::find_invalid_utf8(id)) return errc::invalid_argument;
    return {};
}

/// id_problem with another length limit.
inline std::string name_problem(std::string_view id, std::size_t max_length) {
    if (!validate_name(id, max_length)) return {};
    if (id.empty()) return "is empty";
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < id.size(); ++i) {
        const auto c = static_cast<unsigned char>(id[i]);
        if (c < 0x20 || c == 0x7f) {
            std::string m = "contains a control character (0x";
            m += hex[c >> 4];
            m += hex[c & 15];
            return m + " at offset " + std::to_string(i) + ")";
        }
    }
    if (auto f = detail::find_invalid_utf8(id)) {
        std::string m = "is not valid UTF-8 (byte 0x";
        m += hex[f->byte >> 4];
        m += hex[f->byte & 15];
        return m + " at offset " + std::to_string(f->offset) + ")";
    }
    std::string quoted = "'" + std::string(id.substr(0, 40)) + (id.size() > 40 ? "...'" : "'");
    if (id.size() > max_length)
        return quoted + " is " + std::to_string(id.size()) + " bytes long (at most " + std::to_string(max_length) + ")";
    if (id == "." || id.find("..") != std::string_view::npos) return quoted + " contains '..' (or is '.')";
    return quoted + " contains a path separator ('/' or '\\')";
}

} // namespace detail

/// Checks an app, user or session id: non-empty, at most 128 bytes, valid UTF-8, no path
/// separators, no "..", no NUL or other control characters. Ids become file and key names
/// (and JSON strings, which strict readers reject if not UTF-8), so every store applies
/// the same rule.
inline boost::system::error_code validate_id(std::string_view id) noexcept {
    return detail::validate_name(id, max_id_length);
}

/// Why validate_id refuses `id` ("" if it does not): "is empty", "contains '/'", ... The id
/// itself is quoted only when it is printable UTF-8.
inline std::string id_problem(std::string_view id) { return detail::name_problem(id, max_id_length); }

/// The completion signatures of the session_store operations.
using create_signature = void(boost::system::error_code, session);
using get_signature = void(boost::system::error_code, std::optional<session>);
using list_signature = void(boost::system::error_code, list_page);
using delete_signature = void(boost::system::error_code);
using append_signature = void(boost::system::error_code, std::int64_t);
using flush_signature = void(boost::system::error_code);

/// The models of session_store: each operation takes the caller's diagnostics (written
/// before the completion when the operation fails) and any completion token. The shipped
/// stores also have every operation without the diagnostics argument.
template <class S>
concept session_store = requires(S& s, session& sess, event ev, const session_key& key, create_options co,
                                 get_options go, list_options lo, diagnostics& diag,
                                 detail::token_archetype tok) {
    typename S::executor_type;
    { s.get_executor() } -> std::convertible_to<typename S::executor_type>;
    { s.async_create(co, diag, tok) } -> std::same_as<detail::archetype_result<create_signature>>;
    { s.async_get(key, go, diag, tok) } -> std::same_as<detail::archetype_result<get_signature>>;
    { s.async_list(lo, diag, tok) } -> std::same_as<detail::archetype_result<list_signature>>;
    { s.async_delete(key, diag, tok) } -> std::same_as<detail::archetype_result<delete_signature>>;
    { s.async_append(sess, std::move(ev), diag, tok) } -> std::same_as<detail::archetype_result<append_signature>>;
};

/// A store with the optional end-of-turn flush (jsonl_store: the per-turn fdatasync), which
/// a runner calls after each turn that stored events.
template <class S>
concept flushable_session_store = session_store<S> && requires(S& s, session_key key, diagnostics& diag, detail::token_archetype tok) {
    { s.async_flush(key, diag, tok) } -> std::same_as<detail::archetype_result<flush_signature>>;
};

/// A store with the optional all-or-nothing batch append.
template <class S>
concept batch_session_store = session_store<S> && requires(S& s, session& sess, std::vector<event> evs, diagnostics& diag,
                                                                detail::token_archetype tok) {
    { s.async_append_batch(sess, std::move(evs), diag, tok) } -> std::same_as<detail::archetype_result<append_signature>>;
};

} // namespace libretto

#endif
