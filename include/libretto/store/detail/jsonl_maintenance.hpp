// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_MAINTENANCE_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_MAINTENANCE_HPP

// jsonl_store's maintenance: choosing the sessions to remove (idle, over max_sessions, over
// the byte budget; oldest first, the same in a dry run and a real one) and removing them,
// keeping those a writer holds. Apart from the engine: it runs rarely, over a whole app.

#include <libretto/store/detail/jsonl_engine.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <sys/stat.h>

namespace libretto::detail::jsonl {

inline error_code engine::maintain(diagnostics* d, const jsonl_maintenance_options& o,
                                   jsonl_maintenance_report& rep) {
    rep = {};
    rep.dry_run = o.dry_run;
    if (o.app_name)
        if (auto ec = validate_id(*o.app_name)) return bad_key(d, ec, "app name " + id_problem(*o.app_name));
    std::string why = seconds_option_problem("max_idle_seconds", o.max_idle_seconds);
    if (why.empty() && o.now && !std::isfinite(*o.now)) why = "now is not a finite number";
    if (why.empty()) why = byte_budget_problem(o.max_bytes, o.high_water_bytes);
    if (!why.empty()) {
        if (d) d->assign("jsonl_store maintenance: " + why + ": nothing removed");
        return errc::invalid_argument;
    }
    // Pending checkpoints would otherwise land between a dry run and the real one.
    checkpoint_all();
    std::vector<std::string> apps;
    if (o.app_name) apps.push_back(*o.app_name);
    else list_dir(root / "apps", apps);
    struct cand {
        session_key key;
        double last_update;
        std::uint64_t bytes;
        const char* reason = nullptr;
    };
    std::vector<cand> cands;
    for (const auto& app : apps) {
        std::vector<summary> all;
        std::map<std::string, index_entry> idx;
        bool dirty = false;
        if (auto ec = summarize_app(d, app, nullptr, all, idx, dirty)) return ec;
        if (dirty) write_index(app, all, nullptr, idx);
        for (const auto& s : all) {
            session_key k{app, s.e.user_id, s.e.session_id};
            cands.push_back({k, s.e.last_update, dir_bytes(session_dir(k))});
        }
    }
    // Leftovers of interrupted deletes.
    std::error_code fec;
    if (!o.dry_run) fs::remove_all(root / ".trash", fec);
    rep.sessions_before = cands.size();
    rep.bytes_before = dir_bytes(o.app_name ? app_dir(*o.app_name) : root);
    const double now = o.now ? *o.now : unix_now();
    // Oldest first; ties by key, so a dry run and a real run choose alike.
    std::sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) {
        if (a.last_update != b.last_update) return a.last_update < b.last_update;
        return std::tie(a.key.app_name, a.key.user_id, a.key.session_id) <
               std::tie(b.key.app_name, b.key.user_id, b.key.session_id);
    });
    if (o.max_idle_seconds)
        for (auto& c : cands)
            if (now - c.last_update > *o.max_idle_seconds) c.reason = "idle";
    if (o.max_sessions) {
        std::size_t kept = 0;
        for (auto it = cands.rbegin(); it != cands.rend(); ++it) {
            if (it->reason) continue;
            if (kept < *o.max_sessions) ++kept;
            else it->reason = "max_sessions";
        }
    }
    std::uint64_t bytes = rep.bytes_before;
    auto removed_bytes = [&] {
        std::uint64_t b = 0;
        for (auto& c : cands)
            if (c.reason) b += c.bytes;
        return b;
    };
    if (o.max_bytes && bytes - std::min(bytes, removed_bytes()) > *o.max_bytes) {
        const std::uint64_t target = o.high_water_bytes ? *o.high_water_bytes : *o.max_bytes / 10 * 8;
        std::uint64_t left = bytes - std::min(bytes, removed_bytes());
        for (auto& c : cands) {
            if (left <= target) break;
            if (c.reason) continue;
            c.reason = "byte_budget";
            left -= std::min(left, c.bytes);
        }
    }
    std::uint64_t gone_bytes = 0;
    std::size_t gone = 0;
    for (auto& c : cands) {
        if (!c.reason) continue;
        error_code ec = o.dry_run ? probe_lock(c.key) : remove_now(d, c.key);
        if (ec == errc::busy) {
            rep.busy.push_back(c.key);
            continue;
        }
        if (ec) return ec;
        rep.removed.push_back({c.key, c.last_update, c.bytes, c.reason});
        gone_bytes += c.bytes;
        ++gone;
    }
    rep.sessions_after = rep.sessions_before - gone;
    rep.bytes_after = rep.bytes_before - std::min(rep.bytes_before, gone_bytes);
    return {};
}

inline std::uint64_t engine::dir_bytes(const fs::path& dir) {
    std::uint64_t total = 0;
    std::error_code fec;
    for (fs::recursive_directory_iterator it(dir, fec), end; !fec && it != end; it.increment(fec)) {
        struct stat st;
        if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
    }
    return total;
}

inline error_code engine::probe_lock(const session_key& k) {
    std::shared_ptr<open_session> sp;
    std::unique_lock<std::mutex> lk;
    lock_entry(k, sp, lk);
    if (sp->lock.held()) return {};
    writer_lock probe;
    lock_options lo = lock_opt;
    lo.timeout = std::chrono::milliseconds(0);
    auto ec = probe.acquire(sp->dir / "lock", lo, nonce);
    if (ec == errc::not_found) return {};
    return ec;
}

} // namespace libretto::detail::jsonl

#endif
