// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_BRANCH_HPP
#define LIBRETTO_EVENT_BRANCH_HPP

// Branches: the dotted path ("root.a.b") an event records of the agent tree that wrote it.

#include <string_view>

namespace libretto {

/// ADK's branch rule: is an event on branch `event_branch` part of the history an agent on
/// `viewer_branch` sees? Yes if either branch is empty (the root sees everything; events
/// outside any fork are shared), or `event_branch` is `viewer_branch` or one of its
/// ancestors ("a.b" is an ancestor of "a.b.c", not of "a.bc"). So parallel siblings
/// ("p.a", "p.b") never see each other's events, and everyone sees the shared history.
inline bool is_branch_visible(std::string_view event_branch, std::string_view viewer_branch) noexcept {
    if (viewer_branch.empty() || event_branch.empty()) return true;
    if (viewer_branch.size() < event_branch.size()) return false;
    if (viewer_branch.substr(0, event_branch.size()) != event_branch) return false;
    return viewer_branch.size() == event_branch.size() || viewer_branch[event_branch.size()] == '.';
}

} // namespace libretto

#endif
