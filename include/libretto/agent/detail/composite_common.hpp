// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_DETAIL_COMPOSITE_COMMON_HPP
#define LIBRETTO_AGENT_DETAIL_COMPOSITE_COMMON_HPP

// What sequential_agent, parallel_agent and loop_agent share: the children (a std::tuple
// for compile-time composition, a std::vector<any_agent> for run-time lists), the
// construction checks, the resumability events, forwarding a child's stream, and the
// branch visibility rule (public: the llm_agent's context builder applies it).

#include <libretto/event/branch.hpp>
#include <libretto/agent/agent.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/system_error.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

namespace detail {

/// The view a composite hands out for a child: an any_agent child is viewed through to
/// the agent it holds (so agent_ref::target<> and find_agent see the real type).
template <class C>
agent_ref child_ref(const C& c) noexcept {
    if constexpr (std::is_same_v<C, any_agent>) return c.ref();
    else return agent_ref(c);
}

/// Compile-time children: held by value in a tuple.
template <class... Children>
class child_list {
public:
    explicit child_list(Children... c) : children_(std::move(c)...) {}

    std::vector<agent_ref> refs() const {
        return std::apply([](const auto&... c) { return std::vector<agent_ref>{child_ref(c)...}; }, children_);
    }
    const std::tuple<Children...>& get() const noexcept { return children_; }
    static constexpr std::size_t size() noexcept { return sizeof...(Children); }

private:
    std::tuple<Children...> children_;
};

/// Run-time children: a list of shared handles.
template <>
class child_list<> {
public:
    child_list() = default;
    explicit child_list(std::vector<any_agent> c) : children_(std::move(c)) {}

    std::vector<agent_ref> refs() const {
        std::vector<agent_ref> v;
        v.reserve(children_.size());
        for (const auto& c : children_) v.push_back(c.ref());
        return v;
    }
    const std::vector<any_agent>& get() const noexcept { return children_; }
    std::size_t size() const noexcept { return children_.size(); }

private:
    std::vector<any_agent> children_;
};

[[noreturn]] inline void throw_invalid(const std::string& what) {
    throw boost::system::system_error(make_error_code(errc::invalid_argument), what);
}

/// Construction checks of a composite `self`: every name in its tree is non-empty, has no
/// dot (branches are dot paths) and is used once (transfer and resume find agents by name).
inline void validate_tree(agent_ref self) {
    auto check = [](auto& rec, agent_ref a) -> void {
        std::string_view n = a.name();
        if (n.empty()) throw_invalid("agent names must not be empty");
        if (n.find('.') != std::string_view::npos)
            throw_invalid("agent name '" + std::string(n) + "' contains a dot (branches are dot-separated paths)");
        for (const auto& c : a.sub_agents()) rec(rec, c);
    };
    check(check, self);
    std::vector<std::string> dup = duplicate_agent_names(self);
    if (!dup.empty()) {
        std::string msg = "duplicate agent name";
        msg += dup.size() > 1 ? "s" : "";
        msg += " in the tree of '" + std::string(self.name()) + "':";
        for (const auto& d : dup) msg += " '" + d + "'";
        throw_invalid(msg);
    }
}

/// The executor a composite's stream runs on; a context without one is a usage error.
inline boost::asio::any_io_executor composite_executor(const invocation_context& ctx, std::string_view name) {
    if (!ctx.get_executor())
        throw_invalid("agent '" + std::string(name) + "': the invocation_context has no executor");
    return ctx.get_executor();
}

/// Metadata key of a checkpoint event's agent state (event_actions has no agent_state yet).
inline constexpr std::string_view agent_state_key = "agent_state";

/// ADK's agent-state event: authored by the composite, on its branch, no content.
/// A checkpoint (`agent_start`, metadata.agent_state = state) or the end of the agent
/// (`agent_end`, actions.end_of_agent = true).
inline event make_state_event(const invocation_context& ctx, std::string_view author,
                              const json::object* state, bool end_of_agent) {
    event e = event::make(end_of_agent ? event_type::agent_end : event_type::agent_start, std::string(author));
    e.invocation_id = ctx.invocation_id();
    e.session_id = ctx.session_id();
    e.branch = ctx.branch();
    if (end_of_agent) e.actions.end_of_agent = true;
    if (state) e.metadata[agent_state_key] = *state;
    return e;
}

/// Records `state` as `name`'s checkpoint and emits the checkpoint event.
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> emit_checkpoint(invocation_context& ctx, std::string_view name,
                                             json::object state, event_writer& out) {
    event e = make_state_event(ctx, name, &state, false);
    ctx.set_agent_state(name, std::move(state));
    co_await out.emit(std::move(e));
}

/// Marks `name` finished and emits the end-of-agent event.
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> emit_end_of_agent(invocation_context& ctx, std::string_view name,
                                               event_writer& out) {
    ctx.set_agent_state(name, std::nullopt, true);
    event e = make_state_event(ctx, name, nullptr, true);
    co_await out.emit(std::move(e));
}

/// The string member `key` of `name`'s stored state, if any.
inline std::optional<std::string> state_string(const invocation_context& ctx, std::string_view name,
                                               std::string_view key) {
    const json::object* st = ctx.agent_state(name);
    if (!st) return std::nullopt;
    auto it = st->find(key);
    if (it == st->end() || !it->value().is_string()) return std::nullopt;
    return std::string(it->value().get_string());
}

/// Index of the child called `name`, or nullopt.
inline std::optional<std::size_t> index_of(const std::vector<agent_ref>& children, std::string_view name) {
    for (std::size_t i = 0; i < children.size(); ++i)
        if (children[i].name() == name) return i;
    return std::nullopt;
}

/// Throws errc::cancelled if the running coroutine has been cancelled (checked between
/// children, so a loop whose children end at once still notices a cancelled consumer).
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> throw_if_cancelled() {
    boost::asio::cancellation_state cs = co_await boost::asio::this_coro::cancellation_state;
    if (cs.cancelled() != boost::asio::cancellation_type::none)
        throw boost::system::system_error(make_error_code(errc::cancelled));
}

/// Clears the states of every agent below `node` (what reset_sub_agent_states does from
/// the invocation's agent tree, here from the composite's own children).
inline void reset_states_below(invocation_context& ctx, agent_ref node) {
    for (const auto& c : node.sub_agents()) {
        ctx.set_agent_state(c.name());
        reset_states_below(ctx, c);
    }
}

/// What forwarding a child's events observed.
struct forward_result {
    bool escalated = false; ///< an event with actions.escalate (forwarding stopped there if asked)
    bool paused = false;    ///< ctx.should_pause_invocation held for some event
    std::size_t events = 0; ///< events forwarded
};

/// The metadata key a loop sets on the escalating event it ended on (its name): the
/// escalation is spent, so the loops around it do not end on it too.
inline constexpr std::string_view loop_escalation_key = "escalation_ended_loop";

/// Moves every event of `child` to `out`, in order. With `stop_at_escalate` (a loop), the
/// first escalating event no inner loop ended on ends it: `child` is cancelled *before*
/// that event is forwarded, so a child that waits for its consumer (a sequence, a loop:
/// rendezvous streams) cannot start anything after the escalating event; the event is
/// forwarded marked with loop_escalation_key = `loop_name`.
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<forward_result> forward(event_stream& child, const invocation_context& ctx,
                                               event_writer& out, bool stop_at_escalate,
                                               std::string_view loop_name = {}) {
    forward_result r;
    for (;;) {
        boost::asio::awaitable<std::optional<event>> next = child.next();
        std::optional<event> e = co_await std::move(next);
        if (!e) break;
        const bool esc = e->actions.escalate.value_or(false) && !e->metadata.contains(loop_escalation_key);
        if (ctx.should_pause_invocation(*e)) r.paused = true;
        if (esc) r.escalated = true;
        if (esc && stop_at_escalate) {
            child.cancel();
            e->metadata[loop_escalation_key] = loop_name;
        }
        co_await out.emit(std::move(*e));
        ++r.events;
        if (esc && stop_at_escalate) break;
    }
    co_return r;
}

/// Composites hand over one event at a time (capacity 0): their producer is never ahead
/// of the consumer, so nothing starts after an event the consumer acts on (an enclosing
/// loop cancels a sequence at its escalating event before its next child starts). The
/// buffering happens in the leaves' streams and in a parallel agent's merge.
inline constexpr stream_options rendezvous{.capacity = 0};

} // namespace detail
} // namespace libretto

#endif
