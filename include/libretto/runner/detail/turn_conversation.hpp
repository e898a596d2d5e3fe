// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_TURN_CONVERSATION_HPP
#define LIBRETTO_RUNNER_DETAIL_TURN_CONVERSATION_HPP

// The conversation steps of a runner turn (run_options::conversation): before the session
// is loaded, the key's current session from the index (created, or replaced as the reset
// policy says); after it is loaded, the entry repaired from the transcript if the transcript
// has events the entry does not account for; after the turn, one patch of the entry with
// what the turn stored.

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/runner/detail/conversation_clock.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/conversation_key.hpp>
#include <libretto/store/detail/index_rebuild.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace libretto::detail {

/// A conversation turn's own state (turn_state::conv).
struct conversation_turn {
    std::string key;
    std::int64_t entry_sequence = 0; ///< the entry's last_sequence when the turn began
};

inline const char* chat_type_of(std::string_view key) {
    auto parts = parse_conversation_key(key);
    if (!parts) return "";
    switch (parts->kind) {
    case conversation_kind::direct: return "direct";
    case conversation_kind::group: return "group";
    case conversation_kind::channel: return "channel";
    case conversation_kind::room: return "room";
    case conversation_kind::scheduled_job: return "scheduled_job";
    case conversation_kind::webhook: return "webhook";
    }
    return "";
}

// turn_state's members that need conversation_turn complete.
inline turn_state::turn_state() = default;
inline turn_state::~turn_state() = default;
inline turn_state::turn_state(turn_state&&) noexcept = default;

[[noreturn]] inline void throw_index_failure(boost::system::error_code ec, const std::string& doing,
                                             const diagnostics& said) {
    throw_turn_error(ec, "session index: " + doing + " failed: " + ec.message() + store_said_suffix(said.message()));
}

/// Step 0: the conversation's current session becomes options.session.
template <class Core, class Options>
boost::asio::awaitable<void> resolve_conversation(Core& core, Options& o, turn_state& t) {
    namespace asio = boost::asio;
    if (!core.index)
        throw_turn_error(errc::invalid_argument, "run_options.conversation is set but the runner has no session index "
                                                 "(runner_options::index)");
    if (!o.session.empty())
        throw_turn_error(errc::invalid_argument, "run_options.conversation and run_options.session are both set ('" +
                                                     o.conversation + "', '" + o.session + "'): give one");
    if (auto why = id_problem(o.conversation); !why.empty())
        throw_turn_error(errc::invalid_argument, "the conversation key " + why);
    if (auto why = id_problem(o.app); !why.empty()) throw_turn_error(errc::invalid_argument, "run_options.app " + why);
    const double now = event::now();
    diagnostics said;
    auto get = core.index->async_get(o.app, o.conversation, said, asio::as_tuple(asio::use_awaitable));
    auto [ec, found] = co_await std::move(get);
    if (ec) throw_index_failure(ec, "reading conversation '" + o.conversation + "'", said);
    auto conv = std::make_unique<conversation_turn>();
    conv->key = o.conversation;
    if (!found) {
        conversation_entry e;
        e.app_name = o.app;
        e.key = o.conversation;
        e.user_id = o.user;
        e.session_id = event::new_id();
        e.started_at = e.updated_at = now;
        e.chat_type = chat_type_of(o.conversation);
        auto put = core.index->async_put(e, said, asio::as_tuple(asio::use_awaitable));
        auto [put_ec] = co_await std::move(put);
        if (put_ec) throw_index_failure(put_ec, "adding conversation '" + o.conversation + "'", said);
        o.session = e.session_id;
    } else {
        if (found->user_id != o.user)
            throw_turn_error(errc::invalid_argument, "conversation '" + o.conversation + "' is user '" + found->user_id +
                                                         "''s; run_options.user is '" + o.user + "'");
        std::string reason = o.scheduled_run ? "scheduled_run"
                             : o.reset       ? "explicit"
                             : (!o.background && !o.memory_flush && core.clock) ? core.clock->stale_reason(*found, now)
                                                             : "";
        if (reason.empty()) {
            o.session = found->session_id;
            conv->entry_sequence = found->last_sequence;
        } else {
            conversation_patch p;
            p.if_session_id = found->session_id;
            p.new_session_id = event::new_id();
            p.updated_at = now;
            if (o.scheduled_run) {
                // Only what is safe to inherit: labels, the chosen model and thinking level.
                conversation_overrides kept;
                kept.model = found->overrides.model;
                kept.thinking_level = found->overrides.thinking_level;
                p.overrides = std::move(kept);
                for (const auto& m : found->metadata) p.metadata[m.key()] = nullptr;
            }
            p.reset_reason = std::move(reason);
            auto patch = core.index->async_patch(o.app, o.conversation, std::move(p), said,
                                                 asio::as_tuple(asio::use_awaitable));
            auto [patch_ec, entry] = co_await std::move(patch);
            if (patch_ec == errc::stale_session) {
                // Another runner reset it first: its new session is the one.
                auto again = core.index->async_get(o.app, o.conversation, said, asio::as_tuple(asio::use_awaitable));
                auto [again_ec, now_found] = co_await std::move(again);
                if (again_ec || !now_found) throw_index_failure(again_ec ? again_ec : errc::not_found,
                                                                "reading conversation '" + o.conversation + "'", said);
                o.session = now_found->session_id;
                conv->entry_sequence = now_found->last_sequence;
            } else if (patch_ec) {
                throw_index_failure(patch_ec, "resetting conversation '" + o.conversation + "'", said);
            } else {
                o.session = entry.session_id;
            }
        }
    }
    t.conv = std::move(conv);
}

/// After the load: an entry behind (or ahead of) the transcript is set from the transcript.
template <class Core>
boost::asio::awaitable<void> repair_conversation(Core& core, turn_state& t) {
    namespace asio = boost::asio;
    diagnostics said;
    auto get = core.store->async_get(t.key, get_options{}, said, asio::as_tuple(asio::use_awaitable));
    auto [ec, whole] = co_await std::move(get);
    if (ec || !whole) throw_turn_error(ec ? ec : errc::not_found, "reading " + session_name(t.key) +
                                                                      " to repair its index entry failed" +
                                                                      store_said_suffix(said.message()));
    auto read = core.index->async_get(t.key.app_name, t.conv->key, said, asio::as_tuple(asio::use_awaitable));
    auto [read_ec, entry] = co_await std::move(read);
    if (read_ec || !entry) throw_index_failure(read_ec ? read_ec : errc::not_found, "repairing conversation '" + t.conv->key + "'", said);
    if (entry->session_id != t.key.session_id) co_return; // reset meanwhile: the turn's patch is refused too
    count_transcript(*whole, *entry);
    entry->updated_at = event::now();
    auto put = core.index->async_put(std::move(*entry), said, asio::as_tuple(asio::use_awaitable));
    auto [put_ec] = co_await std::move(put);
    if (put_ec) throw_index_failure(put_ec, "repairing conversation '" + t.conv->key + "'", said);
}

/// After the turn: the entry patched with what the turn stored. A reset that raced the
/// turn makes the patch stale: the turn's events are in the archived session, and the
/// entry (the new session's) is left alone.
template <class Core>
boost::asio::awaitable<void> finish_conversation(Core& core, turn_state& t, bool background, bool memory_flush) {
    namespace asio = boost::asio;
    turn_counts c;
    const auto& events = t.sess->events;
    for (std::size_t i = first_stored_by_turn(t); i < events.size(); ++i) c.add(events[i]);
    conversation_patch p;
    p.if_session_id = t.key.session_id;
    p.updated_at = event::now();
    p.last_sequence = t.sess->last_sequence;
    p.add_input_tokens = c.input_tokens;
    p.add_output_tokens = c.output_tokens;
    if (c.context_tokens >= 0) p.context_tokens = c.context_tokens;
    p.add_compactions = c.compactions;
    if (!background && c.last_interaction_at != 0) p.last_interaction_at = c.last_interaction_at;
    if (memory_flush && c.memory_flush_at != 0) p.memory_flush_at = c.memory_flush_at;
    diagnostics said;
    auto patch = core.index->async_patch(t.key.app_name, t.conv->key, std::move(p), said,
                                         asio::as_tuple(asio::use_awaitable));
    auto [ec, entry] = co_await std::move(patch);
    if (ec && ec != errc::stale_session)
        throw_index_failure(ec, "updating conversation '" + t.conv->key + "' after a turn of " + session_name(t.key), said);
}

} // namespace libretto::detail

#endif
