// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_PROVIDER_ERROR_HPP
#define LIBRETTO_PROVIDER_PROVIDER_ERROR_HPP

// What a provider's failure means to an agent: an HTTP status and error body (or an error
// event inside a stream) become one libretto::errc — transient (retry after a pause),
// context_overflow (compact, then retry), auth_failed, model_error — plus the provider's
// own message and its Retry-After. Pure functions; see docs/providers.md ("Errors").

#include <libretto/error.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/provider/detail/http_date.hpp>
#include <libretto/provider/detail/overflow_patterns.hpp>
#include <libretto/provider/detail/text.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace libretto {

/// The longest provider message kept (bytes, cut on a character boundary): error bodies
/// can be whole HTML pages from a proxy.
inline constexpr std::size_t max_provider_message_bytes = 1000;

/// A provider's error as it reported it, before classification.
struct provider_error_body {
    std::string type{};    ///< "invalid_request_error", "overloaded_error", "server_error", ... (may be empty)
    std::string code{};    ///< OpenAI's error code ("context_length_exceeded", "insufficient_quota"); may be empty
    std::string message{}; ///< the provider's message, else the raw body (bounded), else "<status> status code (no body)"
    int status = 0;        ///< a numeric status the body itself carries (vLLM, llama.cpp: "code": 500); 0 if none
    bool structured = false; ///< the body was a JSON error object we understood
};

namespace detail {

inline const json::value* member(const json::object& o, std::string_view key) noexcept {
    auto it = o.find(key);
    return it == o.end() ? nullptr : &it->value();
}

inline std::string_view string_member(const json::object& o, std::string_view key) noexcept {
    if (const auto* v = member(o, key))
        if (const auto* s = v->if_string()) return *s;
    return {};
}

/// Reads an error object: {"type","code","message"} (OpenAI, Anthropic, vLLM, llama.cpp).
inline void read_error_object(const json::object& e, provider_error_body& out) {
    out.type = string_member(e, "type");
    out.message = bounded_utf8(string_member(e, "message"), max_provider_message_bytes);
    if (const auto* c = member(e, "code")) {
        if (const auto* s = c->if_string()) out.code = *s;
        else if (c->is_int64() && c->get_int64() >= 100 && c->get_int64() <= 599)
            out.status = static_cast<int>(c->get_int64());
    }
    out.structured = !out.message.empty() || !out.type.empty() || !out.code.empty();
}

} // namespace detail

/// Reads a provider's error value: `{"error": {...}}` (OpenAI, vLLM, llama.cpp, Ollama's
/// OpenAI layer), `{"type": "error", "error": {...}}` (Anthropic), `{"error": "text"}`
/// (Ollama; a JSON error body inside the text is read), `{"error": "Type", "message":
/// "text", "status": N}` (Express servers), `{"object": "error", "message": ...}` (older
/// vLLM), `{"detail": "text"}`, `{"message": "text"}`. `structured` is false for anything else.
inline provider_error_body read_error_value(const json::object& root) {
    provider_error_body out;
    const auto* o = &root;
    if (const auto* e = detail::member(*o, "error")) {
        if (const auto* eo = e->if_object()) {
            detail::read_error_object(*eo, out);
        } else if (const auto* s = e->if_string()) {
            // Ollama passes llama-server's JSON error body through as this string
            // (llm/llama_server.go): read the body inside, once.
            std::string_view inner = detail::trim(*s);
            if (!inner.empty() && inner.front() == '{') {
                boost::system::error_code ec;
                json::value v = json::parse(inner, ec);
                if (const auto* io = v.if_object(); !ec && io && detail::member(*io, "error")) {
                    if (const auto* ie = detail::member(*io, "error")->if_object()) {
                        detail::read_error_object(*ie, out);
                        if (out.structured) return out;
                    }
                }
                out = provider_error_body{};
            }
            // Express-style bodies: {"error": "Not Found", "message": "Cannot POST /v2/x", "status": 404}.
            if (std::string_view m = detail::string_member(*o, "message"); !m.empty()) {
                out.type = detail::bounded_utf8(*s, max_provider_message_bytes);
                out.message = detail::bounded_utf8(m, max_provider_message_bytes);
                if (const auto* st = detail::member(*o, "status"); st && st->is_int64() && st->get_int64() >= 100 &&
                                                                    st->get_int64() <= 599)
                    out.status = static_cast<int>(st->get_int64());
                out.structured = true;
                return out;
            }
            out.message = detail::bounded_utf8(*s, max_provider_message_bytes);
            out.structured = !out.message.empty();
        }
        return out;
    }
    if (detail::string_member(*o, "object") == "error") {
        detail::read_error_object(*o, out);
        return out;
    }
    for (std::string_view key : {"detail", "message"}) {
        std::string_view s = detail::string_member(*o, key);
        if (!s.empty()) {
            out.message = detail::bounded_utf8(s, max_provider_message_bytes);
            out.structured = true;
            return out;
        }
    }
    return out;
}

inline provider_error_body read_error_value(const json::value& v) {
    if (const auto* o = v.if_object()) return read_error_value(*o);
    return {};
}

/// Reads an HTTP error body (see read_error_value). A body that is not such JSON gives its
/// own text as the message (bounded); an empty one gives "<status> status code (no body)",
/// the phrasing of the OpenAI SDKs, which the overflow patterns know (Cerebras).
inline provider_error_body parse_error_body(std::string_view body, int status = 0) {
    provider_error_body out;
    std::string_view trimmed = detail::trim(body);
    if (trimmed.empty()) {
        out.message = (status ? std::to_string(status) + " " : std::string()) + "status code (no body)";
        return out;
    }
    boost::system::error_code ec;
    json::value v = json::parse(trimmed, ec);
    if (!ec) out = read_error_value(v);
    if (!out.structured && out.message.empty()) out.message = detail::bounded_utf8(trimmed, max_provider_message_bytes);
    return out;
}

/// True if `message` says the request does not fit the model's context window, in any
/// phrasing we know (docs/providers.md lists them with who says each), and it is not a
/// rate limit or throttling message that happens to mention tokens.
inline bool is_context_overflow_message(std::string_view message) noexcept {
    if (detail::any_pattern_matches(detail::non_overflow_patterns(), message)) return false;
    return detail::any_pattern_matches(detail::overflow_patterns(), message);
}

/// True if `message` says the model or server rejects a parameter of the request (vLLM's
/// "'max_tokens' or 'max_completion_tokens' is too large", Anthropic's "temperature and top_p
/// cannot both be specified for this model", "temperature is deprecated for this model").
inline bool is_rejected_parameter_message(std::string_view message) noexcept {
    return detail::any_pattern_matches(detail::rejected_parameter_patterns(), message);
}

/// The errc for a provider error. `status` is the HTTP status (0 for an error event inside
/// a stream, which carries only a type); `type` and `code` are the provider's.
///
/// - invalid_argument: the message names a parameter the model rejects
///   (is_rejected_parameter_message), or the code is OpenAI's `unsupported_value` or
///   `unsupported_parameter`: neither waiting nor compaction helps;
/// - context_overflow: the message matches is_context_overflow_message, or the type/code
///   is OpenAI's `context_length_exceeded`, Anthropic's `request_too_large`, z.ai's
///   `model_context_window_exceeded` or llama.cpp's `exceed_context_size_error` — never for
///   429 (a tokens-per-minute limit is a rate limit, whatever its wording);
/// - auth_failed: 401, 403, Anthropic's authentication_error / permission_error;
/// - transient: 408, 409, 429, 5xx, Anthropic's 529 overloaded_error, rate_limit_error,
///   api_error, timeout_error, OpenAI's server_error, llama.cpp's unavailable_error —
///   except a 429 for an exhausted quota or billing (`insufficient_quota`, `billing_error`)
///   or for one request larger than a per-minute token limit ("Request too large for ... on
///   tokens per min"), which waiting does not fix: model_error;
/// - model_error: everything else (400 bad request, 404 unknown model, 413, 422, ...).
inline errc classify_provider_error(int status, std::string_view type, std::string_view code,
                                    std::string_view message) noexcept {
    using detail::iequals;
    const bool quota = iequals(code, "insufficient_quota") || iequals(type, "insufficient_quota") ||
                       iequals(type, "billing_error") || iequals(code, "billing_error");
    if (!quota && (iequals(code, "unsupported_value") || iequals(code, "unsupported_parameter") ||
                   is_rejected_parameter_message(message)))
        return errc::invalid_argument;
    if (status != 429 && !quota) {
        if (iequals(code, "context_length_exceeded") || iequals(type, "context_length_exceeded") ||
            iequals(type, "request_too_large") || iequals(code, "request_too_large") ||
            iequals(code, "model_context_window_exceeded") || iequals(type, "exceed_context_size_error") ||
            is_context_overflow_message(message))
            return errc::context_overflow;
    }
    if (status == 401 || status == 403 || iequals(type, "authentication_error") ||
        iequals(type, "permission_error") || iequals(code, "invalid_api_key"))
        return errc::auth_failed;
    if (quota) return errc::model_error;
    if (status == 429 && detail::any_pattern_matches(detail::request_too_large_patterns(), message))
        return errc::model_error;
    if (status == 408 || status == 409 || status == 429 || status >= 500) return errc::transient;
    if (status == 0 || status == 200) {
        // An error event inside a stream: the type is all there is.
        for (std::string_view t : {"overloaded_error", "rate_limit_error", "rate_limit_exceeded", "api_error",
                                   "timeout_error", "server_error", "service_unavailable_error", "unavailable_error"})
            if (iequals(type, t) || iequals(code, t)) return errc::transient;
    }
    return errc::model_error;
}

/// Retry-After as a duration from `now`: `retry-after-ms` (milliseconds, OpenAI and
/// Anthropic send it; preferred when valid), else `retry-after` as delta-seconds
/// (fractions accepted) or an HTTP-date (a date in the past gives 0). nullopt when neither
/// header is present or parses; values are capped at one day. Every path saturates: any
/// number of digits and any date from year 0000 to 9999 give a value from 0 to the cap.
inline std::optional<std::chrono::milliseconds>
parse_retry_after(std::string_view retry_after, std::string_view retry_after_ms = {},
                  std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
    using std::chrono::milliseconds;
    constexpr double cap_ms = 24.0 * 3600 * 1000;
    constexpr std::int64_t cap = 24LL * 3600 * 1000;
    auto number = [](std::string_view s, double& out) {
        s = detail::trim(s);
        if (s.empty() || s.front() == '-' || s.front() == '+') return false;
        // Digits with an optional fraction, nothing else.
        double v = 0;
        std::size_t i = 0;
        bool digits = false;
        for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, digits = true) v = v * 10 + (s[i] - '0');
        if (i < s.size() && s[i] == '.') {
            double scale = 0.1;
            for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, digits = true, scale /= 10)
                v += (s[i] - '0') * scale;
        }
        if (!digits || i != s.size()) return false;
        out = v;
        return true;
    };
    double v = 0;
    if (!retry_after_ms.empty() && number(retry_after_ms, v))
        return milliseconds(static_cast<std::int64_t>(v < cap_ms ? v : cap_ms));
    if (retry_after.empty()) return std::nullopt;
    if (number(retry_after, v)) {
        v *= 1000;
        return milliseconds(static_cast<std::int64_t>(v < cap_ms ? v : cap_ms));
    }
    if (auto when = detail::parse_http_date(retry_after)) {
        // In milliseconds, not the clock's nanoseconds: a date outside 1678-2262 overflows
        // those (years 0000-9999 are ±3.2e14 ms). The difference is truncated toward zero,
        // as duration_cast of `*when - now` would be.
        const auto since = now.time_since_epoch();
        const auto now_ms = std::chrono::duration_cast<milliseconds>(since); // toward zero
        const auto rest = since - now_ms;                                    // |rest| < 1 ms
        std::int64_t d = (std::chrono::time_point_cast<milliseconds>(*when).time_since_epoch() - now_ms).count();
        if (rest.count() > 0) --d; // the true difference lies in (d - 1, d)
        if (d <= 0) return milliseconds(0);
        return milliseconds(d < cap ? d : cap);
    }
    return std::nullopt;
}

/// A classified provider failure.
struct provider_error {
    boost::system::error_code code{}; ///< errc::transient, context_overflow, auth_failed, model_error
    int http_status = 0;              ///< 0 for an error event inside a stream
    std::string type{};               ///< the provider's error type, if it gave one
    std::string provider_code{};      ///< the provider's error code, if it gave one
    std::string message{};            ///< the provider's own message (bounded)
    std::optional<std::chrono::milliseconds> retry_after{};

    /// "HTTP 429 (rate_limit_error): Rate limited"; without a status (an error event in a
    /// stream, an error body with 200) "provider error (overloaded_error): Overloaded".
    std::string describe() const {
        std::string d = http_status ? "HTTP " + std::to_string(http_status) : std::string("provider error");
        std::string_view tag = type.empty() ? std::string_view(provider_code) : std::string_view(type);
        if (!tag.empty()) {
            d += " (";
            d += tag;
            d += ')';
        }
        d += ": ";
        d += message;
        return d;
    }

    /// The failed llm_response an agent receives: error, describe(), retry_after.
    llm_response to_response() const { return llm_response::failure(code, describe(), retry_after); }
};

/// Classifies a non-2xx HTTP response from a provider: its status, body and the values of
/// its `retry-after` / `retry-after-ms` headers (empty if absent). `now` anchors an
/// HTTP-date Retry-After.
inline provider_error classify_http_error(int status, std::string_view body, std::string_view retry_after = {},
                                          std::string_view retry_after_ms = {},
                                          std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
    provider_error_body b = parse_error_body(body, status);
    provider_error e;
    e.http_status = status;
    e.code = classify_provider_error(status, b.type, b.code, b.message);
    e.type = std::move(b.type);
    e.provider_code = std::move(b.code);
    e.message = std::move(b.message);
    e.retry_after = parse_retry_after(retry_after, retry_after_ms, now);
    return e;
}

/// Classifies an error reported inside a stream (an SSE error event's JSON, already read):
/// the status is the one the error object carries, if any.
inline provider_error classify_stream_error(const provider_error_body& b) {
    provider_error e;
    e.code = classify_provider_error(b.status, b.type, b.code, b.message);
    e.type = b.type;
    e.provider_code = b.code;
    e.message = b.message.empty() ? std::string("(no message)") : b.message;
    return e;
}

} // namespace libretto

#endif
