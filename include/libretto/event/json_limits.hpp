// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_JSON_LIMITS_HPP
#define LIBRETTO_EVENT_JSON_LIMITS_HPP

// What JSON libretto writes and reads back. One rule for every document a store keeps (an
// event line or row, a session header, shared state) and every text parse_event reads:
//
//   - numbers are finite: inf and NaN have no JSON text (Boost.JSON writes `Infinity`,
//     which no JSON reader accepts), and a number too large for a double (1e400) is
//     refused on read rather than turned into inf;
//   - arrays and objects nest at most max_json_depth levels, counted from the document's
//     root (an event's own members take 2 to 5 of them);
//   - an object holds each key once (readers that keep the first and readers that keep
//     the last would see different events, and a signature covers only one of them);
//   - strings are UTF-8 (stores refuse others; stored text written by earlier versions
//     with other bytes still reads back).
//
// Writers refuse what breaks a rule before anything is stored, with errc::invalid_argument
// and a message naming the member; readers refuse it with errc::invalid_json (corrupt_data
// in a store). See docs/reliability.md.

#include <cstddef>

namespace libretto {

/// The deepest nesting of arrays and objects in a JSON document libretto stores or parses.
inline constexpr std::size_t max_json_depth = 256;

} // namespace libretto

#endif
