// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_RESUME_PLAN_HPP
#define LIBRETTO_RUNNER_DETAIL_RESUME_PLAN_HPP

// runner::resume(): which paused invocation the tool responses answer (find_resume_target,
// with an error naming the call that does not fit) and which agent runs again in it, with
// the agent states the invocation recorded (plan_resume). Pure functions of the session.

#include <libretto/agent/agent.hpp>
#include <libretto/compaction/obligations.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/rewinds.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/session/session.hpp>

#include <boost/json/object.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace libretto::detail {

/// resume(): the invocation a tool response answers, its agent and branch.
struct resume_target {
    std::string invocation_id;
    std::string author;
    std::string branch;
};

inline resume_target find_resume_target(const session& s, const content& responses,
                                        const std::string& invocation_id, const session_key& key) {
    resume_target target;
    bool any = false;
    for (const auto& p : responses.parts) {
        const auto* r = std::get_if<tool_response_part>(&p);
        if (!r) continue;
        if (r->tool_call_id.empty())
            throw_turn_error(errc::invalid_argument, "resume: a tool response has no tool_call_id");
        const event* call = nullptr;
        const tool_call_part* call_part = nullptr;
        for (auto it = s.events.rbegin(); it != s.events.rend() && !call; ++it) {
            if (it->partial) continue;
            if (it->type == event_type::tool_response) {
                for (const auto& done : it->tool_responses())
                    if (done.tool_call_id == r->tool_call_id && !is_intermediate_response(done))
                        throw_turn_error(errc::already_exists, "resume: tool call '" + r->tool_call_id +
                                                                   "' in " + session_name(key) +
                                                                   " already has a response");
                continue;
            }
            for (const auto& c : it->tool_calls())
                if (c.tool_call_id == r->tool_call_id) call = &*it, call_part = &c;
        }
        if (!call)
            throw_turn_error(errc::not_found, "resume: no tool call '" + r->tool_call_id + "' in " + session_name(key) +
                                                  " (searched the events a turn loads: those no compaction covers)");
        // A response under another tool's name would be stored as a pair no model accepts.
        if (!r->tool_name.empty() && r->tool_name != call_part->tool_name)
            throw_turn_error(errc::invalid_argument, "resume: the response to tool call '" + r->tool_call_id +
                                                         "' names tool '" + r->tool_name + "', but the call was to '" +
                                                         call_part->tool_name + "'");
        if (!any) {
            target = {call->invocation_id, call->author, call->branch};
            any = true;
        } else if (call->invocation_id != target.invocation_id) {
            throw_turn_error(errc::invalid_argument, "resume: the tool responses answer calls of different invocations");
        }
    }
    if (!any) throw_turn_error(errc::invalid_argument, "resume: the content has no tool_response part");
    // A call a rewind undid is no longer waiting for its answer.
    const auto undone = undone_ranges(s.events);
    for (const auto& r : undone)
        for (std::size_t i = r.first; i < r.last; ++i)
            if (s.events[i].invocation_id == target.invocation_id)
                throw_turn_error(errc::invalid_argument, "resume: invocation '" + target.invocation_id + "' of " +
                                                             session_name(key) + " was undone by the rewind at sequence " +
                                                             std::to_string(s.events[r.last].sequence));
    if (!invocation_id.empty() && invocation_id != target.invocation_id)
        throw_turn_error(errc::invalid_argument, "resume: run_options.invocation_id '" + invocation_id +
                                                     "' is not the invocation of the answered call ('" +
                                                     target.invocation_id + "')");
    return target;
}

/// The agents from `root` down to the agent called `name` (both included); empty if absent.
inline bool path_to(agent_ref from, std::string_view name, std::vector<agent_ref>& path) {
    path.push_back(from);
    if (from.name() == name) return true;
    for (const auto& child : from.sub_agents())
        if (path_to(child, name, path)) return true;
    path.pop_back();
    return false;
}

/// resume(): the agent to run again, its branch, and the agent states the invocation
/// recorded (ADK's populate_invocation_agent_states). The agent is the top-most ancestor
/// of the call's author that recorded a checkpoint in the invocation (a composite then
/// continues where it paused: its recorded state says which child), else the author.
struct resume_plan {
    agent_ref agent;
    std::string branch;
    struct recorded_state {
        std::string agent;
        std::optional<json::object> state;
        bool end_of_agent = false;
    };
    std::vector<recorded_state> states;
};

inline resume_plan plan_resume(agent_ref root, const session& s, const resume_target& target) {
    resume_plan plan{root, target.branch, {}};
    std::vector<std::pair<std::string, std::string>> checkpointed; // agent, branch
    for (const auto& e : s.events) {
        if (e.invocation_id != target.invocation_id || e.partial) continue;
        if (e.actions.end_of_agent.value_or(false)) {
            plan.states.push_back({e.author, std::nullopt, true});
        } else if (e.type == event_type::agent_start) {
            auto it = e.metadata.find("agent_state");
            if (it != e.metadata.end() && it->value().is_object()) {
                plan.states.push_back({e.author, it->value().get_object(), false});
                checkpointed.emplace_back(e.author, e.branch);
            }
        }
    }
    std::vector<agent_ref> path;
    if (!path_to(root, target.author, path)) return plan; // author not in the tree: the root
    plan.agent = path.back();
    for (const auto& a : path) {
        auto it = std::find_if(checkpointed.begin(), checkpointed.end(),
                               [&](const auto& c) { return c.first == a.name(); });
        if (it != checkpointed.end()) {
            plan.agent = a;
            plan.branch = it->second;
            break;
        }
    }
    return plan;
}

} // namespace libretto::detail

#endif
