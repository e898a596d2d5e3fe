// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_JSONL_STORE_HPP
#define LIBRETTO_STORE_JSONL_STORE_HPP

// jsonl_store: the embedded default store. A directory of append-only JSON Lines
// transcripts, one per session, safe to share between store instances and processes.
//
//   <directory>/apps/<app>/state.json                     app: scope (atomic replace)
//   <directory>/apps/<app>/index.json                     session index (atomic replace; a cache)
//   <directory>/apps/<app>/users/<user>/state.json        user: scope (atomic replace)
//   <directory>/apps/<app>/users/<user>/sessions/<id>/
//       transcript.jsonl    header line, then one event per line, each with a CRC-32C
//       meta.json           checkpoint: state, sequence, byte offsets (a cache, verified)
//       lock                the writer lock (flock + holder record: pid, start time)
//       torn-<offset>-<ms>.bin   bytes of a torn tail moved aside by recovery
//
// docs/stores.md explains the design: durability levels, the checkpoint and the index,
// locking, recovery and maintenance. POSIX only (Linux: /proc is read for process start
// times).
//
// This header is the public surface: the options, the reports and the class. The engine
// behind the class is in detail/jsonl_engine.hpp, one header per part of its work; the
// class's templates are in impl/jsonl_store.hpp and its other functions, with the engine, in
// impl/jsonl_store.ipp (compiled once with LIBRETTO_SEPARATE_COMPILATION).

#include <libretto/async.hpp>
#include <libretto/detail/config.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace libretto {

/// What an acknowledged append survives. Every level survives a crash of the process
/// (SIGKILL included): an append is acknowledged only after write(2) returned, so the
/// bytes are in the kernel. The levels differ on power failure or a kernel crash.
enum class durability {
    /// No fsync anywhere. A power failure may lose whatever the kernel had not written
    /// back yet (up to ~30 s on Linux), including creates, deletes and shared state.
    none,
    /// fdatasync of a transcript when the caller says a turn ended (jsonl_store::flush /
    /// async_flush; the runner calls it after each turn). Creates, deletes, app:/user:
    /// state and the index are fsynced when made. A power failure loses at most the events
    /// appended since the session's last flush.
    per_turn,
    /// fdatasync after every append, before it is acknowledged. A power failure loses no
    /// acknowledged event.
    per_event,
};

struct jsonl_store_options {
    /// The store's directory; created if missing.
    std::filesystem::path directory = "sessions";
    libretto::durability durability = libretto::durability::per_turn;
    /// Largest accepted event, as serialized JSON bytes; 0: no limit. Oversize appends fail
    /// with errc::oversize and write nothing.
    std::size_t max_event_bytes = 16 * 1024 * 1024;
    /// How long a writer waits for a session's lock before errc::busy.
    std::chrono::milliseconds lock_timeout{10'000};
    /// A writer keeps a session's lock this long after its last append, so a burst of
    /// appends takes it once (0: release after every operation). Other writers wait at
    /// most this long after the burst.
    std::chrono::milliseconds lock_linger{5};
    /// A lock held while its record names a dead process (or a reused pid) is reclaimed
    /// once the record is this old.
    std::chrono::milliseconds stale_lock_age{2'000};
    /// Threads of the store's own pool for blocking work (fsync, reads, lock waits).
    std::size_t threads = 2;
    /// Run blocking work here instead of on an own pool (a thread_pool's executor, say;
    /// never the io_context the caller runs).
    std::optional<boost::asio::any_io_executor> blocking_executor{};
    /// Appends that need no fsync and find the session's lock already held run on the
    /// caller's thread (one write(2)); the result still completes through a post.
    bool inline_appends = true;
    /// Sessions kept open (descriptors, checkpoints in memory) per store instance.
    std::size_t max_open_sessions = 256;
    /// Write a session's checkpoint (meta.json) after this many new transcript bytes.
    std::uint64_t checkpoint_bytes = 4 * 1024 * 1024;
    /// Threads decoding a large read (over 1 MiB); 0: the hardware's, at most 8.
    unsigned load_threads = 0;
};

/// A torn or corrupt tail found when a session was opened: the intact prefix was kept and
/// the bad bytes were moved to `side_file`.
struct jsonl_recovery {
    session_key key{};
    std::filesystem::path transcript{};
    std::filesystem::path side_file{};
    std::uint64_t intact_bytes = 0;  ///< the transcript's size after recovery
    std::uint64_t moved_bytes = 0;   ///< bytes moved to the side file
    std::int64_t last_sequence = 0;  ///< newest event kept
    std::uint64_t line = 0;          ///< first bad line (1 is the header)
    std::string reason{};
};

/// What the store's last get read (for tests and benchmarks).
struct jsonl_read_stats {
    std::uint64_t file_bytes = 0;     ///< verified transcript size
    std::uint64_t read_offset = 0;    ///< where reading started (an offset mark at or before parse_offset)
    std::uint64_t parse_offset = 0;   ///< offset of the first decoded line
    std::uint64_t bytes_read = 0;     ///< transcript bytes read for events
    std::int64_t first_sequence = 0;  ///< of the first decoded event (0: none)
    std::size_t events_decoded = 0;
    std::uint64_t scanned_bytes = 0;  ///< bytes scanned to catch up with the file (tail after the checkpoint)
};

/// Maintenance: which sessions to remove. Unset limits do not apply.
struct jsonl_maintenance_options {
    std::optional<std::string> app_name{};          ///< only this app (default: every app)
    std::optional<double> max_idle_seconds{};        ///< remove sessions idle longer than this
    std::optional<std::size_t> max_sessions{};       ///< keep at most this many (the newest)
    std::optional<std::uint64_t> max_bytes{};        ///< when the directory is over this, remove
    std::optional<std::uint64_t> high_water_bytes{}; ///< ... oldest first down to this (default 80 % of max_bytes)
    bool dry_run = false;                            ///< report, remove nothing
    std::optional<double> now{};                     ///< the clock (default: now)
};

struct jsonl_removal {
    session_key key{};
    double last_update = 0;
    std::uint64_t bytes = 0;
    std::string reason{}; ///< "idle", "max_sessions" or "byte_budget"
};

struct jsonl_maintenance_report {
    bool dry_run = false;
    std::size_t sessions_before = 0;
    std::uint64_t bytes_before = 0;
    std::vector<jsonl_removal> removed{};   ///< removed (or, in a dry run, would be), in order
    std::vector<session_key> busy{};        ///< selected but locked by a writer: kept
    std::size_t sessions_after = 0;
    std::uint64_t bytes_after = 0;
};

namespace detail::jsonl {
class engine;
} // namespace detail::jsonl

/// The JSON Lines session store. Copies share one store (its open sessions and its
/// thread pool); two stores opened on one directory (in one process or several) exclude
/// each other through per-session lock files and see each other's writes through the files.
class jsonl_store {
public:
    using executor_type = boost::asio::any_io_executor;

    /// `ex` is where completions run (the caller's io_context); blocking work runs on the
    /// store's own thread pool or on `o.blocking_executor`.
    LIBRETTO_DECL explicit jsonl_store(executor_type ex, jsonl_store_options o = {});

    executor_type get_executor() const { return ex_; }
    LIBRETTO_DECL const jsonl_store_options& options() const;

    // ---- synchronous core (blocking; the async operations run these on the pool) --------
    // A failure's words go to *diag when the caller passes one (docs/errors.md).

    LIBRETTO_DECL boost::system::error_code create(create_options o, session& out, diagnostics* diag = nullptr);
    LIBRETTO_DECL boost::system::error_code get(const session_key& k, const get_options& o, std::optional<session>& out,
                                  diagnostics* diag = nullptr);
    LIBRETTO_DECL boost::system::error_code list(const list_options& o, list_page& out, diagnostics* diag = nullptr);
    LIBRETTO_DECL boost::system::error_code remove(const session_key& k, diagnostics* diag = nullptr);
    LIBRETTO_DECL boost::system::error_code append(session& s, event e, std::int64_t& sequence, diagnostics* diag = nullptr);
    /// Ends a turn: fdatasync of the session's transcript if this store wrote to it since
    /// the last flush (durability per_turn), and a checkpoint. not_found if there is no
    /// such session.
    LIBRETTO_DECL boost::system::error_code flush(const session_key& k, diagnostics* diag = nullptr);
    LIBRETTO_DECL boost::system::error_code maintain(const jsonl_maintenance_options& o, jsonl_maintenance_report& r,
                                       diagnostics* diag = nullptr);

    // ---- reports ----------------------------------------------------------------------------

    /// Every torn tail this store recovered, oldest first.
    LIBRETTO_DECL std::vector<jsonl_recovery> recoveries() const;
    /// What the last get read.
    LIBRETTO_DECL jsonl_read_stats last_read_stats() const;

    // ---- asynchronous operations (the session_store concept) ---------------------------
    // Each has a form with the caller's diagnostics, which names the file, line and cause
    // when the operation fails (docs/errors.md), and one without.

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

    /// Appends `e` to `s` (see session_store). `s` must stay alive and untouched until the
    /// operation completes. With durability none or per_turn, an append that finds the
    /// session's lock held by this store runs on the calling thread (one write(2)); a
    /// coroutine caller (use_awaitable, or as_tuple of it) then resumes at once, without
    /// suspending. Other appends run on the pool.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& s, event e, diagnostics& diag, Token&& token = {}) {
        return append_op(&diag, s, std::move(e), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& s, event e, Token&& token = {}) {
        return append_op(nullptr, s, std::move(e), std::forward<Token>(token));
    }

    /// flush() on the pool: the runner calls it after each turn.
    template <boost::asio::completion_token_for<flush_signature> Token = default_completion_token_t>
    auto async_flush(session_key k, diagnostics& diag, Token&& token = {}) {
        return flush_op(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<flush_signature> Token = default_completion_token_t>
    auto async_flush(session_key k, Token&& token = {}) {
        return flush_op(nullptr, std::move(k), std::forward<Token>(token));
    }

    using maintain_signature = void(boost::system::error_code, jsonl_maintenance_report);

    template <boost::asio::completion_token_for<maintain_signature> Token = default_completion_token_t>
    auto async_maintain(jsonl_maintenance_options o, diagnostics& diag, Token&& token = {}) {
        return maintain_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<maintain_signature> Token = default_completion_token_t>
    auto async_maintain(jsonl_maintenance_options o, Token&& token = {}) {
        return maintain_op(nullptr, std::move(o), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto create_op(diagnostics* d, create_options o, Token&& token);
    template <class Token>
    auto get_op(diagnostics* d, session_key k, get_options o, Token&& token);
    template <class Token>
    auto list_op(diagnostics* d, list_options o, Token&& token);
    template <class Token>
    auto delete_op(diagnostics* d, session_key k, Token&& token);
    template <class Token>
    auto flush_op(diagnostics* d, session_key k, Token&& token);
    template <class Token>
    auto maintain_op(diagnostics* d, jsonl_maintenance_options o, Token&& token);
    template <class Token>
    auto append_op(diagnostics* d, session& s, event&& e, Token&& token); // &&: no move before the node

    struct append_on_pool;
    struct pool_owner;

    // The engine's operations, defined with the engine (impl/jsonl_store.ipp): the templates
    // reach it only through these.
    using engine = detail::jsonl::engine;
    LIBRETTO_DECL static const boost::asio::any_io_executor& blocking_executor(const engine& e) noexcept;
    LIBRETTO_DECL static boost::system::error_code engine_create(engine& e, diagnostics* d, create_options o,
                                                                 session& out);
    LIBRETTO_DECL static boost::system::error_code engine_get(engine& e, diagnostics* d, const session_key& k,
                                                              const get_options& o, std::optional<session>& out);
    LIBRETTO_DECL static boost::system::error_code engine_list(engine& e, diagnostics* d, const list_options& o,
                                                               list_page& out);
    LIBRETTO_DECL static boost::system::error_code engine_remove(engine& e, diagnostics* d, const session_key& k);
    LIBRETTO_DECL static boost::system::error_code engine_flush(engine& e, diagnostics* d, const session_key& k);
    LIBRETTO_DECL static boost::system::error_code engine_maintain(engine& e, diagnostics* d,
                                                                   const jsonl_maintenance_options& o,
                                                                   jsonl_maintenance_report& r);
    LIBRETTO_DECL static boost::system::error_code engine_append(engine& e, diagnostics* d, session& s,
                                                                 std::shared_ptr<event> node, std::int64_t& seq);
    LIBRETTO_DECL static bool engine_try_append_inline(engine& e, diagnostics* d, session& s,
                                                       std::shared_ptr<event>& node, std::int64_t& seq,
                                                       boost::system::error_code& ec);

    template <class Sig, class Token, class Fn>
    auto run(diagnostics* d, Token&& token, Fn fn);

    // Destroyed in reverse order: the engine first (checkpoints, lease timers cancelled),
    // then the pool, whose destructor waits for operations still queued.
    std::shared_ptr<pool_owner> pool_;
    std::shared_ptr<detail::jsonl::engine> impl_;
    executor_type ex_;
};

} // namespace libretto

// The asynchronous operations (templates); in header-only builds the engine too, which ends
// with the rest of the class (impl/jsonl_store.ipp, which needs the engine complete).
#include <libretto/store/impl/jsonl_store.hpp>
#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/store/detail/jsonl_engine.hpp>
#endif

#endif
