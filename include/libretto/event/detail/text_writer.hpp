// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_DETAIL_TEXT_WRITER_HPP
#define LIBRETTO_EVENT_DETAIL_TEXT_WRITER_HPP

// The direct JSON text writer behind serialize_event (event/json.hpp): the store's append
// path, kept apart from the json::value codecs because it is the one place tuned for speed.

#include <libretto/detail/json_escape.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/json_limits.hpp>

#include <boost/json/detail/format.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace libretto {

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
                if (needs_json_escape(w) || (w & high_bits)) break;
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
            opt(af, "rewind_before_invocation_id", a.rewind_before_invocation_id);
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

} // namespace detail
} // namespace libretto

#endif
