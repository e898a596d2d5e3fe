// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_JSON_HPP
#define LIBRETTO_EVENT_JSON_HPP

// Hand-written Boost.JSON conversions for the event model. The wire format is stable and
// lossless: encode then decode yields an equal value. Members holding their default
// (empty string, empty object, unset optional, false) are omitted when encoding and
// read back as the default.
//
//   decode<event>(value)   -> decode_result<event>   never throws; errors name the field
//   parse_event(text)      -> decode_result<event>   never throws
//   encode(x)              -> json::value
//   serialize_event(e)     -> std::string            strings are written byte for byte
//   serialize_event_checked(e, out, why) -> error_code  refuses what json_limits.hpp rules out
//
// parse_event refuses a number out of the range of a double, nesting past max_json_depth
// and a key repeated in one object; serialize_event_checked refuses strings that are not
// UTF-8, numbers that are not finite and nesting past max_json_depth (json_limits.hpp).
//   json::value_from / value_to work too (value_to throws system_error naming the field).

#include <libretto/event/detail/json_read.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/detail/text_writer.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/json_limits.hpp>
#include <libretto/json_error.hpp>

#include <boost/json/detail/format.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>

namespace libretto {

namespace detail {

// ---- encoding ------------------------------------------------------------------------

inline void put_metadata(json::object& o, const json::object& md) {
    if (!md.empty()) o.emplace("metadata", md);
}

inline void put_opt(json::object& o, std::string_view key, const std::optional<std::string>& v) {
    if (v) o.emplace(key, *v);
}

inline void encode_into(json::object& o, const part& p) {
    std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, text_part>) {
                o.emplace("type", "text");
                o.emplace("text", x.text);
            } else if constexpr (std::is_same_v<T, thinking_part>) {
                o.emplace("type", "thinking");
                o.emplace("thinking", x.thinking);
            } else if constexpr (std::is_same_v<T, data_part>) {
                o.emplace("type", "data");
                o.emplace("data", x.data);
            } else if constexpr (std::is_same_v<T, file_part>) {
                o.emplace("type", "file");
                put_opt(o, "uri", x.uri);
                put_opt(o, "inline_bytes", x.inline_bytes);
                put_opt(o, "mime_type", x.mime_type);
                put_opt(o, "name", x.name);
            } else if constexpr (std::is_same_v<T, tool_call_part>) {
                o.emplace("type", "tool_call");
                o.emplace("tool_call_id", x.tool_call_id);
                o.emplace("tool_name", x.tool_name);
                o.emplace("args", x.args);
            } else {
                o.emplace("type", "tool_response");
                o.emplace("tool_call_id", x.tool_call_id);
                o.emplace("tool_name", x.tool_name);
                if (!x.result.is_null()) o.emplace("result", x.result);
                put_opt(o, "error", x.error);
            }
            put_metadata(o, x.metadata);
        },
        p);
}

inline void encode_into(json::object& o, const content& c) {
    if (c.role) o.emplace("role", *c.role);
    json::array& parts = o["parts"].emplace_array();
    parts.reserve(c.parts.size());
    for (const auto& p : c.parts) encode_into(parts.emplace_back(json::object(o.storage())).get_object(), p);
}

inline void encode_into(json::object& o, const event_compaction& c) {
    o.emplace("first_sequence", c.first_sequence);
    o.emplace("last_sequence", c.last_sequence);
    o.emplace("start_timestamp", c.start_timestamp);
    o.emplace("end_timestamp", c.end_timestamp);
    o.emplace("summary", c.summary);
    o.emplace("event_count", c.event_count);
}

inline void encode_into(json::object& o, const event_actions& a) {
    if (!a.state_delta.empty()) o.emplace("state_delta", a.state_delta);
    if (!a.artifact_delta.empty()) o.emplace("artifact_delta", a.artifact_delta);
    put_opt(o, "transfer_to_agent", a.transfer_to_agent);
    if (a.escalate) o.emplace("escalate", *a.escalate);
    if (a.skip_summarization) o.emplace("skip_summarization", *a.skip_summarization);
    if (a.end_of_agent) o.emplace("end_of_agent", *a.end_of_agent);
    if (a.compaction) encode_into(o["compaction"].emplace_object(), *a.compaction);
    put_opt(o, "rewind_before_invocation_id", a.rewind_before_invocation_id);
}

inline void encode_into(json::object& o, const usage& u) {
    o.emplace("input_tokens", u.input_tokens);
    o.emplace("output_tokens", u.output_tokens);
    if (!u.model_version.empty()) o.emplace("model_version", u.model_version);
}

inline void encode_into(json::object& o, const event& e) {
    o.reserve(17);
    o.emplace("id", e.id);
    o.emplace("sequence", e.sequence);
    o.emplace("timestamp", e.timestamp);
    if (!e.invocation_id.empty()) o.emplace("invocation_id", e.invocation_id);
    if (!e.session_id.empty()) o.emplace("session_id", e.session_id);
    if (!e.author.empty()) o.emplace("author", e.author);
    if (!e.branch.empty()) o.emplace("branch", e.branch);
    o.emplace("type", to_string(e.type));
    encode_into(o["content"].emplace_object(), e.content);
    if (!e.actions.empty()) encode_into(o["actions"].emplace_object(), e.actions);
    put_metadata(o, e.metadata);
    if (e.partial) o.emplace("partial", true);
    if (e.usage) encode_into(o["usage"].emplace_object(), *e.usage);
    put_opt(o, "signature", e.signature);
    if (!e.signer_did.empty()) o.emplace("signer_did", e.signer_did);
    put_opt(o, "prev_signature", e.prev_signature);
}

// ---- decoding ------------------------------------------------------------------------

inline bool read(const json::value& v, part& out, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    std::string type;
    if (!read_member(*o, "type", type, err, true)) return false;
    json::object metadata;
    if (!read_member(*o, "metadata", metadata, err)) return false;
    if (type == "text") {
        text_part p;
        if (!read_member(*o, "text", p.text, err, true)) return false;
        p.metadata = std::move(metadata);
        out = std::move(p);
    } else if (type == "thinking") {
        thinking_part p;
        if (!read_member(*o, "thinking", p.thinking, err, true)) return false;
        p.metadata = std::move(metadata);
        out = std::move(p);
    } else if (type == "data") {
        data_part p;
        if (!read_member(*o, "data", p.data, err, true)) return false;
        p.metadata = std::move(metadata);
        out = std::move(p);
    } else if (type == "file") {
        file_part p;
        if (!read_member(*o, "uri", p.uri, err) || !read_member(*o, "inline_bytes", p.inline_bytes, err) ||
            !read_member(*o, "mime_type", p.mime_type, err) || !read_member(*o, "name", p.name, err))
            return false;
        p.metadata = std::move(metadata);
        out = std::move(p);
    } else if (type == "tool_call") {
        tool_call_part p;
        if (!read_member(*o, "tool_call_id", p.tool_call_id, err, true) ||
            !read_member(*o, "tool_name", p.tool_name, err, true) || !read_member(*o, "args", p.args, err))
            return false;
        p.metadata = std::move(metadata);
        out = std::move(p);
    } else if (type == "tool_response") {
        tool_response_part p;
        if (!read_member(*o, "tool_call_id", p.tool_call_id, err, true) ||
            !read_member(*o, "tool_name", p.tool_name, err, true) || !read_member(*o, "result", p.result, err) ||
            !read_member(*o, "error", p.error, err))
            return false;
        p.metadata = std::move(metadata);
        out = std::move(p);
    } else {
        fail(err, errc::unknown_enum_value, "unknown part type \"" + type + "\"");
        return in_field(err, "type");
    }
    return true;
}

inline bool read(const json::value& v, content& out, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    if (!read_member(*o, "role", out.role, err)) return false;
    auto it = o->find("parts");
    if (it == o->end()) return true;
    const json::array* arr = it->value().if_array();
    if (!arr) {
        wrong_type(err, "array", it->value());
        return in_field(err, "parts");
    }
    out.parts.clear();
    out.parts.reserve(arr->size());
    for (std::size_t i = 0; i < arr->size(); ++i) {
        part p;
        if (!read((*arr)[i], p, err)) {
            in_index(err, i);
            return in_field(err, "parts");
        }
        out.parts.push_back(std::move(p));
    }
    return true;
}

inline bool read(const json::value& v, event_compaction& out, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    if (!read_member(*o, "first_sequence", out.first_sequence, err, true) ||
        !read_member(*o, "last_sequence", out.last_sequence, err, true) ||
        !read_member(*o, "start_timestamp", out.start_timestamp, err) ||
        !read_member(*o, "end_timestamp", out.end_timestamp, err) ||
        !read_member(*o, "summary", out.summary, err, true) ||
        !read_member(*o, "event_count", out.event_count, err))
        return false;
    // A bad range (reversed, out of the session) still decodes: what it means is
    // check_compaction's to say, and a stored one is ignored, never a corrupt session.
    return true;
}

inline bool read(const json::value& v, event_actions& out, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    if (!read_member(*o, "state_delta", out.state_delta, err) ||
        !read_member(*o, "artifact_delta", out.artifact_delta, err) ||
        !read_member(*o, "transfer_to_agent", out.transfer_to_agent, err) ||
        !read_member(*o, "escalate", out.escalate, err) ||
        !read_member(*o, "skip_summarization", out.skip_summarization, err) ||
        !read_member(*o, "end_of_agent", out.end_of_agent, err) ||
        !read_member(*o, "compaction", out.compaction, err) ||
        !read_member(*o, "rewind_before_invocation_id", out.rewind_before_invocation_id, err))
        return false;
    for (const auto& kv : out.artifact_delta) {
        if (!kv.value().is_int64() && !kv.value().is_uint64()) {
            wrong_type(err, "integer version", kv.value());
            in_field(err, kv.key());
            return in_field(err, "artifact_delta");
        }
    }
    return true;
}

inline bool read(const json::value& v, usage& out, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    return read_member(*o, "input_tokens", out.input_tokens, err) &&
           read_member(*o, "output_tokens", out.output_tokens, err) &&
           read_member(*o, "model_version", out.model_version, err);
}

inline bool read(const json::value& v, event& out, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    std::string type;
    if (!read_member(*o, "id", out.id, err, true) || !read_member(*o, "type", type, err, true)) return false;
    auto t = event_type_from_string(type);
    if (!t) {
        fail(err, errc::unknown_enum_value, "unknown event type \"" + type + "\"");
        return in_field(err, "type");
    }
    out.type = *t;
    if (!read_member(*o, "sequence", out.sequence, err) || !read_member(*o, "timestamp", out.timestamp, err) ||
        !read_member(*o, "invocation_id", out.invocation_id, err) ||
        !read_member(*o, "session_id", out.session_id, err) || !read_member(*o, "author", out.author, err) ||
        !read_member(*o, "branch", out.branch, err) || !read_member(*o, "content", out.content, err) ||
        !read_member(*o, "actions", out.actions, err) || !read_member(*o, "metadata", out.metadata, err) ||
        !read_member(*o, "partial", out.partial, err) || !read_member(*o, "usage", out.usage, err) ||
        !read_member(*o, "signature", out.signature, err) ||
        !read_member(*o, "signer_did", out.signer_did, err) ||
        !read_member(*o, "prev_signature", out.prev_signature, err))
        return false;
    if (out.sequence < 0) {
        fail(err, errc::invalid_argument, "sequence is negative");
        return in_field(err, "sequence");
    }
    return true;
}

template <class T>
decode_result<T> decode_noexcept(const json::value& v) noexcept {
    decode_error err;
    try {
        T out{};
        if (read(v, out, err)) return out;
    } catch (const std::bad_alloc&) {
        err = {make_error_code(boost::system::errc::not_enough_memory), {}, "out of memory while decoding"};
    } catch (const std::exception& e) {
        err = {make_error_code(errc::invalid_json), {}, e.what()};
    }
    return err;
}

} // namespace detail

/// Decodes `v` as a T (event, part, content, event_actions, event_compaction or usage).
/// Never throws: errors name the offending field.
template <class T>
decode_result<T> decode(const json::value& v) noexcept {
    return detail::decode_noexcept<T>(v);
}

/// Encodes any event-model value as JSON (an object).
template <class T>
json::value encode(const T& x, json::storage_ptr sp = {}) {
    json::value v(json::object(std::move(sp)));
    detail::encode_into(v.get_object(), x);
    return v;
}

/// Parses one event from JSON text. Never throws.
inline decode_result<event> parse_event(std::string_view text) noexcept {
    try {
        unsigned char buf[4096];
        json::monotonic_resource mr(buf, sizeof buf);
        boost::system::error_code ec;
        std::string why;
        json::value v = detail::parse_precise(text, ec, &mr, &why);
        if (ec) return decode_error{make_error_code(errc::invalid_json), {}, std::move(why)};
        return decode<event>(v);
    } catch (const std::bad_alloc&) {
        return decode_error{make_error_code(boost::system::errc::not_enough_memory), {}, "out of memory while parsing"};
    }
}

namespace detail {

/// Appends the compact JSON text of `e` to `out` (what serialize_event returns). Returns
/// the first thing in `e` that cannot be stored (json_limits.hpp), if any: a string that is
/// not UTF-8 (written as is all the same), a number that is not finite (written as null),
/// nesting past max_json_depth (written as null).
inline std::optional<json_fault> append_event_json(std::string& out, const event& e) {
    text_writer w(out);
    w.event(e);
    return w.fault;
}

} // namespace detail

/// The compact JSON text of `e`. Strings that are not valid UTF-8 are written byte for
/// byte (as json::serialize does), a number that is not finite as null and nesting past
/// max_json_depth as null; serialize_event_checked refuses all three instead.
inline std::string serialize_event(const event& e) {
    std::string out;
    out.reserve(512);
    detail::append_event_json(out, e);
    return out;
}

/// The compact JSON text of `e` into `out`, or errc::invalid_argument if it breaks a rule
/// of json_limits.hpp: one of its strings (text, ids, keys and strings of JSON members ...)
/// is not valid UTF-8, a number is not finite, or arrays and objects nest past
/// max_json_depth. `why` then names the first fault and its member, and `out` is empty.
inline boost::system::error_code serialize_event_checked(const event& e, std::string& out, std::string& why) {
    out.clear();
    if (auto f = detail::append_event_json(out, e)) {
        out.clear();
        why = f->message();
        return errc::invalid_argument;
    }
    return {};
}

// Boost.JSON customisation points, found by ADL.
#define LIBRETTO_JSON_CONVERSIONS(T)                                                                       \
    inline void tag_invoke(json::value_from_tag, json::value& jv, const T& x) {                              \
        detail::encode_into(jv.emplace_object(), x);                                                        \
    }                                                                                                        \
    inline T tag_invoke(json::value_to_tag<T>, const json::value& jv) { return decode<T>(jv).value(); }

LIBRETTO_JSON_CONVERSIONS(event)
LIBRETTO_JSON_CONVERSIONS(content)
LIBRETTO_JSON_CONVERSIONS(event_actions)
LIBRETTO_JSON_CONVERSIONS(event_compaction)
LIBRETTO_JSON_CONVERSIONS(usage)
#undef LIBRETTO_JSON_CONVERSIONS

// `part` is a std::variant, which Boost.JSON already knows; use encode/decode<part> for it.

} // namespace libretto

#endif
