// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_FUNCTION_TOOL_HPP
#define LIBRETTO_TOOL_FUNCTION_TOOL_HPP

// A tool made of a C++ callable whose arguments are a described struct: the schema comes
// from Boost.Describe (tool/arguments.hpp) and the model's arguments are decoded strictly
// before the callable runs.
//
//   struct weather_args { std::string city; std::optional<std::string> unit; };
//   BOOST_DESCRIBE_STRUCT(weather_args, (), (city, unit))
//
//   asio::awaitable<json::value> get_weather(weather_args a, lb::tool_context& ctx);
//   auto t = lb::function_tool("get_weather", "Current weather in a city", get_weather);
//
// Accepted callables (R: void, or anything json::value_from converts; Args: a described
// struct, or json::object for raw arguments; the Args parameter may be by value,
// const& or &&):
//   awaitable<R>(Args, tool_context&)   awaitable<R>(Args)   awaitable<R>(tool_context&)   awaitable<R>()
//   R(Args, tool_context&)              R(Args)              R(tool_context&)              R()
// A callable without an Args parameter makes a tool that takes no arguments ({}).
// void (and awaitable<void>) complete with a null result. The callable is invoked as
// const: calls of one tool may run concurrently.

#include <libretto/error.hpp>
#include <libretto/tool/arguments.hpp>
#include <libretto/tool/tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/describe/class.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>
#include <boost/system/system_error.hpp>

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace libretto {

/// The arguments of a tool that takes none: only {} is accepted.
struct no_arguments {
    friend bool operator==(const no_arguments&, const no_arguments&) = default;
};
BOOST_DESCRIBE_STRUCT(no_arguments, (), ())

/// Options of function_tool.
struct function_tool_options {
    /// The call pauses the invocation until its response arrives from outside
    /// (sets tool_declaration::long_running).
    bool long_running = false;
    /// Per-field descriptions placed in the schema ("city", "address.street", "items.qty");
    /// one naming no field is an error at construction.
    field_descriptions descriptions{};
    /// A schema written by hand, used instead of the generated one. Required in spirit
    /// when the arguments are a raw json::object (default then: {"type":"object"}).
    std::optional<json::object> parameters{};
};

namespace detail::fn {

template <class T>
struct is_awaitable : std::false_type {};
template <class T, class Ex>
struct is_awaitable<boost::asio::awaitable<T, Ex>> : std::true_type {
    using value_type = T;
};

template <class... A>
struct arg_list {};

template <class T>
struct raw_signature;
template <class R, class... A>
struct raw_signature<R(A...)> {
    using result = R;
    using args = arg_list<A...>;
};
template <class R, class... A>
struct raw_signature<R(A...) noexcept> : raw_signature<R(A...)> {};
template <class R, class... A>
struct raw_signature<R (*)(A...)> : raw_signature<R(A...)> {};
template <class R, class... A>
struct raw_signature<R (*)(A...) noexcept> : raw_signature<R(A...)> {};
template <class C, class R, class... A>
struct raw_signature<R (C::*)(A...)> : raw_signature<R(A...)> {
    static constexpr bool non_const_member = true;
};
template <class C, class R, class... A>
struct raw_signature<R (C::*)(A...) noexcept> : raw_signature<R(A...)> {
    static constexpr bool non_const_member = true;
};
template <class C, class R, class... A>
struct raw_signature<R (C::*)(A...) const> : raw_signature<R(A...)> {};
template <class C, class R, class... A>
struct raw_signature<R (C::*)(A...) const noexcept> : raw_signature<R(A...)> {};
template <class F>
    requires requires { &F::operator(); }
struct raw_signature<F> : raw_signature<decltype(&F::operator())> {};

template <class A>
inline constexpr bool is_context_param_v =
    std::is_same_v<std::remove_cvref_t<A>, tool_context> && std::is_lvalue_reference_v<A>;

template <class List>
struct params;
template <>
struct params<arg_list<>> {
    using arguments = no_arguments;
    static constexpr bool has_args = false;
    static constexpr bool has_context = false;
    using args_param = no_arguments;
};
template <class A>
struct params<arg_list<A>> {
    static constexpr bool has_context = is_context_param_v<A>;
    static constexpr bool has_args = !has_context;
    using arguments = std::conditional_t<has_context, no_arguments, std::remove_cvref_t<A>>;
    using args_param = std::conditional_t<has_context, no_arguments, A>;
};
template <class A, class C>
struct params<arg_list<A, C>> {
    static_assert(is_context_param_v<C>, "a tool callable's second parameter must be libretto::tool_context&");
    static constexpr bool has_context = true;
    static constexpr bool has_args = true;
    using arguments = std::remove_cvref_t<A>;
    using args_param = A;
};
template <class... A>
    requires(sizeof...(A) > 2)
struct params<arg_list<A...>> {
    static_assert(sizeof...(A) <= 2, "a tool callable takes (Args, tool_context&), (Args), (tool_context&) or ()");
};

template <class F>
struct signature {
    static_assert(requires { typename raw_signature<F>::result; },
                  "function_tool needs a callable with one signature (a function, or a lambda that is not "
                  "generic)");
    using raw = raw_signature<F>;
    using p = params<typename raw::args>;
    using arguments = typename p::arguments;
    using args_param = typename p::args_param;
    static constexpr bool has_args = p::has_args;
    static constexpr bool has_context = p::has_context;
    using result = typename raw::result;
};

template <class X>
json::value to_result(X&& x) {
    if constexpr (std::is_same_v<std::remove_cvref_t<X>, json::value>)
        return std::forward<X>(x);
    else
        return json::value_from(std::forward<X>(x));
}

} // namespace detail::fn

/// A tool made of a callable `F` (see the header comment for the accepted shapes).
template <class F>
class function_tool {
    using sig = detail::fn::signature<F>;

public:
    /// The decoded argument type (no_arguments for a callable that takes none).
    using arguments_type = typename sig::arguments;
    /// True if the callable takes a tool_context&.
    static constexpr bool takes_context = sig::has_context;

    static_assert(!requires { requires detail::fn::raw_signature<F>::non_const_member; },
                  "a tool callable is invoked as const (calls may run concurrently): make the lambda non-mutable "
                  "and keep mutable state behind a pointer");
    static_assert(is_described_arguments_v<arguments_type> || std::is_same_v<arguments_type, json::object>,
                  "tool arguments must be a struct described with BOOST_DESCRIBE_STRUCT (or json::object)");
    static_assert(!std::is_lvalue_reference_v<typename sig::args_param> ||
                      std::is_const_v<std::remove_reference_t<typename sig::args_param>>,
                  "take the arguments by value, const& or &&");

    /// Throws system_error(errc::invalid_argument) if `name` is not a valid tool name
    /// (is_valid_tool_name) or a field description names no field.
    function_tool(std::string name, std::string description, F fn, function_tool_options opts = {})
        : fn_(std::move(fn)) {
        if (!is_valid_tool_name(name))
            throw boost::system::system_error(
                make_error_code(errc::invalid_argument),
                "invalid tool name '" + name + "' (1 to 64 characters from A-Z a-z 0-9 _ -)");
        decl_.name = std::move(name);
        decl_.description = std::move(description);
        decl_.long_running = opts.long_running;
        if (opts.parameters) {
            if (!opts.descriptions.empty())
                throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                                  "field descriptions cannot be combined with a schema given by hand");
            decl_.parameters = std::move(*opts.parameters);
        } else if constexpr (std::is_same_v<arguments_type, json::object>) {
            if (!opts.descriptions.empty())
                throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                                  "field descriptions need described arguments");
            decl_.parameters["type"] = "object";
        } else {
            decl_.parameters = arguments_schema<arguments_type>(opts.descriptions);
        }
    }

    const tool_declaration& declaration() const noexcept { return decl_; }

    /// Decodes `args` (tool_error naming the field on failure), then runs the callable.
    /// One coroutine frame, plus the callable's own when it is a coroutine.
    boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const {
        using R = typename sig::result;
        if constexpr (detail::fn::is_awaitable<R>::value) {
            arguments_type parsed = decode(std::move(args));
            R op = invoke(parsed, ctx);
            if constexpr (std::is_void_v<typename detail::fn::is_awaitable<R>::value_type>) {
                co_await std::move(op);
                co_return nullptr;
            } else {
                auto r = co_await std::move(op);
                co_return detail::fn::to_result(std::move(r));
            }
        } else {
            co_return call_now(std::move(args), ctx);
        }
    }

    /// call() answered at once, for a callable that is not a coroutine (this makes the
    /// tool a synchronous_tool): the same decoding, result and exceptions, no frame.
    json::value call_now(json::object args, tool_context& ctx) const
        requires(!detail::fn::is_awaitable<typename sig::result>::value)
    {
        using R = typename sig::result;
        arguments_type parsed = decode(std::move(args));
        if constexpr (std::is_void_v<R>) {
            invoke(parsed, ctx);
            return nullptr;
        } else {
            return detail::fn::to_result(invoke(parsed, ctx));
        }
    }

private:
    static arguments_type decode(json::object args) {
        if constexpr (std::is_same_v<arguments_type, json::object>) {
            return args;
        } else {
            json::value v(std::move(args));
            return parse_arguments<arguments_type>(v);
        }
    }

    decltype(auto) invoke(arguments_type& parsed, tool_context& ctx) const {
        if constexpr (sig::has_args && sig::has_context)
            return std::invoke(fn_, std::move(parsed), ctx);
        else if constexpr (sig::has_args)
            return std::invoke(fn_, std::move(parsed));
        else if constexpr (sig::has_context)
            return std::invoke(fn_, ctx);
        else
            return std::invoke(fn_);
    }

    tool_declaration decl_;
    F fn_;
};

template <class F>
function_tool(std::string, std::string, F, function_tool_options = {}) -> function_tool<F>;

} // namespace libretto

#endif
