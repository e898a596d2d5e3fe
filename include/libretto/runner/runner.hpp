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
//
// This header holds the public API; the turn itself is in impl/runner.hpp and the
// detail/ headers it includes (session load, store, resume, compaction).

#include <libretto/agent/agent.hpp>
#include <libretto/detail/config.hpp>
#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/compaction/no_compaction.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/runner/detail/runner_lock.hpp>
#include <libretto/runner/detail/session_cache.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/runner/reset_policy.hpp>
#include <libretto/session/session.hpp>
#include <libretto/sign/no_signer.hpp>
#include <libretto/sign/signer.hpp>
#include <libretto/store/memory_service.hpp>
#include <libretto/store/session_store.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
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
    /// run: the new invocation's id (empty: a fresh UUID); give each turn its own, since a
    /// rewind to an id used twice undoes from its first run that no rewind undid (and
    /// everything after). resume: the paused invocation;
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
    /// Silent turns (background work the user should not see): a reply whose whole text is
    /// this token (case-insensitive, white space around it ignored; OpenClaw's "NO_REPLY")
    /// is stored with metadata["silent"] = true and not yielded, and a reply's partial
    /// events are held back while it could still be the token. White space around the
    /// token itself is ignored too; empty (or blank): no silent replies.
    std::string silent_token{};

    /// A conversation turn: the session is the current session of this conversation key
    /// (conversation_key.hpp) in runner_options::index, created on the key's first turn and
    /// replaced by a new one when runner_options::reset says so; `session` must be empty.
    /// The turn updates the key's index entry (docs/sessions.md).
    std::string conversation{};
    /// Start a new session for the conversation (a user's "/new"): the current one is
    /// kept as an archive.
    bool reset = false;
    /// A turn nobody typed (a system event, a scheduled job, a memory flush): it never
    /// resets the conversation and does not count as an interaction for the idle reset.
    /// Its first event carries metadata["background"] = true.
    bool background = false;
    /// The pre-compaction memory flush: a background turn recorded as the conversation's
    /// memory_flush_at; its first event carries metadata["memory_flush"] = true. With
    /// silent_token empty, the reply "NO_REPLY" is silent.
    bool memory_flush = false;
    /// One run of a scheduled job (a `cron:<job>` key, say): a new session for every run,
    /// which carries only the safe preferences of the previous run's entry (labels, the
    /// model and thinking level it was set to) and drops the rest (send policy, metadata:
    /// routing, origin); a background turn. The previous run's session is archived with
    /// reason "scheduled_run" and pruned by maintenance_options::scheduled_retention.
    bool scheduled_run = false;

    /// A turn of conversation `key` for `user` of `app`.
    static run_options in_conversation(std::string app, std::string user, std::string key) {
        run_options o(std::move(app), std::move(user), {});
        o.conversation = std::move(key);
        return o;
    }
};
static_assert(!std::is_aggregate_v<run_options>, "run_options temporaries in co_await must be safe on g++ 12");

class any_session_index;
class any_artifact_service;
class any_memory_service;

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
    /// The session index of conversation turns (run_options::conversation); it must outlive
    /// the runner. Null: conversation turns fail with errc::invalid_argument.
    any_session_index* index = nullptr;
    /// When conversation turns start a new session.
    reset_policy reset{};
    /// The artifact service the invocations' tools and callbacks use (callback_context's
    /// artifact calls, artifact_tools()); it must outlive the runner. Null: none.
    any_artifact_service* artifacts = nullptr;
    /// The memory service (long-term recall; docs/memory.md): the invocations' contexts and
    /// load_memory_tool() search it. It must outlive the runner. Null: none.
    any_memory_service* memory = nullptr;
    /// With `memory`: each turn's stored events (compaction summaries included) are added
    /// to it after the turn.
    bool memorize = true;
    /// With `memory`: the entries (at most this many) that the user's message recalls from
    /// the user's other sessions go into the agent's instruction for this turn. 0: none;
    /// above max_memory_limit (1000): the constructor throws (errc::invalid_argument).
    std::size_t memory_preload = 0;
};

class any_signer;
class any_store;
class any_strategy;
class jsonl_store;
class memory_store;

namespace detail {

struct conversation_clock;
LIBRETTO_DECL std::shared_ptr<const conversation_clock> make_conversation_clock(const reset_policy& p);

/// What a runner's turns share: everything but the agent's type, so that the turn's code
/// (impl/runner.hpp) is instantiated once per store, compaction and signer, whatever the agent.
template <class Store, class Compaction, class Signer>
struct runner_core {
    using store_type = Store;
    using compaction_type = Compaction;
    using signer_type = Signer;

    runner_core(agent_ref a, Store& s, runner_options o, Compaction c, Signer sg)
        : root(a), store(&s), compaction(std::move(c)), signer(std::move(sg)), ex(s.get_executor()),
          locks(std::make_shared<detail::session_locks>()), cache(o.cached_sessions),
          on_ignored_compaction(std::move(o.on_ignored_compaction)), index(o.index), artifacts(o.artifacts), memory(o.memory),
          memorize(o.memorize), memory_preload(o.memory_preload),
          clock(make_conversation_clock(o.reset)) {
        if (memory_preload > max_memory_limit)
            detail::throw_turn_error(errc::invalid_argument, "runner_options::memory_preload is " +
                                                                 std::to_string(memory_preload) + " (0 to " +
                                                                 std::to_string(max_memory_limit) + ")");
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

    agent_ref root;
    Store* store;
    Compaction compaction;
    Signer signer;
    boost::asio::any_io_executor ex;
    std::shared_ptr<detail::session_locks> locks;
    detail::session_cache cache;
    std::function<void(const session_key&, const ignored_compaction&)> on_ignored_compaction;
    any_session_index* index;
    any_artifact_service* artifacts;
    any_memory_service* memory;
    bool memorize;
    std::size_t memory_preload;
    std::shared_ptr<const conversation_clock> clock; ///< null: no reset policy
    std::shared_ptr<const agent_node> tree;
    libretto::agent_launcher launcher;
};

/// Starts a turn of `core`'s runner (impl/runner.hpp): the stream run() and resume() return.
template <class Item, class Core>
basic_event_stream<Item> start_turn(const std::shared_ptr<Core>& core, run_options& options, content&& c, bool resume);

/// With LIBRETTO_SEPARATE_COMPILATION: start_turn for the runners most programs have (no
/// compaction, no signer; a jsonl_store, a memory_store or an any_store) and for the runner
/// whose policies are all chosen at run time (any_store, any_strategy, any_signer), compiled
/// once by <libretto/src.hpp> (impl/runner.ipp). Header-only builds instantiate start_turn
/// instead.
template <class Store>
using plain_runner_core = runner_core<Store, no_compaction, no_signer>;
using any_runner_core = runner_core<any_store, any_strategy, any_signer>;
#ifdef LIBRETTO_SEPARATE_COMPILATION
#define LIBRETTO_RUNNER_COMPILED_TURN(Core)                                                                      \
    event_stream start_compiled_turn(const std::shared_ptr<Core>& core, run_options& options, content&& c,       \
                                     bool resume);                                                               \
    shared_event_stream start_compiled_shared_turn(const std::shared_ptr<Core>& core, run_options& options,      \
                                                   content&& c, bool resume);
LIBRETTO_RUNNER_COMPILED_TURN(plain_runner_core<jsonl_store>)
LIBRETTO_RUNNER_COMPILED_TURN(plain_runner_core<memory_store>)
LIBRETTO_RUNNER_COMPILED_TURN(plain_runner_core<any_store>)
LIBRETTO_RUNNER_COMPILED_TURN(any_runner_core)
#undef LIBRETTO_RUNNER_COMPILED_TURN
#endif

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
        : agent_(&agent),
          core_(std::make_shared<core>(agent_ref(agent), store, std::move(options), std::move(compaction),
                                       std::move(signer))) {}

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
    /// Which to pick: run() when the caller keeps, changes or moves the events; run_shared()
    /// when it only reads them (forwards, logs, looks for the answer).
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

    const Agent& agent() const noexcept { return *agent_; }
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


    /// Takes the public functions' by-value parameters by reference: each layer of
    /// by-value run_options would be a move and a destruction (four strings, two JSON
    /// objects) per turn. The options and the content move once, into the turn's request.
    template <class Item = event>
    basic_event_stream<Item> make_turn(run_options& options, content&& c, bool resume) {
#ifdef LIBRETTO_SEPARATE_COMPILATION
        if constexpr (std::is_same_v<Item, event> &&
                      requires { detail::start_compiled_turn(core_, options, std::move(c), resume); })
            return detail::start_compiled_turn(core_, options, std::move(c), resume);
        else if constexpr (std::is_same_v<Item, event_list::pointer_type> &&
                           requires { detail::start_compiled_shared_turn(core_, options, std::move(c), resume); })
            return detail::start_compiled_shared_turn(core_, options, std::move(c), resume);
        else
#endif
            return detail::start_turn<Item>(core_, options, std::move(c), resume);
    }

    using core = detail::runner_core<Store, Compaction, Signer>;
    const Agent* agent_;
    std::shared_ptr<core> core_;
};

} // namespace libretto

#include <libretto/runner/impl/runner.hpp>

#endif
