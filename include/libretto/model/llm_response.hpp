// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_LLM_RESPONSE_HPP
#define LIBRETTO_MODEL_LLM_RESPONSE_HPP

// What a model sends back: a stream of llm_chunk deltas (text, thinking, tool-call
// fragments) that ends with one chunk holding the final llm_response. The
// llm_response_accumulator folds deltas into that response; it is sans-io, so a provider
// driver feeds it whatever its wire format delivers and tests feed it by hand.
// See docs/models.md.

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
};

constexpr std::string_view to_string(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::tool_calls: return "tool_calls";
    case finish_reason::content_filter: return "content_filter";
    case finish_reason::error: return "error";
    case finish_reason::other: return "other";
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
    /// signature, and each becomes its own thinking part.
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
    /// finish() then returns that response.
    void add(const llm_chunk& c) {
        if (c.final) {
            final_ = *c.final;
            return;
        }
        text_ += c.text;
        if (!c.thinking.empty() || !c.thinking_signature.empty() || !c.redacted_thinking.empty()) {
            // Block numbers come from a decoder that bounds them; a gap stays an empty block,
            // which finish() leaves out.
            if (c.thinking_block >= thinking_blocks_.size()) thinking_blocks_.resize(c.thinking_block + 1);
            thinking_block& b = thinking_blocks_[c.thinking_block];
            b.thinking += c.thinking;
            b.signature += c.thinking_signature;
            b.redacted += c.redacted_thinking;
            thinking_ += c.thinking;
        }
        for (const auto& d : c.tool_calls) add(d);
        if (c.usage) {
            if (!usage_) usage_.emplace();
            // Running totals; a field a report leaves at zero keeps its earlier value
            // (Anthropic reports input tokens first and output tokens at the end).
            if (c.usage->input_tokens != 0) usage_->input_tokens = c.usage->input_tokens;
            if (c.usage->output_tokens != 0) usage_->output_tokens = c.usage->output_tokens;
            if (!c.usage->model_version.empty()) usage_->model_version = c.usage->model_version;
        }
        if (c.finish) finish_ = c.finish;
        if (!c.model_version.empty()) model_version_ = c.model_version;
    }

    /// Adds one tool-call fragment (see tool_call_delta for how fragments are matched).
    /// Constant time per fragment. A fragment that would start call number
    /// max_tool_calls + 1 is dropped and fails the response (errc::bad_response).
    void add(const tool_call_delta& d) {
        std::size_t at = no_call;
        if (d.index) at = find_index(*d.index);
        else if (!d.id.empty()) at = find_id(d.id);
        else if (!calls_.empty()) at = calls_.size() - 1;
        if (at == no_call) {
            if (calls_.size() >= max_tool_calls) {
                if (error_) return; // the first failure is the cause
                std::string m = "tool call #" + std::to_string(calls_.size());
                if (d.index) m += " (index " + std::to_string(*d.index) + ")";
                else if (!d.id.empty()) m += " (id " + d.id + ")";
                fail(make_error_code(errc::bad_response),
                     m + ": a reply holds at most " + std::to_string(max_tool_calls) + " tool calls");
                return;
            }
            const bool was_indexed = indexed();
            at = calls_.size();
            calls_.push_back(call{d.index, {}, {}, {}});
            if (was_indexed) {
                if (d.index) by_index_.emplace(*d.index, static_cast<std::uint32_t>(at));
            } else if (indexed()) {
                build_indexes();
            }
        }
        call& target = calls_[at];
        if (target.id.empty() && !d.id.empty()) {
            target.id = d.id;
            if (ids_indexed_) note_id(at);
        }
        if (target.name.empty()) target.name = d.name;
        target.arguments += d.arguments;
    }

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
    llm_response finish() && {
        if (final_) return std::move(*final_);
        llm_response r;
        for (auto& b : thinking_blocks_) {
            if (!b.redacted.empty()) {
                thinking_part t{{}, {}};
                t.metadata["redacted_data"] = b.redacted;
                r.parts.emplace_back(std::move(t));
            } else if (!b.thinking.empty() || !b.signature.empty()) {
                thinking_part t{std::move(b.thinking), {}};
                if (!b.signature.empty()) t.metadata["signature"] = b.signature;
                r.parts.emplace_back(std::move(t));
            }
        }
        if (!text_.empty()) r.parts.emplace_back(text_part{std::move(text_), {}});
        for (std::size_t i = 0; i < calls_.size(); ++i) {
            call& c = calls_[i];
            if (c.id.empty()) c.id = "call-" + event::new_id();
            json::object args;
            std::string problem = check_call(c, i, args);
            if (problem.empty()) {
                r.parts.emplace_back(tool_call_part{std::move(c.id), std::move(c.name), std::move(args), {}});
            } else {
                r.invalid_tool_calls.push_back(
                    invalid_tool_call{std::move(c.id), std::move(c.name), std::move(c.arguments), std::move(problem)});
            }
        }
        r.usage = usage_;
        r.model_version = model_version_;
        if (r.usage && r.usage->model_version.empty()) r.usage->model_version = model_version_;
        if (error_) {
            r.finish = finish_reason::error;
            r.error = error_;
            r.error_message = std::move(error_message_);
            r.retry_after = retry_after_;
        } else if (finish_) {
            r.finish = *finish_;
        } else {
            r.finish = r.has_tool_calls() ? finish_reason::tool_calls : finish_reason::stop;
        }
        return r;
    }

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
    std::size_t find_id(const std::string& id) {
        if (indexed()) {
            if (!ids_indexed_) {
                for (std::size_t i = 0; i < calls_.size(); ++i)
                    if (!calls_[i].id.empty()) note_id(i);
                ids_indexed_ = true;
            }
            auto it = by_id_.find(id);
            return it == by_id_.end() ? no_call : it->second;
        }
        for (std::size_t i = calls_.size(); i-- > 0;)
            if (calls_[i].id == id) return i;
        return no_call;
    }
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
    static std::string check_call(const call& c, std::size_t position, json::object& args) {
        // Named only in a problem: a good call (nearly every one) builds no text.
        auto who = [&] {
            std::string w = "tool call ";
            if (c.name.empty()) w += "#" + std::to_string(position);
            else w += "'" + c.name + "'";
            w += " (id " + c.id + ")";
            return w;
        };
        if (c.name.empty()) return who() + ": no tool name";
        if (is_blank(c.arguments)) return {};
        boost::system::error_code ec;
        // As stored (json_limits.hpp): exact doubles, no 1e400, each key once, and nesting that
        // fits at level 5 of the event that will hold the call.
        std::string why;
        json::value v = detail::parse_precise(c.arguments, ec, {}, &why, max_json_depth - 4);
        if (ec) {
            // At most 200 bytes of the text, cut on a UTF-8 character boundary.
            std::size_t shown = std::min<std::size_t>(c.arguments.size(), 200);
            while (shown > 0 && shown < c.arguments.size() &&
                   (static_cast<unsigned char>(c.arguments[shown]) & 0xC0) == 0x80)
                --shown;
            std::string m = who() + ": arguments are not valid JSON (" + why + "): ";
            m.append(c.arguments, 0, shown);
            if (shown < c.arguments.size()) m += "...";
            return m;
        }
        if (!v.is_object()) {
            std::string kind;
            switch (v.kind()) {
            case json::kind::array: kind = "an array"; break;
            case json::kind::string: kind = "a string"; break;
            case json::kind::bool_: kind = "a boolean"; break;
            case json::kind::null: kind = "null"; break;
            default: kind = "a number"; break;
            }
            return who() + ": arguments must be a JSON object, got " + kind;
        }
        args = std::move(v.as_object());
        return {};
    }

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

#endif
