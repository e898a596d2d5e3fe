// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_TURN_COMPACTION_HPP
#define LIBRETTO_RUNNER_DETAIL_TURN_COMPACTION_HPP

// Compaction in a runner turn: after the agent's stream ends (plan, an optional memory
// flush, summarise, store, yield: compact_after_turn) and on a model's context overflow
// (the context's compaction hook: overflow_hook). The strategy plans; this stores.

#include <libretto/agent/agent.hpp>
#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/compaction/compactor.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/runner/detail/active_agent.hpp>
#include <libretto/runner/detail/turn_output.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/runner/detail/turn_store.hpp>
#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/session_store.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace libretto::detail {

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

} // namespace libretto::detail

#endif
