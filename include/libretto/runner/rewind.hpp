// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_REWIND_HPP
#define LIBRETTO_RUNNER_REWIND_HPP

// Rewind: undo a session back to before one of its invocations (ADK's rewind_async), as
// an "edit this message" or "regenerate" button needs. docs/sessions.md, "Rewind".
//
//   lb::rewind_options o;
//   o.artifacts = &artifacts;          // optional: restore the session's artifacts too
//   auto r = co_await lb::async_rewind_session(store, {"demo", "u1", "s1"}, invocation_id, std::move(o));
//
// Nothing is deleted: one rewind event is appended (an agent_start lifecycle event by
// "user", never shown to a model, in a fresh invocation, with
// actions.rewind_before_invocation_id) whose deltas put back what the undone events
// changed:
//
// - state_delta: every session-scope key to its value before the invocation (a null
//   deletes a key the invocation or a later one added). The value before is the creation
//   state (get_options::with_initial_state) with the deltas of every earlier event applied.
//   app: and user: keys are shared with other sessions and are left alone, as in ADK.
// - artifact_delta (with rewind_options::artifacts): each session artifact saved since is
//   saved again as a new version holding the bytes, MIME type and metadata of the version
//   it had before; one that did not exist then gets an empty version marked absent
//   (is_absent_artifact: loads through a context report it missing). "user:" artifacts are
//   the user's, left alone.
//
// The events from the invocation's first one to the rewind are then undone: context
// views, runners and summaries leave them out (event/rewinds.hpp). Rewinding again is
// defined: to an invocation after the rewind, or before the one rewound (which undoes the
// first rewind with the rest). An invocation already undone, a rewind's own invocation and
// an unknown one are refused (errc::invalid_argument, errc::not_found) and nothing is
// written. The rewind event is signed by rewind_options::signer when given, continuing the
// session's chain (it appends; the chain stays valid).

#include <libretto/async.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/rewinds.hpp>
#include <libretto/session/state.hpp>
#include <libretto/sign/any_signer.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/store/detail/spawn_op.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

/// How a rewind is made. Not an aggregate (a constructor): g++ 12 destroys an aggregate
/// temporary made in a co_await expression twice (docs/building.md, "g++ 12 and coroutines").
struct rewind_options {
    any_signer signer{};                       ///< signs the rewind event; default: none
    any_artifact_service* artifacts = nullptr; ///< restores session artifacts; null: left as they are
    rewind_options() = default;
};
static_assert(!std::is_aggregate_v<rewind_options>);

struct rewind_result {
    event rewind{};                 ///< the rewind event, as stored
    std::size_t events_undone = 0;  ///< from the invocation's first event to the newest before the rewind
    std::int64_t first_undone = 0;  ///< the sequence of the invocation's first event
};

using rewind_signature = void(boost::system::error_code, rewind_result);

namespace detail {

/// The state delta that takes `current` (a session's state view) back to `before`, over
/// session-scope keys only (app:, user: and temp: keys are skipped).
inline json::object rewind_state_delta(const json::object& before, const json::object& current) {
    auto session_scope = [](std::string_view k) {
        return !k.starts_with(app_prefix) && !k.starts_with(user_prefix) && !k.starts_with(temp_prefix);
    };
    json::object delta;
    for (const auto& kv : current) {
        if (!session_scope(kv.key())) continue;
        const json::value* was = before.if_contains(kv.key());
        if (!was) delta[kv.key()] = nullptr;
        else if (*was != kv.value()) delta[kv.key()] = *was;
    }
    for (const auto& kv : before)
        if (session_scope(kv.key()) && !current.contains(kv.key())) delta[kv.key()] = kv.value();
    return delta;
}

} // namespace detail

namespace detail {

template <class Store>
boost::asio::awaitable<rewind_result> rewind_session(Store& store, session_key key, std::string invocation_id,
                                                     rewind_options o, diagnostics* d) {
    namespace asio = boost::asio;
    diagnostics said;
    const std::string what = "rewind of " + session_name(key);
    auto fail = [&](boost::system::error_code ec, const std::string& why) {
        if (d) d->assign(what + ": " + why + store_said_suffix(said.message()));
        throw boost::system::system_error(ec, what + ": " + why);
    };
    for (const std::string* id : {&key.app_name, &key.user_id, &key.session_id})
        if (auto why = id_problem(*id); !why.empty()) fail(errc::invalid_argument, "the id " + why);
    if (invocation_id.empty()) fail(errc::invalid_argument, "the invocation id is empty");

    get_options whole;
    whole.with_initial_state = true;
    auto get = store.async_get(key, whole, said, asio::as_tuple(asio::use_awaitable));
    auto [gec, loaded] = co_await std::move(get);
    if (gec) fail(gec, "reading the session failed: " + gec.message());
    if (!loaded) fail(errc::not_found, "the session does not exist");
    session& s = *loaded;
    const event_span events(s.events);

    // The invocation's first event that no rewind undid.
    const auto undone = undone_ranges(events);
    std::optional<std::size_t> first;
    const event* undone_by = nullptr;
    {
        std::size_t r = 0;
        for (std::size_t i = 0; i < events.size(); ++i) {
            while (r < undone.size() && undone[r].last < i) ++r;
            if (events[i].invocation_id != invocation_id) continue;
            if (is_rewind(events[i]))
                fail(errc::invalid_argument, "invocation '" + invocation_id +
                                                 "' is a rewind; rewind to before the invocation it undid instead");
            if (r < undone.size() && undone[r].first <= i) {
                if (!undone_by) undone_by = &events[undone[r].last];
                continue;
            }
            first = i;
            break;
        }
    }
    if (!first) {
        if (undone_by)
            fail(errc::invalid_argument, "invocation '" + invocation_id + "' was undone already, by the rewind at sequence " +
                                             std::to_string(undone_by->sequence));
        fail(errc::not_found, "no event of invocation '" + invocation_id + "' in the session");
    }

    // What the state and the artifacts were before it. Every earlier event counts, undone
    // ones and rewinds included: each rewind put back what it undid.
    json::object before = std::move(s.initial_state);
    json::object versions_before;
    for (std::size_t i = 0; i < *first; ++i) {
        for (const auto& kv : events[i].actions.state_delta) {
            if (kv.value().is_null()) before.erase(kv.key());
            else before[kv.key()] = kv.value();
        }
        for (const auto& kv : events[i].actions.artifact_delta) versions_before[kv.key()] = kv.value();
    }
    json::object versions_now = versions_before;
    for (std::size_t i = *first; i < events.size(); ++i)
        for (const auto& kv : events[i].actions.artifact_delta) versions_now[kv.key()] = kv.value();

    // A lifecycle event: never shown to a model, never a turn.
    event ev = event::make(event_type::agent_start, "user", content{});
    ev.invocation_id = event::new_id();
    ev.actions.rewind_before_invocation_id = invocation_id;
    ev.actions.state_delta = rewind_state_delta(before, s.state);
    ev.metadata["rewind"] = json::object{{"before_invocation_id", invocation_id},
                                         {"first_sequence", events[*first].sequence}};

    if (o.artifacts) {
        for (const auto& kv : versions_now) {
            const std::string name(kv.key());
            if (std::string_view(name).starts_with("user:")) continue;
            const json::value* was = versions_before.if_contains(name);
            if (was && *was == kv.value()) continue;
            artifact_key ak(key.app_name, key.user_id, key.session_id, name);
            std::string data, mime = "application/octet-stream";
            json::object meta;
            if (was) {
                auto load = o.artifacts->async_load(ak, was->to_number<std::int64_t>(), said, detail::dependent_as_tuple_awaitable<Store>());
                auto [lec, a] = co_await std::move(load);
                if (lec) fail(lec, "loading version " + serialize(*was) + " of artifact '" + name + "' failed: " + lec.message());
                if (!a) fail(errc::not_found, "version " + serialize(*was) + " of artifact '" + name + "' is gone");
                data = std::move(a->data);
                mime = std::move(a->info.mime_type);
                meta = std::move(a->info.metadata);
            } else {
                meta[absent_artifact_key] = true;
            }
            auto save = o.artifacts->async_save(std::move(ak), std::move(data), std::move(mime), std::move(meta), said,
                                                detail::dependent_as_tuple_awaitable<Store>());
            auto [sec, info] = co_await std::move(save);
            if (sec) fail(sec, "restoring artifact '" + name + "' failed: " + sec.message());
            ev.actions.artifact_delta[name] = info.version;
        }
    }

    if (!o.signer.did().empty()) {
        chain_event(s, ev);
        o.signer.sign_event(ev);
    }
    rewind_result r;
    r.first_undone = events[*first].sequence;
    r.events_undone = events.size() - *first;
    auto append = store.async_append(s, ev, said, asio::as_tuple(asio::use_awaitable));
    auto [aec, seq] = co_await std::move(append);
    if (aec) fail(aec, "storing the rewind event failed: " + aec.message());
    ev.sequence = seq;
    ev.session_id = s.id;
    r.rewind = std::move(ev);
    co_return r;
}

} // namespace detail

/// Rewinds session `key` to before invocation `invocation_id` (see above). Completes with
/// the rewind event, or the failure named in `diag` (an unknown session or invocation:
/// errc::not_found; an undone or rewind invocation, bad ids: errc::invalid_argument).
template <session_store Store, boost::asio::completion_token_for<rewind_signature> Token = default_completion_token_t>
auto async_rewind_session(Store& store, session_key key, std::string invocation_id, rewind_options o, diagnostics& diag,
                          Token&& token = {}) {
    return detail::spawn_op<rewind_result>(
        store.get_executor(), &diag, std::forward<Token>(token),
        [&store, key = std::move(key), id = std::move(invocation_id), o = std::move(o)](diagnostics* d) mutable {
            return detail::rewind_session(store, std::move(key), std::move(id), std::move(o), d);
        });
}
template <session_store Store, boost::asio::completion_token_for<rewind_signature> Token = default_completion_token_t>
auto async_rewind_session(Store& store, session_key key, std::string invocation_id, rewind_options o = {},
                          Token&& token = {}) {
    return detail::spawn_op<rewind_result>(
        store.get_executor(), nullptr, std::forward<Token>(token),
        [&store, key = std::move(key), id = std::move(invocation_id), o = std::move(o)](diagnostics* d) mutable {
            return detail::rewind_session(store, std::move(key), std::move(id), std::move(o), d);
        });
}

} // namespace libretto

#endif
