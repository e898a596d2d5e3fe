// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_IMPL_LLM_RESPONSE_IPP
#define LIBRETTO_MODEL_IMPL_LLM_RESPONSE_IPP

// llm_response_accumulator's larger functions: inline in a header-only build, compiled once
// with LIBRETTO_SEPARATE_COMPILATION.

#include <libretto/model/llm_response.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

namespace libretto {

LIBRETTO_DECL void llm_response_accumulator::add(const llm_chunk& c) {
    if (c.final) {
        final_ = *c.final;
        return;
    }
    text_ += c.text;
    if (!c.thinking.empty() || !c.thinking_signature.empty() || !c.redacted_thinking.empty()) {
        // A gap stays an empty block, which finish() leaves out. The bound is the decoders'
        // bound on content blocks: a larger number is garbage, not a reason to allocate
        // (and SIZE_MAX + 1 would wrap to 0).
        if (c.thinking_block >= max_tool_calls) {
            if (!error_) // the first failure is the cause
                fail(make_error_code(errc::bad_response),
                     "thinking block " + std::to_string(c.thinking_block) + ": a reply holds at most " +
                         std::to_string(max_tool_calls) + " blocks, numbered 0 to " +
                         std::to_string(max_tool_calls - 1));
        } else {
            if (c.thinking_block >= thinking_blocks_.size()) thinking_blocks_.resize(c.thinking_block + 1);
            thinking_block& b = thinking_blocks_[c.thinking_block];
            b.thinking += c.thinking;
            b.signature += c.thinking_signature;
            b.redacted += c.redacted_thinking;
            thinking_ += c.thinking;
        }
    }
    for (const auto& d : c.tool_calls) add(d);
    if (c.usage) {
        // Each report is the running total, the latest wins (a 0 is a count like any
        // other: the decoders carry forward what a report leaves out).
        std::string version = usage_ ? std::move(usage_->model_version) : std::string();
        usage_ = *c.usage;
        if (usage_->model_version.empty()) usage_->model_version = std::move(version);
    }
    if (c.finish) finish_ = c.finish;
    if (!c.model_version.empty()) model_version_ = c.model_version;
}

LIBRETTO_DECL void llm_response_accumulator::add(const tool_call_delta& d) {
    std::size_t at = no_call;
    if (d.index) at = find_index(*d.index);
    else if (!d.id.empty()) at = find_id(d.id);
    else if (!calls_.empty()) at = calls_.size() - 1;
    if (at == no_call) {
        if (calls_.size() >= max_tool_calls) {
            if (error_) return; // the first failure is the cause
            std::string m = "tool call #" + std::to_string(calls_.size());
            if (d.index) m += " (index " + std::to_string(*d.index) + ")";
            else if (!d.id.empty()) m += " (id " + d.id + ")";
            fail(make_error_code(errc::bad_response),
                 m + ": a reply holds at most " + std::to_string(max_tool_calls) + " tool calls");
            return;
        }
        const bool was_indexed = indexed();
        at = calls_.size();
        calls_.push_back(call{d.index, {}, {}, {}});
        if (was_indexed) {
            if (d.index) by_index_.emplace(*d.index, static_cast<std::uint32_t>(at));
        } else if (indexed()) {
            build_indexes();
        }
    }
    call& target = calls_[at];
    if (target.id.empty() && !d.id.empty()) {
        target.id = d.id;
        if (ids_indexed_) note_id(at);
    }
    if (target.name.empty()) target.name = d.name;
    target.arguments += d.arguments;
}

LIBRETTO_DECL llm_response llm_response_accumulator::finish() && {
    if (final_) return std::move(*final_);
    llm_response r;
    for (auto& b : thinking_blocks_) {
        if (!b.redacted.empty()) {
            thinking_part t{{}, {}};
            t.metadata["redacted_data"] = b.redacted;
            r.parts.emplace_back(std::move(t));
        } else if (!b.thinking.empty() || !b.signature.empty()) {
            thinking_part t{std::move(b.thinking), {}};
            if (!b.signature.empty()) t.metadata["signature"] = b.signature;
            r.parts.emplace_back(std::move(t));
        }
    }
    if (!text_.empty()) r.parts.emplace_back(text_part{std::move(text_), {}});
    for (std::size_t i = 0; i < calls_.size(); ++i) {
        call& c = calls_[i];
        if (c.id.empty()) c.id = "call-" + event::new_id();
        json::object args;
        std::string problem = check_call(c, i, args);
        if (problem.empty()) {
            r.parts.emplace_back(tool_call_part{std::move(c.id), std::move(c.name), std::move(args), {}});
        } else {
            r.invalid_tool_calls.push_back(
                invalid_tool_call{std::move(c.id), std::move(c.name), std::move(c.arguments), std::move(problem)});
        }
    }
    r.usage = usage_;
    r.model_version = model_version_;
    if (r.usage && r.usage->model_version.empty()) r.usage->model_version = model_version_;
    if (error_) {
        r.finish = finish_reason::error;
        r.error = error_;
        r.error_message = std::move(error_message_);
        r.retry_after = retry_after_;
    } else if (finish_) {
        r.finish = *finish_;
    } else {
        r.finish = r.has_tool_calls() ? finish_reason::tool_calls : finish_reason::stop;
    }
    return r;
}

LIBRETTO_DECL std::size_t llm_response_accumulator::find_id(const std::string& id) {
    if (indexed()) {
        if (!ids_indexed_) {
            for (std::size_t i = 0; i < calls_.size(); ++i)
                if (!calls_[i].id.empty()) note_id(i);
            ids_indexed_ = true;
        }
        auto it = by_id_.find(id);
        return it == by_id_.end() ? no_call : it->second;
    }
    for (std::size_t i = calls_.size(); i-- > 0;)
        if (calls_[i].id == id) return i;
    return no_call;
}

LIBRETTO_DECL std::string llm_response_accumulator::check_call(const call& c, std::size_t position, json::object& args) {
    // Named only in a problem: a good call (nearly every one) builds no text.
    auto who = [&] {
        std::string w = "tool call ";
        if (c.name.empty()) w += "#" + std::to_string(position);
        else w += "'" + c.name + "'";
        w += " (id " + c.id + ")";
        return w;
    };
    if (c.name.empty()) return who() + ": no tool name";
    if (is_blank(c.arguments)) return {};
    boost::system::error_code ec;
    // As stored (json_limits.hpp): exact doubles, no 1e400, each key once, and nesting that
    // fits at level 5 of the event that will hold the call.
    std::string why;
    json::value v = detail::parse_precise(c.arguments, ec, {}, &why, max_json_depth - 4);
    if (ec) {
        // At most 200 bytes of the text, cut on a UTF-8 character boundary.
        std::size_t shown = std::min<std::size_t>(c.arguments.size(), 200);
        while (shown > 0 && shown < c.arguments.size() &&
               (static_cast<unsigned char>(c.arguments[shown]) & 0xC0) == 0x80)
            --shown;
        std::string m = who() + ": arguments are not valid JSON (" + why + "): ";
        m.append(c.arguments, 0, shown);
        if (shown < c.arguments.size()) m += "...";
        return m;
    }
    if (!v.is_object()) {
        std::string kind;
        switch (v.kind()) {
        case json::kind::array: kind = "an array"; break;
        case json::kind::string: kind = "a string"; break;
        case json::kind::bool_: kind = "a boolean"; break;
        case json::kind::null: kind = "null"; break;
        default: kind = "a number"; break;
        }
        return who() + ": arguments must be a JSON object, got " + kind;
    }
    args = std::move(v.as_object());
    return {};
}

} // namespace libretto

#endif
