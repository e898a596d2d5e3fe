// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_IMPL_LLM_AGENT_HPP
#define LIBRETTO_AGENT_IMPL_LLM_AGENT_HPP

// llm_agent_run: one run of an llm_agent, the Asio driver around the sans-io step loop of
// detail/llm_loop.hpp. The step loop (run), the request and the model call (retries, the
// overflow compaction, partial events), the emits and the transfer are here; the tool
// phase is in impl/llm_agent_tools.hpp and detail/llm_tool_calls.hpp.

#include <libretto/agent/llm_agent.hpp>

#include <libretto/agent/detail/llm_instruction.hpp>
#include <libretto/agent/detail/llm_loop.hpp>
#include <libretto/agent/detail/llm_tool_calls.hpp>
#include <libretto/agent/transfer.hpp>
#include <libretto/context/callback_context.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/error.hpp>
#include <libretto/event/context_view_builder.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/model/model.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace libretto::detail {

/// Drops from `own` the events the session holds by now (by id, searched in the session's
/// tail): the session shows them from now on, and an agent with many turns in flight
/// should not keep a second copy of each.
inline void drop_held_events(const event_list& session, std::vector<event>& own) {
    if (own.empty()) return;
    const std::size_t tail_from = session.size() > own.size() * 2 + 64 ? session.size() - own.size() * 2 - 64 : 0;
    std::erase_if(own, [&](const event& o) {
        for (std::size_t i = session.size(); i-- > tail_from;)
            if (session[i].id == o.id) return true;
        return false;
    });
}

/// The events of `session` the builder shows (those no compaction hides) plus those of
/// `own` the session does not hold yet (by id); see drop_held_events.
inline context_view history_with(context_view_builder& builder, const event_list& session,
                                 std::vector<event>& own) {
    builder.sync(session);
    std::vector<const event*> items = builder.pointers(session);
    drop_held_events(session, own);
    items.reserve(items.size() + own.size());
    for (const auto& o : own) items.push_back(&o);
    return context_view(std::move(items));
}

template <class Model>
class llm_agent_run {
public:
    llm_agent_run(const llm_agent<Model>* self, invocation_context ctx, event_writer out)
        : self_(self), o_(self->options()), ctx_(std::move(ctx)), out_(std::move(out)), model_(o_.model),
          loop_(make_config()) {}

    /// The step loop. Its locals are few and small, the work being in plain functions
    /// (whose locals live on the stack, not in the frame): a turn that waits for its model
    /// keeps this frame, and with 10,000 turns waiting every 100 bytes of it are 1 MB. The
    /// rare waits (a retry's timer, a compaction) are coroutines of their own.
    boost::asio::awaitable<void> run() {
        std::vector<event> ending; // the events that end the run, when a step cannot go on
        for (;;) {
            // The model part: the request, the model callbacks, the call (retried, or sent
            // again once after compaction on overflow) and the events of its response. The
            // model consumes its request; another attempt builds it again from the history
            // as it is then, and before_model sees each one.
            if (!start_step(ending)) {
                if (auto wait = emit_all(ending, true)) co_await std::move(*wait);
                co_return;
            }
            callback_context cb(ctx_);
            llm_action a;
            bool compacted = false;
            for (bool first = true;; first = false) {
                if (!first) loop_.rebuild_request(history_with(view_builder_, ctx_.session().events, own_));
                llm_response resp;
                if (!before_model(cb, resp)) {
                    if (!may_call(cb, ending)) {
                        if (auto wait = emit_all(ending, true)) co_await std::move(*wait);
                        co_return;
                    }
                    auto call = call_model(resp); // into resp: no response-sized temporary in this frame
                    co_await std::move(call);
                }
                // Context overflow: the runner compacts the session, then the call is sent
                // again once with the summary in place of what it covers.
                if (resp.error == errc::context_overflow && !compacted && ctx_.can_compact()) {
                    compacted = true;
                    auto compact = compact_for_overflow();
                    if (co_await std::move(compact)) continue;
                }
                a = take_response(cb, std::move(resp));
                if (a.kind != llm_action_kind::retry_model) break;
                auto wait = backoff(out_.get_executor(), a.delay);
                co_await std::move(wait);
            }
            const llm_action_kind kind = end_model_step(a);
            if (auto wait = emit_all(a.emit, kind != llm_action_kind::run_tools)) co_await std::move(*wait);
            if (kind == llm_action_kind::transfer) {
                auto op = transfer(std::move(a.transfer_target));
                co_await std::move(op);
            }
            if (kind != llm_action_kind::run_tools) co_return;

            // The tools part: the calls (concurrently), then their responses. The usual step
            // (one call of a synchronous tool) runs here, without a coroutine.
            if (!run_tools_now(a)) {
                auto tools = run_tools(std::move(a.calls));
                std::shared_ptr<tool_inbox> inbox = co_await std::move(tools);
                a = take_tool_results(*inbox);
            }
            if (auto wait = emit_all(a.emit, a.kind != llm_action_kind::next_step)) co_await std::move(*wait);
            if (a.kind == llm_action_kind::transfer) {
                auto op = transfer(std::move(a.transfer_target));
                co_await std::move(op);
                co_return;
            }
            if (a.kind == llm_action_kind::done) co_return;
        }
    }

private:
    using llm_action = detail::llm_action;
    using llm_action_kind = detail::llm_action_kind;
    using pending_call = detail::pending_call;

    /// The start of a step, before any callback: false if the run ends here, with the
    /// events that end it in `ending` (none when the invocation was ended).
    bool start_step(std::vector<event>& ending) {
        if (ctx_.is_invocation_ended()) return false;
        std::optional<std::string> instruction = build_instruction();
        if (!instruction) {
            ending.push_back(std::move(*instruction_error_));
            return false;
        }
        // What the runner recalled from memory for this turn (runner_options::memory_preload).
        if (const std::string& recalled = ctx_.recalled_memory(); !recalled.empty()) {
            if (!instruction->empty()) *instruction += "\n\n";
            *instruction += recalled;
        }
        llm_action a = loop_.begin_step(history_with(view_builder_, ctx_.session().events, own_), std::move(*instruction));
        if (a.kind != llm_action_kind::done) return true;
        ending = std::move(a.emit);
        return false;
    }

    /// Whether this attempt may call the model: not when a callback ended the invocation
    /// (its actions go out on an event of their own) or max_llm_calls is used up (an error
    /// event); `ending` then holds what ends the run.
    bool may_call(callback_context& cb, std::vector<event>& ending) {
        if (ctx_.is_invocation_ended()) {
            ending = actions_only(cb.take_actions());
            return false;
        }
        if (!ctx_.count_llm_call()) {
            ending = llm_calls_exhausted(cb.take_actions());
            return false;
        }
        return true;
    }

    /// after_model on a successful response, then the loop's verdict on it, with the model
    /// callbacks' actions.
    llm_action take_response(callback_context& cb, llm_response resp) {
        if (resp.ok() && o_.after_model) {
            std::optional<llm_response> replaced = o_.after_model(cb, resp);
            if (replaced) resp = std::move(*replaced);
        }
        event_actions cb_actions = cb.take_actions();
        return loop_.on_model_response(std::move(resp), std::move(cb_actions));
    }

    /// The wait before a retry: a coroutine of its own, so that the timer is in no frame
    /// of a step that does not retry.
    static boost::asio::awaitable<void> backoff(boost::asio::any_io_executor ex, std::chrono::milliseconds delay) {
        boost::asio::steady_timer timer(ex);
        timer.expires_after(delay);
        co_await timer.async_wait(dependent_use_awaitable<Model>());
    }

    /// What the model step's response leads to: run_tools, transfer (a model callback's),
    /// or done. Long-running calls are noted in the invocation first.
    llm_action_kind end_model_step(const llm_action& a) {
        for (const auto& c : a.calls)
            if (c.long_running) ctx_.long_running_tool_ids().insert(c.call.tool_call_id);
        if (a.kind == llm_action_kind::done || a.kind == llm_action_kind::transfer) return a.kind;
        return llm_action_kind::run_tools;
    }

    llm_loop_config make_config() const {
        llm_loop_config c;
        c.agent_name = o_.name;
        c.branch = ctx_.branch();
        c.invocation_id = ctx_.invocation_id();
        c.session_id = ctx_.session_id();
        c.tools = self_->declarations();
        c.transfer_targets = transfer_targets(o_.name, self_->sub_agents(), ctx_, !o_.disallow_transfer_to_parent,
                                              !o_.disallow_transfer_to_peers);
        c.output_schema = o_.output_schema;
        c.generation = o_.generation;
        c.output_key = o_.output_key;
        c.max_steps = o_.max_steps;
        // One layer retries: the model, if it does; else this agent.
        if (!model_retries_transient(model_)) c.retry = &o_.retry;
        c.history = o_.history;
        c.resumable = ctx_.is_resumable();
        return c;
    }

    /// static_instruction, then the instruction; nullopt (and instruction_error_ set) when
    /// a placeholder names an absent key.
    std::optional<std::string> build_instruction() {
        detail::instruction_result r = o_.instruction.resolve(ctx_);
        if (r.missing_key) {
            instruction_error_ = std::make_unique<event>(loop_.error_event(
                "instruction of agent '" + o_.name + "': state key '" + *r.missing_key +
                    "' not found (write {" + *r.missing_key + "?} for a key that may be absent)",
                make_error_code(errc::not_found), llm_stop::instruction_error));
            return std::nullopt;
        }
        if (o_.static_instruction.empty()) return std::move(r.text);
        if (r.text.empty()) return o_.static_instruction;
        return o_.static_instruction + "\n\n" + r.text;
    }

    /// Emits `events` in order; non-partial ones have their state_delta applied to the
    /// invocation's state and, unless `last` (the run ends with them: no later request
    /// needs them), are remembered for the next request's history (history_with).
    /// Returns what is left to wait for, if anything: a coroutine (emit_rest) is made only
    /// when an emit has to wait, not for every step's events.
    /// `events` is left empty, its memory released (the run keeps the vector in its frame
    /// while it waits for a model or a tool).
    std::optional<boost::asio::awaitable<void>> emit_all(std::vector<event>& events, bool last = false) {
        std::vector<event> mine = std::move(events); // leaves `events` without a buffer
        for (std::size_t i = 0; i < mine.size(); ++i) {
            std::optional<boost::asio::awaitable<void>> wait = emit_one(std::move(mine[i]), !last);
            if (!wait) continue;
            std::vector<event> rest(std::make_move_iterator(mine.begin() + static_cast<std::ptrdiff_t>(i) + 1),
                                    std::make_move_iterator(mine.end()));
            return emit_rest(std::move(*wait), std::move(rest), last);
        }
        return std::nullopt;
    }

    /// The wait of one emit, then the events after it.
    boost::asio::awaitable<void> emit_rest(boost::asio::awaitable<void> wait, std::vector<event> rest, bool last) {
        co_await std::move(wait);
        for (auto& e : rest)
            if (auto w = emit_one(std::move(e), !last)) co_await std::move(*w);
    }

    /// Not a coroutine, and takes the event by reference: a by-value parameter would be a
    /// temporary of each `co_await emit_one(...)` expression, kept in the caller's frame.
    /// The event moves straight into the stream's emit.
    std::optional<boost::asio::awaitable<void>> emit_one(event&& e, bool remember = true) {
        if (!e.partial) {
            if (!e.actions.state_delta.empty()) ctx_.state().apply(e.actions.state_delta);
            // Those the runner has stored since are in the session: keeps own_ at the one
            // or two events in flight instead of a step's worth.
            drop_held_events(ctx_.session().events, own_);
            // A consumer that takes the event inside emit() (the runner, running this agent
            // in its own coroutine) has it in the session when emit() returns: no copy held.
            if (remember && !out_.consumed_on_emit()) own_.push_back(e);
        }
        return out_.emit_or_wait(std::move(e));
    }

    /// An event carrying only `actions` (none if they are empty): what callbacks recorded
    /// when no model response follows to carry them.
    std::vector<event> actions_only(event_actions actions) const {
        std::vector<event> out;
        if (actions.empty()) return out;
        event e = loop_.make_event(event_type::agent_message);
        e.actions = std::move(actions);
        out.push_back(std::move(e));
        return out;
    }

    /// The error event for a model call refused by max_llm_calls (carrying the callbacks'
    /// actions); ends the invocation, so that no other agent of it calls a model either.
    std::vector<event> llm_calls_exhausted(event_actions actions) {
        ctx_.end_invocation();
        event e = loop_.error_event("agent '" + o_.name + "' did not call its model: invocation " +
                                        ctx_.invocation_id() + " made its " + std::to_string(ctx_.max_llm_calls()) +
                                        " model calls (max_llm_calls)",
                                    make_error_code(errc::limit_exceeded), llm_stop::max_llm_calls);
        e.actions = std::move(actions);
        std::vector<event> out;
        out.push_back(std::move(e));
        return out;
    }

    /// before_model on the current request: true (and `out` set) when it returned a
    /// response to use instead of calling the model.
    bool before_model(callback_context& cb, llm_response& out) {
        if (!o_.before_model) return false;
        std::optional<llm_response> veto = o_.before_model(cb, loop_.request());
        if (!veto) return false;
        out = std::move(*veto);
        return true;
    }

    /// The runner compacts the session and the summary is emitted (the next attempt's
    /// request is built over it). False if there was nothing to compact. A coroutine of its
    /// own so that the step loop's frame does not keep room for the summary event.
    boost::asio::awaitable<bool> compact_for_overflow() {
        auto op = ctx_.compact_now();
        std::optional<event> summary = co_await std::move(op);
        if (!summary) co_return false;
        if (auto wait = emit_one(std::move(*summary))) co_await std::move(*wait);
        co_return true;
    }

    /// The partial event for a streamed chunk, emitted; none for a chunk without text or
    /// thinking. A plain function: the event is built and moved on outside the frame.
    std::optional<boost::asio::awaitable<void>> emit_partial(llm_chunk&& c) {
        std::optional<event> p = loop_.partial_event(std::move(c));
        if (!p) return std::nullopt;
        return out_.emit_or_wait(std::move(*p));
    }

    /// One model call with the loop's current request: partial events for the deltas, the
    /// final response put in `out`. The request moves straight into the model's call (the
    /// model owns it), not kept in a coroutine frame.
    boost::asio::awaitable<void> call_model(llm_response& out) {
        llm_stream s = model_.generate(loop_.take_request());
        for (;;) {
            // Chunks the model has ready (a scripted reply, a burst read from the network)
            // are taken apart in their slots: no next() frame and no move of the chunk.
            llm_chunk* c = detail::stream_access::try_take(s);
            std::optional<llm_chunk> waited;
            if (!c) {
                auto next = s.next();
                waited = co_await std::move(next);
                if (!waited) break;
                c = &*waited;
            }
            if (c->final) {
                out = std::move(*c->final);
                co_return;
            }
            // Nothing is accumulated here: the model's final response is the answer, and a
            // stream without one is an error whatever came before it.
            std::optional<boost::asio::awaitable<void>> op = emit_partial(std::move(*c));
            if (op) co_await std::move(*op);
        }
        out = llm_response::failure(make_error_code(errc::bad_response),
                                    "the model's stream ended without a final response");
    }

    // The tool phase: defined in impl/llm_agent_tools.hpp.

    /// The tools' results and the actions their contexts recorded, to the loop.
    llm_action take_tool_results(tool_inbox& inbox);

    /// The inbox of a step's calls (a context each), the invocation's event callback
    /// routed to it; `previous` is the callback it replaced.
    std::shared_ptr<tool_inbox> open_inbox(const std::vector<pending_call>& calls, event_callback& previous);

    /// The tools part of the usual step without a coroutine: one call to run, of a
    /// synchronous tool (e.g. a function_tool over a plain function), run here with
    /// run_single's events, response and actions; `a` becomes the loop's next action.
    /// False, with nothing done, for any other step.
    bool run_tools_now(llm_action& a);

    /// Runs the calls without an answer concurrently, forwarding the events they push
    /// through ctx.emit as they arrive. On cancellation the calls are cancelled and the
    /// exception propagates at once (the calls' state lives in the inbox, not here).
    /// A single call (the usual case) runs in this coroutine instead of a spawned one: no
    /// thread, post, timer or wake-up per call, and a cancellation of the run reaches it
    /// directly. The events it pushes go to the stream as they arrive, as with several.
    boost::asio::awaitable<std::shared_ptr<tool_inbox>> run_tools(std::vector<pending_call> calls);

    /// run_tools for one call, in this coroutine. The call's pushed events are emitted at
    /// once, without waiting for room (the queue of the concurrent case has no bound
    /// either); if the stream has been closed meanwhile, the next emit of the run throws.
    boost::asio::awaitable<void> run_single(std::shared_ptr<tool_inbox> inbox, pending_call& call, std::size_t i,
                                            event_callback previous);

    /// A single call's pushed events go straight to the stream while it runs.
    void start_single(tool_inbox& inbox);

    /// After a single call: the inbox is closed and the callback it replaced is back (unless
    /// the call replaced the inbox's with one of its own).
    void end_single(const std::shared_ptr<tool_inbox>& inbox, event_callback& previous);

    /// Runs agent `target` in this invocation and forwards its events.
    boost::asio::awaitable<void> transfer(std::string target) {
        if (transfer_hop_count(ctx_) >= o_.max_transfers) {
            std::string path = transfer_path(ctx_);
            event e = loop_.error_event("agent transfer loop: " + std::to_string(o_.max_transfers) +
                                            " transfers in this invocation (" + path + "); '" + o_.name +
                                            "' -> '" + target + "' refused",
                                        make_error_code(errc::transfer_loop), llm_stop::transfer_error);
            if (auto wait = emit_one(std::move(e))) co_await std::move(*wait);
            co_return;
        }
        record_transfer_hop(ctx_, o_.name, target);
        // ADK runs the target on the same context: same branch (it sees the conversation,
        // and the agents above see its answer), its own agent name.
        std::optional<event_stream> s;
        for (const auto& sub : o_.sub_agents) {
            if (sub.name() == target) {
                s.emplace(sub.run(ctx_.for_agent(target)));
                break;
            }
        }
        if (!s) s = ctx_.launch_agent(target, ctx_.for_agent(target));
        if (!s) {
            event e = loop_.error_event("agent '" + o_.name + "' cannot transfer to '" + target +
                                            "': the invocation has no agent launcher that knows it",
                                        make_error_code(errc::not_found), llm_stop::transfer_error);
            if (auto wait = emit_one(std::move(e))) co_await std::move(*wait);
            co_return;
        }
        for (;;) {
            auto next = s->next();
            std::optional<event> e = co_await std::move(next);
            if (!e) break;
            co_await out_.emit(std::move(*e));
        }
    }

    const llm_agent<Model>* self_;
    const llm_agent_options<Model>& o_;
    invocation_context ctx_;
    event_writer out_;
    Model model_;
    llm_loop loop_;
    std::vector<event> own_;
    context_view_builder view_builder_; // the session as shown, kept up to date across steps
    std::unique_ptr<event> instruction_error_; // rare: not an event's size in every run
};

/// The stream's producer. It owns the run: the stream keeps the producer for as long as
/// the awaitable it returned runs (run_producer), so run() needs no coroutine of its own
/// around it to hold the run.
template <class Model>
struct llm_agent_producer {
    const llm_agent<Model>* self;
    invocation_context ctx;
    std::unique_ptr<llm_agent_run<Model>> run{};

    boost::asio::awaitable<void> operator()(event_writer out) {
        run = std::make_unique<llm_agent_run<Model>>(self, std::move(ctx), std::move(out));
        return run->run();
    }
};

template <class Model>
event_stream start_llm_agent(const llm_agent<Model>& agent, invocation_context ctx) {
    boost::asio::any_io_executor ex = ctx.get_executor();
    if (!ex) ex = agent.model().get_executor();
    llm_agent_producer<Model> p{&agent, std::move(ctx)};
    return event_stream(std::move(ex), std::move(p), agent.options().stream);
}

} // namespace libretto::detail

#include <libretto/agent/impl/llm_agent_tools.hpp>

#endif
