// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_DETAIL_BEAST_CONNECTION_HPP
#define LIBRETTO_HTTP_DETAIL_BEAST_CONNECTION_HPP

// One kept-alive connection of beast_transport: a plain Asio socket (or a TLS stream over
// one), the read buffer Beast's parser uses, and the deadline of the step in progress. The
// deadline is one timer that closes the socket when it fires, so the pending operation fails
// at once; Beast's tcp_stream does the same with a layer of its own around every operation,
// which compiles to much more code.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace libretto::http::detail {

template <class Tls>
struct beast_connection : std::enable_shared_from_this<beast_connection<Tls>> {
    using clock = std::chrono::steady_clock;

    explicit beast_connection(const boost::asio::any_io_executor& ex) : timer(ex) {}

    std::optional<boost::asio::ip::tcp::socket> tcp; // engaged for http://
    std::optional<typename Tls::stream_type> tls;    // engaged for https://
    boost::beast::flat_buffer buffer;
    std::string key;
    clock::time_point idle_since{};
    boost::asio::steady_timer timer;
    std::uint64_t armed = 0; // which arm() the pending wait belongs to
    // Set when a deadline passed; the socket is closed then, and the connection never
    // used again.
    bool timed_out = false;

    boost::asio::ip::tcp::socket& lowest() {
        if constexpr (Tls::enabled) {
            if (tls) return tls->next_layer();
        }
        return *tcp;
    }

    void close() noexcept {
        boost::system::error_code ignored;
        lowest().close(ignored);
    }

    /// Starts the step's deadline (a time point, not a duration: the caller saturates it at
    /// the clock's end, where a "wait forever" duration would overflow). A wait of an earlier
    /// arm() that had already expired when this one started finds `armed` changed and does nothing.
    void arm(clock::time_point until) {
        timer.expires_at(until);
        timer.async_wait([self = this->weak_from_this(), n = ++armed](const boost::system::error_code& ec) {
            if (ec) return; // disarmed or re-armed
            auto c = self.lock();
            if (!c || c->armed != n) return;
            c->timed_out = true;
            c->close();
        });
    }

    void disarm() {
        ++armed;
        timer.cancel();
    }
};

} // namespace libretto::http::detail

#endif
