// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_ANY_TOOL_HPP
#define LIBRETTO_TOOL_ANY_TOOL_HPP

#include <libretto/tool/tool.hpp>

#include <boost/asio/awaitable.hpp>

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

namespace libretto {

/// Any tool, type-erased: one allocation when it is made, none per call (a call costs
/// one indirect call plus whatever the tool's own coroutine needs). Copies share the
/// (immutable) tool. A moved-from any_tool may only be assigned to or destroyed.
///
/// The tool is not kept alive by a call in flight: the any_tool (or a copy of it) must
/// outlive the awaitable call() returns.
class any_tool {
public:
    template <class T>
        requires(!std::same_as<std::remove_cvref_t<T>, any_tool> && tool<std::remove_cvref_t<T>>)
    any_tool(T&& t) // NOLINT(google-explicit-constructor): tools(...) and tool_set{...} convert
        : impl_(std::make_shared<const model<std::remove_cvref_t<T>>>(std::forward<T>(t))) {}

    const tool_declaration& declaration() const noexcept { return impl_->declaration(); }
    const std::string& name() const noexcept { return impl_->declaration().name; }

    boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const {
        return impl_->call(std::move(args), ctx);
    }

    /// True when the wrapped tool is a synchronous_tool: call_now() may be used.
    bool synchronous() const noexcept { return impl_->synchronous(); }

    /// The wrapped tool's call_now(). For a tool that is not synchronous() it throws
    /// boost::system::system_error(errc::invalid_argument) naming the tool.
    json::value call_now(json::object args, tool_context& ctx) const { return impl_->call_now(std::move(args), ctx); }

    /// The wrapped tool if it is a `T`, else nullptr.
    template <class T>
    const T* target() const noexcept {
        auto m = dynamic_cast<const model<T>*>(impl_.get());
        return m ? &m->tool_ : nullptr;
    }

private:
    struct base {
        virtual ~base() = default;
        virtual const tool_declaration& declaration() const noexcept = 0;
        virtual boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const = 0;
        virtual bool synchronous() const noexcept = 0;
        virtual json::value call_now(json::object args, tool_context& ctx) const = 0;
    };

    template <class T>
    struct model final : base {
        template <class U>
        explicit model(U&& u) : tool_(std::forward<U>(u)) {}
        const tool_declaration& declaration() const noexcept override { return tool_.declaration(); }
        boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const override {
            return tool_.call(std::move(args), ctx);
        }
        bool synchronous() const noexcept override { return synchronous_tool<T>; }
        json::value call_now(json::object args, tool_context& ctx) const override {
            if constexpr (synchronous_tool<T>) {
                return tool_.call_now(std::move(args), ctx);
            } else {
                (void)args;
                (void)ctx;
                throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                                  "any_tool::call_now: tool '" + declaration().name +
                                                      "' is not synchronous (use call())");
            }
        }
        T tool_;
    };

    std::shared_ptr<const base> impl_;
};

static_assert(tool<any_tool>);

} // namespace libretto

#endif
