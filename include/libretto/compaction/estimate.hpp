// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_ESTIMATE_HPP
#define LIBRETTO_COMPACTION_ESTIMATE_HPP

// Size estimates the compaction strategies plan with: characters of what an event puts in
// a model's context, and tokens as characters / 4 (pi's estimate; a model's reported usage
// replaces it where there is one). Cheap: sizes JSON without serialising it.

#include <libretto/event/event.hpp>

#include <cstddef>
#include <cstdint>
#include <variant>

namespace libretto {

inline std::size_t approx_json_chars(const json::value& v) noexcept;

/// Roughly the bytes of `o` serialized as JSON.
inline std::size_t approx_json_chars(const json::object& o) noexcept {
    std::size_t n = 2;
    for (const auto& kv : o) n += kv.key().size() + 4 + approx_json_chars(kv.value());
    return n;
}

/// Roughly the bytes of `v` serialized as JSON (exact for ASCII strings without escapes).
inline std::size_t approx_json_chars(const json::value& v) noexcept {
    switch (v.kind()) {
    case json::kind::null: return 4;
    case json::kind::bool_: return 5;
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return 8;
    case json::kind::string: return v.get_string().size() + 2;
    case json::kind::array: {
        std::size_t n = 2;
        for (const auto& x : v.get_array()) n += approx_json_chars(x) + 1;
        return n;
    }
    case json::kind::object: return approx_json_chars(v.get_object());
    }
    return 0;
}

/// Characters an event contributes to a model's context: text, thinking, tool names and
/// arguments, tool results, data; a file counts as 4800 (pi charges an image 1200 tokens);
/// a compaction event counts its summary.
inline std::size_t event_chars(const event& e) noexcept {
    std::size_t n = 0;
    if (e.actions.compaction) n += e.actions.compaction->summary.size();
    for (const auto& p : e.content.parts) {
        if (const auto* t = std::get_if<text_part>(&p)) n += t->text.size();
        else if (const auto* th = std::get_if<thinking_part>(&p)) n += th->thinking.size();
        else if (const auto* c = std::get_if<tool_call_part>(&p)) {
            n += c->tool_name.size() + approx_json_chars(c->args);
        } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
            n += approx_json_chars(r->result);
            if (r->error) n += r->error->size();
        } else if (const auto* d = std::get_if<data_part>(&p)) {
            n += approx_json_chars(d->data);
        } else {
            n += 4800;
        }
    }
    return n;
}

/// Tokens as characters / 4, rounded up (written so that no count wraps).
inline std::int64_t estimate_tokens(std::size_t chars) noexcept {
    return static_cast<std::int64_t>(chars / 4 + (chars % 4 != 0)); // at most SIZE_MAX/4 + 1: fits
}

inline std::int64_t event_tokens(const event& e) noexcept { return estimate_tokens(event_chars(e)); }

} // namespace libretto

#endif
