// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_PARALLEL_AGENT_HPP
#define LIBRETTO_AGENT_PARALLEL_AGENT_HPP

// parallel_agent: runs its children concurrently, each on its own branch, and yields
// their events as they arrive (merge(): per-child order kept, back-pressure, the first
// failure cancels the other children and is rethrown). Semantics in
// docs/composite_agents.md.
//
//   lb::parallel_agent research{"research", researcher_a, researcher_b};
//   lb::parallel_agent<> dynamic{"research", {lb::any_agent{a}, lb::any_agent{b}}};
//
// Child `c` of parallel agent `p` runs on ctx.derive(c, "p.c"): branch "<branch>.p.c",
// or "p.c" at the top (ADK). Siblings share state and the history before the fork, and
// must not see each other's events: the context builder keeps an event only if
// is_branch_visible(event.branch, ctx.branch()). An escalate in one child does not stop
// its siblings (ADK Python); an enclosing loop_agent stops the whole parallel agent.

#include <libretto/agent/agent.hpp>
#include <libretto/agent/detail/composite_common.hpp>
#include <libretto/stream/merge.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <concepts>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Name and description of a parallel_agent.
struct parallel_options {
    std::string name{};
    std::string description{};
};

namespace detail {

/// Resumable invocations only: one child's events, then (if it finished without pausing
/// and did not say so itself) its end-of-agent event, so a resume skips it.
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> run_tracked_child(agent_ref child, invocation_context ctx, event_writer out) {
    event_stream s = child.run(ctx);
    forward_result r = co_await forward(s, ctx, out, false);
    if (r.paused || ctx.is_invocation_ended() || ctx.is_end_of_agent(child.name())) co_return;
    co_await emit_end_of_agent(ctx, child.name(), out);
}

template <class = void>
struct tracked_child_producer {
    agent_ref child;
    invocation_context ctx;
    boost::asio::awaitable<void> operator()(event_writer out) {
        return run_tracked_child(child, std::move(ctx), std::move(out));
    }
};

template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> run_parallel(std::string_view name, std::vector<agent_ref> children,
                                          invocation_context ctx, event_writer out) {
    if (children.empty()) co_return;
    const bool resumable = ctx.is_resumable();
    if (resumable) {
        if (ctx.is_end_of_agent(name)) co_return;
        if (!ctx.agent_state(name)) {
            json::object started;
            co_await emit_checkpoint(ctx, name, std::move(started), out);
        }
    }
    if (ctx.is_invocation_ended()) co_return;
    const boost::asio::any_io_executor ex = ctx.get_executor();
    std::vector<event_stream> streams;
    streams.reserve(children.size());
    for (const agent_ref& c : children) {
        if (resumable && ctx.is_end_of_agent(c.name())) continue; // finished before the pause
        std::string child_name(c.name());
        std::string suffix = std::string(name) + "." + child_name;
        invocation_context cctx = ctx.derive(std::move(child_name), suffix);
        if (resumable) streams.emplace_back(ex, tracked_child_producer<>{c, std::move(cctx)});
        else streams.push_back(c.run(std::move(cctx)));
    }
    bool paused = false;
    if (!streams.empty()) {
        event_stream merged = merge(ex, std::move(streams));
        forward_result r = co_await forward(merged, ctx, out, false);
        paused = r.paused;
    }
    if (paused || ctx.is_invocation_ended()) co_return;
    if (resumable) co_await emit_end_of_agent(ctx, name, out);
}

template <class = void>
struct parallel_producer {
    std::string_view name;
    std::vector<agent_ref> children;
    invocation_context ctx;
    boost::asio::awaitable<void> operator()(event_writer out) {
        return run_parallel(name, std::move(children), std::move(ctx), std::move(out));
    }
};

} // namespace detail

/// Runs `Children...` (held by value) concurrently; `parallel_agent<>` holds a run-time
/// std::vector<any_agent> instead. Construction throws system_error(errc::invalid_argument)
/// if a name in the tree is empty, contains a dot or is used twice.
template <agent... Children>
class parallel_agent {
public:
    using options_type = parallel_options;

    parallel_agent(parallel_options o, Children... children)
        : opts_(std::move(o)), children_(std::move(children)...) {
        detail::validate_tree(*this);
    }
    template <class Name>
        requires std::constructible_from<std::string, Name>
    parallel_agent(Name&& name, Children... children)
        : parallel_agent(parallel_options{std::string(std::forward<Name>(name)), {}}, std::move(children)...) {}

    /// Run-time list (`parallel_agent<>` only).
    parallel_agent(parallel_options o, std::vector<any_agent> children)
        requires(sizeof...(Children) == 0)
        : opts_(std::move(o)), children_(std::move(children)) {
        detail::validate_tree(*this);
    }
    template <class Name>
        requires(sizeof...(Children) == 0 && std::constructible_from<std::string, Name>)
    parallel_agent(Name&& name, std::vector<any_agent> children)
        : parallel_agent(parallel_options{std::string(std::forward<Name>(name)), {}}, std::move(children)) {}

    const std::string& name() const noexcept { return opts_.name; }
    const std::string& description() const noexcept { return opts_.description; }
    std::vector<agent_ref> sub_agents() const { return children_.refs(); }
    const parallel_options& options() const noexcept { return opts_; }
    /// The children: a std::tuple<Children...>, or the std::vector<any_agent>.
    const auto& children() const noexcept { return children_.get(); }

    /// Lazy: nothing runs until the stream's first next(). Throws errc::invalid_argument
    /// if `ctx` has no executor.
    event_stream run(invocation_context ctx) const {
        boost::asio::any_io_executor ex = detail::composite_executor(ctx, opts_.name);
        return event_stream(std::move(ex), detail::parallel_producer<>{opts_.name, sub_agents(), std::move(ctx)},
                            detail::rendezvous);
    }

private:
    parallel_options opts_;
    detail::child_list<Children...> children_;
};

template <class Name, agent... C>
    requires std::constructible_from<std::string, Name>
parallel_agent(Name&&, C...) -> parallel_agent<C...>;
template <agent... C>
parallel_agent(parallel_options, C...) -> parallel_agent<C...>;
template <class Name>
    requires std::constructible_from<std::string, Name>
parallel_agent(Name&&, std::vector<any_agent>) -> parallel_agent<>;
parallel_agent(parallel_options, std::vector<any_agent>) -> parallel_agent<>;

static_assert(agent<parallel_agent<>>);

} // namespace libretto

#endif
