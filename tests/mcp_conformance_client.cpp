// The client program the official MCP conformance suite (@modelcontextprotocol/conformance)
// runs: `mcp_conformance_client <server url>`, with the scenario in
// $MCP_CONFORMANCE_SCENARIO. It connects over Streamable HTTP with libretto's client and
// does what the scenario asks of a client; the suite's server checks it. Exit status 0
// when every step worked. tests/mcp_conformance.sh runs the scenarios (ctest
// mcp_conformance); docs/mcp.md lists which pass.
#include <libretto/mcp/client.hpp>
#include <libretto/mcp/detail/rpc.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
namespace mcp = libretto::mcp;

namespace {

/// Arguments for a tool from its input schema: every required member, numbers 2, 3, ...,
/// strings "x", booleans true.
json::object arguments_for(const mcp::tool_info& t) {
    json::object args;
    const auto* props = t.input_schema.if_contains("properties");
    const auto* req = t.input_schema.if_contains("required");
    if (!props || !props->is_object() || !req || !req->is_array()) return args;
    int n = 2;
    for (const auto& r : req->get_array()) {
        if (!r.is_string()) continue;
        const auto* p = props->get_object().if_contains(r.get_string());
        const std::string type = p && p->is_object() ? mcp::detail::string_member(p->get_object(), "type") : "";
        if (type == "number" || type == "integer") args[r.get_string()] = n++;
        else if (type == "boolean") args[r.get_string()] = true;
        else args[r.get_string()] = "x";
    }
    return args;
}

/// elicitation/create: accept, with every default the requested schema gives.
json::object answer(std::string_view method, const json::object& params) {
    if (method == "elicitation/create") {
        json::object content;
        if (const auto* s = params.if_contains("requestedSchema"); s && s->is_object())
            if (const auto* props = s->get_object().if_contains("properties"); props && props->is_object())
                for (const auto& [name, p] : props->get_object())
                    if (p.is_object())
                        if (const auto* d = p.get_object().if_contains("default")) content[name] = *d;
        return {{"action", "accept"}, {"content", std::move(content)}};
    }
    if (method == "roots/list") return {{"roots", json::array{}}};
    throw boost::system::system_error(libretto::errc::not_found);
}

asio::awaitable<void> run(std::string url, std::string scenario) {
    auto ex = co_await asio::this_coro::executor;
    mcp::client_options co;
    co.client_name = "libretto-conformance-client";
    co.client_version = "1.0.0";
    co.request_timeout = std::chrono::seconds(20);
    co.on_request = answer;
    mcp::http_options ho(url);
    ho.reconnect_delay = std::chrono::milliseconds(500);
    auto c = co_await mcp::connect_http(ex, ho, co);
    std::cerr << "initialized: " << c->server().name << " " << c->server().protocol_version << "\n";
    if (scenario != "initialize") {
        auto tools = co_await c->list_tools();
        for (const auto& t : tools) {
            auto r = co_await c->call_tool(t.name, arguments_for(t));
            std::cerr << "called " << t.name << ": " << json::serialize(r.content) << (r.is_error ? " (error)" : "") << "\n";
        }
    }
    co_await c->close();
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: mcp_conformance_client <server url> (scenario in $MCP_CONFORMANCE_SCENARIO)\n";
        return 2;
    }
    const char* s = std::getenv("MCP_CONFORMANCE_SCENARIO");
    const std::string scenario = s ? s : "";
    asio::io_context io;
    int status = 0;
    asio::co_spawn(io, run(argv[argc - 1], scenario), [&](std::exception_ptr e) {
        io.stop(); // done: a stream still open to the server is dropped
        if (!e) return;
        status = 1;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            std::cerr << "mcp_conformance_client (" << scenario << "): " << x.what() << "\n";
        }
    });
    io.run();
    return status;
}
