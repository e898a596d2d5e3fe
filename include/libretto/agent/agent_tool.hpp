// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_AGENT_TOOL_HPP
#define LIBRETTO_AGENT_AGENT_TOOL_HPP

// agent_tool: an agent used as a tool. The parent's model calls it with {"request": "..."};
// the agent runs on a derived context with a fresh session (shared state, no parent
// history) holding one USER_MESSAGE with the request; its events are pushed to the parent's
// stream through ctx.emit as they come; the result is its final answer's text (or the
// value it stored under its output_key). See docs/agents.md, "agent_tool".

#include <libretto/agent/agent.hpp>
#include <libretto/agent/llm_agent.hpp>
#include <libretto/error.hpp>
#include <libretto/model/tool_declaration.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace libretto {

struct agent_tool_options {
    /// The tool's name; empty: the agent's name.
    std::string name{};
    /// What the model is told; empty: the agent's description, or "Delegate work to the
    /// <name> agent." when it has none.
    std::string description{};
    /// The parent's turn ends with this tool's response (the model is not called again to
    /// summarise it).
    bool skip_summarization = false;
};

namespace detail {

/// The output_key of an llm_agent (also behind any_agent / agent_ref when it holds an
/// llm_agent<any_model>), else nullopt.
template <class A>
std::optional<std::string> output_key_of(const A& a) {
    if constexpr (requires { a.options().output_key; }) {
        return a.options().output_key;
    } else if constexpr (requires { a.template target<llm_agent<any_model>>(); }) {
        if (const auto* l = a.template target<llm_agent<any_model>>()) return l->options().output_key;
        return std::nullopt;
    } else {
        return std::nullopt;
    }
}

} // namespace detail

/// An agent as a tool. Holds the agent by value (an agent_ref to borrow one, an any_agent
/// to share one).
template <agent A>
class agent_tool {
public:
    explicit agent_tool(A a, agent_tool_options o = {}) : agent_(std::make_shared<const A>(std::move(a))) {
        decl_.name = o.name.empty() ? std::string(agent_->name()) : std::move(o.name);
        if (!o.description.empty()) decl_.description = std::move(o.description);
        else if (!agent_->description().empty()) decl_.description = std::string(agent_->description());
        else decl_.description = "Delegate work to the " + decl_.name + " agent.";
        json::object request;
        request["type"] = "string";
        request["description"] = "what to ask the agent, in full: it does not see this conversation";
        json::object props;
        props["request"] = std::move(request);
        json::array required;
        required.emplace_back("request");
        decl_.parameters["type"] = "object";
        decl_.parameters["properties"] = std::move(props);
        decl_.parameters["required"] = std::move(required);
        decl_.parameters["additionalProperties"] = false;
        skip_summarization_ = o.skip_summarization;
    }

    const tool_declaration& declaration() const noexcept { return decl_; }
    const A& wrapped() const noexcept { return *agent_; }

    boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const {
        return run(agent_, decl_.name, skip_summarization_, std::move(args), ctx);
    }

private:
    static boost::asio::awaitable<json::value> run(std::shared_ptr<const A> a, std::string name,
                                                   bool skip_summarization, json::object args, tool_context& ctx) {
        const json::value* req = args.if_contains("request");
        if (!req) throw tool_error("args.request: missing required field", errc::missing_field);
        if (!req->is_string())
            throw tool_error(std::string("args.request: expected string, got ") + detail::schema_kind_name(req->kind()),
                             errc::wrong_type);
        for (const auto& kv : args)
            if (kv.key() != "request")
                throw tool_error("args." + std::string(kv.key()) + ": unknown field (expected one of: request)",
                                 errc::invalid_argument);
        std::string request(req->get_string());

        invocation_context& parent = ctx.context();
        invocation_context child = parent.derive(std::string(a->name())).clear_session();
        event user = event::make(event_type::user_message, "user", content::from_text(request));
        user.invocation_id = child.invocation_id();
        user.session_id = child.session_id();
        user.branch = child.branch();
        child.session().events.push_back(std::move(user));
        std::shared_ptr<session> child_session = child.session_ptr();

        // This tool is the child's runner: it stores the child's events in the child's
        // session (so the child's next step sees them) and pushes them to the parent.
        event_stream s = a->run(std::move(child));
        std::optional<event> last_final;
        std::optional<event> last_error;
        for (;;) {
            auto next = s.next();
            std::optional<event> e = co_await std::move(next);
            if (!e) break;
            if (!e->partial) {
                apply_delta(child_session->state, e->actions.state_delta);
                child_session->events.push_back(*e);
                if (e->is_final_response()) last_final = *e;
                else if (e->error()) last_error = *e;
            }
            event up = std::move(*e);
            // The parent's models see the tool's result, not the child's work: marked
            // events are left out of their context (llm_agent's select_history).
            up.metadata["agent_tool"] = name;
            ctx.emit(std::move(up));
        }
        if (skip_summarization) ctx.skip_summarization();

        if (std::optional<std::string> key = detail::output_key_of(*a); key && last_final) {
            if (const json::value* v = last_final->actions.state_delta.if_contains(*key)) co_return *v;
        }
        if (last_final) {
            if (std::string text = last_final->text(); !text.empty()) co_return json::value(std::move(text));
            if (const json::object* d = last_final->data()) co_return json::value(*d);
        }
        if (last_error) throw tool_error("agent '" + std::string(a->name()) + "' failed: " + last_error->text());
        throw tool_error("agent '" + std::string(a->name()) + "' produced no final answer");
    }

    std::shared_ptr<const A> agent_;
    tool_declaration decl_;
    bool skip_summarization_ = false;
};

/// `agent` as a tool: agent_tool<A> for an agent value (copied), agent_tool<agent_ref>
/// for an lvalue you keep alive yourself is `agent_tool_of(agent_ref(a))`.
template <class A>
    requires agent<std::remove_cvref_t<A>>
agent_tool<std::remove_cvref_t<A>> agent_tool_of(A&& a, agent_tool_options o = {}) {
    return agent_tool<std::remove_cvref_t<A>>(std::forward<A>(a), std::move(o));
}

static_assert(tool<agent_tool<any_agent>>);
static_assert(tool<agent_tool<agent_ref>>);

} // namespace libretto

#endif
