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
        !read_member(*o, "compaction", out.compaction, err))
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

// ---- direct text encoding --------------------------------------------------------------
// serialize_event writes the text straight from the event, without building a json::value
// first. The output is byte for byte what json::serialize(encode(e)) gives (the tests
// compare the two): members in encode_into's order, strings escaped as Boost.JSON's
// serializer escapes them, numbers formatted by Boost.JSON's own formatters. Bytes that
// are not UTF-8 are written as they are (as Boost.JSON does); a number that is not finite
// is written as null and nesting past max_json_depth is cut short. The first of these is
// recorded in `fault`: stores refuse such an event (json_limits.hpp).

struct text_writer {
    std::string& out;
    std::size_t n; // bytes of `out` in use; the rest is room to write into
    std::optional<json_fault> fault; // the first thing that cannot be stored (json_limits.hpp)
    std::size_t depth = 0;           // arrays and objects open around what is written next
    std::string_view member;         // the member being written, for a fault's message

    explicit text_writer(std::string& o) : out(o), n(o.size()) {}
    text_writer(const text_writer&) = delete;
    text_writer& operator=(const text_writer&) = delete;
    ~text_writer() { out.resize(n); }

    /// Room for `k` more bytes; returns where to write them.
    char* room(std::size_t k) {
        if (out.size() - n < k) [[unlikely]]
            grow(k);
        return out.data() + n;
    }
    // Out of line: room() stays a compare and an add where it is inlined.
    [[gnu::noinline]] void grow(std::size_t k) { out.resize(std::max(out.size() * 2, n + k + 256)); }

    void raw(std::string_view s) {
        std::memcpy(room(s.size()), s.data(), s.size());
        n += s.size();
    }
    void ch(char c) {
        *room(1) = c;
        ++n;
    }

    /// True if one of the eight bytes of `w` is a control character, a quote or a
    /// backslash (the "has a byte less than / equal to" tricks of Bit Twiddling Hacks;
    /// bytes from 0x80 on, UTF-8, never match).
    static constexpr bool needs_escape(std::uint64_t w) noexcept {
        constexpr std::uint64_t ones = 0x0101010101010101u;
        constexpr std::uint64_t high = 0x8080808080808080u;
        const auto zero_byte = [](std::uint64_t v) { return (v - ones) & ~v & high; };
        const std::uint64_t control = (w - ones * 0x20) & ~w & high;
        return (control | zero_byte(w ^ (ones * '"')) | zero_byte(w ^ (ones * '\\'))) != 0;
    }

    static constexpr std::uint64_t high_bits = 0x8080808080808080u;

    void str(std::string_view s) {
        // 0: written as is; otherwise the escape letter ('u': \u00XX), as Boost.JSON's
        // serializer escapes (quote, backslash and control characters only).
        static constexpr char esc[256] = {
            'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
            'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
            0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
            0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
            0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
            0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\', 0,  0,   0};
        static constexpr char hex[] = "0123456789abcdef";
        char* const start = room(s.size() * 6 + 2);
        char* d = start;
        *d++ = '"';
        const char* p = s.data();
        const char* const end = p + s.size();
        while (p != end) {
            // Eight bytes at a time while all are ASCII and none needs escaping (most text:
            // ids, prose); a word with a byte >= 0x80 goes below, to be checked as UTF-8.
            while (end - p >= 8) {
                std::uint64_t w;
                std::memcpy(&w, p, 8);
                if (needs_escape(w) || (w & high_bits)) break;
                std::memcpy(d, p, 8);
                d += 8;
                p += 8;
            }
            // A sequence may run past `stop`: `p < stop`, not `!=`.
            const char* const stop = end - p > 8 ? p + 8 : end;
            while (p < stop) {
                const char c = *p;
                const auto u = static_cast<unsigned char>(c);
                if (u >= 0x80) {
                    const auto* const up = reinterpret_cast<const unsigned char*>(p);
                    std::size_t k = utf8_sequence(up, reinterpret_cast<const unsigned char*>(end));
                    if (!k) {
                        if (!fault) fault = json_fault{json_fault::kind::invalid_utf8, static_cast<std::size_t>(p - s.data()), u, 0, std::string(member)};
                        k = 1; // written as is, like Boost.JSON's serializer
                    }
                    std::memcpy(d, p, k);
                    d += k;
                    p += k;
                    continue;
                }
                const char e = esc[u];
                ++p;
                if (!e) {
                    *d++ = c;
                } else if (e != 'u') {
                    d[0] = '\\';
                    d[1] = e;
                    d += 2;
                } else {
                    d[0] = '\\';
                    d[1] = 'u';
                    d[2] = '0';
                    d[3] = '0';
                    d[4] = hex[u >> 4];
                    d[5] = hex[u & 15];
                    d += 6;
                }
            }
        }
        *d++ = '"';
        n += static_cast<std::size_t>(d - start);
    }

    void num(std::int64_t v) { n += json::detail::format_int64(room(32), v); }
    void num(std::uint64_t v) { n += json::detail::format_uint64(room(32), v); }
    void num(double v) {
        if (!std::isfinite(v)) [[unlikely]] {
            // Boost.JSON would write `Infinity` or `NaN`: no reader takes them back.
            if (!fault) fault = json_fault{json_fault::kind::not_finite, 0, 0, v, std::string(member)};
            raw("null");
            return;
        }
        n += json::detail::format_double(room(64), v);
    }
    /// Opens an array or object; false (and a fault) past max_json_depth, where the
    /// caller writes null instead of descending (the text is refused anyway).
    bool open(char c) {
        if (++depth > max_json_depth) [[unlikely]] {
            --depth;
            if (!fault) fault = json_fault{json_fault::kind::too_deep, 0, 0, 0, std::string(member)};
            raw("null");
            return false;
        }
        ch(c);
        return true;
    }
    void close(char c) {
        --depth;
        ch(c);
    }
    void boolean(bool b) { b ? raw("true") : raw("false"); }

    void value(const json::value& v) {
        switch (v.kind()) {
        case json::kind::null: raw("null"); break;
        case json::kind::bool_: boolean(v.get_bool()); break;
        case json::kind::int64: num(v.get_int64()); break;
        case json::kind::uint64: num(v.get_uint64()); break;
        case json::kind::double_: num(v.get_double()); break;
        case json::kind::string: str(v.get_string()); break;
        case json::kind::array: {
            if (!open('[')) break;
            bool first = true;
            for (const auto& x : v.get_array()) {
                if (!first) ch(',');
                first = false;
                value(x);
            }
            close(']');
            break;
        }
        case json::kind::object: object(v.get_object()); break;
        }
    }
    void object(const json::object& o) {
        if (!open('{')) return;
        const std::string_view outer = member;
        bool first = true;
        for (const auto& kv : o) {
            if (!first) ch(',');
            first = false;
            str(kv.key());
            ch(':');
            member = kv.key();
            value(kv.value());
        }
        member = outer;
        close('}');
    }

    /// A member's key, one of ours (nothing to escape): `,"key":` (no comma before the
    /// first member of an object).
    void key(bool& first, std::string_view k) { key_n(first, k.data(), k.size()); }
    /// A literal key: its length is a constant, so the copy is a few stores, not a call.
    template <std::size_t N>
    void key(bool& first, const char (&k)[N]) {
        key_n(first, k, N - 1);
    }
    [[gnu::always_inline]] void key_n(bool& first, const char* k, std::size_t len) {
        member = std::string_view(k, len);
        char* d = room(len + 4);
        char* const start = d;
        if (!first) *d++ = ',';
        first = false;
        *d++ = '"';
        std::memcpy(d, k, len);
        d += len;
        *d++ = '"';
        *d++ = ':';
        n += static_cast<std::size_t>(d - start);
    }
    void opt(bool& first, std::string_view k, const std::optional<std::string>& v) {
        if (v) key(first, k), str(*v);
    }
    void metadata(bool& first, const json::object& md) {
        if (!md.empty()) key(first, "metadata"), object(md);
    }

    void part(const libretto::part& p) {
        bool first = true;
        open('{');
        std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, text_part>) {
                    key(first, "type"), str("text");
                    key(first, "text"), str(x.text);
                } else if constexpr (std::is_same_v<T, thinking_part>) {
                    key(first, "type"), str("thinking");
                    key(first, "thinking"), str(x.thinking);
                } else if constexpr (std::is_same_v<T, data_part>) {
                    key(first, "type"), str("data");
                    key(first, "data"), object(x.data);
                } else if constexpr (std::is_same_v<T, file_part>) {
                    key(first, "type"), str("file");
                    opt(first, "uri", x.uri);
                    opt(first, "inline_bytes", x.inline_bytes);
                    opt(first, "mime_type", x.mime_type);
                    opt(first, "name", x.name);
                } else if constexpr (std::is_same_v<T, tool_call_part>) {
                    key(first, "type"), str("tool_call");
                    key(first, "tool_call_id"), str(x.tool_call_id);
                    key(first, "tool_name"), str(x.tool_name);
                    key(first, "args"), object(x.args);
                } else {
                    key(first, "type"), str("tool_response");
                    key(first, "tool_call_id"), str(x.tool_call_id);
                    key(first, "tool_name"), str(x.tool_name);
                    if (!x.result.is_null()) key(first, "result"), value(x.result);
                    opt(first, "error", x.error);
                }
                metadata(first, x.metadata);
            },
            p);
        close('}');
    }

    void event(const libretto::event& e) {
        bool first = true;
        open('{');
        key(first, "id"), str(e.id);
        key(first, "sequence"), num(e.sequence);
        key(first, "timestamp"), num(e.timestamp);
        if (!e.invocation_id.empty()) key(first, "invocation_id"), str(e.invocation_id);
        if (!e.session_id.empty()) key(first, "session_id"), str(e.session_id);
        if (!e.author.empty()) key(first, "author"), str(e.author);
        if (!e.branch.empty()) key(first, "branch"), str(e.branch);
        key(first, "type"), str(to_string(e.type));
        {
            key(first, "content");
            bool cf = true;
            open('{');
            opt(cf, "role", e.content.role);
            key(cf, "parts");
            open('[');
            for (std::size_t i = 0; i < e.content.parts.size(); ++i) {
                if (i) ch(',');
                part(e.content.parts[i]);
            }
            close(']');
            close('}');
        }
        if (const auto& a = e.actions; !a.empty()) {
            key(first, "actions");
            bool af = true;
            open('{');
            if (!a.state_delta.empty()) key(af, "state_delta"), object(a.state_delta);
            if (!a.artifact_delta.empty()) key(af, "artifact_delta"), object(a.artifact_delta);
            opt(af, "transfer_to_agent", a.transfer_to_agent);
            if (a.escalate) key(af, "escalate"), boolean(*a.escalate);
            if (a.skip_summarization) key(af, "skip_summarization"), boolean(*a.skip_summarization);
            if (a.end_of_agent) key(af, "end_of_agent"), boolean(*a.end_of_agent);
            if (const auto& c = a.compaction) {
                key(af, "compaction");
                bool f = true;
                open('{');
                key(f, "first_sequence"), num(c->first_sequence);
                key(f, "last_sequence"), num(c->last_sequence);
                key(f, "start_timestamp"), num(c->start_timestamp);
                key(f, "end_timestamp"), num(c->end_timestamp);
                key(f, "summary"), str(c->summary);
                key(f, "event_count"), num(c->event_count);
                close('}');
            }
            close('}');
        }
        metadata(first, e.metadata);
        if (e.partial) key(first, "partial"), boolean(true);
        if (const auto& u = e.usage) {
            key(first, "usage");
            bool f = true;
            open('{');
            key(f, "input_tokens"), num(u->input_tokens);
            key(f, "output_tokens"), num(u->output_tokens);
            if (!u->model_version.empty()) key(f, "model_version"), str(u->model_version);
            close('}');
        }
        opt(first, "signature", e.signature);
        if (!e.signer_did.empty()) key(first, "signer_did"), str(e.signer_did);
        opt(first, "prev_signature", e.prev_signature);
        close('}');
    }
};

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
