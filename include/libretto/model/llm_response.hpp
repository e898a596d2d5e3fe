// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_LLM_RESPONSE_HPP
#define LIBRETTO_MODEL_LLM_RESPONSE_HPP

// What a model sends back: a stream of llm_chunk deltas (text, thinking, tool-call
// fragments) that ends with one chunk holding the final llm_response. The
// llm_response_accumulator folds deltas into that response; it is sans-io, so a provider
// driver feeds it whatever its wire format delivers and tests feed it by hand.
// See docs/models.md.

#include <libretto/detail/config.hpp>
#include <libretto/error.hpp>
#include <libretto/event/boxed_optional.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/event/usage.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Why the model stopped.
enum class finish_reason {
    stop,           ///< a natural end, or a stop sequence
    length,         ///< the output-token limit
    tool_calls,     ///< the model asks for tools to run
    content_filter, ///< the provider withheld (part of) the output
    error,          ///< the generation failed: see llm_response::error
    other,          ///< anything else the provider reported
    refusal,        ///< the model declined to answer; the text is its refusal (OpenAI's refusal, Anthropic's stop_reason "refusal")
};

constexpr std::string_view to_string(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::tool_calls: return "tool_calls";
    case finish_reason::content_filter: return "content_filter";
    case finish_reason::error: return "error";
    case finish_reason::other: return "other";
    case finish_reason::refusal: return "refusal";
    }
    return "unknown";
}

/// Writes the name ("tool_calls"), for logs and test diagnostics.
template <class Ostream>
    requires requires(Ostream& os, std::string_view s) { os << s; }
Ostream& operator<<(Ostream& os, finish_reason r) {
    os << to_string(r);
    return os;
}

/// A tool call whose arguments could not be used (not JSON, not an object, or no tool
/// name). The agent answers it with `error_response()` so the model can correct itself;
/// `as_call()` is the call to record in the transcript for that answer to pair with.
struct invalid_tool_call {
    std::string id{};
    std::string name{};
    std::string arguments{}; ///< the raw text the model produced
    /// Names the call: "tool call 'get_weather' (id call_1): arguments are not valid JSON
    /// (syntax error): {\"city\": Oslo}".
    std::string error{};

    tool_call_part as_call() const {
        tool_call_part c{id, name, {}, {}};
        c.metadata["invalid_arguments"] = arguments;
        return c;
    }
    /// The answer the model sees, in the shape of every failed tool call
    /// (tool_error_response in tool/tool.hpp): `error` set to the message and `result` the
    /// object {"error": message}, since most providers show the model only a result body.
    tool_response_part error_response() const {
        json::object body;
        body["error"] = error;
        return tool_response_part{id, name, json::value(std::move(body)), error, {}};
    }

    friend bool operator==(const invalid_tool_call&, const invalid_tool_call&) = default;
};

/// How a provider's reply arrived over HTTP.
enum class reply_kind : std::uint8_t {
    unknown,  ///< not an HTTP provider's reply (scripted models, failures before a 2xx reply)
    streamed, ///< a stream of SSE events
    whole,    ///< one JSON body (`stream` off, or a server that ignores it)
};

/// The complete reply of one generation.
struct llm_response {
    /// In order: thinking (a part per thinking block, redacted ones included), text (if
    /// any), then the tool calls with parsed arguments.
    std::vector<part> parts{};
    std::vector<invalid_tool_call> invalid_tool_calls{};
    std::optional<libretto::usage> usage{};
    std::string model_version{};
    finish_reason finish = finish_reason::stop;
    /// Set when the generation failed (finish is then finish_reason::error): errc::transient,
    /// context_overflow, auth_failed, bad_response, model_error, or a transport's code.
    /// `parts` keep whatever arrived before the failure.
    boost::system::error_code error{};
    std::string error_message{};
    /// A provider's Retry-After, with errc::transient.
    std::optional<std::chrono::milliseconds> retry_after{};
    /// The form the provider's 2xx reply had, whatever was asked (openai_model,
    /// anthropic_model); unknown for other models.
    reply_kind reply = reply_kind::unknown;

    bool ok() const noexcept { return !error; }

    /// A failed response.
    static llm_response failure(boost::system::error_code ec, std::string message,
                                std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
        llm_response r;
        r.finish = finish_reason::error;
        r.error = ec;
        r.error_message = std::move(message);
        r.retry_after = retry_after;
        return r;
    }

    std::string text() const {
        std::string out;
        for (const auto& p : part_view<text_part>(parts)) out += p.text;
        return out;
    }
    std::string thinking() const {
        std::string out;
        for (const auto& p : part_view<thinking_part>(parts)) out += p.thinking;
        return out;
    }
    part_view<tool_call_part> tool_calls() const noexcept { return part_view<tool_call_part>(parts); }
    bool has_tool_calls() const noexcept { return !tool_calls().empty() || !invalid_tool_calls.empty(); }

    friend bool operator==(const llm_response&, const llm_response&) = default;
};

/// The most tool calls one reply may hold. A provider decoder refuses a tool-call or
/// content-block index at or above it (errc::bad_response), and llm_response_accumulator
/// refuses a call beyond it: more is a garbage reply, not a reason to allocate.
inline constexpr std::size_t max_tool_calls = 4096;

/// A fragment of a streamed tool call. Fragments of one call share an `index` (OpenAI's
/// tool_calls[].index, Anthropic's content-block index) or, without one, an `id`; a
/// fragment with neither continues the most recent call. `id` and `name` usually come
/// with the first fragment only; `arguments` pieces are concatenated and parsed at the end.
struct tool_call_delta {
    std::optional<std::size_t> index{};
    std::string id{};
    std::string name{};
    std::string arguments{};

    friend bool operator==(const tool_call_delta&, const tool_call_delta&) = default;
};

/// One item of a model's stream. Every member is a delta except `usage` (the provider's
/// running totals: the latest report wins) and `finish`/`model_version` (latest wins).
/// The last chunk of a stream holds `final` and nothing else.
struct llm_chunk {
    std::string text{};
    std::string thinking{};
    /// Anthropic's signature_delta for the thinking block; the final thinking part carries
    /// the concatenation in metadata["signature"].
    std::string thinking_signature{};
    /// An Anthropic redacted_thinking block's opaque data (thinking the provider encrypted):
    /// never shown, kept in the final thinking part's metadata["redacted_data"] so that it
    /// goes back unmodified (the API rejects a tool-use continuation without it).
    std::string redacted_thinking{};
    /// The thinking block that `thinking`, `thinking_signature` and `redacted_thinking`
    /// belong to, counted from 0 in the order the blocks began: a response may hold several
    /// (Anthropic's interleaved thinking, redacted blocks among them), each with its own
    /// signature, and each becomes its own thinking part. Below max_tool_calls (the
    /// accumulator refuses a larger number).
    std::size_t thinking_block = 0;
    std::vector<tool_call_delta> tool_calls{};
    std::optional<libretto::usage> usage{};
    std::optional<finish_reason> finish{};
    std::string model_version{};
    /// Boxed: every chunk of a stream is moved through buffers and coroutine frames, and only
    /// the last one holds a response (216 bytes inline, 8 boxed).
    boxed_optional<llm_response> final{};

    bool is_final() const noexcept { return final.has_value(); }
    bool empty() const noexcept {
        return !has_content() && !usage && !finish && model_version.empty() && !final;
    }
    /// True if the chunk carries part of the answer (text, thinking, a tool call).
    bool has_content() const noexcept {
        return !text.empty() || !thinking.empty() || !thinking_signature.empty() || !redacted_thinking.empty() ||
               !tool_calls.empty();
    }

    /// The chunk that ends a stream.
    static llm_chunk last(llm_response r) {
        llm_chunk c;
        c.final = std::move(r);
        return c;
    }

    friend bool operator==(const llm_chunk&, const llm_chunk&) = default;
};

/// Folds streamed chunks into the final llm_response. Sans-io; not thread-safe.
///
///     llm_response_accumulator acc;
///     for (const llm_chunk& c : chunks) acc.add(c);
///     llm_response r = std::move(acc).finish();
class llm_response_accumulator {
public:
    /// Adds a chunk's deltas. A chunk holding `final` replaces everything added so far:
    /// finish() then returns that response. Thinking for a block numbered max_tool_calls or
    /// more is dropped and fails the response (errc::bad_response).
    LIBRETTO_DECL void add(const llm_chunk& c);

    /// Adds one tool-call fragment (see tool_call_delta for how fragments are matched).
    /// Constant time per fragment. A fragment that would start call number
    /// max_tool_calls + 1 is dropped and fails the response (errc::bad_response).
    LIBRETTO_DECL void add(const tool_call_delta& d);

    /// True once fail() was called or a fragment was refused (see add).
    bool failed() const noexcept { return static_cast<bool>(error_); }

    /// Records a failure (a provider error event mid-stream, a dropped connection):
    /// finish() returns a response with this error and what arrived before it.
    void fail(boost::system::error_code ec, std::string message,
              std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
        error_ = ec;
        error_message_ = std::move(message);
        retry_after_ = retry_after;
    }

    /// The text received so far.
    const std::string& text() const noexcept { return text_; }
    /// The thinking received so far.
    const std::string& thinking() const noexcept { return thinking_; }

    /// The response: a thinking part per thinking block (in block order; a redacted block's
    /// data in metadata["redacted_data"], a signature in metadata["signature"]), text, then
    /// the tool calls in order of first appearance,
    /// their arguments parsed (empty text means `{}`). Calls whose arguments are not a
    /// JSON object, or that have no name, go to `invalid_tool_calls` instead, with an
    /// error naming the call. A call without an id gets a fresh "call-<uuid>". Without a
    /// reported finish reason: tool_calls if there are calls, else stop; with fail():
    /// error.
    LIBRETTO_DECL llm_response finish() &&;

private:
    struct call {
        std::optional<std::size_t> index;
        std::string id;
        std::string name;
        std::string arguments;
    };

    static constexpr std::size_t no_call = static_cast<std::size_t>(-1);
    /// Up to this many calls a scan is cheapest (no hash table to allocate); past it, hash
    /// indexes keep a reply with thousands of calls linear in their number.
    static constexpr std::size_t linear_calls = 16;

    bool indexed() const noexcept { return calls_.size() > linear_calls; }

    /// The call with this index (indexes are unique: a call is only created when none has it).
    std::size_t find_index(std::size_t index) const {
        if (indexed()) {
            auto it = by_index_.find(index);
            return it == by_index_.end() ? no_call : it->second;
        }
        for (std::size_t i = 0; i < calls_.size(); ++i)
            if (calls_[i].index == index) return i;
        return no_call;
    }
    /// The last call (by position) with this id. The id index is built on the first lookup
    /// past linear_calls: streams whose fragments all carry an index never need it.
    LIBRETTO_DECL std::size_t find_id(const std::string& id);
    void note_id(std::size_t at) {
        auto [it, inserted] = by_id_.try_emplace(calls_[at].id, static_cast<std::uint32_t>(at));
        if (!inserted && it->second < at) it->second = static_cast<std::uint32_t>(at);
    }
    void build_indexes() {
        by_index_.reserve(calls_.size() * 2);
        for (std::size_t i = 0; i < calls_.size(); ++i)
            if (calls_[i].index) by_index_.emplace(*calls_[i].index, static_cast<std::uint32_t>(i));
    }

    static bool is_blank(std::string_view s) noexcept {
        return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
    }

    /// Empty if the call is usable (its arguments then in `args`), else why not, naming
    /// the call.
    LIBRETTO_DECL static std::string check_call(const call& c, std::size_t position, json::object& args);

    struct thinking_block {
        std::string thinking;
        std::string signature;
        std::string redacted;
    };

    std::string text_;
    std::string thinking_; ///< every block's thinking, for thinking()
    std::vector<thinking_block> thinking_blocks_;
    std::vector<call> calls_;
    boost::unordered_flat_map<std::size_t, std::uint32_t> by_index_; ///< index → position, past linear_calls
    boost::unordered_flat_map<std::string, std::uint32_t> by_id_;    ///< id → last position, once needed
    bool ids_indexed_ = false;
    std::optional<libretto::usage> usage_;
    std::optional<finish_reason> finish_;
    std::string model_version_;
    boost::system::error_code error_;
    std::string error_message_;
    std::optional<std::chrono::milliseconds> retry_after_;
    std::optional<llm_response> final_;
};

} // namespace libretto

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/model/impl/llm_response.ipp>
#endif

#endif
