// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_DETAIL_SUMMARY_TRANSCRIPT_HPP
#define LIBRETTO_COMPACTION_DETAIL_SUMMARY_TRANSCRIPT_HPP

// Events as the role-tagged transcript model_summarizer puts in its prompt, so that the
// model reads a record rather than a conversation to continue. The line formats are in
// docs/compaction.md ("The transcript"). Internal.

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/summary_text.hpp>
#include <libretto/event/event.hpp>

#include <boost/json/serialize.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace libretto::detail::summary_transcript {

struct options {
    std::size_t max_tool_result_chars = 2000; ///< bytes of each tool result / error / data part
    std::size_t max_tool_arg_chars = 500;     ///< bytes of each tool-call argument value
    bool include_thinking = false;            ///< thinking as "[Assistant thinking]: …" lines
};

inline std::string assistant_tag(const event& e, std::string_view what) {
    std::string tag = "[Assistant";
    if (!what.empty()) {
        tag += ' ';
        tag += what;
    }
    if (!e.author.empty() && e.author != "assistant" && e.author != "model") {
        tag += " (";
        tag += e.author;
        tag += ')';
    }
    tag += "]: ";
    return tag;
}

inline void line(std::string& out, std::string_view tag, std::string_view body) {
    out += tag;
    out += body;
    out += '\n';
}

inline std::string tool_call_text(const tool_call_part& c, const options& o) {
    std::string s = c.tool_name;
    s += '(';
    bool first = true;
    for (const auto& kv : c.args) {
        if (!first) s += ", ";
        first = false;
        s += kv.key();
        s += '=';
        s += summary_text::truncate_marked(boost::json::serialize(kv.value()), o.max_tool_arg_chars);
    }
    s += ')';
    return s;
}

inline std::string file_text(const file_part& f) {
    std::string s = f.name.value_or("file");
    if (f.uri) s += " <" + *f.uri + ">";
    if (f.mime_type) s += " (" + *f.mime_type + ")";
    if (f.inline_bytes) s += " [inline, " + std::to_string(f.inline_bytes->size()) + " base64 bytes]";
    return s;
}

/// One event's lines.
inline void append_event(std::string& out, const event& e, const options& o) {
    if (e.partial || e.type == event_type::agent_start || e.type == event_type::agent_end) return;
    if (e.is_compaction()) {
        std::string t = e.text();
        if (summary_text::trim(t).empty()) t = e.actions.compaction->summary;
        if (!summary_text::trim(t).empty()) line(out, "[Earlier summary]: ", summary_text::trim(t));
        return;
    }
    const bool from_user = e.type == event_type::user_message;
    for (const part& p : e.content.parts) {
        if (const auto* t = std::get_if<text_part>(&p)) {
            if (summary_text::trim(t->text).empty()) continue;
            if (from_user) line(out, "[User]: ", t->text);
            else line(out, assistant_tag(e, {}), t->text);
        } else if (const auto* th = std::get_if<thinking_part>(&p)) {
            if (!o.include_thinking || summary_text::trim(th->thinking).empty()) continue;
            line(out, assistant_tag(e, "thinking"), summary_text::truncate_marked(th->thinking, o.max_tool_result_chars));
        } else if (const auto* d = std::get_if<data_part>(&p)) {
            std::string body = summary_text::truncate_marked(boost::json::serialize(d->data), o.max_tool_result_chars);
            if (from_user) line(out, "[User data]: ", body);
            else line(out, assistant_tag(e, "data"), body);
        } else if (const auto* f = std::get_if<file_part>(&p)) {
            if (from_user) line(out, "[User file]: ", file_text(*f));
            else line(out, assistant_tag(e, "file"), file_text(*f));
        } else if (const auto* c = std::get_if<tool_call_part>(&p)) {
            line(out, "[Tool call]: ", tool_call_text(*c, o));
        } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
            if (r->error) {
                line(out, "[Tool error (" + r->tool_name + ")]: ", summary_text::truncate_marked(*r->error, o.max_tool_result_chars));
            } else {
                line(out, "[Tool result (" + r->tool_name + ")]: ",
                     summary_text::truncate_marked(summary_text::json_text(r->result), o.max_tool_result_chars));
            }
        }
    }
}

/// The events as transcript lines, one or more per event.
inline std::string serialize(event_span events, const options& o) {
    std::string out;
    for (const event& e : events) append_event(out, e, o);
    return out;
}

} // namespace libretto::detail::summary_transcript

#endif
