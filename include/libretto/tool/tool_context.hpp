// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_TOOL_CONTEXT_HPP
#define LIBRETTO_TOOL_TOOL_CONTEXT_HPP

#include <libretto/context/callback_context.hpp>
#include <libretto/event/parts.hpp>

#include <string>
#include <utility>
#include <vector>

namespace libretto {

/// What a tool gets for one call: a callback_context (identity, the invocation's state,
/// writable, and the call's own event_actions) plus which call this is.
///
/// Every state write is applied to the shared state at once and recorded in
/// actions().state_delta; the agent takes the actions after the call (take_actions()) and
/// merges them into the TOOL_RESPONSE event, so the writes are persisted with it. Each
/// call has its own tool_context, so concurrent calls never share an actions object.
/// A cheap reference wrapper: the invocation_context must outlive it.
class tool_context : public callback_context {
public:
    /// A context for call `function_call_id` of tool `tool_name`.
    tool_context(invocation_context& ctx, std::string function_call_id, std::string tool_name = {})
        : callback_context(ctx), function_call_id_(std::move(function_call_id)), tool_name_(std::move(tool_name)) {}

    /// A context for the call `call` (its id and tool name).
    tool_context(invocation_context& ctx, const tool_call_part& call)
        : tool_context(ctx, call.tool_call_id, call.tool_name) {}

    /// The id of the call being answered (tool_call_part::tool_call_id).
    const std::string& function_call_id() const noexcept { return function_call_id_; }
    /// The name of the tool being called.
    const std::string& tool_name() const noexcept { return tool_name_; }

    // ---- actions, recorded for the TOOL_RESPONSE event --------------------------------

    /// Asks the enclosing loop to stop (loop_agent ends its iterations).
    void escalate() { actions().escalate = true; }
    /// Hands the conversation to agent `name` once the response is recorded.
    void transfer_to_agent(std::string name) { actions().transfer_to_agent = std::move(name); }
    /// The agent does not ask the model to summarise this tool's result: the response
    /// event ends the agent's turn as is.
    void skip_summarization() { actions().skip_summarization = true; }

    /// Pushes `e` to the parent stream at once (progress events, a sub-agent's events);
    /// false if the invocation has no event callback.
    bool emit(event e) const { return readonly_context::context().emit(std::move(e)); }

    /// Adds `p` (a file or data part: a loaded artifact, an image) to the tool response
    /// event, after the responses: the model sees it in its next request.
    void attach(part p) { attachments_.push_back(std::move(p)); }
    /// Hands the attached parts over (to the agent) and forgets them.
    std::vector<part> take_attachments() noexcept { return std::exchange(attachments_, {}); }

private:
    std::string function_call_id_;
    std::string tool_name_;
    std::vector<part> attachments_;
};

} // namespace libretto

#endif
