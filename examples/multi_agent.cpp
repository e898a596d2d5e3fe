// multi_agent: a front desk that transfers to a trip-planning pipeline.
//
//   front_desk (llm_agent)                      transfers the conversation to trip_planner
//   └── trip_planner (sequential_agent)
//       ├── research (parallel_agent)           two scouts at once, each on its own branch
//       │   ├── weather_scout (llm_agent)          research.weather_scout
//       │   └── hotel_scout   (llm_agent)          research.hotel_scout
//       └── refine (loop_agent, at most 3 rounds)
//           ├── writer (llm_agent)              drafts from the scouts' findings (state)
//           └── critic (llm_agent)              asks for changes, or approves: a tool that
//                                               escalates, which ends the loop
//
// Turn 1 starts at the root, which transfers; turn 2 starts at the transfer target (the
// runner picks the agent the session last transferred to). Every agent has its own
// scripted model, so the parallel scouts' replies do not depend on timing.
//
// Build: cmake --build --preset release --target multi_agent; run build/release/examples/multi_agent
#include <libretto/agent/llm_agent.hpp>
#include <libretto/agent/loop_agent.hpp>
#include <libretto/agent/parallel_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/libretto.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/asio/io_context.hpp>

#include <exception>
#include <iostream>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;

using agent_t = lb::llm_agent<lb::scripted_model>;
using options_t = lb::llm_agent_options<lb::scripted_model>;

lb::scripted_model script(asio::io_context& io, std::vector<lb::scripted_reply> replies) {
    return lb::scripted_model(io.get_executor(), std::move(replies));
}

json::value approve(lb::tool_context& ctx) {
    ctx.escalate(); // ends the refine loop
    return json::value("approved");
}

// One turn, run to its end (lb::run_to_end runs the io_context until the turn is over),
// then what it stored. False if the turn failed.
template <class Runner>
bool turn(Runner& runner, std::string question) {
    std::cout << "\nuser> " << question << "\n";
    lb::run_options o;
    o.app = "multi_agent";
    o.user = "u1";
    o.session = "trip";
    lb::turn_result r = lb::run_to_end(runner, std::move(o), std::move(question));
    for (const lb::event& ev : r.events) { // the stored events; partials were streamed, not kept
        std::cout << "  #" << ev.sequence << " [" << (ev.branch.empty() ? "-" : ev.branch) << "] " << ev.author << ": ";
        if (ev.has_tool_calls()) {
            for (const auto& c : ev.tool_calls()) std::cout << "calls " << c.tool_name << json::serialize(c.args) << " ";
        } else if (!ev.tool_responses().empty()) {
            for (const auto& t : ev.tool_responses()) std::cout << t.tool_name << " -> " << json::serialize(t.result) << " ";
        } else {
            std::cout << ev.text();
        }
        if (ev.actions.transfer_to_agent) std::cout << "  (transfer to " << *ev.actions.transfer_to_agent << ")";
        if (ev.actions.escalate.value_or(false)) std::cout << "  (escalate)";
        std::cout << "\n";
    }
    if (!r.ok()) std::cerr << "multi_agent: the turn failed: " << r.error.message() << ": " << r.message() << "\n";
    return r.ok();
}

int main() {
    try {
        asio::io_context io;

        agent_t weather_scout{options_t{
            .name = "weather_scout",
            .description = "Finds the weather forecast",
            .instruction = "Report the weekend weather in one sentence.",
            .model = script(io, {lb::scripted_reply::text("Saturday 21 °C and clear; Sunday showers."),
                                 lb::scripted_reply::text("Sunday: showers until noon.")}),
            .output_key = "weather",
        }};
        agent_t hotel_scout{options_t{
            .name = "hotel_scout",
            .description = "Finds a hotel",
            .instruction = "Suggest one hotel in one sentence.",
            .model = script(io, {lb::scripted_reply::text("Hotel Bristol, 1,900 NOK a night, near the harbour."),
                                 lb::scripted_reply::text("The Bristol offers late checkout until 14:00.")}),
            .output_key = "hotel",
        }};
        agent_t writer{options_t{
            .name = "writer",
            .description = "Writes the plan",
            .instruction = "Write a two-line plan. Weather: {weather?}. Hotel: {hotel?}.",
            .model = script(io, {lb::scripted_reply::text("Sat: fjord walk. Sun: museums."),
                                 lb::scripted_reply::text("Sat: fjord walk. Sun: Munch museum, then the harbour."),
                                 lb::scripted_reply::text("Sun: late checkout, brunch by the harbour while it rains.")}),
            .output_key = "plan",
        }};
        agent_t critic{options_t{
            .name = "critic",
            .description = "Reviews the plan",
            .instruction = "Ask for one improvement, or call approve when the plan is good: {plan?}",
            .model = script(io, {lb::scripted_reply::text("Name the museum."),
                                 lb::scripted_reply::tool_call("approve"), lb::scripted_reply::tool_call("approve")}),
            .tools = lb::tools(lb::function_tool("approve", "Approves the plan", approve)),
        }};

        lb::parallel_agent research{"research", weather_scout, hotel_scout};
        lb::loop_agent refine{lb::loop_options{.name = "refine", .max_iterations = 3}, writer, critic};
        lb::sequential_agent trip_planner{"trip_planner", research, refine};

        agent_t front_desk{options_t{
            .name = "front_desk",
            .instruction = "Greet the user and hand trip planning to trip_planner.",
            .model = script(io, {lb::scripted_reply::tool_call("transfer_to_agent", {{"agent_name", "trip_planner"}})}),
            .sub_agents = {lb::any_agent(trip_planner)},
        }};

        lb::memory_store store{io.get_executor()};
        lb::runner runner{front_desk, store};

        if (!turn(runner, "Plan a weekend in Oslo for me.")) return 1;
        if (!turn(runner, "What about Sunday morning?")) return 1;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "multi_agent: " << e.what() << "\n";
        return 1;
    }
}
