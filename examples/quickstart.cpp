// quickstart: what libretto's event layer does, without a model.
//
// A scripted "agent" produces the events of one turn as an asynchronous stream; the
// consumer prints them as they arrive, keeps the non-partial ones as the session's
// transcript (JSON Lines), and shows what a model would be sent next time once an
// older part of the conversation has been summarised.
//
// Build and run: scripts/demo
#include <libretto/libretto.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace lb = libretto;
using namespace std::chrono_literals;

namespace {

lb::event reply(lb::invocation_context& ctx, lb::content c) {
    lb::event e = lb::event::make(lb::event_type::agent_message, ctx.agent_name(), std::move(c));
    e.invocation_id = ctx.invocation_id();
    e.session_id = ctx.session_id();
    e.branch = ctx.branch();
    return e;
}

// One scripted turn: stream a few partial chunks, call a tool, answer.
asio::awaitable<void> scripted_turn(lb::invocation_context& ctx, lb::stream_writer<lb::event> out) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (std::string chunk : {"Let me ", "check ", "the weather."}) {
        lb::event p = reply(ctx, lb::content::from_text(chunk));
        p.partial = true;
        timer.expires_after(30ms);
        co_await timer.async_wait(asio::use_awaitable);
        co_await out.emit(std::move(p));
    }

    lb::content call;
    call.parts.emplace_back(lb::tool_call_part{"call_1", "get_weather", {{"city", "Oslo"}}, {}});
    lb::event ask = reply(ctx, std::move(call));
    ask.usage = lb::usage{412, 18, "scripted-1"};
    co_await out.emit(std::move(ask));

    lb::content result;
    result.parts.emplace_back(lb::tool_response_part{"call_1", "get_weather", {{"temp_c", 21}, {"sky", "clear"}}, {}, {}});
    lb::event answer_tool = reply(ctx, std::move(result));
    answer_tool.type = lb::event_type::tool_response;
    answer_tool.actions.state_delta["last_city"] = "Oslo";
    co_await out.emit(std::move(answer_tool));

    lb::event final_answer = reply(ctx, lb::content::from_text("It is 21 °C and clear in Oslo."));
    final_answer.usage = lb::usage{470, 12, "scripted-1"};
    co_await out.emit(std::move(final_answer));
}

} // namespace

int main() {
    asio::io_context io;
    auto session = std::make_shared<lb::session>();
    session->id = "s1";
    session->app_name = "demo";
    session->user_id = "u1";

    // Earlier turns, already stored: four events, later summarised into one.
    for (const char* text : {"Hi, I'm planning a trip.", "Great, where to?", "Norway, in May.", "Noted: Norway in May."}) {
        lb::event e = lb::event::make(session->events.size() % 2 ? lb::event_type::agent_message : lb::event_type::user_message,
                                      session->events.size() % 2 ? "assistant" : "user", lb::content::from_text(text));
        e.sequence = static_cast<std::int64_t>(session->events.size()) + 1;
        session->events.push_back(std::move(e));
    }
    lb::event summary = lb::event::make(lb::event_type::agent_message, "assistant");
    summary.sequence = 5;
    summary.actions.compaction = lb::event_compaction{1, 4, session->events.front().timestamp,
                                                      session->events.back().timestamp,
                                                      "The user plans a trip to Norway in May.", 4};
    session->events.push_back(std::move(summary));

    lb::invocation_context ctx({.session_id = "s1", .user_id = "u1", .app_name = "demo",
                                .agent_name = "assistant", .session = session,
                                .input_content = "Weather in Oslo?"});
    {
        lb::event user = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("Weather in Oslo?"));
        user.invocation_id = ctx.invocation_id();
        user.sequence = 6;
        session->events.push_back(std::move(user));
    }

    auto run = [&]() -> asio::awaitable<void> {
        auto producer = [&ctx](lb::stream_writer<lb::event> w) { return scripted_turn(ctx, std::move(w)); };
        lb::event_stream turn(io.get_executor(), producer);
        std::cout << "--- streaming one turn ---\n";
        bool mid_line = false; // partial chunks print without a newline
        while (auto ev = co_await turn.next()) {
            if (ev->partial) {
                std::cout << ev->text() << std::flush;
                mid_line = true;
                continue;
            }
            if (mid_line) std::cout << '\n';
            mid_line = false;
            if (ev->has_tool_calls())
                std::cout << "[tool call] " << *ev->tool_name() << ' ' << boost::json::serialize(*ev->tool_input()) << '\n';
            else if (ev->type == lb::event_type::tool_response)
                std::cout << "[tool result] " << boost::json::serialize(ev->tool_responses().front().result) << '\n';
            else if (ev->is_final_response())
                std::cout << "[final] " << ev->text() << '\n';
            ev->sequence = static_cast<std::int64_t>(session->events.size()) + 1;
            ctx.state().apply(ev->actions.state_delta);
            session->events.push_back(std::move(*ev));
        }
    };
    std::exception_ptr failure;
    asio::co_spawn(io, run(), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);

    std::cout << "\n--- the stored transcript (JSON Lines) ---\n";
    for (const auto& e : session->events) std::cout << lb::serialize_event(e) << '\n';

    std::cout << "\n--- state after the turn ---\n" << boost::json::serialize(ctx.state().values()) << '\n';

    std::cout << "\n--- what a model would be sent next (summary in place of events 1-4) ---\n";
    for (const auto& e : lb::make_context_view(session->events)) {
        std::string line = e.text();
        if (e.has_tool_calls()) line = "call " + std::string(*e.tool_name());
        if (e.type == lb::event_type::tool_response) line = "result of " + std::string(*e.tool_name());
        std::cout << lb::to_string(e.type) << ": " << line << '\n';
    }

    // Round trip: every stored line decodes to the same event.
    for (const auto& e : session->events) {
        auto back = lb::parse_event(lb::serialize_event(e));
        if (!back || *back != e) {
            std::cerr << "round trip failed for event " << e.sequence << '\n';
            return 1;
        }
    }
    // And bad input names what is wrong.
    auto bad = lb::parse_event(R"({"id":"x","type":"agent_message","content":{"parts":[{"type":"tool_call","tool_call_id":7}]}})");
    std::cout << "\n--- decoding a bad line ---\n" << bad.error().message() << '\n';
    return 0;
}
