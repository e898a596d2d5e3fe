// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SQLITE_CHECKPOINTER_HPP
#define LIBRETTO_STORE_DETAIL_SQLITE_CHECKPOINTER_HPP

// WAL checkpoints off the writer's path. In WAL mode every commit appends pages to the -wal
// file; a checkpoint copies them back into the database file and syncs both, which on a
// slow disk costs milliseconds. SQLite's auto-checkpoint runs it inside the commit that
// crosses the threshold, so an append now and then waits for it (with slow disk syncs, half
// of sqlite_append_events_s). Here a thread of its own, on a connection of its own,
// runs PASSIVE checkpoints (they never block the writer or readers) when the writer's
// WAL hook says the WAL has grown past the threshold.

#include <libretto/store/detail/sqlite_db.hpp>

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace libretto::detail::sqlite {

class checkpointer {
public:
    checkpointer() = default;
    checkpointer(const checkpointer&) = delete;
    checkpointer& operator=(const checkpointer&) = delete;
    ~checkpointer() { stop(); }

    /// Opens the second connection and starts the thread. On failure nothing runs and
    /// `detail` says why; a lock is waited for up to `busy_timeout_ms`, as the store's own.
    int start(const std::string& path, int busy_timeout_ms, std::string& detail) {
        int rc = db_.open(path, detail);
        if (rc != SQLITE_OK) return rc;
        // A connection finds the WAL when it first reads the file; until then a checkpoint
        // on it does nothing (and reports -1 frames).
        std::string mode;
        rc = enter_wal_mode(db_, mode, detail, busy_timeout_ms);
        if (rc != SQLITE_ROW) return rc;
        thread_ = std::thread([this] { run(); });
        return SQLITE_OK;
    }

    /// From the writer's WAL hook: asks for a checkpoint (coalesced with one already asked).
    void request() {
        {
            std::lock_guard lock(mutex_);
            pending_ = true;
        }
        wake_.notify_one();
    }

    /// Runs `f` (the writer's own checkpoint) while the thread is not checkpointing: waits
    /// for the checkpoint in progress, if any, and starts none until `f` returns. Two
    /// checkpoints at once fail one of them with SQLITE_BUSY.
    template <class F>
    void exclusive(F&& f) {
        std::unique_lock lock(mutex_);
        paused_ = true;
        idle_.wait(lock, [this] { return !running_; });
        lock.unlock();
        f();
        lock.lock();
        paused_ = false;
        lock.unlock();
        wake_.notify_one();
    }

    /// Checkpoints run to completion so far (each copied every committed WAL page back).
    std::uint64_t completed() const noexcept { return completed_.load(std::memory_order_relaxed); }

    void stop() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return (pending_ && !paused_) || stopping_; });
            if (stopping_) return;
            pending_ = false;
            running_ = true;
            lock.unlock();
            int wal_frames = 0, copied = 0;
            // SQLITE_BUSY: another connection is checkpointing; the next request retries.
            const int rc = sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied);
            if (rc == SQLITE_OK && wal_frames >= 0 && copied == wal_frames) completed_.fetch_add(1, std::memory_order_relaxed);
            lock.lock();
            running_ = false;
            idle_.notify_all();
        }
    }

    connection db_;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_; // the thread: a request, the end of a pause, stop
    std::condition_variable idle_; // the writer: the running checkpoint finished
    bool pending_ = false;
    bool running_ = false;
    bool paused_ = false;
    bool stopping_ = false;
    std::atomic<std::uint64_t> completed_{0};
};

} // namespace libretto::detail::sqlite

#endif
