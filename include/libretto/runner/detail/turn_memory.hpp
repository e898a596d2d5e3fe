// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_TURN_MEMORY_HPP
#define LIBRETTO_RUNNER_DETAIL_TURN_MEMORY_HPP

// The memory steps of a runner turn (runner_options::memory): before the agent runs, what
// the user's message recalls (memory_preload), as text for the agent's instruction; after
// the turn, the events it stored added to memory (memorize), compaction summaries included.

#include <libretto/diagnostics.hpp>
#include <libretto/event/event.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/store/any_memory_service.hpp>
#include <libretto/store/detail/memory_common.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace libretto::detail {

/// The recalled entries as the model reads them (ADK's preload wording, in our words).
inline std::string recalled_text(const std::vector<memory_entry>& entries) {
    if (entries.empty()) return {};
    std::string out = "From earlier conversations with this user (recalled for the current message; use what helps):\n"
                      "<past_conversations>\n";
    for (const auto& e : entries) {
        char when[32] = "";
        const std::time_t t = static_cast<std::time_t>(e.timestamp);
        std::tm tm{};
        if (gmtime_r(&t, &tm)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
        out += when;
        out += ' ';
        out += e.author;
        out += ": ";
        out += e.text;
        out += '\n';
    }
    out += "</past_conversations>";
    return out;
}

/// Searches the memory for the user's message; a failure fails the turn (before the agent
/// ran), naming the memory's words.
template <class Core>
boost::asio::awaitable<std::string> recall_for_turn(Core& core, const turn_state& t, std::string text) {
    namespace asio = boost::asio;
    if (memory_words(text).empty()) co_return std::string();
    memory_query q;
    q.app_name = t.key.app_name;
    q.user_id = t.key.user_id;
    q.text = std::move(text);
    q.limit = core.memory_preload;
    diagnostics said;
    auto op = core.memory->async_search(std::move(q), said, asio::as_tuple(asio::use_awaitable));
    auto [ec, found] = co_await std::move(op);
    if (ec)
        throw_turn_error(ec, "recalling memory for " + session_name(t.key) + " failed: " + ec.message() +
                                 store_said_suffix(said.message()));
    // Not what this very session says already: the model has it in its history.
    std::erase_if(found, [&](const memory_entry& e) { return e.session_id == t.key.session_id; });
    co_return recalled_text(found);
}

/// Adds the events the turn stored to memory.
template <class Core>
boost::asio::awaitable<void> memorize_turn(Core& core, const turn_state& t) {
    namespace asio = boost::asio;
    const auto& events = t.sess->events;
    std::vector<event> stored(events.begin() + static_cast<std::ptrdiff_t>(first_stored_by_turn(t)), events.end());
    if (stored.empty()) co_return;
    diagnostics said;
    auto op = core.memory->async_add(t.key.app_name, t.key.user_id, t.key.session_id, std::move(stored), said,
                                     asio::as_tuple(asio::use_awaitable));
    auto [ec, added] = co_await std::move(op);
    if (ec)
        throw_turn_error(ec, "adding the turn of " + session_name(t.key) + " to memory failed: " + ec.message() +
                                 store_said_suffix(said.message()));
}

} // namespace libretto::detail

#endif
