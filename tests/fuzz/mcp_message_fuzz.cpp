// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target mcp_message (mcp/detail/rpc.hpp, mcp_toolset's convert_result): the input is one
// line an MCP server sends, read the way the client reads it.
//
//   - parse_message never throws: it gives a JSON-RPC 2.0 object or nothing;
//   - take_result gives the result object, or throws system_error with one of the codes a
//     JSON-RPC error maps to (not_found, invalid_argument, tool_error) or bad_response;
//   - on a result, read_server_info never throws; read_tools and read_call_result give their
//     values or throw system_error(bad_response); every tool read has a name and an
//     inputSchema of type "object"; a listing's cursor is taken once and refused the second
//     time;
//   - convert_result (with and without an outputSchema) gives what the model reads, or throws
//     tool_error: what it gives, and every part it attaches, is JSON a store keeps (finite
//     numbers, UTF-8, nesting within max_json_depth at the result's level), so a server's
//     answer can never make the turn's event one the store refuses.

#include "fuzz_support.hpp"

#include <libretto/context/invocation_context.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/mcp/detail/rpc.hpp>
#include <libretto/mcp/mcp_toolset.hpp>
#include <libretto/tool/tool_context.hpp>

#include <boost/system/system_error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lb = libretto;
namespace mcp = libretto::mcp;
namespace json = boost::json;

namespace {

bool known_code(const boost::system::error_code& ec) {
    return ec == lb::errc::bad_response || ec == lb::errc::not_found || ec == lb::errc::invalid_argument ||
           ec == lb::errc::tool_error;
}

void check_storable_part(const lb::part& p) {
    if (const auto* f = std::get_if<lb::file_part>(&p)) {
        for (const auto* s : {&f->uri, &f->inline_bytes, &f->mime_type, &f->name})
            if (*s) FUZZ_CHECK(!lb::detail::find_invalid_utf8(**s), "an attached part holds a string that is not UTF-8");
    }
}

void convert(const mcp::call_result& r, const std::optional<json::object>& schema) {
    lb::invocation_options o;
    o.invocation_id = "inv";
    o.session_id = "s1";
    o.agent_name = "assistant";
    lb::invocation_context inv(o);
    lb::tool_context ctx(inv, "c1", "t");
    try {
        json::value v = mcp::detail::convert_result(r, ctx, schema, "t");
        auto fault = lb::detail::check_json_value(v, 4, "result");
        FUZZ_CHECK(!fault, "convert_result gave what no store keeps: " + fault->message());
        for (const auto& p : ctx.take_attachments()) check_storable_part(p);
    } catch (const lb::tool_error& e) {
        FUZZ_CHECK(std::string_view(e.what()).size() > 0, "a tool_error without a message");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<json::object> m = mcp::detail::parse_message(text); // must not throw
    if (!m) return 0;
    FUZZ_CHECK(m->contains("jsonrpc"), "parse_message gave an object without jsonrpc");

    json::object result;
    try {
        result = mcp::detail::take_result(*m, "tools/call");
    } catch (const boost::system::system_error& e) {
        FUZZ_CHECK(known_code(e.code()), "take_result threw " + e.code().message());
        return 0;
    }

    (void)mcp::detail::read_server_info(result); // must not throw

    std::vector<mcp::tool_info> tools;
    try {
        mcp::detail::read_tools(result, tools);
        for (const auto& t : tools) {
            FUZZ_CHECK(!t.name.empty(), "a tool without a name was read");
            FUZZ_CHECK(mcp::detail::string_member(t.input_schema, "type") == "object", "an inputSchema not of type object");
            (void)mcp::detail::model_tool_name("p_", t.name);
            FUZZ_CHECK(lb::is_valid_tool_name(mcp::detail::model_tool_name("p_", t.name)),
                       "model_tool_name gave a name no model takes for " + fuzz::shown(t.name));
        }
    } catch (const boost::system::system_error& e) {
        FUZZ_CHECK(e.code() == lb::errc::bad_response, "read_tools threw " + e.code().message());
    }

    try {
        mcp::detail::pager pages{"tools/list"};
        const std::string cursor = pages.next(result);
        if (!cursor.empty()) {
            bool refused = false;
            try {
                (void)pages.next(result);
            } catch (const boost::system::system_error& e) {
                refused = e.code() == lb::errc::bad_response;
            }
            FUZZ_CHECK(refused, "a cursor taken twice was not refused");
        }
    } catch (const boost::system::system_error& e) {
        FUZZ_CHECK(false, "the first cursor was refused: " + e.code().message());
    }

    mcp::call_result cr;
    try {
        cr = mcp::detail::read_call_result(result, "t");
    } catch (const boost::system::system_error& e) {
        FUZZ_CHECK(e.code() == lb::errc::bad_response, "read_call_result threw " + e.code().message());
        return 0;
    }
    convert(cr, std::nullopt);
    json::object schema{{"type", "object"}, {"required", json::array{"n"}},
                        {"properties", json::object{{"n", json::object{{"type", "number"}}}}}};
    convert(cr, schema);
    return 0;
}
