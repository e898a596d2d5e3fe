// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_DECODE_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_DECODE_HPP

// A fast decoder for the event lines jsonl_store writes: one pass of Boost.JSON's SAX
// parser building the event directly, without a DOM, member look-ups or copies of it.
//
// It accepts only the shapes serialize_event produces (each member at most once, the
// types encode_into writes, nothing unknown but the line's "crc32c") and gives up on
// anything else — then the caller decodes the line with parse_event, which stays the
// authority on what a line means and on every error message. For what it accepts, it
// yields exactly what parse_event yields (numbers too: doubles are re-read from their
// text with std::from_chars, as parse_event does).

#include <libretto/event/event.hpp>
#include <libretto/event/json.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail::jsonl {

class fast_event_handler {
public:
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    explicit fast_event_handler(event& out) : ev_(out), raw_(json::storage_ptr(), raw_buf_, sizeof raw_buf_) {}

    bool gave_up() const noexcept { return give_up_; }
    bool complete() const noexcept { return done_; }

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_comment_part(json::string_view, json::error_code& ec) { return stop(ec); }
    bool on_comment(json::string_view, json::error_code& ec) { return stop(ec); }

    bool on_object_begin(json::error_code& ec) {
        if (raw_depth_) return ++raw_depth_, true;
        if (depth_ < 0) return push(frame::top), true;
        switch (slot_) {
        case slot::content: return push(frame::content), true;
        case slot::actions: return push(frame::actions), true;
        case slot::compaction: comp_ = {}; return push(frame::compaction), true;
        case slot::usage: use_ = {}; return push(frame::usage), true;
        case slot::part: part_ = {}; return push(frame::part), true;
        default:
            if (is_raw(slot_)) return begin_raw(), true;
            return stop(ec);
        }
    }

    bool on_object_end(std::size_t n, json::error_code& ec) {
        if (raw_depth_) {
            raw_keys_ += n; // a repeated key makes the object smaller: see end_raw
            raw_.push_object(n);
            return --raw_depth_ ? true : end_raw(ec);
        }
        const frame f = stack_[depth_--];
        switch (f) {
        case frame::top:
            if ((seen_[0] & (bit(k_id) | bit(k_type))) != (bit(k_id) | bit(k_type)) || ev_.sequence < 0)
                return stop(ec);
            done_ = true;
            return true;
        case frame::part: return finish_part(ec);
        case frame::compaction:
            if ((seen_[depth_ + 1] & 0x3f) != 0x3f) return stop(ec); // any range: check_compaction judges it
            ev_.actions.compaction = std::move(comp_);
            break;
        case frame::usage:
            if ((seen_[depth_ + 1] & 0x3) != 0x3) return stop(ec);
            ev_.usage = std::move(use_);
            break;
        default: break;
        }
        after_value(); // the object was the value of the enclosing member
        return true;
    }

    bool on_array_begin(json::error_code& ec) {
        if (raw_depth_) return ++raw_depth_, true;
        if (slot_ == slot::parts) return push(frame::parts), true;
        if (slot_ == slot::part_result) return begin_raw(), true;
        return stop(ec);
    }

    bool on_array_end(std::size_t n, json::error_code& ec) {
        if (raw_depth_) {
            raw_.push_array(n);
            return --raw_depth_ ? true : end_raw(ec);
        }
        --depth_; // parts
        after_value();
        return true;
    }

    bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
        if (raw_depth_) raw_.push_chars(s);
        else key_.append(s.data(), s.size());
        return true;
    }

    bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
        if (raw_depth_) return raw_.push_key(s), true;
        bool ok;
        if (key_.empty()) { // the whole key in one piece: no copy
            ok = pick_slot(std::string_view(s.data(), s.size()));
        } else {
            key_.append(s.data(), s.size());
            ok = pick_slot(key_);
            key_.clear();
        }
        return ok ? true : stop(ec);
    }

    bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
        if (raw_depth_) raw_.push_chars(s);
        else str_.append(s.data(), s.size());
        return true;
    }

    bool on_string(json::string_view s, std::size_t, json::error_code& ec) {
        if (raw_depth_) return raw_.push_string(s), true;
        if (slot_ == slot::part_result) {
            begin_raw();
            if (str_.empty()) {
                raw_.push_string(s);
            } else { // the string came in parts (on_string_part, before an escape): join them
                str_.append(s.data(), s.size());
                raw_.push_string(str_);
                str_.clear();
            }
            return end_raw(ec);
        }
        bool ok;
        if (str_.empty()) {
            ok = take_string(std::string_view(s.data(), s.size()));
        } else {
            str_.append(s.data(), s.size());
            ok = take_string(str_);
            str_.clear();
        }
        return ok ? true : stop(ec);
    }

    bool on_number_part(json::string_view s, json::error_code&) {
        num_.append(s.data(), s.size());
        return true;
    }

    bool on_int64(std::int64_t i, json::string_view, json::error_code& ec) {
        num_.clear();
        if (raw_depth_) return raw_.push_int64(i), true;
        if (slot_ == slot::part_result) return begin_raw(), raw_.push_int64(i), end_raw(ec);
        return take_integer(i) ? true : stop(ec);
    }

    bool on_uint64(std::uint64_t u, json::string_view, json::error_code& ec) {
        num_.clear();
        if (raw_depth_) return raw_.push_uint64(u), true;
        if (slot_ == slot::part_result) return begin_raw(), raw_.push_uint64(u), end_raw(ec);
        if (u > static_cast<std::uint64_t>(INT64_MAX)) return stop(ec);
        if (is_double_slot(slot_)) return take_double(static_cast<double>(u)) ? true : stop(ec);
        return take_integer(static_cast<std::int64_t>(u)) ? true : stop(ec);
    }

    bool on_double(double d, json::string_view s, json::error_code& ec) {
        num_.append(s.data(), s.size());
        double exact = 0;
        auto [end, err] = std::from_chars(num_.data(), num_.data() + num_.size(), exact);
        if (err == std::errc() && end == num_.data() + num_.size()) d = exact;
        num_.clear();
        if (!std::isfinite(d)) return stop(ec); // out of range: parse_event says so
        if (raw_depth_) return raw_.push_double(d), true;
        if (slot_ == slot::part_result) return begin_raw(), raw_.push_double(d), end_raw(ec);
        return take_double(d) ? true : stop(ec);
    }

    bool on_bool(bool b, json::error_code& ec) {
        if (raw_depth_) return raw_.push_bool(b), true;
        if (slot_ == slot::part_result) return begin_raw(), raw_.push_bool(b), end_raw(ec);
        switch (slot_) {
        case slot::partial: ev_.partial = b; break;
        case slot::escalate: ev_.actions.escalate = b; break;
        case slot::skip_summarization: ev_.actions.skip_summarization = b; break;
        case slot::end_of_agent: ev_.actions.end_of_agent = b; break;
        default: return stop(ec);
        }
        after_value();
        return true;
    }

    bool on_null(json::error_code& ec) {
        if (raw_depth_) return raw_.push_null(), true;
        // Null is never written: an optional member is omitted instead.
        return stop(ec);
    }

private:
    enum class frame : unsigned char { top, content, parts, part, actions, compaction, usage };
    enum class slot : unsigned char {
        none,
        // top
        id, sequence, timestamp, invocation_id, session_id, author, branch, type, content, actions, metadata,
        partial, usage, signature, signer_did, prev_signature, crc,
        // content
        role, parts, part,
        // part
        part_type, part_text, part_thinking, part_data, part_uri, part_inline, part_mime, part_name, part_call_id,
        part_tool_name, part_args, part_result, part_error, part_metadata,
        // actions
        state_delta, artifact_delta, transfer, escalate, skip_summarization, end_of_agent, compaction, rewind,
        // compaction
        c_first, c_last, c_start, c_end, c_summary, c_count,
        // usage
        u_in, u_out, u_model,
    };

    // Member bits of the top level, for the required ones.
    static constexpr unsigned k_id = 0, k_type = 7;
    static constexpr unsigned bit(unsigned i) { return 1u << i; }

    static bool is_raw(slot s) {
        return s == slot::metadata || s == slot::state_delta || s == slot::artifact_delta || s == slot::part_data ||
               s == slot::part_args || s == slot::part_result || s == slot::part_metadata;
    }
    static bool is_double_slot(slot s) { return s == slot::timestamp || s == slot::c_start || s == slot::c_end; }

    struct part_fields {
        std::string type;
        std::optional<std::string> text, thinking, uri, inline_bytes, mime_type, name, call_id, tool_name, error;
        std::optional<json::object> data, args, metadata;
        std::optional<json::value> result;
    };

    bool stop(json::error_code& ec) {
        give_up_ = true;
        ec = json::error::syntax; // any error ends the parse
        return false;
    }

    void push(frame f) {
        if (depth_ + 1 >= static_cast<int>(std::size(stack_))) throw std::length_error("nesting");
        stack_[++depth_] = f;
        seen_[depth_] = 0;
        slot_ = f == frame::parts ? slot::part : slot::none;
    }

    /// After a member's value (or an array element): what comes next at this level.
    void after_value() { slot_ = depth_ >= 0 && stack_[depth_] == frame::parts ? slot::part : slot::none; }

    /// Marks member `i` of the current object as seen; false on a repeat.
    bool once(unsigned i) {
        if (seen_[depth_] & bit(i)) return false;
        seen_[depth_] |= bit(i);
        return true;
    }

    struct entry {
        std::string_view name;
        slot s;
    };
    // The members of each object, in the writer's order; an index is the member's bit in
    // seen_ (k_id and k_type name two of `top_keys`).
    static constexpr entry top_keys[] = {
        {"id", slot::id}, {"sequence", slot::sequence}, {"timestamp", slot::timestamp},
        {"invocation_id", slot::invocation_id}, {"session_id", slot::session_id}, {"author", slot::author},
        {"branch", slot::branch}, {"type", slot::type}, {"content", slot::content}, {"actions", slot::actions},
        {"metadata", slot::metadata}, {"partial", slot::partial}, {"usage", slot::usage},
        {"signature", slot::signature}, {"signer_did", slot::signer_did}, {"prev_signature", slot::prev_signature},
        {"crc32c", slot::crc}};
    static constexpr entry content_keys[] = {{"role", slot::role}, {"parts", slot::parts}};
    static constexpr entry part_keys[] = {
        {"type", slot::part_type}, {"text", slot::part_text}, {"thinking", slot::part_thinking},
        {"data", slot::part_data}, {"uri", slot::part_uri}, {"inline_bytes", slot::part_inline},
        {"mime_type", slot::part_mime}, {"name", slot::part_name}, {"tool_call_id", slot::part_call_id},
        {"tool_name", slot::part_tool_name}, {"args", slot::part_args}, {"result", slot::part_result},
        {"error", slot::part_error}, {"metadata", slot::part_metadata}};
    static constexpr entry action_keys[] = {
        {"state_delta", slot::state_delta}, {"artifact_delta", slot::artifact_delta},
        {"transfer_to_agent", slot::transfer}, {"escalate", slot::escalate},
        {"skip_summarization", slot::skip_summarization}, {"end_of_agent", slot::end_of_agent},
        {"compaction", slot::compaction}, {"rewind_before_invocation_id", slot::rewind}};
    static constexpr entry compaction_keys[] = {
        {"first_sequence", slot::c_first}, {"last_sequence", slot::c_last}, {"summary", slot::c_summary},
        {"event_count", slot::c_count}, {"start_timestamp", slot::c_start}, {"end_timestamp", slot::c_end}};
    static constexpr entry usage_keys[] = {
        {"input_tokens", slot::u_in}, {"output_tokens", slot::u_out}, {"model_version", slot::u_model}};

    /// Index of `k` in `Table`, or -1. Every name's size and characters are constants
    /// here: a candidate costs a compare of sizes and, when they match, an inlined compare
    /// of a few words (not a scan of the table with a character loop per name).
    template <const auto& Table, std::size_t... I>
    static int index_of(std::string_view k, std::index_sequence<I...>) noexcept {
        int found = -1;
        (void)((k.size() == Table[I].name.size() &&
                std::memcmp(k.data(), Table[I].name.data(), Table[I].name.size()) == 0 &&
                (found = static_cast<int>(I), true)) ||
               ...);
        return found;
    }

    template <const auto& Table>
    bool pick(std::string_view k) {
        const int i = index_of<Table>(k, std::make_index_sequence<std::size(Table)>{});
        if (i < 0 || !once(static_cast<unsigned>(i))) return false; // unknown, or a repeat
        slot_ = Table[i].s;
        return true;
    }

    bool pick_slot(std::string_view k) {
        if (depth_ < 0) return false;
        switch (stack_[depth_]) {
        case frame::top: return pick<top_keys>(k);
        case frame::content: return pick<content_keys>(k);
        case frame::part: return pick<part_keys>(k);
        case frame::actions: return pick<action_keys>(k);
        case frame::compaction: return pick<compaction_keys>(k);
        case frame::usage: return pick<usage_keys>(k);
        case frame::parts: return false;
        }
        return false;
    }

    static void set(std::string& dst, std::string_view s) { dst.assign(s.data(), s.size()); }
    static void set(std::optional<std::string>& dst, std::string_view s) { dst.emplace(s.data(), s.size()); }
    static void set(boxed_optional<std::string>& dst, std::string_view s) { dst.emplace(s.data(), s.size()); }

    bool take_string(std::string_view s) {
        switch (slot_) {
        case slot::id: set(ev_.id, s); break;
        case slot::invocation_id: set(ev_.invocation_id, s); break;
        case slot::session_id: set(ev_.session_id, s); break;
        case slot::author: set(ev_.author, s); break;
        case slot::branch: set(ev_.branch, s); break;
        case slot::type: {
            auto t = event_type_from_string(s);
            if (!t) return false;
            ev_.type = *t;
            break;
        }
        case slot::signature: set(ev_.signature, s); break;
        case slot::signer_did: set(ev_.signer_did, s); break;
        case slot::prev_signature: set(ev_.prev_signature, s); break;
        case slot::crc: break;
        case slot::role: set(ev_.content.role, s); break;
        case slot::part_type: set(part_.type, s); break;
        case slot::part_text: set(part_.text, s); break;
        case slot::part_thinking: set(part_.thinking, s); break;
        case slot::part_uri: set(part_.uri, s); break;
        case slot::part_inline: set(part_.inline_bytes, s); break;
        case slot::part_mime: set(part_.mime_type, s); break;
        case slot::part_name: set(part_.name, s); break;
        case slot::part_call_id: set(part_.call_id, s); break;
        case slot::part_tool_name: set(part_.tool_name, s); break;
        case slot::part_error: set(part_.error, s); break;
        case slot::transfer: set(ev_.actions.transfer_to_agent, s); break;
        case slot::rewind: set(ev_.actions.rewind_before_invocation_id, s); break;
        case slot::c_summary: set(comp_.summary, s); break;
        case slot::u_model: set(use_.model_version, s); break;
        default: return false;
        }
        after_value();
        return true;
    }

    bool take_integer(std::int64_t i) {
        switch (slot_) {
        case slot::sequence: ev_.sequence = i; break;
        case slot::c_first: comp_.first_sequence = i; break;
        case slot::c_last: comp_.last_sequence = i; break;
        case slot::c_count: comp_.event_count = i; break;
        case slot::u_in: use_.input_tokens = i; break;
        case slot::u_out: use_.output_tokens = i; break;
        case slot::timestamp:
        case slot::c_start:
        case slot::c_end: return take_double(static_cast<double>(i));
        default: return false;
        }
        after_value();
        return true;
    }

    bool take_double(double d) {
        switch (slot_) {
        case slot::timestamp: ev_.timestamp = d; break;
        case slot::c_start: comp_.start_timestamp = d; break;
        case slot::c_end: comp_.end_timestamp = d; break;
        default: return false;
        }
        after_value();
        return true;
    }

    void begin_raw() {
        raw_.reset(json::storage_ptr());
        raw_depth_ = 1; // a scalar (a tool result) is pushed and ended at once
        raw_keys_ = 0;
        raw_slot_ = slot_;
    }

    bool end_raw(json::error_code& ec) {
        raw_depth_ = 0;
        json::value v = raw_.release();
        const slot s = raw_slot_;
        if (s != slot::part_result && !v.is_object()) return stop(ec);
        if (raw_keys_ && count_members(v) != raw_keys_) return stop(ec); // parse_event names the key
        switch (s) {
        case slot::metadata: ev_.metadata = std::move(v.get_object()); break;
        case slot::state_delta: ev_.actions.state_delta = std::move(v.get_object()); break;
        case slot::artifact_delta:
            for (const auto& kv : v.get_object())
                if (!kv.value().is_int64() && !kv.value().is_uint64()) return stop(ec);
            ev_.actions.artifact_delta = std::move(v.get_object());
            break;
        case slot::part_data: part_.data = std::move(v.get_object()); break;
        case slot::part_args: part_.args = std::move(v.get_object()); break;
        case slot::part_metadata: part_.metadata = std::move(v.get_object()); break;
        case slot::part_result: part_.result = std::move(v); break;
        default: return stop(ec);
        }
        slot_ = raw_slot_;
        after_value();
        return true;
    }

    bool finish_part(json::error_code& ec) {
        part_fields& f = part_;
        json::object md = f.metadata ? std::move(*f.metadata) : json::object();
        // Members of other part types are ignored by parse_event; here they end the fast path.
        const bool text_like = f.data || f.uri || f.inline_bytes || f.mime_type || f.name || f.call_id || f.tool_name ||
                               f.args || f.result || f.error;
        if (f.type == "text") {
            if (!f.text || f.thinking || text_like) return stop(ec);
            ev_.content.parts.emplace_back(text_part{std::move(*f.text), std::move(md)});
        } else if (f.type == "thinking") {
            if (!f.thinking || f.text || text_like) return stop(ec);
            ev_.content.parts.emplace_back(thinking_part{std::move(*f.thinking), std::move(md)});
        } else if (f.type == "data") {
            if (!f.data || f.text || f.thinking || f.uri || f.inline_bytes || f.mime_type || f.name || f.call_id ||
                f.tool_name || f.args || f.result || f.error)
                return stop(ec);
            ev_.content.parts.emplace_back(data_part{std::move(*f.data), std::move(md)});
        } else if (f.type == "file") {
            if (f.text || f.thinking || f.data || f.call_id || f.tool_name || f.args || f.result || f.error)
                return stop(ec);
            ev_.content.parts.emplace_back(file_part{std::move(f.uri), std::move(f.inline_bytes),
                                                     std::move(f.mime_type), std::move(f.name), std::move(md)});
        } else if (f.type == "tool_call") {
            if (!f.call_id || !f.tool_name || f.text || f.thinking || f.data || f.uri || f.inline_bytes ||
                f.mime_type || f.name || f.result || f.error)
                return stop(ec);
            ev_.content.parts.emplace_back(tool_call_part{std::move(*f.call_id), std::move(*f.tool_name),
                                                          f.args ? std::move(*f.args) : json::object(), std::move(md)});
        } else if (f.type == "tool_response") {
            if (!f.call_id || !f.tool_name || f.text || f.thinking || f.data || f.uri || f.inline_bytes ||
                f.mime_type || f.name || f.args)
                return stop(ec);
            ev_.content.parts.emplace_back(tool_response_part{std::move(*f.call_id), std::move(*f.tool_name),
                                                              f.result ? std::move(*f.result) : json::value(),
                                                              std::move(f.error), std::move(md)});
        } else {
            return stop(ec);
        }
        after_value();
        return true;
    }

    event& ev_;
    bool give_up_ = false;
    bool done_ = false;
    frame stack_[8]{};
    unsigned seen_[8]{};
    int depth_ = -1;
    slot slot_ = slot::none;
    std::string key_, str_, num_;
    part_fields part_;
    event_compaction comp_;
    usage use_;
    unsigned char raw_buf_[1024];
    json::value_stack raw_;
    int raw_depth_ = 0;
    std::size_t raw_keys_ = 0; // members of the raw value's objects, repeats included
    slot raw_slot_ = slot::none;
};

/// Decodes a stored event line the fast way; false if the line is not in the shape the
/// store writes (decode it with parse_event then). Never throws.
/// `out_is_new`: `out` is a default-constructed event (skips resetting it).
inline bool fast_decode_event(std::string_view line, event& out, bool out_is_new = false) noexcept {
    try {
        if (!out_is_new) out = event{};
        json::basic_parser<fast_event_handler> p(stored_parse_options(), out); // as parse_event reads

        json::error_code ec;
        const std::size_t n = p.write_some(false, line.data(), line.size(), ec);
        return !ec && n == line.size() && !p.handler().gave_up() && p.handler().complete();
    } catch (...) {
        return false;
    }
}

} // namespace libretto::detail::jsonl

#endif
