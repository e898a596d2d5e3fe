// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_MEMORY_COMMON_HPP
#define LIBRETTO_STORE_DETAIL_MEMORY_COMMON_HPP

// What every memory_service back end shares: which events are remembered and as what, the
// checks of ids, entries and queries, and the words of a text.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/memory_service.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace libretto::detail {

/// The entry an event is remembered as, or nullopt: user and agent messages with text (not
/// partial, not silent), and compaction summaries with their range.
inline std::optional<memory_entry> memory_entry_of(const event& e) {
    if (e.partial) return std::nullopt;
    memory_entry m;
    m.event_id = e.id;
    m.author = e.author;
    m.timestamp = e.timestamp;
    if (e.actions.compaction && !e.actions.compaction->summary.empty()) {
        m.text = e.actions.compaction->summary;
        m.metadata["compaction"] = json::object{{"first_sequence", e.actions.compaction->first_sequence},
                                                {"last_sequence", e.actions.compaction->last_sequence}};
        return m;
    }
    if (e.type != event_type::user_message && e.type != event_type::agent_message) return std::nullopt;
    if (metadata_flag(e.metadata, "silent") || metadata_flag(e.metadata, "error")) return std::nullopt;
    m.text = e.text();
    if (m.text.empty()) return std::nullopt;
    return m;
}

/// errc::invalid_argument naming the bad id, or success.
inline boost::system::error_code check_memory_ids(std::string_view app, std::string_view user,
                                                  std::string_view session, diagnostics* diag) {
    for (auto [what, id] : {std::pair<const char*, std::string_view>{"app id", app}, {"user id", user}, {"session id", session}})
        if (auto p = id_problem(id); !p.empty()) {
            if (diag) diag->assign(std::string("memory: the ") + what + " " + p);
            return errc::invalid_argument;
        }
    return {};
}

/// Why `s` cannot be an entry's id, author or text ("" if it can): it must be UTF-8 without
/// NUL (PostgreSQL passes text as C strings: a NUL would cut it); `no_controls`: without
/// any control character either (an id names the entry in messages and keys).
inline std::string memory_field_problem(std::string_view s, bool no_controls) {
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == 0) return "contains a NUL byte (at offset " + std::to_string(i) + ")";
        if (no_controls && (c < 0x20 || c == 0x7f))
            return std::string("contains a control character (0x") + hex[c >> 4] + hex[c & 15] + " at offset " +
                   std::to_string(i) + ")";
    }
    if (auto f = find_invalid_utf8(s)) return f->message().substr(f->message().find("is not")); // not "string is not"
    return {};
}

/// The entries `events` are remembered as (memory_entry_of), in `session`, each checked
/// before any is returned: a non-empty id without control characters, UTF-8 id, author and
/// text, a finite time. A NUL in author or text (which stores keep, and PostgreSQL's C-string
/// parameters would cut) becomes a space: it separates words anyway, and a turn whose
/// message holds one must not fail to be remembered. errc::invalid_argument naming the event and the
/// field otherwise, and `out` empty: a back end stores nothing of the call. Events that
/// are not remembered are not checked.
inline boost::system::error_code memory_entries_of(event_span events, const std::string& session,
                                                   std::vector<memory_entry>& out, diagnostics* diag) {
    out.clear();
    std::size_t at = 0;
    for (const event& e : events) {
        ++at;
        auto m = memory_entry_of(e);
        if (!m) continue;
        std::replace(m->author.begin(), m->author.end(), '\0', ' ');
        std::replace(m->text.begin(), m->text.end(), '\0', ' ');
        std::string problem;
        if (m->event_id.empty()) problem = "the id is empty (an entry is known by its event's id)";
        else if (auto p = memory_field_problem(m->event_id, true); !p.empty()) problem = "the id " + p;
        else if (auto p = memory_field_problem(m->author, false); !p.empty()) problem = "the author " + p;
        else if (auto p = memory_field_problem(m->text, false); !p.empty()) problem = "the text " + p;
        else if (!std::isfinite(m->timestamp))
            problem = std::string("the timestamp ") +
                      (std::isnan(m->timestamp) ? "NaN" : m->timestamp > 0 ? "inf" : "-inf") + " is not finite";
        if (problem.empty()) {
            m->session_id = session;
            out.push_back(std::move(*m));
            continue;
        }
        if (diag) {
            // The id is quoted unless it is what is wrong.
            std::string name = "event " + std::to_string(at) + " of " + std::to_string(events.size());
            if (!problem.starts_with("the id")) {
                std::size_t n = std::min<std::size_t>(m->event_id.size(), 80);
                while (n < m->event_id.size() && (static_cast<unsigned char>(m->event_id[n]) & 0xC0) == 0x80) --n;
                name += " ('" + m->event_id.substr(0, n) + (n < m->event_id.size() ? "...')" : "')");
            }
            diag->assign("memory add, session '" + session + "': " + name + ": " + problem + ": nothing added");
        }
        out.clear();
        return errc::invalid_argument;
    }
    return {};
}

namespace memory_text {

// A byte of no valid UTF-8 sequence, as next() returns it: past every code point, so it is
// kept in a word as it is (never folded, never a separator).
inline constexpr char32_t stray_byte = 0x110000;

// Decodes the code point at s[i] and moves i past it. The texts an entry holds and the
// queries are checked UTF-8, but the runner's preload asks for the words of any text.
inline char32_t next(std::string_view s, std::size_t& i) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
    const unsigned char c = *p;
    if (c < 0x80) {
        ++i;
        return c;
    }
    // utf8_sequence (json_text.hpp) also refuses overlong forms, surrogates and what is past
    // U+10FFFF, and a sequence cut short.
    const std::size_t n = utf8_sequence(p, reinterpret_cast<const unsigned char*>(s.data()) + s.size());
    if (n == 0) {
        ++i;
        return stray_byte + c;
    }
    char32_t cp = c & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    return cp;
}

// Whether a code point past ASCII separates words: the punctuation, symbols, spaces and
// controls of Latin-1 (not ª º µ ² ³ ¹ ¼ ½ ¾, which unicode61 keeps in words), × and ÷,
// General Punctuation (U+2000-U+206F: spaces, dashes, quotes such as ’, ellipsis, zero
// widths), Supplemental Punctuation, CJK spaces and brackets, the BOM and the fullwidth
// forms of ASCII punctuation. Other scripts' letters, digits and symbols stay in words.
inline bool separates(char32_t c) noexcept {
    if (c >= 0x80 && c <= 0xBF)
        return !(c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA || (c >= 0xBC && c <= 0xBE));
    return c == 0xD7 || c == 0xF7 || (c >= 0x2000 && c <= 0x206F) || (c >= 0x2E00 && c <= 0x2E7F) ||
           (c >= 0x3000 && c <= 0x3003) || (c >= 0x3008 && c <= 0x3011) || (c >= 0x3014 && c <= 0x301F) ||
           c == 0xFEFF || (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
           (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
}

// The lower case of the capitals of Latin-1, Latin Extended-A, basic Greek and Cyrillic;
// any other code point as it is. İ (U+0130) stays, as unicode61 keeps it.
inline char32_t fold(char32_t c) noexcept {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
    if (c == 0x130) return c;
    if (c == 0x178) return 0xFF;
    // Latin Extended-A pairs capital and small: even-odd, but odd-even in 0139-0148 and 0179-017E.
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c % 2 == 0 ? c + 1 : c;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return c % 2 == 1 ? c + 1 : c;
    if ((c >= 0x391 && c <= 0x3A9 && c != 0x3A2) || (c >= 0x410 && c <= 0x42F)) return c + 0x20;
    if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    return c;
}

inline void append(std::string& w, char32_t c) {
    if (c >= stray_byte) w += static_cast<char>(c - stray_byte);
    else if (c < 0x80) w += static_cast<char>(c);
    else if (c < 0x800) {
        w += static_cast<char>(0xC0 | (c >> 6));
        w += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        w += static_cast<char>(0xE0 | (c >> 12));
        w += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        w += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        w += static_cast<char>(0xF0 | (c >> 18));
        w += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        w += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        w += static_cast<char>(0x80 | (c & 0x3F));
    }
}

} // namespace memory_text

/// The lowercase words of `text`. Words are runs of ASCII letters and digits and of
/// non-ASCII code points, split at everything else of ASCII and at the Unicode spaces and
/// punctuation of memory_text::separates; lower case is memory_text::fold (ASCII, Latin-1,
/// Latin Extended-A, basic Greek and Cyrillic). docs/memory.md compares this with SQLite's
/// unicode61 tokenizer and PostgreSQL's parser.
inline std::vector<std::string> memory_words(std::string_view text) {
    std::vector<std::string> words;
    std::string w;
    for (std::size_t i = 0; i < text.size();) {
        const char32_t c = memory_text::next(text, i);
        const bool word = c < 0x80 ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                                   : !memory_text::separates(c);
        if (word) {
            memory_text::append(w, memory_text::fold(c));
        } else if (!w.empty()) {
            words.push_back(std::move(w));
            w.clear();
        }
    }
    if (!w.empty()) words.push_back(std::move(w));
    return words;
}

/// Why `limit` cannot be a search's ("" if it can): 1 to max_memory_limit.
inline std::string memory_limit_problem(std::size_t limit) {
    if (limit >= 1 && limit <= max_memory_limit) return {};
    return "limit is " + std::to_string(limit) + " (1 to " + std::to_string(max_memory_limit) + ")";
}

/// The query checked: valid ids, UTF-8 words to look for, a limit of 1..1000.
inline boost::system::error_code check_memory_query(const memory_query& q, diagnostics* diag) {
    for (auto [what, id] : {std::pair<const char*, std::string_view>{"app id", q.app_name}, {"user id", q.user_id}})
        if (auto p = id_problem(id); !p.empty()) {
            if (diag) diag->assign(std::string("memory search: the ") + what + " " + p);
            return errc::invalid_argument;
        }
    if (auto p = memory_limit_problem(q.limit); !p.empty()) {
        if (diag) diag->assign("memory search: " + p);
        return errc::invalid_argument;
    }
    // The back ends' databases take UTF-8 only: refused here, named, on every back end.
    if (auto f = find_invalid_utf8(q.text)) {
        if (diag) diag->assign("memory search: the query " + f->message().substr(f->message().find("is not")));
        return errc::invalid_argument;
    }
    if (memory_words(q.text).empty()) {
        if (diag) diag->assign("memory search: the query has no words");
        return errc::invalid_argument;
    }
    return {};
}

} // namespace libretto::detail

#endif
