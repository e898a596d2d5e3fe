// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_DETAIL_SUMMARY_TEXT_HPP
#define LIBRETTO_COMPACTION_DETAIL_SUMMARY_TEXT_HPP

// Text helpers shared by the summarizers: UTF-8-safe cuts, the "[… N more characters]"
// marker, whitespace folding, the word normalisation of the quality check. Internal.

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace libretto::detail::summary_text {

inline bool is_continuation(char c) noexcept { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// The largest n <= max_bytes such that s[0, n) does not end inside a UTF-8 sequence
/// (s.size() when it fits). On invalid input (more than three continuation bytes in a
/// row at the cut) it cuts at max_bytes.
inline std::size_t utf8_cut(std::string_view s, std::size_t max_bytes) noexcept {
    if (s.size() <= max_bytes) return s.size();
    std::size_t n = max_bytes;
    for (int steps = 0; n > 0 && steps < 3 && is_continuation(s[n]); ++steps) --n;
    if (is_continuation(s[n])) return max_bytes;
    return n;
}

/// Number of characters (UTF-8 lead bytes and stray bytes) in s.
inline std::size_t utf8_length(std::string_view s) noexcept {
    std::size_t n = 0;
    for (char c : s)
        if (!is_continuation(c)) ++n;
    return n;
}

/// s when it has at most max_bytes bytes; else its first bytes (cut at a character
/// boundary) followed by "[… N more characters]", N counting the characters left out.
inline std::string truncate_marked(std::string_view s, std::size_t max_bytes) {
    if (s.size() <= max_bytes) return std::string(s);
    std::size_t n = utf8_cut(s, max_bytes);
    std::string out(s.substr(0, n));
    out += "[\xE2\x80\xA6 ";
    out += std::to_string(utf8_length(s.substr(n)));
    out += " more characters]";
    return out;
}

/// s when it has at most max_bytes bytes; else a prefix ending in "…", the whole at most
/// max_bytes bytes and never cut inside a character.
inline std::string shorten(std::string_view s, std::size_t max_bytes) {
    if (s.size() <= max_bytes) return std::string(s);
    constexpr std::string_view ellipsis = "\xE2\x80\xA6";
    if (max_bytes < ellipsis.size()) return std::string(s.substr(0, utf8_cut(s, max_bytes)));
    std::string out(s.substr(0, utf8_cut(s, max_bytes - ellipsis.size())));
    out += ellipsis;
    return out;
}

inline bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// s without leading and trailing ASCII whitespace.
inline std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

/// Runs of ASCII whitespace folded into one space; trimmed.
inline std::string fold_whitespace(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    bool pending_space = false;
    for (char c : trim(s)) {
        if (is_space(c)) {
            pending_space = true;
            continue;
        }
        if (pending_space) out += ' ';
        pending_space = false;
        out += c;
    }
    return out;
}

/// A JSON value as text: strings as they are, anything else serialized.
inline std::string json_text(const boost::json::value& v) {
    if (const auto* s = v.if_string()) return std::string(*s);
    return boost::json::serialize(v);
}

inline bool is_ascii_alnum(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/// The words of s for the quality check: ASCII letters lower-cased, bytes >= 0x80 kept
/// (words in other scripts count), every other byte a separator.
inline std::vector<std::string> words(std::string_view s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (is_ascii_alnum(c) || u >= 0x80) {
            cur += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        } else if (!cur.empty()) {
            out.push_back(std::move(cur));
            cur.clear();
        }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

/// The words joined by single spaces.
inline std::string normalized(std::string_view s) {
    std::string out;
    for (const auto& w : words(s)) {
        if (!out.empty()) out += ' ';
        out += w;
    }
    return out;
}

inline bool is_stopword(std::string_view w) noexcept {
    static constexpr std::array<std::string_view, 72> stop = {
        "about", "after", "again", "all",    "also",  "and",   "any",   "are",   "because", "been",  "before", "but",
        "can",   "could", "did",   "does",   "each",  "for",   "from",  "get",   "had",     "has",   "have",   "her",
        "here",  "him",   "his",   "how",    "into",  "its",   "just",  "let",   "like",    "make",  "more",   "most",
        "much",  "need",  "not",   "now",    "one",   "only",  "our",   "out",   "please",  "should", "some",  "than",
        "that",  "the",   "their", "them",   "then",  "there", "these", "they",  "this",    "those", "very",   "want",
        "was",   "were",  "what",  "when",   "where", "which", "who",   "why",   "will",    "with",  "would",  "you"};
    return std::find(stop.begin(), stop.end(), w) != stop.end() || w == "your";
}

/// The request's significant words: distinct words of at least 3 bytes that are not
/// stop words, in order, at most `limit`.
inline std::vector<std::string> significant_words(std::string_view s, std::size_t limit = 16) {
    std::vector<std::string> out;
    for (auto& w : words(s)) {
        if (out.size() >= limit) break;
        if (w.size() < 3 || is_stopword(w)) continue;
        if (std::find(out.begin(), out.end(), w) != out.end()) continue;
        out.push_back(std::move(w));
    }
    return out;
}

/// True if a summary word matches a request word: equal, or one a prefix of the other
/// with the shorter at least 4 bytes ("book" ~ "booking").
inline bool word_matches(std::string_view summary_word, std::string_view request_word) noexcept {
    if (summary_word == request_word) return true;
    std::string_view a = summary_word, b = request_word;
    if (a.size() > b.size()) std::swap(a, b);
    return a.size() >= 4 && b.substr(0, a.size()) == a;
}

} // namespace libretto::detail::summary_text

#endif
