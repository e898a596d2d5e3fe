// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_ANY_MODEL_HPP
#define LIBRETTO_MODEL_ANY_MODEL_HPP

// any_model: one concrete type for any model, for programs that choose the provider at run
// time (a config file) and for compile-once builds. Copies share the wrapped model, as
// copies of the models themselves do. Cost: one virtual call per generate(); the chunks
// flow through the model's own stream, untouched.
//
// A moved-from any_model is empty (operator bool is false): generate() returns a stream
// whose first next() throws system_error (asio::error::not_connected, "any_model: empty
// (moved-from)"), name() is "", get_executor() empty, retries_transient() false, target()
// nullptr.

#include <libretto/model/model.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <exception>

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace libretto {

class any_model {
    struct iface {
        virtual ~iface() = default;
        virtual llm_stream generate(llm_request) = 0;
        virtual std::string_view name() const noexcept = 0;
        virtual boost::asio::any_io_executor executor() const = 0;
        virtual const void* target(const std::type_info&) const noexcept = 0;
        virtual bool retries_transient() const noexcept = 0;
    };

    template <class M>
    struct impl final : iface {
        M m;
        std::string name_; // a copy: M::name() may return a temporary string
        explicit impl(M model) : m(std::move(model)), name_(std::string_view(std::as_const(m).name())) {}
        llm_stream generate(llm_request r) override { return m.generate(std::move(r)); }
        std::string_view name() const noexcept override { return name_; }
        boost::asio::any_io_executor executor() const override { return m.get_executor(); }
        const void* target(const std::type_info& t) const noexcept override {
            return t == typeid(M) ? &m : nullptr;
        }
        bool retries_transient() const noexcept override { return model_retries_transient(m); }
    };

public:
    using executor_type = boost::asio::any_io_executor;

    /// Wraps any model (copied or moved in).
    template <class M>
        requires(!std::is_same_v<std::decay_t<M>, any_model> && model<std::decay_t<M>>)
    any_model(M&& m) : p_(std::make_shared<impl<std::decay_t<M>>>(std::forward<M>(m))) {}

    /// The wrapped model's stream; when empty, one that fails (not_connected) when read.
    llm_stream generate(llm_request r) {
        if (!p_)
            return detail::stream_access::make_failed<llm_chunk>(
                {}, std::make_exception_ptr(boost::system::system_error(
                        make_error_code(boost::asio::error::not_connected), "any_model: empty (moved-from)")));
        return p_->generate(std::move(r));
    }
    /// The wrapped model's name; "" when empty.
    std::string_view name() const noexcept { return p_ ? p_->name() : std::string_view(); }
    /// The wrapped model's executor; an empty one when moved from.
    executor_type get_executor() const { return p_ ? p_->executor() : executor_type(); }
    /// What the wrapped model says (model_retries_transient): llm_agent does not retry a
    /// wrapped provider model, which retries itself. False when empty.
    bool retries_transient() const noexcept { return p_ && p_->retries_transient(); }

    /// True if a model is wrapped (false when moved from).
    explicit operator bool() const noexcept { return p_ != nullptr; }

    /// The wrapped model if it is an M, else nullptr (also when empty).
    template <class M>
    M* target() noexcept {
        return p_ ? static_cast<M*>(const_cast<void*>(p_->target(typeid(M)))) : nullptr;
    }
    template <class M>
    const M* target() const noexcept {
        return p_ ? static_cast<const M*>(p_->target(typeid(M))) : nullptr;
    }

private:
    std::shared_ptr<iface> p_;
};

static_assert(model<any_model>);

} // namespace libretto

#endif
