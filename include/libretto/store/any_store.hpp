// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_ANY_STORE_HPP
#define LIBRETTO_STORE_ANY_STORE_HPP

// any_store: one concrete type for any session_store, for programs that choose the store
// at run time (a config file) and for compile-once builds. Copies share the store.
// Cost: one virtual call per operation, and the completion handler is type-erased with
// asio::any_completion_handler (one allocation per operation, not per event).
//
// Every promise of the wrapped store is kept: the end-of-turn flush (jsonl_store's per-turn
// fdatasync) and the all-or-nothing batch append are erased too. A store without a flush
// has nothing to flush (async_flush succeeds at once); a store without a batch append
// refuses async_append_batch with boost::asio::error::operation_not_supported (splitting
// it into single appends would break its all-or-nothing promise): supports_batch() tells.
//
// A moved-from any_store is empty (operator bool is false): every operation completes with
// boost::asio::error::not_connected (and "any_store: empty (moved-from)" in the
// diagnostics), never inside the initiating call; get_executor() is empty, supports_batch()
// false, target() nullptr.

#include <libretto/async.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/detail/post_completion.hpp>
#include <libretto/store/detail/post_result.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/consign.hpp>
#include <boost/asio/error.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace libretto {

class any_store {
    template <class Sig>
    using handler = boost::asio::any_completion_handler<Sig>;
    using ec_t = boost::system::error_code;

    struct iface {
        virtual ~iface() = default;
        virtual boost::asio::any_io_executor executor() const = 0;
        virtual void create(create_options, diagnostics*, handler<create_signature>) = 0;
        virtual void get(session_key, get_options, diagnostics*, handler<get_signature>) = 0;
        virtual void list(list_options, diagnostics*, handler<list_signature>) = 0;
        virtual void remove(session_key, diagnostics*, handler<delete_signature>) = 0;
        virtual void append(session&, event, diagnostics*, handler<append_signature>) = 0;
        virtual void append_batch(session&, std::vector<event>, diagnostics*, handler<append_signature>) = 0;
        virtual void flush(session_key, diagnostics*, handler<flush_signature>) = 0;
        virtual bool supports_batch() const noexcept = 0;
        virtual const void* target(const std::type_info&) const noexcept = 0;
    };

    // The wrapped store's diagnostics forms; an operation without the caller's diagnostics
    // gives the store a scratch object that the completion handler keeps alive (consign
    // keeps the handler's executor, allocator and cancellation slot).
    template <class S>
    struct model final : iface {
        S store;
        explicit model(S s) : store(std::move(s)) {}
        boost::asio::any_io_executor executor() const override { return store.get_executor(); }

        // Runs `op(diagnostics&, token)` with the caller's diagnostics and the handler, or a
        // scratch diagnostics and the handler consigned with it.
        template <class Sig, class Op>
        static void with_diag(diagnostics* d, handler<Sig> h, Op op) {
            if (d) return op(*d, std::move(h));
            auto scratch = std::make_shared<diagnostics>();
            diagnostics& ref = *scratch;
            op(ref, boost::asio::consign(std::move(h), std::move(scratch)));
        }

        void create(create_options o, diagnostics* d, handler<create_signature> h) override {
            with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                store.async_create(std::move(o), diag, std::move(hh));
            });
        }
        void get(session_key k, get_options o, diagnostics* d, handler<get_signature> h) override {
            with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                store.async_get(std::move(k), std::move(o), diag, std::move(hh));
            });
        }
        void list(list_options o, diagnostics* d, handler<list_signature> h) override {
            with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                store.async_list(std::move(o), diag, std::move(hh));
            });
        }
        void remove(session_key k, diagnostics* d, handler<delete_signature> h) override {
            with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                store.async_delete(std::move(k), diag, std::move(hh));
            });
        }
        void append(session& s, event e, diagnostics* d, handler<append_signature> h) override {
            with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                store.async_append(s, std::move(e), diag, std::move(hh));
            });
        }
        void append_batch(session& s, std::vector<event> evs, diagnostics* d, handler<append_signature> h) override {
            if constexpr (batch_session_store<S>) {
                with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                    store.async_append_batch(s, std::move(evs), diag, std::move(hh));
                });
            } else {
                if (d) d->assign("any_store: the wrapped store has no all-or-nothing batch append");
                detail::post_result(std::move(h), store.get_executor(),
                                    ec_t(boost::asio::error::operation_not_supported), std::int64_t{0});
            }
        }
        void flush(session_key k, diagnostics* d, handler<flush_signature> h) override {
            if constexpr (flushable_session_store<S>) {
                with_diag(d, std::move(h), [&](diagnostics& diag, auto&& hh) {
                    store.async_flush(std::move(k), diag, std::move(hh));
                });
            } else {
                (void)k;
                if (d) d->clear();
                detail::post_result(std::move(h), store.get_executor(), ec_t{});
            }
        }
        bool supports_batch() const noexcept override { return batch_session_store<S>; }
        const void* target(const std::type_info& t) const noexcept override {
            return t == typeid(S) ? &store : nullptr;
        }
    };

    // An operation of a moved-from store: not_connected and default values, posted (to the
    // handler's executor: the store's is gone), as an empty any_transport does.
    template <class Sig>
    struct empty_op;
    template <class... Args>
    struct empty_op<void(ec_t, Args...)> {
        template <class H>
        static void complete(H h, diagnostics* d) {
            if (d) d->assign("any_store: empty (moved-from)");
            const ec_t ec(boost::asio::error::not_connected);
            detail::post_completion({}, std::move(h), ec, std::decay_t<Args>{}...);
        }
    };

public:
    using executor_type = boost::asio::any_io_executor;

    /// Wraps any session_store (moved in).
    template <class S>
        requires(!std::is_same_v<std::decay_t<S>, any_store> && session_store<std::decay_t<S>>)
    any_store(S&& s) : p_(std::make_shared<model<std::decay_t<S>>>(std::forward<S>(s))) {}

    /// The wrapped store's executor; an empty one when moved from.
    executor_type get_executor() const { return p_ ? p_->executor() : executor_type(); }

    /// True if a store is wrapped (false when moved from).
    explicit operator bool() const noexcept { return p_ != nullptr; }

    /// Whether the wrapped store has the all-or-nothing async_append_batch (false when empty).
    bool supports_batch() const noexcept { return p_ && p_->supports_batch(); }

    /// The wrapped store if it is an S, else nullptr (also when empty).
    template <class S>
    S* target() noexcept {
        return p_ ? static_cast<S*>(const_cast<void*>(p_->target(typeid(S)))) : nullptr;
    }

    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, diagnostics& diag, Token&& token = {}) {
        return create_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, Token&& token = {}) {
        return create_op(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o, diagnostics& diag, Token&& token = {}) {
        return get_op(&diag, std::move(k), std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o = {}, Token&& token = {}) {
        return get_op(nullptr, std::move(k), std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, diagnostics& diag, Token&& token = {}) {
        return list_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, Token&& token = {}) {
        return list_op(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, diagnostics& diag, Token&& token = {}) {
        return delete_op(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, Token&& token = {}) {
        return delete_op(nullptr, std::move(k), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& s, event e, diagnostics& diag, Token&& token = {}) {
        return append_op(&diag, s, std::move(e), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& s, event e, Token&& token = {}) {
        return append_op(nullptr, s, std::move(e), std::forward<Token>(token));
    }

    /// The wrapped store's all-or-nothing batch append, or operation_not_supported.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& s, std::vector<event> evs, diagnostics& diag, Token&& token = {}) {
        return batch_op(&diag, s, std::move(evs), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& s, std::vector<event> evs, Token&& token = {}) {
        return batch_op(nullptr, s, std::move(evs), std::forward<Token>(token));
    }

    /// The wrapped store's end-of-turn flush; success at once for a store without one.
    template <boost::asio::completion_token_for<flush_signature> Token = default_completion_token_t>
    auto async_flush(session_key k, diagnostics& diag, Token&& token = {}) {
        return flush_op(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<flush_signature> Token = default_completion_token_t>
    auto async_flush(session_key k, Token&& token = {}) {
        return flush_op(nullptr, std::move(k), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto create_op(diagnostics* d, create_options o, Token&& token) {
        return detail::initiate_with_diagnostics<create_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, create_options o) {
                if (!p) return empty_op<create_signature>::complete(std::move(h), d);
                p->create(std::move(o), d, std::move(h));
            },
            std::move(o));
    }
    template <class Token>
    auto get_op(diagnostics* d, session_key k, get_options o, Token&& token) {
        return detail::initiate_with_diagnostics<get_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, session_key k, get_options o) {
                if (!p) return empty_op<get_signature>::complete(std::move(h), d);
                p->get(std::move(k), std::move(o), d, std::move(h));
            },
            std::move(k), std::move(o));
    }
    template <class Token>
    auto list_op(diagnostics* d, list_options o, Token&& token) {
        return detail::initiate_with_diagnostics<list_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, list_options o) {
                if (!p) return empty_op<list_signature>::complete(std::move(h), d);
                p->list(std::move(o), d, std::move(h));
            },
            std::move(o));
    }
    template <class Token>
    auto delete_op(diagnostics* d, session_key k, Token&& token) {
        return detail::initiate_with_diagnostics<delete_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, session_key k) {
                if (!p) return empty_op<delete_signature>::complete(std::move(h), d);
                p->remove(std::move(k), d, std::move(h));
            },
            std::move(k));
    }
    template <class Token>
    auto append_op(diagnostics* d, session& s, event&& e, Token&& token) {
        return detail::initiate_with_diagnostics<append_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, session* s, event e) {
                if (!p) return empty_op<append_signature>::complete(std::move(h), d);
                p->append(*s, std::move(e), d, std::move(h));
            },
            &s, std::move(e));
    }
    template <class Token>
    auto batch_op(diagnostics* d, session& s, std::vector<event> evs, Token&& token) {
        return detail::initiate_with_diagnostics<append_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, session* s, std::vector<event> evs) {
                if (!p) return empty_op<append_signature>::complete(std::move(h), d);
                p->append_batch(*s, std::move(evs), d, std::move(h));
            },
            &s, std::move(evs));
    }
    template <class Token>
    auto flush_op(diagnostics* d, session_key k, Token&& token) {
        return detail::initiate_with_diagnostics<flush_signature>(
            d, std::forward<Token>(token),
            [p = p_](auto h, diagnostics* d, session_key k) {
                if (!p) return empty_op<flush_signature>::complete(std::move(h), d);
                p->flush(std::move(k), d, std::move(h));
            },
            std::move(k));
    }

    std::shared_ptr<iface> p_;
};

static_assert(session_store<any_store>);
static_assert(flushable_session_store<any_store>);
static_assert(batch_session_store<any_store>);

} // namespace libretto

#endif
