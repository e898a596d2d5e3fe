// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_RUN_TOOL_CALL_HPP
#define LIBRETTO_TOOL_RUN_TOOL_CALL_HPP

// What an agent does with each tool call of a model response: find the tool, run it,
// and turn whatever happens into a tool_response_part the model sees. Every call gets a
// response (providers reject a conversation with an unanswered call).

#include <libretto/event/detail/json_text.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/value.hpp>

#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace libretto {

namespace detail {

inline std::string unknown_tool_message(const tool_set& tools, std::string_view name) {
    std::string m = "unknown tool '";
    m.append(name);
    m += "'";
    if (tools.empty()) {
        m += "; no tools are available";
        return m;
    }
    m += "; available tools: ";
    bool first = true;
    for (const auto& t : tools) {
        if (!first) m += ", ";
        first = false;
        m += t.name();
    }
    return m;
}

/// The error response of a call its tool cannot take: the tool is unknown (`t` null), or
/// the arguments are not a JSON object. Nothing when the call may go ahead.
inline std::optional<tool_response_part> refuse_call(const tool_set& tools, const any_tool* t, std::string& id,
                                                     std::string& name, const json::value& args) {
    if (!t) {
        std::string msg = unknown_tool_message(tools, name);
        return tool_error_response(std::move(id), std::move(name), std::move(msg));
    }
    if (!args.is_object()) {
        std::string msg = std::string("args: expected object, got ") + schema_kind_name(args.kind());
        return tool_error_response(std::move(id), std::move(name), std::move(msg));
    }
    return std::nullopt;
}

/// `s` with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD:
/// an error text (an exception's what() naming a Latin-1 file name) must be storable.
inline std::string replace_invalid_utf8(std::string s) {
    if (!find_invalid_utf8(s)) return s; // nearly always: no copy
    std::string out;
    out.reserve(s.size() + 8);
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* const end = p + s.size();
    while (p != end) {
        const std::size_t k = *p < 0x80 ? 1 : utf8_sequence(p, end);
        if (k) {
            out.append(reinterpret_cast<const char*>(p), k);
            p += k;
        } else {
            out += "\xEF\xBF\xBD";
            ++p;
        }
    }
    return out;
}

/// The response of a call whose tool threw `ep`: a tool_error's message and details, or
/// another exception's what().
inline tool_response_part failed_call(std::string id, std::string name, const std::exception_ptr& ep) {
    std::string error;
    json::object details;
    try {
        std::rethrow_exception(ep);
    } catch (const tool_error& e) {
        error = e.what();
        details = e.details();
    } catch (const std::exception& e) {
        error = e.what();
        if (error.empty()) error = "the tool failed";
    } catch (...) {
        error = "the tool failed with an unknown exception";
    }
    // As for a result (answered_call): an unstorable error would end the turn instead of
    // telling the model. Details sit at level 6 of the event (its result's "details").
    if (auto f = check_json_object(details, 5, "details")) {
        details.clear();
        error += " (the tool's error details were left out: they cannot be stored: " + f->message() + ")";
    }
    return tool_error_response(std::move(id), std::move(name), replace_invalid_utf8(std::move(error)),
                               std::move(details));
}

inline tool_response_part answered_call(std::string id, std::string name, json::value result) {
    // A result no store could keep (a NaN, a string that is not UTF-8, nesting too deep)
    // would make the response's event unstorable and end the turn: the model hears why
    // instead. The result sits at level 5 of its event. The fault names a member cut at 64
    // bytes, perhaps inside a character: hence the UTF-8 repair.
    if (auto f = check_json_value(result, 4, "result"))
        return tool_error_response(std::move(id), std::move(name),
                                   replace_invalid_utf8("the tool's result cannot be stored: " + f->message()));
    tool_response_part r;
    r.tool_call_id = std::move(id);
    r.tool_name = std::move(name);
    r.result = std::move(result);
    return r;
}

template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<tool_response_part> run_tool_call(const tool_set& tools, std::string id, std::string name,
                                                         json::value args, tool_context& ctx) {
    boost::asio::cancellation_state cs = co_await boost::asio::this_coro::cancellation_state;
    const any_tool* t = tools.find(name);
    if (std::optional<tool_response_part> refused = refuse_call(tools, t, id, name, args))
        co_return std::move(*refused);
    std::exception_ptr failure;
    try {
        boost::asio::awaitable<json::value> op = t->call(std::move(args.get_object()), ctx);
        json::value result = co_await std::move(op);
        co_return answered_call(std::move(id), std::move(name), std::move(result));
    } catch (...) {
        // The exception of a cancelled call is the cancellation, not the tool's answer.
        if (cs.cancelled() != boost::asio::cancellation_type::none) throw;
        failure = std::current_exception();
    }
    co_return failed_call(std::move(id), std::move(name), failure);
}

/// run_tool_call for a synchronous() tool `t` (found in its tool_set by the caller), run
/// here: the same responses, no coroutine frame.
inline tool_response_part run_tool_call_now(const tool_set& tools, const any_tool& t, std::string id, std::string name,
                                            json::value args, tool_context& ctx) {
    if (std::optional<tool_response_part> refused = refuse_call(tools, &t, id, name, args)) return std::move(*refused);
    try {
        json::value result = t.call_now(std::move(args.get_object()), ctx);
        return answered_call(std::move(id), std::move(name), std::move(result));
    } catch (...) {
        return failed_call(std::move(id), std::move(name), std::current_exception());
    }
}

} // namespace detail

/// Runs `call` against `tools` with `ctx` (made for this call) and returns the response.
/// Never fails on the tool's account: an unknown tool, arguments that are not an object,
/// bad arguments and an exception thrown by the tool all become an error response
/// (tool_error_response) whose message the model sees. Only cancellation of the calling
/// coroutine propagates (as the exception it raised). The actions the tool recorded stay
/// in `ctx` (take_actions()), also when it failed: its state writes already happened.
///
/// `call` is copied before the first suspension; `tools` and `ctx` must outlive the
/// returned awaitable. Several calls run concurrently when each is co_spawned.
template <class = void> // a template, as the coroutine it returns (detail/config.hpp)
boost::asio::awaitable<tool_response_part> run_tool_call(const tool_set& tools, const tool_call_part& call,
                                                         tool_context& ctx) {
    json::value args = call.args;
    return detail::run_tool_call(tools, call.tool_call_id, call.tool_name, std::move(args), ctx);
}

/// The same for arguments of any JSON kind (e.g. decoded from a provider's arguments
/// string): anything but an object is answered with an error response.
template <class = void> // a template, as the coroutine it returns (detail/config.hpp)
boost::asio::awaitable<tool_response_part> run_tool_call(const tool_set& tools, std::string tool_call_id,
                                                         std::string tool_name, json::value args, tool_context& ctx) {
    return detail::run_tool_call(tools, std::move(tool_call_id), std::move(tool_name), std::move(args), ctx);
}

} // namespace libretto

#endif
