// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_PG_CONN_HPP
#define LIBRETTO_STORE_DETAIL_PG_CONN_HPP

// One libpq connection driven by Asio: libpq's non-blocking API (PQconnectStart/Poll,
// PQsendQuery*, PQflush, PQconsumeInput, PQisBusy) with the waits for socket readiness done
// by a posix::stream_descriptor on the connection's socket. Nothing here blocks.
//
// All members run on one strand (postgres_store's); a connection serves one query at a time.

#include <libretto/detail/dependent_token.hpp>
#include <libretto/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <libpq-fe.h>
#include <poll.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace libretto::detail::pg {

namespace asio = boost::asio;

struct result_deleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

/// Query parameters in libpq's text format; a null entry is SQL NULL.
class params {
public:
    params& add(std::string v) {
        values_.push_back(std::move(v));
        null_.push_back(false);
        return *this;
    }
    params& add(std::string_view v) { return add(std::string(v)); }
    params& add(const char* v) { return add(std::string(v)); }
    params& add(std::int64_t v) { return add(std::to_string(v)); }
    params& add(bool v) { return add(std::string(v ? "t" : "f")); }
    params& add(double v) {
        // Shortest round-trip form; PostgreSQL's float8 input rounds correctly, so the value
        // stored is the same double.
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        return add(std::string(buf, r.ptr));
    }
    params& add_null() {
        values_.emplace_back();
        null_.push_back(true);
        return *this;
    }
    /// A text[] in array-literal form; a null element (nullptr in `nulls`) is NULL.
    template <class Range, class Get>
    params& add_array(const Range& r, Get get) {
        std::string lit = "{";
        bool first = true;
        for (const auto& x : r) {
            if (!first) lit += ',';
            first = false;
            const std::string_view* v = nullptr;
            std::string_view sv;
            if (get(x, sv)) v = &sv;
            if (!v) {
                lit += "NULL";
                continue;
            }
            lit += '"';
            for (char c : *v) {
                if (c == '"' || c == '\\') lit += '\\';
                lit += c;
            }
            lit += '"';
        }
        lit += '}';
        return add(std::move(lit));
    }

    int size() const noexcept { return static_cast<int>(values_.size()); }

    /// The pointers libpq wants; valid while this object is unchanged.
    std::vector<const char*> pointers() const {
        std::vector<const char*> p;
        p.reserve(values_.size());
        for (std::size_t i = 0; i < values_.size(); ++i) p.push_back(null_[i] ? nullptr : values_[i].c_str());
        return p;
    }

private:
    std::vector<std::string> values_;
    std::vector<bool> null_;
};

/// Our own SQLSTATEs, raised by the schema's functions (class "LB" is free for users).
inline constexpr std::string_view state_not_found = "LB404";
inline constexpr std::string_view state_stale = "LB409";
inline constexpr std::string_view state_exists = "LB410";

/// The error_code for a failed statement's SQLSTATE.
inline boost::system::error_code error_for_state(std::string_view sqlstate) noexcept {
    if (sqlstate == state_not_found) return errc::not_found;
    if (sqlstate == state_stale) return errc::stale_session;
    if (sqlstate == state_exists || sqlstate == "23505") return errc::already_exists;
    // deadlock, serialization failure, lock not available, query cancelled (lock_timeout)
    if (sqlstate == "40P01" || sqlstate == "40001" || sqlstate == "55P03" || sqlstate == "57014") return errc::busy;
    if (sqlstate == "22P02" || sqlstate == "22023") return errc::invalid_argument;
    return errc::io_error;
}

/// Checks one statement's result. On failure `detail` gets the server's message (and its
/// SQLSTATE when it is not one of ours).
inline boost::system::error_code check(const PGresult* r, std::string& detail) {
    if (!r) {
        detail = "no result from the server";
        return errc::io_error;
    }
    switch (PQresultStatus(r)) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK: return {};
    default: break;
    }
    const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    std::string_view sqlstate = state ? state : "";
    detail = primary ? primary : PQresultErrorMessage(r);
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
    if (!sqlstate.empty() && sqlstate.substr(0, 2) != "LB") detail += " (SQLSTATE " + std::string(sqlstate) + ")";
    return error_for_state(sqlstate);
}

/// A value of a result cell as text ("" for NULL); PQgetvalue's pointer stays valid with r.
inline std::string_view cell(const PGresult* r, int row, int col) noexcept {
    return {PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col))};
}
inline bool is_null(const PGresult* r, int row, int col) noexcept { return PQgetisnull(r, row, col) != 0; }

template <class T>
bool parse_number(std::string_view s, T& out) noexcept {
    auto res = std::from_chars(s.data(), s.data() + s.size(), out);
    return res.ec == std::errc{} && res.ptr == s.data() + s.size();
}

class connection {
public:
    explicit connection(asio::any_io_executor ex) : sock_(ex), timer_(ex) {}
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() { close(); }

    /// Usable for another query: connected and nothing went wrong on the wire.
    bool usable() const noexcept { return conn_ && !broken_ && PQstatus(conn_) == CONNECTION_OK; }

    /// Connects without blocking. `timeout` bounds the whole handshake (DNS excepted:
    /// libpq resolves host names synchronously; use hostaddr= or an IP to avoid that).
    template <class = void> // a template: g++ 12 compiles a coroutine only where used (detail/config.hpp)
    asio::awaitable<boost::system::error_code> async_connect(std::string conninfo, std::chrono::milliseconds timeout,
                                                             std::string& detail) {
        close();
        conn_ = PQconnectStart(conninfo.c_str());
        if (!conn_) {
            detail = "out of memory starting a connection";
            co_return errc::io_error;
        }
        if (PQstatus(conn_) == CONNECTION_BAD) co_return fail_connect(detail);
        // Server notices (e.g. "schema already exists, skipping") would go to stderr.
        PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
        timed_out_ = false;
        // The deadline handler holds a weak reference: it must not touch a destroyed connection.
        timer_.expires_after(timeout);
        timer_.async_wait([this, weak = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
            if (ec || weak.expired()) return;
            timed_out_ = true;
            boost::system::error_code ignored;
            sock_.cancel(ignored);
        });
        PostgresPollingStatusType st = PGRES_POLLING_WRITING;
        for (;;) {
            if (st == PGRES_POLLING_OK) break;
            if (st == PGRES_POLLING_FAILED) {
                timer_.cancel();
                co_return fail_connect(detail);
            }
            // libpq may open a new socket while it tries the hosts of the conninfo in turn.
            if (auto ec = track_socket(detail)) {
                timer_.cancel();
                co_return ec;
            }
            const bool write = st == PGRES_POLLING_WRITING;
            auto ec = co_await wait_ready(write);
            if (timed_out_) {
                detail = "connection not established within " + std::to_string(timeout.count()) + " ms";
                close();
                co_return errc::io_error;
            }
            if (ec) {
                timer_.cancel();
                detail = "waiting for the server: " + ec.message();
                close();
                co_return errc::io_error;
            }
            st = PQconnectPoll(conn_);
        }
        timer_.cancel();
        if (PQsetnonblocking(conn_, 1) != 0) co_return fail_connect(detail);
        if (auto ec = track_socket(detail)) co_return ec;
        co_return boost::system::error_code{};
    }

    /// Runs `sql` (with text parameters through the extended protocol when `p` is given,
    /// else as a simple query that may hold several statements) and collects every result.
    template <class = void>
    asio::awaitable<boost::system::error_code> async_exec(const std::string& sql, const params* p,
                                                          std::vector<result_ptr>& results, std::string& detail) {
        results.clear();
        if (!usable()) {
            detail = "the connection is closed";
            co_return errc::io_error;
        }
        int sent;
        if (p) {
            const auto values = p->pointers();
            sent = PQsendQueryParams(conn_, sql.c_str(), p->size(), nullptr, values.data(), nullptr, nullptr, 0);
        } else {
            sent = PQsendQuery(conn_, sql.c_str());
        }
        if (!sent) co_return wire_error("cannot send the query", detail);
        // Flush the query; while the socket is full, reading what the server sends meanwhile
        // keeps both sides moving (libpq's documented non-blocking pattern).
        for (;;) {
            const int f = PQflush(conn_);
            if (f == 0) break;
            if (f < 0) co_return wire_error("cannot send the query", detail);
            auto ec = co_await wait_ready(true);
            if (ec) co_return wire_error("waiting to send: " + ec.message(), detail);
            if (!PQconsumeInput(conn_)) co_return wire_error("cannot read from the server", detail);
        }
        for (;;) {
            while (!PQisBusy(conn_)) {
                PGresult* r = PQgetResult(conn_);
                if (!r) {
                    if (PQstatus(conn_) != CONNECTION_OK) co_return wire_error("the connection was lost", detail);
                    co_return boost::system::error_code{};
                }
                results.emplace_back(r);
            }
            auto ec = co_await wait_ready(false);
            if (ec) co_return wire_error("waiting for the reply: " + ec.message(), detail);
            if (!PQconsumeInput(conn_)) co_return wire_error("cannot read from the server", detail);
        }
    }

    /// For a connection taken from the idle pool: an idle connection has nothing to read,
    /// so readable means the server closed it (restart, pg_terminate_backend, idle timeout)
    /// or sent an error; libpq then notices the loss. False: drop it.
    bool idle_check() noexcept {
        if (!usable()) return false;
        pollfd p{fd_, POLLIN, 0};
        const int r = ::poll(&p, 1, 0);
        if (r == 0) return true;
        if (r < 0 || !PQconsumeInput(conn_)) {
            broken_ = true;
            return false;
        }
        while (PGnotify* n = PQnotifies(conn_)) PQfreemem(n);
        return usable();
    }

    PGconn* native() const noexcept { return conn_; }

    void close() noexcept {
        if (sock_.is_open()) sock_.release(); // libpq owns the descriptor and closes it
        fd_ = -1;
        if (conn_) PQfinish(conn_);
        conn_ = nullptr;
        broken_ = false;
    }

private:
    boost::system::error_code fail_connect(std::string& detail) {
        detail = conn_ ? PQerrorMessage(conn_) : "cannot connect";
        while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
        if (detail.empty()) detail = "cannot connect";
        close();
        return errc::io_error;
    }

    boost::system::error_code wire_error(std::string what, std::string& detail) {
        broken_ = true;
        detail = std::move(what);
        if (conn_) {
            std::string m = PQerrorMessage(conn_);
            while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
            if (!m.empty()) detail += ": " + m;
        }
        return errc::io_error;
    }

    boost::system::error_code track_socket(std::string& detail) {
        const int fd = PQsocket(conn_);
        if (fd < 0) {
            detail = "libpq has no socket";
            close();
            return errc::io_error;
        }
        if (fd == fd_) return {};
        if (sock_.is_open()) sock_.release();
        boost::system::error_code ec;
        sock_.assign(fd, ec);
        if (ec) {
            detail = "cannot watch the connection's socket: " + ec.message();
            fd_ = -1;
            close();
            return errc::io_error;
        }
        fd_ = fd;
        return {};
    }

    // Waits until the socket is readable (or writable). Asio's reactor is edge-triggered
    // and does not remember readiness for plain waits, so readiness that arrived before the
    // wait was queued (another thread's epoll_wait can consume that edge) would be missed:
    // after queuing, a zero-timeout poll() checks the level and, if ready, cancels the wait,
    // which then completes with operation_aborted, read here as "ready".
    template <class V = void>
    asio::awaitable<boost::system::error_code> wait_ready(bool write) {
        auto op = [this, write](auto handler) {
            sock_.async_wait(write ? asio::posix::descriptor_base::wait_write : asio::posix::descriptor_base::wait_read,
                             std::move(handler));
            pollfd p{fd_, static_cast<short>(write ? POLLOUT : POLLIN), 0};
            if (::poll(&p, 1, 0) > 0) {
                boost::system::error_code ignored;
                sock_.cancel(ignored);
            }
        };
        auto token = dependent_as_tuple_awaitable<V>();
        auto r = co_await asio::async_initiate<decltype(token), void(boost::system::error_code)>(op, token);
        const auto ec = std::get<0>(r);
        if (ec == asio::error::operation_aborted && !timed_out_ && sock_.is_open()) co_return boost::system::error_code{};
        co_return ec;
    }

    PGconn* conn_ = nullptr;
    asio::posix::stream_descriptor sock_;
    asio::steady_timer timer_;
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
    int fd_ = -1;
    bool broken_ = false;
    bool timed_out_ = false;
};

} // namespace libretto::detail::pg

#endif
