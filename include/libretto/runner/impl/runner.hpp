// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_IMPL_RUNNER_HPP
#define LIBRETTO_RUNNER_IMPL_RUNNER_HPP

// The body of a runner turn (run_turn), step by step: the lock, the session (session_load),
// the first event, the agent's events stored and yielded (turn_store, turn_output), the
// compaction (turn_compaction), the flush. runner::run and resume start one (start_turn).

#include <libretto/runner/runner.hpp>

#include <libretto/agent/agent.hpp>
#include <libretto/compaction/no_compaction.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/runner/detail/active_agent.hpp>
#include <libretto/runner/detail/resume_plan.hpp>
#include <libretto/runner/detail/runner_lock.hpp>
#include <libretto/runner/detail/session_load.hpp>
#include <libretto/runner/detail/turn_compaction.hpp>
#include <libretto/runner/detail/turn_conversation.hpp>
#include <libretto/runner/detail/turn_memory.hpp>
#include <libretto/runner/detail/turn_output.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/runner/detail/turn_store.hpp>
#include <libretto/session/session.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto::detail {

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
    agent_ref root = core.root;
    turn_start ts{root, std::nullopt, {}, {}, req.options.resumable};
    if (!req.resume) {
        make_in_place(first, event_type::user_message, "user", std::move(req.content));
        first.invocation_id = req.options.invocation_id.empty() ? event::new_id() : req.options.invocation_id;
        ts.input = first.text();
        ts.agent = pick_agent(root, *t.sess);
    } else {
        resume_target target = find_resume_target(*t.sess, req.content, req.options.invocation_id, t.key);
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
    if (req.options.background || req.options.memory_flush || req.options.scheduled_run) first.metadata["background"] = true;
    if (req.options.scheduled_run) first.metadata["scheduled_run"] = true;
    if (req.options.memory_flush) first.metadata["memory_flush"] = true;
    // A conversation's sessions name it in their state: a rebuild of the index finds them.
    if (t.conv && !t.sess->state.contains(conversation_state_key))
        first.actions.state_delta[conversation_state_key] = t.conv->key;
    return ts;
}

/// The invocation context (built after the first event is stored, so its state has that
/// event's delta) and the agent's stream. The agent gets the context itself (it shares the
/// session and the state with everything it derives).
template <class Core>
event_stream start_agent(const std::shared_ptr<Core>& core, turn_state& t, turn_start& ts,
                         const std::string& invocation_id, json::object run_config, std::size_t max_llm_calls,
                         std::string recalled = {}) {
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
    io.artifacts = core->artifacts;
    io.memory = core->memory;
    io.recalled_memory = std::move(recalled);
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
        if (ev.partial) {
            if (!t.silent) return emit_unstored(out, std::move(ev));
            std::optional<event> shown = t.silent->partial(std::move(ev));
            if (!shown) return std::nullopt;
            return emit_unstored(out, std::move(*shown));
        }
        if (ev.invocation_id.empty()) ev.invocation_id = invocation_id;
        const bool silent = t.silent && t.silent->silent_final(ev);
        event_list::pointer_type node;
        store_event_now(core, t, ev, yields_copies<Item> && !silent, yields_copies<Item> ? nullptr : &node);
        if (silent) return std::nullopt;
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
            if (t.silent) {
                ev = t.silent->partial(std::move(*ev));
                if (!ev) continue;
            }
            if (auto wait = emit_unstored(out, std::move(*ev))) co_await std::move(*wait);
            continue;
        }
        if (ev->invocation_id.empty()) ev->invocation_id = invocation_id;
        const bool silent = t.silent && t.silent->silent_final(*ev);
        if (auto wait = store_or_wait(core, t, *ev, yields_copies<Item> && !silent, node_out)) co_await std::move(*wait);
        if (silent) continue;
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
    turn_state& t = req.state;
    if (!req.options.conversation.empty()) {
        auto resolve = resolve_conversation(*core, req.options, t);
        co_await std::move(resolve);
    }
    validate_turn_ids(req.options);
    if (req.content.parts.empty())
        throw_turn_error(errc::invalid_argument, req.resume ? "resume: the content has no tool_response part"
                                                            : "the user message is empty (no parts)");
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
    // loop per turn, as a store that posts its completions gives.
    if constexpr (never_blocking_store<typename Core::store_type>) {
        auto yield = boost::asio::post(core->ex, boost::asio::deferred); // no coroutine frame
        co_await std::move(yield);
    }

    // 2. The session: what the context needs (turn_load_options), or a new one.
    if (auto wait = load_or_wait(*core, t, cache_key, req.resume)) co_await std::move(*wait);
    t.loaded_sequence = t.sess->last_sequence;
    if (t.conv) {
        // The transcript is the truth: an entry that does not account for exactly its
        // events (a crash between the two) is set from it.
        if (t.conv->entry_sequence != t.sess->last_sequence) {
            auto repair = repair_conversation(*core, t);
            co_await std::move(repair);
        }
    }

    // 3. The first event (the user message, or the answer to a paused call) and the agent.
    std::optional<event>& ev = req.first;
    ev.emplace();
    turn_start start = plan_turn_start(*core, t, req, *ev);
    const std::string& invocation_id = req.invocation_id = ev->invocation_id;
    if (req.options.memory_flush && trim(req.options.silent_token).empty()) req.options.silent_token = "NO_REPLY";
    if (!trim(req.options.silent_token).empty()) t.silent = std::make_unique<silent_reply_filter>(req.options.silent_token);

    std::exception_ptr failure;
    bool finished = false;
    try {
        // Copied back for the caller only if it is yielded.
        const bool yield_first = req.options.yield_user_message;
        const bool copy_first = yield_first && yields_copies<Item>;
        if (auto wait = store_or_wait(*core, t, *ev, copy_first, node_out)) co_await std::move(*wait);
        if (yield_first)
            if (auto wait = emit_stored(out, *ev, node)) co_await std::move(*wait);

        // What the user's message recalls from memory, for the agent's instruction.
        std::string recalled;
        if (core->memory && core->memory_preload > 0 && !req.resume && start.input) {
            auto recall = recall_for_turn(*core, t, *start.input);
            recalled = co_await std::move(recall);
        }

        // 4. The agent's events: stored (non-partial) before the agent is asked for the
        // next one, then yielded.
        event_stream agent_events = start_agent(core, t, start, invocation_id, std::move(req.options.run_config),
                                                   req.options.max_llm_calls, std::move(recalled));
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

        // 5. Compaction, after the stream (never mid-stream).
        if constexpr (!std::is_same_v<typename Core::compaction_type, no_compaction>) {
            auto op = compact_after_turn(core, t, start.agent, invocation_id, out);
            co_await std::move(op);
        }
        finished = true;
    } catch (...) {
        failure = std::current_exception();
    }

    // 6. The end of the turn for the store (durability per_turn), also after a failure or a
    // cancellation: what was stored is flushed before the next turn may start.
    if (failure) co_await boost::asio::this_coro::reset_cancellation_state();
    flush_result flushed;
    if constexpr (flushable_store<typename Core::store_type>) {
        auto flush = flush_turn(*core, t);
        flushed = co_await std::move(flush);
    }
    if (core->memory && core->memorize && t.stored > 0) {
        std::exception_ptr memory_failure;
        try {
            auto memorize = memorize_turn(*core, t);
            co_await std::move(memorize);
        } catch (...) {
            memory_failure = std::current_exception();
        }
        if (!failure) failure = memory_failure;
    }
    if (t.conv && t.stored > 0) {
        std::exception_ptr index_failure;
        try {
            auto finish = finish_conversation(
                *core, t, req.options.background || req.options.memory_flush || req.options.scheduled_run,
                req.options.memory_flush);
            co_await std::move(finish);
        } catch (...) {
            index_failure = std::current_exception();
        }
        if (!failure) failure = index_failure; // the turn's own failure says more
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

template <class Item, class Core>
basic_event_stream<Item> start_turn(const std::shared_ptr<Core>& core, run_options& options, content&& c,
                                    bool resume) {
    stream_options so;
    so.capacity = options.stream_capacity;
    std::unique_ptr<turn_request> req(new turn_request(std::move(options), std::move(c), resume));
    return basic_event_stream<Item>(core->ex, turn_producer<Core, Item>{core, std::move(req)}, so);
}

} // namespace libretto::detail

#endif
