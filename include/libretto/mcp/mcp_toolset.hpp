// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_MCP_TOOLSET_HPP
#define LIBRETTO_MCP_MCP_TOOLSET_HPP

// mcp_toolset: a server's tools as libretto tools, for an llm_agent like any other.
// docs/mcp.md, "Tools for an agent".
//
//   auto c = co_await lb::mcp::async_connect_stdio(ex, so);
//   lb::tool_set tools = co_await lb::mcp::async_mcp_toolset(c, lb::mcp::toolset_options("fs_"));
//   lb::llm_agent_options<M> o{.name = "assistant", .model = model, .tools = tools};
//
// Each tool keeps the server's name (with the prefix), description and inputSchema
// unchanged; calls share the one connection (concurrent calls are concurrent requests).
// A result becomes what the model reads:
// - structuredContent, when the server sends it (checked against the tool's outputSchema:
//   its required members present, their top-level types right);
// - else the text blocks, joined by newlines (a string);
// - image and audio blocks are attached to the response (file parts, inline base64),
//   resource links as file parts naming their URI, embedded resources as their text or an
//   attached blob; the text the model reads says what was attached.
// An isError result is a tool error the model reads (its text); a failure of the
// connection is a tool error too, naming the reason.

#include <libretto/error.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/mcp/client.hpp>
#include <libretto/model/tool_declaration.hpp>
#include <libretto/tool/any_tool.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace libretto::mcp {

/// Which tools, named how. Not an aggregate (constructors): safe as a temporary in a
/// co_await expression on g++ 12.
struct toolset_options {
    std::string prefix{};             ///< put before every tool name ("fs_")
    std::vector<std::string> allow{}; ///< the server's names to keep; empty: all
    toolset_options() = default;
    explicit toolset_options(std::string prefix, std::vector<std::string> allow = {})
        : prefix(std::move(prefix)), allow(std::move(allow)) {}
};

namespace detail {

inline std::string kind_of(const json::value& v) {
    switch (v.kind()) {
    case json::kind::string: return "string";
    case json::kind::bool_: return "boolean";
    case json::kind::int64:
    case json::kind::uint64: return "integer";
    case json::kind::double_: return "number";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
    case json::kind::null: return "null";
    }
    return "unknown";
}

/// Why `value` does not fit `schema` at the top level ("" if it does): required members
/// present, declared member types right ("number" accepts integers).
inline std::string output_problem(const json::object& value, const json::object& schema) {
    if (const auto* req = schema.if_contains("required"); req && req->is_array())
        for (const auto& r : req->get_array())
            if (r.is_string() && !value.contains(r.get_string()))
                return "structuredContent lacks the required member '" + std::string(r.get_string()) + "'";
    const auto* props = schema.if_contains("properties");
    if (!props || !props->is_object()) return {};
    for (const auto& [k, v] : value) {
        const auto* p = props->get_object().if_contains(k);
        if (!p || !p->is_object()) continue;
        const auto* t = p->get_object().if_contains("type");
        if (!t || !t->is_string()) continue;
        const std::string want(t->get_string()), got = kind_of(v);
        if (want == got || (want == "number" && got == "integer")) continue;
        return "structuredContent member '" + std::string(k) + "' is " + got + ", the outputSchema says " + want;
    }
    return {};
}

/// The text of a result's blocks and the parts it attaches.
inline json::value convert_result(const call_result& r, tool_context& ctx, const std::optional<json::object>& schema,
                                  const std::string& tool) {
    std::string text;
    int attached = 0;
    auto add_text = [&](std::string_view t) {
        if (!text.empty()) text += '\n';
        text += t;
    };
    for (const auto& b : r.content) {
        if (!b.is_object()) continue;
        const auto& o = b.get_object();
        const std::string type = string_member(o, "type");
        if (type == "text") {
            add_text(string_member(o, "text"));
        } else if (type == "image" || type == "audio") {
            file_part f;
            f.inline_bytes = string_member(o, "data");
            f.mime_type = string_member(o, "mimeType");
            ctx.attach(part(std::move(f)));
            add_text("[" + type + " " + string_member(o, "mimeType") + " attached]");
            ++attached;
        } else if (type == "resource_link") {
            file_part f;
            f.uri = string_member(o, "uri");
            if (auto n = string_member(o, "name"); !n.empty()) f.name = n;
            if (auto m = string_member(o, "mimeType"); !m.empty()) f.mime_type = m;
            ctx.attach(part(std::move(f)));
            add_text("[resource " + string_member(o, "uri") + "]");
            ++attached;
        } else if (type == "resource") {
            const auto* res = o.if_contains("resource");
            if (!res || !res->is_object()) continue;
            const auto& ro = res->get_object();
            if (ro.contains("text")) {
                add_text(string_member(ro, "text"));
            } else {
                file_part f;
                f.uri = string_member(ro, "uri");
                f.inline_bytes = string_member(ro, "blob");
                if (auto m = string_member(ro, "mimeType"); !m.empty()) f.mime_type = m;
                ctx.attach(part(std::move(f)));
                add_text("[resource " + string_member(ro, "uri") + " attached]");
                ++attached;
            }
        }
    }
    if (r.is_error) throw tool_error(text.empty() ? "the MCP tool '" + tool + "' failed" : text);
    if (schema) {
        if (!r.structured_content)
            throw tool_error("the MCP tool '" + tool + "' declares an outputSchema but returned no structuredContent");
        if (auto why = output_problem(*r.structured_content, *schema); !why.empty())
            throw tool_error("the MCP tool '" + tool + "' returned a result its outputSchema refuses: " + why);
    }
    if (r.structured_content) return *r.structured_content;
    (void)attached;
    return json::value(std::move(text));
}

} // namespace detail

/// One tool of an MCP server.
class mcp_tool {
public:
    mcp_tool(std::shared_ptr<client> c, tool_info info, std::string prefix)
        : client_(std::move(c)), remote_(info.name), output_schema_(std::move(info.output_schema)) {
        decl_.name = prefix + info.name;
        decl_.description = !info.description.empty() ? info.description : info.title;
        decl_.parameters = std::move(info.input_schema);
    }

    const tool_declaration& declaration() const noexcept { return decl_; }
    /// The tool's name at the server.
    const std::string& remote_name() const noexcept { return remote_; }

    boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const {
        call_result r;
        std::string failure;
        try {
            r = co_await client_->call_tool(remote_, std::move(args));
        } catch (const boost::system::system_error& e) {
            failure = e.what();
        }
        if (!failure.empty()) throw tool_error("the MCP server failed: " + failure);
        co_return detail::convert_result(r, ctx, output_schema_, remote_);
    }

private:
    std::shared_ptr<client> client_;
    tool_declaration decl_;
    std::string remote_;
    std::optional<json::object> output_schema_;
};

static_assert(tool<mcp_tool>);

/// The server's tools (tools/list, every page) as a tool_set.
inline boost::asio::awaitable<tool_set> make_toolset(std::shared_ptr<client> c, toolset_options o = {}) {
    std::vector<tool_info> infos = co_await c->list_tools();
    std::vector<any_tool> tools;
    for (auto& i : infos) {
        if (!o.allow.empty() && std::find(o.allow.begin(), o.allow.end(), i.name) == o.allow.end()) continue;
        tools.emplace_back(mcp_tool(c, std::move(i), o.prefix));
    }
    co_return tool_set(std::move(tools));
}

using toolset_signature = void(boost::system::error_code, tool_set);

/// make_toolset as an asynchronous operation.
template <boost::asio::completion_token_for<toolset_signature> Token = default_completion_token_t>
auto async_mcp_toolset(std::shared_ptr<client> c, toolset_options o = {}, Token&& token = {}) {
    auto ex = c->get_executor();
    return libretto::detail::spawn_op<tool_set>(ex, nullptr, std::forward<Token>(token),
                                                [c = std::move(c), o = std::move(o)](diagnostics*) mutable {
                                                    return make_toolset(std::move(c), std::move(o));
                                                });
}

} // namespace libretto::mcp

#endif
