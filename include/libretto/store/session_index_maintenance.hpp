// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SESSION_INDEX_MAINTENANCE_HPP
#define LIBRETTO_STORE_SESSION_INDEX_MAINTENANCE_HPP

// Maintenance of an app's conversations: the index and the transcripts it points at.
// docs/sessions.md, "Maintenance".
//
//   lb::maintenance_options o;
//   o.app_name = "demo";
//   o.mode = lb::maintenance_mode::enforce;     // warn (default): report only
//   o.max_bytes = 512 << 20;
//   auto report = co_await lb::async_maintain_sessions(store, index, o);
//
// The plan, in this order:
//   1. archived sessions (an entry's `previous`) past their retention (scheduled runs:
//      scheduled_retention; others: archive_retention), and orphans (sessions that name a
//      conversation whose entry lists them nowhere) not updated for archive_retention;
//   2. entries not updated for prune_after, then the oldest entries over max_entries, each
//      with its current and archived transcripts;
//   3. while the app's transcripts are over max_bytes: the oldest remaining archives and
//      orphans, then the oldest remaining entries, down to high_water_bytes.
// Entries of group, channel and room conversations (durable pointers to conversations
// outside) are never removed by 2 or 3; sessions that name no conversation are never
// touched (they count towards the bytes). `warn` returns the plan and changes nothing:
// exactly what `enforce` would do; `enforce` carries it out in that order.
//
// Sizes are the transcripts' encoded bytes (serialize_event of every event: a JSONL
// transcript's size, near enough), so every session of the app is read once.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/json.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/detail/index_rebuild.hpp>
#include <libretto/store/detail/spawn_op.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace libretto {

enum class maintenance_mode {
    warn,    ///< report what enforce would do; change nothing
    enforce, ///< do it
};

struct maintenance_options {
    std::string app_name{};
    maintenance_mode mode = maintenance_mode::warn;
    /// Entries not updated for this long are removed (seconds; unset: never).
    std::optional<double> prune_after_seconds = 30.0 * 86400;
    /// At most this many entries (the oldest updated go first; unset: no cap).
    std::optional<std::size_t> max_entries = 500;
    /// Archived sessions and orphans older than this are removed (unset: prune_after).
    std::optional<double> archive_retention_seconds{};
    /// Archived sessions of scheduled runs older than this are removed.
    std::optional<double> scheduled_retention_seconds = 86400.0;
    /// The app's transcripts, in bytes, above which 3. applies (unset: no budget).
    std::optional<std::uint64_t> max_bytes{};
    /// What 3. brings them down to (unset: 80 % of max_bytes).
    std::optional<std::uint64_t> high_water_bytes{};
    std::optional<double> now{}; ///< the clock (default: now)
};

/// One step of the plan.
struct maintenance_action {
    enum class kind { remove_archive, remove_orphan, remove_entry };
    kind what = kind::remove_archive;
    std::string key{};        ///< the conversation (an orphan: the key it names)
    std::string user_id{};
    std::string session_id{}; ///< remove_entry: its current session (its archives are listed too)
    std::uint64_t bytes = 0;  ///< transcript bytes freed
    std::string reason{};     ///< "archive_retention", "scheduled_retention", "prune_after", "max_entries", "max_bytes"
};

struct maintenance_report {
    std::vector<maintenance_action> actions{}; ///< in the order enforce carries them out
    std::size_t entries_before = 0, entries_after = 0;
    std::uint64_t bytes_before = 0, bytes_after = 0;
    bool applied = false; ///< enforce: every action was carried out
};

using maintenance_signature = void(boost::system::error_code, maintenance_report);

namespace detail {

struct maintained_session {
    session_key key;
    std::uint64_t bytes = 0;
    double updated = 0;
    std::string conversation; ///< the key the session names ("" for none)
    bool gone = false;
};

inline bool durable_chat(const std::string& t) { return t == "group" || t == "channel" || t == "room"; }

template <class Store>
boost::asio::awaitable<maintenance_report> maintain(Store& store, any_session_index& index, maintenance_options o,
                                                    diagnostics* d) {
    namespace asio = boost::asio;
    diagnostics said;
    auto fail = [&](boost::system::error_code ec, const std::string& what) {
        const std::string m = "maintenance of app '" + o.app_name + "': " + what + ": " + ec.message() +
                              (said.message().empty() ? "" : " (" + said.message() + ")");
        if (d) d->assign(m);
        throw boost::system::system_error(ec, m);
    };
    {
        std::string why = id_problem(o.app_name);
        if (!why.empty()) why = "the app id " + why;
        for (const auto& [name, v] : {std::pair<const char*, const std::optional<double>*>{"prune_after_seconds", &o.prune_after_seconds},
                                      {"archive_retention_seconds", &o.archive_retention_seconds},
                                      {"scheduled_retention_seconds", &o.scheduled_retention_seconds}})
            if (why.empty()) why = seconds_option_problem(name, *v);
        if (why.empty() && o.now && !std::isfinite(*o.now)) why = "now is not a finite number";
        if (why.empty()) why = byte_budget_problem(o.max_bytes, o.high_water_bytes);
        if (!why.empty()) {
            said.assign(why);
            fail(errc::invalid_argument, "bad options");
        }
    }
    const double now = o.now.value_or(event::now());
    const double archive_keep = o.archive_retention_seconds.value_or(o.prune_after_seconds.value_or(1e300));
    maintenance_report r;

    conversation_query q;
    q.app_name = o.app_name;
    auto list = index.async_list(q, said, detail::dependent_as_tuple_awaitable<Store>());
    auto [lec, entries] = co_await std::move(list);
    if (lec) fail(lec, "reading the index");
    r.entries_before = entries.size();

    // Every session of the app, measured.
    std::map<std::string, maintained_session> sessions; // by "user/id"
    auto slot = [](const std::string& user, const std::string& id) { return user + '/' + id; };
    std::string token;
    do {
        list_options lo(o.app_name, std::nullopt, 1000, token);
        auto page_op = store.async_list(std::move(lo), said, asio::as_tuple(asio::use_awaitable));
        auto [pec, page] = co_await std::move(page_op);
        if (pec) fail(pec, "listing the sessions");
        for (const session& s : page.sessions) {
            session_key k{s.app_name, s.user_id, s.id};
            auto get = store.async_get(k, get_options{}, said, asio::as_tuple(asio::use_awaitable));
            auto [gec, whole] = co_await std::move(get);
            if (gec) fail(gec, "reading session '" + s.id + "'");
            if (!whole) continue;
            maintained_session m{std::move(k), 0, whole->last_update_time, {}};
            for (const event& e : whole->events) m.bytes += serialize_event(e).size() + 1;
            if (auto it = whole->state.find(conversation_state_key); it != whole->state.end() && it->value().is_string())
                m.conversation = std::string(it->value().get_string());
            r.bytes_before += m.bytes;
            sessions.emplace(slot(s.user_id, s.id), std::move(m));
        }
        token = std::move(page.next_page_token);
    } while (!token.empty());

    auto bytes_of = [&](const std::string& user, const std::string& id) -> std::uint64_t {
        auto it = sessions.find(slot(user, id));
        return it == sessions.end() || it->second.gone ? 0 : it->second.bytes;
    };
    std::uint64_t total = r.bytes_before;
    auto drop = [&](const std::string& user, const std::string& id) {
        auto it = sessions.find(slot(user, id));
        if (it != sessions.end() && !it->second.gone) {
            it->second.gone = true;
            total -= it->second.bytes;
        }
    };

    // Which sessions the entries know.
    std::map<std::string, bool> referenced;
    for (const auto& e : entries) {
        referenced[slot(e.user_id, e.session_id)] = true;
        for (const auto& p : e.previous) referenced[slot(e.user_id, p.session_id)] = true;
    }
    struct archive_ref {
        std::size_t entry;
        previous_session p;
    };
    std::vector<archive_ref> archives;
    for (std::size_t i = 0; i < entries.size(); ++i)
        for (const auto& p : entries[i].previous) archives.push_back({i, p});
    std::sort(archives.begin(), archives.end(), [](const archive_ref& a, const archive_ref& b) { return a.p.ended_at < b.p.ended_at; });
    std::vector<maintained_session*> orphans;
    for (auto& [k, m] : sessions)
        if (!m.conversation.empty() && !referenced.contains(k)) orphans.push_back(&m);
    std::sort(orphans.begin(), orphans.end(), [](auto* a, auto* b) { return a->updated < b->updated; });

    std::vector<bool> archive_done(archives.size()), orphan_done(orphans.size()), entry_done(entries.size());
    auto remove_archive = [&](std::size_t i, const char* reason) {
        const auto& a = archives[i];
        const auto& e = entries[a.entry];
        r.actions.push_back({maintenance_action::kind::remove_archive, e.key, e.user_id, a.p.session_id,
                             bytes_of(e.user_id, a.p.session_id), reason});
        drop(e.user_id, a.p.session_id);
        archive_done[i] = true;
    };
    auto remove_orphan = [&](std::size_t i, const char* reason) {
        maintained_session& m = *orphans[i];
        r.actions.push_back({maintenance_action::kind::remove_orphan, m.conversation, m.key.user_id, m.key.session_id,
                             m.bytes, reason});
        drop(m.key.user_id, m.key.session_id);
        orphan_done[i] = true;
    };
    auto remove_entry = [&](std::size_t i, const char* reason) {
        const auto& e = entries[i];
        std::uint64_t freed = bytes_of(e.user_id, e.session_id);
        drop(e.user_id, e.session_id);
        for (std::size_t a = 0; a < archives.size(); ++a)
            if (archives[a].entry == i && !archive_done[a]) {
                freed += bytes_of(e.user_id, archives[a].p.session_id);
                drop(e.user_id, archives[a].p.session_id);
                archive_done[a] = true;
            }
        r.actions.push_back({maintenance_action::kind::remove_entry, e.key, e.user_id, e.session_id, freed, reason});
        entry_done[i] = true;
    };

    // 1. Archives and orphans past their retention.
    for (std::size_t i = 0; i < archives.size(); ++i) {
        const bool scheduled = archives[i].p.reason == "scheduled_run";
        const double keep = scheduled ? o.scheduled_retention_seconds.value_or(archive_keep) : archive_keep;
        if (archives[i].p.ended_at < now - keep) remove_archive(i, scheduled ? "scheduled_retention" : "archive_retention");
    }
    for (std::size_t i = 0; i < orphans.size(); ++i)
        if (orphans[i]->updated < now - archive_keep) remove_orphan(i, "archive_retention");
    // 2. Stale entries, then the cap.
    std::vector<std::size_t> by_age(entries.size());
    for (std::size_t i = 0; i < by_age.size(); ++i) by_age[i] = i;
    std::sort(by_age.begin(), by_age.end(), [&](std::size_t a, std::size_t b) { return entries[a].updated_at < entries[b].updated_at; });
    if (o.prune_after_seconds)
        for (std::size_t i : by_age)
            if (!durable_chat(entries[i].chat_type) && entries[i].updated_at < now - *o.prune_after_seconds)
                remove_entry(i, "prune_after");
    if (o.max_entries) {
        std::size_t left = static_cast<std::size_t>(std::count(entry_done.begin(), entry_done.end(), false));
        for (std::size_t i : by_age) {
            if (left <= *o.max_entries) break;
            if (entry_done[i] || durable_chat(entries[i].chat_type)) continue;
            remove_entry(i, "max_entries");
            --left;
        }
    }
    // 3. The byte budget: archives and orphans (oldest first), then entries (oldest first).
    if (o.max_bytes && total > *o.max_bytes) {
        const std::uint64_t target = o.high_water_bytes.value_or(*o.max_bytes / 10 * 8);
        std::size_t ai = 0, oi = 0;
        while (total > target) {
            while (ai < archives.size() && archive_done[ai]) ++ai;
            while (oi < orphans.size() && orphan_done[oi]) ++oi;
            const bool have_a = ai < archives.size(), have_o = oi < orphans.size();
            if (!have_a && !have_o) break;
            if (have_a && (!have_o || archives[ai].p.ended_at <= orphans[oi]->updated))
                remove_archive(ai, "max_bytes");
            else
                remove_orphan(oi, "max_bytes");
        }
        for (std::size_t i : by_age) {
            if (total <= target) break;
            if (entry_done[i] || durable_chat(entries[i].chat_type)) continue;
            remove_entry(i, "max_bytes");
        }
    }
    r.bytes_after = total;
    r.entries_after = static_cast<std::size_t>(std::count(entry_done.begin(), entry_done.end(), false));
    if (o.mode == maintenance_mode::warn) co_return r;

    // Carried out in the plan's order. An archive goes from its entry first (a patch), then
    // its transcript; an entry goes from the index first, then its transcripts: a failure
    // half-way leaves orphans, which the next run removes, never an entry without its session.
    for (const auto& a : r.actions) {
        using kind = maintenance_action::kind;
        if (a.what == kind::remove_archive) {
            conversation_patch p;
            p.drop_previous.push_back(a.session_id);
            auto patch = index.async_patch(o.app_name, a.key, std::move(p), said, detail::dependent_as_tuple_awaitable<Store>());
            auto [pec, ignored] = co_await std::move(patch);
            if (pec && pec != errc::not_found) fail(pec, "forgetting archive '" + a.session_id + "' of '" + a.key + "'");
        } else if (a.what == kind::remove_entry) {
            auto erase = index.async_erase(o.app_name, a.key, said, detail::dependent_as_tuple_awaitable<Store>());
            auto [eec] = co_await std::move(erase);
            if (eec) fail(eec, "removing entry '" + a.key + "'");
        }
        std::vector<std::string> ids{a.session_id};
        if (a.what == kind::remove_entry)
            for (const auto& e : entries)
                if (e.key == a.key)
                    for (const auto& p : e.previous)
                        if (std::none_of(r.actions.begin(), r.actions.end(), [&](const maintenance_action& x) {
                                return x.what == kind::remove_archive && x.session_id == p.session_id;
                            }))
                            ids.push_back(p.session_id);
        for (const auto& id : ids) {
            auto del = store.async_delete(session_key{o.app_name, a.user_id, id}, said, asio::as_tuple(asio::use_awaitable));
            auto [dec] = co_await std::move(del);
            if (dec) fail(dec, "deleting session '" + id + "'");
        }
    }
    r.applied = true;
    co_return r;
}

} // namespace detail

/// Plans (warn) or carries out (enforce) the maintenance of an app's conversations (see
/// above). Completes with the plan; a failure is named in `diag`.
template <session_store Store, boost::asio::completion_token_for<maintenance_signature> Token = default_completion_token_t>
auto async_maintain_sessions(Store& store, any_session_index& index, maintenance_options o, diagnostics& diag,
                             Token&& token = {}) {
    return detail::spawn_op<maintenance_report>(store.get_executor(), &diag, std::forward<Token>(token),
                                                [&store, &index, o = std::move(o)](diagnostics* d) mutable {
                                                    return detail::maintain(store, index, std::move(o), d);
                                                });
}
template <session_store Store, boost::asio::completion_token_for<maintenance_signature> Token = default_completion_token_t>
auto async_maintain_sessions(Store& store, any_session_index& index, maintenance_options o, Token&& token = {}) {
    return detail::spawn_op<maintenance_report>(store.get_executor(), nullptr, std::forward<Token>(token),
                                                [&store, &index, o = std::move(o)](diagnostics* d) mutable {
                                                    return detail::maintain(store, index, std::move(o), d);
                                                });
}

} // namespace libretto

#endif
