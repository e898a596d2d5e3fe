// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SQLITE_STORE_HPP
#define LIBRETTO_STORE_SQLITE_STORE_HPP

// sqlite_store: sessions in an SQLite database file (WAL mode). Needs SQLite 3.38 or newer
// (JSON functions) and the libretto::sqlite CMake component.
//
//   lb::sqlite_store store{io.get_executor(), {.path = "sessions.db"}};
//   auto s = co_await store.async_create(opts);
//   co_await store.async_append_batch(s, std::move(turn_events));   // one transaction
//
// Threads. SQLite calls block, so they never run on the caller's thread: every operation
// runs on a worker strand (a one-thread asio::thread_pool the store owns, or a strand on
// options.blocking_executor) and completes on the completion handler's associated executor
// (default: the store's executor). An append encodes its events (serialisation, checks:
// no SQLite call) on the caller's thread first, so the worker writes one batch while the
// caller encodes the next. Each store instance has one connection, used by one
// thread at a time. Several instances (or processes) on one file are safe: writes take the
// database write lock (BEGIN IMMEDIATE) and wait for it up to busy_timeout, then fail with
// errc::busy. Opening (the constructor) is the one blocking call: it opens, checks and
// migrates the database on the calling thread, so create stores before serving.
//
// Semantics are the session_store rules (session_store.hpp, detail/store_logic.hpp). The revision
// check of an append (errc::stale_session) runs inside the write transaction, so it holds
// across connections and processes. Appends cost O(events appended): one row per event plus
// one session-row update; shared app:/user: keys are per-key rows.
//
// Extra to the concept: async_append_batch (several events in one transaction, all or
// nothing), the synchronous core (create/get/list/remove/append/append_batch: blocking, for
// tools and tests); a failed operation names the session, sequence or file in the caller's diagnostics.

#include <libretto/store/detail/post_result.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/detail/sqlite_core.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/system/errc.hpp>
#include <boost/system/system_error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace libretto {

/// SQLite's `PRAGMA synchronous` in WAL mode. normal: a commit is atomic and survives a
/// process crash, but the last commits may roll back on power loss; full: an fsync per
/// commit (durable, much slower); off: no fsync at all.
enum class sqlite_synchronous { off, normal, full };

struct sqlite_store_options {
    /// The database file; created if missing. ":memory:" gives a private in-memory database
    /// per store instance (not shared, no WAL).
    std::string path{};
    /// How long a write waits for another connection's write lock before errc::busy.
    std::chrono::milliseconds busy_timeout{5000};
    /// Largest accepted event, as serialized JSON bytes; 0: no limit. An oversize event
    /// fails its append (or its whole batch) with errc::oversize and stores nothing.
    std::size_t max_event_bytes = 16 * 1024 * 1024;
    sqlite_synchronous synchronous = sqlite_synchronous::normal;
    /// WAL checkpoints (copying committed pages from the -wal file back into the database
    /// file, and syncing it) start once the WAL holds this many pages (4 KiB each by
    /// default). 0: never automatically; the WAL then grows until the last connection to
    /// the file closes.
    std::size_t checkpoint_pages = 1000;
    /// true: checkpoints run on a thread of the store's own, on a second connection, so an
    /// append never waits for one (unless the WAL reaches 8 * checkpoint_pages, when the
    /// append checkpoints itself to keep it bounded). false: the append that takes the WAL
    /// past checkpoint_pages checkpoints, as SQLite's auto-checkpoint does. For file
    /// databases; ":memory:" has no WAL.
    bool background_checkpoint = true;
    /// Where the blocking SQLite calls run (through a strand). Empty: on a one-thread
    /// thread_pool owned by the store.
    boost::asio::any_io_executor blocking_executor{};
};

class sqlite_store {
public:
    using executor_type = boost::asio::any_io_executor;

    /// The schema version this build creates and migrates to.
    static constexpr int schema_version = detail::sqlite::latest_schema_version;

    /// Opens (creating or migrating) the database. Throws boost::system::system_error whose
    /// what() names the file and the reason: errc::corrupt_data for a file that is not an
    /// SQLite database, boost::system::errc::not_supported for a database written by a newer
    /// libretto (schema version above schema_version), errc::busy if another connection held
    /// the write lock beyond busy_timeout during a migration, errc::io_error otherwise.
    ///
    /// It blocks the calling thread while it opens: up to busy_timeout when another
    /// connection holds the write lock during a migration. On an io_context thread, use
    /// async_open.
    sqlite_store(executor_type ex, sqlite_store_options o) : sqlite_store(parts::make(std::move(ex), o)) {
        diagnostics d;
        if (auto ec = core_->open(params_of(std::move(o)), &d)) throw error_with_diagnostics(ec, std::move(d));
    }

    /// The completion signature of async_open.
    using open_signature = void(boost::system::error_code, std::optional<sqlite_store>);

    /// Opens the database as the constructor does, on the store's blocking executor (the
    /// options' blocking_executor, else the store's own thread): the calling thread never
    /// waits for the file, a migration or another connection's lock. Completes with
    /// (error_code, store) through the handler's associated executor (default `ex`): on
    /// failure the code the constructor would throw, no store, and in `diag` the file and
    /// the reason (use_awaitable throws error_with_diagnostics with them); on success the
    /// store.
    ///
    /// Cancellation (any type, through the handler's cancellation slot): an open waiting for
    /// another connection's lock stops waiting within ~10 ms and fails with
    /// operation_aborted; nothing was written, and no store is made. An open that is past
    /// its waits finishes as if not cancelled.
    template <boost::asio::completion_token_for<open_signature> Token = default_completion_token_t>
    static auto async_open(executor_type ex, sqlite_store_options o, diagnostics& diag, Token&& token = {}) {
        return open_start(&diag, std::move(ex), std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<open_signature> Token = default_completion_token_t>
    static auto async_open(executor_type ex, sqlite_store_options o, Token&& token = {}) {
        return open_start(nullptr, std::move(ex), std::move(o), std::forward<Token>(token));
    }

    sqlite_store(const sqlite_store&) = delete;
    sqlite_store& operator=(const sqlite_store&) = delete;
    sqlite_store(sqlite_store&&) noexcept = default;
    sqlite_store& operator=(sqlite_store&& o) noexcept {
        if (this != &o) {
            // The old store is destroyed by `old`'s destructor: drained, its strand before
            // its pool (the strand's implementation lives in the pool's services).
            sqlite_store old(std::move(o));
            std::swap(ex_, old.ex_);
            std::swap(pool_, old.pool_);
            std::swap(core_, old.core_);
            std::swap(strand_, old.strand_);
        }
        return *this;
    }

    /// Waits for the operations already started to finish their database work (their
    /// completions are then queued on their executors), then closes the connection.
    ~sqlite_store() { drain(); }

    executor_type get_executor() const { return ex_; }

    /// WAL checkpoints completed on the background thread so far (background_checkpoint);
    /// 0 without one.
    std::uint64_t background_checkpoints() const noexcept { return core_ ? core_->background_checkpoints() : 0; }

    // ---- synchronous core: blocks the calling thread; never call it on an io_context
    // thread that serves other work. Safe to mix with the async operations.

    // A failure's words go to *diag when the caller passes one (docs/errors.md).

    boost::system::error_code create(create_options o, session& out, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return core_->create(diag, std::move(o), out);
    }

    boost::system::error_code get(const session_key& k, const get_options& o, std::optional<session>& out,
                                  diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return core_->get(diag, k, o, out);
    }

    boost::system::error_code list(const list_options& o, list_page& out, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return core_->list(diag, o, out);
    }

    boost::system::error_code remove(const session_key& k, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return core_->remove(diag, k);
    }

    boost::system::error_code append(session& sess, event e, std::int64_t& sequence, diagnostics* diag = nullptr) {
        return append_batch(sess, detail::one_event(std::move(e)), sequence, diag);
    }

    boost::system::error_code append_batch(session& sess, std::vector<event> events, std::int64_t& sequence,
                                           diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        detail::append_result r;
        auto ec = core_->append(diag, target_of(sess), std::move(events), r);
        sequence = r.last_sequence;
        if (!ec) commit(sess, r);
        return ec;
    }

    // ---- asynchronous operations (the session_store concept): each with and without the
    // caller's diagnostics.

    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, diagnostics& diag, Token&& token = {}) {
        return create_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, Token&& token = {}) {
        return create_op(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o, diagnostics& diag, Token&& token = {}) {
        return get_op(&diag, std::move(k), std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o = {}, Token&& token = {}) {
        return get_op(nullptr, std::move(k), std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, diagnostics& diag, Token&& token = {}) {
        return list_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, Token&& token = {}) {
        return list_op(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, diagnostics& diag, Token&& token = {}) {
        return delete_op(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, Token&& token = {}) {
        return delete_op(nullptr, std::move(k), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, event e, diagnostics& diag, Token&& token = {}) {
        return append_op(&diag, sess, detail::one_event(std::move(e)), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, event e, Token&& token = {}) {
        return append_op(nullptr, sess, detail::one_event(std::move(e)), std::forward<Token>(token));
    }

    /// Appends a turn's events in one transaction, all or nothing. Completes with the
    /// sequence of the last stored event (0 if none was stored: all were partial).
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& sess, std::vector<event> events, diagnostics& diag, Token&& token = {}) {
        return append_op(&diag, sess, std::move(events), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& sess, std::vector<event> events, Token&& token = {}) {
        return append_op(nullptr, sess, std::move(events), std::forward<Token>(token));
    }

private:
    template <class Token>
    static auto open_start(diagnostics* d, executor_type ex, sqlite_store_options o, Token&& token) {
        return detail::initiate_with_diagnostics<open_signature>(
            d, std::forward<Token>(token),
            [](auto handler, diagnostics* d, executor_type ex, sqlite_store_options o) {
                if (d) d->clear();
                const auto handler_ex = boost::asio::get_associated_executor(handler, ex);
                auto guard = boost::asio::make_work_guard(handler_ex);
                auto abandon = std::make_shared<std::atomic<bool>>(false);
                auto slot = boost::asio::get_associated_cancellation_slot(handler);
                if (slot.is_connected())
                    slot.assign([abandon](boost::asio::cancellation_type) { abandon->store(true); });
                auto pp = std::make_unique<parts>(parts::make(ex, o));
                const executor_type worker = pp->strand;
                boost::asio::post(worker, [pp = std::move(pp), p = params_of(std::move(o)), ex = std::move(ex), d,
                                           guard = std::move(guard), handler = std::move(handler),
                                           abandon = std::move(abandon)]() mutable {
                    boost::system::error_code ec;
                    try {
                        ec = pp->core->open(p, d, abandon.get());
                    } catch (...) {
                        ec = detail::exception_to_error(std::current_exception(), d);
                    }
                    // The store, or on failure its parts, go to the caller's executor to be
                    // destroyed there: a pool must never be joined from its own thread.
                    std::optional<sqlite_store> st;
                    if (!ec) st.emplace(sqlite_store(std::move(*pp)));
                    else boost::asio::post(ex, [pp = std::move(pp)] {});
                    // The slot is cleared where cancellation is emitted (the handler's
                    // executor), before the handler runs, as Asio requires.
                    const auto handler_ex = guard.get_executor();
                    boost::asio::post(handler_ex, [handler = std::move(handler), ec, st = std::move(st)]() mutable {
                        boost::asio::get_associated_cancellation_slot(handler).clear();
                        std::move(handler)(ec, std::move(st));
                    });
                    guard.reset();
                });
            },
            std::move(ex), std::move(o));
    }

    template <class Token>
    auto create_op(diagnostics* d, create_options o, Token&& token) {
        return detail::initiate_with_diagnostics<create_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, create_options o) {
                this->post_work(std::move(handler), d, [o = std::move(o)](detail::sqlite_core& c, diagnostics* d) mutable {
                    session out;
                    auto ec = c.create(d, std::move(o), out);
                    return std::make_tuple(ec, std::move(out));
                });
            },
            std::move(o));
    }
    template <class Token>
    auto get_op(diagnostics* d, session_key k, get_options o, Token&& token) {
        return detail::initiate_with_diagnostics<get_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session_key k, get_options o) {
                this->post_work(std::move(handler), d,
                                [k = std::move(k), o = std::move(o)](detail::sqlite_core& c, diagnostics* d) {
                                    std::optional<session> out;
                                    auto ec = c.get(d, k, o, out);
                                    return std::make_tuple(ec, std::move(out));
                                });
            },
            std::move(k), std::move(o));
    }
    template <class Token>
    auto list_op(diagnostics* d, list_options o, Token&& token) {
        return detail::initiate_with_diagnostics<list_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, list_options o) {
                this->post_work(std::move(handler), d, [o = std::move(o)](detail::sqlite_core& c, diagnostics* d) {
                    list_page out;
                    auto ec = c.list(d, o, out);
                    return std::make_tuple(ec, std::move(out));
                });
            },
            std::move(o));
    }
    template <class Token>
    auto delete_op(diagnostics* d, session_key k, Token&& token) {
        return detail::initiate_with_diagnostics<delete_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session_key k) {
                this->post_work(std::move(handler), d, [k = std::move(k)](detail::sqlite_core& c, diagnostics* d) {
                    return std::make_tuple(c.remove(d, k));
                });
            },
            std::move(k));
    }
    template <class Token>
    auto append_op(diagnostics* d, session& sess, std::vector<event> events, Token&& token) {
        return detail::initiate_with_diagnostics<append_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session* sess, std::vector<event> events) {
                this->start_append(std::move(handler), d, sess, std::move(events));
            },
            &sess, std::move(events));
    }

    /// What a store is made of before its database is open.
    struct parts {
        executor_type ex;
        std::unique_ptr<boost::asio::thread_pool> pool;
        std::shared_ptr<detail::sqlite_core> core;
        executor_type strand;

        static parts make(executor_type ex, const sqlite_store_options& o) {
            parts p;
            p.ex = std::move(ex);
            if (!o.blocking_executor) p.pool = std::make_unique<boost::asio::thread_pool>(1);
            p.core = std::make_shared<detail::sqlite_core>();
            p.strand = o.blocking_executor ? o.blocking_executor : executor_type(p.pool->get_executor());
            return p;
        }
    };

    explicit sqlite_store(parts&& p)
        : ex_(std::move(p.ex)), pool_(std::move(p.pool)), core_(std::move(p.core)), strand_(std::move(p.strand)) {}

    static detail::sqlite_params params_of(sqlite_store_options o) {
        detail::sqlite_params p;
        p.path = std::move(o.path);
        // Negative: -1, which the open refuses (sqlite_core::open_impl).
        p.busy_timeout_ms = static_cast<int>(std::min<std::chrono::milliseconds::rep>(
            std::max<std::chrono::milliseconds::rep>(o.busy_timeout.count(), -1), 0x7fffffff));
        p.synchronous = o.synchronous == sqlite_synchronous::off    ? "OFF"
                        : o.synchronous == sqlite_synchronous::full ? "FULL"
                                                                     : "NORMAL";
        p.max_event_bytes = o.max_event_bytes;
        p.checkpoint_pages = o.checkpoint_pages;
        p.background_checkpoint = o.background_checkpoint;
        return p;
    }

    static detail::append_target target_of(const session& s) {
        return {{s.app_name, s.user_id, s.id}, s.last_sequence};
    }

    static void commit(session& sess, detail::append_result& r) {
        for (std::size_t i = 0; i < r.events.size(); ++i)
            detail::commit_append(sess, std::move(r.events[i]), r.routed[i]);
    }

    void drain() noexcept {
        if (pool_) pool_->join(); // the pool has no work guard: join returns once it is idle
    }

    // Runs work(core) on the worker strand; its tuple (error_code, results...) completes the
    // handler through a post to the handler's associated executor (default: ex_), which is
    // kept busy (work-tracked) until then.
    template <class Handler, class Work>
    void post_work(Handler handler, diagnostics* d, Work work, bool clear = true) {
        if (d && clear) d->clear();
        auto guard = boost::asio::make_work_guard(boost::asio::get_associated_executor(handler, ex_));
        boost::asio::post(strand_, [core = core_, ex = ex_, d, guard = std::move(guard), handler = std::move(handler),
                                    work = std::move(work)]() mutable {
            // An exception must not escape into the worker thread (it would end the process):
            // it completes the operation with an error instead.
            decltype(work(*core, d)) results{};
            try {
                results = work(*core, d);
            } catch (const std::bad_alloc&) {
                results = {};
                std::get<0>(results) = make_error_code(boost::system::errc::not_enough_memory);
                detail::sqlite_core::record(d, "out of memory");
            } catch (const std::exception& e) {
                results = {};
                std::get<0>(results) = errc::io_error;
                detail::sqlite_core::record(d, std::string("unexpected exception: ") + e.what());
            }
            std::apply([&](auto&... args) { detail::post_result(std::move(handler), ex, std::move(args)...); },
                       results);
            guard.reset();
        });
    }

    // The caller's session is read here (on the caller's thread) and written in the
    // completion (on the handler's executor), never on the worker thread.
    template <class Handler>
    void start_append(Handler handler, diagnostics* d, session* sess, std::vector<event> events) {
        auto target = target_of(*sess);
        auto hex = boost::asio::get_associated_executor(handler, ex_);
        auto finish = boost::asio::bind_executor(
            hex, [h = std::move(handler), sess](boost::system::error_code ec, detail::append_result r) mutable {
                if (!ec) commit(*sess, r);
                std::move(h)(ec, r.last_sequence);
            });
        // Encoded here, on the caller's thread (no connection needed): the worker writes the
        // previous batch meanwhile. A batch that fails here still completes through the
        // worker, in order with the operations started before it.
        detail::prepared_batch batch;
        if (d) d->clear();
        // The first half on this thread: a refusal's words are in *d before the post.
        const boost::system::error_code prepared = core_->prepare(d, target, std::move(events), batch);
        post_work(
            std::move(finish), d,
            [target = std::move(target), batch = std::move(batch), prepared](detail::sqlite_core& c,
                                                                              diagnostics* d) mutable {
                detail::append_result r;
                auto ec = prepared ? prepared : c.append_prepared(d, target, std::move(batch), r);
                return std::make_tuple(ec, std::move(r));
            },
            false);
    }

    executor_type ex_;
    std::unique_ptr<boost::asio::thread_pool> pool_; // the owned worker thread, if any
    std::shared_ptr<detail::sqlite_core> core_;      // shared with operations in flight
    boost::asio::strand<executor_type> strand_;
};

static_assert(session_store<sqlite_store>);
static_assert(batch_session_store<sqlite_store>);

} // namespace libretto

#endif
