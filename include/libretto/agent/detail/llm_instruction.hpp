// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_DETAIL_LLM_INSTRUCTION_HPP
#define LIBRETTO_AGENT_DETAIL_LLM_INSTRUCTION_HPP

// `{key}` state templating of instructions, with Google ADK's semantics
// (google/adk-python, src/google/adk/utils/instructions_utils.py, inject_session_state):
//
//   {key}       the state value of `key` (strings as they are, other JSON serialized,
//               null -> empty); a key absent from the state is an error
//   {key?}      the same, but an absent key gives the empty string
//   {app:key} {user:key} {temp:key}   scoped keys (the prefix is part of the key)
//   {anything else}   left as written: a placeholder that is not an identifier (or a
//               scope prefix and an identifier) is not a placeholder ("{ not json }")
//
// Like ADK, a match is a run of opening braces, text without braces, and a run of closing
// braces, and surrounding whitespace and extra braces are stripped ("{{ key }}" is {key}).
// Pure: no I/O, unit-tested directly.

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace libretto::detail {

/// True for a Python identifier made of ASCII letters, digits and '_' (not starting with a
/// digit). Non-ASCII identifiers are not accepted (ADK accepts them; nobody names state
/// keys so).
constexpr bool is_identifier(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0)) return false;
    }
    return true;
}

/// ADK's _is_valid_state_name: an identifier, or "app:" / "user:" / "temp:" and an identifier.
constexpr bool is_state_placeholder(std::string_view name) noexcept {
    auto colon = name.find(':');
    if (colon == std::string_view::npos) return is_identifier(name);
    std::string_view prefix = name.substr(0, colon + 1);
    if (prefix != "app:" && prefix != "user:" && prefix != "temp:") return false;
    return is_identifier(name.substr(colon + 1));
}

/// The result of templating: the text, or the first required key that was missing.
struct instruction_result {
    std::string text;
    std::optional<std::string> missing_key; ///< set: templating failed on this key
};

/// Replaces `{key}` / `{key?}` placeholders in `tmpl` from `state` (see the file comment).
inline instruction_result inject_state(std::string_view tmpl, const boost::json::object& state) {
    instruction_result out;
    std::string& r = out.text;
    r.reserve(tmpl.size());
    std::size_t i = 0;
    while (i < tmpl.size()) {
        std::size_t open = tmpl.find('{', i);
        if (open == std::string_view::npos) {
            r.append(tmpl.substr(i));
            break;
        }
        // A match: '{'+, then [^{}]*, then '}'+.
        std::size_t j = open;
        while (j < tmpl.size() && tmpl[j] == '{') ++j;
        std::size_t body_begin = j;
        while (j < tmpl.size() && tmpl[j] != '{' && tmpl[j] != '}') ++j;
        if (j >= tmpl.size() || tmpl[j] != '}') {
            // No closing brace before the next opening one (or the end): not a match.
            r.append(tmpl.substr(i, j - i));
            i = j;
            continue;
        }
        std::size_t body_end = j;
        while (j < tmpl.size() && tmpl[j] == '}') ++j;
        r.append(tmpl.substr(i, open - i));
        std::string_view match = tmpl.substr(open, j - open);
        std::string_view name = tmpl.substr(body_begin, body_end - body_begin);
        while (!name.empty() && (name.front() == ' ' || name.front() == '\t' || name.front() == '\n'))
            name.remove_prefix(1);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t' || name.back() == '\n'))
            name.remove_suffix(1);
        bool optional = false;
        if (name.ends_with('?')) {
            optional = true;
            name.remove_suffix(1);
        }
        i = j;
        if (!is_state_placeholder(name)) {
            r.append(match);
            continue;
        }
        const boost::json::value* v = state.if_contains(name);
        if (!v) {
            if (optional) continue;
            out.missing_key = std::string(name);
            return out;
        }
        if (v->is_null()) continue;
        if (const auto* s = v->if_string()) r.append(s->data(), s->size());
        else r += boost::json::serialize(*v);
    }
    return out;
}

} // namespace libretto::detail

#endif
