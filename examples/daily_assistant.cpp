// daily_assistant: an assistant whose conversations start afresh every morning.
//
// A runner with a session index (JSONL, beside the transcripts) runs turns by conversation
// key: one person's direct chat and a Telegram group. The reset policy starts a new session
// for a key on its first turn after 04:00 local time (or after two idle hours); a heartbeat
// is a background turn that answers NO_REPLY, stored but never delivered, and keeps nothing
// alive. The status line of each conversation comes from its index entry alone. Then the
// night passes (the direct chat's session is made to have started yesterday): the next
// message starts a new session, and the old one is kept as an archive, which maintenance
// (in warn mode: a plan, nothing removed) would delete after its retention.
//
// Run: build/<preset>/examples/daily_assistant (files in $LIBRETTO_SESSIONS, default
// /tmp/libretto-daily-assistant, removed first; time zone in $LIBRETTO_TZ, a POSIX TZ
// string, default "CET-1CEST,M3.5.0,M10.5.0/3").
#include <libretto/libretto.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

namespace asio = boost::asio;
namespace lb = libretto;

using reply = lb::scripted_reply;
using assistant_runner = lb::runner<lb::llm_agent<lb::scripted_model>, lb::jsonl_store>;

std::string env_or(const char* name, std::string fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

void show_status(lb::any_session_index& index, const std::string& key) {
    std::optional<lb::conversation_entry> e;
    if (auto ec = index.get("assistant", key, e); ec || !e) return;
    const lb::conversation_status st = lb::conversation_status_of(*e, lb::event::now(), 8'000);
    std::cout << "  status " << key << ": session " << st.session_id.substr(0, 8) << ", " << st.total_tokens
              << " tokens, context " << static_cast<int>(st.context_used * 100) << "% of 8k, " << st.archived_sessions
              << " archived\n";
}

asio::awaitable<void> say(assistant_runner& runner, std::string user, std::string key, std::string text,
                          bool background = false) {
    auto turn = lb::run_options::in_conversation("assistant", std::move(user), key);
    turn.background = background;
    turn.silent_token = "NO_REPLY";
    std::cout << (background ? "(heartbeat) " : "") << key << " > " << text << "\n";
    lb::turn_result r = co_await lb::async_run_to_end(runner, std::move(turn), std::move(text));
    std::cout << "  < " << (r.final_answer.empty() ? "(nothing delivered)" : r.final_answer) << "\n";
}

asio::awaitable<void> day(assistant_runner& runner, lb::jsonl_store& store, lb::any_session_index& index) {
    const std::string me = lb::direct_key("assistant");
    const std::string group = lb::group_key("assistant", "telegram", "-100200300");

    co_await say(runner, "ana", me, "Remind me to water the plants tonight.");
    co_await say(runner, "ana", me, "And buy basil.");
    co_await say(runner, "family", group, "What time is dinner on Sunday?");
    co_await say(runner, "ana", me, "Heartbeat: anything to report?", true);
    show_status(index, me);
    show_status(index, group);

    // The night passes: the session is made to have started yesterday.
    std::optional<lb::conversation_entry> e;
    if (auto ec = index.get("assistant", me, e); ec || !e) co_return;
    lb::conversation_entry aged = *e;
    aged.started_at -= 86'400;
    index.put(aged);
    std::cout << "-- next morning --\n";
    co_await say(runner, "ana", me, "Good morning! What did I ask you yesterday?");
    if (index.get("assistant", me, e) || !e) co_return;
    for (const auto& p : e->previous)
        std::cout << "  archived " << p.session_id.substr(0, 8) << " (" << p.reason << ")\n";
    show_status(index, me);

    lb::maintenance_options m;
    m.app_name = "assistant";
    m.archive_retention_seconds = 0; // what would go if archives were kept no time at all
    lb::maintenance_report plan = co_await lb::async_maintain_sessions(store, index, m);
    for (const auto& a : plan.actions)
        std::cout << "  maintenance would remove " << a.session_id.substr(0, 8) << " of " << a.key << " (" << a.reason
                  << ", " << a.bytes << " bytes)\n";
}

int main() {
    const std::filesystem::path dir = env_or("LIBRETTO_SESSIONS", "/tmp/libretto-daily-assistant");
    std::filesystem::remove_all(dir);
    asio::io_context io;
    lb::jsonl_store store{io.get_executor(), {.directory = dir}};
    lb::any_session_index index{io.get_executor(), lb::jsonl_session_index({.directory = dir})};
    lb::scripted_model model{io.get_executor(),
                             {reply::text("Noted: water the plants tonight.").with_usage(1200, 12),
                              reply::text("Added basil.").with_usage(1300, 6),
                              reply::text("Dinner is at 18:00.").with_usage(900, 8),
                              reply::text("NO_REPLY").with_usage(1400, 2),
                              reply::text("Good morning! This is a new day's conversation.").with_usage(300, 11)}};
    lb::llm_agent assistant{lb::llm_agent_options<lb::scripted_model>{
        .name = "assistant", .instruction = "You are a helpful household assistant.", .model = model}};

    lb::runner_options options;
    options.index = &index;
    options.reset.daily_at_hour = 4;
    options.reset.time_zone = env_or("LIBRETTO_TZ", "CET-1CEST,M3.5.0,M10.5.0/3");
    options.reset.idle = std::chrono::minutes(120);
    try {
        assistant_runner runner{assistant, store, options};
        std::exception_ptr failure;
        asio::co_spawn(io, day(runner, store, index), [&](std::exception_ptr e) { failure = e; });
        io.run();
        if (failure) std::rethrow_exception(failure);
    } catch (const std::exception& e) {
        std::cerr << "daily_assistant: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
