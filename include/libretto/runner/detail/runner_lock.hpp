// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_RUNNER_LOCK_HPP
#define LIBRETTO_RUNNER_DETAIL_RUNNER_LOCK_HPP

// session_locks: the runner's per-session async mutex. One turn of a session runs at a
// time inside a process; a second turn waits (suspended, no thread blocked) and is handed
// the lock directly when the first ends (FIFO, no barging). Cancelling a waiting acquire
// (through its cancellation slot) removes it from the queue. Thread-safe.

#include <libretto/detail/string_map.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail {

class session_locks : public std::enable_shared_from_this<session_locks> {
public:
    /// Ownership of one key's lock; releasing hands it to the next waiter. Move-only.
    class guard {
    public:
        guard() = default;
        guard(guard&& o) noexcept : owner_(std::move(o.owner_)), key_(std::move(o.key_)) {}
        guard& operator=(guard&& o) noexcept {
            if (this != &o) {
                release();
                owner_ = std::move(o.owner_);
                key_ = std::move(o.key_);
            }
            return *this;
        }
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
        ~guard() { release(); }

        explicit operator bool() const noexcept { return static_cast<bool>(owner_); }
        void release() noexcept {
            if (auto o = std::move(owner_)) o->release(key_);
            owner_.reset();
        }

    private:
        friend class session_locks;
        guard(std::shared_ptr<session_locks> o, std::string k) noexcept : owner_(std::move(o)), key_(std::move(k)) {}
        std::shared_ptr<session_locks> owner_;
        std::string key_;
    };

    using handler_type = boost::asio::any_completion_handler<void(boost::system::error_code, guard)>;

    /// The lock of `key` if it is free (no suspension, no post), else an empty guard.
    guard try_acquire(std::string_view key) {
        std::lock_guard lk(m_);
        auto [it, inserted] = held_.try_emplace(std::string(key));
        if (!inserted) return {};
        return guard(shared_from_this(), it->first);
    }

    /// Waits for the lock of `key`; completes with void(error_code, guard) through a post on
    /// the handler's associated executor (default `ex`). A cancelled wait completes with
    /// asio::error::operation_aborted and an empty guard.
    template <class Token>
    auto async_acquire(std::string key, boost::asio::any_io_executor ex, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, guard)>(
            initiate{this}, token, std::move(key), std::move(ex));
    }

    /// Keys currently locked (tests).
    std::size_t locked_count() const {
        std::lock_guard lk(m_);
        return held_.size();
    }
    /// Turns waiting for `key` (tests).
    std::size_t waiting(std::string_view key) const {
        std::lock_guard lk(m_);
        auto it = held_.find(key);
        return it == held_.end() ? 0 : it->second.size();
    }

private:
    struct waiter {
        std::uint64_t id;
        boost::asio::any_io_executor ex;
        handler_type handler;
    };
    // std::list: waiters are erased from the middle on cancellation without moving the
    // others (any_completion_handler's move assignment is broken in Asio 1.26).
    using queue = std::list<waiter>;

    struct canceller {
        std::weak_ptr<session_locks> owner;
        std::string key;
        std::uint64_t id;
        void operator()(boost::asio::cancellation_type_t t) {
            using ct = boost::asio::cancellation_type;
            if ((t & (ct::terminal | ct::partial)) == ct::none) return;
            if (auto o = owner.lock()) o->cancel_wait(key, id);
        }
    };

    struct initiate {
        session_locks* self;
        template <class Handler>
        void operator()(Handler&& handler, std::string key, boost::asio::any_io_executor ex) const {
            boost::asio::any_io_executor hex = boost::asio::get_associated_executor(handler, ex);
            handler_type h(std::forward<Handler>(handler));
            std::unique_lock lk(self->m_);
            auto [it, inserted] = self->held_.try_emplace(key);
            if (inserted) {
                lk.unlock();
                guard g(self->shared_from_this(), std::move(key));
                boost::asio::post(hex, boost::asio::append(std::move(h), boost::system::error_code{}, std::move(g)));
                return;
            }
            const std::uint64_t id = ++self->next_id_;
            auto slot = h.get_cancellation_slot();
            if (slot.is_connected()) slot.template emplace<canceller>(self->weak_from_this(), key, id);
            it->second.push_back(waiter{id, std::move(hex), std::move(h)});
        }
    };

    void release(const std::string& key) noexcept {
        std::unique_lock lk(m_);
        auto it = held_.find(key);
        if (it == held_.end()) return;
        if (it->second.empty()) {
            held_.erase(it);
            return;
        }
        // Hand the lock over: the key stays held, now by the first waiter.
        waiter w = std::move(it->second.front());
        it->second.pop_front();
        lk.unlock();
        try {
            guard g(shared_from_this(), key);
            boost::asio::post(w.ex, boost::asio::append(std::move(w.handler), boost::system::error_code{}, std::move(g)));
        } catch (...) {
            // post failed (allocation): nobody can own the lock any more; free the key.
            std::lock_guard lk2(m_);
            auto again = held_.find(key);
            if (again != held_.end() && again->second.empty()) held_.erase(again);
        }
    }

    void cancel_wait(const std::string& key, std::uint64_t id) {
        std::unique_lock lk(m_);
        auto it = held_.find(key);
        if (it == held_.end()) return;
        for (auto w = it->second.begin(); w != it->second.end(); ++w) {
            if (w->id != id) continue;
            waiter mine = std::move(*w);
            it->second.erase(w);
            lk.unlock();
            boost::asio::post(mine.ex, boost::asio::append(std::move(mine.handler),
                                                           make_error_code(boost::asio::error::operation_aborted), guard{}));
            return;
        }
    }

    mutable std::mutex m_;
    string_map<queue> held_; // a key per locked session, with its waiters
    std::uint64_t next_id_ = 0;
};

} // namespace libretto::detail

#endif
