// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_CONTEXT_CALLBACK_CONTEXT_HPP
#define LIBRETTO_CONTEXT_CALLBACK_CONTEXT_HPP

#include <libretto/context/readonly_context.hpp>
#include <libretto/event/event_actions.hpp>

#include <boost/json/value_from.hpp>

#include <type_traits>
#include <utility>

namespace libretto {

/// What callbacks (and tools) get: the invocation's state, writable, and their own
/// event_actions. Every state write is applied to the shared state at once *and*
/// recorded in actions().state_delta, so it is persisted with the next event the agent
/// emits (the agent merges take_actions() into it). orxhestra drops these actions; here
/// they are what the agent applies.
class callback_context : public readonly_context {
public:
    /// Writes through to the state and the delta.
    class state_ref {
    public:
        class proxy {
        public:
            proxy& operator=(json::value v) {
                state_ref(ctx_, delta_).set(key_, std::move(v));
                return *this;
            }
            /// Anything boost::json::value_from accepts (std::string, containers, described
            /// structs): `ctx.state()["city"] = args.city;` reads as it should.
            template <class T>
                requires(!std::is_convertible_v<T &&, json::value> &&
                         requires(T&& t) { boost::json::value_from(std::forward<T>(t)); })
            proxy& operator=(T&& v) {
                return *this = boost::json::value_from(std::forward<T>(v));
            }
            const json::value* get() const noexcept { return ctx_->state().find(key_); }
            operator const json::value&() const {
                static const json::value null;
                auto p = get();
                return p ? *p : null;
            }

        private:
            friend class state_ref;
            // Holds the state_ref's pointers, not the state_ref: `auto p = cb.state()["k"]`
            // outlives the temporary state_ref.
            proxy(const state_ref& o, std::string_view k) : ctx_(o.ctx_), delta_(o.delta_), key_(k) {}
            invocation_context* ctx_;
            json::object* delta_;
            std::string key_;
        };

        /// Sets `key` (null erases) in the state and records it in the delta.
        void set(std::string_view key, json::value v) {
            ctx_->state().set(key, v);
            (*delta_)[key] = std::move(v);
        }
        void erase(std::string_view key) { set(key, nullptr); }
        const json::value* find(std::string_view key) const noexcept { return ctx_->state().find(key); }
        bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
        const json::object& values() const noexcept { return ctx_->state().values(); }
        proxy operator[](std::string_view key) { return proxy(*this, key); }

    private:
        friend class callback_context;
        state_ref(invocation_context* c, json::object* d) : ctx_(c), delta_(d) {}
        invocation_context* ctx_;
        json::object* delta_;
    };

    explicit callback_context(invocation_context& ctx) : readonly_context(ctx), ctx_(&ctx) {}

    /// The state, writable; writes are recorded in actions().state_delta.
    state_ref state() noexcept { return state_ref(ctx_, &actions_.state_delta); }
    /// The state, read-only.
    const libretto::state& state() const noexcept { return ctx_->state(); }

    /// Actions to apply with the next event (transfer, escalate, skip_summarization, ...).
    event_actions& actions() noexcept { return actions_; }
    const event_actions& actions() const noexcept { return actions_; }

    /// Hands the recorded actions over (to be merged into an event) and resets them.
    event_actions take_actions() noexcept { return actions_.take(); }

    /// The underlying context, writable.
    invocation_context& context() noexcept { return *ctx_; }

private:
    invocation_context* ctx_;
    event_actions actions_;
};

} // namespace libretto

#endif
