// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_MODEL_HPP
#define LIBRETTO_MODEL_MODEL_HPP

// The model concept: what an agent needs from an LLM. Valid expressions, for a model `m`
// (an lvalue M), a const model `cm` and an llm_request `r`:
//
//   m.generate(std::move(r))  -> llm_stream (basic_event_stream<llm_chunk>), lazy
//   cm.name()                 -> convertible to std::string_view (the configured model name)
//   cm.get_executor()         -> convertible to asio::any_io_executor (where streams run)
//
// plus copy construction (agents hold models by value; copies share connections/state).
// Optional:
//
//   cm.retries_transient()    -> convertible to bool: true if the model retries its own
//                                transient failures (model_retries_transient, below)
//
// The stream's contract is in docs/models.md: zero or more delta chunks, then exactly one
// chunk whose `final` holds the llm_response, then the end. Model failures (rate limits,
// context overflow, bad credentials, garbage replies) arrive as that final response with
// `error` set, never as exceptions; next() throws only for cancellation and bugs.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace libretto {

/// The stream a model's generate() returns.
using llm_stream = basic_event_stream<llm_chunk>;
using llm_writer = stream_writer<llm_chunk>;

template <class M>
concept model = std::copy_constructible<M> && requires(M& m, const M& cm, llm_request r) {
    { m.generate(std::move(r)) } -> std::same_as<llm_stream>;
    { cm.name() } -> std::convertible_to<std::string_view>;
    { cm.get_executor() } -> std::convertible_to<boost::asio::any_io_executor>;
};

/// Whether `m` retries its own transient failures (docs/models.md, "Retries"): what
/// `m.retries_transient()` says when the model has that member (openai_model and
/// anthropic_model say true, with their provider_http_options::retry; any_model asks the
/// model it wraps), else false (scripted_model, most models of one's own). llm_agent
/// retries a model only when this is false, with llm_agent_options::retry: one layer
/// retries, never two.
template <class M>
bool model_retries_transient(const M& m) noexcept {
    if constexpr (requires {
                      { m.retries_transient() } -> std::convertible_to<bool>;
                  })
        return static_cast<bool>(m.retries_transient());
    else
        return false;
}

/// Runs one generation to the end and returns its final response (the deltas are
/// dropped). `m` is taken by value (a model is a cheap handle), so it may be a temporary.
/// A stream that ends without a final chunk yields a response with errc::bad_response
/// holding what the deltas carried. Exceptions from the stream (cancellation) propagate.
template <class M>
    requires model<M>
boost::asio::awaitable<llm_response> generate_response(M m, llm_request request) {
    llm_stream stream = m.generate(std::move(request));
    std::optional<llm_response> final;
    llm_response_accumulator acc;
    for (;;) {
        std::optional<llm_chunk> chunk = co_await stream.next();
        if (!chunk) break;
        if (chunk->final) final = std::move(*chunk->final);
        else acc.add(*chunk);
    }
    if (final) co_return std::move(*final);
    acc.fail(make_error_code(errc::bad_response), "the model's stream ended without a final response");
    co_return std::move(acc).finish();
}

/// The completion signature of async_generate_response.
using generate_signature = void(boost::system::error_code, llm_response);

namespace detail {
template <class M, class Token>
auto start_generate(M&& m, llm_request request, diagnostics* d, Token&& token) {
    using model_type = std::decay_t<M>;
    return initiate_with_diagnostics<generate_signature>(
        d, std::forward<Token>(token),
        [](auto handler, diagnostics* d, model_type m, llm_request request) {
            auto ex = std::as_const(m).get_executor();
            spawn_with_error_code<llm_response>(std::move(handler), d, ex, generate_response(std::move(m), std::move(request)),
                                                [](const llm_response& r, diagnostics* d) {
                                                    if (r.error && d) d->assign(r.error_message);
                                                    return r.error;
                                                });
        },
        model_type(std::forward<M>(m)), std::move(request));
}
} // namespace detail

/// generate_response as an Asio operation with any completion token (default:
/// libretto::default_completion_token_t), run on the model's executor. Completes with
/// (error_code, response): a failed generation's code is the response's `error` (the
/// response, with what arrived before the failure, is delivered too) and its words, the
/// response's `error_message`, go to `diag`; an exception the model threw becomes its code
/// (docs/errors.md). With use_awaitable a failure throws error_with_diagnostics.
template <class M, boost::asio::completion_token_for<generate_signature> CompletionToken = default_completion_token_t>
    requires model<std::decay_t<M>>
auto async_generate_response(M&& m, llm_request request, diagnostics& diag, CompletionToken&& token = {}) {
    return detail::start_generate(std::forward<M>(m), std::move(request), &diag, std::forward<CompletionToken>(token));
}
template <class M, boost::asio::completion_token_for<generate_signature> CompletionToken = default_completion_token_t>
    requires model<std::decay_t<M>>
auto async_generate_response(M&& m, llm_request request, CompletionToken&& token = {}) {
    return detail::start_generate(std::forward<M>(m), std::move(request), nullptr, std::forward<CompletionToken>(token));
}

} // namespace libretto

#endif
