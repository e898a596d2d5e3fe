// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_OPENSSL_TLS_HPP
#define LIBRETTO_HTTP_OPENSSL_TLS_HPP

// TLS for beast_transport through OpenSSL (link libretto::openssl):
//
//   libretto::http::https_transport t{ex};                                   // system CA store
//   libretto::http::https_transport t{ex, {}, {.ca_file = "/etc/my-ca.pem"}}; // a private CA
//
// Certificate verification is on by default: the chain must verify against the CA store
// and the certificate must name the host (RFC 2818/6125 via OpenSSL's X509_check_host).
// The host name is sent as SNI (not for IP literals, as RFC 6066 says).

#include <libretto/error.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/tls_options.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/ssl/verify_mode.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/system/system_error.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>
#include <utility>

namespace libretto::http {

struct openssl_tls {
    static constexpr bool enabled = true;

    using options = tls_options;

    using stream_type = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

    class context {
    public:
        explicit context(const options& o) : ctx_(boost::asio::ssl::context::tls_client), verify_(o.verify_peer) {
            namespace ssl = boost::asio::ssl;
            ctx_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                             ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
            boost::system::error_code ec;
            if (o.ca_file.empty() && o.ca_path.empty()) {
                ctx_.set_default_verify_paths(ec);
                if (ec) fail("cannot load the system CA store", ec);
            }
            if (!o.ca_file.empty()) {
                ctx_.load_verify_file(o.ca_file, ec);
                if (ec) fail("cannot load ca_file '" + o.ca_file + "'", ec);
            }
            if (!o.ca_path.empty()) {
                ctx_.add_verify_path(o.ca_path, ec);
                if (ec) fail("cannot use ca_path '" + o.ca_path + "'", ec);
            }
            ctx_.set_verify_mode(verify_ ? ssl::verify_peer : ssl::verify_none);
        }

        boost::asio::ssl::context& native() noexcept { return ctx_; }
        bool verify_peer() const noexcept { return verify_; }

    private:
        [[noreturn]] static void fail(const std::string& what, const boost::system::error_code& ec) {
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              "openssl_tls: " + what + ": " + ec.message());
        }

        boost::asio::ssl::context ctx_;
        bool verify_;
    };

    /// Sets SNI and the host name check on a new stream.
    static boost::system::error_code prepare(stream_type& s, const std::string& host, const context& ctx) {
        boost::system::error_code ec;
        boost::asio::ip::make_address(host, ec);
        const bool literal = !ec;
        if (!literal && SSL_set_tlsext_host_name(s.native_handle(), host.c_str()) != 1)
            return {static_cast<int>(::ERR_get_error()), boost::asio::error::get_ssl_category()};
        ec = {};
        if (ctx.verify_peer()) s.set_verify_callback(boost::asio::ssl::host_name_verification(host), ec);
        return ec;
    }

    /// A TLS stream that ended without close_notify: the peer cut the connection.
    static bool is_truncation(const boost::system::error_code& ec) noexcept {
        return ec == boost::asio::ssl::error::stream_truncated;
    }

    template <class CompletionToken>
    static auto async_handshake(stream_type& s, CompletionToken&& token) {
        return s.async_handshake(boost::asio::ssl::stream_base::client, std::forward<CompletionToken>(token));
    }
};

static_assert(http_transport<beast_transport<openssl_tls>>);

} // namespace libretto::http

// https_transport, the one-type transport built on beast_transport<openssl_tls>; after
// openssl_tls, which its definitions use.
#include <libretto/http/https_transport.hpp>

#endif
