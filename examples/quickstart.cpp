// quickstart: an LLM agent with two tools and a persistent session.
//
// An llm_agent answers weather questions with two function tools. A runner stores every
// event of each turn in a JSON Lines session store, so the conversation survives the
// program: run it twice and the second run continues the same session.
//
// The model is scripted (no network, no key): lb::scripted_model plays the replies a
// model would send. The OpenAI-compatible model is not in libretto yet; when
// LIBRETTO_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY are set, this program says so and
// still uses the script.
//
// Build and run: scripts/demo      (sessions in $LIBRETTO_SESSIONS, default /tmp/libretto-quickstart)
#include <libretto/agent/llm_agent.hpp>
#include <libretto/libretto.hpp>
#include <libretto/session/jsonl_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;

// ---- the tools ----------------------------------------------------------------------------

struct weather_args {
    std::string city;
};
BOOST_DESCRIBE_STRUCT(weather_args, (), (city))

// Asynchronous, with the tool context: remembers the city in the session state.
asio::awaitable<json::value> get_weather(weather_args args, lb::tool_context& ctx) {
    ctx.state()["last_city"] = args.city; // stored as the tool response's state_delta
    const int temp_c = args.city == "Oslo" ? 21 : 17;
    json::object out{{"city", args.city}, {"temp_c", temp_c}, {"sky", "clear"}};
    co_return out;
}

struct convert_args {
    double celsius;
};
BOOST_DESCRIBE_STRUCT(convert_args, (), (celsius))

// Synchronous, arguments only.
double to_fahrenheit(convert_args a) { return a.celsius * 9.0 / 5.0 + 32.0; }

// ---- the model ----------------------------------------------------------------------------

// What a model would answer in the two turns below: call a tool, then another, then reply.
lb::scripted_model make_model(asio::io_context& io) {
    return lb::scripted_model(io.get_executor(),
                              {// turn 1: "What's the weather in Oslo, in Fahrenheit?"
                               lb::scripted_reply::tool_call("get_weather", {{"city", "Oslo"}})
                                   .with_text("Let me check.")
                                   .with_usage(412, 18),
                               lb::scripted_reply::tool_call("to_fahrenheit", {{"celsius", 21}}).with_usage(470, 15),
                               lb::scripted_reply::text("It is 21 °C (69.8 °F) and clear in Oslo.")
                                   .in_chunks(4)
                                   .with_usage(520, 14),
                               // turn 2: "And in Bergen?"
                               lb::scripted_reply::tool_call("get_weather", {{"city", "Bergen"}}).with_usage(560, 16),
                               lb::scripted_reply::text("Bergen: 17 °C and clear, a little cooler than Oslo.")
                                   .in_chunks(3)
                                   .with_usage(610, 15)});
}

void note_on_real_endpoint() {
    const bool wanted = std::getenv("LIBRETTO_MODEL") || std::getenv("OPENAI_BASE_URL") || std::getenv("OPENAI_API_KEY");
    if (wanted)
        std::cout << "note: LIBRETTO_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY are set, but libretto has no "
                     "OpenAI-compatible model yet;\n      this run uses the scripted model.\n\n";
}

// ---- one turn -----------------------------------------------------------------------------

template <class Runner>
asio::awaitable<void> turn(Runner& runner, lb::run_options options, std::string question) {
    std::cout << "user> " << question << "\n";
    lb::event_stream events = runner.run(std::move(options), std::move(question));
    bool streaming = false;
    while (auto ev = co_await events.next()) {
        if (ev->partial) { // streamed text: shown, never stored
            if (!streaming) std::cout << ev->author << "> ";
            std::cout << ev->text() << std::flush;
            streaming = true;
            continue;
        }
        if (streaming) std::cout << "\n";
        streaming = false;
        for (const auto& call : ev->tool_calls())
            std::cout << "  [#" << ev->sequence << " call " << call.tool_name << json::serialize(call.args) << "]\n";
        for (const auto& r : ev->tool_responses())
            std::cout << "  [#" << ev->sequence << " " << r.tool_name << " -> "
                      << (r.error ? "error: " + *r.error : json::serialize(r.result)) << "]\n";
        if (ev->is_final_response()) std::cout << "  [#" << ev->sequence << " final answer stored]\n";
    }
}

asio::awaitable<void> conversation(lb::runner<lb::llm_agent<lb::scripted_model>, lb::jsonl_store>& runner,
                                   lb::jsonl_store& store) {
    lb::run_options options;
    options.app = "quickstart";
    options.user = "u1";
    options.session = "weather";

    auto t1 = turn(runner, options, "What's the weather in Oslo, in Fahrenheit?");
    co_await std::move(t1);
    auto t2 = turn(runner, options, "And in Bergen?");
    co_await std::move(t2);

    // What is stored: the whole session, as the next run (or another process) loads it.
    lb::session_key key{options.app, options.user, options.session};
    auto get = store.async_get(std::move(key), lb::get_options{}, asio::use_awaitable);
    std::optional<lb::session> s = co_await std::move(get);
    std::cout << "\nsession '" << s->id << "': " << s->events.size() << " events stored (user messages, tool calls, "
              << "tool results, answers; partials are never stored)\n";
    std::cout << "state: " << json::serialize(s->state) << "\n";
}

int main() {
    try {
        note_on_real_endpoint();
        asio::io_context io;

        lb::scripted_model model = make_model(io);
        lb::llm_agent assistant{lb::llm_agent_options<lb::scripted_model>{
            .name = "assistant",
            .instruction = "You answer weather questions. The user's last city: {last_city?}.",
            .model = model,
            .tools = lb::tools(lb::function_tool("get_weather", "Current weather in a city", get_weather),
                               lb::function_tool("to_fahrenheit", "Converts Celsius to Fahrenheit", to_fahrenheit)),
        }};

        const char* dir = std::getenv("LIBRETTO_SESSIONS");
        lb::jsonl_store_options so;
        so.directory = dir ? std::filesystem::path(dir) : std::filesystem::temp_directory_path() / "libretto-quickstart";
        lb::jsonl_store store{io.get_executor(), so};
        lb::runner runner{assistant, store};
        std::cout << "sessions in " << so.directory.string() << " (run again to continue the session)\n\n";

        std::exception_ptr failure;
        asio::co_spawn(io, conversation(runner, store), [&](std::exception_ptr e) { failure = e; });
        io.run();
        if (failure) std::rethrow_exception(failure);
        std::cout << "model calls: " << model.request_count() << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "quickstart: " << e.what() << "\n";
        return 1;
    }
}
