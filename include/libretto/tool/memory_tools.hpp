// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_MEMORY_TOOLS_HPP
#define LIBRETTO_TOOL_MEMORY_TOOLS_HPP

// load_memory: a tool an llm_agent calls to search its user's long-term memory (the
// runner's runner_options::memory). docs/memory.md.
//
//   lb::llm_agent agent{{.name = "assistant", .model = model, .tools = lb::tools(lb::load_memory_tool())}};
//
//   load_memory(query)   the best matching entries of this user's earlier conversations:
//                        [{text, author, time, session_id}], best first

#include <libretto/context/callback_context.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/error.hpp>
#include <libretto/store/detail/memory_common.hpp>
#include <libretto/tool/function_tool.hpp>
#include <libretto/tool/tool_context.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/system/system_error.hpp>

#include <string>

namespace libretto {

namespace detail {

struct load_memory_args {
    std::string query;
};
BOOST_DESCRIBE_STRUCT(load_memory_args, (), (query))

template <class V = void> // a template: g++ 12 compiles a coroutine only where used (detail/config.hpp)
inline boost::asio::awaitable<json::value> load_memory_call(load_memory_args a, tool_context& ctx, std::size_t limit) {
    diagnostics d;
    auto op = ctx.async_search_memory(std::move(a.query), limit, d, dependent_as_tuple_awaitable<V>());
    auto [ec, found] = co_await std::move(op);
    if (ec) throw boost::system::system_error(ec, d.message().empty() ? ec.message() : d.message());
    json::array out;
    for (auto& e : found)
        out.emplace_back(json::object{{"text", std::move(e.text)},
                                      {"author", std::move(e.author)},
                                      {"time", e.timestamp},
                                      {"session_id", std::move(e.session_id)}});
    co_return json::value(std::move(out));
}

} // namespace detail

/// The load_memory tool; `limit`: the most entries one call returns, 1 to max_memory_limit
/// (1000), a search's limit: outside it, throws boost::system::system_error
/// (errc::invalid_argument) here rather than failing every call the model makes.
template <class = void> // a template, as the coroutine it names
inline auto load_memory_tool(std::size_t limit = 10) {
    if (auto p = detail::memory_limit_problem(limit); !p.empty())
        throw boost::system::system_error(make_error_code(errc::invalid_argument), "load_memory_tool: " + p);
    auto run = [limit](detail::load_memory_args a, tool_context& ctx) {
        return detail::load_memory_call(std::move(a), ctx, limit);
    };
    return function_tool("load_memory",
                         "Search the memory of earlier conversations with this user for the given words; returns the "
                         "best matching things that were said, newest first among equals.",
                         run);
}

} // namespace libretto

#endif
