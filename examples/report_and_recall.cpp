// report_and_recall: an agent that saves a report as an artifact and, in a later
// conversation, recalls the earlier one from memory.
//
// Monday: the user tells the agent about a supplier problem; the agent writes a short
// report with the save_artifact tool under a "user:" name (a file beside the sessions, kept for
// every conversation of the user, version 0). Thursday, in a
// new session: the user asks what happened with the supplier; the runner recalls Monday's
// conversation into the agent's instruction (memory_preload), the agent searches its memory
// with the load_memory tool and loads the report with load_artifact, whose bytes reach the
// model as a file part. The model is scripted, so the run is the same every time.
//
// Run: build/<preset>/examples/report_and_recall (files in $LIBRETTO_SESSIONS, default
// /tmp/libretto-report-and-recall, removed first).
#include <libretto/libretto.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

namespace asio = boost::asio;
namespace lb = libretto;

using reply = lb::scripted_reply;
using agent_runner = lb::runner<lb::llm_agent<lb::scripted_model>, lb::jsonl_store>;

asio::awaitable<void> say(agent_runner& runner, std::string session, std::string text) {
    std::cout << "[" << session << "] user> " << text << "\n";
    lb::run_to_end_options o;
    o.on_event = [](const lb::event& e) {
        if (e.partial) return;
        for (const auto& c : e.tool_calls()) std::cout << "  (calls " << c.tool_name << " " << lb::stringify(c.args) << ")\n";
        for (const auto& r : e.tool_responses())
            std::cout << "  (" << r.tool_name << " -> " << (r.error ? "error: " + *r.error : lb::stringify(r.result)) << ")\n";
        for (const auto& [name, version] : e.actions.artifact_delta)
            std::cout << "  (saved artifact " << std::string(name) << " version " << lb::stringify(version) << ")\n";
    };
    lb::turn_result r = co_await lb::async_run_to_end(runner, lb::run_options("ops", "dana", std::move(session)),
                                                      std::move(text), std::move(o));
    std::cout << "[assistant] " << r.final_answer << "\n";
}

int main() {
    const std::filesystem::path dir = [] {
        const char* v = std::getenv("LIBRETTO_SESSIONS");
        return std::filesystem::path(v && *v ? v : "/tmp/libretto-report-and-recall");
    }();
    std::filesystem::remove_all(dir);
    asio::io_context io;
    lb::jsonl_store store{io.get_executor(), {.directory = dir}};
    lb::any_artifact_service files{io.get_executor(), lb::file_artifact_service({.directory = dir})};
    lb::any_memory_service memory{io.get_executor(), lb::in_memory_memory_service{}};

    const std::string report = "# Supplier incident\n\nAcme Metals shipped 400 bolts of the wrong grade on Monday. "
                               "Replacement promised for Friday.\n";
    lb::scripted_model model{
        io.get_executor(),
        {// Monday
         reply::tool_call("save_artifact", {{"name", "user:supplier-report.md"}, {"content", report}, {"mime_type", "text/markdown"}}),
         reply::text("I wrote it down in user:supplier-report.md, kept for all your conversations."),
         // Thursday
         reply::tool_call("load_memory", {{"query", "Acme bolts"}}),
         reply::tool_call("load_artifact", {{"name", "user:supplier-report.md"}}),
         reply::text("On Monday Acme Metals shipped 400 bolts of the wrong grade; the replacement is due Friday "
                     "(see user:supplier-report.md).")}};
    lb::tool_set tools = lb::artifact_tools(); // save_artifact, load_artifact, list_artifacts
    tools.add(lb::load_memory_tool());
    lb::llm_agent assistant{lb::llm_agent_options<lb::scripted_model>{
        .name = "ops_assistant", .instruction = "You keep track of operational incidents.", .model = model, .tools = tools}};

    lb::runner_options options;
    options.artifacts = &files;
    options.memory = &memory;
    options.memory_preload = 3;
    try {
        agent_runner runner{assistant, store, options};
        std::exception_ptr failure;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                co_await say(runner, "monday", "Acme Metals sent 400 bolts of the wrong grade. Please write a report.");
                co_await say(runner, "thursday", "What happened with Acme and the bolts?");
            },
            [&](std::exception_ptr e) { failure = e; });
        io.run();
        if (failure) std::rethrow_exception(failure);
        const auto requests = model.requests();
        const bool recalled = requests.size() >= 3 &&
                              requests[2].system_instruction.find("<past_conversations>") != std::string::npos;
        std::cout << "recalled into Thursday's instruction: " << (recalled ? "yes" : "no") << "\n";
    } catch (const std::exception& e) {
        std::cerr << "report_and_recall: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
