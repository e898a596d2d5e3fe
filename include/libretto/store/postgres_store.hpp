// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_POSTGRES_STORE_HPP
#define LIBRETTO_STORE_POSTGRES_STORE_HPP

// postgres_store: sessions in a PostgreSQL database (9.5+; tested on 15), for several runner
// processes (or hosts) sharing sessions. Needs libpq and the libretto::postgres CMake
// component.
//
//   lb::postgres_store store{io.get_executor(), {.conninfo = "host=db dbname=agents"}};
//   co_await store.async_open();                       // optional: fail early on bad config
//   auto s = co_await store.async_create(opts);
//   co_await store.async_append_batch(s, std::move(turn_events));   // one transaction
//
// Nothing blocks: libpq's non-blocking API runs on the store's strand and Asio waits on the
// connections' sockets. Operations complete on the completion handler's associated executor
// (default: the store's). A small pool (pool_size connections, opened on demand) serves
// concurrent operations; an operation that finds every connection busy waits up to
// acquire_timeout, then fails with errc::busy. A broken connection is dropped and replaced
// by the next operation.
//
// The first connection of a store creates the schema (a PostgreSQL namespace, "libretto"
// by default) or migrates it to schema_version, under an advisory lock so that processes
// starting together migrate once. A database written by a newer libretto fails with
// boost::system::errc::not_supported.
//
// Semantics are the session_store rules (session_store.hpp). Each write is one round trip to a
// server-side function running one transaction: the session row is locked FOR UPDATE while
// the revision is checked (so errc::stale_session holds across processes), shared app:/user:
// keys are per-key rows upserted in key order (row locks, no deadlock between writers of
// the same keys), events are stored as the exact JSON text libretto wrote. A get or list
// is one statement, so it reads one consistent snapshot.
//
// Errors: errc::io_error for connection and server failures (the caller's diagnostics carry the
// server's message), errc::busy for lock waits the server gave up on (deadlock, lock
// timeout) and pool exhaustion.

#include <libretto/detail/deadline.hpp>
#include <libretto/event/json.hpp>
#include <libretto/store/postgres_store_options.hpp>
#include <libretto/store/detail/pg_operations.hpp>
#include <libretto/store/detail/post_result.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/detail/store_batch.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/system/errc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace libretto {

class postgres_store {
public:
    using executor_type = boost::asio::any_io_executor;

    /// The schema version this build creates and migrates to.
    static constexpr int schema_version = detail::pg::latest_schema_version;

    /// Does not connect (the first operation, or async_open, does). Throws
    /// boost::system::system_error (errc::invalid_argument) for an empty conninfo, a bad
    /// schema name or pool_size outside 1..100.
    postgres_store(executor_type ex, postgres_store_options o) : ex_(std::move(ex)) {
        if (o.conninfo.empty())
            throw boost::system::system_error(errc::invalid_argument, "postgres_store: empty conninfo");
        if (!detail::pg::valid_schema_name(o.schema))
            throw boost::system::system_error(errc::invalid_argument,
                                              "postgres_store: invalid schema name '" + o.schema +
                                                  "' (lower-case letters, digits, '_'; at most 63 bytes)");
        if (o.pool_size == 0 || o.pool_size > 100)
            throw boost::system::system_error(errc::invalid_argument, "postgres_store: pool_size must be 1..100");
        for (auto [name, d] : {std::pair{"connect_timeout", o.connect_timeout}, {"acquire_timeout", o.acquire_timeout}})
            if (auto why = detail::negative_duration_problem(name, d); !why.empty())
                throw boost::system::system_error(errc::invalid_argument, "postgres_store: " + why);
        pool_ = std::make_shared<detail::pg::pool>(ex_, o);
    }

    postgres_store(const postgres_store&) = delete;
    postgres_store& operator=(const postgres_store&) = delete;
    postgres_store(postgres_store&&) noexcept = default;
    postgres_store& operator=(postgres_store&&) noexcept = default;

    /// Operations in flight keep the pool alive; idle connections close with the last one.
    ~postgres_store() = default;

    executor_type get_executor() const { return ex_; }


    /// The schema version found in the database by the first connection, before any
    /// migration (0: the schema was created by this store); -1 until then.
    int found_schema_version() const noexcept { return pool_ && pool_->schema_ready ? pool_->found_version : -1; }

    /// Opens a connection and creates or migrates the schema. Optional: every operation
    /// does this on first use; calling it first reports configuration errors early.
    template <boost::asio::completion_token_for<void(boost::system::error_code)> Token = default_completion_token_t>
    auto async_open(diagnostics& diag, Token&& token = {}) {
        return open_start(&diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(boost::system::error_code)> Token = default_completion_token_t>
    auto async_open(Token&& token = {}) {
        return open_start(nullptr, std::forward<Token>(token));
    }

    // ---- the session_store concept: each operation with and without the caller's
    // diagnostics (which carry the server's message when it fails) ------------------------

    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, diagnostics& diag, Token&& token = {}) {
        return create_start(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, Token&& token = {}) {
        return create_start(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o, diagnostics& diag, Token&& token = {}) {
        return get_start(&diag, std::move(k), std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o = {}, Token&& token = {}) {
        return get_start(nullptr, std::move(k), std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, diagnostics& diag, Token&& token = {}) {
        return list_start(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, Token&& token = {}) {
        return list_start(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, diagnostics& diag, Token&& token = {}) {
        return delete_start(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, Token&& token = {}) {
        return delete_start(nullptr, std::move(k), std::forward<Token>(token));
    }

    /// Completes with the event's sequence (0 for a partial event, which is not stored).
    /// The caller's session is updated on the completion's executor; do not touch it until
    /// the operation completes.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, event e, diagnostics& diag, Token&& token = {}) {
        return append_start(&diag, sess, detail::one_event(std::move(e)), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, event e, Token&& token = {}) {
        return append_start(nullptr, sess, detail::one_event(std::move(e)), std::forward<Token>(token));
    }

    /// Appends a turn's events in one transaction, all or nothing. Completes with the
    /// sequence of the last stored event (0 if none was stored: all were partial).
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& sess, std::vector<event> events, diagnostics& diag, Token&& token = {}) {
        return append_start(&diag, sess, std::move(events), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& sess, std::vector<event> events, Token&& token = {}) {
        return append_start(nullptr, sess, std::move(events), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto open_start(diagnostics* d, Token&& token) {
        return detail::initiate_with_diagnostics<void(boost::system::error_code)>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d) { this->launch(std::move(handler), d, detail::pg::open_op(pool_, d)); });
    }
    template <class Token>
    auto create_start(diagnostics* d, create_options o, Token&& token) {
        return detail::initiate_with_diagnostics<create_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, create_options o) {
                this->launch(std::move(handler), d, detail::pg::create_op(pool_, d, std::move(o)));
            },
            std::move(o));
    }
    template <class Token>
    auto get_start(diagnostics* d, session_key k, get_options o, Token&& token) {
        return detail::initiate_with_diagnostics<get_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session_key k, get_options o) {
                this->launch(std::move(handler), d, detail::pg::get_op(pool_, d, std::move(k), std::move(o)));
            },
            std::move(k), std::move(o));
    }
    template <class Token>
    auto list_start(diagnostics* d, list_options o, Token&& token) {
        return detail::initiate_with_diagnostics<list_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, list_options o) {
                this->launch(std::move(handler), d, detail::pg::list_op(pool_, d, std::move(o)));
            },
            std::move(o));
    }
    template <class Token>
    auto delete_start(diagnostics* d, session_key k, Token&& token) {
        return detail::initiate_with_diagnostics<delete_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session_key k) {
                this->launch(std::move(handler), d, detail::pg::delete_op(pool_, d, std::move(k)));
            },
            std::move(k));
    }
    template <class Token>
    auto append_start(diagnostics* d, session& sess, std::vector<event> events, Token&& token) {
        return detail::initiate_with_diagnostics<append_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session* sess, std::vector<event> events) {
                this->start_append(std::move(handler), d, sess, std::move(events));
            },
            &sess, std::move(events));
    }

private:
    using error_code = boost::system::error_code;
    using pool_ptr = std::shared_ptr<detail::pg::pool>;
    template <class T>
    using awaitable = boost::asio::awaitable<T>;

    // Runs `op` on the pool's strand; its tuple (error_code, results...) completes the
    // handler through a post to the handler's associated executor (default: ex_), which is
    // kept busy (work-tracked) until then.
    template <class Handler, class Result>
    void launch(Handler handler, diagnostics* d, awaitable<Result> op) {
        if (d) d->clear();
        auto guard = boost::asio::make_work_guard(boost::asio::get_associated_executor(handler, ex_));
        boost::asio::co_spawn(pool_->strand, std::move(op),
                              [d, ex = ex_, guard = std::move(guard),
                               handler = std::move(handler)](std::exception_ptr ep, Result r) mutable {
                                  if (ep) {
                                      r = Result{};
                                      try {
                                          std::rethrow_exception(ep);
                                      } catch (const std::bad_alloc&) {
                                          std::get<0>(r) = make_error_code(boost::system::errc::not_enough_memory);
                                          detail::pg::failed(d, {}, "out of memory");
                                      } catch (const std::exception& e) {
                                          std::get<0>(r) = errc::io_error;
                                          detail::pg::failed(d, {}, std::string("unexpected exception: ") + e.what());
                                      }
                                  }
                                  std::apply(
                                      [&](auto&... a) { detail::post_result(std::move(handler), ex, std::move(a)...); },
                                      r);
                                  guard.reset();
                              });
    }

    template <class Handler>
    void start_append(Handler handler, diagnostics* d, session* sess, std::vector<event> events) {
        detail::append_target target{{sess->app_name, sess->user_id, sess->id}, sess->last_sequence};
        auto hex = boost::asio::get_associated_executor(handler, ex_);
        auto finish = boost::asio::bind_executor(
            hex, [h = std::move(handler), sess](error_code ec, detail::append_result r) mutable {
                if (!ec)
                    for (std::size_t i = 0; i < r.events.size(); ++i)
                        detail::commit_append(*sess, std::move(r.events[i]), r.routed[i]);
                std::move(h)(ec, r.last_sequence);
            });
        launch(std::move(finish), d, detail::pg::append_op(pool_, d, std::move(target), std::move(events)));
    }

    executor_type ex_;
    pool_ptr pool_;
};

static_assert(session_store<postgres_store>);
static_assert(batch_session_store<postgres_store>);

} // namespace libretto

#endif
