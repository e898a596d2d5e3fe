// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_EXTRACTIVE_SUMMARIZER_HPP
#define LIBRETTO_COMPACTION_EXTRACTIVE_SUMMARIZER_HPP

// extractive_summarizer: a summary without a model. A deterministic digest of the events
// (same request, same bytes): the previous summary carried forward ("Earlier:"), the
// conversation one shortened line per message, tool call and tool result (newest kept
// when space runs out), the split turn's start, the latest user request verbatim and the
// identifiers verbatim, in at most max_chars bytes, never cut inside a UTF-8 character.
// Never throws (except std::bad_alloc). Layout and budgets: docs/compaction.md.

#include <libretto/compaction/detail/summary_text.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct extractive_summarizer_options {
    /// Bytes of the whole summary (UTF-8; never cut inside a character).
    std::size_t max_chars = 4000;
    /// Bytes of each message line of the conversation (whitespace folded, then shortened).
    std::size_t message_chars = 240;
    /// Arguments shown per tool call (the first ones, in the call's order).
    std::size_t max_arg_keys = 4;
    /// Bytes of each shown argument value (as JSON).
    std::size_t arg_value_chars = 60;
    /// Bytes of each tool result or tool error.
    std::size_t tool_result_chars = 160;
    /// Bounds of the identifiers found in the events and the previous summary.
    identifier_options identifiers{};
};

class extractive_summarizer {
public:
    extractive_summarizer() = default;
    /// The fewest bytes max_chars may give a summary: one that could be empty would fail
    /// the compaction it is for.
    static constexpr std::size_t min_max_chars = 16;

    /// Throws system_error(errc::invalid_argument) when o.max_chars is below min_max_chars.
    explicit extractive_summarizer(extractive_summarizer_options o) : o_(std::move(o)) {
        if (o_.max_chars < min_max_chars)
            boost::throw_exception(boost::system::system_error(
                make_error_code(errc::invalid_argument),
                "extractive_summarizer_options::max_chars is " + std::to_string(o_.max_chars) + "; a summary needs at least " +
                    std::to_string(min_max_chars) + " bytes"));
    }

    /// The summary of `r`, computed at once (no suspension). The operation holds a copy of *this.
    template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
    boost::asio::awaitable<summary> async_summarize(summary_request r) { return run(*this, std::move(r)); }

    /// The same, synchronously.
    summary summarize(const summary_request& r) const {
        summary s;
        s.text = text_of(r);
        s.produced_by = "extractive";
        return s;
    }

    std::string_view name() const noexcept { return "extractive"; }
    const extractive_summarizer_options& options() const noexcept { return o_; }

private:
    template <class = void>
    static boost::asio::awaitable<summary> run(extractive_summarizer self, summary_request r) {
        co_return self.summarize(r);
    }

    std::string line_text(std::string_view s, std::size_t max) const {
        return detail::summary_text::shorten(detail::summary_text::fold_whitespace(s), max);
    }

    /// The conversation items of one event (no "- " prefix, no newline).
    void items_of(const event& e, std::vector<std::string>& out) const {
        namespace st = detail::summary_text;
        if (e.partial || e.type == event_type::agent_start || e.type == event_type::agent_end) return;
        if (e.is_compaction()) {
            std::string t = e.text();
            if (st::trim(t).empty()) t = e.actions.compaction->summary;
            if (!st::trim(t).empty()) out.push_back("Earlier summary: " + line_text(t, o_.message_chars));
            return;
        }
        const bool from_user = e.type == event_type::user_message;
        std::string who = from_user ? std::string("User") : std::string("Assistant");
        if (!from_user && !e.author.empty() && e.author != "assistant" && e.author != "model") who += " (" + e.author + ")";
        for (const part& p : e.content.parts) {
            if (const auto* t = std::get_if<text_part>(&p)) {
                if (st::trim(t->text).empty()) continue;
                out.push_back(who + ": " + line_text(t->text, o_.message_chars));
            } else if (const auto* d = std::get_if<data_part>(&p)) {
                out.push_back(who + " data: " + line_text(boost::json::serialize(d->data), o_.tool_result_chars));
            } else if (const auto* f = std::get_if<file_part>(&p)) {
                std::string s = who + " file: " + f->name.value_or("file");
                if (f->uri) s += " <" + *f->uri + ">";
                out.push_back(line_text(s, o_.message_chars));
            } else if (const auto* c = std::get_if<tool_call_part>(&p)) {
                std::string s = "Tool call: " + c->tool_name + "(";
                std::size_t n = 0;
                for (const auto& kv : c->args) {
                    if (n == o_.max_arg_keys) break;
                    if (n++) s += ", ";
                    s += kv.key();
                    s += '=';
                    s += line_text(boost::json::serialize(kv.value()), o_.arg_value_chars);
                }
                if (c->args.size() > n) s += ", +" + std::to_string(c->args.size() - n) + " more";
                s += ')';
                out.push_back(std::move(s));
            } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
                if (r->error) out.push_back("Tool error (" + r->tool_name + "): " + line_text(*r->error, o_.tool_result_chars));
                else
                    out.push_back("Tool result (" + r->tool_name + "): " +
                                  line_text(st::json_text(r->result), o_.tool_result_chars));
            }
            // thinking is never shown
        }
    }

    std::vector<std::string> identifiers_of(const summary_request& r) const {
        std::vector<std::string> ids = r.identifiers;
        auto add_all = [&ids](std::vector<std::string> more) {
            for (auto& id : more)
                if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(std::move(id));
        };
        add_all(critical_identifiers(r.events, o_.identifiers));
        add_all(critical_identifiers(r.turn_prefix, o_.identifiers));
        if (r.previous_summary) add_all(text_identifiers(*r.previous_summary, o_.identifiers));
        return ids;
    }

    std::string text_of(const summary_request& r) const {
        namespace st = detail::summary_text;
        const std::size_t max = o_.max_chars;
        const bool has_prev = r.previous_summary && !st::trim(*r.previous_summary).empty();
        if (r.events.empty() && r.turn_prefix.empty()) {
            std::string t = has_prev ? std::string(st::trim(*r.previous_summary)) : std::string(empty_history_text);
            return st::shorten(t, max);
        }

        // Fixed sections first, each within its share of max.
        std::string header = "Summary of " + std::to_string(r.events.size() + r.turn_prefix.size()) +
                             " events (extractive, no model)";
        if (!r.turn_prefix.empty()) header += ", ending inside a turn";
        header += ".";

        std::string earlier;
        if (has_prev) earlier = "\n\nEarlier:\n" + st::shorten(st::trim(*r.previous_summary), max / 4);

        std::string latest_section;
        if (std::string latest = latest_user_request(r); !st::trim(latest).empty())
            latest_section = "\n\nLatest user request:\n" + st::shorten(st::trim(latest), max / 3);

        std::string ids_section;
        {
            const std::string head = "\n\nCritical identifiers:";
            std::string body;
            for (const auto& id : identifiers_of(r)) {
                std::string l = "\n- " + id;
                if (head.size() + body.size() + l.size() > max / 5) continue; // skip what does not fit; keep trying shorter ones
                body += l;
            }
            if (!body.empty()) ids_section = head + body;
        }

        // The conversation gets what is left, newest items first.
        std::vector<std::string> items;
        for (const event& e : r.events) items_of(e, items);
        const std::size_t history_items = items.size();
        for (const event& e : r.turn_prefix) items_of(e, items);

        const std::string conv_head = "\n\nConversation:";
        const std::string turn_head = "\n\nTurn context (split turn):";
        const std::size_t omitted_reserve = 48; // "\n- (… 123456 earlier items omitted)"
        const std::size_t fixed = header.size() + earlier.size() + latest_section.size() + ids_section.size() +
                                  conv_head.size() + turn_head.size() + omitted_reserve;
        std::size_t budget = fixed < max ? max - fixed : 0;
        std::size_t first_kept = items.size();
        while (first_kept > 0) {
            std::size_t cost = items[first_kept - 1].size() + 3; // "\n- "
            if (cost > budget) break;
            budget -= cost;
            --first_kept;
        }

        std::string out = header + earlier;
        if (history_items > 0) {
            out += conv_head;
            if (first_kept > 0)
                out += "\n- (\xE2\x80\xA6 " + std::to_string(std::min(first_kept, history_items)) + " earlier items omitted)";
            for (std::size_t i = first_kept; i < history_items; ++i) out += "\n- " + items[i];
        }
        if (items.size() > history_items) {
            out += turn_head;
            if (first_kept > history_items)
                out += "\n- (\xE2\x80\xA6 " + std::to_string(first_kept - history_items) + " earlier items omitted)";
            for (std::size_t i = std::max(first_kept, history_items); i < items.size(); ++i) out += "\n- " + items[i];
        }
        out += latest_section;
        out += ids_section;
        return st::shorten(out, max);
    }

    extractive_summarizer_options o_{};
};

static_assert(summarizer<extractive_summarizer>);

} // namespace libretto

#endif
