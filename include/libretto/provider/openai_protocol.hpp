// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_OPENAI_PROTOCOL_HPP
#define LIBRETTO_PROVIDER_OPENAI_PROTOCOL_HPP

// The OpenAI Chat Completions wire format (POST {base}/chat/completions), sans-io: the
// options, the request target, headers and JSON body for an llm_request, and a decoder
// that turns the streamed chunks (one SSE event at a time) into llm_chunks and a final
// llm_response. Spoken by OpenAI and by the OpenAI-compatible servers (vLLM, llama.cpp
// server, Ollama, LM Studio, OpenRouter, ...). See docs/providers.md.

#include <libretto/error.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/provider/detail/chunk_parser.hpp>
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

/// Which field carries generation_options::max_output_tokens.
enum class openai_max_tokens_field {
    max_completion_tokens, ///< OpenAI's current name (required by its reasoning models)
    max_tokens,            ///< the older name, for servers that know only it
};

/// Configuration of an OpenAI-compatible endpoint. Plain values; from_environment() fills
/// the usual variables.
struct openai_options {
    /// Up to and including the API version, as the OpenAI SDKs take it: requests go to
    /// {base_url}/chat/completions. A query string stays at the end (Azure's api-version).
    std::string base_url = "https://api.openai.com/v1";
    std::string api_key{};      ///< sent as "Authorization: Bearer"; empty sends none (local servers)
    std::string model{};        ///< llm_request::model overrides it; both empty: no "model" field
    std::string organization{}; ///< OpenAI-Organization header, if set
    std::string project{};      ///< OpenAI-Project header, if set
    http_headers extra_headers{};
    bool stream = true;
    /// stream_options.include_usage: a last chunk with the token usage (a few old servers
    /// reject stream_options).
    bool include_usage = true;
    openai_max_tokens_field max_tokens_field = openai_max_tokens_field::max_completion_tokens;
    /// The role of the system instruction: "system", or "developer" for OpenAI's o-series.
    std::string system_role = "system";
    /// reasoning_effort ("low", "medium", "high") for reasoning models; unset sends nothing.
    std::optional<std::string> reasoning_effort{};
    /// response_format.json_schema.strict: OpenAI then enforces the schema exactly, but only
    /// accepts schemas with every property required and additionalProperties false.
    bool strict_output_schema = false;
    std::string output_schema_name = "output";
    /// Members merged into the request body last (they win): a server's own parameters,
    /// e.g. vLLM's {"top_k": 20} or llama.cpp's {"cache_prompt": true}.
    json::object extra_body{};
    /// Which sampling parameters each model takes (docs/providers.md, "Sampling parameters"):
    /// OpenAI's reasoning models (o1, o3, o4, gpt-5) take neither temperature nor top_p.
    sampling_options sampling{.rules = openai_sampling_rules()};

    /// `defaults` with OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, OPENAI_ORG_ID and
    /// OPENAI_PROJECT_ID applied where set and not empty.
    static openai_options from_environment() { return from_environment(openai_options{}); }
    static openai_options from_environment(openai_options defaults) {
        if (auto v = detail::env("OPENAI_BASE_URL"); !v.empty()) defaults.base_url = v;
        if (auto v = detail::env("OPENAI_API_KEY"); !v.empty()) defaults.api_key = v;
        if (auto v = detail::env("OPENAI_MODEL"); !v.empty()) defaults.model = v;
        if (auto v = detail::env("OPENAI_ORG_ID"); !v.empty()) defaults.organization = v;
        if (auto v = detail::env("OPENAI_PROJECT_ID"); !v.empty()) defaults.project = v;
        return defaults;
    }
};

/// The request target: the base URL's path + "/chat/completions" (+ its query).
inline std::string request_target(const openai_options& o) { return detail::join_target(o.base_url, "/chat/completions"); }

/// The header fields to send (lower-case names): authorization (if a key is set),
/// content-type, accept (text/event-stream when streaming), openai-organization and
/// openai-project (if set), then the extra headers.
inline http_headers request_headers(const openai_options& o) {
    http_headers h;
    h.reserve(5 + o.extra_headers.size());
    if (!o.api_key.empty()) h.push_back({"authorization", "Bearer " + o.api_key});
    h.push_back({"content-type", "application/json"});
    h.push_back({"accept", o.stream ? "text/event-stream" : "application/json"});
    if (!o.organization.empty()) h.push_back({"openai-organization", o.organization});
    if (!o.project.empty()) h.push_back({"openai-project", o.project});
    h.insert(h.end(), o.extra_headers.begin(), o.extra_headers.end());
    return h;
}

namespace detail {

inline void openai_content_part(const part& p, json::array& out, bool user, std::size_t mi, std::size_t pi) {
    json::storage_ptr sp = out.storage();
    auto text = [&](std::string_view t) {
        json::object o(sp);
        o["type"] = "text";
        o["text"] = t;
        out.emplace_back(std::move(o));
    };
    if (const auto* t = std::get_if<text_part>(&p)) {
        if (!t->text.empty()) text(t->text);
    } else if (const auto* d = std::get_if<data_part>(&p)) {
        text(stringify(d->data));
    } else if (const auto* f = std::get_if<file_part>(&p)) {
        if (!user) return; // OpenAI takes files from the user only
        if (!f->uri && !f->inline_bytes) bad_request(where(mi, pi) + ": file part without uri or inline_bytes");
        const std::string mime = f->mime_type.value_or("application/octet-stream");
        json::object o(sp);
        if (f->inline_bytes && mime_is(f->mime_type, "audio/")) {
            o["type"] = "input_audio";
            json::object a(sp);
            a["data"] = *f->inline_bytes;
            a["format"] = std::string_view(mime).substr(6) == "mpeg" ? "mp3" : std::string_view(mime).substr(6);
            o["input_audio"] = std::move(a);
        } else if (mime_is(f->mime_type, "image/") || (!f->mime_type && f->uri)) {
            o["type"] = "image_url";
            json::object u(sp);
            u["url"] = f->inline_bytes ? "data:" + mime + ";base64," + *f->inline_bytes : *f->uri;
            o["image_url"] = std::move(u);
        } else if (f->inline_bytes) {
            o["type"] = "file";
            json::object file(sp);
            file["filename"] = f->name.value_or("file");
            file["file_data"] = "data:" + mime + ";base64," + *f->inline_bytes;
            o["file"] = std::move(file);
        } else {
            // A non-image URL: Chat Completions cannot fetch it; name it instead.
            text("[file " + f->name.value_or(*f->uri) + ": " + *f->uri + "]");
            return;
        }
        out.emplace_back(std::move(o));
    }
    // thinking_part: OpenAI-compatible servers take no reasoning back.
}

/// A content array of one text part becomes a plain string (what every server accepts).
inline json::value openai_content(json::array parts) {
    if (parts.size() == 1) {
        const json::object& o = parts[0].as_object();
        const auto* type = o.at("type").if_string();
        if (type && *type == "text") return o.at("text");
    }
    return parts;
}

inline void encode_openai_message(const message& m, std::size_t mi, json::array& out) {
    json::storage_ptr sp = out.storage();
    if (m.role == message_role::assistant) {
        json::array content(sp);
        json::array calls(sp);
        for (std::size_t pi = 0; pi < m.parts.size(); ++pi) {
            const part& p = m.parts[pi];
            if (const auto* c = std::get_if<tool_call_part>(&p)) {
                if (c->tool_call_id.empty()) bad_request(where(mi, pi) + ": tool call without an id");
                if (c->tool_name.empty()) bad_request(where(mi, pi) + ": tool call without a tool name");
                json::object call(sp);
                call["id"] = c->tool_call_id;
                call["type"] = "function";
                json::object fn(sp);
                fn["name"] = c->tool_name;
                // A call whose arguments did not parse is sent back as the model wrote it,
                // so it sees its mistake next to the error result.
                auto raw = c->metadata.find("invalid_arguments");
                if (c->args.empty() && raw != c->metadata.end() && raw->value().is_string())
                    fn["arguments"] = raw->value().get_string();
                else
                    fn["arguments"] = stringify(c->args);
                call["function"] = std::move(fn);
                calls.emplace_back(std::move(call));
            } else {
                openai_content_part(p, content, false, mi, pi);
            }
        }
        if (content.empty() && calls.empty()) return;
        json::object msg(sp);
        msg["role"] = "assistant";
        if (content.empty()) msg["content"] = nullptr;
        else msg["content"] = openai_content(std::move(content));
        if (!calls.empty()) msg["tool_calls"] = std::move(calls);
        out.emplace_back(std::move(msg));
        return;
    }
    // user and tool messages: each tool response is a `tool` message; the other parts follow
    // as one user message (a tool message carries text only).
    json::array content(sp);
    for (std::size_t pi = 0; pi < m.parts.size(); ++pi) {
        const part& p = m.parts[pi];
        if (const auto* r = std::get_if<tool_response_part>(&p)) {
            if (r->tool_call_id.empty()) bad_request(where(mi, pi) + ": tool response without a tool call id");
            json::object msg(sp);
            msg["role"] = "tool";
            msg["tool_call_id"] = r->tool_call_id;
            msg["content"] = tool_result_text(*r);
            out.emplace_back(std::move(msg));
        } else if (!std::holds_alternative<tool_call_part>(p)) {
            openai_content_part(p, content, true, mi, pi);
        }
    }
    if (content.empty()) return;
    json::object msg(sp);
    msg["role"] = "user";
    msg["content"] = openai_content(std::move(content));
    out.emplace_back(std::move(msg));
}

} // namespace detail

/// The JSON body for `req`. Throws system_error(errc::invalid_argument) naming the message
/// and part for what no provider would accept: a tool call without id or name, a tool
/// response without a call id, a file without data, a tool without a name.
///
/// Mapping: system_instruction → first message with `system_role`; user text/data/files →
/// a user message (one text part: a string; else content parts: text, image_url,
/// input_audio, file); assistant → text content + tool_calls (arguments as JSON text);
/// each tool_response → a `tool` message (string result as is, else JSON, failures
/// {"error": ...}); thinking parts are not sent; tools → function tools; output_schema →
/// response_format json_schema; options → temperature, top_p, max_completion_tokens (or
/// max_tokens), stop, seed.
inline std::string encode_request(const llm_request& req, const openai_options& opts) {
    json::monotonic_resource mr;
    json::storage_ptr sp(&mr);
    json::object body(sp);
    const std::string& model = req.model.empty() ? opts.model : req.model;
    if (!model.empty()) body["model"] = model;

    json::array messages(sp);
    if (!req.system_instruction.empty()) {
        json::object sys(sp);
        sys["role"] = opts.system_role.empty() ? std::string_view("system") : std::string_view(opts.system_role);
        sys["content"] = req.system_instruction;
        messages.emplace_back(std::move(sys));
    }
    for (std::size_t i = 0; i < req.messages.size(); ++i) detail::encode_openai_message(req.messages[i], i, messages);
    body["messages"] = std::move(messages);

    if (!req.tools.empty()) {
        json::array tools(sp);
        for (std::size_t i = 0; i < req.tools.size(); ++i) {
            const tool_declaration& t = req.tools[i];
            if (t.name.empty()) detail::bad_request("tool #" + std::to_string(i) + ": no name");
            json::object fn(sp);
            fn["name"] = t.name;
            if (!t.description.empty()) fn["description"] = t.description;
            fn["parameters"] = detail::tool_schema(t, sp);
            json::object tool(sp);
            tool["type"] = "function";
            tool["function"] = std::move(fn);
            tools.emplace_back(std::move(tool));
        }
        body["tools"] = std::move(tools);
    }
    if (req.output_schema) {
        json::object schema(sp);
        schema["name"] = opts.output_schema_name.empty() ? std::string_view("output") : std::string_view(opts.output_schema_name);
        schema["schema"] = json::object(*req.output_schema, sp);
        schema["strict"] = opts.strict_output_schema;
        json::object format(sp);
        format["type"] = "json_schema";
        format["json_schema"] = std::move(schema);
        body["response_format"] = std::move(format);
    }
    const generation_options& g = req.options;
    const auto sampling = detail::choose_sampling(g, opts.sampling, model, find_sampling_support(opts.sampling, model));
    if (sampling.temperature) body["temperature"] = *sampling.temperature;
    if (sampling.top_p) body["top_p"] = *sampling.top_p;
    if (g.max_output_tokens && *g.max_output_tokens < 1)
        detail::bad_request("generation_options.max_output_tokens must be at least 1 (got " +
                            std::to_string(*g.max_output_tokens) + ")");
    if (g.max_output_tokens)
        body[opts.max_tokens_field == openai_max_tokens_field::max_tokens ? "max_tokens" : "max_completion_tokens"] =
            *g.max_output_tokens;
    if (!g.stop_sequences.empty()) {
        json::array stop(sp);
        for (const auto& s : g.stop_sequences) stop.emplace_back(s);
        body["stop"] = std::move(stop);
    }
    if (g.seed) body["seed"] = *g.seed;
    if (opts.reasoning_effort) body["reasoning_effort"] = *opts.reasoning_effort;
    if (opts.stream) {
        body["stream"] = true;
        if (opts.include_usage) {
            json::object so(sp);
            so["include_usage"] = true;
            body["stream_options"] = std::move(so);
        }
    }
    for (const auto& kv : opts.extra_body) body[kv.key()] = json::value(kv.value(), sp);
    return stringify(body);
}

namespace detail {

inline finish_reason openai_finish_reason(std::string_view r) noexcept {
    if (r == "stop" || r == "end_turn") return finish_reason::stop;
    if (r == "length" || r == "model_context_window_exceeded") return finish_reason::length;
    if (r == "tool_calls" || r == "function_call") return finish_reason::tool_calls;
    if (r == "content_filter") return finish_reason::content_filter;
    return finish_reason::other;
}

/// Reads one chat.completion.chunk (delta_key "delta") or chat.completion ("message") into
/// `c`. Returns false with `shape.problem()` set when a member has the wrong type.
inline bool read_openai_choice_payload(const json::object& root, std::string_view delta_key, llm_chunk& c,
                                       std::string& last_model, bool& saw_finish, shape_reader& shape) {
    auto at_root = [] { return std::string(); };
    if (const auto* m = shape.str(root, "model", at_root); m && !m->empty() && std::string_view(*m) != last_model) {
        last_model.assign(m->data(), m->size());
        c.model_version = last_model;
    }
    if (const auto* choices = shape.arr(root, "choices", at_root)) {
        for (std::size_t i = 0; i < choices->size(); ++i) {
            auto at_choice = [i] { return "choices[" + std::to_string(i) + "]"; };
            const auto* choice = (*choices)[i].if_object();
            if (!choice) {
                shape.set(at_choice() + ": expected object");
                return false;
            }
            // We never ask for n > 1; a server that sends more choices gets the first.
            if (auto idx = shape.count(*choice, "index", at_choice); idx && *idx != 0) continue;
            auto at_delta = [&] { return at_choice() + "." + std::string(delta_key); };
            if (const auto* d = shape.obj(*choice, delta_key, at_choice)) {
                if (const auto* s = shape.str(*d, "content", at_delta)) c.text.append(s->data(), s->size());
                // A refusal is the answer's text; the response's finish says it was one.
                if (const auto* s = shape.str(*d, "refusal", at_delta); s && !s->empty()) {
                    c.text.append(s->data(), s->size());
                    c.finish = finish_reason::refusal;
                }
                // DeepSeek, vLLM, llama.cpp: reasoning_content; OpenRouter, Ollama: reasoning.
                if (const auto* s = shape.str(*d, "reasoning_content", at_delta)) c.thinking.append(s->data(), s->size());
                else if (const auto* s = shape.str(*d, "reasoning", at_delta)) c.thinking.append(s->data(), s->size());
                if (const auto* calls = shape.arr(*d, "tool_calls", at_delta)) {
                    for (std::size_t j = 0; j < calls->size(); ++j) {
                        auto at_call = [&] { return at_delta() + ".tool_calls[" + std::to_string(j) + "]"; };
                        const auto* call = (*calls)[j].if_object();
                        if (!call) {
                            shape.set(at_call() + ": expected object");
                            return false;
                        }
                        tool_call_delta t;
                        if (auto idx = shape.count(*call, "index", at_call)) {
                            if (static_cast<std::uint64_t>(*idx) >= max_tool_calls) {
                                shape.set(at_call() + ".index: " + std::to_string(*idx) + " is out of range (at most " +
                                          std::to_string(max_tool_calls) + " tool calls, indexes 0 to " +
                                          std::to_string(max_tool_calls - 1) + ")");
                                return false;
                            }
                            t.index = static_cast<std::size_t>(*idx);
                        } else if (delta_key == "message") { // a whole reply: position is identity
                            if (j >= max_tool_calls) {
                                shape.set(at_call() + ": more than " + std::to_string(max_tool_calls) + " tool calls");
                                return false;
                            }
                            t.index = j;
                        }
                        if (const auto* s = shape.str(*call, "id", at_call)) t.id.assign(s->data(), s->size());
                        auto at_fn = [&] { return at_call() + ".function"; };
                        if (const auto* fn = shape.obj(*call, "function", at_call)) {
                            if (const auto* s = shape.str(*fn, "name", at_fn)) t.name.assign(s->data(), s->size());
                            if (const auto* a = member(*fn, "arguments"); a && a->is_object())
                                t.arguments = json::serialize(*a); // a few servers send an object
                            else if (const auto* s = shape.str(*fn, "arguments", at_fn))
                                t.arguments.assign(s->data(), s->size());
                        }
                        c.tool_calls.push_back(std::move(t));
                    }
                }
            }
            if (const auto* r = shape.str(*choice, "finish_reason", at_choice); r && !r->empty()) { // "" means null to a few servers
                if (c.finish != finish_reason::refusal) c.finish = openai_finish_reason(*r);
                saw_finish = true;
            }
        }
    }
    if (const auto* u = shape.obj(root, "usage", at_root)) {
        auto at_usage = [] { return std::string("usage"); };
        usage x;
        x.input_tokens = shape.count(*u, "prompt_tokens", at_usage).value_or(0);
        x.output_tokens = shape.count(*u, "completion_tokens", at_usage).value_or(0);
        c.usage = x;
    }
    return shape.ok();
}

/// True if the payload is an error report rather than a chunk.
inline bool is_openai_error_payload(const json::object& root) noexcept {
    if (const auto* e = member(root, "error"); e && !e->is_null()) return true;
    return string_member(root, "object") == "error";
}

} // namespace detail

/// Decodes a streamed Chat Completions response, one SSE event at a time (sans-io):
///
///     openai_stream_decoder d;
///     for each SSE event (name, data):   // from the transport's SSE parser
///         llm_chunk c = d.feed(name, data);
///         if (!c.empty()) forward(std::move(c));
///         if (d.done()) break;
///     forward(llm_chunk::last(d.finish()));
///
/// `finish()` gives the response folded by llm_response_accumulator, or a failure that
/// keeps what arrived before it: an error event in the stream (classified like an HTTP
/// error: transient, context_overflow, ...), a chunk that is not JSON or not the
/// chunk shape (errc::bad_response naming the chunk and field), or a stream that ended
/// before `data: [DONE]` and without a finish_reason (errc::bad_response: never a silently
/// truncated answer). A transport failure is recorded with fail().
class openai_stream_decoder {
public:
    /// Decodes a whole (non-streamed) reply: decode_openai_response(body).
    static llm_response decode_body(std::string_view body);

    /// Decodes one SSE event. Returns the deltas it carried (empty() for none: [DONE], a
    /// keep-alive, an event after the end, a failure).
    llm_chunk feed(std::string_view event_name, std::string_view data) {
        llm_chunk c;
        if (done()) return c;
        data = detail::trim(data);
        if (data.empty()) return c;
        ++events_;
        if (data == "[DONE]") {
            saw_done_ = true;
            return c;
        }
        boost::system::error_code ec;
        json::value v = parser_.parse(data, ec);
        if (ec) {
            if (event_name == "error") { // a server's error event whose data is plain text
                provider_error_body b;
                b.message = detail::bounded_utf8(data, max_provider_message_bytes);
                record(classify_stream_error(b));
                return c;
            }
            fail(make_error_code(errc::bad_response), detail::bad_json_message("OpenAI stream: chunk", events_, ec, data));
            return c;
        }
        const json::object* root = v.if_object();
        if (!root) {
            fail(make_error_code(errc::bad_response),
                 "OpenAI stream: chunk #" + std::to_string(events_) + " is not a JSON object: " + detail::bounded_utf8(data, 200));
            return c;
        }
        if (detail::is_openai_error_payload(*root)) {
            record(classify_stream_error(read_error_value(v)));
            return c;
        }
        if (event_name == "error") { // the error object itself, unwrapped
            provider_error_body b;
            detail::read_error_object(*root, b);
            if (b.message.empty()) b.message = detail::bounded_utf8(data, max_provider_message_bytes);
            record(classify_stream_error(b));
            return c;
        }
        detail::shape_reader shape;
        if (!detail::read_openai_choice_payload(*root, "delta", c, model_, saw_finish_, shape)) {
            fail(make_error_code(errc::bad_response),
                 "OpenAI stream: chunk #" + std::to_string(events_) + ": " + shape.problem());
            return llm_chunk{};
        }
        if (c.finish == finish_reason::refusal) refused_ = true;
        else if (refused_ && c.finish) c.finish = finish_reason::refusal; // "stop" after a refusal
        acc_.add(c);
        if (acc_.failed()) { // more calls (by id, without an index) than a reply may hold
            failed_ = true;
            return llm_chunk{};
        }
        return c;
    }

    /// Records a failure from outside the stream (the transport's): finish() reports it.
    void fail(boost::system::error_code ec, std::string message,
              std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
        if (failed_) return; // the first failure is the cause
        failed_ = true;
        acc_.fail(ec, std::move(message), retry_after);
    }

    /// True once nothing more is expected: `[DONE]` arrived, or the stream failed.
    bool done() const noexcept { return saw_done_ || failed_; }
    bool failed() const noexcept { return failed_; }
    /// Events fed so far (the number used in error messages).
    std::size_t events() const noexcept { return events_; }

    /// The final response (call once, after the stream ended or done() became true).
    llm_response finish() {
        if (!failed_ && !saw_done_ && !saw_finish_)
            fail(make_error_code(errc::bad_response), "OpenAI stream ended before [DONE] and without a finish_reason (after " +
                                                          std::to_string(events_) + " events): the answer is incomplete");
        return std::move(acc_).finish();
    }

private:
    void record(const provider_error& e) { fail(e.code, e.describe(), e.retry_after); }

    detail::chunk_parser parser_;
    llm_response_accumulator acc_;
    std::string model_;
    std::size_t events_ = 0;
    bool saw_done_ = false;
    bool saw_finish_ = false;
    bool refused_ = false;
    bool failed_ = false;
};

/// Decodes a whole (non-streamed) chat.completion body: for servers that ignore
/// `stream: true`, and tests. An error body is classified like a stream error; a body that
/// is not a completion gives errc::bad_response naming what is wrong.
inline llm_response decode_openai_response(std::string_view body) {
    boost::system::error_code ec;
    json::value v = json::parse(body, ec);
    if (ec)
        return llm_response::failure(make_error_code(errc::bad_response),
                                     "OpenAI response is not valid JSON (" + ec.message() + "): " + detail::bounded_utf8(body, 200));
    const json::object* root = v.if_object();
    if (!root)
        return llm_response::failure(make_error_code(errc::bad_response),
                                     "OpenAI response is not a JSON object: " + detail::bounded_utf8(body, 200));
    if (detail::is_openai_error_payload(*root)) return classify_stream_error(read_error_value(v)).to_response();
    if (!root->contains("choices"))
        return llm_response::failure(make_error_code(errc::bad_response), "OpenAI response: choices: required field is missing");
    llm_chunk c;
    std::string model;
    bool saw_finish = false;
    detail::shape_reader shape;
    if (!detail::read_openai_choice_payload(*root, "message", c, model, saw_finish, shape))
        return llm_response::failure(make_error_code(errc::bad_response), "OpenAI response: " + shape.problem());
    llm_response_accumulator acc;
    acc.add(c);
    return std::move(acc).finish();
}

inline llm_response openai_stream_decoder::decode_body(std::string_view body) { return decode_openai_response(body); }

} // namespace libretto

#endif
