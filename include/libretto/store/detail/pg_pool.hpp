// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_PG_POOL_HPP
#define LIBRETTO_STORE_DETAIL_PG_POOL_HPP

// postgres_store's connection pool: the shared state its operations run on (one strand),
// schema migration on a new connection, taking a connection and running one statement.

#include <libretto/detail/deadline.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/session/session.hpp>
#include <libretto/store/detail/pg_conn.hpp>
#include <libretto/store/detail/pg_schema.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/postgres_store_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/system/errc.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

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
template <class = void> // a template: g++ 12 compiles a coroutine only where used (detail/config.hpp)
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

using pool_ptr = std::shared_ptr<pool>;
template <class T>
using awaitable = boost::asio::awaitable<T>;

// ---- connections ---------------------------------------------------------------------

// Takes an idle connection, or opens one while the pool has room, or waits for one.
// `reused`: the connection served earlier operations (it may have died since).
template <class V = void>
inline awaitable<error_code> acquire(pool_ptr p, std::unique_ptr<detail::pg::connection>& out, bool& reused,
                                     std::string& detail) {
    const auto deadline = deadline_after(p->acquire_timeout);
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
        auto token = dependent_as_tuple_awaitable<V>();
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
template <class = void>
inline awaitable<error_code> run(const pool_ptr& p, const std::string& sql, const detail::pg::params* params,
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

inline error_code failed(diagnostics* d, error_code ec, std::string_view what) {
    return detail::note_failure(d, ec, "postgres_store", what);
}

inline std::string name_of(const session_key& k) { return k.app_name + "/" + k.user_id + "/" + k.session_id; }

// A text[] parameter of an object's keys, and one of its values as JSON (null: NULL).
inline void add_keys_values(detail::pg::params& q, const json::object& o) {
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

inline error_code parse_json(std::string_view text, json::value& out) {
    error_code jec;
    out = detail::parse_precise(text, jec, {});
    return jec;
}

} // namespace detail::pg

} // namespace libretto

#endif
