// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_ANY_TRANSPORT_HPP
#define LIBRETTO_HTTP_ANY_TRANSPORT_HPP

// any_transport: any http_transport behind one type, and any_response its response.
//
//   lh::any_transport t = lh::fake_transport{ex};       // or https_transport, beast_transport<>
//   auto res = co_await t.async_request(std::move(req), asio::use_awaitable);
//
// The provider models hold their transport as an any_transport, so their generation code is
// compiled once for every transport (and, with LIBRETTO_SEPARATE_COMPILATION, once for the
// program). Completion handlers cross the seam as asio::any_completion_handler: their
// executor and cancellation slot reach the wrapped transport. Copies share the wrapped
// transport (and so its connection pool).

#include <libretto/async.hpp>
#include <libretto/error.hpp>
#include <libretto/http/detail/post_completion.hpp>
#include <libretto/http/transport.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <concepts>
#include <cstddef>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

namespace libretto::http {

class any_response;
class any_transport;

namespace detail {
// Transports and responses whose operations take any completion handler (Asio's rule for
// a token-generic operation); the concept asks only for use_awaitable.
template <class R>
concept handler_read = requires(R& r, boost::asio::mutable_buffer b,
                                boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)> h) {
    r.async_read_some(b, std::move(h));
};
} // namespace detail

/// A response of any type that models http_response. Move-only; a default-constructed one
/// has status 0 and its reads fail with asio::error::not_connected.
class any_response {
public:
    using error_code = boost::system::error_code;
    using read_handler = boost::asio::any_completion_handler<void(error_code, std::size_t)>;

    /// What a wrapped response does; implement it to adapt a response by hand.
    struct interface {
        virtual ~interface() = default;
        virtual unsigned status() const noexcept = 0;
        virtual std::string_view header(std::string_view name) const = 0;
        virtual bool done() const noexcept = 0;
        virtual void async_read_some(boost::asio::mutable_buffer b, read_handler h) = 0;
    };

    any_response() = default;
    explicit any_response(std::unique_ptr<interface> impl) noexcept : impl_(std::move(impl)) {}

    /// Wraps `r` (moved in).
    template <class R>
        requires(!std::same_as<std::remove_cvref_t<R>, any_response>) && http_response<R>
    explicit any_response(R r) : impl_(std::make_unique<model<R>>(std::move(r))) {}

    unsigned status() const noexcept { return impl_ ? impl_->status() : 0; }
    std::string_view header(std::string_view name) const { return impl_ ? impl_->header(name) : std::string_view(); }
    bool done() const noexcept { return impl_ && impl_->done(); }

    /// True if a response is wrapped (false when default-constructed or moved from).
    explicit operator bool() const noexcept { return impl_ != nullptr; }

    /// Reads the next body bytes into `buf`: void(error_code, std::size_t), 0 = the end.
    template <boost::asio::completion_token_for<void(error_code, std::size_t)> CompletionToken =
                  default_completion_token_t>
    auto async_read_some(boost::asio::mutable_buffer buf, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [](auto handler, interface* impl, boost::asio::mutable_buffer b) {
                if (!impl) {
                    detail::post_completion({}, std::move(handler), error_code(boost::asio::error::not_connected),
                                            std::size_t{0});
                    return;
                }
                impl->async_read_some(b, read_handler(std::move(handler)));
            },
            token, impl_.get(), buf);
    }

private:
    template <class R>
    struct model final : interface {
        explicit model(R&& r) : res(std::move(r)) {}
        unsigned status() const noexcept override { return static_cast<unsigned>(res.status()); }
        std::string_view header(std::string_view name) const override { return res.header(name); }
        bool done() const noexcept override { return static_cast<bool>(res.done()); }
        void async_read_some(boost::asio::mutable_buffer b, read_handler h) override {
            static_assert(detail::handler_read<R>,
                          "any_response: the response's async_read_some must accept a completion handler");
            res.async_read_some(b, std::move(h));
        }
        R res;
    };

    std::unique_ptr<interface> impl_;
};

static_assert(http_response<any_response>);

/// A transport of any type that models http_transport (copies share it). A moved-from one
/// is empty: its requests fail with asio::error::not_connected, its executor is empty.
class any_transport {
public:
    using error_code = boost::system::error_code;
    using response_type = any_response;
    using request_handler = boost::asio::any_completion_handler<void(error_code, any_response)>;

    /// What a wrapped transport does; implement it to adapt a transport by hand.
    struct interface {
        virtual ~interface() = default;
        virtual boost::asio::any_io_executor get_executor() const noexcept = 0;
        virtual void async_request(http_request r, request_handler h) = 0;
    };

    /// Throws system_error (errc::invalid_argument) for a null `impl`: it was dereferenced
    /// by the first request.
    explicit any_transport(std::shared_ptr<interface> impl) : impl_(std::move(impl)) {
        if (!impl_)
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              "any_transport: the implementation is a null shared_ptr");
    }

    /// Wraps a copy of `t`.
    template <class T>
        requires(!std::derived_from<std::remove_cvref_t<T>, any_transport>) && http_transport<T>
    any_transport(T t) : impl_(std::make_shared<model<T>>(std::move(t))) {} // NOLINT: implicit, like any_model

    /// The wrapped transport's executor; an empty one when moved from.
    boost::asio::any_io_executor get_executor() const noexcept {
        return impl_ ? impl_->get_executor() : boost::asio::any_io_executor();
    }

    /// True if a transport is wrapped (false when moved from).
    explicit operator bool() const noexcept { return impl_ != nullptr; }

    /// Sends `request` and reads the response headers: void(error_code, any_response).
    template <boost::asio::completion_token_for<void(error_code, any_response)> CompletionToken =
                  default_completion_token_t>
    auto async_request(http_request request, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, any_response)>(
            [](auto handler, interface* impl, http_request r) {
                if (!impl) { // moved from: as an empty any_response's reads
                    const error_code ec(boost::asio::error::not_connected);
                    detail::post_completion({}, std::move(handler), ec, any_response());
                    return;
                }
                impl->async_request(std::move(r), request_handler(std::move(handler)));
            },
            token, impl_.get(), std::move(request));
    }

protected:
    interface& impl() const noexcept { return *impl_; } // not on a moved-from transport

    // The interface for a T (https_transport reaches its beast_transport through it).
    template <class T>
    struct model final : interface {
        explicit model(T&& t) : transport(std::move(t)) {}
        boost::asio::any_io_executor get_executor() const noexcept override { return transport.get_executor(); }
        // Completes the caller's handler with the response wrapped. Its executor and
        // cancellation slot are the caller's, as members (binders would add a layer of
        // async_result to every operation the wrapped transport instantiates for it).
        struct forward {
            request_handler h;
            boost::asio::any_completion_executor ex;
            using executor_type = boost::asio::any_completion_executor;
            using cancellation_slot_type = boost::asio::cancellation_slot;
            executor_type get_executor() const noexcept { return ex; }
            cancellation_slot_type get_cancellation_slot() const noexcept { return h.get_cancellation_slot(); }
            void operator()(error_code ec, typename T::response_type res) {
                std::move(h)(ec, ec ? any_response() : any_response(std::move(res)));
            }
        };
        void async_request(http_request r, request_handler h) override {
            boost::asio::any_completion_executor ex = boost::asio::get_associated_executor(h, transport.get_executor());
            transport.async_request(std::move(r), forward{std::move(h), std::move(ex)});
        }
        T transport;
    };

private:
    std::shared_ptr<interface> impl_;
};

static_assert(http_transport<any_transport>);

} // namespace libretto::http

#endif
