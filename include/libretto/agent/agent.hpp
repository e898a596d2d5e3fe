// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_AGENT_HPP
#define LIBRETTO_AGENT_AGENT_HPP

// The agent concept, and the two type-erased forms of an agent:
//
//   agent_ref   a non-owning view (a pointer and a table of functions): what a composite
//               agent hands out for its children, what transfer_to_agent finds by name.
//               Valid while the agent it views lives. Copying it allocates nothing.
//   any_agent   an owning, copyable handle (shared, immutable): run-time lists of children
//               (`sequential_agent` over std::vector<any_agent>), agents chosen from config.
//
// A moved-from any_agent is empty (operator bool is false), and so is its ref(): name() and
// description() are "", sub_agents() is {}, run() returns a stream whose first next()
// throws system_error (asio::error::not_connected, "any_agent: empty (moved-from)"). The
// move leaves no view of the agent behind in the source.
//
// Valid expressions, for an agent type A, `const A a`, `invocation_context ctx`:
//
//   a.name()        -> convertible to std::string_view   unique within a tree
//   a.description() -> convertible to std::string_view   what a parent's model is told
//   a.run(ctx)      -> event_stream                       lazy: nothing runs until next()
//   a.sub_agents()  -> std::vector<agent_ref>             direct children ({} for a leaf)
//
// run() is const: one agent object may run in several invocations at once; per-run state
// lives in the stream's coroutine and in ctx (shared state, agent states). The agent must
// outlive the streams it returns. The events an agent yields carry its name as author,
// ctx.branch() and ctx.invocation_id().

#include <libretto/context/invocation_context.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <concepts>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

class agent_ref;

template <class A>
concept agent = requires(const A& a, invocation_context ctx) {
    { a.name() } -> std::convertible_to<std::string_view>;
    { a.description() } -> std::convertible_to<std::string_view>;
    { a.run(ctx) } -> std::same_as<event_stream>;
    { a.sub_agents() } -> std::same_as<std::vector<agent_ref>>;
};

/// A non-owning view of any agent.
class agent_ref {
public:
    template <agent A>
        requires(!std::is_same_v<std::remove_cvref_t<A>, agent_ref>)
    agent_ref(const A& a) noexcept : self_(&a), vt_(&table_for<A>) {}

    /// True if an agent is viewed (false for a moved-from any_agent's ref()).
    explicit operator bool() const noexcept { return self_ != nullptr; }

    std::string_view name() const { return vt_->name(self_); }
    std::string_view description() const { return vt_->description(self_); }
    event_stream run(invocation_context ctx) const { return vt_->run(self_, std::move(ctx)); }
    std::vector<agent_ref> sub_agents() const { return vt_->sub_agents(self_); }

    /// The viewed agent if it is an A, else nullptr.
    template <class A>
    const A* target() const noexcept {
        return vt_ == &table_for<A> ? static_cast<const A*>(self_) : nullptr;
    }

    /// Two refs are equal when they view the same object.
    friend bool operator==(const agent_ref& a, const agent_ref& b) noexcept { return a.self_ == b.self_; }

private:
    friend class any_agent;
    agent_ref() noexcept : self_(nullptr), vt_(&empty_table) {} // empty: a moved-from any_agent's

    struct table {
        std::string_view (*name)(const void*);
        std::string_view (*description)(const void*);
        event_stream (*run)(const void*, invocation_context);
        std::vector<agent_ref> (*sub_agents)(const void*);
    };

    // What an empty ref does: a table, so no call needs a null check. (Functions, not
    // lambdas: their bodies need agent_ref complete.)
    static std::string_view empty_text(const void*) { return {}; }
    static event_stream empty_run(const void*, invocation_context c) {
        return detail::stream_access::make_failed<event>(
            c.get_executor(), std::make_exception_ptr(boost::system::system_error(
                                  make_error_code(boost::asio::error::not_connected), "any_agent: empty (moved-from)")));
    }
    static std::vector<agent_ref> empty_children(const void*) { return {}; }
    static constexpr table empty_table{&empty_text, &empty_text, &empty_run, &empty_children};

    template <class A>
    static constexpr table table_for{
        [](const void* p) -> std::string_view { return static_cast<const A*>(p)->name(); },
        [](const void* p) -> std::string_view { return static_cast<const A*>(p)->description(); },
        [](const void* p, invocation_context c) { return static_cast<const A*>(p)->run(std::move(c)); },
        [](const void* p) { return static_cast<const A*>(p)->sub_agents(); },
    };

    const void* self_;
    const table* vt_;
};

static_assert(agent<agent_ref>);

/// An owning, copyable agent handle; copies share one immutable agent.
class any_agent {
public:
    template <agent A>
        requires(!std::is_same_v<std::remove_cvref_t<A>, any_agent> && !std::is_same_v<std::remove_cvref_t<A>, agent_ref>)
    any_agent(A a) : self_(std::make_shared<const A>(std::move(a))), ref_(*static_cast<const A*>(self_.get())) {}

    any_agent(const any_agent&) = default;
    any_agent& operator=(const any_agent&) = default;
    // Written out: a defaulted move would leave the source's ref_ viewing the agent it gave
    // away (a use-after-free once the destination dies).
    any_agent(any_agent&& o) noexcept : self_(std::move(o.self_)), ref_(std::exchange(o.ref_, agent_ref())) {}
    any_agent& operator=(any_agent&& o) noexcept {
        if (this != &o) {
            self_ = std::move(o.self_);
            ref_ = std::exchange(o.ref_, agent_ref());
        }
        return *this;
    }

    /// True if an agent is held (false when moved from).
    explicit operator bool() const noexcept { return self_ != nullptr; }

    std::string_view name() const { return ref_.name(); }
    std::string_view description() const { return ref_.description(); }
    event_stream run(invocation_context ctx) const { return ref_.run(std::move(ctx)); }
    std::vector<agent_ref> sub_agents() const { return ref_.sub_agents(); }

    /// A view of the held agent (valid while some copy of this handle lives); empty when
    /// this handle is.
    agent_ref ref() const noexcept { return ref_; }
    template <class A>
    const A* target() const noexcept {
        return ref_.target<A>();
    }

private:
    std::shared_ptr<const void> self_;
    agent_ref ref_;
};

static_assert(agent<any_agent>);

/// Depth-first search of `root`'s tree (root included) for an agent called `name`.
inline std::optional<agent_ref> find_agent(agent_ref root, std::string_view name) {
    if (root.name() == name) return root;
    for (const auto& child : root.sub_agents())
        if (auto found = find_agent(child, name)) return found;
    return std::nullopt;
}

/// The tree's shape by name, for invocation_options::agent_tree.
inline agent_node make_agent_tree(agent_ref root) {
    agent_node n;
    n.name = std::string(root.name());
    for (const auto& child : root.sub_agents()) n.sub_agents.push_back(make_agent_tree(child));
    return n;
}

/// An agent_launcher that finds agents in `root`'s tree (which must outlive it).
inline agent_launcher agent_launcher_for(agent_ref root) {
    return [root](std::string_view name, invocation_context ctx) -> std::optional<event_stream> {
        auto found = find_agent(root, name);
        if (!found) return std::nullopt;
        return found->run(std::move(ctx));
    };
}

/// Names used twice in `root`'s tree (transfer by name needs them unique); empty if none.
inline std::vector<std::string> duplicate_agent_names(agent_ref root) {
    std::vector<std::string> seen, dup;
    auto walk = [&](auto& self, agent_ref a) -> void {
        std::string n(a.name());
        if (std::find(seen.begin(), seen.end(), n) != seen.end()) {
            if (std::find(dup.begin(), dup.end(), n) == dup.end()) dup.push_back(n);
        } else {
            seen.push_back(std::move(n));
        }
        for (const auto& c : a.sub_agents()) self(self, c);
    };
    walk(walk, root);
    return dup;
}

} // namespace libretto

#endif
