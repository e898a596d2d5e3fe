// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_MEMORY_SERVICE_HPP
#define LIBRETTO_STORE_MEMORY_SERVICE_HPP

// The memory_service concept: long-term recall. What was said in a user's sessions (and
// the summaries compaction wrote) is added to a memory; a search by words finds the best
// matching entries of that user of an app, ranked. docs/memory.md.
//
// A model is the synchronous core of one back end (in_memory_memory_service: keyword
// search; sqlite_memory_service: SQLite FTS5, bm25). Every call returns an error_code and
// writes, on failure, what was wrong to *diag when given:
//
//   s.memory_add(app, user, session_id, event_span events, std::size_t& added, diag)
//        the events' text: user and agent messages (not partial, not silent), and
//        compaction summaries with their range. An event already added (same session and
//        event id) is not added twice. Each of them is checked first (a non-empty id
//        without control characters; id, author and text UTF-8; a finite time; a NUL in
//        author or text is kept as a space): otherwise errc::invalid_argument naming it,
//        and nothing of the call added.
//   s.memory_search(const memory_query&, std::vector<memory_entry>& out, diag)
//        best first; at most query.limit. Words split at spaces and punctuation (Unicode's
//        too) and match regardless of case as far as the back end folds it (all: ASCII,
//        Latin-1, Latin Extended-A, basic Greek and Cyrillic; PostgreSQL only under a UTF-8
//        LC_CTYPE; docs/memory.md).
//   s.memory_erase_session(app, user, session_id, diag)    every entry of that session
//   S::blocking                                             true: calls wait for files or servers
//
// any_memory_service (any_memory_service.hpp) erases the type and adds the asynchronous
// operations.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <vector>

namespace libretto {

/// One remembered piece of a conversation.
struct memory_entry {
    std::string session_id{};
    std::string event_id{};  ///< the event it came from
    std::string author{};
    double timestamp = 0;    ///< the event's
    std::string text{};
    /// Where it came from beyond the event: {"compaction": {"start_sequence", "end_sequence"}}
    /// for a summary.
    json::object metadata{};
    double score = 0; ///< the back end's rank (higher is better); comparable within one search
};

/// The most entries one search returns (memory_query::limit, load_memory_tool's limit).
inline constexpr std::size_t max_memory_limit = 1000;

/// What to look for.
struct memory_query {
    std::string app_name{};
    std::string user_id{};
    std::string text{};     ///< words (UTF-8); every back end matches any of them, ranking more matches higher
    std::size_t limit = 10; ///< 1..max_memory_limit
};

using memory_add_signature = void(boost::system::error_code, std::size_t);
using memory_search_signature = void(boost::system::error_code, std::vector<memory_entry>);
using memory_erase_signature = void(boost::system::error_code);

/// The models of memory_service (see the top of this header).
template <class S>
concept memory_service = requires(S& s, const std::string& id, event_span events, std::size_t& added,
                                  const memory_query& q, std::vector<memory_entry>& out, diagnostics* diag) {
    { S::blocking } -> std::convertible_to<bool>;
    { s.memory_add(id, id, id, events, added, diag) } -> std::same_as<boost::system::error_code>;
    { s.memory_search(q, out, diag) } -> std::same_as<boost::system::error_code>;
    { s.memory_erase_session(id, id, id, diag) } -> std::same_as<boost::system::error_code>;
};

} // namespace libretto

#endif
