// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_MEMORY_COMMON_HPP
#define LIBRETTO_STORE_DETAIL_MEMORY_COMMON_HPP

// What every memory_service back end shares: which events are remembered and as what, the
// checks of ids and queries, and the words of a text.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/memory_service.hpp>

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

/// The lowercase words of `text`: runs of ASCII letters and digits, and of non-ASCII bytes
/// (so words of other scripts stay whole).
inline std::vector<std::string> memory_words(std::string_view text) {
    std::vector<std::string> words;
    std::string w;
    for (unsigned char c : text) {
        const bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
        if (word) {
            w += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
        } else if (!w.empty()) {
            words.push_back(std::move(w));
            w.clear();
        }
    }
    if (!w.empty()) words.push_back(std::move(w));
    return words;
}

/// The query checked: valid ids, words to look for, a limit of 1..1000.
inline boost::system::error_code check_memory_query(const memory_query& q, diagnostics* diag) {
    for (auto [what, id] : {std::pair<const char*, std::string_view>{"app id", q.app_name}, {"user id", q.user_id}})
        if (auto p = id_problem(id); !p.empty()) {
            if (diag) diag->assign(std::string("memory search: the ") + what + " " + p);
            return errc::invalid_argument;
        }
    if (q.limit == 0 || q.limit > 1000) {
        if (diag) diag->assign("memory search: limit is " + std::to_string(q.limit) + " (1 to 1000)");
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
