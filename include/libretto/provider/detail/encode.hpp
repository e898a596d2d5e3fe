// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_ENCODE_HPP
#define LIBRETTO_PROVIDER_DETAIL_ENCODE_HPP

// Pieces shared by the request encoders.

#include <libretto/json_stringify.hpp>
#include <libretto/error.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/model/tool_declaration.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <cstdlib>
#include <string>
#include <string_view>

namespace libretto::detail {

[[noreturn]] inline void bad_request(std::string what) {
    boost::throw_exception(boost::system::system_error(make_error_code(errc::invalid_argument), what));
}

/// "message #2 part #1" for error messages.
inline std::string where(std::size_t message, std::size_t part) {
    return "message #" + std::to_string(message) + " part #" + std::to_string(part);
}

/// The text a provider shows the model for a tool's outcome: a string result as it is,
/// any other result as JSON; without a result, {"error": <error>} for a failure (the
/// library's shape for failed calls, tool/tool.hpp) and "" otherwise.
inline std::string tool_result_text(const tool_response_part& r) {
    if (const auto* s = r.result.if_string()) return std::string(*s);
    if (!r.result.is_null()) return stringify(r.result);
    if (r.error) {
        json::object o;
        o["error"] = *r.error;
        return stringify(o);
    }
    return {};
}

/// A tool's JSON Schema, or the empty-object schema both providers require at least.
inline json::object tool_schema(const tool_declaration& t, json::storage_ptr sp) {
    if (t.parameters.empty()) {
        json::object o(sp);
        o["type"] = "object";
        o["properties"] = json::object(sp);
        return o;
    }
    return json::object(t.parameters, sp);
}

/// The request target for `base_url` + `suffix`: the base's path (without a trailing
/// slash) then `suffix`, then the base's query, if any ("https://h/v1?api-version=x" +
/// "/chat/completions" → "/v1/chat/completions?api-version=x").
inline std::string join_target(std::string_view base_url, std::string_view suffix) {
    std::string_view rest = base_url;
    if (auto scheme = rest.find("://"); scheme != std::string_view::npos) rest.remove_prefix(scheme + 3);
    std::size_t path_start = rest.find_first_of("/?#");
    rest = path_start == std::string_view::npos ? std::string_view{} : rest.substr(path_start);
    if (auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
    std::string_view query;
    if (auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q);
        rest = rest.substr(0, q);
    }
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    std::string out(rest);
    out += suffix;
    out += query;
    return out;
}

/// The environment variable's value, or empty.
inline std::string_view env(const char* name) noexcept {
    const char* v = std::getenv(name);
    return v ? std::string_view(v) : std::string_view{};
}

/// The MIME type's top-level type starts with `prefix` ("image/", "audio/").
inline bool mime_is(const std::optional<std::string>& mime, std::string_view prefix) noexcept {
    return mime && mime->size() >= prefix.size() && std::string_view(*mime).substr(0, prefix.size()) == prefix;
}

} // namespace libretto::detail

#endif
