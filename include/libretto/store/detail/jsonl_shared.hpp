// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_SHARED_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_SHARED_HPP

// The app: and user: state files jsonl_store shares between sessions: reading them through a
// cache keyed by inode, size and mtime, and updating them (atomic replace under state.lock)
// so that a failed append leaves neither scope changed. Apart from the transcripts' code
// because these files are shared by every session of an app or user.

#include <libretto/store/detail/jsonl_engine.hpp>

#include <libretto/event/detail/json_text.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/detail/store_logic.hpp>

#include <boost/json/serialize.hpp>

#include <mutex>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace libretto::detail::jsonl {

inline error_code engine::read_shared(diagnostics* d, const fs::path& f, json::object& out) {
    out.clear();
    struct stat st;
    if (::stat(f.c_str(), &st) != 0) {
        if (errno == ENOENT) return {};
        return io_fail(d, errno_code(), f, "stat");
    }
    const std::string key = f.string();
    {
        std::lock_guard g(mu);
        auto it = shared_.find(key);
        if (it != shared_.end() && it->second.dev == st.st_dev && it->second.ino == st.st_ino &&
            it->second.size == st.st_size && it->second.mtime == mtime_ns(st)) {
            out = it->second.value;
            return {};
        }
    }
    std::string text;
    if (auto ec = read_file(f, text)) {
        if (ec == boost::system::errc::no_such_file_or_directory) return {};
        return io_fail(d, ec, f, "read");
    }
    boost::system::error_code ec;
    std::string why;
    json::value v = libretto::detail::parse_precise(text, ec, {}, &why);
    if (ec || !v.is_object())
        return fail(d, errc::corrupt_data, f, 1, 0, "shared state is not a JSON object" + (ec ? ": " + why : std::string()));
    out = v.get_object();
    std::lock_guard g(mu);
    shared_[key] = cached_state{st.st_dev, st.st_ino, st.st_size, mtime_ns(st), v.get_object()};
    return {};
}

/// Writes the app: then the user: keys of `routed`, each to its state.json. If the user
/// scope fails after the app scope was written, the app keys get their old values back,
/// so a failure leaves neither scope changed (unless that restore fails too, which the
/// diagnostic then says). Another process's write of the same app keys in between is
/// overwritten by the restore.
inline error_code engine::write_shared_scopes(diagnostics* d, const session_key& k,
                                              const detail::routed_delta& routed) {
    if (routed.app.empty() && routed.user.empty()) return {}; // most appends: no path built
    json::object undo_app;
    const fs::path app_file = app_dir(k.app_name) / "state.json";
    if (!routed.app.empty())
        if (auto ec = update_shared(d, app_file, routed.app, &undo_app)) return ec;
    if (!routed.user.empty())
        if (auto ec = update_shared(d, user_dir(k.app_name, k.user_id) / "state.json", routed.user)) {
            if (!undo_app.empty()) {
                // The first failure is the one to report; the restore's own words
                // (if it fails too) are not.
                diagnostics first;
                if (d) first = *d;
                const bool restored = !update_shared(nullptr, app_file, undo_app);
                if (d) {
                    *d = std::move(first);
                    d->append(restored ? "the app: keys were restored"
                                       : "restoring the app: keys failed as well: " + app_file.string() +
                                             " keeps this event's app: keys");
                }
            }
            return ec;
        }
    return {};
}

/// Applies `delta` to the JSON object in `f` (atomic replace, under the directory's
/// state.lock). With `undo`: on success it receives the delta that restores the keys
/// `delta` changed (their old values; null for keys that were absent).
inline error_code engine::update_shared(diagnostics* d, const fs::path& f, const json::object& delta,
                                        json::object* undo) {
    if (delta.empty()) return {};
    scoped_flock l;
    if (auto ec = l.lock(f.parent_path() / "state.lock", opt.lock_timeout)) {
        if (ec == errc::busy) return fail(d, errc::busy, f.parent_path() / "state.lock", 0, 0, "shared state lock");
        return io_fail(d, ec, f.parent_path() / "state.lock", "lock");
    }
    json::object cur;
    std::string text;
    if (auto ec = read_file(f, text)) {
        if (ec != boost::system::errc::no_such_file_or_directory) return io_fail(d, ec, f, "read");
    } else {
        boost::system::error_code ec2;
        std::string why;
        json::value v = libretto::detail::parse_precise(text, ec2, {}, &why);
        if (ec2 || !v.is_object())
            return fail(d, errc::corrupt_data, f, 1, 0,
                        "shared state is not a JSON object" + (ec2 ? ": " + why : std::string()));
        cur = std::move(v.get_object());
    }
    json::object before;
    if (undo)
        for (const auto& kv : delta) {
            auto it = cur.find(kv.key());
            before[kv.key()] = it == cur.end() ? json::value(nullptr) : it->value();
        }
    apply_delta(cur, delta);
    std::string out = json::serialize(cur);
    out += '\n';
    bool renamed = false;
    if (auto ec = write_file_atomic(f, out, durable(), nonce, &renamed)) {
        if (!renamed) return io_fail(d, ec, f, "write");
        // Replaced, then the directory's fsync failed: the failed operation must not leave
        // its keys behind, so the old content goes back (not synced: neither was the new).
        const bool existed = !text.empty(); // read above; a missing file reads as empty
        const bool restored = existed ? !write_file_atomic(f, text, false, nonce) : ::unlink(f.c_str()) == 0;
        return io_fail(d, ec, f,
                       restored ? "fsync of the directory after the replace (the old content was put back)"
                                : "fsync of the directory after the replace; putting the old content back "
                                  "failed too: the file keeps the new keys");
    }
    if (undo) *undo = std::move(before);
    return {};
}

} // namespace libretto::detail::jsonl

#endif
