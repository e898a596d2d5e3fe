// quickstart: an LLM agent with two tools and a persistent session.
//
// An llm_agent answers weather questions with two function tools. A runner stores every
// event of each turn in a JSON Lines session store, so the conversation survives the
// program: run it twice and the second run continues the same session.
//
// The model: a real provider when the environment names one, else a script (no network,
// no key) playing the replies a model would send. The program says which it uses.
//   ANTHROPIC_API_KEY (+ ANTHROPIC_MODEL, ANTHROPIC_BASE_URL)   anthropic_model
//   LIBRETTO_MODEL, OPENAI_API_KEY or OPENAI_BASE_URL            openai_model (OpenAI, vLLM,
//     (+ OPENAI_MODEL)                                           llama.cpp server, Ollama)
//   LIBRETTO_MODEL=scripted                                      the script, whatever is set
// LIBRETTO_MODEL (other than "scripted") is the model's name and wins over OPENAI_MODEL and
// ANTHROPIC_MODEL. The providers need TLS: a build without libretto::openssl (OpenSSL 3)
// always runs the script. The agent holds an lb::any_model, so one agent type serves all.
//
// Build and run: scripts/demo      (sessions in $LIBRETTO_SESSIONS, default /tmp/libretto-quickstart)
#include <libretto/agent/llm_agent.hpp>
#include <libretto/libretto.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/store/jsonl_store.hpp>
// Defined by examples/CMakeLists.txt when libretto::openssl exists (and links OpenSSL),
// which also builds quickstart without it.
#ifdef LIBRETTO_EXAMPLE_HAVE_OPENSSL
#include <libretto/http/https_transport.hpp>
#include <libretto/provider/anthropic_model.hpp>
#include <libretto/provider/openai_model.hpp>
#define QUICKSTART_HAS_PROVIDERS 1
#endif

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

/// The model this run uses, and a line saying which.
struct chosen_model {
    lb::any_model model;
    std::string description;
    std::optional<lb::scripted_model> script; // when scripted: to report its calls
};

chosen_model choose_model(asio::io_context& io) {
    auto env = [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v ? v : "");
    };
    const std::string name = env("LIBRETTO_MODEL"); // a model's name, or "scripted"
#ifdef QUICKSTART_HAS_PROVIDERS
    if (name != "scripted") {
        if (!env("ANTHROPIC_API_KEY").empty() || !env("ANTHROPIC_AUTH_TOKEN").empty()) {
            auto o = lb::anthropic_options::from_environment();
            if (!name.empty()) o.model = name;
            if (o.model.empty()) o.model = "claude-sonnet-4-5"; // ANTHROPIC_MODEL picks another
            lb::http::https_transport http{io.get_executor()};
            std::string what = "anthropic_model '" + o.model + "' at " + o.base_url + " (ANTHROPIC_API_KEY is set)";
            return {lb::any_model(lb::anthropic_model<lb::http::https_transport>{http, std::move(o)}), what, {}};
        }
        if (!name.empty() || !env("OPENAI_API_KEY").empty() || !env("OPENAI_BASE_URL").empty()) {
            auto o = lb::openai_options::from_environment();
            if (!name.empty()) o.model = name;
            // OpenAI needs a model name; local servers (llama.cpp, a one-model vLLM) do not.
            if (o.model.empty() && o.base_url == lb::openai_options{}.base_url) o.model = "gpt-4.1-mini";
            lb::http::https_transport http{io.get_executor()};
            std::string what = "openai_model '" + o.model + "' at " + o.base_url + " (LIBRETTO_MODEL or OPENAI_* is set)";
            return {lb::any_model(lb::openai_model<lb::http::https_transport>{http, std::move(o)}), what, {}};
        }
    }
#endif
    std::string why = name == "scripted" ? "LIBRETTO_MODEL=scripted" : "no provider named in the environment";
#ifndef QUICKSTART_HAS_PROVIDERS
    // Say so rather than quietly ignore the provider the environment names.
    if (name != "scripted" && (!name.empty() || !env("OPENAI_API_KEY").empty() || !env("OPENAI_BASE_URL").empty() ||
                               !env("ANTHROPIC_API_KEY").empty() || !env("ANTHROPIC_AUTH_TOKEN").empty()))
        why = "this build has no TLS: libretto::openssl (OpenSSL 3) is missing";
#endif
    lb::scripted_model m = make_model(io);
    return {lb::any_model(m), "the scripted model (" + why + ")", m};
}

// ---- one turn -----------------------------------------------------------------------------

// Runs one turn to its end (lb::run_to_end runs the io_context until the turn is over),
// printing the events as they arrive. False if the turn failed.
template <class Runner>
bool turn(Runner& runner, const lb::run_options& options, std::string question) {
    std::cout << "user> " << question << "\n";
    bool streaming = false;
    lb::run_to_end_options o;
    o.on_event = [&streaming](const lb::event& ev) {
        if (ev.partial) { // streamed text: shown, never stored
            if (!streaming) std::cout << ev.author << "> ";
            std::cout << ev.text() << std::flush;
            streaming = true;
            return;
        }
        if (streaming) std::cout << "\n";
        streaming = false;
        for (const auto& call : ev.tool_calls())
            std::cout << "  [#" << ev.sequence << " call " << call.tool_name << lb::stringify(call.args) << "]\n";
        for (const auto& r : ev.tool_responses())
            std::cout << "  [#" << ev.sequence << " " << r.tool_name << " -> "
                      << (r.error ? "error: " + *r.error : lb::stringify(r.result)) << "]\n";
        if (ev.is_final_response()) std::cout << "  [#" << ev.sequence << " final answer stored]\n";
    };
    lb::turn_result r = lb::run_to_end(runner, options, std::move(question), std::move(o));
    if (streaming) std::cout << "\n";
    // The model failed (network, key, quota) or the store did: the code and the words.
    if (!r.ok()) std::cerr << "quickstart: the turn failed: " << r.error.message() << ": " << r.message() << "\n";
    return r.ok();
}

// What is stored: the whole session, as the next run (or another process) loads it.
asio::awaitable<void> show_session(lb::jsonl_store& store, const lb::run_options& options) {
    lb::session_key key{options.app, options.user, options.session};
    auto get = store.async_get(std::move(key), lb::get_options{}, asio::use_awaitable);
    std::optional<lb::session> s = co_await std::move(get);
    std::cout << "\nsession '" << s->id << "': " << s->events.size() << " events stored (user messages, tool calls, "
              << "tool results, answers; partials are never stored)\n";
    std::cout << "state: " << lb::stringify(s->state) << "\n";
}

int main() {
    try {
        asio::io_context io;

        chosen_model chosen = choose_model(io);
        std::cout << "model: " << chosen.description << "\n";
        lb::llm_agent assistant{lb::llm_agent_options<lb::any_model>{
            .name = "assistant",
            .instruction = "You answer weather questions. The user's last city: {last_city?}.",
            .model = chosen.model,
            .tools = lb::tools(lb::function_tool("get_weather", "Current weather in a city", get_weather),
                               lb::function_tool("to_fahrenheit", "Converts Celsius to Fahrenheit", to_fahrenheit)),
        }};

        const char* dir = std::getenv("LIBRETTO_SESSIONS");
        lb::jsonl_store_options so;
        so.directory = dir ? std::filesystem::path(dir) : std::filesystem::temp_directory_path() / "libretto-quickstart";
        lb::jsonl_store store{io.get_executor(), so};
        lb::runner runner{assistant, store};
        std::cout << "sessions in " << so.directory.string() << " (run again to continue the session)\n\n";

        lb::run_options options;
        options.app = "quickstart";
        options.user = "u1";
        options.session = "weather";
        if (!turn(runner, options, "What's the weather in Oslo, in Fahrenheit?")) return 1;
        if (!turn(runner, options, "And in Bergen?")) return 1;

        std::exception_ptr failure;
        asio::co_spawn(io, show_session(store, options), [&](std::exception_ptr e) { failure = e; });
        io.restart();
        io.run();
        if (failure) std::rethrow_exception(failure);
        if (chosen.script) std::cout << "model calls: " << chosen.script->request_count() << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "quickstart: " << e.what() << "\n";
        return 1;
    }
}
