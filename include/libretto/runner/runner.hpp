// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_RUNNER_HPP
#define LIBRETTO_RUNNER_RUNNER_HPP

// runner<Agent, Store, Compaction, Signer>: runs one turn of a session. docs/runner.md
// describes what a turn does; in short:
//
//   lb::runner runner{assistant, store};                      // + compaction, signer
//   auto turn = runner.run({"demo", "u1", "s1"}, "Weather in Oslo?");   // app, user, session
//   while (auto ev = co_await turn.next()) { ... }            // errors are thrown here
//
// or, to run a turn to its end and get what it produced (run_to_end.hpp):
//
//   auto [ec, result] = co_await lb::async_run_to_end(runner, {"demo", "u1", "s1"}, "Weather in Oslo?",
//                                                     asio::as_tuple(asio::use_awaitable));
//
// A turn loads the session (what its context view needs: the summaries still shown and the
// events after the newest covered range, never the covered events) or creates it,
// stores the user message, runs the agent (the root, or the agent the session last
// transferred to), stores every non-partial event it yields before asking it for the next
// one, yields every event to the caller, and runs compaction when the agent's stream ends.
// Turns of one session run one at a time within a process. resume() continues an
// invocation paused on a long-running tool call.
//
// The runner refers to its agent and its store (both must outlive it and every turn);
// it owns its compaction strategy and signer.

#include <libretto/event/event_list.hpp>
#include <libretto/agent/agent.hpp>
#include <libretto/compaction/compactor.hpp>
#include <libretto/compaction/no_compaction.hpp>
#include <libretto/compaction/obligations.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/runner/detail/runner_lock.hpp>
#include <libretto/runner/detail/session_cache.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/event/compaction_check.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/session_store.hpp>
#include <libretto/sign/no_signer.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

/// What one turn runs on.
struct run_options {
    // Constructors, so that run_options is not an aggregate: g++ 12 destroys an aggregate
    // temporary with non-trivial members twice when it is built inside a co_await
    // expression (`co_await lb::async_run_to_end(runner, {"demo", "u1", "s1"}, "hi")`), and
    // spares one built by a constructor (docs/building.md, "g++ 12 and coroutines").
    run_options() = default;
    run_options(std::string app, std::string user, std::string session, json::object state_delta = {})
        : app(std::move(app)), user(std::move(user)), session(std::move(session)),
          state_delta(std::move(state_delta)) {}

    std::string app{};     ///< the app id
    std::string user{};    ///< the user id
    std::string session{}; ///< the session id; created on its first turn
    /// Applied with the user message (run) or the tool response (resume): stored in that
    /// event's actions.state_delta, so the agent starts with it in its state.
    json::object state_delta{};
    /// run: the new invocation's id (empty: a fresh UUID). resume: the paused invocation;
    /// empty: the invocation of the tool call being answered (a different one is an error).
    std::string invocation_id{};
    /// The context's is_resumable(): long-running tool calls pause the invocation (resume
    /// continues it). resume() always runs resumable.
    bool resumable = false;
    /// Also yield the stored user message (run) or tool response (resume) first.
    bool yield_user_message = false;
    json::object run_config{}; ///< passed to the agents (ctx.run_config())
    /// Model calls this run (or resume) may make in all, every agent and retry included;
    /// one more ends the invocation with an error event (errc::limit_exceeded). 0: no
    /// limit. ADK's RunConfig.max_llm_calls, same default.
    std::size_t max_llm_calls = 500;
    /// Items the turn's stream buffers ahead of the caller (0: rendezvous).
    std::size_t stream_capacity = 2;
};
static_assert(!std::is_aggregate_v<run_options>, "run_options temporaries in co_await must be safe on g++ 12");

/// How a runner works, beyond its agent, store, compaction and signer.
struct runner_options {
    /// Sessions kept in the runner between their turns (least recently used out; 0: none).
    /// A turn of a cached session reads from the store only what changed since its previous
    /// turn in this runner (its last event again, to check that the copy is still the
    /// store's, and what other writers appended) instead of what a turn loads (the shown
    /// summaries and the events no compaction covers); anything unexpected (the session
    /// deleted or re-created, a gap) loads it again. Each cached session holds what a turn
    /// would load.
    std::size_t cached_sessions = 256;
    /// Called, on the turn's executor, for each stored compaction event a turn's context
    /// ignores because check_compaction refuses it (a reversed range, an empty summary ...:
    /// written by another tool; this library's stores refuse such appends). The history
    /// is not shortened by it: the events it claims to cover stay in the context. Empty:
    /// nothing is checked. ignored_compaction::source points at the event during the call.
    std::function<void(const session_key&, const ignored_compaction&)> on_ignored_compaction{};
};

namespace detail {

[[noreturn]] inline void throw_turn_error(boost::system::error_code ec, const std::string& what) {
    throw boost::system::system_error(ec, "libretto::runner: " + what);
}

inline std::string session_name(const session_key& k) {
    return "session '" + k.app_name + "/" + k.user_id + "/" + k.session_id + "'";
}

/// What a turn was asked to do.
/// Per-turn bookkeeping shared by the turn's steps.
struct turn_state {
    session_key key;
    std::shared_ptr<libretto::session> sess; ///< the session the context points to
    /// What the store appends to. The store may update it on another thread (its pool), so
    /// it is never the context's session: the turn mirrors each stored event into `sess`
    /// on the turn's own executor.
    libretto::session scratch;
    std::size_t stored = 0; ///< events stored by this turn
    /// What the store said about the turn's latest failed call (docs/errors.md): one per
    /// turn, as the turn's store calls come one after the other.
    diagnostics diag;
};

/// What a turn is asked to do, and the turn's own state: one block, which the turn's
/// coroutine frame points to. The frame then stays under 1 KB, the largest that Asio
/// recycles (and glibc's per-thread cache serves); a larger one would be a fresh
/// allocation on the allocator's slow path every turn.
struct turn_request {
    turn_request(run_options o, libretto::content c, bool r)
        : options(std::move(o)), content(std::move(c)), resume(r) {}

    run_options options;
    libretto::content content; ///< the user message, or (resume) the tool responses
    bool resume = false;
    turn_state state{};
    std::optional<event> first{}; ///< the turn's first event (the user message, or the tool responses)
    std::string invocation_id{};
};

/// A store whose synchronous get, create and append_shared never block (memory_store, which
/// says so with its `never_blocks` constant): the turn calls them directly, with no
/// suspension, post or completion handler in between, and the turn's session holds each
/// stored node itself (no copy of the event for the session).
template <class Store>
concept never_blocking_store = requires(Store& st, const Store& cst, session& s, std::shared_ptr<event> n,
                                        std::int64_t& seq, std::optional<session>& out, const session_key& k,
                                        const get_options& go) {
    requires Store::never_blocks;
    { cst.get(k, go, out) } -> std::same_as<boost::system::error_code>;
    { st.create(create_options{}, s) } -> std::same_as<boost::system::error_code>;
    { st.append_shared(s, std::move(n), seq) } -> std::same_as<boost::system::error_code>;
};

/// store_event's first part: what the runner fills in before the store sees the event (and
/// its signature, with a signer).
template <class Core>
void stamp_event(Core& core, const session& s, event& ev) {
    if (ev.id.empty()) ev.id = event::new_id();
    if (ev.timestamp == 0) ev.timestamp = event::now();
    if (ev.session_id.empty()) ev.session_id = s.id;
    if constexpr (is_signing<typename Core::signer_type>) {
        // Sign the event as the store will keep it: with the sequence it will assign (the
        // session's last + 1: an append from any other revision fails as stale) and linked
        // to the session's newest event. Stores drop temp: keys from the delta; the payload
        // leaves them out, so the signature holds for the stored event too.
        chain_event(s, ev);
        core.signer.sign_event(ev);
    } else {
        (void)core;
    }
}

/// store_event's last part, once the store answered: the stored event replaces the one the
/// turn's session took at `index` (the node it holds already, with a never-blocking store),
/// and `ev` becomes a copy of it (what the caller is given) if `give_back`; `node_out`, if
/// given, receives the stored node itself. A failure takes the event out of the turn's
/// session again and throws.
inline void finish_store(turn_state& t, event& ev, std::size_t index, boost::system::error_code ec,
                         std::int64_t seq, bool give_back, event_list::pointer_type* node_out = nullptr,
                         std::string_view store_said = {}) {
    session& s = *t.sess;
    if (ec || t.scratch.events.empty()) {
        if (!ec) ec = make_error_code(errc::io_error);
        std::string what = "storing event " + std::to_string(t.stored + 1) + " of the turn (" +
                           std::string(to_string(s.events[index].type)) + " by '" + s.events[index].author +
                           "') in " + session_name(t.key) + " failed: " + ec.message();
        if (!store_said.empty()) {
            what += " (";
            what += store_said;
            what += ")";
        }
        if (index + 1 == s.events.size()) s.events.pop_back();
        if (ec == errc::stale_session)
            what += " (another writer, e.g. another process, appended to the session during this turn; the turn "
                    "stopped; the next turn loads the session again)";
        throw_turn_error(ec, what);
    }
    event_list::pointer_type stored = t.scratch.events.shared(t.scratch.events.size() - 1);
    t.scratch.events.clear();
    s.last_sequence = seq;
    s.last_update_time = stored->timestamp;
    if (give_back) ev = *stored;
    if (node_out) *node_out = stored;
    s.events.replace(index, std::move(stored));
    ++t.stored;
}

/// store_event with a never-blocking store: a plain call. The event is boxed once; the
/// turn's session takes the node at once (an agent whose stream has capacity 0 finds each
/// event it emitted in ctx.session() when its emit() returns), and the store stamps and
/// keeps that same node. Without `give_back`, `ev` is left moved-from (the caller does not
/// yield it, or yields the node `node_out` receives: no copy).
template <class Core>
void store_event_now(Core& core, turn_state& t, event& ev, bool give_back = true,
                     event_list::pointer_type* node_out = nullptr) {
    session& s = *t.sess;
    stamp_event(core, s, ev);
    auto node = std::make_shared<event>(std::move(ev));
    s.events.push_back(event_list::pointer_type(node));
    const std::size_t index = s.events.size() - 1;
    if (!node->actions.state_delta.empty()) apply_delta(s.state, node->actions.state_delta);
    t.scratch.last_sequence = s.last_sequence;
    t.scratch.events.clear();
    std::int64_t seq = 0;
    const auto ec = core.store->append_shared(t.scratch, std::move(node), seq, &t.diag);
    finish_store(t, ev, index, ec, seq, give_back, node_out, ec ? t.diag.message() : std::string_view());
}

/// Stores `ev` (a non-partial event of the turn) and mirrors it into the turn's session.
/// On return `ev` is the event as stored (sequence, session id; no temp: keys). Taken by
/// reference so that the caller's frame, not a second one, holds the event. Hot paths call
/// store_event_now themselves when the store never blocks (no frame at all).
template <class Core>
boost::asio::awaitable<void> store_event(Core& core, turn_state& t, event& ev, bool give_back = true,
                                         event_list::pointer_type* node_out = nullptr) {
    if constexpr (never_blocking_store<typename Core::store_type>) {
        store_event_now(core, t, ev, give_back, node_out);
        co_return;
    } else {
        session& s = *t.sess;
        stamp_event(core, s, ev);
        // The agent sees the event in ctx.session() as soon as the runner has taken it (its
        // sequence is filled in once stored).
        s.events.push_back(ev);
        const std::size_t index = s.events.size() - 1;
        if (const event& taken = s.events[index]; !taken.actions.state_delta.empty())
            apply_delta(s.state, taken.actions.state_delta);
        t.scratch.last_sequence = s.last_sequence;
        t.scratch.events.clear();
        boost::system::error_code ec;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
        auto op = core.store->async_append(t.scratch, std::move(ev), t.diag, std::move(token));
        const std::int64_t seq = co_await std::move(op);
        finish_store(t, ev, index, ec, seq, give_back, node_out, ec ? t.diag.message() : std::string_view());
    }
}

template <class Store>
concept flushable_store = flushable_session_store<Store>;

/// "" or " (what the store said)", for an error message.
inline std::string store_said_suffix(std::string said) {
    if (said.empty()) return said;
    return " (" + said + ")";
}

/// The turn's flush; a failure comes with what the store said about it.
struct flush_result {
    boost::system::error_code ec;
    diagnostics diag;
};

template <class Core>
boost::asio::awaitable<flush_result> flush_turn(Core& core, const turn_state& t) {
    flush_result r;
    if constexpr (flushable_store<typename Core::store_type>) {
        if (t.stored == 0) co_return r;
        session_key k = t.key;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, r.ec);
        auto op = core.store->async_flush(std::move(k), r.diag, std::move(token));
        co_await std::move(op);
    }
    co_return r;
}

/// The metadata key of a compaction event that names the agent the session had last
/// transferred to when the event was written.
inline constexpr std::string_view active_agent_key = "active_agent";

/// The name of the agent the session last transferred to: the newest transfer's target,
/// else what the newest compaction event that records one says. A load from the newest
/// compaction on may not reach the transfer itself; the compaction record stands in for
/// the events before it. Empty when the session never transferred.
inline std::string_view last_transfer_target(const session& s) {
    for (auto it = s.events.rbegin(); it != s.events.rend(); ++it) {
        if (it->actions.transfer_to_agent) return *it->actions.transfer_to_agent;
        if (!it->is_compaction()) continue;
        auto f = it->metadata.find(active_agent_key);
        if (f != it->metadata.end() && f->value().is_string()) return f->value().get_string();
    }
    return {};
}

/// Records in a compaction event about to be stored which agent the session (as it is
/// now, before the event) had last transferred to, unless the event names one already.
inline void record_active_agent(const session& s, event& compaction) {
    if (compaction.metadata.contains(active_agent_key)) return;
    if (std::string_view name = last_transfer_target(s); !name.empty())
        compaction.metadata[active_agent_key] = name;
}

/// The agent that starts a new invocation: the one the session last transferred to
/// (last_transfer_target) when it is in the tree, else the root.
inline agent_ref pick_agent(agent_ref root, const session& s) {
    if (std::string_view name = last_transfer_target(s); !name.empty())
        if (auto found = find_agent(root, name)) return *found;
    return root;
}

/// The ids check of a turn: every id valid, with a message naming the bad one.
inline void validate_turn_ids(const run_options& o) {
    auto check = [](std::string_view what, const std::string& id) {
        if (auto ec = validate_id(id))
            throw_turn_error(ec, "run_options." + std::string(what) + " '" + id +
                                     "' is not a valid id (1 to 128 bytes; no '/', '\\', '..' or control characters)");
    };
    check("app", o.app);
    check("user", o.user);
    check("session", o.session);
}

/// resume(): the invocation a tool response answers, its agent and branch.
struct resume_target {
    std::string invocation_id;
    std::string author;
    std::string branch;
};

inline resume_target find_resume_target(const session& s, const content& responses, const run_options& o,
                                        const session_key& key) {
    resume_target target;
    bool any = false;
    for (const auto& p : responses.parts) {
        const auto* r = std::get_if<tool_response_part>(&p);
        if (!r) continue;
        if (r->tool_call_id.empty())
            throw_turn_error(errc::invalid_argument, "resume: a tool response has no tool_call_id");
        const event* call = nullptr;
        for (auto it = s.events.rbegin(); it != s.events.rend() && !call; ++it) {
            if (it->partial) continue;
            if (it->type == event_type::tool_response) {
                for (const auto& done : it->tool_responses())
                    if (done.tool_call_id == r->tool_call_id && !is_intermediate_response(done))
                        throw_turn_error(errc::already_exists, "resume: tool call '" + r->tool_call_id +
                                                                   "' in " + session_name(key) +
                                                                   " already has a response");
                continue;
            }
            for (const auto& c : it->tool_calls())
                if (c.tool_call_id == r->tool_call_id) call = &*it;
        }
        if (!call)
            throw_turn_error(errc::not_found, "resume: no tool call '" + r->tool_call_id + "' in " + session_name(key) +
                                                  " (searched the events a turn loads: those no compaction covers)");
        if (!any) {
            target = {call->invocation_id, call->author, call->branch};
            any = true;
        } else if (call->invocation_id != target.invocation_id) {
            throw_turn_error(errc::invalid_argument, "resume: the tool responses answer calls of different invocations");
        }
    }
    if (!any) throw_turn_error(errc::invalid_argument, "resume: the content has no tool_response part");
    if (!o.invocation_id.empty() && o.invocation_id != target.invocation_id)
        throw_turn_error(errc::invalid_argument, "resume: run_options.invocation_id '" + o.invocation_id +
                                                     "' is not the invocation of the answered call ('" +
                                                     target.invocation_id + "')");
    return target;
}

/// The agents from `root` down to the agent called `name` (both included); empty if absent.
inline bool path_to(agent_ref from, std::string_view name, std::vector<agent_ref>& path) {
    path.push_back(from);
    if (from.name() == name) return true;
    for (const auto& child : from.sub_agents())
        if (path_to(child, name, path)) return true;
    path.pop_back();
    return false;
}

/// resume(): the agent to run again, its branch, and the agent states the invocation
/// recorded (ADK's populate_invocation_agent_states). The agent is the top-most ancestor
/// of the call's author that recorded a checkpoint in the invocation (a composite then
/// continues where it paused: its recorded state says which child), else the author.
struct resume_plan {
    agent_ref agent;
    std::string branch;
    struct recorded_state {
        std::string agent;
        std::optional<json::object> state;
        bool end_of_agent = false;
    };
    std::vector<recorded_state> states;
};

inline resume_plan plan_resume(agent_ref root, const session& s, const resume_target& target) {
    resume_plan plan{root, target.branch, {}};
    std::vector<std::pair<std::string, std::string>> checkpointed; // agent, branch
    for (const auto& e : s.events) {
        if (e.invocation_id != target.invocation_id || e.partial) continue;
        if (e.actions.end_of_agent.value_or(false)) {
            plan.states.push_back({e.author, std::nullopt, true});
        } else if (e.type == event_type::agent_start) {
            auto it = e.metadata.find("agent_state");
            if (it != e.metadata.end() && it->value().is_object()) {
                plan.states.push_back({e.author, it->value().get_object(), false});
                checkpointed.emplace_back(e.author, e.branch);
            }
        }
    }
    std::vector<agent_ref> path;
    if (!path_to(root, target.author, path)) return plan; // author not in the tree: the root
    plan.agent = path.back();
    for (const auto& a : path) {
        auto it = std::find_if(checkpointed.begin(), checkpointed.end(),
                               [&](const auto& c) { return c.first == a.name(); });
        if (it != checkpointed.end()) {
            plan.agent = a;
            plan.branch = it->second;
            break;
        }
    }
    return plan;
}

// ---- compaction ---------------------------------------------------------------------------

/// The summarizer a compaction policy summarises with: its own (compactor), else extractive.
template <class C>
auto summarizer_of(const C& c) {
    if constexpr (is_compactor<C>::value) return c.summarizer();
    else return extractive_summarizer{};
}

template <class C>
compactor_options compactor_options_of(const C& c) {
    if constexpr (is_compactor<C>::value) return c.options();
    else return {};
}

/// The events a plan covers, with everything after them: the turn's session when it holds
/// what prepare_compaction needs (the whole range, or for a rolling summary the summary it
/// rolls up and the events after that: holds_plan_events), else the range read again from
/// the store (a plan may start before the events the turn loaded).
template <class Core>
boost::asio::awaitable<std::optional<event_list>> events_for_plan(Core& core, turn_state& t,
                                                                         const compaction_plan& plan) {
    const auto& ev = t.sess->events;
    if (holds_plan_events(event_span(ev), plan)) co_return std::nullopt; // use the session
    get_options go;
    go.from_sequence = plan.first_sequence;
    session_key k = t.key;
    auto op = core.store->async_get(std::move(k), std::move(go), t.diag, boost::asio::use_awaitable);
    std::optional<session> read = co_await std::move(op);
    if (!read) throw_turn_error(errc::not_found, session_name(t.key) + " vanished during compaction");
    co_return std::move(read->events);
}

/// Summarises `plan` of the turn's session: the compaction event (not stored), or nullopt
/// when the range holds no event.
template <class Core>
boost::asio::awaitable<std::optional<event>> summarize_plan(Core& core, turn_state& t, compaction_plan plan) {
    if constexpr (requires { core.compaction.async_compact(std::declval<const session_view&>(), plan); }) {
        // A policy that writes its own compaction events.
        session_view view{*t.sess};
        auto op = core.compaction.async_compact(view, plan);
        std::optional<event> e = co_await std::move(op);
        co_return e;
    } else {
        std::optional<event_list> read;
        {
            auto op = events_for_plan(core, t, plan);
            read = co_await std::move(op);
        }
        // Nothing appends to the turn's session while the summary is computed (the agent
        // is done, or waits for this in its overflow hook), so a span into it stays valid.
        event_span events = read ? event_span(*read) : event_span(t.sess->events);
        auto sum = summarizer_of(core.compaction);
        compactor_options o = compactor_options_of(core.compaction);
        auto op = async_compact(events, plan, std::move(sum), std::move(o));
        std::optional<event> e = co_await std::move(op);
        co_return e;
    }
}

/// Stores a compaction event. The compaction covers the range it planned, so an append by
/// another writer meanwhile (errc::stale_session) is read into the session and the event
/// is appended after it: nothing of either is lost.
template <class Core>
boost::asio::awaitable<event> store_compaction(Core& core, turn_state& t, event summary) {
    for (int attempt = 0;; ++attempt) {
        event copy = summary;
        record_active_agent(*t.sess, copy);
        std::exception_ptr failure;
        try {
            auto op = store_event(core, t, copy);
            co_await std::move(op);
            co_return copy;
        } catch (const boost::system::system_error& e) {
            if (e.code() != errc::stale_session || attempt >= 3) throw;
            failure = std::current_exception();
        }
        // Read what the other writer appended and mirror it into the turn's session.
        get_options go;
        go.from_sequence = t.sess->last_sequence + 1;
        session_key k = t.key;
        auto op = core.store->async_get(std::move(k), std::move(go), t.diag, boost::asio::use_awaitable);
        std::optional<session> fresh = co_await std::move(op);
        if (!fresh) std::rethrow_exception(failure);
        session& s = *t.sess;
        for (std::size_t i = 0; i < fresh->events.size(); ++i) {
            const event& e = fresh->events[i];
            if (e.sequence <= s.last_sequence) continue;
            if (!e.actions.state_delta.empty()) apply_delta(s.state, e.actions.state_delta);
            s.last_sequence = e.sequence;
            s.events.push_back(fresh->events.shared(i));
        }
        s.last_sequence = std::max(s.last_sequence, fresh->last_sequence);
    }
}

/// Runs the agent once more, silently, before a compaction (compactor_options::memory_flush):
/// its events are stored, marked metadata memory_flush, and not yielded.
template <class Core>
boost::asio::awaitable<void> run_memory_flush(std::shared_ptr<Core> core, turn_state& t, agent_ref agent,
                                              const memory_flush_options& mf) {
    event first = event::make(event_type::user_message, "user", content::from_text(mf.prompt));
    first.invocation_id = event::new_id();
    first.metadata["memory_flush"] = true;
    const std::string invocation_id = first.invocation_id;
    {
        auto op = store_event(*core, t, first, false); // not yielded: no copy back
        co_await std::move(op);
    }
    invocation_options io;
    io.invocation_id = invocation_id;
    io.session_id = t.key.session_id;
    io.user_id = t.key.user_id;
    io.app_name = t.key.app_name;
    io.agent_name = std::string(agent.name());
    io.session = t.sess;
    io.input_content = mf.prompt;
    io.agent_tree = core->tree;
    io.executor = core->ex;
    io.agent_launcher = core->launcher;
    invocation_context ctx(std::move(io));
    event_stream events = agent.run(std::move(ctx));
    for (;;) {
        auto next = events.next();
        std::optional<event> ev = co_await std::move(next);
        if (!ev) break;
        if (ev->partial) continue;
        if (ev->invocation_id.empty()) ev->invocation_id = invocation_id;
        ev->metadata["memory_flush"] = true;
        auto op = store_event(*core, t, *ev, false);
        co_await std::move(op);
    }
}

// What a turn yields: copies of the stored events (run/resume: an event_stream), or the
// stored nodes themselves (run_shared/resume_shared: a shared_event_stream, no copy per
// event). Partial events are never stored: the shared stream boxes them.
template <class Item>
inline constexpr bool yields_copies = std::is_same_v<Item, event>;

/// Yields a stored event: `ev` (the copy finish_store gave back) or `node`. Returns what to
/// wait for, if anything (stream_writer::emit_or_wait).
using emit_wait_t = std::optional<boost::asio::awaitable<void>>;
inline emit_wait_t emit_stored(const event_writer& out, event& ev, const event_list::pointer_type&) {
    return out.emit_or_wait(std::move(ev));
}
inline emit_wait_t emit_stored(const shared_event_writer& out, event&, const event_list::pointer_type& node) {
    return out.emit_or_wait(event_list::pointer_type(node));
}
/// Yields an event the turn's session does not hold (a partial one, a compaction summary).
inline emit_wait_t emit_unstored(const event_writer& out, event&& ev) { return out.emit_or_wait(std::move(ev)); }
inline emit_wait_t emit_unstored(const shared_event_writer& out, event&& ev) {
    return out.emit_or_wait(std::make_shared<const event>(std::move(ev)));
}

/// The compaction step after a turn: plan, (memory flush, plan again), summarise, store,
/// yield. A summarizer failure ends the turn with an error after everything else was stored.
template <class Core, class Writer>
boost::asio::awaitable<void> compact_after_turn(std::shared_ptr<Core> core, turn_state& t, agent_ref agent,
                                                const std::string& invocation_id, Writer& out) {
    std::optional<compaction_plan> plan = core->compaction.plan(session_view{*t.sess});
    if (!plan) co_return;
    if constexpr (is_compactor<typename Core::compaction_type>::value) {
        const auto& mf = core->compaction.options().memory_flush;
        if (mf) {
            auto op = run_memory_flush(core, t, agent, *mf);
            co_await std::move(op);
            plan = core->compaction.plan(session_view{*t.sess});
            if (!plan) co_return;
        }
    }
    std::optional<event> summary;
    try {
        auto op = summarize_plan(*core, t, *plan);
        summary = co_await std::move(op);
    } catch (const boost::system::system_error& e) {
        if (e.code() == boost::asio::error::operation_aborted || e.code() == errc::cancelled) throw;
        throw_turn_error(e.code(), "compacting " + session_name(t.key) + " (sequences " +
                                       std::to_string(plan->first_sequence) + " to " +
                                       std::to_string(plan->last_sequence) +
                                       ") failed; the turn's events are stored: " + e.what());
    }
    if (!summary) co_return;
    if (summary->invocation_id.empty()) summary->invocation_id = invocation_id;
    auto op = store_compaction(*core, t, std::move(*summary));
    event stored = co_await std::move(op);
    if (auto wait = emit_unstored(out, std::move(stored))) co_await std::move(*wait);
}

/// The context's compaction hook (context overflow): plans over the turn's session (the
/// strategy's plan, else forced_plan) and returns the summary event for the agent to emit.
template <class Core>
compaction_hook overflow_hook(std::shared_ptr<Core> core, turn_state& t) {
    turn_state* tp = &t; // the turn outlives its agent's stream, hence every call
    return [core = std::move(core), tp](const session& s) -> boost::asio::awaitable<std::optional<event>> {
        if (&s != tp->sess.get()) co_return std::nullopt; // another session (agent_tool's child)
        std::optional<compaction_plan> plan = forced_plan(core->compaction, session_view{s});
        if (!plan) co_return std::nullopt;
        auto op = summarize_plan(*core, *tp, *plan);
        std::optional<event> e = co_await std::move(op);
        if (e) record_active_agent(s, *e);
        co_return e;
    };
}

/// A failed get or create of the turn's session: throws naming it, the error and what the
/// store said in the call's diagnostics.
[[noreturn]] inline void throw_store_failure(boost::system::error_code ec, std::string_view doing, const session_key& k,
                                             const diagnostics& said) {
    throw_turn_error(ec, std::string(doing) + " " + session_name(k) + " failed: " + ec.message() +
                             store_said_suffix(said.message()));
}

/// What a turn's session is created with when the store has none.
inline create_options turn_create_options(const turn_state& t) {
    create_options co;
    co.app_name = t.key.app_name;
    co.user_id = t.key.user_id;
    co.session_id = t.key.session_id;
    return co;
}

/// A get of the turn's session found nothing: whether to create it (else throws). The
/// second pass after a create that lost a race must find the session.
inline void check_turn_session_missing(const turn_state& t, bool created_elsewhere, bool resume) {
    if (created_elsewhere) throw_turn_error(errc::not_found, session_name(t.key) + " vanished while it was created");
    if (resume) throw_turn_error(errc::not_found, "resume: " + session_name(t.key) + " does not exist");
}

/// The outcome of a create: the session, or `created_elsewhere` (another process created
/// it between our get and our create: read it on the next pass), or a throw.
inline void take_created_session(const turn_state& t, boost::system::error_code ec, session&& created,
                                 std::optional<session>& loaded, bool& created_elsewhere) {
    if (!ec) loaded.emplace(std::move(created));
    else if (ec == errc::already_exists) created_elsewhere = true;
    else throw_store_failure(ec, "creating", t.key, t.diag);
}

/// The loaded session becomes the turn's.
inline void adopt_turn_session(turn_state& t, std::optional<session>& loaded) {
    t.sess = std::make_shared<session>(std::move(*loaded));
    loaded.reset();
    // Room for a typical turn's events (a user message and a few steps): growing from the
    // loaded size would move every loaded event at each doubling. Not more: with many
    // turns in flight each spare slot costs an event's size per session (memory_store's
    // get reserves the same).
    if (auto& evs = t.sess->events; evs.capacity() < evs.size() + 8) evs.reserve(evs.size() + 8 + evs.size() / 2);
    t.scratch.id = t.sess->id;
    t.scratch.app_name = t.sess->app_name;
    t.scratch.user_id = t.sess->user_id;
}

/// Tells runner_options::on_ignored_compaction (if set) of each compaction event in the
/// turn's session that check_compaction refuses: the context ignores it, and the caller
/// hears of it rather than of a history silently shortened.
template <class Core>
void report_ignored_compactions(const Core& core, const turn_state& t) {
    if (!core.on_ignored_compaction) return;
    for (const event& e : t.sess->events)
        if (e.actions.compaction)
            if (auto bad = check_compaction(e)) core.on_ignored_compaction(t.key, ignored_compaction{&e, std::move(bad.message)});
}

/// What a turn loads: what a context view of the session needs (get_options::context_only:
/// the shown summaries and the events after the newest covered range, never the covered
/// events), with the newest compaction's range too for a strategy that plans from it.
template <class Compaction>
get_options turn_load_options(const Compaction& c) {
    get_options go;
    go.context_only = true;
    go.with_newest_range = plans_from_newest_range(c);
    return go;
}

/// Step 2 of a turn: the session (what the context needs: turn_load_options), from the
/// runner's cache brought up to date, else from the store, else
/// created. This is the plain function for a never-blocking store (its calls complete at
/// once: no coroutine frame); load_turn_session is the same for the other stores.
template <class Core>
void load_turn_session_now(Core& core, turn_state& t, const std::string& cache_key, bool resume) {
    auto& store = *core.store;
    auto call = [&](auto&& op, const char* doing) {
        if (auto ec = op()) throw_store_failure(ec, doing, t.key, t.diag);
    };
    std::optional<session> loaded = core.cache.take(cache_key);
    if (loaded) {
        get_options go;
        go.from_sequence = loaded->last_sequence;
        std::optional<session> fresh;
        call([&] { return store.get(t.key, go, fresh, &t.diag); }, "loading");
        if (!fresh || !refresh_cached_session(*loaded, std::move(*fresh), plans_from_newest_range(core.compaction)))
            loaded.reset();
    }
    const get_options whole = turn_load_options(core.compaction);
    for (bool created_elsewhere = false; !loaded;) {
        call([&] { return store.get(t.key, whole, loaded, &t.diag); }, "loading");
        if (loaded) break;
        check_turn_session_missing(t, created_elsewhere, resume);
        session created;
        const boost::system::error_code ec = store.create(turn_create_options(t), created, &t.diag);
        take_created_session(t, ec, std::move(created), loaded, created_elsewhere);
    }
    adopt_turn_session(t, loaded);
    report_ignored_compactions(core, t);
}

/// Step 2 of a turn (see load_turn_session_now) for a store whose calls complete later: a
/// coroutine of its own, so that the turn's frame does not keep its locals. A session this
/// runner ran before is only brought up to date (docs/performance.md).
template <class Core>
boost::asio::awaitable<void> load_turn_session(Core& core, turn_state& t, const std::string& cache_key, bool resume) {
    auto& store = *core.store;
    std::optional<session> loaded = core.cache.take(cache_key);
    if (loaded) {
        get_options go;
        go.from_sequence = loaded->last_sequence;
        session_key k = t.key;
        boost::system::error_code ec;
        auto op = store.async_get(std::move(k), std::move(go), t.diag, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        std::optional<session> fresh = co_await std::move(op);
        if (ec) throw_store_failure(ec, "loading", t.key, t.diag);
        if (!fresh || !refresh_cached_session(*loaded, std::move(*fresh), plans_from_newest_range(core.compaction)))
            loaded.reset();
    }
    const get_options whole = turn_load_options(core.compaction);
    for (bool created_elsewhere = false; !loaded;) {
        {
            session_key k = t.key;
            boost::system::error_code ec;
            auto op = store.async_get(std::move(k), whole, t.diag, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            loaded = co_await std::move(op);
            if (ec) throw_store_failure(ec, "loading", t.key, t.diag);
        }
        if (loaded) break;
        check_turn_session_missing(t, created_elsewhere, resume);
        boost::system::error_code ec;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
        auto op = store.async_create(turn_create_options(t), t.diag, std::move(token));
        session created = co_await std::move(op);
        take_created_session(t, ec, std::move(created), loaded, created_elsewhere);
    }
    adopt_turn_session(t, loaded);
    report_ignored_compactions(core, t);
}

/// Step 3 of a turn: what the agent starts from. Plain functions (this one and
/// start_agent), so that the turn's coroutine frame does not hold their locals.
struct turn_start {
    agent_ref agent;
    std::optional<std::string> input;
    std::string branch;
    std::vector<resume_plan::recorded_state> agent_states;
    bool resumable = false;
};

/// event::make's fields written into `e`, a default event: assigning a made event would
/// move-assign each of its strings and JSON objects.
inline void make_in_place(event& e, event_type type, std::string author, content&& c) {
    e.id = event::new_id();
    e.timestamp = event::now();
    e.type = type;
    e.author = std::move(author);
    e.content = std::move(c);
}

/// Fills `first` (a default event: the user message, or the answer to a paused call) and
/// picks the agent: the one the session last transferred to, or (resume) the one that paused.
template <class Core>
turn_start plan_turn_start(const Core& core, const turn_state& t, turn_request& req, event& first) {
    agent_ref root(*core.agent);
    turn_start ts{root, std::nullopt, {}, {}, req.options.resumable};
    if (!req.resume) {
        make_in_place(first, event_type::user_message, "user", std::move(req.content));
        first.invocation_id = req.options.invocation_id.empty() ? event::new_id() : req.options.invocation_id;
        ts.input = first.text();
        ts.agent = pick_agent(root, *t.sess);
    } else {
        resume_target target = find_resume_target(*t.sess, req.content, req.options, t.key);
        make_in_place(first, event_type::tool_response, target.author, std::move(req.content));
        first.invocation_id = target.invocation_id;
        first.branch = target.branch;
        for (const auto& e : t.sess->events)
            if (e.invocation_id == target.invocation_id && e.type == event_type::user_message) {
                ts.input = e.text();
                break;
            }
        resume_plan plan = plan_resume(root, *t.sess, target);
        ts.agent = plan.agent;
        ts.branch = std::move(plan.branch);
        ts.agent_states = std::move(plan.states);
        ts.resumable = true;
    }
    first.actions.state_delta = std::move(req.options.state_delta);
    return ts;
}

/// The invocation context (built after the first event is stored, so its state has that
/// event's delta) and the agent's stream. The agent gets the context itself (it shares the
/// session and the state with everything it derives).
template <class Core>
event_stream start_agent(const std::shared_ptr<Core>& core, turn_state& t, turn_start& ts,
                         const std::string& invocation_id, json::object run_config, std::size_t max_llm_calls) {
    invocation_options io;
    io.invocation_id = invocation_id;
    io.session_id = t.key.session_id;
    io.user_id = t.key.user_id;
    io.app_name = t.key.app_name;
    io.agent_name = std::string(ts.agent.name());
    io.branch = std::move(ts.branch);
    io.session = t.sess;
    io.input_content = std::move(ts.input);
    io.is_resumable = ts.resumable;
    io.run_config = std::move(run_config);
    io.max_llm_calls = max_llm_calls;
    io.agent_tree = core->tree;
    io.event_callback = {};
    io.executor = core->ex;
    io.agent_launcher = core->launcher;
    if constexpr (!std::is_same_v<typename Core::compaction_type, no_compaction>)
        io.compaction_hook = overflow_hook(core, t);
    invocation_context ctx(std::move(io));
    for (auto& st : ts.agent_states) ctx.set_agent_state(st.agent, std::move(st.state), st.end_of_agent);
    ts.agent_states.clear();
    return ts.agent.run(std::move(ctx));
}

/// The runner as the sink of its agent's stream (stream_access::run_inline), for a store
/// that never blocks: each event the agent emits is stored inside the agent's emit() and
/// handed on to the caller's stream, without a buffer, a next() or a move in between.
template <class Core, class Item>
struct turn_sink final : stream_state<event>::sink {
    Core& core;
    turn_state& t;
    const std::string& invocation_id;
    const stream_writer<Item>& out;

    turn_sink(Core& c, turn_state& ts, const std::string& id, const stream_writer<Item>& w) noexcept
        : core(c), t(ts), invocation_id(id), out(w) {}

    std::optional<boost::asio::awaitable<void>> accept(event&& ev) override {
        if (ev.partial) return emit_unstored(out, std::move(ev));
        if (ev.invocation_id.empty()) ev.invocation_id = invocation_id;
        event_list::pointer_type node;
        store_event_now(core, t, ev, yields_copies<Item>, yields_copies<Item> ? nullptr : &node);
        return emit_stored(out, ev, node);
    }
};

/// Step 4 of a turn when the agent's events come through its stream (not run inline, see
/// turn_sink): each stored (non-partial) before the agent is asked for the next, then
/// yielded. A coroutine of its own: the event that next() gives is a temporary, and the
/// turn's frame, held by every turn in flight, would keep a slot for it.
template <class Core, class Item>
boost::asio::awaitable<void> forward_agent_events(Core& core, turn_state& t, event_stream& agent_events,
                                                  const std::string& invocation_id, const stream_writer<Item>& out) {
    event_list::pointer_type node;
    event_list::pointer_type* const node_out = yields_copies<Item> ? nullptr : &node;
    std::optional<event> ev;
    for (;;) {
        ev = agent_events.try_next(); // ready events (a make_stream agent) without a frame
        if (!ev) {
            auto next = agent_events.next();
            ev = co_await std::move(next);
        }
        if (!ev) co_return;
        if (ev->partial) {
            if (auto wait = emit_unstored(out, std::move(*ev))) co_await std::move(*wait);
            continue;
        }
        if (ev->invocation_id.empty()) ev->invocation_id = invocation_id;
        if constexpr (never_blocking_store<typename Core::store_type>) {
            store_event_now(core, t, *ev, yields_copies<Item>, node_out);
        } else {
            auto op = store_event(core, t, *ev, yields_copies<Item>, node_out);
            co_await std::move(op);
        }
        if (auto wait = emit_stored(out, *ev, node)) co_await std::move(*wait);
    }
}

/// One turn, as the producer of the stream run()/resume() return.
template <class Core, class Item>
boost::asio::awaitable<void> run_turn(std::shared_ptr<Core> core, std::unique_ptr<turn_request> boxed,
                                      stream_writer<Item> out) {
    // Where a stored node goes when the caller takes nodes rather than copies.
    event_list::pointer_type node;
    event_list::pointer_type* const node_out = yields_copies<Item> ? nullptr : &node;
    turn_request& req = *boxed; // boxed: the frame keeps a pointer (see turn_request)
    validate_turn_ids(req.options);
    if (req.content.parts.empty())
        throw_turn_error(errc::invalid_argument, req.resume ? "resume: the content has no tool_response part"
                                                            : "the user message is empty (no parts)");
    turn_state& t = req.state;
    t.key = session_key{req.options.app, req.options.user, req.options.session};

    // 1. One turn per session at a time (no thread blocks while a turn waits).
    std::string cache_key = t.key.app_name + '/' + t.key.user_id + '/' + t.key.session_id;
    session_locks::guard lock = core->locks->try_acquire(cache_key);
    if (!lock) {
        std::string lock_key = cache_key;
        auto acquire = core->locks->async_acquire(std::move(lock_key), core->ex, boost::asio::use_awaitable);
        lock = co_await std::move(acquire);
    }

    // A never-blocking store's calls do not suspend, and an agent over ready streams may not
    // either: such a turn could run from its first next() to its end without returning to
    // the event loop, and a caller running turns back to back would starve every other
    // handler (and pile up the completed turns' posted clean-ups). One pass through the
    // loop per turn, as the store's own posted completions gave before.
    if constexpr (never_blocking_store<typename Core::store_type>) {
        auto yield = boost::asio::post(core->ex, boost::asio::deferred); // no coroutine frame
        co_await std::move(yield);
    }

    // 2. The session: what the context needs (turn_load_options), or a new one.
    if constexpr (never_blocking_store<typename Core::store_type>) {
        load_turn_session_now(*core, t, cache_key, req.resume);
    } else {
        auto op = load_turn_session(*core, t, cache_key, req.resume);
        co_await std::move(op);
    }

    // 3. The first event (the user message, or the answer to a paused call) and the agent.
    std::optional<event>& ev = req.first;
    ev.emplace();
    turn_start start = plan_turn_start(*core, t, req, *ev);
    const std::string& invocation_id = req.invocation_id = ev->invocation_id;

    std::exception_ptr failure;
    bool finished = false;
    try {
        // Copied back for the caller only if it is yielded.
        const bool yield_first = req.options.yield_user_message;
        const bool copy_first = yield_first && yields_copies<Item>;
        if constexpr (never_blocking_store<typename Core::store_type>) {
            store_event_now(*core, t, *ev, copy_first, node_out);
        } else {
            auto op = store_event(*core, t, *ev, copy_first, node_out);
            co_await std::move(op);
        }
        if (yield_first)
            if (auto wait = emit_stored(out, *ev, node)) co_await std::move(*wait);

        // 4. The agent's events: stored (non-partial) before the agent is asked for the
        // next one, then yielded.
        event_stream agent_events = start_agent(core, t, start, invocation_id, std::move(req.options.run_config),
                                                   req.options.max_llm_calls);
        bool consumed = false;
        if constexpr (never_blocking_store<typename Core::store_type>) {
            // The agent's producer runs in this coroutine, the runner taking each event
            // inside its emit() (the same order and the same stores as the loop below,
            // one hop fewer). Not for an agent whose stream was started already or runs
            // on another executor.
            const boost::asio::any_io_executor here = co_await boost::asio::this_coro::executor;
            if (stream_access::can_run_inline(agent_events, here)) {
                turn_sink<Core, Item> sink(*core, t, invocation_id, out);
                // Awaited in this frame (stream_access::run_inline would be one more).
                auto run = stream_access::start_inline(agent_events, sink);
                co_await std::move(run.body());
                run.finish();
                consumed = true;
            }
        }
        if (!consumed) {
            auto op = forward_agent_events(*core, t, agent_events, invocation_id, out);
            co_await std::move(op);
        }

        // 6. Compaction, after the stream (never mid-stream).
        if constexpr (!std::is_same_v<typename Core::compaction_type, no_compaction>) {
            auto op = compact_after_turn(core, t, start.agent, invocation_id, out);
            co_await std::move(op);
        }
        finished = true;
    } catch (...) {
        failure = std::current_exception();
    }

    // 7. The end of the turn for the store (durability per_turn), also after a failure or a
    // cancellation: what was stored is flushed before the next turn may start.
    if (failure) co_await boost::asio::this_coro::reset_cancellation_state();
    flush_result flushed;
    if constexpr (flushable_store<typename Core::store_type>) {
        auto flush = flush_turn(*core, t);
        flushed = co_await std::move(flush);
    }
    if (failure) std::rethrow_exception(failure);
    if (finished && flushed.ec)
        throw_turn_error(flushed.ec, "flushing " + session_name(t.key) + " at the end of the turn failed: " +
                                         flushed.ec.message() + store_said_suffix(flushed.diag.message()));
    // Kept for the session's next turn, unless something still shares it (an agent kept
    // its context) or the turn did not end well (it was taken out above).
    if (finished && t.sess.use_count() == 1) core->cache.put(std::move(cache_key), std::move(*t.sess));
}

template <class Core, class Item = event>
struct turn_producer {
    std::shared_ptr<Core> core;
    std::unique_ptr<turn_request> request; // moved by pointer from the runner into the turn
    boost::asio::awaitable<void> operator()(stream_writer<Item> out) {
        return run_turn<Core, Item>(std::move(core), std::move(request), std::move(out));
    }
};

} // namespace detail

/// Runs turns of sessions of `Store` with the agent tree rooted at `Agent`.
template <agent Agent, session_store Store, compaction_strategy Compaction = no_compaction, signer Signer = no_signer>
class runner {
public:
    using agent_type = Agent;
    using store_type = Store;
    using compaction_type = Compaction;
    using signer_type = Signer;
    using executor_type = boost::asio::any_io_executor;

    /// Throws system_error(errc::invalid_argument) if two agents of the tree share a name
    /// (transfer finds agents by name).
    runner(const Agent& agent, Store& store, Compaction compaction = {}, Signer signer = {})
        : runner(agent, store, runner_options{}, std::move(compaction), std::move(signer)) {}

    /// With options (runner_options::cached_sessions).
    runner(const Agent& agent, Store& store, runner_options options, Compaction compaction = {}, Signer signer = {})
        : core_(std::make_shared<core>(agent, store, std::move(options), std::move(compaction), std::move(signer))) {}

    /// The runner refers to its agent: a temporary would dangle.
    runner(const Agent&& agent, Store& store, Compaction compaction = {}, Signer signer = {}) = delete;
    runner(const Agent&& agent, Store& store, runner_options options, Compaction compaction = {},
           Signer signer = {}) = delete;

    /// Starts a turn: `text` becomes the user message. Lazy: nothing happens until the
    /// first next(). Every failure (bad ids, store errors, the agent's exceptions) is
    /// thrown from next(); see docs/runner.md.
    event_stream run(run_options options, std::string text) {
        return make_turn(options, content::from_text(std::move(text)), false);
    }

    /// Starts a turn with a user message of any content (text, files, data).
    event_stream run(run_options options, content message) {
        return make_turn(options, std::move(message), false);
    }

    /// Continues the invocation paused on the long-running tool call(s) that `responses`
    /// (tool_response parts) answer: the response is stored as a tool_response event of
    /// that invocation, then the agent that made the call runs again in it.
    event_stream resume(run_options options, content responses) {
        return make_turn(options, std::move(responses), true);
    }

    /// resume() with one tool response.
    event_stream resume(run_options options, tool_response_part response) {
        content c;
        c.parts.emplace_back(std::move(response));
        return make_turn(options, std::move(c), true);
    }

    /// run(), yielding the stored events themselves, shared with the store and the session
    /// (immutable), instead of a copy of each: no copy per event. Partial events arrive
    /// boxed. Otherwise the same turn: same order, same errors.
    shared_event_stream run_shared(run_options options, std::string text) {
        return make_turn<event_list::pointer_type>(options, content::from_text(std::move(text)), false);
    }
    shared_event_stream run_shared(run_options options, content message) {
        return make_turn<event_list::pointer_type>(options, std::move(message), false);
    }
    /// resume(), yielding shared stored events (see run_shared).
    shared_event_stream resume_shared(run_options options, content responses) {
        return make_turn<event_list::pointer_type>(options, std::move(responses), true);
    }
    shared_event_stream resume_shared(run_options options, tool_response_part response) {
        content c;
        c.parts.emplace_back(std::move(response));
        return make_turn<event_list::pointer_type>(options, std::move(c), true);
    }

    const Agent& agent() const noexcept { return *core_->agent; }
    Store& store() const noexcept { return *core_->store; }
    const Compaction& compaction() const noexcept { return core_->compaction; }
    const Signer& signer() const noexcept { return core_->signer; }
    /// Where turns run: the store's executor.
    executor_type get_executor() const { return core_->ex; }

    /// Sessions with a turn in progress in this runner (waiting turns not counted).
    std::size_t active_sessions() const { return core_->locks->locked_count(); }

    /// Sessions kept between turns (at most runner_options::cached_sessions).
    std::size_t cached_sessions() const { return core_->cache.size(); }

private:
    struct core {
        using store_type = Store;
        using compaction_type = Compaction;
        using signer_type = Signer;

        core(const Agent& a, Store& s, runner_options o, Compaction c, Signer sg)
            : agent(&a), store(&s), compaction(std::move(c)), signer(std::move(sg)), ex(s.get_executor()),
              locks(std::make_shared<detail::session_locks>()), cache(o.cached_sessions),
              on_ignored_compaction(std::move(o.on_ignored_compaction)) {
            agent_ref root(a);
            auto dup = duplicate_agent_names(root);
            if (!dup.empty()) {
                std::string names;
                for (const auto& d : dup) names += (names.empty() ? "'" : ", '") + d + "'";
                detail::throw_turn_error(errc::invalid_argument,
                                         "agent names must be unique within the tree; used twice: " + names);
            }
            tree = std::make_shared<const agent_node>(make_agent_tree(root));
            launcher = agent_launcher_for(root);
        }

        const Agent* agent;
        Store* store;
        Compaction compaction;
        Signer signer;
        executor_type ex;
        std::shared_ptr<detail::session_locks> locks;
        detail::session_cache cache;
        std::function<void(const session_key&, const ignored_compaction&)> on_ignored_compaction;
        std::shared_ptr<const agent_node> tree;
        libretto::agent_launcher launcher;
    };

    /// Takes the public functions' by-value parameters by reference: each layer of
    /// by-value run_options would be a move and a destruction (four strings, two JSON
    /// objects) per turn. The options and the content move once, into the turn's request.
    template <class Item = event>
    basic_event_stream<Item> make_turn(run_options& options, content&& c, bool resume) {
        stream_options so;
        so.capacity = options.stream_capacity;
        std::unique_ptr<detail::turn_request> req(new detail::turn_request(std::move(options), std::move(c), resume));
        return basic_event_stream<Item>(core_->ex, detail::turn_producer<core, Item>{core_, std::move(req)}, so);
    }

    std::shared_ptr<core> core_;
};

} // namespace libretto

#endif
