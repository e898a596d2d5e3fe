// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_SESSION_CACHE_HPP
#define LIBRETTO_RUNNER_DETAIL_SESSION_CACHE_HPP

// session_cache: the runner's sessions between turns, so that a turn loads only what
// changed since its previous turn (one event to check, plus whatever another writer
// appended) instead of loading what its context needs again. Least recently
// used first out; a turn takes its session out (so a failed turn leaves nothing behind)
// and puts it back when it ends well. Thread-safe (a mutex): turns may run on a pool.

#include <libretto/detail/string_map.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/detail/context_load.hpp>
#include <libretto/session/session.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail {

class session_cache {
public:
    explicit session_cache(std::size_t max_sessions) : max_(max_sessions) {}

    std::size_t max_sessions() const noexcept { return max_; }

    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return lru_.size();
    }

    /// Removes and returns the session cached under `key`, if any.
    std::optional<session> take(std::string_view key) {
        if (max_ == 0) return std::nullopt;
        std::lock_guard lock(mutex_);
        auto it = index_.find(key);
        if (it == index_.end()) return std::nullopt;
        std::optional<session> out(std::move(it->second->second));
        lru_.erase(it->second);
        index_.erase(it);
        return out;
    }

    /// Caches `s` under `key` as the most recently used; evicts the least recently used
    /// beyond max_sessions(). Does nothing when the cache is disabled (0 sessions).
    void put(std::string key, session&& s) {
        if (max_ == 0) return;
        std::list<entry> evicted; // destroyed outside the lock
        std::lock_guard lock(mutex_);
        auto found = index_.find(key);
        if (found != index_.end()) {
            evicted.splice(evicted.end(), lru_, found->second);
            index_.erase(found);
        }
        lru_.emplace_front(key, std::move(s));
        index_.emplace(std::move(key), lru_.begin());
        while (lru_.size() > max_) {
            index_.erase(lru_.back().first);
            evicted.splice(evicted.end(), lru_, std::prev(lru_.end()));
        }
    }

private:
    using entry = std::pair<std::string, session>;
    std::size_t max_;
    mutable std::mutex mutex_;
    std::list<entry> lru_; // most recently used first
    string_map<std::list<entry>::iterator> index_;
};

/// Brings `cached` (a session as a turn left it) up to date with `fresh`, the store's
/// answer to a get with from_sequence = cached.last_sequence: the session's current
/// metadata and state, the last cached event again, then what other writers appended.
/// Returns false, leaving `cached` unspecified, when `fresh` does not continue `cached`
/// (the session was deleted or re-created, the cached copy is not the store's, or a newer
/// compaction's range reaches before the cached events and `with_newest_range` asks for
/// it): the caller then loads the session again. On success `cached` holds what a get with
/// context_only (and `with_newest_range`) would return.
inline bool refresh_cached_session(session& cached, session&& fresh, bool with_newest_range = false) {
    if (cached.events.empty() || fresh.events.empty()) return false;
    const event& last = cached.events.back();
    const event& again = fresh.events.front();
    if (last.sequence != cached.last_sequence || again.sequence != last.sequence || again.id != last.id ||
        fresh.last_sequence < cached.last_sequence || fresh.id != cached.id)
        return false;
    for (std::size_t i = 1; i < fresh.events.size(); ++i) {
        if (fresh.events[i].sequence != fresh.events[i - 1].sequence + 1) return false;
    }
    if (fresh.events.back().sequence != fresh.last_sequence) return false;
    const std::size_t added = fresh.events.size() - 1;
    if (cached.events.capacity() < cached.events.size() + added)
        cached.events.reserve(cached.events.size() + added + cached.events.size() / 2);
    for (std::size_t i = 1; i < fresh.events.size(); ++i) cached.events.push_back(fresh.events.shared(i));
    // A compaction appended since (by this runner's last turn or another writer) hides
    // some of them: keep what a load would now return.
    if (!select_context(cached.events, fresh.last_sequence, with_newest_range)) return false;
    cached.state = std::move(fresh.state);
    cached.last_update_time = fresh.last_update_time;
    cached.last_sequence = fresh.last_sequence;
    cached.app_name = std::move(fresh.app_name);
    cached.user_id = std::move(fresh.user_id);
    return true;
}

} // namespace libretto::detail

#endif
