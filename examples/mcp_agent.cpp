// mcp_agent: an agent that uses the tools of an MCP server.
//
// The program makes a directory with a file in it, starts the reference filesystem server
// (@modelcontextprotocol/server-filesystem, on node) over stdio with that directory as the
// only one it may touch, and hands the server's tools to an llm_agent under the prefix
// "fs_" (docs/mcp.md). Asked what the notes say, the model lists the directory with
// fs_list_directory, reads the file with fs_read_text_file, and answers. The program prints
// the server's log, each tool call and what the tool returned, and the answer.
//
// The model is scripted (no network, no key), so the run is the same every time; a real
// model gets the same tools: the server's names, descriptions and input schemas.
//
// Needs node and the server: scripts/setup installs it into $LIBRETTO_NPM_CACHE (default
// <source tree>/.cache/npm). Without them the program says why, prints "mcp_agent: skipped"
// and exits 0.
//
// Run: build/<preset>/examples/mcp_agent
#include <libretto/libretto.hpp>
#include <libretto/mcp/client.hpp>
#include <libretto/mcp/mcp_toolset.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace lb = libretto;
namespace mcp = libretto::mcp;

using reply = lb::scripted_reply;
using agent_runner = lb::runner<lb::llm_agent<lb::scripted_model>, lb::memory_store>;

// ---- finding node and the server ------------------------------------------------------------


/// server-filesystem's entry point: in $LIBRETTO_NPM_CACHE, else in the source tree's
/// .cache/npm (where scripts/setup puts it); "" if in neither.
std::string find_server() {
    std::vector<fs::path> caches;
    if (const char* c = std::getenv("LIBRETTO_NPM_CACHE"); c && *c) caches.emplace_back(c);
#ifdef LIBRETTO_EXAMPLE_SOURCE_DIR // set by examples/CMakeLists.txt
    caches.push_back(fs::path(LIBRETTO_EXAMPLE_SOURCE_DIR) / ".cache" / "npm");
#endif
    for (const auto& c : caches) {
        const fs::path index = c / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js";
        if (fs::exists(index)) return index.string();
    }
    return {};
}

// ---- the agent --------------------------------------------------------------------------------

asio::awaitable<void> ask(fs::path dir, std::string node, std::string server) {
    const auto ex = co_await asio::this_coro::executor;

    // 1. Start the server, allowed to touch `dir` only, and connect.
    mcp::stdio_options so;
    so.command = node;
    so.args = {server, dir.string()};
    so.on_stderr = [](std::string_view line) { std::cout << "  (server log: " << line << ")\n"; };
    mcp::client_options co;
    co.client_name = "mcp_agent";
    std::shared_ptr<mcp::client> files = co_await mcp::connect_stdio(ex, so, co);
    std::cout << "connected to " << files->server().name << " " << files->server().version << " (MCP "
              << files->server().protocol_version << ")\n";

    // 2. Its tools, as libretto tools: only the two read-only ones this agent needs, prefixed.
    mcp::toolset_options to("fs_", {"list_directory", "read_text_file"});
    lb::tool_set tools = co_await mcp::make_toolset(files, to);
    for (const auto& name : tools.names()) std::cout << "tool " << name << "\n";

    // 3. The model: what a model would answer, step by step.
    lb::scripted_model model{
        ex,
        {reply::tool_call("fs_list_directory", {{"path", dir.string()}}).with_text("Let me look at the directory."),
         reply::tool_call("fs_read_text_file", {{"path", (dir / "notes.txt").string()}}),
         reply::text("Your notes say: buy milk, call the plumber about the kitchen tap, and renew the "
                     "library books before Friday.")}};
    lb::llm_agent assistant{lb::llm_agent_options<lb::scripted_model>{
        .name = "assistant",
        .instruction = "You help the user with the files in " + dir.string() + ".",
        .model = model,
        .tools = tools}};
    lb::memory_store store(ex);
    agent_runner runner(assistant, store);

    // 4. One turn; print what happens as it happens.
    const std::string question = "What do my notes say?";
    std::cout << "user> " << question << "\n";
    lb::run_to_end_options o;
    o.on_event = [](const lb::event& e) {
        if (e.partial) return;
        for (const auto& c : e.tool_calls()) std::cout << "  (calls " << c.tool_name << " " << lb::stringify(c.args) << ")\n";
        for (const auto& r : e.tool_responses())
            std::cout << "  (" << r.tool_name << " -> " << (r.error ? "error: " + *r.error : lb::stringify(r.result)) << ")\n";
    };
    lb::run_options ro("files", "dana", "notes");
    lb::turn_result r = co_await lb::async_run_to_end(runner, ro, question, std::move(o)); // throws if the turn fails
    std::cout << "assistant> " << r.final_answer << "\n";

    // 5. Stop the server (stdin closed: it exits).
    co_await files->close();
    std::cout << "server closed\n";
}

int main() {
    const std::string node = mcp::find_executable("node");
    const std::string server = find_server();
    if (node.empty() || server.empty()) {
        std::cout << "mcp_agent: "
                  << (node.empty() ? "node is not on PATH"
                                   : "@modelcontextprotocol/server-filesystem is not installed (scripts/setup installs it "
                                     "into $LIBRETTO_NPM_CACHE, default <source tree>/.cache/npm)")
                  << "\nmcp_agent: skipped\n";
        return 0;
    }

    // The directory the server may use, with one file in it. Canonical: the server compares
    // real paths (/tmp may be a symbolic link).
    fs::path dir = fs::temp_directory_path() / ("libretto-mcp-agent-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    dir = fs::canonical(dir);
    std::ofstream(dir / "notes.txt") << "- buy milk\n- call the plumber about the kitchen tap\n- renew the library books before Friday\n";

    int status = 0;
    try {
        asio::io_context io;
        std::exception_ptr failure;
        asio::co_spawn(io, ask(dir, node, server), [&](std::exception_ptr e) { failure = e; });
        io.run();
        if (failure) std::rethrow_exception(failure);
    } catch (const std::exception& e) {
        std::cerr << "mcp_agent: " << e.what() << "\n";
        status = 1;
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return status;
}
