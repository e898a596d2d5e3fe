// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_TRANSFER_HPP
#define LIBRETTO_AGENT_TRANSFER_HPP

// Agent transfer (ADK's transfer_to_agent): which agents an llm_agent may hand the
// conversation to, and the per-invocation record of the hops made so far, which bounds
// transfer loops (A -> B -> A -> ...). See docs/agents.md, "Transfer".
//
// Targets, for an agent `self` (ADK's _get_transfer_targets):
//   - its sub-agents, always;
//   - its parent and the parent's other children (peers), unless disallowed, and only
//     when the parent is itself an agent that transfers: ADK checks that the parent is an
//     LlmAgent; here the parent must have transferred the conversation to `self` (in this
//     invocation, or in an earlier one of the session). A child of a sequential or
//     parallel agent therefore never offers its pipeline or its siblings.
// The parent and peers are found in ctx.agent_tree() (set by the runner).

#include <libretto/agent/agent.hpp>
#include <libretto/agent/detail/llm_loop.hpp>
#include <libretto/context/invocation_context.hpp>

#include <boost/json/array.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

/// The state key holding this invocation's transfer hops: a JSON array of
/// {"from": agent, "to": agent}. A temp: key: it lives in the invocation's state only and
/// is never persisted.
inline constexpr std::string_view transfer_hops_key = "temp:libretto.transfer_hops";

/// The transfers made so far in ctx's invocation.
inline std::size_t transfer_hop_count(const invocation_context& ctx) {
    const json::value* v = ctx.state().find(transfer_hops_key);
    return v && v->is_array() ? v->get_array().size() : 0;
}

/// Records a transfer from `from` to `to` in ctx's invocation.
inline void record_transfer_hop(invocation_context& ctx, std::string_view from, std::string_view to) {
    json::array hops;
    if (const json::value* v = ctx.state().find(transfer_hops_key); v && v->is_array()) hops = v->get_array();
    json::object hop;
    hop["from"] = from;
    hop["to"] = to;
    hops.emplace_back(std::move(hop));
    ctx.state().set(transfer_hops_key, std::move(hops));
}

namespace detail {

/// The from and to of a recorded hop; false for a value that is not {from, to} strings
/// (the key is temp: state any tool or callback can write: skipped, never thrown on).
inline bool read_hop(const json::value& h, std::string_view& from, std::string_view& to) noexcept {
    const json::object* o = h.if_object();
    const json::value* f = o ? o->if_contains("from") : nullptr;
    const json::value* t = o ? o->if_contains("to") : nullptr;
    if (!f || !t || !f->is_string() || !t->is_string()) return false;
    from = std::string_view(f->get_string().data(), f->get_string().size());
    to = std::string_view(t->get_string().data(), t->get_string().size());
    return true;
}

} // namespace detail

/// "A -> B -> A": the agents of this invocation's transfers, for messages.
inline std::string transfer_path(const invocation_context& ctx) {
    std::string out;
    const json::value* v = ctx.state().find(transfer_hops_key);
    if (!v || !v->is_array()) return out;
    for (const auto& h : v->get_array()) {
        std::string_view from, to;
        if (!detail::read_hop(h, from, to)) continue;
        if (out.empty()) out = std::string(from);
        out += " -> ";
        out += std::string(to);
    }
    return out;
}

namespace detail {

/// True if `parent` handed the conversation to `self` in this invocation or an earlier one.
inline bool was_transferred_by(const invocation_context& ctx, std::string_view parent, std::string_view self) {
    if (const json::value* v = ctx.state().find(transfer_hops_key); v && v->is_array()) {
        for (const auto& h : v->get_array()) {
            std::string_view from, to;
            if (read_hop(h, from, to) && from == parent && to == self) return true;
        }
    }
    for (const auto& e : ctx.session().events)
        if (e.author == parent && e.actions.transfer_to_agent && *e.actions.transfer_to_agent == self) return true;
    return false;
}

/// The parent of `name` in `root`'s tree, or nullptr.
inline const agent_node* parent_node(const agent_node& root, std::string_view name) {
    for (const auto& c : root.sub_agents) {
        if (c.name == name) return &root;
        if (const agent_node* p = parent_node(c, name)) return p;
    }
    return nullptr;
}

/// The agents `self` may transfer to (see the file comment), sub-agents first.
inline std::vector<transfer_target> transfer_targets(std::string_view self, const std::vector<agent_ref>& sub_agents,
                                                     const invocation_context& ctx, bool allow_parent,
                                                     bool allow_peers) {
    std::vector<transfer_target> out;
    for (const auto& s : sub_agents) out.push_back(transfer_target{std::string(s.name()), std::string(s.description())});
    const agent_node* tree = ctx.agent_tree();
    if (!tree || (!allow_parent && !allow_peers)) return out;
    const agent_node* parent = parent_node(*tree, self);
    if (!parent || !was_transferred_by(ctx, parent->name, self)) return out;
    if (allow_parent) out.push_back(transfer_target{parent->name, "the agent that handed you this conversation"});
    if (allow_peers) {
        for (const auto& peer : parent->sub_agents)
            if (peer.name != self) out.push_back(transfer_target{peer.name, {}});
    }
    return out;
}

} // namespace detail
} // namespace libretto

#endif
