// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_INDEX_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_INDEX_HPP

// Listing jsonl_store's sessions and the per-app index (index.json) that makes a listing
// cheap: an entry is trusted while its transcript's inode, size and mtime are unchanged,
// else the session is read. The index is a cache, rebuilt from the transcripts when lost.

#include <libretto/store/detail/jsonl_engine.hpp>

#include <libretto/event/detail/json_text.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/detail/jsonl_format.hpp>
#include <libretto/store/detail/store_logic.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value_to.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace libretto::detail::jsonl {

inline error_code engine::list(diagnostics* d, const list_options& o, list_page& out) {
    out = {};
    if (auto ec = validate_id(o.app_name)) return bad_key(d, ec, "app name " + id_problem(o.app_name));
    if (o.user_id)
        if (auto ec = validate_id(*o.user_id)) return bad_key(d, ec, "user id " + id_problem(*o.user_id));
    if (o.page_size == 0 || o.page_size > 1000) return bad_key(d, errc::invalid_argument, "page_size must be 1..1000");
    std::optional<detail::page_cursor> cursor;
    if (!o.page_token.empty()) {
        auto c = detail::parse_page_token(o.page_token);
        if (!c) return c.error();
        cursor = std::move(*c);
    }
    std::vector<summary> all;
    bool index_dirty = false;
    std::map<std::string, index_entry> idx;
    if (auto ec = summarize_app(d, o.app_name, o.user_id ? &*o.user_id : nullptr, all, idx, index_dirty)) return ec;
    std::vector<const summary*> rows;
    for (const auto& s : all)
        if (!cursor || detail::after_cursor(*cursor, s.e.last_update, s.e.user_id, s.e.session_id))
            rows.push_back(&s);
    std::sort(rows.begin(), rows.end(), [](const summary* a, const summary* b) {
        return detail::list_before(a->e.last_update, a->e.user_id, a->e.session_id, b->e.last_update, b->e.user_id,
                                   b->e.session_id);
    });
    const std::size_t n = std::min(rows.size(), o.page_size);
    json::object app_state;
    if (auto ec = read_shared(d, app_dir(o.app_name) / "state.json", app_state)) return ec;
    std::map<std::string, json::object> user_states;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& e = rows[i]->e;
        const session_key k{o.app_name, e.user_id, e.session_id};
        std::shared_ptr<open_session> sp;
        std::unique_lock<std::mutex> lk;
        if (auto ec = enter(d, k, false, sp, lk)) return ec;
        if (!sp) continue; // deleted meanwhile
        auto us = user_states.find(e.user_id);
        if (us == user_states.end()) {
            json::object u;
            if (auto ec = read_shared(d, user_dir(o.app_name, e.user_id) / "state.json", u)) return ec;
            us = user_states.emplace(e.user_id, std::move(u)).first;
        }
        out.sessions.push_back(make_session(k, sp->cp, app_state, us->second));
        // The listed time is the one the page was ordered by.
        out.sessions.back().last_update_time = e.last_update;
    }
    if (rows.size() > n)
        out.next_page_token =
            detail::make_page_token(rows[n - 1]->e.last_update, rows[n - 1]->e.user_id, rows[n - 1]->e.session_id);
    if (index_dirty) write_index(o.app_name, all, o.user_id ? &*o.user_id : nullptr, idx);
    return {};
}

inline void engine::list_dir(const fs::path& dir, std::vector<std::string>& out) {
    std::error_code fec;
    for (fs::directory_iterator it(dir, fec), end; !fec && it != end; it.increment(fec)) {
        std::string name = it->path().filename().string();
        if (!validate_id(name) && it->is_directory(fec)) out.push_back(std::move(name));
    }
    std::sort(out.begin(), out.end());
}

/// Every session of `app` (of one user if given), with its last update. Uses the
/// index entry when the transcript is unchanged since (inode, size, mtime), the open
/// session when this instance is up to date, else opens the session.
inline error_code engine::summarize_app(diagnostics* d, const std::string& app, const std::string* user,
                                        std::vector<summary>& out, std::map<std::string, index_entry>& idx,
                                        bool& dirty) {
    std::vector<std::string> users;
    if (user) users.push_back(*user);
    else list_dir(app_dir(app) / "users", users);
    idx = read_index(app);
    for (const auto& u : users) {
        std::vector<std::string> ids;
        list_dir(sessions_dir(app, u), ids);
        for (const auto& id : ids) {
            const session_key k{app, u, id};
            const fs::path tp = session_dir(k) / "transcript.jsonl";
            struct stat st;
            if (::stat(tp.c_str(), &st) != 0) continue; // an interrupted create, or deleted meanwhile
            index_entry e{u, id, static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                          mtime_ns(st), 0, 0, 0};
            bool known = false;
            if (auto sp = lookup(k, false)) {
                std::unique_lock l(sp->mu, std::try_to_lock);
                if (l && !sp->closed && sp->data && sp->ino == st.st_ino && sp->cp.covered == e.size) {
                    e.created = sp->cp.created;
                    e.last_update = sp->cp.last_update;
                    e.last_sequence = sp->cp.last_sequence;
                    known = true;
                }
            }
            auto it = idx.find(u + '\0' + id);
            if (!known && it != idx.end() && it->second.ino == e.ino && it->second.size == e.size &&
                it->second.mtime_ns == e.mtime_ns) {
                e = it->second;
                known = true;
            }
            if (!known) {
                std::shared_ptr<open_session> sp;
                std::unique_lock<std::mutex> lk;
                if (auto ec = enter(d, k, false, sp, lk)) return ec;
                if (!sp) continue;
                e.created = sp->cp.created;
                e.last_update = sp->cp.last_update;
                e.last_sequence = sp->cp.last_sequence;
                e.size = sp->cp.covered;
                struct stat st2;
                if (::fstat(sp->data->get(), &st2) == 0) {
                    e.ino = static_cast<std::uint64_t>(st2.st_ino);
                    e.mtime_ns = mtime_ns(st2);
                    if (static_cast<std::uint64_t>(st2.st_size) != e.size) e.mtime_ns = 0; // changing: don't trust
                }
            }
            if (it == idx.end() || it->second.ino != e.ino || it->second.size != e.size ||
                it->second.mtime_ns != e.mtime_ns || it->second.last_update != e.last_update)
                dirty = true;
            out.push_back({std::move(e)});
        }
    }
    // Entries for sessions that are gone also make the index dirty.
    std::size_t in_scope = 0;
    for (const auto& [key, e] : idx)
        if (!user || e.user_id == *user) ++in_scope;
    if (in_scope != out.size()) dirty = true;
    return {};
}

inline std::map<std::string, index_entry> engine::read_index(const std::string& app) {
    std::map<std::string, index_entry> idx;
    std::string text;
    if (read_file(app_dir(app) / "index.json", text)) return idx;
    boost::system::error_code ec;
    json::value v = libretto::detail::parse_precise(text, ec, {});
    if (ec || !v.is_object()) return idx; // a cache: rebuilt from the transcripts
    const auto* arr = v.get_object().if_contains("sessions");
    if (!arr || !arr->is_array()) return idx;
    for (const auto& x : arr->get_array()) {
        if (!x.is_object()) continue;
        const auto& o = x.get_object();
        index_entry e;
        try {
            e.user_id = json::value_to<std::string>(o.at("user_id"));
            e.session_id = json::value_to<std::string>(o.at("session_id"));
            e.ino = json::value_to<std::uint64_t>(o.at("ino"));
            e.size = json::value_to<std::uint64_t>(o.at("size"));
            e.mtime_ns = json::value_to<std::int64_t>(o.at("mtime_ns"));
            e.created = o.at("created").to_number<double>();
            e.last_update = o.at("last_update").to_number<double>();
            e.last_sequence = json::value_to<std::int64_t>(o.at("last_sequence"));
        } catch (const std::exception&) {
            continue;
        }
        idx[e.user_id + '\0' + e.session_id] = std::move(e);
    }
    return idx;
}

inline json::object engine::index_json(const index_entry& e) {
    json::object o;
    o["user_id"] = e.user_id;
    o["session_id"] = e.session_id;
    o["ino"] = e.ino;
    o["size"] = e.size;
    o["mtime_ns"] = e.mtime_ns;
    o["created"] = e.created;
    o["last_update"] = e.last_update;
    o["last_sequence"] = e.last_sequence;
    return o;
}

inline void engine::store_index(const std::string& app, const std::map<std::string, index_entry>& idx) {
    json::object root_o;
    root_o["format"] = "libretto-index";
    root_o["version"] = format_version;
    json::array arr;
    arr.reserve(idx.size());
    for (const auto& [k, e] : idx) arr.push_back(index_json(e));
    root_o["sessions"] = std::move(arr);
    std::string text = json::serialize(root_o);
    text += '\n';
    write_file_atomic(app_dir(app) / "index.json", text, durable(), nonce);
}

/// Writes the index after a listing: the listed sessions (and, when the listing was of
/// one user, the other users' entries as they were). Skipped if another writer has it.
inline void engine::write_index(const std::string& app, const std::vector<summary>& all,
                                const std::string* user, const std::map<std::string, index_entry>& old) {
    scoped_flock l;
    if (l.lock(app_dir(app) / "index.lock", std::chrono::milliseconds(0))) return;
    std::map<std::string, index_entry> idx;
    if (user)
        for (const auto& [k, e] : read_index(app))
            if (e.user_id != *user) idx.emplace(k, e);
    (void)old;
    for (const auto& s : all) idx[s.e.user_id + '\0' + s.e.session_id] = s.e;
    store_index(app, idx);
}

/// Adds or removes one entry (create, delete). Best effort: the index is a cache.
inline void engine::index_update(const std::string& app, const index_entry* add, const session_key* erase) {
    scoped_flock l;
    if (l.lock(app_dir(app) / "index.lock", std::chrono::milliseconds(1000))) return;
    auto idx = read_index(app);
    if (add) idx[add->user_id + '\0' + add->session_id] = *add;
    if (erase) idx.erase(erase->user_id + '\0' + erase->session_id);
    store_index(app, idx);
}

} // namespace libretto::detail::jsonl

#endif
