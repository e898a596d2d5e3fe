// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_DETAIL_RPC_HPP
#define LIBRETTO_MCP_DETAIL_RPC_HPP

// JSON-RPC 2.0 as MCP uses it, apart from any transport (sans-io): the messages the client
// writes, and what it reads out of the server's (results, errors, tools, call results).
// Every function here is tested by hand in tests/mcp_test.cpp.

#include <libretto/error.hpp>
#include <libretto/mcp/types.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace libretto::mcp::detail {

inline std::string make_request(std::int64_t id, std::string_view method, json::object params) {
    json::object m{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    if (!params.empty() || method != "ping") m["params"] = std::move(params);
    return json::serialize(m);
}

inline std::string make_notification(std::string_view method, json::object params) {
    json::object m{{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.empty()) m["params"] = std::move(params);
    return json::serialize(m);
}

inline std::string make_cancelled(std::int64_t id, std::string_view reason) {
    return make_notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}});
}

/// The first 120 bytes of `text`, quoted, for a message.
inline std::string excerpt(std::string_view text) {
    std::string out = "'" + std::string(text.substr(0, 120)) + (text.size() > 120 ? "...'" : "'");
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return out;
}

/// A message from the server: a JSON object with "jsonrpc": "2.0"; nullopt otherwise.
inline std::optional<json::object> parse_message(std::string_view line) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) return std::nullopt;
    auto& o = v.get_object();
    const auto* ver = o.if_contains("jsonrpc");
    if (!ver || !ver->is_string() || ver->get_string() != "2.0") return std::nullopt;
    return std::move(o);
}

/// The error code for a JSON-RPC error code: -32601 method not found -> not_found, -32602
/// invalid params -> invalid_argument, anything else -> tool_error.
inline boost::system::error_code error_for(std::int64_t code) {
    if (code == -32601) return errc::not_found;
    if (code == -32602) return errc::invalid_argument;
    return errc::tool_error;
}

/// A response's result object; throws system_error for an error response ("tools/call:
/// the server answered error -32602: Unknown tool: nope") or a malformed one.
inline json::object take_result(json::object response, std::string_view method) {
    if (auto* e = response.if_contains("error")) {
        std::int64_t code = 0;
        std::string message = "(no message)";
        if (e->is_object()) {
            if (auto* c = e->get_object().if_contains("code"); c && c->is_int64()) code = c->get_int64();
            if (auto* m = e->get_object().if_contains("message"); m && m->is_string()) message = m->get_string();
        }
        throw boost::system::system_error(error_for(code), std::string(method) + ": the server answered error " +
                                                              std::to_string(code) + ": " + message);
    }
    auto* r = response.if_contains("result");
    if (!r || !r->is_object())
        throw boost::system::system_error(errc::bad_response, std::string(method) + ": the response has no result object");
    return std::move(r->get_object());
}

inline json::object initialize_params(const client_options& o) {
    json::object caps;
    if (o.on_request) {
        caps["sampling"] = json::object{};
        caps["elicitation"] = json::object{};
        caps["roots"] = json::object{{"listChanged", false}};
    }
    return json::object{{"protocolVersion", protocol_versions[0]},
                        {"capabilities", std::move(caps)},
                        {"clientInfo", json::object{{"name", o.client_name}, {"version", o.client_version}}}};
}

inline bool supported_version(std::string_view v) {
    return std::find(std::begin(protocol_versions), std::end(protocol_versions), v) != std::end(protocol_versions);
}

inline std::string string_member(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

inline server_info read_server_info(const json::object& r) {
    server_info s;
    s.protocol_version = string_member(r, "protocolVersion");
    if (const auto* i = r.if_contains("serverInfo"); i && i->is_object()) {
        s.name = string_member(i->get_object(), "name");
        s.version = string_member(i->get_object(), "version");
    }
    s.instructions = string_member(r, "instructions");
    if (const auto* c = r.if_contains("capabilities"); c && c->is_object()) s.capabilities = c->get_object();
    return s;
}

/// A listing's pages: the cursor of the next page ("" after the last), or errc::bad_response
/// for a server whose cursors would never end (one sent twice, or past `max_pages` pages)
/// rather than a listing cut short without a word.
struct pager {
    static constexpr int max_pages = 10'000;
    std::string_view method;
    std::unordered_set<std::string> seen{};

    std::string next(const json::object& page) {
        const auto* c = page.if_contains("nextCursor");
        if (!c || !c->is_string() || c->get_string().empty()) return {};
        std::string cursor(c->get_string());
        if (seen.contains(cursor))
            throw boost::system::system_error(errc::bad_response, std::string(method) + ": the server sent the cursor '" +
                                                                      cursor.substr(0, 64) + "' twice: its pages never end");
        if (seen.size() + 1 >= static_cast<std::size_t>(max_pages))
            throw boost::system::system_error(errc::bad_response, std::string(method) + ": more than " +
                                                                      std::to_string(max_pages) + " pages");
        seen.insert(cursor);
        return cursor;
    }
};

/// Appends the tools of one tools/list page. A tool without a name, or whose inputSchema
/// is not an object of type "object", is refused (errc::bad_response naming it).
inline void read_tools(const json::object& page, std::vector<tool_info>& out) {
    const auto* tools = page.if_contains("tools");
    if (!tools || !tools->is_array())
        throw boost::system::system_error(errc::bad_response, "tools/list: the result has no 'tools' array");
    for (const auto& t : tools->get_array()) {
        if (!t.is_object()) throw boost::system::system_error(errc::bad_response, "tools/list: a tool is not an object");
        const auto& o = t.get_object();
        tool_info info;
        info.name = string_member(o, "name");
        if (info.name.empty()) throw boost::system::system_error(errc::bad_response, "tools/list: a tool has no name");
        const auto* schema = o.if_contains("inputSchema");
        if (!schema || !schema->is_object() || string_member(schema->get_object(), "type") != "object")
            throw boost::system::system_error(errc::bad_response, "tools/list: tool '" + info.name +
                                                                      "' has no inputSchema of type \"object\"");
        info.input_schema = schema->get_object();
        if (const auto* os = o.if_contains("outputSchema")) {
            if (!os->is_object() || string_member(os->get_object(), "type") != "object")
                throw boost::system::system_error(errc::bad_response, "tools/list: tool '" + info.name +
                                                                          "' has an outputSchema that is not of type \"object\"");
            info.output_schema = os->get_object();
        }
        info.title = string_member(o, "title");
        info.description = string_member(o, "description");
        if (const auto* a = o.if_contains("annotations"); a && a->is_object()) info.annotations = a->get_object();
        out.push_back(std::move(info));
    }
}

inline call_result read_call_result(json::object r, std::string_view tool) {
    call_result out;
    if (auto* c = r.if_contains("content")) {
        if (!c->is_array())
            throw boost::system::system_error(errc::bad_response, "tools/call " + std::string(tool) + ": 'content' is not an array");
        out.content = std::move(c->get_array());
    }
    if (auto* s = r.if_contains("structuredContent"); s && !s->is_null()) {
        if (!s->is_object())
            throw boost::system::system_error(errc::bad_response,
                                              "tools/call " + std::string(tool) + ": 'structuredContent' is not an object");
        out.structured_content = std::move(s->get_object());
    }
    if (auto* e = r.if_contains("isError"); e && e->is_bool()) out.is_error = e->get_bool();
    return out;
}

/// The answer to a request from the server: `handler`'s result, or JSON-RPC's error.
template <class Handler>
std::string answer_server_request(const json::value& id, std::string_view method, const json::object& params,
                                  const Handler& handler) {
    json::object m{{"jsonrpc", "2.0"}, {"id", id}};
    if (method == "ping") {
        m["result"] = json::object{};
        return json::serialize(m);
    }
    auto fail = [&](std::int64_t code, std::string message) {
        m["error"] = json::object{{"code", code}, {"message", std::move(message)}};
        return json::serialize(m);
    };
    if (!handler) return fail(-32601, "Method not found: " + std::string(method));
    try {
        m["result"] = handler(method, params);
        return json::serialize(m);
    } catch (const boost::system::system_error& e) {
        if (e.code() == errc::not_found) return fail(-32601, "Method not found: " + std::string(method));
        return fail(-32603, e.what());
    } catch (const std::exception& e) {
        return fail(-32603, e.what());
    }
}

} // namespace libretto::mcp::detail

#endif
