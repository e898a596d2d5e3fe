// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_LLM_AGENT_HPP
#define LIBRETTO_AGENT_LLM_AGENT_HPP

// llm_agent: an agent driven by a model. Each step shows the model the session (filtered
// for this agent), streams its reply as partial events, runs the tools it asks for
// concurrently and records their results, until a final answer, an escalation, a transfer,
// a pause on a long-running call, the end of the invocation or the step limit.
//
// The turn loop itself is the sans-io state machine of detail/llm_loop.hpp; this header
// is the Asio driver around it: model streams, retry timers, concurrent tool calls, the
// callbacks, transfer. See docs/agents.md.
//
// The runner contract: the consumer of run()'s stream stores every non-partial event it
// receives (appending it to ctx.session() and applying its state_delta there) before it
// asks for the next one. The agent reads the history from ctx.session().events at the
// start of each step; the events it emitted itself that are not there yet (a consumer
// that lags, or does not store) are added to that view, so a run is correct either way.

#include <libretto/agent/agent.hpp>
#include <libretto/agent/detail/llm_instruction.hpp>
#include <libretto/agent/detail/llm_loop.hpp>
#include <libretto/agent/transfer.hpp>
#include <libretto/context/callback_context.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/context/readonly_context.hpp>
#include <libretto/event/context_view_builder.hpp>
#include <libretto/error.hpp>
#include <libretto/model/any_model.hpp>
#include <libretto/model/model.hpp>
#include <libretto/stream/event_stream.hpp>
#include <libretto/tool/run_tool_call.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace libretto {

/// An instruction: text with `{key}` state placeholders (see detail/llm_instruction.hpp),
/// or a function of the read-only context returning the text as it is (no templating, as
/// in ADK: a provider builds its text itself). Empty by default.
class instruction_source {
public:
    using provider = std::function<std::string(const readonly_context&)>;

    instruction_source() = default;
    instruction_source(std::string text) : v_(std::move(text)) {}
    instruction_source(const char* text) : v_(std::string(text)) {}
    instruction_source(std::string_view text) : v_(std::string(text)) {}
    template <class F>
        requires(!std::is_convertible_v<F, std::string_view> &&
                 std::is_invocable_r_v<std::string, const F&, const readonly_context&>)
    instruction_source(F f) : v_(provider(std::move(f))) {}

    bool empty() const noexcept {
        if (auto t = std::get_if<std::string>(&v_)) return t->empty();
        return !std::get<provider>(v_);
    }
    bool is_template() const noexcept { return std::holds_alternative<std::string>(v_); }
    /// The text (templates only; empty for a provider).
    std::string_view text() const noexcept {
        auto t = std::get_if<std::string>(&v_);
        return t ? std::string_view(*t) : std::string_view();
    }

    /// The instruction for `ctx`: the template with the state injected, or the provider's
    /// text. `missing_key` is set when a required placeholder names an absent key.
    detail::instruction_result resolve(const invocation_context& ctx) const {
        if (auto t = std::get_if<std::string>(&v_)) return detail::inject_state(*t, ctx.state().values());
        const provider& p = std::get<provider>(v_);
        detail::instruction_result r;
        if (p) r.text = p(readonly_context(ctx));
        return r;
    }

private:
    std::variant<std::string, provider> v_{};
};

/// Called before each model call with the request, which it may change in place. A
/// returned response is used instead of calling the model (a veto, a cache hit).
using before_model_callback = std::function<std::optional<llm_response>(callback_context&, llm_request&)>;
/// Called with each successful model response, which it may change in place; a returned
/// response replaces it.
using after_model_callback = std::function<std::optional<llm_response>(callback_context&, llm_response&)>;
/// Called before a tool of the agent's tool set runs, with the arguments, which it may
/// change in place. A returned value is used as the result instead of running the tool.
using before_tool_callback = std::function<std::optional<json::value>(tool_context&, json::object& args)>;
/// Called with each tool response (also an error response), which it may change in
/// place; a returned value replaces the result (and clears the error).
using after_tool_callback =
    std::function<std::optional<json::value>(tool_context&, const json::object& args, tool_response_part& response)>;

/// What an llm_agent is made of. Designated initialisers in this order:
/// `{.name = "assistant", .instruction = "…", .model = m, .tools = lb::tools(…)}`.
template <class Model = any_model>
struct llm_agent_options {
    std::string name{};
    /// What a parent's model is told about this agent (transfer, agent_tool).
    std::string description{};
    /// The system instruction, with `{key}` / `{key?}` state placeholders, or a function.
    instruction_source instruction{};
    Model model;
    libretto::tool_set tools{};
    /// Transfer targets (and what sub_agents() returns).
    std::vector<any_agent> sub_agents{};
    /// Text put before the instruction, never templated (ADK's static_instruction: the
    /// part of the prompt a provider can cache).
    std::string static_instruction{};
    /// Stores the final answer's text (its JSON object with output_schema) in the state
    /// under this key, through the final event's state_delta.
    std::optional<std::string> output_key{};
    /// A JSON Schema the final answer must follow; the parsed object is added to the final
    /// event as a data part.
    std::optional<json::object> output_schema{};
    generation_options generation{};
    /// Model calls (steps) per run; reaching it ends the run with an error event.
    std::size_t max_steps = 10;
    /// Retries of a transient model failure, for a model that does not retry itself
    /// (model_retries_transient is false: scripted_model, a model of one's own). Unused
    /// for openai_model and anthropic_model (also inside an any_model): they retry with
    /// their provider_http_options::retry, and the agent calls them once per step.
    retry_options retry{};
    history_scope history = history_scope::branch;
    before_model_callback before_model{};
    after_model_callback after_model{};
    before_tool_callback before_tool{};
    after_tool_callback after_tool{};
    bool disallow_transfer_to_parent = false;
    bool disallow_transfer_to_peers = false;
    /// Transfers per invocation (all agents together); one more ends it with
    /// errc::transfer_loop.
    std::size_t max_transfers = 10;
    stream_options stream{};
};

template <class Model = any_model>
    requires model<Model>
class llm_agent;

namespace detail {

/// Routes events pushed through ctx.emit while an llm_agent runs its tools into that
/// agent's stream. The invocation's event callback is shared by the whole tree, so the
/// agent installs one of these over it: events on the agent's branch (or below it) go to
/// the agent's inbox, others to the callback it replaced (a parallel sibling's), and
/// everything goes to the replaced callback once the agent's tools are done.
struct tool_inbox {
    tool_inbox(boost::asio::any_io_executor e, invocation_context c) : ex(std::move(e)), ctx(std::move(c)) {}
    boost::asio::any_io_executor ex;
    std::optional<boost::asio::steady_timer> wake; // only while calls run concurrently
    invocation_context ctx; // tools' contexts point here: it outlives a cancelled run
    std::vector<tool_context> contexts; // room reserved for every call first: never moves
    std::vector<event> events;          // pushed, not yet forwarded: [next_event, size)
    std::size_t next_event = 0;
    std::vector<std::optional<tool_response_part>> results;
    std::vector<std::exception_ptr> errors;
    std::unique_ptr<boost::asio::cancellation_signal[]> signals;
    std::size_t pending = 0;
    bool open = true;
    /// Set while a single call runs in the agent's own coroutine: the events the call
    /// pushes go straight to the agent's stream instead of the queue.
    std::function<void(event&&)> forward;

    void notify() {
        if (wake) wake->cancel();
    }
};

struct inbox_callback {
    std::weak_ptr<tool_inbox> inbox;
    std::string branch;
    event_callback previous;

    void operator()(event e) const {
        std::shared_ptr<tool_inbox> in = inbox.lock();
        const bool live = in && in->open;
        const bool mine = branch.empty() || e.branch == branch ||
                          (e.branch.size() > branch.size() && e.branch.starts_with(branch) &&
                           e.branch[branch.size()] == '.');
        if (live && (mine || !previous)) {
            if (in->forward) {
                in->forward(std::move(e));
                return;
            }
            in->events.push_back(std::move(e));
            in->notify();
        } else if (previous) {
            previous(std::move(e));
        }
    }
};

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
        co_await timer.async_wait(boost::asio::use_awaitable);
    }

    /// What the model step's response leads to: run_tools, transfer (a model callback's),
    /// or done. Long-running calls are noted in the invocation first.
    llm_action_kind end_model_step(const llm_action& a) {
        for (const auto& c : a.calls)
            if (c.long_running) ctx_.long_running_tool_ids().insert(c.call.tool_call_id);
        if (a.kind == llm_action_kind::done || a.kind == llm_action_kind::transfer) return a.kind;
        return llm_action_kind::run_tools;
    }

    /// The tools' results and the actions their contexts recorded, to the loop.
    llm_action take_tool_results(tool_inbox& inbox) {
        event_actions tool_actions;
        for (auto& tc : inbox.contexts) tool_actions.merge(tc.take_actions());
        std::vector<std::optional<tool_response_part>> results = std::move(inbox.results);
        return loop_.on_tool_results(std::move(results), std::move(tool_actions));
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

    /// A call before its tool runs: the arguments the callbacks see (copied only for a
    /// callback), and the response when the call is answered without the tool (a
    /// before_tool veto, or its failure).
    struct call_prep {
        bool after = false;
        json::object args;
        std::optional<tool_response_part> resp;
    };

    /// before_tool, which may change the arguments or answer instead of the tool.
    static call_prep before_call(const llm_agent_options<Model>* o, tool_call_part& call, tool_context* tctx) {
        call_prep p;
        const bool known = o->tools.find(call.tool_name) != nullptr;
        const bool before = known && static_cast<bool>(o->before_tool);
        p.after = known && static_cast<bool>(o->after_tool);
        // Without a callback, the call's own arguments move to the tool.
        if (before || p.after) p.args = call.args;
        std::string failure;
        if (before) {
            try {
                std::optional<json::value> veto = o->before_tool(*tctx, p.args);
                if (veto) {
                    tool_response_part r;
                    r.tool_call_id = call.tool_call_id;
                    r.tool_name = call.tool_name;
                    r.result = std::move(*veto);
                    p.resp = std::move(r);
                }
            } catch (const std::exception& e) {
                failure = std::string("before_tool callback failed: ") + e.what();
            }
        }
        if (!failure.empty()) p.resp = tool_error_response(call.tool_call_id, call.tool_name, std::move(failure));
        else if (!p.resp && before) call.args = p.args;
        return p;
    }

    /// after_tool on the response in `p`, then what becomes of a long-running call's.
    static std::optional<tool_response_part> after_call(const llm_agent_options<Model>* o, const tool_call_part& call,
                                                        bool long_running, tool_context* tctx, call_prep& p) {
        std::optional<tool_response_part>& resp = p.resp;
        if (p.after) {
            try {
                std::optional<json::value> replaced = o->after_tool(*tctx, p.args, *resp);
                if (replaced) {
                    resp->result = std::move(*replaced);
                    resp->error.reset();
                }
            } catch (const std::exception& e) {
                resp = tool_error_response(call.tool_call_id, call.tool_name,
                                           std::string("after_tool callback failed: ") + e.what());
            }
        }
        if (long_running && !resp->error && resp->result.is_null()) return std::nullopt;
        // A long-running tool's non-null result is an interim status (its final answer
        // arrives later, through the runner's resume): marked, so that resume accepts the
        // final response and compaction keeps the call open (ADK #5602).
        if (long_running && !resp->error) resp->metadata["intermediate"] = true;
        return std::move(resp);
    }

    /// One call: the callbacks and run_tool_call. Never throws for the tool's failure.
    static boost::asio::awaitable<std::optional<tool_response_part>>
    run_one(const llm_agent_options<Model>* o, tool_call_part call, bool long_running, tool_context* tctx) {
        call_prep p = before_call(o, call, tctx);
        if (!p.resp) {
            json::value tool_args(std::move(call.args));
            auto op = libretto::run_tool_call(o->tools, call.tool_call_id, call.tool_name, std::move(tool_args), *tctx);
            tool_response_part r = co_await std::move(op);
            p.resp = std::move(r);
        }
        co_return after_call(o, call, long_running, tctx, p);
    }

    /// run_one for the synchronous tool `t`, here: no coroutine frame.
    static std::optional<tool_response_part> run_one_now(const llm_agent_options<Model>* o, const any_tool& t,
                                                         tool_call_part& call, bool long_running, tool_context* tctx) {
        call_prep p = before_call(o, call, tctx);
        if (!p.resp)
            p.resp = detail::run_tool_call_now(o->tools, t, call.tool_call_id, call.tool_name,
                                               json::value(std::move(call.args)), *tctx);
        return after_call(o, call, long_running, tctx, p);
    }


    /// Runs the calls without an answer concurrently, forwarding the events they push
    /// through ctx.emit as they arrive. On cancellation the calls are cancelled and the
    /// exception propagates at once (the calls' state lives in the inbox, not here).
    /// A single call (the usual case) runs in this coroutine instead of a spawned one: no
    /// thread, post, timer or wake-up per call, and a cancellation of the run reaches it
    /// directly. The events it pushes go to the stream as they arrive, as with several.
    /// The inbox of a step's calls (a context each), the invocation's event callback
    /// routed to it; `previous` is the callback it replaced.
    std::shared_ptr<tool_inbox> open_inbox(const std::vector<pending_call>& calls, event_callback& previous) {
        auto inbox = std::make_shared<tool_inbox>(out_.get_executor(), ctx_);
        const std::size_t n = calls.size();
        inbox->results.resize(n);
        inbox->errors.resize(n);
        previous = ctx_.event_callback();
        ctx_.set_event_callback(inbox_callback{inbox, ctx_.branch(), previous});
        inbox->contexts.reserve(n); // the calls get pointers into it
        for (std::size_t i = 0; i < n; ++i) inbox->contexts.emplace_back(inbox->ctx, calls[i].call);
        return inbox;
    }

    /// The one call to run of a step (the others are answered by the loop), if there is
    /// exactly one.
    static std::optional<std::size_t> single_call(const std::vector<pending_call>& calls) {
        std::optional<std::size_t> only;
        for (std::size_t i = 0; i < calls.size(); ++i) {
            if (calls[i].answer) continue;
            if (only) return std::nullopt;
            only = i;
        }
        return only;
    }

    /// The tools part of the usual step without a coroutine: one call to run, of a
    /// synchronous tool (e.g. a function_tool over a plain function), run here with
    /// run_single's events, response and actions; `a` becomes the loop's next action.
    /// False, with nothing done, for any other step.
    bool run_tools_now(llm_action& a) {
        const std::optional<std::size_t> only = single_call(a.calls);
        if (!only) return false;
        const any_tool* t = o_.tools.find(a.calls[*only].call.tool_name);
        if (!t || !t->synchronous()) return false;
        event_callback previous;
        std::shared_ptr<tool_inbox> inbox = open_inbox(a.calls, previous);
        pending_call& call = a.calls[*only];
        start_single(*inbox);
        std::exception_ptr failure;
        try {
            inbox->results[*only] = run_one_now(&o_, *t, call.call, call.long_running, &inbox->contexts[*only]);
        } catch (...) {
            failure = std::current_exception();
        }
        end_single(inbox, previous);
        if (failure) std::rethrow_exception(failure);
        a = take_tool_results(*inbox);
        return true;
    }

    boost::asio::awaitable<std::shared_ptr<tool_inbox>> run_tools(std::vector<pending_call> calls) {
        auto ex = out_.get_executor();
        event_callback previous;
        std::shared_ptr<tool_inbox> inbox = open_inbox(calls, previous);
        const std::size_t n = calls.size();
        std::size_t to_run = 0, only = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (!calls[i].answer) {
                ++to_run;
                only = i;
            }
        }
        if (to_run == 1) {
            co_await run_single(inbox, calls[only], only, std::move(previous));
            co_return inbox;
        }
        inbox->signals.reset(new boost::asio::cancellation_signal[n]);
        inbox->wake.emplace(ex);
        inbox->wake->expires_at(boost::asio::steady_timer::time_point::max());

        for (std::size_t i = 0; i < n; ++i) {
            if (calls[i].answer) continue;
            ++inbox->pending;
            auto op = run_one(&o_, std::move(calls[i].call), calls[i].long_running, &inbox->contexts[i]);
            boost::asio::co_spawn(
                ex, std::move(op),
                boost::asio::bind_cancellation_slot(
                    inbox->signals[i].slot(),
                    [inbox, i](std::exception_ptr ep, std::optional<tool_response_part> r) {
                        if (ep) inbox->errors[i] = ep;
                        else inbox->results[i] = std::move(r);
                        --inbox->pending;
                        inbox->notify();
                    }));
        }

        std::exception_ptr failure;
        while (inbox->pending > 0 || inbox->next_event < inbox->events.size()) {
            while (inbox->next_event < inbox->events.size() && !failure) {
                event e = std::move(inbox->events[inbox->next_event++]);
                if (inbox->next_event == inbox->events.size()) {
                    inbox->events.clear();
                    inbox->next_event = 0;
                }
                try {
                    if (auto wait = emit_one(std::move(e))) co_await std::move(*wait);
                } catch (...) {
                    failure = std::current_exception();
                }
            }
            if (failure || inbox->pending == 0) break;
            inbox->wake->expires_at(boost::asio::steady_timer::time_point::max());
            auto wait = inbox->wake->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
            std::tuple<boost::system::error_code> waited = co_await std::move(wait);
            (void)waited;
            boost::asio::cancellation_state cs = co_await boost::asio::this_coro::cancellation_state;
            if (cs.cancelled() != boost::asio::cancellation_type::none) {
                failure = std::make_exception_ptr(boost::system::system_error(make_error_code(errc::cancelled)));
            }
        }

        inbox->open = false;
        if (auto* mine = ctx_.event_callback().template target<inbox_callback>();
            mine && mine->inbox.lock() == inbox)
            ctx_.set_event_callback(previous);
        if (failure) {
            for (std::size_t i = 0; i < n; ++i) inbox->signals[i].emit(boost::asio::cancellation_type::terminal);
            std::rethrow_exception(failure);
        }
        // A call that failed other than by the tool (a bug, an exception from a callback
        // that is not a std::exception) fails the run.
        for (auto& ep : inbox->errors)
            if (ep) std::rethrow_exception(ep);
        co_return inbox;
    }

    /// run_tools for one call, in this coroutine. The call's pushed events are emitted at
    /// once, without waiting for room (the queue of the concurrent case has no bound
    /// either); if the stream has been closed meanwhile, the next emit of the run throws.
    boost::asio::awaitable<void> run_single(std::shared_ptr<tool_inbox> inbox, pending_call& call, std::size_t i,
                                            event_callback previous) {
        start_single(*inbox);
        std::exception_ptr failure;
        try {
            auto op = run_one(&o_, std::move(call.call), call.long_running, &inbox->contexts[i]);
            std::optional<tool_response_part> r = co_await std::move(op);
            inbox->results[i] = std::move(r);
        } catch (...) {
            failure = std::current_exception();
        }
        end_single(inbox, previous);
        if (failure) std::rethrow_exception(failure);
    }

    /// A single call's pushed events go straight to the stream while it runs.
    void start_single(tool_inbox& inbox) {
        inbox.forward = [this](event&& e) {
            std::optional<boost::asio::awaitable<void>> room = emit_one(std::move(e));
            (void)room; // not awaited: see run_single
        };
    }

    /// After a single call: the inbox is closed and the callback it replaced is back (unless
    /// the call replaced the inbox's with one of its own).
    void end_single(const std::shared_ptr<tool_inbox>& inbox, event_callback& previous) {
        inbox->forward = nullptr;
        inbox->open = false;
        if (auto* mine = ctx_.event_callback().template target<inbox_callback>(); mine && mine->inbox.lock() == inbox)
            ctx_.set_event_callback(std::move(previous));
    }

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
    std::unique_ptr<event> instruction_error_; // rare: not 624 bytes in every run
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

} // namespace detail

/// An agent driven by a model. Copyable; copies share the model and the tools.
template <class Model>
    requires model<Model>
class llm_agent {
public:
    using model_type = Model;
    using options_type = llm_agent_options<Model>;

    /// Throws system_error(errc::invalid_argument) for an empty name, or a tool named
    /// transfer_to_agent in an agent that has sub-agents.
    explicit llm_agent(options_type o) : o_(std::move(o)) {
        if (o_.name.empty()) throw boost::system::system_error(make_error_code(errc::invalid_argument), "llm_agent: empty name");
        if (!o_.sub_agents.empty() && o_.tools.contains(transfer_tool_name))
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              "llm_agent '" + o_.name + "': a tool is named transfer_to_agent");
        declarations_ = tool_list(o_.tools.declarations());
    }

    std::string_view name() const noexcept { return o_.name; }
    std::string_view description() const noexcept { return o_.description; }
    std::vector<agent_ref> sub_agents() const {
        std::vector<agent_ref> v;
        v.reserve(o_.sub_agents.size());
        for (const auto& s : o_.sub_agents) v.push_back(s.ref());
        return v;
    }
    const options_type& options() const noexcept { return o_; }
    const Model& model() const noexcept { return o_.model; }
    /// The tools' declarations, made once; every run and request shares them.
    const tool_list& declarations() const noexcept { return declarations_; }

    /// The agent's turn on `ctx` (see the file comment for the consumer's duties). Runs on
    /// ctx.get_executor(), or the model's executor when the context has none. The agent
    /// must outlive the stream.
    event_stream run(invocation_context ctx) const {
        boost::asio::any_io_executor ex = ctx.get_executor();
        if (!ex) ex = o_.model.get_executor();
        detail::llm_agent_producer<Model> p{this, std::move(ctx)};
        return event_stream(std::move(ex), std::move(p), o_.stream);
    }

private:
    options_type o_;
    tool_list declarations_;
};

template <class Model>
llm_agent(llm_agent_options<Model>) -> llm_agent<Model>;

static_assert(agent<llm_agent<>>);

} // namespace libretto

#endif
