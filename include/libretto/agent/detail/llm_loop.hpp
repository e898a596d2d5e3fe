// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_DETAIL_LLM_LOOP_HPP
#define LIBRETTO_AGENT_DETAIL_LLM_LOOP_HPP

// The llm_agent turn loop as a sans-io state machine. It never calls a model, runs a tool
// or waits: it is told what happened (the history at the start of a step, the model's
// response, the tools' results) and answers with an llm_action: the events to emit now,
// then what to do next (call the model with request(), wait and call it again, run these
// tool calls, start the next step, transfer, or stop and why). impl/llm_agent.hpp is the
// Asio driver around it; tests/llm_agent_loop_test.cpp drives it by hand.
//
//   begin_step(history, instruction)  -> call_model | done(max_steps)
//   on_model_response(response, actions)
//                                     -> retry_model(delay) | done(error)
//                                      | done(final_answer, escalated) with the final event
//                                      | transfer(target) with the final event
//                                      | run_tools(calls) with the call event
//   on_tool_results(results, actions) -> next_step | transfer(target) | done(escalated,
//                                        skip_summarization, paused) with the TOOL_RESPONSE event
//
// The callbacks' actions ride on the event the model's response becomes; an escalate or a
// transfer among them takes effect like a tool's: at once for a final answer, after the
// step's tool calls are answered otherwise (no call is left without its response).

#include <libretto/event/event_list.hpp>
#include <libretto/agent/detail/composite_common.hpp>
#include <libretto/agent/llm_types.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/model/retry.hpp>
#include <libretto/model/tool_declaration.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

namespace detail {

/// A transfer target as the model is told about it.
struct transfer_target {
    std::string name;
    std::string description;
};

struct llm_loop_config {
    // Stamped on every event.
    std::string agent_name{};
    std::string branch{};
    std::string invocation_id{};
    std::string session_id{};
    // The request.
    /// The agent's tools as declared (a tool_list: shared by its runs and requests).
    tool_list tools{};
    std::vector<transfer_target> transfer_targets{}; ///< empty: no transfer tool
    std::optional<json::object> output_schema{};
    generation_options generation{};
    std::string model{}; ///< llm_request::model (empty: the model's own)
    // The loop.
    std::optional<std::string> output_key{};
    std::size_t max_steps = 10;
    /// Retries of a transient model failure; nullptr: none. Must outlive the loop (the
    /// driver points at its agent's options). The driver gives a model that retries itself
    /// none (model_retries_transient). A pointer: a run of an llm_agent stays under 1 KB.
    const retry_options* retry = nullptr;
    history_scope history = history_scope::branch;
    bool resumable = false;
};

/// One call of a model response, as the driver must handle it.
struct pending_call {
    tool_call_part call;
    bool long_running = false;
    /// Already answered by the loop (arguments that did not parse, the transfer tool):
    /// the driver does not run it.
    std::optional<tool_response_part> answer{};
};

enum class llm_action_kind {
    call_model,  ///< send request() (take_request()) to the model
    retry_model, ///< wait `delay`, rebuild_request(), then send it again
    run_tools,   ///< run `calls` (those without an answer), then on_tool_results
    next_step,   ///< call begin_step again, with the history as it is now
    transfer,    ///< run agent `transfer_target` and forward its events; the loop is over
    done,        ///< stop: `reason`
};

struct llm_action {
    llm_action_kind kind = llm_action_kind::done;
    std::vector<event> emit{}; ///< to emit first, in order
    std::chrono::milliseconds delay{0};
    std::vector<pending_call> calls{};
    std::string transfer_target{};
    llm_stop reason = llm_stop::final_answer;
};

/// What the model is shown of `events` (see history_scope), as a context view.
inline context_view select_history(context_view v, history_scope scope, std::string_view branch,
                                   std::string_view invocation_id) {
    v = apply_rewinds(std::move(v)); // first: the other filters may drop a rewound invocation's events
    // The work of an agent run as a tool (agent_tool marks it): the parent's model sees
    // the tool's result instead.
    v.filter([](const event& e) { return !e.metadata.contains("agent_tool"); });
    switch (scope) {
    case history_scope::all: break;
    case history_scope::branch:
        v.filter([&](const event& e) { return is_branch_visible(e.branch, branch); });
        break;
    case history_scope::current_turn:
        v.filter([&](const event& e) {
            return e.invocation_id == invocation_id && is_branch_visible(e.branch, branch);
        });
        break;
    }
    return repair_tool_pairs(filter_events(apply_compaction(std::move(v))));
}

inline constexpr std::string_view long_running_note =
    "\n\nNOTE: This is a long-running operation. Do not call this tool again if it has already returned some "
    "intermediate or pending status.";

/// The declaration of the built-in transfer tool for `targets`.
inline tool_declaration transfer_declaration(const std::vector<transfer_target>& targets) {
    tool_declaration d;
    d.name = std::string(transfer_tool_name);
    d.description = "Hands the conversation to another agent that is better suited to answer the user, "
                    "according to its description. Available agents:";
    json::array names;
    for (const auto& t : targets) {
        d.description += "\n- " + t.name;
        if (!t.description.empty()) d.description += ": " + t.description;
        names.emplace_back(t.name);
    }
    json::object agent_name;
    agent_name["type"] = "string";
    agent_name["description"] = "the name of the agent to hand the conversation to";
    agent_name["enum"] = std::move(names);
    json::object props;
    props["agent_name"] = std::move(agent_name);
    json::array required;
    required.emplace_back("agent_name");
    d.parameters["type"] = "object";
    d.parameters["properties"] = std::move(props);
    d.parameters["required"] = std::move(required);
    d.parameters["additionalProperties"] = false;
    return d;
}

/// The sans-io turn loop of one llm_agent run. See the file comment.
class llm_loop {
public:
    explicit llm_loop(llm_loop_config c) : cfg_(std::move(c)), tools_(cfg_.tools) {
        // The list every request of this run sends: the agent's own, shared, unless a
        // long-running tool's description gets its note or the transfer tool is added.
        bool changed = false;
        for (const auto& t : cfg_.tools.vec()) changed = changed || t.long_running;
        if (changed || !cfg_.transfer_targets.empty()) {
            std::vector<tool_declaration>& v = tools_.edit();
            for (auto& t : v)
                if (t.long_running) t.description += long_running_note;
            if (!cfg_.transfer_targets.empty()) v.push_back(transfer_declaration(cfg_.transfer_targets));
        }
    }

    const llm_loop_config& config() const noexcept { return cfg_; }
    /// The request of the current attempt (the driver's callbacks may change it in place);
    /// empty after take_request().
    llm_request& request() noexcept { return *request_; }
    const llm_request& request() const noexcept { return *request_; }
    /// Moves the request out, for the model call (a model takes its request by value: no
    /// copy of the history per call). rebuild_request() makes it again for a retry.
    llm_request take_request() noexcept { return std::move(*request_); }
    /// Steps begun so far (model calls, retries not counted).
    std::size_t steps() const noexcept { return steps_; }
    /// Failed attempts of the current step's model call.
    int failed_attempts() const noexcept { return failed_; }
    /// The calls of the current step, in the model's order (ids, names, long-running marks
    /// and the loop's own answers; the arguments went to the driver with the action).
    const std::vector<pending_call>& calls() const noexcept { return calls_; }

    /// Starts a step over the session's events as they are now: builds the request with
    /// `system_instruction`, or stops when max_steps steps have run.
    llm_action begin_step(event_span history, std::string system_instruction) {
        return begin_step(context_view(history), std::move(system_instruction));
    }

    /// The same over a view of the events (e.g. the session's plus events this run emitted
    /// that the consumer has not stored yet).
    llm_action begin_step(context_view history, std::string system_instruction) {
        llm_action a;
        if (steps_ >= cfg_.max_steps) {
            a.kind = llm_action_kind::done;
            a.reason = llm_stop::max_steps;
            a.emit.push_back(error_event("agent '" + cfg_.agent_name + "' reached max_steps (" +
                                             std::to_string(cfg_.max_steps) + ") without a final answer",
                                         make_error_code(errc::limit_exceeded), llm_stop::max_steps));
            return a;
        }
        ++steps_;
        failed_ = 0;
        previous_delay_ = std::chrono::milliseconds(0);
        calls_.clear();
        actions_.clear();
        step_escalate_ = false;
        step_transfer_.reset();
        instruction_ = std::move(system_instruction);
        rebuild_request(std::move(history));
        a.kind = llm_action_kind::call_model;
        return a;
    }

    /// Builds the current step's request again from `history` as it is now, without
    /// counting a new step: for another attempt after take_request() (a retry, or the
    /// history compacted after a context overflow). The driver's callbacks run on it again.
    void rebuild_request(context_view history) {
        // Each attempt's response is a new event: the partial events streamed before it
        // carry its id.
        response_id_ = event::new_id();
        context_view view = select_history(std::move(history), cfg_.history, cfg_.branch, cfg_.invocation_id);
        llm_request& r = *request_;
        r = llm_request{};
        r.model = cfg_.model;
        r.system_instruction = instruction_;
        r.messages = build_messages(view, cfg_.agent_name);
        r.tools = tools_;
        r.output_schema = cfg_.output_schema;
        r.options = cfg_.generation;
    }

    /// The model's final response for the current step, after the driver's callbacks;
    /// `actions` are the callbacks' actions, applied to the event this response becomes
    /// (kept across retries).
    llm_action on_model_response(llm_response r, event_actions callback_actions = {}) {
        llm_action a;
        actions_.merge(std::move(callback_actions));
        if (!r.ok()) {
            ++failed_;
            if (cfg_.retry && is_transient(r.error)) {
                if (!rng_seeded_) { // the jitter of clients that failed together must differ
                    rng_seeded_ = true;
                    rng_.seed(static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
                }
                if (auto pause = next_delay(*cfg_.retry, static_cast<std::size_t>(failed_), r.retry_after, rng_,
                                            previous_delay_)) {
                    previous_delay_ = *pause;
                    a.kind = llm_action_kind::retry_model;
                    a.delay = *pause;
                    return a;
                }
            }
            a.kind = llm_action_kind::done;
            a.reason = llm_stop::model_error;
            std::string msg = "model call of agent '" + cfg_.agent_name + "' failed";
            if (failed_ > 1) msg += " after " + std::to_string(failed_) + " attempts";
            msg += ": " + r.error.message();
            if (!r.error_message.empty()) msg += ": " + r.error_message;
            event e = error_event(std::move(msg), r.error, llm_stop::model_error);
            e.actions.assign_from(actions_);
            a.emit.push_back(std::move(e));
            return a;
        }

        event& e = a.emit.emplace_back(); // emit holds only this event until the end
        fill_event(e, event_type::agent_message, take_response_id());
        e.usage = r.usage;
        e.actions.assign_from(actions_);
        for (auto& p : r.parts) e.content.parts.push_back(std::move(p));
        for (const auto& bad : r.invalid_tool_calls) e.content.parts.emplace_back(bad.as_call());

        if (!e.has_tool_calls()) {
            if (std::optional<std::string> bad = finish_answer(e)) {
                // The answer stays (what the model said), without output_key; the run ends
                // with an error naming what is wrong with it.
                a.kind = llm_action_kind::done;
                a.reason = llm_stop::bad_output;
                a.emit.push_back(error_event("agent '" + cfg_.agent_name +
                                                 "': the final answer is not the JSON object output_schema asks for: " +
                                                 *bad,
                                             make_error_code(errc::bad_response), llm_stop::bad_output));
                return a;
            }
            a.kind = llm_action_kind::done;
            a.reason = e.actions.escalate.value_or(false) ? llm_stop::escalated : llm_stop::final_answer;
            if (e.actions.transfer_to_agent) {
                a.kind = llm_action_kind::transfer;
                a.reason = llm_stop::transferred;
                a.transfer_target = *e.actions.transfer_to_agent;
            }
            return a;
        }
        // A callback's escalate or transfer waits for the calls' responses (on_tool_results).
        step_escalate_ = e.actions.escalate.value_or(false);
        step_transfer_ = e.actions.transfer_to_agent;

        calls_.clear();
        for (const auto& c : e.tool_calls()) {
            pending_call pc;
            pc.call = c;
            auto bad = std::find_if(r.invalid_tool_calls.begin(), r.invalid_tool_calls.end(),
                                    [&](const invalid_tool_call& i) { return i.id == c.tool_call_id; });
            if (bad != r.invalid_tool_calls.end()) {
                pc.answer = bad->error_response();
            } else if (c.tool_name == transfer_tool_name && !cfg_.transfer_targets.empty()) {
                pc.answer = answer_transfer(c);
            } else if (const tool_declaration* d = find_tool(c.tool_name)) {
                pc.long_running = d->long_running;
            }
            calls_.push_back(std::move(pc));
        }
        // Long-running calls are marked in the stored event: the compaction obligations
        // tracker must keep them open until their final response (compaction/obligations.hpp).
        for (auto& p : e.content.parts)
            if (auto* c = std::get_if<tool_call_part>(&p))
                for (const auto& pc : calls_)
                    if (pc.long_running && pc.call.tool_call_id == c->tool_call_id) c->metadata["long_running"] = true;
        a.kind = llm_action_kind::run_tools;
        // The driver's list has the arguments (it moves them to the tools); the loop keeps
        // what on_tool_results reads, without them.
        a.calls = std::move(calls_);
        calls_.clear();
        calls_.reserve(a.calls.size());
        for (const auto& pc : a.calls) {
            pending_call kept;
            kept.call.tool_call_id = pc.call.tool_call_id;
            kept.call.tool_name = pc.call.tool_name;
            kept.long_running = pc.long_running;
            kept.answer = pc.answer;
            calls_.push_back(std::move(kept));
        }
        return a;
    }

    /// The results of the current step's calls, in call order (the loop's own answers
    /// included, or left empty: the loop fills them in); an empty result is a
    /// long-running call that gave no result (its answer will come from outside).
    /// `actions` are those of the tools and tool callbacks, merged in call order.
    /// `attachments` (tools' attached parts: loaded files) follow the responses in the event.
    llm_action on_tool_results(std::vector<std::optional<tool_response_part>> results, event_actions actions,
                               std::vector<part> attachments = {}) {
        llm_action a;
        event& e = a.emit.emplace_back(); // dropped below if it carries nothing
        fill_event(e, event_type::tool_response, event::new_id());
        bool long_running = false;
        for (std::size_t i = 0; i < calls_.size(); ++i) {
            const pending_call& pc = calls_[i];
            long_running = long_running || pc.long_running;
            std::optional<tool_response_part> r = i < results.size() ? std::move(results[i]) : std::nullopt;
            if (pc.answer) {
                r = *pc.answer;
                if (pc.call.tool_name == transfer_tool_name && !r->error) {
                    event_actions t;
                    t.transfer_to_agent = std::string(r->result.as_object().at("transferred_to").as_string());
                    actions.merge(std::move(t));
                }
            }
            if (r) e.content.parts.emplace_back(std::move(*r));
        }
        for (auto& p : attachments) e.content.parts.push_back(std::move(p));
        e.actions.assign_from(actions);
        const bool paused = long_running && cfg_.resumable;
        const bool any = !e.content.parts.empty() || !e.actions.empty();
        const bool escalate = e.actions.escalate.value_or(false);
        const bool skip_summarization = e.actions.skip_summarization.value_or(false);
        const bool escalate_now = escalate || step_escalate_;
        if (e.actions.transfer_to_agent) a.transfer_target = *e.actions.transfer_to_agent;
        else if (step_transfer_) a.transfer_target = *step_transfer_; // a model callback's
        const bool transfer = e.actions.transfer_to_agent.has_value() || step_transfer_.has_value();
        if (!any) a.emit.clear(); // `e` is not used below

        if (transfer) {
            a.kind = llm_action_kind::transfer;
            a.reason = llm_stop::transferred;
        } else if (escalate_now) {
            a.kind = llm_action_kind::done;
            a.reason = llm_stop::escalated;
        } else if (skip_summarization) {
            a.kind = llm_action_kind::done;
            a.reason = llm_stop::skip_summarization;
        } else if (paused) {
            a.kind = llm_action_kind::done;
            a.reason = llm_stop::paused;
        } else {
            a.kind = llm_action_kind::next_step;
        }
        return a;
    }

    // ---- event construction ------------------------------------------------------------

    /// The id of the event the current attempt's response becomes, once (a fresh one if
    /// no request was built).
    std::string take_response_id() {
        if (response_id_.empty()) return event::new_id();
        return std::exchange(response_id_, std::string());
    }

    /// A fresh event of type `t` stamped with this agent's identity.
    event make_event(event_type t) const { return make_event(t, event::new_id()); }
    event make_event(event_type t, std::string id) const {
        event e;
        fill_event(e, t, std::move(id));
        return e;
    }
    /// make_event's fields, written into `e` (a default event): the step's own events are
    /// built where the driver takes them from (llm_action::emit), not moved there.
    void fill_event(event& e, event_type t, std::string id) const {
        e.id = std::move(id);
        e.timestamp = event::now();
        e.type = t;
        e.author = cfg_.agent_name;
        e.branch = cfg_.branch;
        e.invocation_id = cfg_.invocation_id;
        e.session_id = cfg_.session_id;
    }

    /// A partial event for a chunk's text and thinking deltas (moved out of the chunk);
    /// nullopt if it has neither.
    /// Its id is the id of the event the attempt's response becomes (ADK's rule): a client
    /// can show the streamed text under that id and replace it with the final event.
    std::optional<event> partial_event(llm_chunk&& c) const {
        if (c.text.empty() && c.thinking.empty()) return std::nullopt;
        event e = make_event(event_type::agent_message, response_id_.empty() ? event::new_id() : response_id_);
        e.partial = true;
        e.content.parts.reserve(static_cast<std::size_t>(!c.thinking.empty()) + !c.text.empty());
        if (!c.thinking.empty()) e.content.parts.emplace_back(thinking_part{std::move(c.thinking), {}});
        if (!c.text.empty()) e.content.parts.emplace_back(text_part{std::move(c.text), {}});
        return e;
    }

    /// An error event: the message as text, metadata {"error": true, "stop_reason": ...,
    /// "error_code": n, "error_category": "libretto"} (the code when there is one). Error
    /// events are never shown to a model (should_include_event) and are not final responses.
    event error_event(std::string message, boost::system::error_code ec, llm_stop reason) const {
        event e = make_event(event_type::agent_message);
        e.content = content::from_text(std::move(message));
        e.metadata["error"] = true;
        e.metadata["stop_reason"] = to_string(reason);
        if (ec) {
            e.metadata["error_code"] = ec.value();
            e.metadata["error_category"] = ec.category().name();
        }
        return e;
    }

private:
    const tool_declaration* find_tool(std::string_view name) const noexcept {
        for (const auto& t : cfg_.tools)
            if (t.name == name) return &t;
        return nullptr;
    }

    tool_response_part answer_transfer(const tool_call_part& c) const {
        std::string names;
        for (const auto& t : cfg_.transfer_targets) {
            if (!names.empty()) names += ", ";
            names += t.name;
        }
        const json::value* v = c.args.if_contains("agent_name");
        if (!v || !v->is_string()) {
            return tool_error_shape(c, "args.agent_name: missing required field (expected one of: " + names + ")");
        }
        std::string_view target = v->get_string();
        for (const auto& t : cfg_.transfer_targets) {
            if (t.name == target) {
                tool_response_part r;
                r.tool_call_id = c.tool_call_id;
                r.tool_name = c.tool_name;
                json::object body;
                body["transferred_to"] = t.name;
                r.result = std::move(body);
                return r;
            }
        }
        return tool_error_shape(c, "unknown agent '" + std::string(target) + "'; you can transfer to: " + names);
    }

    /// tool_error_response's shape (tool/tool.hpp), without depending on the tool layer.
    static tool_response_part tool_error_shape(const tool_call_part& c, std::string message) {
        invalid_tool_call i{c.tool_call_id, c.tool_name, {}, std::move(message)};
        return i.error_response();
    }

    /// The text of a structured answer without a Markdown code fence around it (```json
    /// ... ```), which models often add.
    static std::string_view unfenced(std::string_view t) noexcept {
        auto trim = [](std::string_view v) {
            while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
            while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
            return v;
        };
        t = trim(t);
        if (t.size() >= 6 && t.starts_with("```") && t.ends_with("```")) {
            const auto nl = t.find('\n');
            if (nl != std::string_view::npos && nl + 3 <= t.size() - 3) t = trim(t.substr(nl + 1, t.size() - 3 - (nl + 1)));
        }
        return t;
    }

    /// Adds the answer's data part (output_schema) and output_key delta. Returns why the
    /// answer is not the JSON object output_schema asks for (then no output_key is written).
    std::optional<std::string> finish_answer(event& e) const {
        if (!cfg_.output_schema && !cfg_.output_key) return std::nullopt; // nothing reads the text
        std::string text = e.text();
        std::optional<json::value> value;
        if (cfg_.output_schema) {
            if (text.empty()) return std::string("the answer has no text");
            // By the rules of stored JSON (a number too large for a double, a repeated key or
            // deep nesting would make the answer's event one no store takes); the data part
            // sits at level 5 of its event.
            boost::system::error_code ec;
            std::string why;
            json::value v = parse_precise(unfenced(text), ec, {}, &why, max_json_depth - 4);
            if (ec) return "it is not JSON (" + why + ")";
            if (!v.is_object()) return "it is JSON but not an object";
            e.content.parts.emplace_back(data_part{v.as_object(), {}});
            value = std::move(v);
        }
        if (cfg_.output_key && !text.empty()) {
            e.actions.state_delta[*cfg_.output_key] = value ? std::move(*value) : json::value(std::move(text));
        }
        return std::nullopt;
    }

    llm_loop_config cfg_;
    tool_list tools_; ///< what each request declares
    bool step_escalate_ = false;                ///< the model callbacks' escalate, this step
    std::optional<std::string> step_transfer_{}; ///< the model callbacks' transfer, this step
    std::string instruction_{}; ///< the current step's system instruction
    std::string response_id_{}; ///< the id of the event the current attempt's response becomes
    // Boxed: a run of an llm_agent (this loop inside) stays under 1 KB, the largest block
    // glibc's per-thread cache serves. A larger one makes every run's allocation sort the
    // allocator's free lists (malloc_consolidate), ~2 % of a one-reply turn.
    std::unique_ptr<llm_request> request_ = std::make_unique<llm_request>();
    std::vector<pending_call> calls_{};
    event_actions actions_{};
    std::size_t steps_ = 0;
    int failed_ = 0;
    std::chrono::milliseconds previous_delay_{0}; ///< the last retry pause of this step
    std::minstd_rand rng_; ///< the retry pauses' jitter
    bool rng_seeded_ = false;
};

} // namespace detail
} // namespace libretto

#endif
