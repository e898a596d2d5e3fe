// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_LOOP_AGENT_HPP
#define LIBRETTO_AGENT_LOOP_AGENT_HPP

// loop_agent: runs its children in order, again and again, until a child's event
// escalates, max_iterations iterations have run (0: no limit), the invocation ends or a
// pause is requested. Semantics in docs/composite_agents.md.
//
//   lb::loop_agent refine{{.name = "refine", .max_iterations = 5}, critic, editor};
//   lb::loop_agent<> dynamic{{.name = "refine"}, {lb::any_agent{critic}, lb::any_agent{editor}}};
//
// Children run on ctx.for_agent(child): the loop's own branch, every iteration (ADK; the
// critic must see the editor's last draft). With branch_per_iteration, iteration i runs
// on ctx.derive(child, "<loop>.iter_<i>") instead: earlier iterations are hidden, the
// history before the loop is not. The escalating event is forwarded, then the
// escalating child's stream is dropped (cancelled) and the loop ends: nothing after it
// in that iteration runs. Sub-agent states are reset after every completed iteration.

#include <libretto/agent/agent.hpp>
#include <libretto/agent/detail/composite_common.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Options of a loop_agent.
struct loop_options {
    std::string name{};
    std::string description{};
    /// Iterations to run at most; 0: until a child escalates (or the invocation ends).
    std::size_t max_iterations = 0;
    /// Run iteration i's children on branch "<branch>.<name>.iter_<i>" (0-based), so that
    /// they do not see earlier iterations' events (is_branch_visible). Off by default: a
    /// critic/editor loop needs to see the last draft (ADK).
    bool branch_per_iteration = false;
};

namespace detail {

inline std::size_t state_count(const invocation_context& ctx, std::string_view name, std::string_view key) {
    const json::object* st = ctx.agent_state(name);
    if (!st) return 0;
    auto it = st->find(key);
    if (it == st->end()) return 0;
    if (const std::int64_t* i = it->value().if_int64()) return *i > 0 ? static_cast<std::size_t>(*i) : 0;
    if (const std::uint64_t* u = it->value().if_uint64()) return static_cast<std::size_t>(*u);
    return 0;
}

/// The context child `child` runs on in iteration `times` (see loop_options).
inline invocation_context iteration_context(const invocation_context& ctx, std::string_view name,
                                            std::string_view child, bool branch_per_iteration, std::size_t times) {
    if (!branch_per_iteration) return ctx.for_agent(std::string(child));
    // The loop's name keeps two loops on one branch apart (as parallel_agent's "<p>.<c>").
    std::string suffix = std::string(name) + ".iter_" + std::to_string(times);
    return ctx.derive(std::string(child), suffix);
}

template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> run_loop(std::string_view name, std::vector<agent_ref> children,
                                      std::size_t max_iterations, bool branch_per_iteration,
                                      invocation_context ctx, event_writer out) {
    if (children.empty()) co_return; // nothing to repeat (and no endless empty loop)
    const bool resumable = ctx.is_resumable();
    std::size_t times = 0;
    std::size_t start = 0;
    bool resuming = false;
    if (resumable) {
        if (ctx.is_end_of_agent(name)) co_return;
        std::optional<std::string> current = state_string(ctx, name, "current_sub_agent");
        if (current) {
            if (std::optional<std::size_t> i = index_of(children, *current)) {
                start = *i;
                times = state_count(ctx, name, "times_looped");
                resuming = true;
            }
        }
    }
    bool escalated = false;
    bool paused = false;
    const boost::asio::any_io_executor ex = ctx.get_executor();
    while (max_iterations == 0 || times < max_iterations) {
        std::size_t forwarded = 0;
        for (std::size_t i = start; i < children.size(); ++i) {
            if (ctx.is_invocation_ended()) co_return;
            co_await throw_if_cancelled();
            const agent_ref child = children[i];
            if (resumable && !resuming) {
                json::object st;
                st["current_sub_agent"] = child.name();
                st["times_looped"] = static_cast<std::int64_t>(times);
                co_await emit_checkpoint(ctx, name, std::move(st), out);
            }
            resuming = false;
            forward_result r;
            {
                // A resumed iteration gets its branch back: `times` comes from the checkpoint.
                event_stream s = child.run(iteration_context(ctx, name, child.name(), branch_per_iteration, times));
                r = co_await forward(s, ctx, out, true, name);
            } // an escalating child's stream is cancelled here
            forwarded += r.events;
            escalated = r.escalated;
            paused = r.paused;
            if (escalated || paused) break;
        }
        if (escalated || paused) break;
        // An iteration that yielded nothing may not have suspended at all: give the
        // executor a turn, so that a loop of silent children can still be cancelled.
        if (forwarded == 0) co_await boost::asio::post(ex, boost::asio::deferred); // deferred: no coroutine of its own
        start = 0;
        ++times;
        // Every child starts the next iteration afresh.
        if (!ctx.reset_sub_agent_states(name))
            for (const agent_ref& c : children) {
                ctx.set_agent_state(c.name());
                reset_states_below(ctx, c);
            }
    }
    if (paused || ctx.is_invocation_ended()) co_return;
    if (resumable) co_await emit_end_of_agent(ctx, name, out);
}

template <class = void>
struct loop_producer {
    std::string_view name;
    std::vector<agent_ref> children;
    std::size_t max_iterations;
    bool branch_per_iteration;
    invocation_context ctx;
    boost::asio::awaitable<void> operator()(event_writer out) {
        return run_loop(name, std::move(children), max_iterations, branch_per_iteration, std::move(ctx),
                        std::move(out));
    }
};

} // namespace detail

/// Repeats `Children...` (held by value) in order; `loop_agent<>` holds a run-time
/// std::vector<any_agent> instead. Construction throws system_error(errc::invalid_argument)
/// if a name in the tree is empty, contains a dot or is used twice.
template <agent... Children>
class loop_agent {
public:
    using options_type = loop_options;

    loop_agent(loop_options o, Children... children) : opts_(std::move(o)), children_(std::move(children)...) {
        detail::validate_tree(*this);
    }
    /// No iteration limit: runs until a child escalates.
    template <class Name>
        requires std::constructible_from<std::string, Name>
    loop_agent(Name&& name, Children... children)
        : loop_agent(loop_options{.name = std::string(std::forward<Name>(name))}, std::move(children)...) {}

    /// Run-time list (`loop_agent<>` only).
    loop_agent(loop_options o, std::vector<any_agent> children)
        requires(sizeof...(Children) == 0)
        : opts_(std::move(o)), children_(std::move(children)) {
        detail::validate_tree(*this);
    }
    template <class Name>
        requires(sizeof...(Children) == 0 && std::constructible_from<std::string, Name>)
    loop_agent(Name&& name, std::vector<any_agent> children)
        : loop_agent(loop_options{.name = std::string(std::forward<Name>(name))}, std::move(children)) {}

    const std::string& name() const noexcept { return opts_.name; }
    const std::string& description() const noexcept { return opts_.description; }
    std::vector<agent_ref> sub_agents() const { return children_.refs(); }
    const loop_options& options() const noexcept { return opts_; }
    std::size_t max_iterations() const noexcept { return opts_.max_iterations; }
    /// The children: a std::tuple<Children...>, or the std::vector<any_agent>.
    const auto& children() const noexcept { return children_.get(); }

    /// Lazy: nothing runs until the stream's first next(). Throws errc::invalid_argument
    /// if `ctx` has no executor.
    event_stream run(invocation_context ctx) const {
        boost::asio::any_io_executor ex = detail::composite_executor(ctx, opts_.name);
        return event_stream(std::move(ex),
                            detail::loop_producer<>{opts_.name, sub_agents(), opts_.max_iterations,
                                                  opts_.branch_per_iteration, std::move(ctx)},
                            detail::rendezvous);
    }

private:
    loop_options opts_;
    detail::child_list<Children...> children_;
};

template <class Name, agent... C>
    requires std::constructible_from<std::string, Name>
loop_agent(Name&&, C...) -> loop_agent<C...>;
template <agent... C>
loop_agent(loop_options, C...) -> loop_agent<C...>;
template <class Name>
    requires std::constructible_from<std::string, Name>
loop_agent(Name&&, std::vector<any_agent>) -> loop_agent<>;
loop_agent(loop_options, std::vector<any_agent>) -> loop_agent<>;

static_assert(agent<loop_agent<>>);

} // namespace libretto

#endif
