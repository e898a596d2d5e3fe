// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_ANTHROPIC_MESSAGE_HPP
#define LIBRETTO_PROVIDER_DETAIL_ANTHROPIC_MESSAGE_HPP

// One message of an llm_request as Anthropic Messages content blocks (anthropic_protocol.hpp's
// encode_request uses it; the mapping is documented there and in docs/providers.md).

#include <libretto/json_stringify.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/provider/detail/encode.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <variant>

namespace libretto::detail {

inline json::object anthropic_source(const file_part& f, json::storage_ptr sp) {
    json::object src(sp);
    if (f.inline_bytes) {
        src["type"] = "base64";
        src["media_type"] = f.mime_type.value_or("application/octet-stream");
        src["data"] = *f.inline_bytes;
    } else {
        src["type"] = "url";
        src["url"] = *f.uri;
    }
    return src;
}

inline void encode_anthropic_message(const message& m, std::size_t mi, json::array& out) {
    json::storage_ptr sp = out.storage();
    const bool assistant = m.role == message_role::assistant;
    json::array results(sp); // tool_result blocks: first in a user message
    json::array blocks(sp);
    auto text = [&](std::string_view t) {
        json::object b(sp);
        b["type"] = "text";
        b["text"] = t;
        blocks.emplace_back(std::move(b));
    };
    for (std::size_t pi = 0; pi < m.parts.size(); ++pi) {
        const part& p = m.parts[pi];
        if (const auto* t = std::get_if<text_part>(&p)) {
            if (!t->text.empty()) text(t->text); // the API rejects empty text blocks
        } else if (const auto* d = std::get_if<data_part>(&p)) {
            text(stringify(d->data));
        } else if (const auto* th = std::get_if<thinking_part>(&p)) {
            // Only this model's own thinking goes back, as it came: a redacted block's data
            // unmodified, a thinking block with its signature (the API rejects one without;
            // the user's messages carry none).
            if (!assistant) continue;
            if (auto red = th->metadata.find("redacted_data");
                red != th->metadata.end() && red->value().is_string() && !red->value().get_string().empty()) {
                json::object b(sp);
                b["type"] = "redacted_thinking";
                b["data"] = red->value().get_string();
                blocks.emplace_back(std::move(b));
                continue;
            }
            auto sig = th->metadata.find("signature");
            if (!assistant || sig == th->metadata.end() || !sig->value().is_string() ||
                sig->value().get_string().empty())
                continue;
            json::object b(sp);
            b["type"] = "thinking";
            b["thinking"] = th->thinking;
            b["signature"] = sig->value().get_string();
            blocks.emplace_back(std::move(b));
        } else if (const auto* c = std::get_if<tool_call_part>(&p)) {
            if (!assistant) continue;
            if (c->tool_call_id.empty()) bad_request(where(mi, pi) + ": tool call without an id");
            if (c->tool_name.empty()) bad_request(where(mi, pi) + ": tool call without a tool name");
            json::object b(sp);
            b["type"] = "tool_use";
            b["id"] = c->tool_call_id;
            b["name"] = c->tool_name;
            b["input"] = json::object(c->args, sp); // an invalid call's raw text cannot go back: input must be an object
            blocks.emplace_back(std::move(b));
        } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
            if (r->tool_call_id.empty()) bad_request(where(mi, pi) + ": tool response without a tool call id");
            json::object b(sp);
            b["type"] = "tool_result";
            b["tool_use_id"] = r->tool_call_id;
            std::string content = tool_result_text(*r);
            if (!content.empty()) b["content"] = std::move(content);
            if (r->error) b["is_error"] = true;
            results.emplace_back(std::move(b));
        } else if (const auto* f = std::get_if<file_part>(&p)) {
            if (!f->uri && !f->inline_bytes) bad_request(where(mi, pi) + ": file part without uri or inline_bytes");
            json::object b(sp);
            b["type"] = (mime_is(f->mime_type, "image/") || (!f->mime_type && !f->inline_bytes)) ? "image" : "document";
            b["source"] = anthropic_source(*f, sp);
            blocks.emplace_back(std::move(b));
        }
    }
    if (results.empty() && blocks.empty()) return;
    for (auto& b : blocks) results.emplace_back(std::move(b));
    json::object msg(sp);
    msg["role"] = assistant ? "assistant" : "user";
    msg["content"] = std::move(results);
    out.emplace_back(std::move(msg));
}

} // namespace libretto::detail

#endif
