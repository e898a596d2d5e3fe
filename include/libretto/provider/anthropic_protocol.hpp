// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_ANTHROPIC_PROTOCOL_HPP
#define LIBRETTO_PROVIDER_ANTHROPIC_PROTOCOL_HPP

// The Anthropic Messages wire format (POST {base}/v1/messages), sans-io: the options, the
// request target, headers and JSON body for an llm_request, and a decoder that turns the
// streamed events (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error) into llm_chunks and a final llm_response. See
// docs/providers.md.

#include <libretto/error.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/provider/detail/chunk_parser.hpp>
#include <libretto/provider/detail/anthropic_message.hpp>
#include <libretto/provider/detail/encode.hpp>
#include <libretto/provider/detail/shape_reader.hpp>
#include <libretto/provider/detail/text.hpp>
#include <libretto/provider/http_header.hpp>
#include <libretto/provider/provider_error.hpp>
#include <libretto/provider/sampling.hpp>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Configuration of an Anthropic Messages endpoint. Plain values; from_environment() fills
/// the usual variables.
struct anthropic_options {
    /// Without the API version, as the Anthropic SDKs take it: requests go to
    /// {base_url}/v1/messages.
    std::string base_url = "https://api.anthropic.com";
    std::string api_key{};    ///< sent as x-api-key
    std::string auth_token{}; ///< sent as "Authorization: Bearer" (gateways); either or both may be empty
    std::string model{};      ///< llm_request::model overrides it
    std::string anthropic_version = "2023-06-01";
    std::vector<std::string> betas{}; ///< anthropic-beta values, sent comma-separated
    http_headers extra_headers{};
    /// max_tokens is required by the API: this is sent unless the request's
    /// generation_options::max_output_tokens says otherwise.
    std::int64_t max_tokens = 4096;
    /// Extended thinking: {"type": "enabled", "budget_tokens": N} (at least 1024, below
    /// max_tokens). Unset: no thinking.
    std::optional<std::int64_t> thinking_budget_tokens{};
    bool stream = true;
    /// Members merged into the request body last (they win), e.g. {"top_k": 5} or a
    /// "metadata" object.
    json::object extra_body{};
    /// Which sampling parameters each model takes (docs/providers.md, "Sampling parameters"):
    /// from Claude 4.5 (and Opus 4.1) temperature or top_p, not both; Opus 4.7 neither. With
    /// thinking on, a temperature other than 1 and a top_p below 0.95 are not taken either.
    sampling_options sampling{.rules = anthropic_sampling_rules()};

    /// `defaults` with ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN and
    /// ANTHROPIC_MODEL applied where set and not empty.
    static anthropic_options from_environment() { return from_environment(anthropic_options{}); }
    static anthropic_options from_environment(anthropic_options defaults) {
        if (auto v = detail::env("ANTHROPIC_BASE_URL"); !v.empty()) defaults.base_url = v;
        if (auto v = detail::env("ANTHROPIC_API_KEY"); !v.empty()) defaults.api_key = v;
        if (auto v = detail::env("ANTHROPIC_AUTH_TOKEN"); !v.empty()) defaults.auth_token = v;
        if (auto v = detail::env("ANTHROPIC_MODEL"); !v.empty()) defaults.model = v;
        return defaults;
    }
};

/// The request target: the base URL's path + "/v1/messages" (+ its query).
inline std::string request_target(const anthropic_options& o) { return detail::join_target(o.base_url, "/v1/messages"); }

/// The header fields to send (lower-case names): x-api-key and/or authorization (those
/// set), anthropic-version, anthropic-beta (if any), content-type, accept
/// (text/event-stream when streaming), then the extra headers.
inline http_headers request_headers(const anthropic_options& o) {
    http_headers h;
    h.reserve(6 + o.extra_headers.size());
    if (!o.api_key.empty()) h.push_back({"x-api-key", o.api_key});
    if (!o.auth_token.empty()) h.push_back({"authorization", "Bearer " + o.auth_token});
    h.push_back({"anthropic-version", o.anthropic_version});
    if (!o.betas.empty()) {
        std::string b;
        for (const auto& x : o.betas) {
            if (!b.empty()) b += ',';
            b += x;
        }
        h.push_back({"anthropic-beta", std::move(b)});
    }
    h.push_back({"content-type", "application/json"});
    h.push_back({"accept", o.stream ? "text/event-stream" : "application/json"});
    h.insert(h.end(), o.extra_headers.begin(), o.extra_headers.end());
    return h;
}


/// The JSON body for `req`. Throws system_error(errc::invalid_argument) naming the message
/// and part for what the API would reject: a tool call without id or name, a tool response
/// without a call id, a file without data, a tool without a name, max_tokens < 1.
///
/// Mapping: system_instruction → "system"; user text/data → text blocks, files → image or
/// document blocks (base64 or url source); assistant → signed thinking blocks and
/// redacted_thinking blocks (thinking parts with metadata "redacted_data"), text,
/// tool_use (input = args); tool messages → a user message with tool_result blocks first
/// (content as text, is_error for failures), then any other parts; tools → name,
/// description, input_schema; output_schema → output_config.format json_schema;
/// options → max_tokens (default from the options), temperature, top_p, stop_sequences
/// (seed has no Anthropic equivalent and is not sent).
inline std::string encode_request(const llm_request& req, const anthropic_options& opts) {
    json::monotonic_resource mr;
    json::storage_ptr sp(&mr);
    json::object body(sp);
    const std::string& model = req.model.empty() ? opts.model : req.model;
    if (!model.empty()) body["model"] = model;
    const std::int64_t max_tokens = req.options.max_output_tokens.value_or(opts.max_tokens);
    if (max_tokens < 1)
        detail::bad_request("max_tokens must be at least 1 (got " + std::to_string(max_tokens) + ")");
    body["max_tokens"] = max_tokens;
    if (!req.system_instruction.empty()) body["system"] = req.system_instruction;

    json::array messages(sp);
    for (std::size_t i = 0; i < req.messages.size(); ++i) detail::encode_anthropic_message(req.messages[i], i, messages);
    body["messages"] = std::move(messages);

    if (!req.tools.empty()) {
        json::array tools(sp);
        for (std::size_t i = 0; i < req.tools.size(); ++i) {
            const tool_declaration& t = req.tools[i];
            if (t.name.empty()) detail::bad_request("tool #" + std::to_string(i) + ": no name");
            json::object tool(sp);
            tool["name"] = t.name;
            if (!t.description.empty()) tool["description"] = t.description;
            tool["input_schema"] = detail::tool_schema(t, sp);
            tools.emplace_back(std::move(tool));
        }
        body["tools"] = std::move(tools);
    }
    if (req.output_schema) {
        json::object format(sp);
        format["type"] = "json_schema";
        format["schema"] = json::object(*req.output_schema, sp);
        json::object config(sp);
        config["format"] = std::move(format);
        body["output_config"] = std::move(config);
    }
    const generation_options& g = req.options;
    sampling_support support = find_sampling_support(opts.sampling, model);
    if (opts.thinking_budget_tokens && !opts.sampling.support) {
        // Extended thinking takes the default temperature and a top_p from 0.95 to 1 only.
        if (g.temperature && *g.temperature != 1.0) support.temperature = false;
        if (g.top_p && *g.top_p < 0.95) support.top_p = false;
    }
    const auto sampling = detail::choose_sampling(g, opts.sampling, model, support);
    if (sampling.temperature) body["temperature"] = *sampling.temperature;
    if (sampling.top_p) body["top_p"] = *sampling.top_p;
    if (!g.stop_sequences.empty()) {
        json::array stop(sp);
        for (const auto& s : g.stop_sequences) stop.emplace_back(s);
        body["stop_sequences"] = std::move(stop);
    }
    if (opts.thinking_budget_tokens) {
        json::object thinking(sp);
        thinking["type"] = "enabled";
        thinking["budget_tokens"] = *opts.thinking_budget_tokens;
        body["thinking"] = std::move(thinking);
    }
    if (opts.stream) body["stream"] = true;
    for (const auto& kv : opts.extra_body) body[kv.key()] = json::value(kv.value(), sp);
    return stringify(body);
}

namespace detail {

inline finish_reason anthropic_stop_reason(std::string_view r) noexcept {
    if (r == "end_turn" || r == "stop_sequence") return finish_reason::stop;
    if (r == "max_tokens" || r == "model_context_window_exceeded") return finish_reason::length;
    if (r == "tool_use") return finish_reason::tool_calls;
    if (r == "refusal") return finish_reason::refusal;
    return finish_reason::other; // pause_turn, and stop reasons added later
}

/// Anthropic's usage object: input counts cache reads and writes too (they all fill the
/// context window), the sum saturated at INT64_MAX; a negative count is a bad reply. Counts
/// are cumulative; a field the object leaves out keeps its value in `so_far` (message_delta
/// may carry only output_tokens, and its 0 is a real 0).
template <class Where>
std::optional<usage> anthropic_usage(const json::object& u, shape_reader& shape, Where&& where, const usage& so_far = {}) {
    usage x = so_far;
    x.model_version.clear();
    if (u.contains("input_tokens") || u.contains("cache_creation_input_tokens") || u.contains("cache_read_input_tokens"))
        x.input_tokens = saturating_add(saturating_add(shape.count(u, "input_tokens", where).value_or(0),
                                                       shape.count(u, "cache_creation_input_tokens", where).value_or(0)),
                                        shape.count(u, "cache_read_input_tokens", where).value_or(0));
    if (auto out = shape.count(u, "output_tokens", where)) x.output_tokens = *out;
    if (!shape.ok()) return std::nullopt;
    return x;
}

} // namespace detail

/// Decodes a streamed Messages response, one SSE event at a time (sans-io); used like
/// openai_stream_decoder:
///
///     anthropic_stream_decoder d;
///     for each SSE event (name, data):
///         llm_chunk c = d.feed(name, data);
///         if (!c.empty()) forward(std::move(c));
///         if (d.done()) break;
///     forward(llm_chunk::last(d.finish()));
///
/// The event type is read from the data's "type" (the SSE event name when it has none).
/// Text, thinking and signature deltas (each tagged with its thinking block's number, so
/// that several blocks stay apart), redacted_thinking blocks (their data, whole at block
/// start), tool_use blocks (id and name at block start, the
/// input's partial JSON as argument fragments under the block's index) and usage
/// (message_start's input, message_delta's output) become chunk members; `ping` and event,
/// block and delta types this decoder does not know are ignored, as the API's versioning
/// policy asks. Failures, kept with what arrived before them: an `error` event (classified
/// like an HTTP error: overloaded_error → transient, ...), a payload that is not JSON or
/// not the event's shape (errc::bad_response naming the event and field), a stream that
/// ended before message_stop (errc::bad_response), or the transport's, given to fail().
class anthropic_stream_decoder {
public:
    /// Decodes a whole (non-streamed) reply: decode_anthropic_response(body).
    static llm_response decode_body(std::string_view body);

    /// Decodes one SSE event. Returns the deltas it carried (empty() for none).
    llm_chunk feed(std::string_view event_name, std::string_view data) {
        llm_chunk c;
        if (done()) return c;
        data = detail::trim(data);
        if (data.empty()) return c;
        ++events_;
        boost::system::error_code ec;
        json::value v = parser_.parse(data, ec);
        if (ec) {
            if (event_name == "error") {
                provider_error_body b;
                b.message = detail::bounded_utf8(data, max_provider_message_bytes);
                record(classify_stream_error(b));
                return c;
            }
            fail(make_error_code(errc::bad_response), detail::bad_json_message("Anthropic stream: event", events_, ec, data));
            return c;
        }
        const json::object* root = v.if_object();
        if (!root) {
            fail(make_error_code(errc::bad_response), "Anthropic stream: event #" + std::to_string(events_) +
                                                          " is not a JSON object: " + detail::bounded_utf8(data, 200));
            return c;
        }
        std::string_view type = detail::string_member(*root, "type");
        if (event_name == "error" && type != "error") {
            // An error event whose JSON is not Anthropic's {"type":"error","error":{...}}:
            // llama.cpp's /v1/messages writes its bare {"code","message","type"} object.
            provider_error_body b;
            if (detail::member(*root, "error")) b = read_error_value(*root);
            else detail::read_error_object(*root, b);
            if (b.message.empty()) b.message = detail::bounded_utf8(data, max_provider_message_bytes);
            record(classify_stream_error(b));
            return c;
        }
        if (type.empty()) type = event_name;
        detail::shape_reader shape;
        if (!read_event(type, *root, c, shape)) {
            if (!failed_)
                fail(make_error_code(errc::bad_response), "Anthropic stream: event #" + std::to_string(events_) + " (" +
                                                              std::string(type) + "): " + shape.problem());
            return llm_chunk{};
        }
        if (!c.empty()) acc_.add(c);
        return c; // at most max_tool_calls blocks, so the accumulator refuses no call
    }

    /// Records a failure from outside the stream (the transport's): finish() reports it.
    void fail(boost::system::error_code ec, std::string message,
              std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
        if (failed_) return;
        failed_ = true;
        acc_.fail(ec, std::move(message), retry_after);
    }

    /// True once nothing more is expected: message_stop arrived, or the stream failed.
    bool done() const noexcept { return stopped_ || failed_; }
    bool failed() const noexcept { return failed_; }
    std::size_t events() const noexcept { return events_; }

    /// The final response (call once, after the stream ended or done() became true).
    llm_response finish() {
        if (!failed_ && !stopped_)
            fail(make_error_code(errc::bad_response), "Anthropic stream ended before message_stop (after " +
                                                          std::to_string(events_) + " events): the answer is incomplete");
        return std::move(acc_).finish();
    }

private:
    enum class block_kind : unsigned char { unknown, text, thinking, tool_use };
    struct block {
        block_kind kind = block_kind::unknown;
        std::size_t index = 0;
        bool got_input = false;  ///< input_json_delta seen
        std::string start_input; ///< a non-empty input given whole at block start
        std::size_t thinking = 0; ///< thinking blocks: its number among them (llm_chunk::thinking_block)
    };
    void record(const provider_error& e) { fail(e.code, e.describe(), e.retry_after); }

    /// The thinking block a thinking or signature delta adds to: its block's, or (a delta on
    /// a block that did not start as thinking) the newest thinking block.
    std::size_t thinking_number(const block& b) const noexcept {
        if (b.kind == block_kind::thinking) return b.thinking;
        return thinking_blocks_ ? thinking_blocks_ - 1 : 0;
    }

    template <class Where>
    block* block_at(const json::object& o, detail::shape_reader& shape, Where&& where, bool create) {
        auto index = shape.count(o, "index", where);
        if (!shape.ok()) return nullptr;
        if (!index) {
            shape.set("index: required field is missing");
            return nullptr;
        }
        if (static_cast<std::uint64_t>(*index) >= max_tool_calls) { // garbage, not a reason to allocate
            shape.set("index: " + std::to_string(*index) + " is out of range (at most " + std::to_string(max_tool_calls) +
                      " content blocks, indexes 0 to " + std::to_string(max_tool_calls - 1) + ")");
            return nullptr;
        }
        const auto i = static_cast<std::size_t>(*index);
        if (i >= blocks_.size()) {
            if (!create) return &unknown_;
            blocks_.resize(i + 1);
        }
        return &blocks_[i];
    }

    bool read_event(std::string_view type, const json::object& root, llm_chunk& c, detail::shape_reader& shape) {
        auto at_root = [] { return std::string(); };
        if (type == "message_start") {
            auto at_message = [] { return std::string("message"); };
            if (const auto* m = shape.obj(root, "message", at_root)) {
                if (const auto* model = shape.str(*m, "model", at_message); model && !model->empty())
                    c.model_version.assign(model->data(), model->size());
                auto at_usage = [] { return std::string("message.usage"); };
                if (const auto* u = shape.obj(*m, "usage", at_message)) {
                    c.usage = detail::anthropic_usage(*u, shape, at_usage, usage_);
                    if (c.usage) usage_ = *c.usage;
                }
            }
            return shape.ok();
        }
        if (type == "content_block_start") {
            block* b = block_at(root, shape, at_root, true);
            if (!b) return false;
            auto at_block = [] { return std::string("content_block"); };
            const auto* cb = shape.obj(root, "content_block", at_root);
            if (!cb) {
                if (shape.ok()) shape.set("content_block: required field is missing");
                return false;
            }
            std::string_view kind = detail::string_member(*cb, "type");
            *b = block{};
            b->index = static_cast<std::size_t>(b - blocks_.data());
            if (kind == "text") {
                b->kind = block_kind::text;
                if (const auto* s = shape.str(*cb, "text", at_block)) c.text.append(s->data(), s->size());
            } else if (kind == "thinking") {
                b->kind = block_kind::thinking;
                b->thinking = thinking_blocks_++;
                c.thinking_block = b->thinking;
                if (const auto* s = shape.str(*cb, "thinking", at_block)) c.thinking.append(s->data(), s->size());
                if (const auto* s = shape.str(*cb, "signature", at_block)) c.thinking_signature.append(s->data(), s->size());
            } else if (kind == "redacted_thinking") {
                // Complete at block start (no deltas); goes back unmodified with the reply.
                b->kind = block_kind::thinking;
                b->thinking = thinking_blocks_++;
                c.thinking_block = b->thinking;
                const auto* s = shape.str(*cb, "data", at_block);
                if (shape.ok() && (!s || s->empty())) shape.set("content_block.data: a redacted_thinking block without data");
                if (s) c.redacted_thinking.assign(s->data(), s->size());
            } else if (kind == "tool_use") {
                b->kind = block_kind::tool_use;
                tool_call_delta d;
                d.index = b->index;
                if (const auto* s = shape.str(*cb, "id", at_block)) d.id.assign(s->data(), s->size());
                if (const auto* s = shape.str(*cb, "name", at_block)) d.name.assign(s->data(), s->size());
                if (const auto* in = shape.obj(*cb, "input", at_block); in && !in->empty()) b->start_input = json::serialize(*in);
                c.tool_calls.push_back(std::move(d));
            }
            // server_tool_use, web_search_tool_result, ...: not ours to show.
            return shape.ok();
        }
        if (type == "content_block_delta") {
            block* b = block_at(root, shape, at_root, false);
            if (!b) return false;
            auto at_delta = [] { return std::string("delta"); };
            const auto* d = shape.obj(root, "delta", at_root);
            if (!d) {
                if (shape.ok()) shape.set("delta: required field is missing");
                return false;
            }
            std::string_view kind = detail::string_member(*d, "type");
            if (kind == "text_delta") {
                if (const auto* s = shape.str(*d, "text", at_delta)) c.text.append(s->data(), s->size());
            } else if (kind == "thinking_delta") {
                c.thinking_block = thinking_number(*b);
                if (const auto* s = shape.str(*d, "thinking", at_delta)) c.thinking.append(s->data(), s->size());
            } else if (kind == "signature_delta") {
                c.thinking_block = thinking_number(*b);
                if (const auto* s = shape.str(*d, "signature", at_delta)) c.thinking_signature.append(s->data(), s->size());
            } else if (kind == "input_json_delta") {
                const auto* s = shape.str(*d, "partial_json", at_delta);
                if (s && b->kind == block_kind::tool_use) {
                    b->got_input = true;
                    if (!s->empty())
                        c.tool_calls.push_back(tool_call_delta{b->index, {}, {},
                                                               std::string(s->data(), s->size())});
                }
            }
            // citations_delta and later delta types: ignored.
            return shape.ok();
        }
        if (type == "content_block_stop") {
            block* b = block_at(root, shape, at_root, false);
            if (!b) return false;
            if (b->kind == block_kind::tool_use && !b->got_input && !b->start_input.empty()) {
                // A server that gave the whole input at block start and no deltas.
                c.tool_calls.push_back(
                    tool_call_delta{b->index, {}, {}, std::move(b->start_input)});
                b->start_input.clear();
            }
            return true;
        }
        if (type == "message_delta") {
            auto at_delta = [] { return std::string("delta"); };
            if (const auto* d = shape.obj(root, "delta", at_root))
                if (const auto* r = shape.str(*d, "stop_reason", at_delta)) c.finish = detail::anthropic_stop_reason(*r);
            auto at_usage = [] { return std::string("usage"); };
            if (const auto* u = shape.obj(root, "usage", at_root)) {
                c.usage = detail::anthropic_usage(*u, shape, at_usage, usage_);
                if (c.usage) usage_ = *c.usage;
            }
            return shape.ok();
        }
        if (type == "message_stop") {
            stopped_ = true;
            return true;
        }
        if (type == "error") {
            record(classify_stream_error(read_error_value(root)));
            return false;
        }
        return true; // ping, and event types added later
    }

    detail::chunk_parser parser_;
    llm_response_accumulator acc_;
    std::vector<block> blocks_;
    std::size_t thinking_blocks_ = 0; ///< thinking blocks started so far
    usage usage_{};                   ///< the counts reported so far
    block unknown_; // a block that never started: its text deltas count, its input deltas do not
    std::size_t events_ = 0;
    bool stopped_ = false;
    bool failed_ = false;
};

/// Decodes a whole (non-streamed) Messages response body: for tests and servers that
/// ignore `stream: true`. An error body ({"type": "error", ...}) is classified; a body
/// that is not a message gives errc::bad_response naming what is wrong.
inline llm_response decode_anthropic_response(std::string_view body) {
    using detail::shape_reader;
    boost::system::error_code ec;
    json::value v = json::parse(body, ec);
    if (ec)
        return llm_response::failure(make_error_code(errc::bad_response), "Anthropic response is not valid JSON (" +
                                                                              ec.message() + "): " + detail::bounded_utf8(body, 200));
    const json::object* root = v.if_object();
    if (!root)
        return llm_response::failure(make_error_code(errc::bad_response),
                                     "Anthropic response is not a JSON object: " + detail::bounded_utf8(body, 200));
    if (detail::string_member(*root, "type") == "error" || root->contains("error"))
        return classify_stream_error(read_error_value(v)).to_response();
    shape_reader shape;
    auto at_root = [] { return std::string(); };
    const auto* content = shape.arr(*root, "content", at_root);
    if (!content) {
        return llm_response::failure(make_error_code(errc::bad_response),
                                     "Anthropic response: " + (shape.ok() ? std::string("content: required field is missing") : shape.problem()));
    }
    if (content->size() > max_tool_calls) // the stream's bound on block indexes
        return llm_response::failure(make_error_code(errc::bad_response), "Anthropic response: content: " + std::to_string(content->size()) +
                                                                              " blocks, more than " + std::to_string(max_tool_calls));
    llm_chunk c;
    llm_response_accumulator acc;
    std::size_t thinking_blocks = 0;
    if (const auto* m = shape.str(*root, "model", at_root)) c.model_version.assign(m->data(), m->size());
    for (std::size_t i = 0; i < content->size(); ++i) {
        auto at_block = [i] { return "content[" + std::to_string(i) + "]"; };
        const auto* b = (*content)[i].if_object();
        if (!b) {
            shape.set(at_block() + ": expected object");
            break;
        }
        std::string_view kind = detail::string_member(*b, "type");
        if (kind == "text") {
            if (const auto* s = shape.str(*b, "text", at_block)) c.text.append(s->data(), s->size());
        } else if (kind == "thinking" || kind == "redacted_thinking") {
            // A chunk per thinking block: each keeps its own signature (or redacted data).
            llm_chunk t;
            t.thinking_block = thinking_blocks++;
            if (kind == "thinking") {
                if (const auto* s = shape.str(*b, "thinking", at_block)) t.thinking.assign(s->data(), s->size());
                if (const auto* s = shape.str(*b, "signature", at_block)) t.thinking_signature.assign(s->data(), s->size());
            } else {
                const auto* s = shape.str(*b, "data", at_block);
                if (shape.ok() && (!s || s->empty())) shape.set(at_block() + ".data: a redacted_thinking block without data");
                if (s) t.redacted_thinking.assign(s->data(), s->size());
            }
            acc.add(t);
        } else if (kind == "tool_use") {
            tool_call_delta d;
            d.index = i;
            if (const auto* s = shape.str(*b, "id", at_block)) d.id.assign(s->data(), s->size());
            if (const auto* s = shape.str(*b, "name", at_block)) d.name.assign(s->data(), s->size());
            if (const auto* in = detail::member(*b, "input"); in && !in->is_null()) d.arguments = json::serialize(*in);
            c.tool_calls.push_back(std::move(d));
        }
    }
    if (const auto* r = shape.str(*root, "stop_reason", at_root)) c.finish = detail::anthropic_stop_reason(*r);
    auto at_usage = [] { return std::string("usage"); };
    if (const auto* u = shape.obj(*root, "usage", at_root)) c.usage = detail::anthropic_usage(*u, shape, at_usage);
    if (!shape.ok()) return llm_response::failure(make_error_code(errc::bad_response), "Anthropic response: " + shape.problem());
    acc.add(c);
    return std::move(acc).finish();
}

inline llm_response anthropic_stream_decoder::decode_body(std::string_view body) { return decode_anthropic_response(body); }

} // namespace libretto

#endif
