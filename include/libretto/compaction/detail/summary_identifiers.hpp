// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_DETAIL_SUMMARY_IDENTIFIERS_HPP
#define LIBRETTO_COMPACTION_DETAIL_SUMMARY_IDENTIFIERS_HPP

// The token rules of critical_identifiers() (docs/compaction.md, "Critical identifiers").
// Internal: the public entry point is libretto::critical_identifiers in summarizer.hpp.

#include <libretto/compaction/detail/summary_text.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace libretto::detail::summary_ids {

using summary_text::is_ascii_alnum;

/// Bytes that end a token: whitespace, quotes, brackets, separators.
inline bool is_delimiter(char c) noexcept {
    switch (c) {
    case ' ': case '\t': case '\n': case '\r': case '\f': case '\v':
    case '"': case '\'': case '`': case '<': case '>': case '(': case ')':
    case '[': case ']': case '{': case '}': case ',': case ';': case '|': case '*': case '\\':
        return true;
    default: return false;
    }
}

inline bool has_alnum(std::string_view t) noexcept {
    return std::any_of(t.begin(), t.end(), [](char c) { return is_ascii_alnum(c); });
}
inline bool has_digit(std::string_view t) noexcept {
    return std::any_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
}
inline bool has_letter(std::string_view t) noexcept {
    return std::any_of(t.begin(), t.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); });
}

/// "name.ext": a base of at least 2 bytes, an extension of 1-8 ASCII letters/digits with
/// at least one letter ("main.cpp", "example.com"; not "e.g", "3.14", "v1.2").
inline bool looks_like_file_name(std::string_view t) noexcept {
    auto dot = t.rfind('.');
    if (dot == std::string_view::npos || dot < 2) return false;
    std::string_view ext = t.substr(dot + 1);
    if (ext.empty() || ext.size() > 8) return false;
    if (!std::all_of(ext.begin(), ext.end(), [](char c) { return is_ascii_alnum(c); })) return false;
    return has_letter(ext) && has_alnum(t.substr(0, dot));
}

/// The rules, applied to a token already stripped of surrounding punctuation.
inline bool is_identifier_token(std::string_view t, std::size_t max_length) noexcept {
    if (t.size() < 3 || t.size() > max_length) return false;
    // URLs: scheme://...
    if (auto p = t.find("://"); p != std::string_view::npos && p > 0 && p + 3 < t.size()) {
        std::string_view scheme = t.substr(0, p);
        if (std::all_of(scheme.begin(), scheme.end(), [](char c) { return is_ascii_alnum(c) || c == '+' || c == '-' || c == '.'; }))
            return true;
    }
    // e-mail addresses
    if (auto at = t.find('@'); at != std::string_view::npos && at > 0 && t.find('.', at) != std::string_view::npos &&
                               has_alnum(t.substr(0, at)))
        return true;
    // paths: rooted, relative with ./ ../ ~/, two or more slashes, or a file name at the end
    if (t.find('/') != std::string_view::npos && has_alnum(t)) {
        if (t.front() == '/' || t.starts_with("./") || t.starts_with("../") || t.starts_with("~/")) return true;
        if (std::count(t.begin(), t.end(), '/') >= 2) return true;
        if (looks_like_file_name(t.substr(t.rfind('/') + 1))) return true;
    }
    if (looks_like_file_name(t)) return true;
    // ids and numbers: at least 5 bytes, a digit, only [A-Za-z0-9_-:#.]
    if (t.size() >= 5 && has_digit(t) &&
        std::all_of(t.begin(), t.end(), [](char c) {
            return is_ascii_alnum(c) || c == '_' || c == '-' || c == ':' || c == '#' || c == '.';
        }))
        return true;
    return false;
}

/// Strips what commonly surrounds a token in prose: trailing . : ! ? and leading : # are
/// not part of "see main.cpp." or "order #12345".
inline std::string_view strip_token(std::string_view t) noexcept {
    while (!t.empty() && (t.back() == '.' || t.back() == ':' || t.back() == '!' || t.back() == '?' || t.back() == '='))
        t.remove_suffix(1);
    while (!t.empty() && (t.front() == ':' || t.front() == '#' || t.front() == '=' || t.front() == '.') &&
           !t.starts_with("./") && !t.starts_with("../"))
        t.remove_prefix(1);
    return t;
}

/// Collects identifiers in order of first appearance, without duplicates.
class collector {
public:
    collector(std::size_t max_length, std::size_t scan_limit) : max_length_(max_length), scan_limit_(scan_limit) {}

    /// Adds `id` as it is (a tool name, an id-keyed value), if it is short enough and has
    /// no whitespace.
    void add_verbatim(std::string_view id) {
        id = summary_text::trim(id);
        if (id.empty() || id.size() > max_length_) return;
        if (std::any_of(id.begin(), id.end(), [](char c) { return summary_text::is_space(c); })) return;
        add(id);
    }

    /// Scans free text (the first scan_limit bytes of it) for identifier tokens.
    void scan_text(std::string_view text) {
        text = text.substr(0, summary_text::utf8_cut(text, scan_limit_));
        std::size_t i = 0;
        while (i < text.size()) {
            while (i < text.size() && is_delimiter(text[i])) ++i;
            std::size_t start = i;
            while (i < text.size() && !is_delimiter(text[i])) ++i;
            std::string_view tok = strip_token(text.substr(start, i - start));
            if (is_identifier_token(tok, max_length_)) add(tok);
        }
    }

    /// Scans a JSON value: strings as text; under id-like keys ("id", "…_id", "…Id",
    /// "…number", "ref") a string or number is kept whole.
    void scan_json(const boost::json::value& v, std::string_view key = {}, int depth = 0) {
        if (depth > 16) return;
        switch (v.kind()) {
        case boost::json::kind::string:
            if (is_id_key(key)) add_verbatim(v.get_string());
            else scan_text(v.get_string());
            break;
        case boost::json::kind::int64:
        case boost::json::kind::uint64:
            if (is_id_key(key)) {
                std::string s = summary_text::json_text(v);
                if (s.size() >= 3) add_verbatim(s);
            }
            break;
        case boost::json::kind::array:
            for (const auto& e : v.get_array()) scan_json(e, key, depth + 1);
            break;
        case boost::json::kind::object:
            for (const auto& kv : v.get_object()) scan_json(kv.value(), kv.key(), depth + 1);
            break;
        default: break;
        }
    }

    std::vector<std::string> take(std::size_t max_count) && {
        if (found_.size() > max_count)
            found_.erase(found_.begin(), found_.begin() + static_cast<std::ptrdiff_t>(found_.size() - max_count));
        return std::move(found_);
    }

private:
    static bool is_id_key(std::string_view k) noexcept {
        std::string lower;
        for (char c : k) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        std::string_view l = lower;
        return l == "id" || l == "ids" || l == "ref" || l == "reference" || l.ends_with("_id") || l.ends_with("_ids") ||
               l.ends_with("-id") || (k.size() > 2 && k.ends_with("Id")) || l.ends_with("number") || l.ends_with("_no");
    }

    void add(std::string_view id) {
        std::string s(id);
        if (seen_.insert(s).second) found_.push_back(std::move(s));
    }

    std::size_t max_length_;
    std::size_t scan_limit_;
    boost::unordered_flat_set<std::string> seen_;
    std::vector<std::string> found_;
};

} // namespace libretto::detail::summary_ids

#endif
