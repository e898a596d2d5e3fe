// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_ARTIFACT_TOOLS_HPP
#define LIBRETTO_TOOL_ARTIFACT_TOOLS_HPP

// Ready-made tools for an llm_agent over the invocation's artifact service (the runner's
// runner_options::artifacts). docs/artifacts.md.
//
//   lb::llm_agent agent{{.name = "writer", .model = model, .tools = lb::artifact_tools()}};
//
//   save_artifact(name, content, mime_type?)  a new version of a text artifact; recorded in
//                                             the response event's artifact_delta
//   load_artifact(name, version?)             the artifact's info; its bytes enter the model's
//                                             next request as a file part (inline up to
//                                             inline_limit bytes, else a reference)
//   list_artifacts()                          the names (this session's and the user's)
//
// Failures (no such artifact or version, a bad name, no service, a service that fails) are
// tool errors the model reads, with the service's words.

#include <libretto/context/callback_context.hpp>
#include <libretto/detail/base64.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/tool/function_tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/system/system_error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace libretto {

struct artifact_tools_options {
    /// A loaded artifact up to this many bytes goes into the request inline (base64); a
    /// larger one as a reference (artifact://<name>/<version>), with its info.
    std::size_t inline_limit = 256 * 1024;
    /// The MIME type of a save that names none.
    std::string default_mime_type = "text/plain";
};

namespace detail {

struct save_artifact_args {
    std::string name;
    std::string content;
    std::optional<std::string> mime_type;
};
BOOST_DESCRIBE_STRUCT(save_artifact_args, (), (name, content, mime_type))

struct load_artifact_args {
    std::string name;
    std::optional<std::int64_t> version;
};
BOOST_DESCRIBE_STRUCT(load_artifact_args, (), (name, version))

inline json::object artifact_info_json(const artifact_info& i) {
    return json::object{{"name", i.name},
                        {"version", i.version},
                        {"mime_type", i.mime_type},
                        {"size", i.size}};
}

[[noreturn]] inline void artifact_tool_failed(boost::system::error_code ec, const diagnostics& d) {
    throw boost::system::system_error(ec, d.message().empty() ? ec.message() : d.message());
}

// The tools' bodies: coroutines whose parameters (copied into their frames) carry the
// options, so nothing they read belongs to the lambda that started them.
template <class V = void> // a template: g++ 12 compiles a coroutine only where used (detail/config.hpp)
inline boost::asio::awaitable<json::value> save_artifact_call(save_artifact_args a, tool_context& ctx, std::string mime) {
    diagnostics d;
    auto op = ctx.async_save_artifact(std::move(a.name), std::move(a.content), a.mime_type.value_or(mime), {}, d,
                                      dependent_as_tuple_awaitable<V>());
    auto [ec, info] = co_await std::move(op);
    if (ec) artifact_tool_failed(ec, d);
    co_return json::value(artifact_info_json(info));
}

template <class V = void>
inline boost::asio::awaitable<json::value> load_artifact_call(load_artifact_args a, tool_context& ctx, std::size_t limit) {
    diagnostics d;
    const std::string name = a.name;
    auto op = ctx.async_load_artifact(std::move(a.name), a.version, d, dependent_as_tuple_awaitable<V>());
    auto [ec, found] = co_await std::move(op);
    if (ec) artifact_tool_failed(ec, d);
    if (!found) {
        d.assign("no artifact named '" + name + "'");
        artifact_tool_failed(errc::not_found, d);
    }
    file_part f;
    f.name = found->info.name;
    f.mime_type = found->info.mime_type;
    json::object result = artifact_info_json(found->info);
    if (found->data.size() <= limit) {
        f.inline_bytes = base64(found->data);
        result["attached"] = "inline";
    } else {
        f.uri = "artifact://" + found->info.name + "/" + std::to_string(found->info.version);
        result["attached"] = "reference";
    }
    ctx.attach(std::move(f));
    co_return json::value(std::move(result));
}

// The service itself, not callback_context::async_list_artifacts, which keeps no words: a
// failure is the service's message, as the other tools' are.
template <class V = void>
inline boost::asio::awaitable<json::value> list_artifacts_call(tool_context& ctx) {
    diagnostics d;
    const invocation_context& inv = ctx.context();
    any_artifact_service* service = inv.artifact_service();
    if (!service) {
        d.assign("no artifact service: give the runner one (runner_options::artifacts)");
        artifact_tool_failed(errc::invalid_argument, d);
    }
    auto op = service->async_list(inv.app_name(), inv.user_id(), inv.session_id(), d, dependent_as_tuple_awaitable<V>());
    auto [ec, names] = co_await std::move(op);
    if (ec) artifact_tool_failed(ec, d);
    json::array out;
    for (auto& n : names) out.emplace_back(std::move(n));
    co_return json::value(std::move(out));
}

} // namespace detail

/// The save, load and list tools (see above).
template <class = void> // a template, as the coroutines it names
inline tool_set artifact_tools(artifact_tools_options o = {}) {
    auto save = [mime = o.default_mime_type](detail::save_artifact_args a, tool_context& ctx) {
        return detail::save_artifact_call(std::move(a), ctx, mime);
    };
    auto load = [limit = o.inline_limit](detail::load_artifact_args a, tool_context& ctx) {
        return detail::load_artifact_call(std::move(a), ctx, limit);
    };
    return tools(function_tool("save_artifact",
                               "Save text as a new version of a named artifact (a file kept with this conversation; a "
                               "name beginning with 'user:' is kept for every conversation of the user).",
                               save),
                 function_tool("load_artifact",
                               "Load a named artifact (the latest version, or the given one); its content is attached "
                               "for you to read.",
                               load),
                 function_tool("list_artifacts", "List the names of the saved artifacts.", detail::list_artifacts_call<>));
}

} // namespace libretto

#endif
