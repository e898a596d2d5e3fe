// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_FORK_HPP
#define LIBRETTO_RUNNER_FORK_HPP

// Forks: a child session (a thread, a sub-agent's own session) that starts from its
// parent's current history. docs/sessions.md, "Forks".
//
//   lb::fork_options o;
//   o.max_tokens = 32'000;                    // the child's model window for inherited history
//   o.conversation = "agent:main:slack:channel:c1:thread:t9";   // optional, with o.index
//   auto r = co_await lb::async_fork_session(store, {"demo", "u1", "s1"}, std::move(o));
//
// The parent's history as its context shows it (the summaries still shown and the events
// after them) is measured with the compaction estimate. When it fits max_tokens (or there
// is no limit), every parent event is copied into the child in order, so sequences and
// compaction ranges mean the same there; when it does not, the child starts isolated:
// with a summary of that history as its first message (fork_isolation::summary, the
// summarizer of the options; extractive by default) or with nothing (empty), instead of
// failing. Either way the child's last event is a fork marker (an agent_start event by
// "libretto", never shown to a model) whose metadata and state_delta ("libretto:fork")
// name the parent session, the sequence forked at and the parent's newest signature.
//
// State: the child's session scope ends as the parent's. Copied, the child is created with
// the parent's creation state and its events' deltas apply again in order (so a rewind in
// the child puts back what an invocation changed), without their app: and user: keys,
// which belong to every session and would take back what was set since.
//
// Signatures: copied events lose theirs (a signature covers the session id and sequence,
// which differ in the child); the child's chain starts at the marker, signed by
// fork_options::signer when given, with no prev_signature, and naming its parent.

#include <libretto/async.hpp>
#include <libretto/compaction/any_summarizer.hpp>
#include <libretto/compaction/estimate.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/runner/detail/turn_conversation.hpp>
#include <libretto/session/state.hpp>
#include <libretto/sign/any_signer.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/detail/index_rebuild.hpp>
#include <libretto/store/detail/spawn_op.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// What a child starts with when the parent's history is larger than max_tokens.
enum class fork_isolation {
    summary, ///< a summary of the parent's history, as the child's first message
    empty,   ///< nothing
};

/// How a fork is made.
struct fork_options {
    std::string child_session_id{}; ///< empty: a fresh UUID
    std::string child_user_id{};    ///< empty: the parent's user
    /// The most tokens of inherited history the child's model can take (estimated as the
    /// compaction strategies do); 0: no limit; negative: errc::invalid_argument.
    std::int64_t max_tokens = 0;
    fork_isolation when_too_large = fork_isolation::summary;
    any_summarizer summarizer{}; ///< for fork_isolation::summary (default: extractive, no model)
    any_signer signer{};         ///< signs the fork marker; default: none
    /// The child's conversation key, entered into `index` with parent_session_id (so
    /// conversation_query::parent_session_id lists a session's forks). Empty: no entry.
    std::string conversation{};
    any_session_index* index = nullptr;
};

/// How the child started.
enum class fork_mode { copied, summarized, empty };

struct fork_result {
    session child{};               ///< as stored, every event
    fork_mode mode = fork_mode::copied;
    std::size_t events_copied = 0;
    std::int64_t inherited_tokens = 0; ///< the estimate of the parent's shown history
    std::int64_t parent_sequence = 0;  ///< the parent's newest event when forked
};

using fork_signature = void(boost::system::error_code, fork_result);

namespace detail {

/// The child's state key naming its parent (the marker's state_delta sets it).
inline constexpr std::string_view fork_state_key = "libretto:fork";

/// A parent's event as the child stores it. Its app: and user: keys are dropped: the
/// shared scopes hold their newest values already, and writing the old ones again would
/// take back what other sessions (or, for another child_user_id, that user) set since.
inline event fork_copy(const event& e) {
    event c = e;
    c.sequence = 0;
    c.session_id.clear();
    c.signature.reset();
    c.prev_signature.reset();
    c.signer_did.clear();
    for (auto it = c.actions.state_delta.begin(); it != c.actions.state_delta.end();)
        it = scope_of(std::string_view(it->key())) == state_scope::session ? std::next(it) : c.actions.state_delta.erase(it);
    return c;
}

/// The session-scope keys of `state` a child starts from: no shared scope, not the
/// parent's conversation (the child has its own), not the parent's own fork marker.
inline json::object fork_session_state(const json::object& state) {
    json::object out;
    for (const auto& [k, v] : state) {
        const std::string_view key = k;
        if (scope_of(key) != state_scope::session || key == conversation_state_key || key == fork_state_key) continue;
        out[k] = v;
    }
    return out;
}

template <class Store>
boost::asio::awaitable<fork_result> fork_session(Store& store, session_key parent, fork_options o, diagnostics* d) {
    namespace asio = boost::asio;
    diagnostics said;
    auto fail = [&](boost::system::error_code ec, const std::string& what) {
        if (d) d->assign("fork of " + session_name(parent) + ": " + what + store_said_suffix(said.message()));
        throw boost::system::system_error(ec, "fork of " + session_name(parent) + ": " + what);
    };
    for (const std::string* id : {&parent.app_name, &parent.user_id, &parent.session_id})
        if (auto why = id_problem(*id); !why.empty()) fail(errc::invalid_argument, "the parent's id " + why);
    for (const std::string* id : {&o.child_session_id, &o.child_user_id})
        if (!id->empty())
            if (auto why = id_problem(*id); !why.empty()) fail(errc::invalid_argument, "the child's id " + why);
    if (!o.conversation.empty()) {
        if (!o.index) fail(errc::invalid_argument, "fork_options.conversation is set but fork_options.index is not");
        if (auto why = id_problem(o.conversation); !why.empty()) fail(errc::invalid_argument, "the conversation key " + why);
    }
    if (o.max_tokens < 0)
        fail(errc::invalid_argument, "fork_options.max_tokens is negative (" + std::to_string(o.max_tokens) +
                                         "); 0 means no limit");
    if (o.child_session_id == parent.session_id && o.child_user_id.empty())
        fail(errc::invalid_argument, "the child's session id is the parent's");

    // What the parent's context shows.
    get_options shown_only;
    shown_only.context_only = true;
    auto shown_get = store.async_get(parent, shown_only, said, asio::as_tuple(asio::use_awaitable));
    auto [sec, shown] = co_await std::move(shown_get);
    if (sec) fail(sec, "reading the parent failed: " + sec.message());
    if (!shown) fail(errc::not_found, "the parent does not exist");
    fork_result r;
    for (const event& e : shown->events) r.inherited_tokens += event_tokens(e);
    r.parent_sequence = shown->last_sequence;
    const bool fits = o.max_tokens <= 0 || r.inherited_tokens <= o.max_tokens;
    r.mode = fits ? fork_mode::copied : o.when_too_large == fork_isolation::summary ? fork_mode::summarized : fork_mode::empty;

    // The child's state: the parent's session scope (app: and user: state is shared anyway).
    // Copied, the child starts from the parent's creation state and its events' deltas
    // follow, so a rewind in the child finds the values before each invocation.
    const bool copy = r.mode == fork_mode::copied && shown->last_sequence > 0;
    std::optional<session> whole;
    if (copy) {
        // Every event, so sequences (and the compaction ranges that name them) hold.
        get_options all;
        all.with_initial_state = true;
        auto whole_get = store.async_get(parent, all, said, asio::as_tuple(asio::use_awaitable));
        auto [wec, got] = co_await std::move(whole_get);
        if (wec || !got) fail(wec ? wec : errc::not_found, "reading the parent's events failed");
        whole = std::move(got);
        r.parent_sequence = whole->last_sequence;
    }
    create_options co;
    co.app_name = parent.app_name;
    co.user_id = o.child_user_id.empty() ? parent.user_id : o.child_user_id;
    co.session_id = o.child_session_id;
    co.state = fork_session_state(copy ? whole->initial_state : shown->state);
    if (!o.conversation.empty()) co.state[conversation_state_key] = o.conversation;
    auto create = store.async_create(std::move(co), said, asio::as_tuple(asio::use_awaitable));
    auto [cec, child] = co_await std::move(create);
    if (cec) fail(cec, "creating the child failed: " + cec.message());

    json::object settle; // what the marker sets so that the child's state is the parent's
    if (copy) {
        for (const event& e : whole->events) {
            if (e.sequence > r.parent_sequence) break; // appended meanwhile: after the fork
            auto append = store.async_append(child, fork_copy(e), said, asio::as_tuple(asio::use_awaitable));
            auto [aec, seq] = co_await std::move(append);
            if (aec) fail(aec, "copying event " + std::to_string(e.sequence) + " failed: " + aec.message());
            ++r.events_copied;
        }
        // A session a SQL store created before it recorded creation states has none: the
        // values that came from its creation are set by the marker instead.
        const json::object want = fork_session_state(whole->state);
        const json::object have = fork_session_state(child.state);
        for (const auto& [k, v] : want)
            if (const json::value* h = have.if_contains(k); !h || *h != v) settle[k] = v;
        for (const auto& [k, v] : have)
            if (!want.contains(k)) settle[k] = nullptr;
    } else if (r.mode == fork_mode::summarized && !shown->events.empty()) {
        summary_request req;
        req.events = event_span(shown->events);
        auto summarize = detail::dependent_ref<Store>(o.summarizer).async_summarize(std::move(req));
        summary s = co_await std::move(summarize);
        event first = event::make(event_type::user_message, "user",
                                  content::from_text("Context from the parent conversation (summary):\n" + s.text));
        first.metadata["fork_summary"] = true;
        first.metadata["background"] = true;
        first.metadata["summary_produced_by"] = s.produced_by;
        auto append = store.async_append(child, std::move(first), said, asio::as_tuple(asio::use_awaitable));
        auto [aec, seq] = co_await std::move(append);
        if (aec) fail(aec, "storing the summary failed: " + aec.message());
    }

    // The marker: the child's chain starts here, naming its parent.
    json::object link{{"app_name", parent.app_name}, {"user_id", parent.user_id}, {"session_id", parent.session_id},
                      {"sequence", r.parent_sequence},
                      {"mode", r.mode == fork_mode::copied ? "copied" : r.mode == fork_mode::summarized ? "summarized" : "empty"}};
    if (!shown->events.empty() && shown->events.back().is_signed()) link["signature"] = *shown->events.back().signature;
    event marker = event::make(event_type::agent_start, "libretto", content{});
    marker.metadata["fork"] = link;
    marker.metadata["background"] = true;
    marker.actions.state_delta = std::move(settle);
    marker.actions.state_delta[fork_state_key] = link;
    if (!o.signer.did().empty()) {
        chain_event(child, marker);
        marker.prev_signature.reset(); // a fresh chain: copies and summary are unsigned
        o.signer.sign_event(marker);
    }
    auto append = store.async_append(child, std::move(marker), said, asio::as_tuple(asio::use_awaitable));
    auto [mec, mseq] = co_await std::move(append);
    if (mec) fail(mec, "storing the fork marker failed: " + mec.message());

    if (!o.conversation.empty()) {
        conversation_entry e;
        e.app_name = child.app_name;
        e.key = o.conversation;
        e.user_id = child.user_id;
        e.session_id = child.id;
        e.started_at = e.updated_at = event::now();
        e.chat_type = chat_type_of(o.conversation);
        e.parent_session_id = parent.session_id;
        count_transcript(child, e);
        auto put = o.index->async_put(std::move(e), said, detail::dependent_as_tuple_awaitable<Store>());
        auto [pec] = co_await std::move(put);
        if (pec) fail(pec, "entering conversation '" + o.conversation + "' failed: " + pec.message());
    }
    r.child = std::move(child);
    co_return r;
}

} // namespace detail

/// Forks `parent` into a new child session (see above). Completes with the child, or the
/// failure named in `diag` (a missing parent: errc::not_found; bad ids: invalid_argument).
template <session_store Store, boost::asio::completion_token_for<fork_signature> Token = default_completion_token_t>
auto async_fork_session(Store& store, session_key parent, fork_options o, diagnostics& diag, Token&& token = {}) {
    return detail::spawn_op<fork_result>(store.get_executor(), &diag, std::forward<Token>(token),
                                         [&store, parent = std::move(parent), o = std::move(o)](diagnostics* d) mutable {
                                             return detail::fork_session(store, std::move(parent), std::move(o), d);
                                         });
}
template <session_store Store, boost::asio::completion_token_for<fork_signature> Token = default_completion_token_t>
auto async_fork_session(Store& store, session_key parent, fork_options o, Token&& token = {}) {
    return detail::spawn_op<fork_result>(store.get_executor(), nullptr, std::forward<Token>(token),
                                         [&store, parent = std::move(parent), o = std::move(o)](diagnostics* d) mutable {
                                             return detail::fork_session(store, std::move(parent), std::move(o), d);
                                         });
}

} // namespace libretto

#endif
