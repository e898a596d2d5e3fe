// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_ANTHROPIC_MODEL_HPP
#define LIBRETTO_PROVIDER_ANTHROPIC_MODEL_HPP

// A model (see model/model.hpp) for the Anthropic Messages API (and servers that speak it):
//
//   lh::https_transport http{ex};                                    // <libretto/http/openssl_tls.hpp>
//   lb::anthropic_model model{http, lb::anthropic_options::from_environment({.model = "claude-sonnet-4-5"})};
//   lb::llm_stream s = model.generate(std::move(request));
//
// Any http_transport works (beast_transport<> for a local http:// server, fake_transport in
// tests). Copies share the transport's connection pool. Failures arrive as the final
// response's `error` (classified by provider_error.hpp); transient ones are retried by the
// retry policy while nothing has been delivered to the caller.

#include <libretto/http/transport.hpp>
#include <libretto/model/model.hpp>
#include <libretto/provider/detail/http_generation.hpp>
#include <libretto/provider/anthropic_protocol.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace libretto {

template <class Transport>
    requires http::http_transport<Transport>
class anthropic_model {
public:
    anthropic_model(Transport transport, anthropic_options options, provider_http_options http = {})
        : transport_(std::move(transport)),
          config_(std::make_shared<const config>(config{std::move(options), http})) {}

    llm_stream generate(llm_request request) {
        const anthropic_options& o = config_->options;
        http::http_request req;
        try {
            req.body = encode_request(request, o);
        } catch (const boost::system::system_error& e) {
            return detail::failed_stream(get_executor(), llm_response::failure(e.code(), e.what()));
        }
        req.url = detail::url_origin(o.base_url) + request_target(o);
        req.headers = detail::to_transport_headers(request_headers(o));
        return llm_stream(get_executor(), [t = transport_, req = std::move(req), http = config_->http](
                                              llm_writer out) mutable -> boost::asio::awaitable<void> {
            return detail::http_generation<anthropic_stream_decoder>(std::move(t), std::move(req), http, std::move(out));
        });
    }

    /// The configured model name.
    std::string_view name() const noexcept { return config_->options.model; }
    boost::asio::any_io_executor get_executor() const { return transport_.get_executor(); }
    const anthropic_options& options() const noexcept { return config_->options; }

private:
    struct config {
        anthropic_options options;
        provider_http_options http;
    };
    Transport transport_;
    std::shared_ptr<const config> config_;
};

} // namespace libretto

#endif
