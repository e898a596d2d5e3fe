// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_HTTP_GENERATION_HPP
#define LIBRETTO_PROVIDER_DETAIL_HTTP_GENERATION_HPP

// What openai_model and anthropic_model share: the model class over an any_transport. The
// generation itself (the codecs' decoder on the SSE events, the retry policy around whole
// attempts) is in http_attempt.hpp, which only the models' impl/*.ipp include.

#include <libretto/error.hpp>
#include <libretto/http/error.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/model/model.hpp>
#include <libretto/provider/http_header.hpp>
#include <libretto/provider/provider_http_options.hpp>

#include <boost/system/system_error.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

namespace detail {

/// "https://api.openai.com" from "https://api.openai.com/v1?x": the part before the path.
inline std::string url_origin(std::string_view base_url) {
    const auto scheme = base_url.find("://");
    const std::size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
    const auto end = base_url.find_first_of("/?#", from);
    return std::string(base_url.substr(0, end));
}

[[noreturn]] inline void throw_cancelled() {
    throw boost::system::system_error(make_error_code(errc::cancelled));
}

/// A stream holding only a final failure (bad input found before any I/O).
/// (Ready items, not a producer: an inline coroutine would be compiled into every file.)
inline llm_stream failed_stream(boost::asio::any_io_executor ex, llm_response r) {
    std::vector<llm_chunk> items;
    items.push_back(llm_chunk::last(std::move(r)));
    return make_stream(std::move(ex), std::move(items));
}

/// A provider model's generation for its `Options`: specialised (declared next to each model,
/// defined in its impl/*.ipp), never defined for other types.
template <class Options>
llm_stream provider_generate(const http::any_transport& transport, const Options& options,
                             const provider_http_options& http, llm_request request);

/// What openai_model and anthropic_model share: a model over an any_transport whose
/// generation is provider_generate<Options>, declared next to each model and defined in its
/// impl/*.ipp (compiled once per program with LIBRETTO_SEPARATE_COMPILATION).
template <class Options>
class http_model {
public:
    http_model(http::any_transport transport, Options options, provider_http_options http)
        : transport_(std::move(transport)), config_(std::make_shared<const config>(config{std::move(options), http})) {}

    llm_stream generate(llm_request request) {
        return detail::provider_generate<Options>(transport_, config_->options, config_->http, std::move(request));
    }

    /// The configured model name.
    std::string_view name() const noexcept { return config_->options.model; }
    boost::asio::any_io_executor get_executor() const { return transport_.get_executor(); }
    const Options& options() const noexcept { return config_->options; }
    /// How the model uses HTTP, its retries included.
    const provider_http_options& http_options() const noexcept { return config_->http; }
    /// True: the model retries its own transient failures (provider_http_options::retry),
    /// so llm_agent does not retry it again (model_retries_transient, docs/models.md).
    bool retries_transient() const noexcept { return true; }

private:
    struct config {
        Options options;
        provider_http_options http;
    };
    http::any_transport transport_;
    std::shared_ptr<const config> config_; // copies of the model share it
};

} // namespace detail
} // namespace libretto

#endif
