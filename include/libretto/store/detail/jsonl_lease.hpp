// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_LEASE_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_LEASE_HPP

// jsonl_store's writer lock as a lease: taken when a write needs it, kept for lock_linger
// after the last append so that a burst takes it once, released (with a checkpoint) by a
// timer, and given up by idle sessions before waiting for another lock. Apart from the
// engine: the timers and their lifetimes are a subject of their own.

#include <libretto/store/detail/jsonl_engine.hpp>

#include <libretto/store/detail/jsonl_file.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace libretto::detail::jsonl {

inline error_code engine::take_lock(diagnostics* d, open_session& s,
                                    std::optional<std::chrono::milliseconds> timeout) {
    lock_holder h;
    lock_options lo = lock_opt;
    if (timeout) lo.timeout = *timeout;
    auto ec = s.lock.acquire(s.dir / "lock", lo, nonce, &h, [this, p = &s] { release_idle_leases(p); });
    if (ec == errc::busy) {
        std::string who = h.pid ? "held by pid " + std::to_string(h.pid) + " (instance " + h.nonce + ")"
                                : "held by another writer";
        return fail(d, errc::busy, s.dir / "lock", 0, 0, who);
    }
    if (ec && ec != errc::not_found) return io_fail(d, ec, s.dir / "lock", "lock");
    return ec;
}

/// After an operation that may hold the lock: keep it for lock_linger, checkpoint if due.
inline void engine::after_write(const std::shared_ptr<open_session>& sp, bool on_callers_thread) {
    open_session& s = *sp;
    if (s.lock.held()) {
        if (opt.lock_linger.count() <= 0) {
            release_lease(s);
        } else {
            s.last_use = steady::now();
            arm_timer(sp, opt.lock_linger);
        }
    }
    if (s.data && s.cp.covered - s.checkpointed >= opt.checkpoint_bytes) {
        if (!on_callers_thread) {
            write_checkpoint(s);
        } else if (!s.checkpoint_posted) {
            s.checkpoint_posted = true;
            boost::asio::post(blocking, [w = std::weak_ptr<open_session>(sp), self = weak_from_this()] {
                auto p = w.lock();
                auto e = self.lock();
                if (!p || !e) return;
                std::lock_guard l(p->mu);
                p->checkpoint_posted = false;
                if (!p->closed) e->write_checkpoint(*p);
            });
        }
    }
}

inline void engine::arm_timer(const std::shared_ptr<open_session>& sp,
                              std::chrono::steady_clock::duration d) {
    open_session& s = *sp;
    if (s.timer_armed) return;
    if (!s.timer) s.timer.emplace(blocking);
    s.timer_armed = true;
    s.timer->expires_after(d);
    s.timer->async_wait([w = std::weak_ptr<open_session>(sp), self = weak_from_this()](error_code ec) {
        // Cancelled: the session was retired (closed, lock released). Going on would
        // find its mutex held by the retiring caller and leave a re-check timer of
        // lock_linger on the pool, which ~jsonl_store then waits for.
        if (ec == boost::asio::error::operation_aborted) return;
        auto p = w.lock();
        auto e = self.lock();
        if (p && e) e->on_linger(p);
    });
}

inline void engine::on_linger(const std::shared_ptr<open_session>& sp) {
    std::unique_lock l(sp->mu, std::try_to_lock);
    if (!l) {
        // In use — perhaps waiting for a lock whose release needs a thread of this very
        // executor: never block one here. Look again later (the session's own timer is
        // touched only under its mutex, so a one-shot timer does the waiting).
        auto t = std::make_shared<boost::asio::steady_timer>(blocking, opt.lock_linger);
        t->async_wait([t, w = std::weak_ptr<open_session>(sp), self = weak_from_this()](error_code) {
            auto p = w.lock();
            auto e = self.lock();
            if (p && e) e->on_linger(p);
        });
        return;
    }
    sp->timer_armed = false;
    if (sp->closed || !sp->lock.held()) return;
    const auto idle = steady::now() - sp->last_use;
    if (idle >= opt.lock_linger) release_lease(*sp);
    else arm_timer(sp, opt.lock_linger - idle);
}

inline void engine::checkpoint_all() {
    std::vector<std::shared_ptr<open_session>> all;
    {
        std::lock_guard g(mu);
        for (auto& [k, p] : sessions) all.push_back(p);
    }
    for (auto& p : all) {
        std::lock_guard l(p->mu);
        if (!p->closed) write_checkpoint(*p);
    }
}

inline void engine::release_lease(open_session& s) {
    checkpoint_if_worth_it(s);
    s.lock.release();
}

/// A checkpoint rewrites meta.json, whose offset marks grow with the session: written
/// only once 64 KiB of transcript are past the last one, so turns stay O(1) amortised
/// (a reader scans at most that much more).
inline void engine::checkpoint_if_worth_it(open_session& s) {
    if (s.data && s.cp.covered - s.checkpointed >= (64u << 10)) write_checkpoint(s);
}

/// Before waiting for a lock: release this instance's idle leases, so two instances
/// waiting on each other's sessions cannot stall each other until the timeout.
inline void engine::release_idle_leases(const open_session* except) {
    std::vector<std::shared_ptr<open_session>> all;
    {
        std::lock_guard g(mu);
        for (auto& [k, p] : sessions)
            if (p.get() != except) all.push_back(p);
    }
    for (auto& p : all) {
        std::unique_lock l(p->mu, std::try_to_lock);
        if (l && !p->closed && p->lock.held()) release_lease(*p);
    }
}

} // namespace libretto::detail::jsonl

#endif
