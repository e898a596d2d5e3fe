// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_LLM_AGENT_HPP
#define LIBRETTO_AGENT_LLM_AGENT_HPP

// llm_agent: an agent driven by a model. Each step shows the model the session (filtered
// for this agent), streams its reply as partial events, runs the tools it asks for
// concurrently and records their results, until a final answer, an escalation, a transfer,
// a pause on a long-running call, the end of the invocation or the step limit.
//
// The turn loop itself is the sans-io state machine of detail/llm_loop.hpp; impl/llm_agent.hpp
// is the Asio driver around it (model streams, retry timers, the callbacks, transfer) and
// impl/llm_agent_tools.hpp its tool phase (concurrent tool calls). This header holds the
// public API. See docs/agents.md.
//
// The runner contract: the consumer of run()'s stream stores every non-partial event it
// receives (appending it to ctx.session() and applying its state_delta there) before it
// asks for the next one. The agent reads the history from ctx.session().events at the
// start of each step; the events it emitted itself that are not there yet (a consumer
// that lags, or does not store) are added to that view, so a run is correct either way.

#include <libretto/agent/agent.hpp>
#include <libretto/detail/config.hpp>
#include <libretto/agent/detail/llm_instruction.hpp>
#include <libretto/agent/llm_types.hpp>
#include <libretto/agent/transfer.hpp>
#include <libretto/context/callback_context.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/context/readonly_context.hpp>
#include <libretto/error.hpp>
#include <libretto/model/any_model.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/model/model.hpp>
#include <libretto/model/retry.hpp>
#include <libretto/model/tool_declaration.hpp>
#include <libretto/stream/event_stream.hpp>
#include <libretto/session/state.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/system_error.hpp>

#include <cstddef>
#include <functional>
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
template <class Model>
struct llm_agent_producer; // impl/llm_agent.hpp
/// llm_agent::run (impl/llm_agent.hpp).
template <class Model>
event_stream start_llm_agent(const llm_agent<Model>& agent, invocation_context ctx);
#ifdef LIBRETTO_SEPARATE_COMPILATION
/// start_llm_agent for any_model, compiled once by <libretto/src.hpp> (impl/llm_agent.ipp).
event_stream run_llm_agent(const llm_agent<any_model>& agent, invocation_context ctx);
#endif
} // namespace detail

/// An agent driven by a model. Copyable; copies share the model and the tools.
template <class Model>
    requires model<Model>
class llm_agent {
public:
    using model_type = Model;
    using options_type = llm_agent_options<Model>;

    /// Throws system_error(errc::invalid_argument) for an empty name, a tool named
    /// transfer_to_agent in an agent that has sub-agents, an output_key no state takes
    /// (state_key_problem: empty, or a scope prefix alone), or retry options check()
    /// refuses (a NaN multiplier, a negative delay: once silently clamped).
    explicit llm_agent(options_type o) : o_(std::move(o)) {
        if (o_.name.empty()) throw boost::system::system_error(make_error_code(errc::invalid_argument), "llm_agent: empty name");
        require_valid(o_.retry, "llm_agent '" + o_.name + "': retry");
        if (o_.output_key)
            if (auto why = state_key_problem(*o_.output_key); !why.empty())
                throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                                  "llm_agent '" + o_.name + "': output_key: " + why);
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
        // With LIBRETTO_SEPARATE_COMPILATION, llm_agent<any_model> (the agent most programs
        // hold) runs through a function compiled once (impl/llm_agent.ipp).
#ifdef LIBRETTO_SEPARATE_COMPILATION
        if constexpr (std::is_same_v<Model, any_model>) return detail::run_llm_agent(*this, std::move(ctx));
        else
#endif
            return detail::start_llm_agent(*this, std::move(ctx));
    }

private:
    options_type o_;
    tool_list declarations_;
};

template <class Model>
llm_agent(llm_agent_options<Model>) -> llm_agent<Model>;

static_assert(agent<llm_agent<>>);

} // namespace libretto

#include <libretto/agent/impl/llm_agent.hpp>

#endif
