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
// Semantics are the session_store rules (store.hpp). Each write is one round trip to a
// server-side function running one transaction: the session row is locked FOR UPDATE while
// the revision is checked (so errc::stale_session holds across processes), shared app:/user:
// keys are per-key rows upserted in key order (row locks, no deadlock between writers of
// the same keys), events are stored as the exact JSON text libretto wrote. A get or list
// is one statement, so it reads one consistent snapshot.
//
// Errors: errc::io_error for connection and server failures (the caller's diagnostics carry the
// server's message), errc::busy for lock waits the server gave up on (deadlock, lock
// timeout) and pool exhaustion.

#include <libretto/event/json.hpp>
#include <libretto/store/detail/pg_conn.hpp>
#include <libretto/store/detail/pg_schema.hpp>
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

struct postgres_store_options {
    /// A libpq connection string ("host=... dbname=...") or URI ("postgresql://..."); the
    /// usual PG* environment variables fill in what it leaves out.
    std::string conninfo{};
    /// The PostgreSQL schema (namespace) holding libretto's tables, created if missing:
    /// lower-case letters, digits and '_', not starting with a digit, at most 63 bytes.
    /// Different schemas keep different deployments apart in one database.
    std::string schema = "libretto";
    /// Most connections open at once (1..100); they are opened when needed.
    std::size_t pool_size = 4;
    std::chrono::milliseconds connect_timeout{10000};
    /// How long an operation waits for a free connection before errc::busy.
    std::chrono::milliseconds acquire_timeout{30000};
    /// Largest accepted event, as serialized JSON bytes; 0: no limit. An oversize event
    /// fails its append (or its whole batch) with errc::oversize and stores nothing.
    std::size_t max_event_bytes = 16 * 1024 * 1024;
};

namespace detail::pg {

/// What a postgres_store shares with its operations in flight: the pool, on one strand.
struct pool {
    pool(boost::asio::any_io_executor ex, const postgres_store_options& o)
        : strand(boost::asio::make_strand(ex)), sql(o.schema), conninfo(o.conninfo), size(o.pool_size),
          connect_timeout(o.connect_timeout), acquire_timeout(o.acquire_timeout), max_event_bytes(o.max_event_bytes) {}

    boost::asio::strand<boost::asio::any_io_executor> strand;
    statements sql;
    std::string conninfo;
    std::size_t size;
    std::chrono::milliseconds connect_timeout, acquire_timeout;
    std::size_t max_event_bytes;

    // Touched on the strand only.
    std::vector<std::unique_ptr<connection>> idle;
    std::size_t open = 0;       // connections that exist (idle, in use or connecting)
    bool schema_ready = false;  // checked or migrated by one of this store's connections
    int found_version = 0;      // the version the first check found
    std::deque<boost::asio::steady_timer*> waiters;


    void wake_one() {
        if (waiters.empty()) return;
        auto* t = waiters.front();
        waiters.pop_front();
        t->cancel();
    }

    void release(std::unique_ptr<connection> c) {
        if (c && c->usable()) idle.push_back(std::move(c));
        else --open;
        wake_one();
    }
};

using boost::system::error_code;
namespace asio = boost::asio;

/// Creates or migrates the schema on `c`, under the per-schema advisory lock.
inline asio::awaitable<error_code> migrate(connection& c, pool& p, std::string& detail) {
    std::vector<result_ptr> res;
    auto ec = co_await c.async_exec(p.sql.begin_migration, nullptr, res, detail);
    for (const auto& r : res)
        if (!ec) ec = check(r.get(), detail);
    int version = -1;
    if (!ec) {
        const PGresult* last = res.empty() ? nullptr : res.back().get();
        if (!last || PQntuples(last) != 1 || !parse_number(cell(last, 0, 0), version)) {
            detail = "cannot read the schema version";
            ec = errc::corrupt_data;
        }
    }
    if (!ec && version > latest_schema_version) {
        detail = "schema '" + p.sql.schema + "' is at version " + std::to_string(version) +
                 ", written by a newer libretto (this one knows up to " + std::to_string(latest_schema_version) + ")";
        ec = make_error_code(boost::system::errc::not_supported);
    }
    if (!ec) {
        const std::string finish = p.sql.migration_text(version);
        ec = co_await c.async_exec(finish, nullptr, res, detail);
        for (const auto& r : res)
            if (!ec) ec = check(r.get(), detail);
        if (ec) detail = "migrating from schema version " + std::to_string(version) + ": " + detail;
    }
    if (ec) {
        if (c.usable()) {
            std::string ignored;
            const std::string rollback = "ROLLBACK";
            co_await c.async_exec(rollback, nullptr, res, ignored);
        }
        co_return ec;
    }
    p.found_version = version;
    p.schema_ready = true;
    co_return error_code{};
}

} // namespace detail::pg

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
            [this](auto handler, diagnostics* d) { this->launch(std::move(handler), d, open_op(pool_, d)); });
    }
    template <class Token>
    auto create_start(diagnostics* d, create_options o, Token&& token) {
        return detail::initiate_with_diagnostics<create_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, create_options o) {
                this->launch(std::move(handler), d, create_op(pool_, d, std::move(o)));
            },
            std::move(o));
    }
    template <class Token>
    auto get_start(diagnostics* d, session_key k, get_options o, Token&& token) {
        return detail::initiate_with_diagnostics<get_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session_key k, get_options o) {
                this->launch(std::move(handler), d, get_op(pool_, d, std::move(k), std::move(o)));
            },
            std::move(k), std::move(o));
    }
    template <class Token>
    auto list_start(diagnostics* d, list_options o, Token&& token) {
        return detail::initiate_with_diagnostics<list_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, list_options o) {
                this->launch(std::move(handler), d, list_op(pool_, d, std::move(o)));
            },
            std::move(o));
    }
    template <class Token>
    auto delete_start(diagnostics* d, session_key k, Token&& token) {
        return detail::initiate_with_diagnostics<delete_signature>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, session_key k) {
                this->launch(std::move(handler), d, delete_op(pool_, d, std::move(k)));
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
                                          failed(d, {}, "out of memory");
                                      } catch (const std::exception& e) {
                                          std::get<0>(r) = errc::io_error;
                                          failed(d, {}, std::string("unexpected exception: ") + e.what());
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
        launch(std::move(finish), d, append_op(pool_, d, std::move(target), std::move(events)));
    }

    // ---- connections ---------------------------------------------------------------------

    // Takes an idle connection, or opens one while the pool has room, or waits for one.
    // `reused`: the connection served earlier operations (it may have died since).
    static awaitable<error_code> acquire(pool_ptr p, std::unique_ptr<detail::pg::connection>& out, bool& reused,
                                         std::string& detail) {
        const auto deadline = std::chrono::steady_clock::now() + p->acquire_timeout;
        reused = false;
        for (;;) {
            while (!p->idle.empty()) {
                auto c = std::move(p->idle.back());
                p->idle.pop_back();
                if (c->idle_check()) {
                    out = std::move(c);
                    reused = true;
                    co_return error_code{};
                }
                --p->open;
            }
            if (p->open < p->size) {
                ++p->open;
                auto c = std::make_unique<detail::pg::connection>(p->strand);
                auto ec = co_await c->async_connect(p->conninfo, p->connect_timeout, detail);
                if (ec) detail = "cannot connect: " + detail;
                if (!ec && !p->schema_ready) ec = co_await detail::pg::migrate(*c, *p, detail);
                if (ec) {
                    --p->open;
                    p->wake_one();
                    co_return ec;
                }
                out = std::move(c);
                co_return error_code{};
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                detail = "none of the pool's " + std::to_string(p->size) + " connections became free within " +
                         std::to_string(p->acquire_timeout.count()) + " ms";
                co_return errc::busy;
            }
            boost::asio::steady_timer t(p->strand, deadline);
            p->waiters.push_back(&t);
            auto token = boost::asio::as_tuple(boost::asio::use_awaitable);
            auto woken = co_await t.async_wait(token);
            (void)woken; // a release cancels the wait; a timeout ends it: both loop
            std::erase(p->waiters, &t);
        }
    }

    // Runs one statement on a pooled connection; `results` holds its result on success.
    // A read (`idempotent`) that fails because a reused connection turns out to be dead is
    // retried once on a new connection. A write is not: the server may have committed it
    // before the connection died, and only the caller can tell (get the session and
    // compare its last_sequence).
    static awaitable<error_code> run(const pool_ptr& p, const std::string& sql, const detail::pg::params* params,
                                     std::vector<detail::pg::result_ptr>& results, std::string& detail,
                                     bool idempotent) {
        for (int attempt = 0;; ++attempt) {
            std::unique_ptr<detail::pg::connection> c;
            bool reused = false;
            auto ec = co_await acquire(p, c, reused, detail);
            if (ec) co_return ec;
            ec = co_await c->async_exec(sql, params, results, detail);
            const bool lost = ec && !c->usable();
            p->release(std::move(c));
            if (ec && lost && reused && idempotent && attempt == 0) continue;
            if (ec) co_return ec;
            for (const auto& r : results)
                if ((ec = detail::pg::check(r.get(), detail))) co_return ec;
            if (results.empty()) {
                detail = "the server sent no result";
                co_return errc::io_error;
            }
            co_return error_code{};
        }
    }

    static error_code failed(diagnostics* d, error_code ec, std::string_view what) {
        return detail::note_failure(d, ec, "postgres_store", what);
    }

    static std::string name_of(const session_key& k) { return k.app_name + "/" + k.user_id + "/" + k.session_id; }

    // A text[] parameter of an object's keys, and one of its values as JSON (null: NULL).
    static void add_keys_values(detail::pg::params& q, const json::object& o) {
        std::vector<std::string> values;
        values.reserve(o.size());
        for (const auto& kv : o) values.push_back(kv.value().is_null() ? std::string() : json::serialize(kv.value()));
        q.add_array(o, [](const json::key_value_pair& kv, std::string_view& out) {
            out = kv.key();
            return true;
        });
        std::size_t i = 0;
        q.add_array(o, [&](const json::key_value_pair& kv, std::string_view& out) {
            out = values[i++];
            return !kv.value().is_null();
        });
    }

    static error_code parse_json(std::string_view text, json::value& out) {
        error_code jec;
        out = detail::parse_precise(text, jec, {});
        return jec;
    }

    // ---- operations ------------------------------------------------------------------------

    static awaitable<std::tuple<error_code>> open_op(pool_ptr p, diagnostics* d) {
        std::string detail;
        std::unique_ptr<detail::pg::connection> c;
        bool reused = false;
        auto ec = co_await acquire(p, c, reused, detail);
        if (ec) co_return failed(d, ec, detail);
        p->release(std::move(c));
        co_return error_code{};
    }

    static awaitable<std::tuple<error_code, session>> create_op(pool_ptr p, diagnostics* d, create_options o) {
        if (auto ec = validate_id(o.app_name)) co_return std::tuple{failed(d, ec, "app name " + id_problem(o.app_name)), session{}};
        if (auto ec = validate_id(o.user_id)) co_return std::tuple{failed(d, ec, "user id " + id_problem(o.user_id)), session{}};
        if (o.session_id.empty()) o.session_id = event::new_id();
        if (auto ec = validate_id(o.session_id)) co_return std::tuple{failed(d, ec, "session id " + id_problem(o.session_id)), session{}};
        if (auto why = detail::state_problem(o.state); !why.empty())
            co_return std::tuple{failed(d, errc::invalid_argument, why), session{}};
        auto routed = detail::route_delta(o.state);
        json::object own;
        for (const auto& kv : routed.session)
            if (!kv.value().is_null()) own[kv.key()] = kv.value();
        const double now = event::now();
        detail::pg::params q;
        q.add(o.app_name).add(o.user_id).add(o.session_id).add(now);
        add_keys_values(q, own);
        add_keys_values(q, routed.app);
        add_keys_values(q, routed.user);

        std::vector<detail::pg::result_ptr> res;
        std::string detail;
        auto ec = co_await run(p, p->sql.create, &q, res, detail, false);
        if (ec) co_return std::tuple{failed(d, ec, "create " + o.app_name + "/" + o.user_id + "/" + o.session_id + ": " + detail), session{}};
        json::object app, user;
        const PGresult* r = res.back().get();
        for (int i = 0, n = PQntuples(r); i < n; ++i) {
            json::value v;
            if (parse_json(detail::pg::cell(r, i, 2), v))
                co_return std::tuple{failed(d, errc::corrupt_data, "shared state key '" + std::string(detail::pg::cell(r, i, 1)) +
                                                                       "' holds invalid JSON"),
                                     session{}};
            (detail::pg::cell(r, i, 0) == "2" ? app : user)[detail::pg::cell(r, i, 1)] = std::move(v);
        }
        session out;
        out.id = std::move(o.session_id);
        out.app_name = std::move(o.app_name);
        out.user_id = std::move(o.user_id);
        out.state = detail::merged_state(own, &app, &user);
        out.last_update_time = now;
        out.last_sequence = 0;
        co_return std::tuple{error_code{}, std::move(out)};
    }

    static awaitable<std::tuple<error_code, std::optional<session>>> get_op(pool_ptr p, diagnostics* d, session_key k, get_options o) {
        using result_t = std::tuple<error_code, std::optional<session>>;
        if (auto ec = detail::validate_key(k)) co_return result_t{failed(d, ec, detail::key_problem(k)), std::nullopt};
        const bool want_events = !(o.num_recent_events && *o.num_recent_events == 0);
        detail::pg::params q;
        q.add(k.app_name).add(k.user_id).add(k.session_id);
        q.add(o.from_sequence.value_or(std::numeric_limits<std::int64_t>::min()));
        if (o.from_timestamp) q.add(*o.from_timestamp);
        else q.add_null();
        if (o.num_recent_events)
            q.add(static_cast<std::int64_t>(
                std::min<std::size_t>(*o.num_recent_events, std::numeric_limits<std::int64_t>::max())));
        else q.add_null();
        q.add(o.context_only).add(want_events).add(o.with_newest_range);

        std::vector<detail::pg::result_ptr> res;
        std::string detail;
        auto ec = co_await run(p, p->sql.get, &q, res, detail, true);
        if (ec) co_return result_t{failed(d, ec, "get " + name_of(k) + ": " + detail), std::nullopt};
        const PGresult* r = res.back().get();
        session s;
        bool found = false;
        json::object own, app, user;
        for (int i = 0, n = PQntuples(r); i < n; ++i) {
            const auto kind = detail::pg::cell(r, i, 0);
            if (kind == "0") {
                found = detail::pg::parse_number(detail::pg::cell(r, i, 3), s.last_update_time) &&
                        detail::pg::parse_number(detail::pg::cell(r, i, 4), s.last_sequence);
                if (!found)
                    co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": unreadable session row"),
                                       std::nullopt};
            } else if (kind == "4") {
                std::int64_t seq = 0;
                detail::pg::parse_number(detail::pg::cell(r, i, 4), seq);
                auto e = parse_event(detail::pg::cell(r, i, 2));
                if (!e)
                    co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                                         std::to_string(seq) +
                                                                         " is corrupt: " + e.error().message()),
                                       std::nullopt};
                if (e->sequence != seq)
                    co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                                         std::to_string(seq) + " says it has sequence " +
                                                                         std::to_string(e->sequence)),
                                       std::nullopt};
                s.events.push_back(std::move(*e));
            } else {
                json::value v;
                if (parse_json(detail::pg::cell(r, i, 2), v))
                    co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": state key '" +
                                                                         std::string(detail::pg::cell(r, i, 1)) +
                                                                         "' holds invalid JSON"),
                                       std::nullopt};
                (kind == "1" ? own : kind == "2" ? app : user)[detail::pg::cell(r, i, 1)] = std::move(v);
            }
        }
        if (!found) co_return result_t{error_code{}, std::nullopt};
        s.events.sort([](const event& a, const event& b) { return a.sequence < b.sequence; });
        s.id = std::move(k.session_id);
        s.app_name = std::move(k.app_name);
        s.user_id = std::move(k.user_id);
        s.state = detail::merged_state(own, &app, &user);
        co_return result_t{error_code{}, std::move(s)};
    }

    static awaitable<std::tuple<error_code, list_page>> list_op(pool_ptr p, diagnostics* d, list_options o) {
        using result_t = std::tuple<error_code, list_page>;
        if (auto ec = validate_id(o.app_name)) co_return result_t{failed(d, ec, "app name " + id_problem(o.app_name)), list_page{}};
        if (o.user_id)
            if (auto ec = validate_id(*o.user_id)) co_return result_t{failed(d, ec, "user id " + id_problem(*o.user_id)), list_page{}};
        if (o.page_size == 0 || o.page_size > 1000)
            co_return result_t{failed(d, errc::invalid_argument, "page_size must be 1..1000"), list_page{}};
        detail::page_cursor cursor{std::numeric_limits<double>::infinity(), {}};
        if (!o.page_token.empty()) {
            auto c = detail::parse_page_token(o.page_token);
            if (!c) co_return result_t{failed(d, c.error(), "invalid page token"), list_page{}};
            cursor = std::move(*c);
        }
        detail::pg::params q;
        q.add(o.app_name).add(cursor.last_update).add(cursor.id).add(static_cast<std::int64_t>(o.page_size) + 1);
        if (o.user_id) q.add(*o.user_id);
        else q.add_null();
        q.add(cursor.user);

        std::vector<detail::pg::result_ptr> res;
        std::string detail;
        auto ec = co_await run(p, p->sql.list, &q, res, detail, true);
        if (ec) co_return result_t{failed(d, ec, "list '" + o.app_name + "': " + detail), list_page{}};
        const PGresult* r = res.back().get();
        struct row {
            std::string user, id;
            double last_update = 0;
            std::int64_t last_sequence = 0;
            json::object own;
        };
        std::vector<row> rows;
        std::map<std::pair<std::string, std::string>, json::object> own;
        json::object app;
        std::map<std::string, json::object, std::less<>> users;
        for (int i = 0, n = PQntuples(r); i < n; ++i) {
            const auto kind = detail::pg::cell(r, i, 0);
            if (kind == "0") {
                row w;
                w.user = detail::pg::cell(r, i, 1);
                w.id = detail::pg::cell(r, i, 2);
                if (!detail::pg::parse_number(detail::pg::cell(r, i, 5), w.last_update) ||
                    !detail::pg::parse_number(detail::pg::cell(r, i, 6), w.last_sequence))
                    co_return result_t{failed(d, errc::corrupt_data, "list '" + o.app_name + "': unreadable session row"),
                                       list_page{}};
                rows.push_back(std::move(w));
                continue;
            }
            json::value v;
            if (parse_json(detail::pg::cell(r, i, 4), v))
                co_return result_t{failed(d, errc::corrupt_data, "list '" + o.app_name + "': state key '" +
                                                                     std::string(detail::pg::cell(r, i, 3)) +
                                                                     "' holds invalid JSON"),
                                   list_page{}};
            const std::string key(detail::pg::cell(r, i, 3));
            if (kind == "1")
                own[{std::string(detail::pg::cell(r, i, 1)), std::string(detail::pg::cell(r, i, 2))}][key] = std::move(v);
            else if (kind == "2") app[key] = std::move(v);
            else users[std::string(detail::pg::cell(r, i, 1))][key] = std::move(v);
        }
        std::sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
            return detail::list_before(a.last_update, a.user, a.id, b.last_update, b.user, b.id);
        });
        list_page page;
        const std::size_t n = std::min(rows.size(), o.page_size);
        for (std::size_t i = 0; i < n; ++i) {
            auto& w = rows[i];
            session s;
            auto it = own.find({w.user, w.id});
            auto u = users.find(w.user);
            static const json::object none;
            s.state = detail::merged_state(it != own.end() ? it->second : none, &app, u != users.end() ? &u->second : &none);
            s.id = w.id;
            s.app_name = o.app_name;
            s.user_id = w.user;
            s.last_update_time = w.last_update;
            s.last_sequence = w.last_sequence;
            page.sessions.push_back(std::move(s));
        }
        if (rows.size() > n)
            page.next_page_token = detail::make_page_token(rows[n - 1].last_update, rows[n - 1].user, rows[n - 1].id);
        co_return result_t{error_code{}, std::move(page)};
    }

    static awaitable<std::tuple<error_code>> delete_op(pool_ptr p, diagnostics* d, session_key k) {
        if (auto ec = detail::validate_key(k)) co_return failed(d, ec, detail::key_problem(k));
        detail::pg::params q;
        q.add(k.app_name).add(k.user_id).add(k.session_id);
        std::vector<detail::pg::result_ptr> res;
        std::string detail;
        auto ec = co_await run(p, p->sql.remove, &q, res, detail, true);
        if (ec) co_return failed(d, ec, "delete " + name_of(k) + ": " + detail);
        co_return error_code{};
    }

    static awaitable<std::tuple<error_code, detail::append_result>> append_op(pool_ptr p, diagnostics* d, detail::append_target t,
                                                                              std::vector<event> events) {
        using result_t = std::tuple<error_code, detail::append_result>;
        detail::prepared_batch batch;
        std::string detail;
        if (auto ec = detail::prepare_batch(t, std::move(events), p->max_event_bytes, batch, detail))
            co_return result_t{failed(d, ec, "append to " + name_of(t.key) + ": " + detail), detail::append_result{}};
        if (batch.rows.empty()) co_return result_t{error_code{}, detail::append_result{}};

        detail::pg::params q;
        q.add(t.key.app_name).add(t.key.user_id).add(t.key.session_id).add(t.last_sequence);
        q.add(batch.last_update).add(batch.compaction_first);
        const auto& evs = batch.result.events;
        {
            std::string seqs = "{", ts = "{";
            char buf[32];
            for (std::size_t i = 0; i < evs.size(); ++i) {
                if (i) {
                    seqs += ',';
                    ts += ',';
                }
                seqs += std::to_string(evs[i].sequence);
                auto r = std::to_chars(buf, buf + sizeof buf, evs[i].timestamp);
                ts.append(buf, r.ptr);
            }
            q.add(seqs + "}").add(ts + "}");
        }
        q.add_array(batch.rows, [](const std::string& row, std::string_view& out) {
            out = row;
            return true;
        });
        add_keys_values(q, batch.session);
        add_keys_values(q, batch.app);
        add_keys_values(q, batch.user);
        {
            std::string seqs = "{", firsts = "{", lasts = "{";
            for (const auto& c : batch.compactions) {
                if (seqs.size() > 1) {
                    seqs += ',';
                    firsts += ',';
                    lasts += ',';
                }
                seqs += std::to_string(c.sequence);
                firsts += std::to_string(c.first);
                lasts += std::to_string(c.last);
            }
            q.add(seqs + "}").add(firsts + "}").add(lasts + "}");
        }

        std::vector<detail::pg::result_ptr> res;
        auto ec = co_await run(p, p->sql.append, &q, res, detail, false);
        if (ec) co_return result_t{failed(d, ec, "append to " + name_of(t.key) + ": " + detail), detail::append_result{}};
        detail::append_result out = std::move(batch.result);
        out.last_sequence = batch.last_sequence;
        co_return result_t{error_code{}, std::move(out)};
    }

    executor_type ex_;
    pool_ptr pool_;
};

static_assert(session_store<postgres_store>);
static_assert(batch_session_store<postgres_store>);

} // namespace libretto

#endif
