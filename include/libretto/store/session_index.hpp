// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SESSION_INDEX_HPP
#define LIBRETTO_STORE_SESSION_INDEX_HPP

// The session index: a small mutable table beside the append-only transcripts, one entry
// per conversation key (conversation_key.hpp) of an app, naming the key's current session
// and what a status view reads (times, token counters, compactions, the last memory flush,
// labels, per-conversation overrides). docs/sessions.md.
//
// The transcripts are the truth; the index is derived from them and repaired from them
// (detail/index_rebuild.hpp), never the reverse.
//
// A model of session_index is the synchronous core of one back end (memory_session_index,
// jsonl_session_index, sqlite_session_index, postgres_session_index). Every operation
// returns an error_code and writes, on failure, what was wrong to *diag when given:
//
//   s.index_get(app, key, std::optional<conversation_entry>& out, diag)    absent: nullopt
//   s.index_put(const conversation_entry&, diag)                           insert or replace
//   s.index_patch(app, key, const conversation_patch&, conversation_entry& out, diag)
//                                                      not_found if absent; stale_session if
//                                                      the patch's if_session_id differs
//   s.index_list(const conversation_query&, std::vector<conversation_entry>& out, diag)
//   s.index_erase(app, key, diag)                                          absent: no error
//   s.index_replace(app, const std::vector<conversation_entry>&, diag)     every entry of the app
//                                                      (a rebuild); all or nothing
//   S::blocking                                        true: calls wait for files or servers
//
// any_session_index (any_session_index.hpp) erases the type and adds the asynchronous
// operations the runner uses.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Per-conversation settings chosen by its user (an empty string: none).
struct conversation_overrides {
    std::string model{};          ///< the model to use instead of the agent's
    std::string thinking_level{}; ///< "off", "low", "high", ...: the app's own words
    std::string send_policy{};    ///< whether and how replies are delivered: the app's own words
    friend bool operator==(const conversation_overrides&, const conversation_overrides&) = default;
};

/// A session that a reset replaced, kept as an archive.
struct previous_session {
    std::string session_id{};
    double started_at = 0;
    double ended_at = 0;   ///< when the reset happened
    std::string reason{};  ///< "explicit", "daily", "idle"
    friend bool operator==(const previous_session&, const previous_session&) = default;
};

/// One conversation in the index. Times are seconds since the Unix epoch (event::now()),
/// 0 for never.
struct conversation_entry {
    std::string app_name{};
    std::string key{};        ///< the conversation key
    std::string user_id{};    ///< the user of the current session
    std::string session_id{}; ///< the current session
    double started_at = 0;          ///< when the current session started (daily resets use it)
    double last_interaction_at = 0; ///< the last real user turn (idle resets use it); background turns leave it
    double updated_at = 0;          ///< the last change to the entry (listing, pruning)
    /// The current session's last sequence that the counters account for: a transcript
    /// with more is repaired into the entry.
    std::int64_t last_sequence = 0;
    std::int64_t input_tokens = 0;   ///< summed over the current session's model calls
    std::int64_t output_tokens = 0;  ///< summed over the current session's model calls
    std::int64_t total_tokens = 0;   ///< input + output
    std::int64_t context_tokens = 0; ///< the input size of the latest model call
    std::int64_t compaction_count = 0; ///< compactions stored in the current session
    double memory_flush_at = 0;        ///< the latest memory-flush turn
    std::int64_t memory_flush_compaction_count = 0; ///< compaction_count at that flush
    std::string chat_type{};           ///< "direct", "group", "channel", "room", "scheduled_job", "webhook", ...
    std::vector<std::string> labels{};
    conversation_overrides overrides{};
    json::object metadata{};           ///< the app's own fields
    std::vector<previous_session> previous{}; ///< archived sessions, oldest first
    std::string parent_session_id{}; ///< a fork's parent session (fork.hpp); empty for a conversation of its own

    friend bool operator==(const conversation_entry&, const conversation_entry&) = default;
};

/// A change to one entry: every engaged member is set, the add_ members are added, and
/// `metadata`'s members are merged (a null value removes the member). Applied to the
/// stored entry alone, in one step: concurrent patches of different fields both land.
struct conversation_patch {
    /// Applied only if the entry's session is still this one (else errc::stale_session and
    /// nothing changes): a turn's patch after a reset that raced it.
    std::optional<std::string> if_session_id{};
    /// A new session for the key: the current one goes to `previous` (with `reset_reason`),
    /// the counters restart at 0 and started_at is set to `updated_at`.
    std::optional<std::string> new_session_id{};
    std::string reset_reason{};
    std::optional<std::string> user_id{};
    std::optional<double> last_interaction_at{};
    std::optional<double> updated_at{};
    std::optional<std::int64_t> last_sequence{};
    std::int64_t add_input_tokens = 0;
    std::int64_t add_output_tokens = 0;
    std::int64_t add_compactions = 0;
    std::optional<std::int64_t> context_tokens{};
    std::optional<double> memory_flush_at{}; ///< also records the compaction count
    std::optional<std::string> chat_type{};
    std::optional<std::vector<std::string>> labels{};
    std::optional<conversation_overrides> overrides{};
    json::object metadata{};
    /// Archived sessions to forget (maintenance removed their transcripts).
    std::vector<std::string> drop_previous{};
};

/// Which entries a list returns: all conditions hold. Newest update first.
struct conversation_query {
    std::string app_name{};
    std::optional<std::string> user_id{};
    std::optional<std::string> chat_type{};
    std::vector<std::string> labels{};   ///< every one present
    std::string key_prefix{};            ///< keys that begin with it
    std::optional<std::string> parent_session_id{}; ///< forks of this session
    std::optional<double> active_since{};   ///< last_interaction_at >= this
    std::optional<double> inactive_since{}; ///< last_interaction_at < this
    std::size_t limit = 0;                  ///< 0: no limit
};

/// What a status view shows of a conversation, from its entry alone (no transcript read).
struct conversation_status {
    std::string key{};
    std::string session_id{};
    double age_seconds = 0;   ///< since the current session started
    double idle_seconds = 0;  ///< since the last interaction (the start, if none)
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::int64_t total_tokens = 0;
    std::int64_t context_tokens = 0;
    std::int64_t context_window = 0; ///< as given; 0: unknown
    double context_used = 0;         ///< context_tokens / context_window (0 when unknown)
    std::int64_t compaction_count = 0;
    std::optional<double> since_memory_flush_seconds{}; ///< unset: never flushed
    bool flushed_since_last_compaction = false;           ///< the latest flush came after the latest compaction
    std::size_t archived_sessions = 0;
    std::vector<std::string> labels{};
    conversation_overrides overrides{};
};

/// The status of `e` at `now` (seconds since the epoch), with the model's context window
/// (tokens; 0 if unknown).
inline conversation_status conversation_status_of(const conversation_entry& e, double now,
                                                  std::int64_t context_window = 0) {
    conversation_status s;
    s.key = e.key;
    s.session_id = e.session_id;
    s.age_seconds = e.started_at != 0 ? now - e.started_at : 0;
    const double last = e.last_interaction_at != 0 ? e.last_interaction_at : e.started_at;
    s.idle_seconds = last != 0 ? now - last : 0;
    s.input_tokens = e.input_tokens;
    s.output_tokens = e.output_tokens;
    s.total_tokens = e.total_tokens;
    s.context_tokens = e.context_tokens;
    s.context_window = context_window;
    s.context_used = context_window > 0 ? static_cast<double>(e.context_tokens) / static_cast<double>(context_window) : 0;
    s.compaction_count = e.compaction_count;
    if (e.memory_flush_at != 0) s.since_memory_flush_seconds = now - e.memory_flush_at;
    s.flushed_since_last_compaction = e.memory_flush_at != 0 && e.memory_flush_compaction_count == e.compaction_count;
    s.archived_sessions = e.previous.size();
    s.labels = e.labels;
    s.overrides = e.overrides;
    return s;
}

/// Checks an index key: validate_id's rules (1 to 128 bytes, UTF-8, no '/', '\\', '..' or
/// control characters); ':' is allowed. Every index operation applies it.
inline boost::system::error_code validate_conversation_key(std::string_view key) noexcept { return validate_id(key); }

/// The models of session_index (see the top of this header).
template <class S>
concept session_index = requires(S& s, const S& cs, const std::string& app, const std::string& key,
                                 std::optional<conversation_entry>& found, conversation_entry& entry,
                                 const conversation_patch& patch, const conversation_query& query,
                                 std::vector<conversation_entry>& list, diagnostics* diag) {
    { S::blocking } -> std::convertible_to<bool>;
    { s.index_get(app, key, found, diag) } -> std::same_as<boost::system::error_code>;
    { s.index_put(std::as_const(entry), diag) } -> std::same_as<boost::system::error_code>;
    { s.index_patch(app, key, patch, entry, diag) } -> std::same_as<boost::system::error_code>;
    { s.index_list(query, list, diag) } -> std::same_as<boost::system::error_code>;
    { s.index_erase(app, key, diag) } -> std::same_as<boost::system::error_code>;
    { s.index_replace(app, std::as_const(list), diag) } -> std::same_as<boost::system::error_code>;
};

} // namespace libretto

#endif
