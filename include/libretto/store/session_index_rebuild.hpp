// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SESSION_INDEX_REBUILD_HPP
#define LIBRETTO_STORE_SESSION_INDEX_REBUILD_HPP

// Rebuilding an app's session index from its transcripts (the truth): after the index was
// lost, edited into something unreadable, or written by a program that crashed between
// its transcripts and its index.
//
//   auto report = co_await lb::async_rebuild_session_index(store, index, "demo");
//
// Every session of the app is read whole. A session that names a conversation in its
// state (runner conversation turns write "libretto:conversation" with their first event)
// belongs to that conversation; the conversation's current session is the one the old entry
// names if it is among them, else the newest started; the others are its archive
// (`previous`, reason "rebuilt" for those the old entry did not list). The counters and
// times come from the current transcript. What only the index knew (labels, overrides,
// metadata, chat type) is kept from the old entry when the old index can still be read;
// an unreadable index (errc::corrupt_data) is replaced, and the report says so. The new
// entries replace the app's old ones in one step (index_replace): all or nothing.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/conversation_key.hpp>
#include <libretto/store/detail/index_rebuild.hpp>
#include <libretto/store/detail/spawn_op.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace libretto {

/// What a rebuild did.
struct index_rebuild_report {
    std::size_t sessions_read = 0;      ///< every session of the app
    std::size_t conversations = 0;      ///< entries written
    bool old_index_unreadable = false;  ///< the old entries could not be read (their settings are lost)
    std::string old_index_problem{};    ///< what was wrong with it
};

using index_rebuild_signature = void(boost::system::error_code, index_rebuild_report);

namespace detail {

template <class Store>
boost::asio::awaitable<index_rebuild_report> rebuild_index(Store& store, any_session_index& index, std::string app,
                                                          diagnostics* d) {
    namespace asio = boost::asio;
    index_rebuild_report report;
    diagnostics said;
    auto fail = [&](boost::system::error_code ec, const std::string& doing) {
        const std::string m = "rebuilding the session index of app '" + app + "': " + doing + ": " + ec.message() +
                              (said.message().empty() ? "" : " (" + said.message() + ")");
        if (d) d->assign(m);
        throw boost::system::system_error(ec, m);
    };
    if (auto why = id_problem(app); !why.empty()) {
        said.assign("the app id " + why);
        fail(errc::invalid_argument, "bad app id");
    }
    // The old entries, for what only they know.
    std::map<std::string, conversation_entry> old;
    {
        conversation_query q;
        q.app_name = app;
        auto list = index.async_list(std::move(q), said, detail::dependent_as_tuple_awaitable<Store>());
        auto [ec, entries] = co_await std::move(list);
        if (ec == errc::corrupt_data) {
            report.old_index_unreadable = true;
            report.old_index_problem = said.message();
        } else if (ec) {
            fail(ec, "reading the old index");
        }
        for (auto& e : entries) old.emplace(e.key, std::move(e));
    }
    // Every session of the app, whole, grouped by conversation.
    std::map<std::string, std::vector<session>> by_key;
    std::string token;
    do {
        list_options lo(app, std::nullopt, 1000, token);
        auto list = store.async_list(std::move(lo), said, asio::as_tuple(asio::use_awaitable));
        auto [ec, page] = co_await std::move(list);
        if (ec) fail(ec, "listing the sessions");
        for (const session& s : page.sessions) {
            ++report.sessions_read;
            session_key k{s.app_name, s.user_id, s.id};
            auto get = store.async_get(std::move(k), get_options{}, said, asio::as_tuple(asio::use_awaitable));
            auto [gec, whole] = co_await std::move(get);
            if (gec) fail(gec, "reading session '" + s.id + "'");
            if (!whole) continue; // deleted meanwhile
            auto it = whole->state.find(conversation_state_key);
            if (it == whole->state.end() || !it->value().is_string()) continue;
            std::string key(it->value().get_string());
            if (validate_id(key)) continue; // not a key any index could hold
            by_key[std::move(key)].push_back(std::move(*whole));
        }
        token = std::move(page.next_page_token);
    } while (!token.empty());

    std::vector<conversation_entry> entries;
    for (auto& [key, sessions] : by_key) {
        auto started = [](const session& s) { return s.events.empty() ? s.last_update_time : s.events.front().timestamp; };
        std::sort(sessions.begin(), sessions.end(), [&](const session& a, const session& b) { return started(a) < started(b); });
        conversation_entry e;
        auto prior = old.find(key);
        std::size_t current = sessions.size() - 1;
        if (prior != old.end()) {
            for (std::size_t i = 0; i < sessions.size(); ++i)
                if (sessions[i].id == prior->second.session_id) current = i;
            e.chat_type = prior->second.chat_type;
            e.labels = prior->second.labels;
            e.overrides = prior->second.overrides;
            e.metadata = prior->second.metadata;
            e.previous = prior->second.previous;
        } else {
            if (auto parts = parse_conversation_key(key)) {
                static constexpr const char* names[] = {"direct", "group", "channel", "room", "scheduled_job", "webhook"};
                e.chat_type = names[static_cast<int>(parts->kind)];
            }
        }
        for (std::size_t i = 0; i < sessions.size(); ++i) {
            if (i == current) continue;
            const bool listed = std::any_of(e.previous.begin(), e.previous.end(),
                                            [&](const previous_session& p) { return p.session_id == sessions[i].id; });
            if (!listed) e.previous.push_back({sessions[i].id, started(sessions[i]), sessions[i].last_update_time, "rebuilt"});
        }
        std::erase_if(e.previous, [&](const previous_session& p) { return p.session_id == sessions[current].id; });
        const session& s = sessions[current];
        e.app_name = app;
        e.key = key;
        e.user_id = s.user_id;
        e.session_id = s.id;
        e.started_at = started(s);
        count_transcript(s, e);
        e.updated_at = s.events.empty() ? s.last_update_time : s.events.back().timestamp;
        entries.push_back(std::move(e));
    }
    report.conversations = entries.size();
    auto replace = index.async_replace(app, std::move(entries), said, detail::dependent_as_tuple_awaitable<Store>());
    auto [rec] = co_await std::move(replace);
    if (rec) fail(rec, "writing the new index");
    co_return report;
}

} // namespace detail

/// Rebuilds the entries of `app` in `index` from the sessions of `store` (see above).
/// Completes with the report, or the first failure (nothing replaced) named in `diag`.
template <session_store Store, boost::asio::completion_token_for<index_rebuild_signature> Token = default_completion_token_t>
auto async_rebuild_session_index(Store& store, any_session_index& index, std::string app, diagnostics& diag,
                                 Token&& token = {}) {
    return detail::spawn_op<index_rebuild_report>(store.get_executor(), &diag, std::forward<Token>(token),
                                                  [&store, &index, app = std::move(app)](diagnostics* d) mutable {
                                                      return detail::rebuild_index(store, index, std::move(app), d);
                                                  });
}
template <session_store Store, boost::asio::completion_token_for<index_rebuild_signature> Token = default_completion_token_t>
auto async_rebuild_session_index(Store& store, any_session_index& index, std::string app, Token&& token = {}) {
    return detail::spawn_op<index_rebuild_report>(store.get_executor(), nullptr, std::forward<Token>(token),
                                                  [&store, &index, app = std::move(app)](diagnostics* d) mutable {
                                                      return detail::rebuild_index(store, index, std::move(app), d);
                                                  });
}

} // namespace libretto

#endif
