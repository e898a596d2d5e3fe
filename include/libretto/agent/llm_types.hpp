// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_LLM_TYPES_HPP
#define LIBRETTO_AGENT_LLM_TYPES_HPP

// The plain types an llm_agent's user names: which history the model sees, why a run
// ended, and how an error event carries its code (docs/agents.md).

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>

#include <boost/system/error_code.hpp>

#include <string_view>

namespace libretto {

/// Which events of the session an llm_agent shows its model (always through
/// make_context_view's filters, compaction and tool-pair repair).
enum class history_scope {
    /// The events visible from this agent's branch (ADK's rule, is_branch_visible): all
    /// of them at the top (empty branch), else those on an empty branch, this branch or
    /// an ancestor of it. Parallel siblings do not see each other's work.
    branch,
    /// Every event of the session.
    all,
    /// Only this invocation's events, visible from this agent's branch (ADK's
    /// include_contents="none": the current turn, no earlier conversation).
    current_turn,
};

/// Why an llm_agent's run ended.
enum class llm_stop {
    final_answer,       ///< the model answered without tool calls
    escalated,          ///< a tool (or callback) set actions.escalate
    skip_summarization, ///< a tool asked for its response to end the turn
    transferred,        ///< the conversation went to another agent (its events follow)
    paused,             ///< a long-running call in a resumable invocation
    invocation_ended,   ///< ctx.end_invocation() was called
    max_steps,          ///< the step limit was reached (error event)
    max_llm_calls,      ///< the invocation's model-call limit was reached (error event)
    model_error,        ///< the model failed, retries included (error event)
    instruction_error,  ///< the instruction names a state key that is absent (error event)
    transfer_error,     ///< the transfer hop limit or an unlaunchable target (error event)
    bad_output,         ///< the final answer is not the JSON object output_schema asks for (error event)
};

constexpr std::string_view to_string(llm_stop s) noexcept {
    switch (s) {
    case llm_stop::final_answer: return "final_answer";
    case llm_stop::escalated: return "escalated";
    case llm_stop::skip_summarization: return "skip_summarization";
    case llm_stop::transferred: return "transferred";
    case llm_stop::paused: return "paused";
    case llm_stop::invocation_ended: return "invocation_ended";
    case llm_stop::max_steps: return "max_steps";
    case llm_stop::max_llm_calls: return "max_llm_calls";
    case llm_stop::model_error: return "model_error";
    case llm_stop::instruction_error: return "instruction_error";
    case llm_stop::transfer_error: return "transfer_error";
    case llm_stop::bad_output: return "bad_output";
    }
    return "unknown";
}

template <class Ostream>
    requires requires(Ostream& os, std::string_view s) { os << s; }
Ostream& operator<<(Ostream& os, llm_stop s) {
    os << to_string(s);
    return os;
}

/// The name of the built-in tool an llm_agent declares when it can transfer.
inline constexpr std::string_view transfer_tool_name = "transfer_to_agent";

/// The libretto error code an agent's error event carries (metadata "error_code" and
/// "error_category"), or an empty code if it carries none.
inline boost::system::error_code agent_error_code(const event& e) {
    auto c = e.metadata.if_contains("error_code");
    auto cat = e.metadata.if_contains("error_category");
    if (!c || !c->is_int64() || !cat || !cat->is_string() || cat->get_string() != error_category().name()) return {};
    return make_error_code(static_cast<errc>(c->get_int64()));
}

} // namespace libretto

#endif
