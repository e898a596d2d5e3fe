// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_ANY_STORE_HPP
#define LIBRETTO_SESSION_ANY_STORE_HPP

// any_store: one concrete type for any session_store, for programs that choose the store
// at run time (a config file) and for compile-once builds. Copies share the store.
// Cost: one virtual call per operation, and the completion handler is type-erased with
// asio::any_completion_handler (one allocation per operation, not per event).

#include <libretto/session/store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace libretto {

class any_store {
    template <class Sig>
    using handler = boost::asio::any_completion_handler<Sig>;
    using ec_t = boost::system::error_code;

    struct iface {
        virtual ~iface() = default;
        virtual boost::asio::any_io_executor executor() const = 0;
        virtual void create(create_options, handler<void(ec_t, session)>) = 0;
        virtual void get(session_key, get_options, handler<void(ec_t, std::optional<session>)>) = 0;
        virtual void list(list_options, handler<void(ec_t, list_page)>) = 0;
        virtual void remove(session_key, handler<void(ec_t)>) = 0;
        virtual void append(session&, event, handler<void(ec_t, std::int64_t)>) = 0;
        virtual const void* target(const std::type_info&) const noexcept = 0;
        virtual std::string last_error_message() const = 0;
    };

    template <class S>
    struct model final : iface {
        S store;
        explicit model(S s) : store(std::move(s)) {}
        boost::asio::any_io_executor executor() const override { return store.get_executor(); }
        void create(create_options o, handler<void(ec_t, session)> h) override {
            store.async_create(std::move(o), std::move(h));
        }
        void get(session_key k, get_options o, handler<void(ec_t, std::optional<session>)> h) override {
            store.async_get(std::move(k), std::move(o), std::move(h));
        }
        void list(list_options o, handler<void(ec_t, list_page)> h) override { store.async_list(std::move(o), std::move(h)); }
        void remove(session_key k, handler<void(ec_t)> h) override { store.async_delete(std::move(k), std::move(h)); }
        void append(session& s, event e, handler<void(ec_t, std::int64_t)> h) override {
            store.async_append(s, std::move(e), std::move(h));
        }
        const void* target(const std::type_info& t) const noexcept override {
            return t == typeid(S) ? &store : nullptr;
        }
        std::string last_error_message() const override {
            if constexpr (requires(const S& cs) { { cs.last_error_message() } -> std::convertible_to<std::string>; })
                return store.last_error_message();
            else
                return {};
        }
    };

public:
    using executor_type = boost::asio::any_io_executor;

    /// Wraps any session_store (moved in).
    template <class S>
        requires(!std::is_same_v<std::decay_t<S>, any_store> && session_store<std::decay_t<S>>)
    any_store(S&& s) : p_(std::make_shared<model<std::decay_t<S>>>(std::forward<S>(s))) {}

    executor_type get_executor() const { return p_->executor(); }

    /// What the wrapped store says of its latest failure ("" if it keeps no such message).
    std::string last_error_message() const { return p_->last_error_message(); }

    /// The wrapped store if it is an S, else nullptr.
    template <class S>
    S* target() noexcept {
        return static_cast<S*>(const_cast<void*>(p_->target(typeid(S))));
    }

    template <class Token = boost::asio::deferred_t>
    auto async_create(create_options o, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(ec_t, session)>(
            [p = p_](auto h, create_options o) { p->create(std::move(o), std::move(h)); }, token, std::move(o));
    }

    template <class Token = boost::asio::deferred_t>
    auto async_get(session_key k, get_options o = {}, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(ec_t, std::optional<session>)>(
            [p = p_](auto h, session_key k, get_options o) { p->get(std::move(k), std::move(o), std::move(h)); }, token,
            std::move(k), std::move(o));
    }

    template <class Token = boost::asio::deferred_t>
    auto async_list(list_options o, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(ec_t, list_page)>(
            [p = p_](auto h, list_options o) { p->list(std::move(o), std::move(h)); }, token, std::move(o));
    }

    template <class Token = boost::asio::deferred_t>
    auto async_delete(session_key k, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(ec_t)>(
            [p = p_](auto h, session_key k) { p->remove(std::move(k), std::move(h)); }, token, std::move(k));
    }

    template <class Token = boost::asio::deferred_t>
    auto async_append(session& s, event e, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(ec_t, std::int64_t)>(
            [p = p_](auto h, session* s, event e) { p->append(*s, std::move(e), std::move(h)); }, token, &s,
            std::move(e));
    }

private:
    std::shared_ptr<iface> p_;
};

static_assert(session_store<any_store>);

} // namespace libretto

#endif
