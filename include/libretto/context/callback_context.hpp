// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_CONTEXT_CALLBACK_CONTEXT_HPP
#define LIBRETTO_CONTEXT_CALLBACK_CONTEXT_HPP

#include <libretto/context/readonly_context.hpp>
#include <libretto/event/event_actions.hpp>
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/store/any_memory_service.hpp>

#include <boost/asio/bind_executor.hpp>

#include <boost/json/value_from.hpp>

#include <type_traits>
#include <utility>

namespace libretto {

namespace detail {
/// Wraps a load's handler: the empty version a rewind saved for an artifact that did not
/// exist then (is_absent_artifact) reaches the caller as "no such artifact".
template <class Handler>
auto absent_as_missing(Handler h) {
    return [h = std::move(h)](boost::system::error_code ec, std::optional<artifact> a) mutable {
        if (a && is_absent_artifact(a->info)) a.reset();
        std::move(h)(ec, std::move(a));
    };
}
} // namespace detail

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

    // ---- artifacts (the invocation's artifact service; docs/artifacts.md) -------------
    // Named in this session (a "user:" name: the user's). The context must outlive each
    // operation; without a service they fail with errc::invalid_argument.

    /// Saves a new version of `name`; on success records actions().artifact_delta[name] =
    /// version, so the event that carries these actions names what was saved.
    template <boost::asio::completion_token_for<artifact_save_signature> Token = default_completion_token_t>
    auto async_save_artifact(std::string name, std::string data, std::string mime_type, json::object metadata,
                             diagnostics& diag, Token&& token = {}) {
        return save_artifact_op(&diag, std::move(name), std::move(data), std::move(mime_type), std::move(metadata),
                                std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_save_signature> Token = default_completion_token_t>
    auto async_save_artifact(std::string name, std::string data, std::string mime_type, json::object metadata = {},
                             Token&& token = {}) {
        return save_artifact_op(nullptr, std::move(name), std::move(data), std::move(mime_type), std::move(metadata),
                                std::forward<Token>(token));
    }
    /// The latest (or the given) version of `name`; nullopt if there is none.
    template <boost::asio::completion_token_for<artifact_load_signature> Token = default_completion_token_t>
    auto async_load_artifact(std::string name, std::optional<std::int64_t> version, diagnostics& diag, Token&& token = {}) {
        return with_artifacts<artifact_load_signature>(&diag, std::forward<Token>(token),
                                                       [k = key_for(std::move(name)), version](any_artifact_service& a, diagnostics& d,
                                                                                               auto handler) mutable {
                                                           a.async_load(std::move(k), version, d, detail::absent_as_missing(std::move(handler)));
                                                       });
    }
    template <boost::asio::completion_token_for<artifact_load_signature> Token = default_completion_token_t>
    auto async_load_artifact(std::string name, std::optional<std::int64_t> version = {}, Token&& token = {}) {
        return with_artifacts<artifact_load_signature>(nullptr, std::forward<Token>(token),
                                                       [k = key_for(std::move(name)), version](any_artifact_service& a, diagnostics& d,
                                                                                               auto handler) mutable {
                                                           a.async_load(std::move(k), version, d, detail::absent_as_missing(std::move(handler)));
                                                       });
    }
    /// The names of this session's artifacts and the user's, sorted.
    template <boost::asio::completion_token_for<artifact_list_signature> Token = default_completion_token_t>
    auto async_list_artifacts(Token&& token = {}) {
        return with_artifacts<artifact_list_signature>(
            nullptr, std::forward<Token>(token),
            [app = ctx_->app_name(), user = ctx_->user_id(), session = ctx_->session_id()](any_artifact_service& a,
                                                                                          diagnostics& d, auto handler) mutable {
                a.async_list(std::move(app), std::move(user), std::move(session), d, std::move(handler));
            });
    }

    // ---- memory (the invocation's memory service; docs/memory.md) -----------------------

    /// Searches the memory of this user of this app for `text` (at most `limit` entries,
    /// best first); without a service, errc::invalid_argument.
    template <boost::asio::completion_token_for<memory_search_signature> Token = default_completion_token_t>
    auto async_search_memory(std::string text, std::size_t limit, diagnostics& diag, Token&& token = {}) {
        return search_memory_op(&diag, std::move(text), limit, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_search_signature> Token = default_completion_token_t>
    auto async_search_memory(std::string text, std::size_t limit = 10, Token&& token = {}) {
        return search_memory_op(nullptr, std::move(text), limit, std::forward<Token>(token));
    }

private:
    template <class Token>
    auto search_memory_op(diagnostics* diag, std::string text, std::size_t limit, Token&& token) {
        return detail::initiate_with_diagnostics<memory_search_signature>(
            diag, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, std::string text, std::size_t limit) {
                any_memory_service* m = ctx_->memory_service();
                auto own = std::make_shared<diagnostics>();
                diagnostics& words = d ? *d : *own;
                if (!m) {
                    words.assign("no memory service: give the runner one (runner_options::memory)");
                    detail::complete_with_error<memory_search_signature>(std::move(handler), ctx_->get_executor(),
                                                                         errc::invalid_argument);
                    return;
                }
                memory_query q;
                q.app_name = ctx_->app_name();
                q.user_id = ctx_->user_id();
                q.text = std::move(text);
                q.limit = limit;
                m->async_search(std::move(q), words,
                                [own, h = std::move(handler)](boost::system::error_code ec,
                                                              std::vector<memory_entry> found) mutable {
                                    std::move(h)(ec, std::move(found));
                                });
            },
            std::move(text), limit);
    }

    artifact_key key_for(std::string name) const {
        return artifact_key(ctx_->app_name(), ctx_->user_id(), ctx_->session_id(), std::move(name));
    }

    // Starts call(service, diag, handler) on the invocation's service; without one, fails
    // with invalid_argument. The words of a failure go to the caller's diagnostics (or to
    // one the operation owns).
    template <class Sig, class Token, class Call>
    auto with_artifacts(diagnostics* diag, Token&& token, Call call) {
        return detail::initiate_with_diagnostics<Sig>(
            diag, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, Call call) {
                any_artifact_service* a = ctx_->artifact_service();
                auto own = std::make_shared<diagnostics>();
                diagnostics& words = d ? *d : *own;
                if (!a) {
                    words.assign("no artifact service: give the runner one (runner_options::artifacts)");
                    detail::complete_with_error<Sig>(std::move(handler), ctx_->get_executor(), errc::invalid_argument);
                    return;
                }
                call(*a, words, [own, h = std::move(handler)](auto&&... args) mutable {
                    std::move(h)(std::forward<decltype(args)>(args)...);
                });
            },
            std::move(call));
    }

    template <class Token>
    auto save_artifact_op(diagnostics* diag, std::string name, std::string data, std::string mime, json::object md,
                          Token&& token) {
        return with_artifacts<artifact_save_signature>(
            diag, std::forward<Token>(token),
            [this, k = key_for(std::move(name)), data = std::move(data), mime = std::move(mime),
             md = std::move(md)](any_artifact_service& a, diagnostics& d, auto handler) mutable {
                auto ex = boost::asio::get_associated_executor(handler, ctx_->get_executor());
                a.async_save(std::move(k), std::move(data), std::move(mime), std::move(md), d,
                             boost::asio::bind_executor(ex, [this, h = std::move(handler)](boost::system::error_code ec,
                                                                                          artifact_info info) mutable {
                                 // On the handler's executor, before it runs: the delta is in
                                 // place when the tool resumes.
                                 if (!ec) actions_.artifact_delta[info.name] = info.version;
                                 std::move(h)(ec, std::move(info));
                             }));
            });
    }

    invocation_context* ctx_;
    event_actions actions_;
};

} // namespace libretto

#endif
