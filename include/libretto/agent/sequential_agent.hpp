// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_SEQUENTIAL_AGENT_HPP
#define LIBRETTO_AGENT_SEQUENTIAL_AGENT_HPP

// sequential_agent: runs its children one after the other in the same invocation and
// yields their events in order. Semantics in docs/composite_agents.md.
//
//   lb::sequential_agent pipeline{"pipeline", writer, reviewer};          // children by value
//   lb::sequential_agent<> dynamic{"pipeline", {lb::any_agent{w}, lb::any_agent{r}}};  // run-time list
//   lb::sequential_agent p2{{.name = "pipeline", .description = "…"}, writer, reviewer};
//
// Children run on ctx.for_agent(child): the sequence's own branch (ADK), so each child
// sees what the earlier ones said. Escalate does not stop a sequence (ADK, orxhestra);
// an enclosing loop_agent stops it. Stops before the next child once the invocation has
// ended or a child's event asks to pause (resumable invocations); records
// {"current_sub_agent": name} so a resumed invocation continues at that child.

#include <libretto/agent/agent.hpp>
#include <libretto/agent/detail/composite_common.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Name and description of a sequential_agent.
struct sequential_options {
    std::string name{};
    std::string description{};
};

namespace detail {

template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> run_sequence(std::string_view name, std::vector<agent_ref> children,
                                          invocation_context ctx, event_writer out) {
    if (children.empty()) co_return;
    const bool resumable = ctx.is_resumable();
    std::size_t start = 0;
    bool resuming = false;
    if (resumable) {
        if (ctx.is_end_of_agent(name)) co_return; // finished before the pause
        std::optional<std::string> current = state_string(ctx, name, "current_sub_agent");
        if (current) {
            if (std::optional<std::size_t> i = index_of(children, *current)) {
                start = *i;
                resuming = true;
            }
        }
    }
    for (std::size_t i = start; i < children.size(); ++i) {
        if (ctx.is_invocation_ended()) co_return;
        co_await throw_if_cancelled();
        const agent_ref child = children[i];
        if (resumable && !resuming) {
            // The resumed child's checkpoint is already in the session: not again.
            json::object st;
            st["current_sub_agent"] = child.name();
            co_await emit_checkpoint(ctx, name, std::move(st), out);
        }
        resuming = false;
        event_stream s = child.run(ctx.for_agent(std::string(child.name())));
        forward_result r = co_await forward(s, ctx, out, false);
        if (r.paused) co_return; // no end-of-agent: a resume continues at this child
    }
    if (ctx.is_invocation_ended()) co_return;
    if (resumable) co_await emit_end_of_agent(ctx, name, out);
}

template <class = void>
struct sequence_producer {
    std::string_view name;
    std::vector<agent_ref> children;
    invocation_context ctx;
    boost::asio::awaitable<void> operator()(event_writer out) {
        return run_sequence(name, std::move(children), std::move(ctx), std::move(out));
    }
};

} // namespace detail

/// Runs `Children...` (held by value) in order; `sequential_agent<>` holds a run-time
/// std::vector<any_agent> instead. Construction throws system_error(errc::invalid_argument)
/// if a name in the tree is empty, contains a dot or is used twice.
template <agent... Children>
class sequential_agent {
public:
    using options_type = sequential_options;

    sequential_agent(sequential_options o, Children... children)
        : opts_(std::move(o)), children_(std::move(children)...) {
        detail::validate_tree(*this);
    }
    template <class Name>
        requires std::constructible_from<std::string, Name>
    sequential_agent(Name&& name, Children... children)
        : sequential_agent(sequential_options{std::string(std::forward<Name>(name)), {}}, std::move(children)...) {}

    /// Run-time list (`sequential_agent<>` only).
    sequential_agent(sequential_options o, std::vector<any_agent> children)
        requires(sizeof...(Children) == 0)
        : opts_(std::move(o)), children_(std::move(children)) {
        detail::validate_tree(*this);
    }
    template <class Name>
        requires(sizeof...(Children) == 0 && std::constructible_from<std::string, Name>)
    sequential_agent(Name&& name, std::vector<any_agent> children)
        : sequential_agent(sequential_options{std::string(std::forward<Name>(name)), {}}, std::move(children)) {}

    const std::string& name() const noexcept { return opts_.name; }
    const std::string& description() const noexcept { return opts_.description; }
    std::vector<agent_ref> sub_agents() const { return children_.refs(); }
    const sequential_options& options() const noexcept { return opts_; }
    /// The children: a std::tuple<Children...>, or the std::vector<any_agent>.
    const auto& children() const noexcept { return children_.get(); }

    /// Lazy: nothing runs until the stream's first next(). Throws errc::invalid_argument
    /// if `ctx` has no executor.
    event_stream run(invocation_context ctx) const {
        boost::asio::any_io_executor ex = detail::composite_executor(ctx, opts_.name);
        return event_stream(std::move(ex), detail::sequence_producer<>{opts_.name, sub_agents(), std::move(ctx)},
                            detail::rendezvous);
    }

private:
    sequential_options opts_;
    detail::child_list<Children...> children_;
};

template <class Name, agent... C>
    requires std::constructible_from<std::string, Name>
sequential_agent(Name&&, C...) -> sequential_agent<C...>;
template <agent... C>
sequential_agent(sequential_options, C...) -> sequential_agent<C...>;
template <class Name>
    requires std::constructible_from<std::string, Name>
sequential_agent(Name&&, std::vector<any_agent>) -> sequential_agent<>;
sequential_agent(sequential_options, std::vector<any_agent>) -> sequential_agent<>;

static_assert(agent<sequential_agent<>>);

} // namespace libretto

#endif
