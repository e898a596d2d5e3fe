// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_COMPACTION_CHECK_HPP
#define LIBRETTO_EVENT_COMPACTION_CHECK_HPP

// check_compaction: the one rule for what a compaction event may say. A range that is
// reversed, starts before sequence 1 or ends past the session's last stored event, or a
// summary with no text, would hide history from the model (or hide events appended later)
// without summarising it. Where a compaction is made (prepare_compaction,
// make_compaction_event) and where it is stored (every store's append) such a compaction is
// refused with errc::invalid_argument and this message; one already stored (written by
// another tool) is ignored by the context view and by the runner's load.
// docs/compaction.md, "Validated compactions".

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace libretto {

/// What check_compaction found: nothing (a valid compaction), or errc::invalid_argument
/// and a message naming the field ("actions.compaction.summary is empty").
struct compaction_check {
    boost::system::error_code code{};
    std::string message{};

    /// True if the compaction is refused.
    explicit operator bool() const noexcept { return static_cast<bool>(code); }
};

/// For check_compaction: the session's end is not known (the range's end is not checked).
inline constexpr std::int64_t unknown_last_sequence = std::numeric_limits<std::int64_t>::max();

/// Checks `c` for a session whose newest event before the compaction event has sequence
/// `last_stored` (at an append: the stored session's last sequence; for a stored event:
/// its own sequence - 1). Refused: first_sequence below 1; first_sequence above
/// last_sequence; last_sequence above `last_stored`; a summary that is empty or only
/// whitespace (space, tab, CR, LF).
inline compaction_check check_compaction(const event_compaction& c,
                                         std::int64_t last_stored = unknown_last_sequence) {
    auto refuse = [](std::string m) { return compaction_check{errc::invalid_argument, std::move(m)}; };
    if (c.first_sequence < 1)
        return refuse("actions.compaction.first_sequence is " + std::to_string(c.first_sequence) +
                      "; sequences start at 1");
    if (c.first_sequence > c.last_sequence)
        return refuse("actions.compaction.first_sequence " + std::to_string(c.first_sequence) +
                      " is after last_sequence " + std::to_string(c.last_sequence) + " (a reversed range)");
    if (c.last_sequence > last_stored)
        return refuse("actions.compaction.last_sequence " + std::to_string(c.last_sequence) +
                      " is past the session's last stored sequence " + std::to_string(last_stored) +
                      " (a compaction covers events stored before it)");
    if (c.summary.find_first_not_of(" \t\r\n") == std::string::npos)
        return refuse(c.summary.empty() ? "actions.compaction.summary is empty"
                                        : "actions.compaction.summary holds only whitespace");
    return {};
}

/// check_compaction for the compaction a stored event `e` records: its range must end
/// before `e` itself (no bound for an event without a sequence, one not stored yet).
/// Nothing for an event without a compaction.
inline compaction_check check_compaction(const event& e) {
    if (!e.actions.compaction) return {};
    return check_compaction(*e.actions.compaction, e.sequence > 0 ? e.sequence - 1 : unknown_last_sequence);
}

/// True if `e` records a compaction that check_compaction accepts (a message is built
/// only for one it refuses).
inline bool is_valid_compaction(const event& e) { return e.actions.compaction && !check_compaction(e); }

} // namespace libretto

#endif
