// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_TOOL_HPP
#define LIBRETTO_TOOL_TOOL_HPP

// The tool concept and the error convention shared by every tool.
//
//   t.declaration()          -> const tool_declaration&   (name, description, JSON schema)
//   t.call(json::object args, tool_context& ctx)
//                            -> asio::awaitable<json::value>   (t is const)
//
// A tool reports failure by throwing (tool_error for a message meant for the model; any
// other exception is reported with its what()). run_tool_call (tool/run_tool_call.hpp)
// turns every failure into an error response the model sees, never a crash.

#include <libretto/error.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/model/tool_declaration.hpp>
#include <libretto/tool/tool_context.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace libretto {

namespace detail {

/// The JSON Schema name of a value's kind ("integer", "boolean", ...), for messages the
/// model reads.
inline const char* schema_kind_name(json::kind k) noexcept {
    switch (k) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "boolean";
    case json::kind::int64:
    case json::kind::uint64: return "integer";
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
    }
    return "unknown";
}

} // namespace detail

/// A tool: something a model can call. `call` must be safe to run concurrently with
/// itself (an agent runs the calls of one model response in parallel), hence const.
template <class T>
concept tool = requires(const T& t, json::object args, tool_context& ctx) {
    { t.declaration() } -> std::same_as<const tool_declaration&>;
    { t.call(std::move(args), ctx) } -> std::same_as<boost::asio::awaitable<json::value>>;
};

/// A tool that can also answer at once: `call_now(args, ctx)` returns what `call` would
/// complete with, without a coroutine (a function_tool over a plain function). An agent
/// calls it for the usual step of one call, saving the frames of an awaited call.
template <class T>
concept synchronous_tool = tool<T> && requires(const T& t, json::object args, tool_context& ctx) {
    { t.call_now(std::move(args), ctx) } -> std::same_as<json::value>;
};

/// A tool failure whose message is meant for the model ("args.qty: expected integer,
/// got string"). `code` classifies it for the program (errc::tool_error by default;
/// argument errors use invalid_argument, missing_field, wrong_type, unknown_enum_value).
/// `details`, when not empty, is shown to the model next to the message.
class tool_error : public std::runtime_error {
public:
    explicit tool_error(const std::string& message, boost::system::error_code code = errc::tool_error,
                        json::object details = {})
        : std::runtime_error(message), code_(code), details_(std::move(details)) {}

    const boost::system::error_code& code() const noexcept { return code_; }
    const json::object& details() const noexcept { return details_; }

private:
    boost::system::error_code code_;
    json::object details_;
};

/// The response the model sees when a call failed: `error` set to `message`, and
/// `result` the object {"error": message} (plus "details" when given), since most
/// providers show the model only a result body.
inline tool_response_part tool_error_response(std::string tool_call_id, std::string tool_name, std::string message,
                                              json::object details = {}) {
    tool_response_part r;
    r.tool_call_id = std::move(tool_call_id);
    r.tool_name = std::move(tool_name);
    json::object body;
    body["error"] = message;
    if (!details.empty()) body["details"] = std::move(details);
    r.result = std::move(body);
    r.error = std::move(message);
    return r;
}

/// True if `name` is a tool name every provider accepts: 1 to 64 characters from
/// [A-Za-z0-9_-] (the OpenAI and Anthropic rule).
constexpr bool is_valid_tool_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

} // namespace libretto

#endif
