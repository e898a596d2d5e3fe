// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_DETAIL_EVENT_CHECK_HPP
#define LIBRETTO_EVENT_DETAIL_EVENT_CHECK_HPP

// Whether an event can be stored as JSON text that reads back equal (json_limits.hpp),
// without writing the text: for stores that keep events as objects (memory_store) and
// must refuse what the text stores refuse. It finds the fault serialize_event_checked
// would report (the tests compare the two), visiting members in the writer's order.

#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>

#include <cmath>
#include <optional>
#include <string_view>
#include <variant>

namespace libretto::detail {

class event_checker {
public:
    std::optional<json_fault> check(const event& e) {
        str(e.id, "id") || num(e.timestamp, "timestamp") || str(e.invocation_id, "invocation_id") ||
            str(e.session_id, "session_id") || str(e.author, "author") || str(e.branch, "branch") ||
            opt(e.content.role, "role") || parts(e) || actions(e.actions) || obj(e.metadata, 1, "metadata") ||
            (e.usage && str(e.usage->model_version, "model_version")) || opt(e.signature, "signature") ||
            str(e.signer_did, "signer_did") || opt(e.prev_signature, "prev_signature");
        return std::move(fault_);
    }

private:
    std::optional<json_fault> fault_;

    [[gnu::always_inline]] bool str(std::string_view s, std::string_view member) {
        if (all_ascii(s)) [[likely]]
            return false;
        return utf8_fault_in(s, member);
    }
    [[gnu::noinline]] bool utf8_fault_in(std::string_view s, std::string_view member) {
        if (auto f = find_invalid_utf8_slow(s)) {
            fault_ = json_fault{json_fault::kind::invalid_utf8, f->offset, f->byte, 0, std::string(member)};
            return true;
        }
        return false;
    }
    template <class Optional>
    bool opt(const Optional& s, std::string_view member) {
        return s && str(*s, member);
    }
    bool num(double d, std::string_view member) {
        if (std::isfinite(d)) return false;
        fault_ = json_fault{json_fault::kind::not_finite, 0, 0, d, std::string(member)};
        return true;
    }
    /// An object that is a member `member` of an object at nesting level `depth`.
    bool obj(const json::object& o, std::size_t depth, std::string_view member) {
        if (o.empty()) return false; // not written
        fault_ = check_json_object(o, depth, member);
        return fault_.has_value();
    }

    bool parts(const event& e) {
        // root 1, content 2, parts 3, a part 4: a part's members are at level 4.
        for (const auto& p : e.content.parts) {
            const bool bad = std::visit(
                [&](const auto& x) {
                    using T = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<T, text_part>) return str(x.text, "text") || obj(x.metadata, 4, "metadata");
                    else if constexpr (std::is_same_v<T, thinking_part>)
                        return str(x.thinking, "thinking") || obj(x.metadata, 4, "metadata");
                    else if constexpr (std::is_same_v<T, data_part>) {
                        // An empty data object is written ("data":{}); it has nothing to check.
                        return obj(x.data, 4, "data") || obj(x.metadata, 4, "metadata");
                    } else if constexpr (std::is_same_v<T, file_part>)
                        return opt(x.uri, "uri") || opt(x.inline_bytes, "inline_bytes") || opt(x.mime_type, "mime_type") ||
                               opt(x.name, "name") || obj(x.metadata, 4, "metadata");
                    else if constexpr (std::is_same_v<T, tool_call_part>)
                        return str(x.tool_call_id, "tool_call_id") || str(x.tool_name, "tool_name") ||
                               obj(x.args, 4, "args") || obj(x.metadata, 4, "metadata");
                    else {
                        if (str(x.tool_call_id, "tool_call_id") || str(x.tool_name, "tool_name")) return true;
                        if (!x.result.is_null() && (fault_ = check_json_value(x.result, 4, "result"))) return true;
                        return opt(x.error, "error") || obj(x.metadata, 4, "metadata");
                    }
                },
                p);
            if (bad) return true;
        }
        return false;
    }

    bool actions(const event_actions& a) {
        // root 1, actions 2: its members are at level 2.
        if (obj(a.state_delta, 2, "state_delta") || obj(a.artifact_delta, 2, "artifact_delta") ||
            opt(a.transfer_to_agent, "transfer_to_agent") ||
            opt(a.rewind_before_invocation_id, "rewind_before_invocation_id"))
            return true;
        if (const auto& c = a.compaction)
            return num(c->start_timestamp, "start_timestamp") || num(c->end_timestamp, "end_timestamp") ||
                   str(c->summary, "summary");
        return false;
    }
};

/// The first thing in `e` that cannot be stored (json_limits.hpp), as
/// serialize_event_checked would report it; nullopt if `e` can be stored.
inline std::optional<json_fault> event_fault(const event& e) { return event_checker{}.check(e); }

} // namespace libretto::detail

#endif
