// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_SILENT_REPLY_HPP
#define LIBRETTO_RUNNER_DETAIL_SILENT_REPLY_HPP

// Silent turns (run_options::silent_token, docs/runner.md "Silent turns"): a reply whose
// whole text is the token (case-insensitive, white space around it ignored) is stored,
// marked metadata["silent"] = true, and not yielded; the partial events of a reply are held
// back while its text so far could still become the token, and dropped once it begins with
// the token, so nothing of a silent reply reaches the caller mid-turn. Sans-io: the runner
// asks it about each event.

#include <libretto/detail/ascii.hpp>
#include <libretto/event/event.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace libretto::detail {

/// True if `text` is the silent token and nothing else (case-insensitive, white space
/// around it ignored). An empty token matches nothing.
inline bool is_silent_reply(std::string_view text, std::string_view token) noexcept {
    token = trim(token); // " NO_REPLY" is NO_REPLY: the reply is trimmed too
    return !token.empty() && iequals(trim(text), token);
}

class silent_reply_filter {
public:
    /// White space around `token` is ignored; a blank token makes nothing silent.
    explicit silent_reply_filter(std::string_view token) : token_(trim(token)) {}

    /// A partial event of the agent: the event to yield now (it, or it merged with the
    /// partials held before it), or nullopt to yield nothing yet.
    std::optional<event> partial(event&& ev) {
        if (ev.id != id_) { // another reply: what was held of the previous one is superseded
            id_ = ev.id;
            text_.clear();
            held_.reset();
            state_ = state::undecided;
        }
        if (state_ == state::delivered || token_.empty()) return std::move(ev);
        if (state_ == state::silent) return std::nullopt;
        for (const auto& p : ev.content.parts)
            if (const auto* t = std::get_if<text_part>(&p)) text_ += t->text;
        if (held_) append_parts(*held_, std::move(ev));
        else held_ = std::move(ev);
        const std::string_view so_far = trim_left(text_);
        if (so_far.size() >= token_.size() && iequals(so_far.substr(0, token_.size()), token_)) {
            state_ = state::silent; // begins with the token: nothing of it is shown mid-turn
            held_.reset();
            return std::nullopt;
        }
        if (iequals(so_far, std::string_view(token_).substr(0, so_far.size())))
            return std::nullopt; // could still become the token (or has no text yet)
        state_ = state::delivered;
        std::optional<event> out = std::move(held_);
        held_.reset();
        return out;
    }

    /// A stored event of the agent: true if it is a silent reply, which the runner stores
    /// (marked here: metadata["silent"] = true) and does not yield.
    bool silent_final(event& ev) {
        if (ev.id == id_) { // the reply the partials were part of: they are superseded now
            held_.reset();
            id_.clear();
            text_.clear();
            state_ = state::undecided;
        }
        if (ev.type != event_type::agent_message || ev.has_tool_calls() || !is_silent_reply(ev.text(), token_))
            return false;
        ev.metadata["silent"] = true;
        return true;
    }

private:
    enum class state { undecided, silent, delivered };

    static std::string_view trim_left(std::string_view s) noexcept {
        while (!s.empty() && is_http_space(s.front())) s.remove_prefix(1);
        return s;
    }

    /// Appends `more`'s parts to `into`'s, joining neighbouring text (or thinking) parts.
    static void append_parts(event& into, event&& more) {
        auto& parts = into.content.parts;
        for (auto& p : more.content.parts) {
            if (auto* t = std::get_if<text_part>(&p)) {
                if (auto it = find_last<text_part>(parts)) {
                    it->text += t->text;
                    continue;
                }
            } else if (auto* th = std::get_if<thinking_part>(&p)) {
                if (auto it = find_last<thinking_part>(parts)) {
                    it->thinking += th->thinking;
                    continue;
                }
            }
            parts.push_back(std::move(p));
        }
    }

    template <class Part>
    static Part* find_last(std::vector<part>& parts) noexcept {
        for (auto it = parts.rbegin(); it != parts.rend(); ++it)
            if (auto* p = std::get_if<Part>(&*it)) return p;
        return nullptr;
    }

    std::string token_;
    std::string id_;   ///< the reply whose partials are being watched
    std::string text_; ///< its text so far
    std::optional<event> held_;
    state state_ = state::undecided;
};

} // namespace libretto::detail

#endif
