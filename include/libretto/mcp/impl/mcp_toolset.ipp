// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_IMPL_MCP_TOOLSET_IPP
#define LIBRETTO_MCP_IMPL_MCP_TOOLSET_IPP

// mcp_toolset's definitions: included by mcp_toolset.hpp in a header-only build, compiled
// once by <libretto/src.hpp> with LIBRETTO_SEPARATE_COMPILATION.

#include <libretto/mcp/mcp_toolset.hpp>

#include <libretto/event/detail/json_text.hpp>
#include <libretto/mcp/detail/rpc.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace libretto::mcp {

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

// Why `value` does not fit `schema` at the top level ("" if it does): required members
// present, declared member types right ("number" accepts integers).
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

LIBRETTO_DECL json::value convert_result(const call_result& r, tool_context& ctx, const std::optional<json::object>& schema,
                                  const std::string& tool) {
    std::string text;
    int attached = 0;
    // The server's strings go into the response's event: one that is not UTF-8 would make
    // that event one no store takes, so it is the tool's error, named, instead.
    auto string_member = [&](const json::object& o, std::string_view key) {
        std::string v = detail::string_member(o, key);
        if (auto f = libretto::detail::find_invalid_utf8(v))
            throw tool_error("the MCP tool '" + tool + "' returned a content block whose '" + std::string(key) +
                             "' is not UTF-8: " + f->message());
        return v;
    };
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
    if (r.structured_content) {
        // A number too large for a double arrives as inf (json::parse): no store keeps it.
        if (auto f = libretto::detail::check_json_object(*r.structured_content, 4, "structuredContent"))
            throw tool_error("the MCP tool '" + tool + "' returned structuredContent no store can keep: " + f->message());
        return *r.structured_content;
    }
    (void)attached;
    return json::value(std::move(text));
}

LIBRETTO_DECL std::string model_tool_name(std::string_view prefix, std::string_view remote) {
    std::string name(prefix);
    for (char ch : remote) name += is_valid_tool_name(std::string_view(&ch, 1)) ? ch : '_';
    if (name.size() <= 64) return name;
    std::uint32_t h = 2166136261u; // FNV-1a over the original name
    for (std::string_view part : {prefix, remote})
        for (unsigned char ch : part) h = (h ^ ch) * 16777619u;
    char tail[10];
    std::snprintf(tail, sizeof tail, "_%08x", static_cast<unsigned>(h));
    name.resize(55);
    return name += tail;
}

} // namespace detail

LIBRETTO_DECL boost::asio::awaitable<json::value> mcp_tool::call(json::object args, tool_context& ctx) const {
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

LIBRETTO_DECL boost::asio::awaitable<tool_set> make_toolset(std::shared_ptr<client> c, toolset_options o) {
    if (o.prefix.size() > 32 || (!o.prefix.empty() && !is_valid_tool_name(o.prefix)))
        throw boost::system::system_error(errc::invalid_argument, "toolset_options::prefix '" + o.prefix.substr(0, 64) +
                                                                      "' is not up to 32 characters from A-Z a-z 0-9 _ -");
    std::vector<tool_info> infos = co_await c->list_tools();
    auto listed = [&](const std::string& name) {
        return std::any_of(infos.begin(), infos.end(), [&](const tool_info& i) { return i.name == name; });
    };
    std::string missing;
    for (const auto& a : o.allow)
        if (!listed(a)) missing += (missing.empty() ? "'" : ", '") + a + "'";
    if (!missing.empty())
        throw boost::system::system_error(errc::invalid_argument,
                                          "toolset_options::allow names " + missing + ", which the server does not list");
    std::vector<any_tool> tools;
    std::map<std::string, std::string, std::less<>> remote_of; // the model's name -> the server's
    for (auto& i : infos) {
        if (!o.allow.empty() && std::find(o.allow.begin(), o.allow.end(), i.name) == o.allow.end()) continue;
        mcp_tool t(c, std::move(i), o.prefix);
        const auto [at, fresh] = remote_of.emplace(t.declaration().name, t.remote_name());
        if (!fresh)
            throw boost::system::system_error(
                errc::bad_response, at->second == t.remote_name()
                                        ? "tools/list: the server lists the tool '" + at->second + "' twice"
                                        : "tools/list: the tools '" + at->second + "' and '" + t.remote_name() +
                                              "' would both be '" + at->first + "' for the model");
        tools.emplace_back(std::move(t));
    }
    co_return tool_set(std::move(tools));
}

} // namespace libretto::mcp

#endif
