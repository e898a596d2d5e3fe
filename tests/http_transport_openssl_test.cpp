// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// beast_transport<openssl_tls> against a loopback TLS server whose certificate is made at
// test time with OpenSSL's API (a self-signed certificate for DNS:localhost).
#include <libretto/http/openssl_tls.hpp>

#include "llm_test_server.hpp"

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

// The models of the transport concept that need OpenSSL (see http_transport_test.cpp).
static_assert(libretto::http::http_transport<libretto::http::beast_transport<libretto::http::openssl_tls>>);
static_assert(libretto::http::http_transport<libretto::http::https_transport>);

namespace asio = boost::asio;
namespace lb = libretto;
namespace lh = libretto::http;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

struct pkey_free {
    void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct x509_free {
    void operator()(X509* p) const noexcept { X509_free(p); }
};
struct bio_free {
    void operator()(BIO* p) const noexcept { BIO_free(p); }
};

void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("openssl test certificate: ") + what);
}

std::string to_pem(X509* cert) {
    std::unique_ptr<BIO, bio_free> bio(BIO_new(BIO_s_mem()));
    check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

std::string to_pem(EVP_PKEY* key) {
    std::unique_ptr<BIO, bio_free> bio(BIO_new(BIO_s_mem()));
    check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1, "PEM_write_bio_PrivateKey");
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

/// A self-signed P-256 certificate for DNS:localhost (no IP address in it), valid for a day.
struct test_certificate {
    std::string cert_pem;
    std::string key_pem;

    test_certificate() {
        std::unique_ptr<EVP_PKEY, pkey_free> key(EVP_EC_gen("P-256"));
        check(key != nullptr, "EVP_EC_gen");
        std::unique_ptr<X509, x509_free> x(X509_new());
        check(x != nullptr, "X509_new");
        X509_set_version(x.get(), 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x.get()), 1);
        X509_gmtime_adj(X509_getm_notBefore(x.get()), -60);
        X509_gmtime_adj(X509_getm_notAfter(x.get()), 24 * 3600);
        X509_set_pubkey(x.get(), key.get());
        X509_NAME* name = X509_get_subject_name(x.get());
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
        X509_set_issuer_name(x.get(), name);
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, x.get(), x.get(), nullptr, nullptr, 0);
        for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost"},
                                  std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                                  std::pair{NID_key_usage, "critical,digitalSignature,keyCertSign"}}) {
            X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
            check(ext != nullptr, "X509V3_EXT_conf_nid");
            X509_add_ext(x.get(), ext, -1);
            X509_EXTENSION_free(ext);
        }
        check(X509_sign(x.get(), key.get(), EVP_sha256()) > 0, "X509_sign");
        cert_pem = to_pem(x.get());
        key_pem = to_pem(key.get());
    }
};

const test_certificate& certificate() {
    static const test_certificate c;
    return c;
}

/// Writes the certificate (our CA) to a file in the test's scratch directory.
std::string ca_file() {
    const std::string path = "test-ca.pem";
    std::ofstream(path) << certificate().cert_pem;
    return path;
}

/// llm_test::server plus a TLS listener on its io_context that hands each handshaken stream
/// to server::serve. Records the SNI name the client sent.
class tls_server {
public:
    tls_server() : ssl_(asio::ssl::context::tls_server), acceptor_(srv.context()) {
        const auto& c = certificate();
        ssl_.use_certificate_chain(asio::buffer(c.cert_pem));
        ssl_.use_private_key(asio::buffer(c.key_pem), asio::ssl::context::pem);
        SSL_CTX_set_tlsext_servername_callback(ssl_.native_handle(), &tls_server::on_sni);
        SSL_CTX_set_tlsext_servername_arg(ssl_.native_handle(), this);
        asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
        acceptor_.open(ep.protocol());
        acceptor_.bind(ep);
        acceptor_.listen();
        asio::co_spawn(srv.context(), accept_loop(), asio::detached);
    }

    ~tls_server() { srv.stop(); } // before the acceptor and context the server thread uses go

    std::string url(std::string host, std::string path = "/v1/echo") const {
        return "https://" + host + ":" + std::to_string(acceptor_.local_endpoint().port()) + path;
    }
    std::string sni() const {
        std::lock_guard lock(mutex_);
        return sni_;
    }
    int handshakes() const { return handshakes_.load(); }

    llm_test::server srv; // declared first: its io_context outlives the acceptor

private:
    static int on_sni(SSL* ssl, int*, void* arg) {
        auto* self = static_cast<tls_server*>(arg);
        const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
        std::lock_guard lock(self->mutex_);
        self->sni_ = name ? name : "";
        return SSL_TLSEXT_ERR_OK;
    }

    asio::awaitable<void> accept_loop() {
        for (std::size_t id = 1;; ++id) {
            error_code ec;
            auto token = asio::redirect_error(asio::use_awaitable, ec);
            asio::ip::tcp::socket sock = co_await acceptor_.async_accept(token);
            if (ec) co_return;
            asio::co_spawn(srv.context(), session(std::move(sock), id), asio::detached);
        }
    }

    asio::awaitable<void> session(asio::ip::tcp::socket sock, std::size_t id) {
        asio::ssl::stream<asio::ip::tcp::socket> s(std::move(sock), ssl_);
        error_code ec;
        auto token = asio::redirect_error(asio::use_awaitable, ec);
        co_await s.async_handshake(asio::ssl::stream_base::server, token);
        if (ec) co_return; // the client rejected our certificate
        ++handshakes_;
        co_await srv.serve(s, id);
    }

    asio::ssl::context ssl_;
    asio::ip::tcp::acceptor acceptor_;
    mutable std::mutex mutex_;
    std::string sni_;
    std::atomic<int> handshakes_{0};
};

template <class Test>
void run(asio::io_context& io, Test test) {
    std::exception_ptr failure;
    bool finished = false;
    asio::co_spawn(io, test(), [&](std::exception_ptr ep) {
        failure = ep;
        finished = true;
    });
    io.run();
    BOOST_REQUIRE(finished);
    if (failure) std::rethrow_exception(failure);
}

struct result {
    error_code ec;
    lh::https_transport::response res;
};

asio::awaitable<result> get(lh::https_transport& t, std::string url) {
    lh::http_request req;
    req.url = std::move(url);
    req.body = "{}";
    result out;
    auto token = asio::redirect_error(asio::use_awaitable, out.ec);
    out.res = co_await t.async_request(std::move(req), token);
    co_return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(https_transport_suite)

BOOST_AUTO_TEST_CASE(verification_fails_by_default_for_an_unknown_ca) {
    tls_server server;
    asio::io_context io;
    lh::https_transport t(io.get_executor()); // the system CA store: it does not know our certificate
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(t, server.url("localhost"));
        BOOST_TEST((r.ec.category() == asio::error::get_ssl_category()));
        BOOST_TEST_MESSAGE("default verification: " << r.ec.message());
        BOOST_TEST(r.ec.message().find("certificate verify failed") != std::string::npos);
    });
    BOOST_TEST(server.srv.request_count() == 0u);
}

BOOST_AUTO_TEST_CASE(ca_file_option_verifies_and_sni_is_sent) {
    tls_server server;
    server.srv.push(llm_test::text_reply("over tls").in_pieces(3));
    server.srv.push(llm_test::text_reply("again"));
    asio::io_context io;
    lh::https_transport t(io.get_executor(), {}, {.ca_file = ca_file()});
    run(io, [&]() -> asio::awaitable<void> {
        for (std::string want : {"over tls", "again"}) {
            result r = co_await get(t, server.url("localhost"));
            BOOST_REQUIRE_MESSAGE(!r.ec, r.ec.message());
            BOOST_TEST(r.res.status() == 200u);
            auto [ec, body] = co_await lh::read_body(r.res, 1 << 20);
            BOOST_TEST(!ec);
            BOOST_TEST(body == want);
        }
    });
    BOOST_TEST(server.sni() == "localhost");
    BOOST_TEST(server.handshakes() == 1); // the second request reused the TLS connection
    BOOST_TEST(t.connections_opened() == 1u);
    BOOST_TEST(server.srv.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(host_name_must_match_the_certificate) {
    tls_server server;
    asio::io_context io;
    lh::https_transport t(io.get_executor(), {}, {.ca_file = ca_file()});
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(t, server.url("127.0.0.1")); // trusted CA, but the certificate names localhost
        BOOST_TEST((r.ec.category() == asio::error::get_ssl_category()));
        BOOST_TEST(r.ec.message().find("certificate verify failed") != std::string::npos);
    });
    BOOST_TEST(server.sni() == ""); // no SNI for an IP literal
}

BOOST_AUTO_TEST_CASE(verification_can_be_turned_off_explicitly) {
    tls_server server;
    server.srv.push(llm_test::text_reply("unverified"));
    asio::io_context io;
    lh::https_transport t(io.get_executor(), {}, {.verify_peer = false});
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(t, server.url("127.0.0.1"));
        BOOST_REQUIRE_MESSAGE(!r.ec, r.ec.message());
        auto [ec, body] = co_await lh::read_body(r.res, 1 << 20);
        BOOST_TEST(body == "unverified");
    });
}

BOOST_AUTO_TEST_CASE(plain_http_works_on_the_tls_transport_too) {
    llm_test::server srv;
    srv.push(llm_test::text_reply("plain"));
    asio::io_context io;
    lh::https_transport t(io.get_executor());
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(t, srv.base_url() + "/x");
        BOOST_REQUIRE(!r.ec);
        auto [ec, body] = co_await lh::read_body(r.res, 1 << 20);
        BOOST_TEST(body == "plain");
    });
}

BOOST_AUTO_TEST_CASE(cut_tls_stream_is_truncated) {
    tls_server server;
    server.srv.push(llm_test::text_reply(std::string(500, 'q')).in_pieces(50).cut(120));
    asio::io_context io;
    lh::https_transport t(io.get_executor(), {}, {.ca_file = ca_file()});
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(t, server.url("localhost"));
        BOOST_REQUIRE(!r.ec);
        auto [ec, body] = co_await lh::read_body(r.res, 1 << 20);
        BOOST_TEST(ec == lh::http_errc::truncated);
        BOOST_TEST(body.size() <= 120u);
    });
}

BOOST_AUTO_TEST_CASE(handshake_counts_against_the_connect_timeout) {
    // Accepts TCP, never speaks TLS.
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket held(io);
    a.async_accept(held, [](error_code) {});
    lh::https_transport t(io.get_executor(), {.timeouts = {.connect = 200ms}}, {.verify_peer = false});
    run(io, [&]() -> asio::awaitable<void> {
        const auto t0 = std::chrono::steady_clock::now();
        result r = co_await get(t, "https://127.0.0.1:" + std::to_string(a.local_endpoint().port()) + "/");
        const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        BOOST_TEST(r.ec == lh::http_errc::connect_timeout);
        BOOST_TEST(ms >= 190.0);
        BOOST_TEST(ms < 2000.0);
        held.close();
        a.close();
    });
}

BOOST_AUTO_TEST_CASE(unusable_ca_options_throw_at_construction) {
    asio::io_context io;
    try {
        lh::https_transport t(io.get_executor(), {}, {.ca_file = "/nonexistent/ca.pem"});
        BOOST_FAIL("expected system_error");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == lb::errc::invalid_argument);
        BOOST_TEST(std::string(e.what()).find("/nonexistent/ca.pem") != std::string::npos);
    }
}

// The connect limit covers the TLS handshake: a "wait forever" one overflowed the clock's
// nanoseconds and failed the connection with connect_timeout at once.
BOOST_AUTO_TEST_CASE(wait_forever_limits_over_tls) {
    tls_server server;
    auto late = llm_test::text_reply("late over tls").in_pieces(5);
    late.header_delay = 200ms;
    server.srv.push(std::move(late));
    asio::io_context io;
    const auto forever = std::chrono::milliseconds::max();
    lh::beast_transport_options o;
    o.timeouts = {.connect = forever, .first_byte = forever, .idle = forever, .total = forever};
    lh::https_transport t(io.get_executor(), o, {.ca_file = ca_file()});
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(t, server.url("localhost"));
        BOOST_REQUIRE_MESSAGE(!r.ec, r.ec.message());
        auto read = co_await lh::read_body(r.res, 1 << 20);
        auto& [ec, body] = read;
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(body == "late over tls");
    });
}

BOOST_AUTO_TEST_CASE(negative_limits_throw_at_construction) {
    asio::io_context io;
    lh::beast_transport_options o;
    o.timeouts.first_byte = -1ms;
    try {
        lh::https_transport t(io.get_executor(), o);
        BOOST_ERROR("a negative first_byte timeout was accepted");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::invalid_argument), e.what());
        const std::string what = e.what();
        BOOST_TEST(what.find("timeouts.first_byte is negative (-1 ms)") != std::string::npos, what);
    }
}

// A moved-from https_transport: requests fail with not_connected, the counts are 0.
BOOST_AUTO_TEST_CASE(a_moved_from_https_transport_is_empty_not_a_crash) {
    asio::io_context io;
    lh::https_transport a(io.get_executor());
    lh::https_transport b = std::move(a);
    BOOST_TEST(a.connections_opened() == 0u); // NOLINT: moved from on purpose
    BOOST_TEST(a.idle_connections() == 0u);   // NOLINT
    BOOST_TEST(b.options().timeouts.connect.count() == 10000);
    run(io, [&]() -> asio::awaitable<void> {
        result r = co_await get(a, "http://127.0.0.1:1/"); // NOLINT
        BOOST_TEST((r.ec == asio::error::not_connected), r.ec.message());
    });
}

BOOST_AUTO_TEST_SUITE_END()
