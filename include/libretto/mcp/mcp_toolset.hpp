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

#include <libretto/detail/config.hpp>
#include <libretto/error.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/mcp/client.hpp>
#include <libretto/model/tool_declaration.hpp>
#include <libretto/tool/any_tool.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

/// What the model reads of a result (its text, or structuredContent), attaching the parts
/// it carries to `ctx`; throws tool_error for an isError result or one the tool's
/// outputSchema refuses.
LIBRETTO_DECL json::value convert_result(const call_result& r, tool_context& ctx, const std::optional<json::object>& schema,
                                         const std::string& tool);

/// The name the model sees for the server's tool `remote`: `prefix`, then `remote` with each
/// character a tool name cannot hold (is_valid_tool_name: A-Z a-z 0-9 _ -) as '_'. A name
/// longer than 64 characters keeps its first 55 and ends with '_' and 8 hex digits of a hash
/// of the whole, so that it stays distinct and the same from one run to the next.
LIBRETTO_DECL std::string model_tool_name(std::string_view prefix, std::string_view remote);

} // namespace detail

/// One tool of an MCP server.
class mcp_tool {
public:
    mcp_tool(std::shared_ptr<client> c, tool_info info, std::string prefix)
        : client_(std::move(c)), remote_(info.name), output_schema_(std::move(info.output_schema)) {
        decl_.name = detail::model_tool_name(prefix, info.name);
        decl_.description = !info.description.empty() ? info.description : info.title;
        decl_.parameters = std::move(info.input_schema);
    }

    const tool_declaration& declaration() const noexcept { return decl_; }
    /// The tool's name at the server.
    const std::string& remote_name() const noexcept { return remote_; }

    LIBRETTO_DECL boost::asio::awaitable<json::value> call(json::object args, tool_context& ctx) const;

private:
    std::shared_ptr<client> client_;
    tool_declaration decl_;
    std::string remote_;
    std::optional<json::object> output_schema_;
};

static_assert(tool<mcp_tool>);

/// The server's tools (tools/list, every page) as a tool_set, named by
/// detail::model_tool_name. Throws system_error: errc::invalid_argument for a prefix that is
/// not up to 32 characters from A-Z a-z 0-9 _ -, or an `allow` name the server does not list;
/// errc::bad_response for two tools that would have one name.
LIBRETTO_DECL boost::asio::awaitable<tool_set> make_toolset(std::shared_ptr<client> c, toolset_options o = {});

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

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/mcp/impl/mcp_toolset.ipp>
#endif

#endif
