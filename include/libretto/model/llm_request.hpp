// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_LLM_REQUEST_HPP
#define LIBRETTO_MODEL_LLM_REQUEST_HPP

// What an agent sends a model: the system instruction, the conversation as role-tagged
// messages, the tools, an optional output schema and generation options. Provider-neutral:
// openai_model / anthropic_model translate it to their wire formats.
//
// build_messages() turns the events a model may see (a context_view) into those messages;
// it is a pure function, specified in docs/models.md ("From events to messages").

#include <libretto/json_stringify.hpp>
#include <libretto/detail/small_id_map.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/model/tool_declaration.hpp>

#include <boost/assert.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace libretto {

/// Who a message is from, as the model sees it.
enum class message_role {
    user,      ///< the user, and context the model did not produce (other agents, summaries)
    assistant, ///< this agent's own earlier replies ("model" in Gemini's terms)
    tool,      ///< results of this agent's tool calls
};

constexpr std::string_view to_string(message_role r) noexcept {
    switch (r) {
    case message_role::user: return "user";
    case message_role::assistant: return "assistant";
    case message_role::tool: return "tool";
    }
    return "unknown";
}

/// Writes the name ("assistant"), for logs and test diagnostics.
template <class Ostream>
    requires requires(Ostream& os, std::string_view s) { os << s; }
Ostream& operator<<(Ostream& os, message_role r) {
    os << to_string(r);
    return os;
}

/// One message of a conversation: a role and libretto's own parts. An assistant message
/// may hold text, thinking, data, file and tool_call parts; a tool message holds
/// tool_response parts (one per answered call); a user message text, data and file parts.
struct message {
    message_role role = message_role::user;
    std::vector<part> parts{};

    static message user(std::string text) { return from_text(message_role::user, std::move(text)); }
    static message assistant(std::string text) { return from_text(message_role::assistant, std::move(text)); }
    static message from_text(message_role r, std::string text) {
        message m;
        m.role = r;
        m.parts.emplace_back(text_part{std::move(text), {}});
        return m;
    }

    /// Concatenation of the text parts.
    std::string text() const {
        std::string out;
        for (const auto& p : part_view<text_part>(parts)) out += p.text;
        return out;
    }
    part_view<tool_call_part> tool_calls() const noexcept { return part_view<tool_call_part>(parts); }
    part_view<tool_response_part> tool_responses() const noexcept { return part_view<tool_response_part>(parts); }

    friend bool operator==(const message&, const message&) = default;
};

/// Sampling and length controls. Unset members leave the provider's default.
struct generation_options {
    std::optional<double> temperature{};
    std::optional<double> top_p{};
    std::optional<std::int64_t> max_output_tokens{};
    std::vector<std::string> stop_sequences{};
    std::optional<std::int64_t> seed{};

    friend bool operator==(const generation_options&, const generation_options&) = default;
};

/// Everything a model needs for one generation.
struct llm_request {
    /// Overrides the model's configured name (e.g. "gpt-4o-mini" for one call); empty: the
    /// model's own.
    std::string model{};
    std::string system_instruction{};
    std::vector<message> messages{};
    /// Shared by copies of the request until changed (tool_list).
    tool_list tools{};
    /// A JSON Schema the reply must follow (structured output); the reply arrives as text
    /// holding that JSON.
    std::optional<json::object> output_schema{};
    generation_options options{};

    friend bool operator==(const llm_request&, const llm_request&) = default;
};

namespace detail {

/// Text for a JSON value inside a context line: strings as they are, anything else as JSON.
inline std::string context_json_text(const json::value& v) {
    if (const auto* s = v.if_string()) return std::string(*s);
    return stringify(v);
}

/// "[author] `name` tool returned result: ..." (or "... tool failed: <error>").
inline std::string context_response_line(std::string_view author, const tool_response_part& r) {
    std::string line = "[";
    line += author;
    line += "] `";
    line += r.tool_name;
    if (r.error) {
        line += "` tool failed: ";
        line += *r.error;
    } else {
        line += "` tool returned result: ";
        line += context_json_text(r.result);
    }
    return line;
}

inline void push_text(std::vector<part>& parts, std::string text) { parts.emplace_back(text_part{std::move(text), {}}); }

/// `from` into `to` (a default object) unless it is empty: Boost.JSON's copy constructor
/// is out of line, ~60 instructions even for an empty object, and a request copies every
/// part of the history; most parts' metadata is empty.
inline void copy_into(json::object& to, const json::object& from) {
    if (!from.empty()) to = from;
}

/// Appends a copy of `r` to `parts` (see copy_into).
inline void push_copy(std::vector<part>& parts, const tool_response_part& r) {
    auto& c = std::get<tool_response_part>(parts.emplace_back(std::in_place_type<tool_response_part>));
    c.tool_call_id = r.tool_call_id;
    c.tool_name = r.tool_name;
    c.result = r.result;
    c.error = r.error;
    copy_into(c.metadata, r.metadata);
}

/// Appends a copy of `p` to `parts`, its empty JSON objects made rather than copied.
inline void push_copy(std::vector<part>& parts, const part& p) {
    if (const auto* t = std::get_if<text_part>(&p)) {
        auto& c = std::get<text_part>(parts.emplace_back(std::in_place_type<text_part>));
        c.text = t->text;
        copy_into(c.metadata, t->metadata);
    } else if (const auto* k = std::get_if<thinking_part>(&p)) {
        auto& c = std::get<thinking_part>(parts.emplace_back(std::in_place_type<thinking_part>));
        c.thinking = k->thinking;
        copy_into(c.metadata, k->metadata);
    } else if (const auto* call = std::get_if<tool_call_part>(&p)) {
        auto& c = std::get<tool_call_part>(parts.emplace_back(std::in_place_type<tool_call_part>));
        c.tool_call_id = call->tool_call_id;
        c.tool_name = call->tool_name;
        copy_into(c.args, call->args);
        copy_into(c.metadata, call->metadata);
    } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
        push_copy(parts, *r);
    } else {
        parts.push_back(p); // data and file parts: as they are
    }
}

/// An event written by another agent (or an orphaned tool response), presented to this agent
/// as user-role context: "For context:", then one text part per part of the event. Empty
/// when nothing is left to show.
inline message foreign_context(const event& e, std::span<const tool_response_part* const> only = {}) {
    message m;
    m.role = message_role::user;
    push_text(m.parts, "For context:");
    const std::string& who = e.author;
    auto wanted = [&](const tool_response_part* r) {
        if (only.empty()) return true;
        for (const auto* o : only)
            if (o == r) return true;
        return false;
    };
    for (const auto& p : e.content.parts) {
        if (const auto* t = std::get_if<text_part>(&p)) {
            if (!only.empty() || t->text.empty()) continue;
            push_text(m.parts, "[" + who + "] said: " + t->text);
        } else if (const auto* d = std::get_if<data_part>(&p)) {
            if (!only.empty()) continue;
            push_text(m.parts, "[" + who + "] said: " + stringify(d->data));
        } else if (const auto* c = std::get_if<tool_call_part>(&p)) {
            if (!only.empty()) continue;
            push_text(m.parts, "[" + who + "] called tool `" + c->tool_name +
                                   "` with parameters: " + stringify(c->args));
        } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
            if (!wanted(r)) continue;
            push_text(m.parts, context_response_line(who, *r));
        } else if (std::holds_alternative<file_part>(p)) {
            if (!only.empty()) continue;
            push_copy(m.parts, p);
        }
        // thinking_part: another agent's reasoning is never shown.
    }
    if (m.parts.size() == 1) m.parts.clear();
    return m;
}

// build_messages_impl's pairing of calls and responses (at namespace scope: g++ 12 crashes
// on a local class of a function template whose members default to a local constant).
inline constexpr std::size_t no_call_slot = static_cast<std::size_t>(-1);
struct call_slot {
    const tool_call_part* call = nullptr;
    const tool_response_part* response = nullptr;
    std::vector<const part*> extras{};    // a tool-response event's other parts
    std::size_t next_open = no_call_slot; // the unanswered call of this id made before it
};
struct call_id_state {
    std::size_t open = no_call_slot;     // the latest unanswered call: a stack through next_open
    std::size_t answered = no_call_slot; // the call answered last
};

template <class Events>
std::vector<message> build_messages_impl(const Events& events, std::string_view agent_name) {
    // ADK's rule (google/adk-python, src/google/adk/flows/llm_flows/contents.py,
    // _is_other_agent_reply): with a non-empty agent name, every event whose author is
    // neither that name nor "user" is another agent's reply. Unlike ADK we also look at the
    // type: a user_message is the user's whatever its author (the context view shows
    // compaction summaries as user messages authored by whoever compacted).
    auto foreign = [&](const event& e) {
        return !agent_name.empty() && e.type != event_type::user_message && e.author != agent_name &&
               e.author != "user";
    };
    auto skipped = [](const event& e) {
        return e.partial || e.type == event_type::agent_start || e.type == event_type::agent_end;
    };
    // Tool responses travel with the assistant message that made the call. A response is
    // "placed" with the nearest earlier unanswered call of this agent with its id (servers
    // that number calls per reply reuse "0" at every step); with every such call answered,
    // it replaces the response of the last one answered (interim results of long-running
    // tools are superseded).
    constexpr std::size_t none = no_call_slot;
    boost::container::small_vector<call_slot, 4> slots; // this agent's calls, in order
    small_id_map<call_id_state> ids;
    std::vector<const tool_response_part*> orphans_found; // responses without an earlier call: rare
    for (const event& e : events) {
        if (skipped(e) || foreign(e)) continue;
        if (e.type == event_type::agent_message) {
            const std::size_t first_new = slots.size();
            for (const auto& c : e.tool_calls()) {
                slots.emplace_back();
                slots.back().call = &c;
            }
            // Stacked last to first: calls of one id in one reply are answered in order.
            for (std::size_t k = slots.size(); k-- > first_new;) {
                call_id_state& st = ids[slots[k].call->tool_call_id];
                slots[k].next_open = st.open;
                st.open = k;
            }
        }
        std::size_t first = none;
        for (const auto& r : e.tool_responses()) {
            call_id_state* st = ids.find(r.tool_call_id);
            std::size_t at = none;
            if (st && st->open != none) {
                at = st->open;
                st->open = slots[at].next_open;
            } else if (st) {
                at = st->answered;
            }
            if (at == none) {
                orphans_found.push_back(&r);
                continue;
            }
            st->answered = at;
            slots[at].response = &r;
            slots[at].extras.clear();
            if (first == none) first = at;
        }
        if (first != none && e.type == event_type::tool_response) {
            call_slot& slot = slots[first];
            for (const auto& p : e.content.parts)
                if (!std::holds_alternative<tool_response_part>(p) &&
                    !(std::holds_alternative<text_part>(p) && std::get<text_part>(p).text.empty()))
                    slot.extras.push_back(&p);
        }
    }

    std::vector<message> out;
    out.reserve(events.size()); // about one message per event: no regrowth, no moves
    // The scan below meets this agent's calls and responses in the order the scan above did.
    std::size_t next_slot = 0;
    std::size_t next_orphan = 0;
    for (const event& e : events) {
        if (skipped(e)) continue;
        if (foreign(e)) {
            message m = foreign_context(e);
            if (!m.parts.empty()) out.push_back(std::move(m));
            continue;
        }
        // Orphaned responses (no earlier call of this agent): context text, in place.
        std::vector<const tool_response_part*> orphans;
        if (next_orphan < orphans_found.size())
            for (const auto& r : e.tool_responses())
                if (next_orphan < orphans_found.size() && orphans_found[next_orphan] == &r)
                    orphans.push_back(orphans_found[next_orphan++]);
        if (!orphans.empty()) {
            message m = foreign_context(e, orphans);
            if (!m.parts.empty()) out.push_back(std::move(m));
        }

        if (e.type == event_type::tool_response) {
            // Placed responses went out after their call. A tool-response event without any
            // response part is shown as user text.
            if (!e.tool_responses().empty()) continue;
        }

        message m;
        const bool own_reply = e.type == event_type::agent_message;
        m.role = own_reply ? message_role::assistant : message_role::user;
        for (const auto& p : e.content.parts) {
            if (const auto* t = std::get_if<text_part>(&p)) {
                if (!t->text.empty()) push_copy(m.parts, p);
            } else if (std::holds_alternative<thinking_part>(p)) {
                if (own_reply) push_copy(m.parts, p); // only this agent's own reasoning
            } else if (std::holds_alternative<tool_call_part>(p)) {
                if (own_reply) push_copy(m.parts, p);
            } else if (std::holds_alternative<data_part>(p) || std::holds_alternative<file_part>(p)) {
                push_copy(m.parts, p);
            }
            // tool_response_part: placed after its call, or shown as an orphan above.
        }
        if (m.parts.empty()) continue;
        const bool has_calls = !m.tool_calls().empty();
        out.push_back(std::move(m));
        if (!has_calls) continue;

        message results;
        results.role = message_role::tool;
        std::vector<const part*> extras;
        for (const auto& c : e.tool_calls()) {
            const call_slot& slot = slots[next_slot++];
            BOOST_ASSERT(slot.call == &c);
            (void)c;
            if (!slot.response) continue;
            push_copy(results.parts, *slot.response);
            extras.insert(extras.end(), slot.extras.begin(), slot.extras.end());
        }
        for (const part* p : extras) push_copy(results.parts, *p);
        if (!results.parts.empty()) out.push_back(std::move(results));
    }
    return out;
}

} // namespace detail

/// The messages a model is shown for `view`, from the point of view of the agent named
/// `agent_name` (ADK's convention, google/adk-python contents.py):
///
/// - user messages (and compaction summaries, which the view shows as user messages),
///   whatever their author → user role; thinking and tool-call parts in them are dropped;
/// - this agent's own replies → assistant role, with their thinking and tool calls;
/// - responses to this agent's tool calls → one tool message placed right after the
///   assistant message that made the calls, in call order, whatever the events in between
///   (ADK's _rearrange_events_for_async_function_responses_in_history). A response answers
///   the nearest earlier unanswered call with its id (an id may come back at a later step),
///   else supersedes the response of the last call of that id answered: the last response
///   to a call wins;
/// - events authored by another agent (author neither `agent_name` nor "user") → a
///   user-role message "For context:", "[other] said: <text>", "[other] called tool `t`
///   with parameters: <json>", "[other] `t` tool returned result: <result>" (ADK's
///   _present_other_agent_message); the other agent's thinking is dropped;
/// - a tool response with no earlier call of this agent → the same context text, in place;
/// - partial and lifecycle events are skipped, empty text parts dropped, and messages left
///   without parts omitted.
///
/// An empty `agent_name` treats every author as this agent (no "For context:" text).
/// The view should come from make_context_view, which also drops error events, unanswered
/// calls and orphan responses; build_messages does not filter beyond the rules above.
inline std::vector<message> build_messages(const context_view& view, std::string_view agent_name) {
    return detail::build_messages_impl(view, agent_name);
}

/// build_messages over events taken as they are (already filtered by the caller).
inline std::vector<message> build_messages(event_span events, std::string_view agent_name) {
    return detail::build_messages_impl(events, agent_name);
}

} // namespace libretto

#endif
