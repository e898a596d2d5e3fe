// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_INDEX_ENTRY_HPP
#define LIBRETTO_STORE_DETAIL_INDEX_ENTRY_HPP

// What every session_index back end shares: an entry to and from JSON (strict, with the
// path of what is wrong), a patch applied to an entry, a query matched and sorted, and the
// argument checks with their messages.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_read.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/usage.hpp>
#include <libretto/json_error.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::detail {

inline json::object overrides_to_json(const conversation_overrides& o) {
    json::object j;
    if (!o.model.empty()) j["model"] = o.model;
    if (!o.thinking_level.empty()) j["thinking_level"] = o.thinking_level;
    if (!o.send_policy.empty()) j["send_policy"] = o.send_policy;
    return j;
}

/// The entry as the JSON object every back end stores (zero and empty members left out).
inline json::object entry_to_json(const conversation_entry& e) {
    json::object j;
    j["app_name"] = e.app_name;
    j["key"] = e.key;
    j["user_id"] = e.user_id;
    j["session_id"] = e.session_id;
    j["started_at"] = e.started_at;
    j["last_interaction_at"] = e.last_interaction_at;
    j["updated_at"] = e.updated_at;
    j["last_sequence"] = e.last_sequence;
    j["input_tokens"] = e.input_tokens;
    j["output_tokens"] = e.output_tokens;
    j["total_tokens"] = e.total_tokens;
    j["context_tokens"] = e.context_tokens;
    j["compaction_count"] = e.compaction_count;
    if (e.memory_flush_at != 0) {
        j["memory_flush_at"] = e.memory_flush_at;
        j["memory_flush_compaction_count"] = e.memory_flush_compaction_count;
    }
    if (!e.chat_type.empty()) j["chat_type"] = e.chat_type;
    if (!e.labels.empty()) {
        json::array a;
        for (const auto& l : e.labels) a.emplace_back(l);
        j["labels"] = std::move(a);
    }
    if (auto o = overrides_to_json(e.overrides); !o.empty()) j["overrides"] = std::move(o);
    if (!e.metadata.empty()) j["metadata"] = e.metadata;
    if (!e.parent_session_id.empty()) j["parent_session_id"] = e.parent_session_id;
    if (!e.previous.empty()) {
        json::array a;
        for (const auto& p : e.previous)
            a.emplace_back(json::object{{"session_id", p.session_id},
                                        {"started_at", p.started_at},
                                        {"ended_at", p.ended_at},
                                        {"reason", p.reason}});
        j["previous"] = std::move(a);
    }
    return j;
}

inline bool read_strings(const json::value& v, std::vector<std::string>& out, decode_error& err) {
    const auto* a = v.if_array();
    if (!a) return wrong_type(err, "array", v);
    out.clear();
    out.reserve(a->size());
    for (std::size_t i = 0; i < a->size(); ++i) {
        std::string s;
        if (!read((*a)[i], s, err)) return in_index(err, i);
        out.push_back(std::move(s));
    }
    return true;
}

/// Reads an entry written by entry_to_json (or by hand): unknown members are ignored, a
/// member of the wrong type is an error naming its path.
inline bool read_entry(const json::value& v, conversation_entry& e, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    e = {};
    bool ok = read_member(*o, "app_name", e.app_name, err, true) && read_member(*o, "key", e.key, err, true) &&
              read_member(*o, "user_id", e.user_id, err, true) &&
              read_member(*o, "session_id", e.session_id, err, true) &&
              read_member(*o, "started_at", e.started_at, err) &&
              read_member(*o, "last_interaction_at", e.last_interaction_at, err) &&
              read_member(*o, "updated_at", e.updated_at, err) &&
              read_member(*o, "last_sequence", e.last_sequence, err) &&
              read_member(*o, "input_tokens", e.input_tokens, err) &&
              read_member(*o, "output_tokens", e.output_tokens, err) &&
              read_member(*o, "total_tokens", e.total_tokens, err) &&
              read_member(*o, "context_tokens", e.context_tokens, err) &&
              read_member(*o, "compaction_count", e.compaction_count, err) &&
              read_member(*o, "memory_flush_at", e.memory_flush_at, err) &&
              read_member(*o, "memory_flush_compaction_count", e.memory_flush_compaction_count, err) &&
              read_member(*o, "chat_type", e.chat_type, err) && read_member(*o, "metadata", e.metadata, err) &&
              read_member(*o, "parent_session_id", e.parent_session_id, err);
    if (!ok) return false;
    if (auto it = o->find("labels"); it != o->end() && !read_strings(it->value(), e.labels, err))
        return in_field(err, "labels");
    if (auto it = o->find("overrides"); it != o->end()) {
        const json::object* ov = as_object(it->value(), err);
        if (!ov) return in_field(err, "overrides");
        if (!(read_member(*ov, "model", e.overrides.model, err) &&
              read_member(*ov, "thinking_level", e.overrides.thinking_level, err) &&
              read_member(*ov, "send_policy", e.overrides.send_policy, err)))
            return in_field(err, "overrides");
    }
    if (auto it = o->find("previous"); it != o->end()) {
        const auto* a = it->value().if_array();
        if (!a) {
            wrong_type(err, "array", it->value());
            return in_field(err, "previous");
        }
        for (std::size_t i = 0; i < a->size(); ++i) {
            previous_session p;
            const json::object* po = as_object((*a)[i], err);
            if (!po || !(read_member(*po, "session_id", p.session_id, err, true) &&
                         read_member(*po, "started_at", p.started_at, err) &&
                         read_member(*po, "ended_at", p.ended_at, err) && read_member(*po, "reason", p.reason, err))) {
                in_index(err, i);
                return in_field(err, "previous");
            }
            e.previous.push_back(std::move(p));
        }
    }
    return true;
}

/// Why `app` or `key` cannot be used ("" when both can): the diagnostics' words.
inline std::string index_args_problem(std::string_view app, std::string_view key) {
    if (auto p = id_problem(app); !p.empty()) return "the app id " + p;
    if (auto p = id_problem(key); !p.empty()) return "the conversation key " + p;
    return {};
}

/// errc::invalid_argument with its reason in *diag, or success.
inline boost::system::error_code check_index_args(std::string_view app, std::string_view key, diagnostics* diag) {
    if (!validate_id(app) && !validate_id(key)) return {};
    if (diag) diag->assign("session index: " + index_args_problem(app, key));
    return errc::invalid_argument;
}

/// Times are finite: JSON has no NaN or infinity, so no back end could read one back.
inline boost::system::error_code check_times(std::string_view key, std::initializer_list<std::pair<const char*, double>> times,
                                             diagnostics* diag) {
    for (const auto& [name, t] : times)
        if (!std::isfinite(t)) {
            if (diag) diag->assign("session index: '" + std::string(key) + "': " + name + " is not a finite number");
            return errc::invalid_argument;
        }
    return {};
}

/// The level below which an entry's metadata members sit in the documents that hold it: a
/// snapshot's {"entries":[{"metadata":{...}}]} puts the metadata object at level 4.
inline constexpr std::size_t index_metadata_depth = 3;

/// The entry's texts and metadata as JSON every back end stores and reads back
/// (json_limits.hpp): UTF-8 strings, finite numbers, nesting within max_json_depth.
inline boost::system::error_code check_entry_json(std::string_view key, const json::object& metadata,
                                                  std::initializer_list<std::pair<const char*, const std::string*>> texts,
                                                  const std::vector<std::string>& labels, diagnostics* diag) {
    auto refuse = [&](std::string_view what, const std::string& why) {
        if (diag) diag->assign("session index: entry '" + std::string(key) + "': " + std::string(what) + ": " + why);
        return make_error_code(errc::invalid_argument);
    };
    for (const auto& [what, text] : texts)
        if (auto f = find_invalid_utf8(*text)) return refuse(what, f->message());
    for (const auto& l : labels)
        if (auto f = find_invalid_utf8(l)) return refuse("a label", f->message());
    if (auto f = check_json_object(metadata, index_metadata_depth)) return refuse("metadata", f->message());
    return {};
}

/// An entry's ids and times: what a read checks too (text an earlier version stored, which
/// may hold strings that are not UTF-8, still reads).
inline boost::system::error_code check_entry_ids_and_times(const conversation_entry& e, diagnostics* diag) {
    if (auto ec = check_index_args(e.app_name, e.key, diag)) return ec;
    if (auto ec = check_times(e.key, {{"started_at", e.started_at}, {"last_interaction_at", e.last_interaction_at},
                                      {"updated_at", e.updated_at}, {"memory_flush_at", e.memory_flush_at}}, diag))
        return ec;
    for (const auto& p : e.previous)
        if (auto ec = check_times(e.key, {{"previous.started_at", p.started_at}, {"previous.ended_at", p.ended_at}}, diag))
            return ec;
    for (auto [what, id] : {std::pair<const char*, const std::string*>{"user id", &e.user_id}, {"session id", &e.session_id}})
        if (auto p = id_problem(*id); !p.empty()) {
            if (diag) diag->assign("session index: entry '" + e.key + "': the " + what + " " + p);
            return errc::invalid_argument;
        }
    if (!e.parent_session_id.empty())
        if (auto p = id_problem(e.parent_session_id); !p.empty()) {
            if (diag) diag->assign("session index: entry '" + e.key + "': the parent session id " + p);
            return errc::invalid_argument;
        }
    return {};
}

/// An entry's ids, times, texts and metadata checked before it is stored.
inline boost::system::error_code check_entry(const conversation_entry& e, diagnostics* diag) {
    if (auto ec = check_entry_ids_and_times(e, diag)) return ec;
    if (auto ec = check_entry_json(e.key, e.metadata,
                                   {{"chat_type", &e.chat_type}, {"overrides.model", &e.overrides.model},
                                    {"overrides.thinking_level", &e.overrides.thinking_level},
                                    {"overrides.send_policy", &e.overrides.send_policy}},
                                   e.labels, diag))
        return ec;
    for (const auto& p : e.previous)
        if (auto f = find_invalid_utf8(p.reason)) {
            if (diag) diag->assign("session index: entry '" + e.key + "': previous.reason: " + f->message());
            return errc::invalid_argument;
        }
    return {};
}

/// Applies `p` to `e` (found under its key); stale_session when p.if_session_id differs.
inline boost::system::error_code apply_patch(conversation_entry& e, const conversation_patch& p, diagnostics* diag) {
    if (p.if_session_id && *p.if_session_id != e.session_id) {
        if (diag)
            diag->assign("session index: '" + e.key + "' is now session '" + e.session_id + "', not '" +
                         *p.if_session_id + "' (reset while the change was on its way)");
        return errc::stale_session;
    }
    for (const std::optional<std::string>* id : {&p.new_session_id, &p.user_id})
        if (*id)
            if (auto problem = id_problem(**id); !problem.empty()) {
                if (diag) diag->assign("session index: '" + e.key + "': the new id " + problem);
                return errc::invalid_argument;
            }
    {
        static const std::string none;
        static const std::vector<std::string> no_labels;
        const conversation_overrides& o = p.overrides ? *p.overrides : conversation_overrides{};
        if (auto ec = check_entry_json(e.key, p.metadata,
                                       {{"chat_type", p.chat_type ? &*p.chat_type : &none}, {"reset_reason", &p.reset_reason},
                                        {"overrides.model", &o.model}, {"overrides.thinking_level", &o.thinking_level},
                                        {"overrides.send_policy", &o.send_policy}},
                                       p.labels ? *p.labels : no_labels, diag))
            return ec;
    }
    if (auto ec = check_times(e.key, {{"updated_at", p.updated_at.value_or(0)},
                                      {"last_interaction_at", p.last_interaction_at.value_or(0)},
                                      {"memory_flush_at", p.memory_flush_at.value_or(0)}}, diag))
        return ec;
    if (p.updated_at) e.updated_at = *p.updated_at;
    if (p.new_session_id && *p.new_session_id != e.session_id) {
        if (!e.session_id.empty())
            e.previous.push_back(previous_session{e.session_id, e.started_at, e.updated_at, p.reset_reason});
        e.session_id = *p.new_session_id;
        e.started_at = e.updated_at;
        e.last_sequence = e.input_tokens = e.output_tokens = e.total_tokens = e.context_tokens = 0;
        e.compaction_count = e.memory_flush_compaction_count = 0;
        e.memory_flush_at = 0;
    }
    if (p.user_id) e.user_id = *p.user_id;
    if (p.last_interaction_at) e.last_interaction_at = *p.last_interaction_at;
    if (p.last_sequence) e.last_sequence = *p.last_sequence;
    e.input_tokens = saturating_add(e.input_tokens, p.add_input_tokens);
    e.output_tokens = saturating_add(e.output_tokens, p.add_output_tokens);
    e.total_tokens = saturating_add(e.input_tokens, e.output_tokens);
    e.compaction_count = saturating_add(e.compaction_count, p.add_compactions);
    if (p.context_tokens) e.context_tokens = *p.context_tokens;
    if (p.memory_flush_at) {
        e.memory_flush_at = *p.memory_flush_at;
        e.memory_flush_compaction_count = e.compaction_count;
    }
    if (p.chat_type) e.chat_type = *p.chat_type;
    if (p.labels) e.labels = *p.labels;
    if (p.overrides) e.overrides = *p.overrides;
    if (!p.drop_previous.empty())
        std::erase_if(e.previous, [&](const previous_session& s) {
            return std::find(p.drop_previous.begin(), p.drop_previous.end(), s.session_id) != p.drop_previous.end();
        });
    for (const auto& [k, v] : p.metadata) {
        if (v.is_null())
            e.metadata.erase(k);
        else
            e.metadata[k] = v;
    }
    return {};
}

inline bool matches(const conversation_entry& e, const conversation_query& q) {
    if (e.app_name != q.app_name) return false;
    if (q.user_id && e.user_id != *q.user_id) return false;
    if (q.chat_type && e.chat_type != *q.chat_type) return false;
    if (q.parent_session_id && e.parent_session_id != *q.parent_session_id) return false;
    if (!std::string_view(e.key).starts_with(q.key_prefix)) return false;
    if (q.active_since && !(e.last_interaction_at >= *q.active_since)) return false;
    if (q.inactive_since && !(e.last_interaction_at < *q.inactive_since)) return false;
    for (const auto& l : q.labels)
        if (std::find(e.labels.begin(), e.labels.end(), l) == e.labels.end()) return false;
    return true;
}

/// Newest update first, then by key; cut to q.limit.
inline void order_and_limit(std::vector<conversation_entry>& v, const conversation_query& q) {
    std::sort(v.begin(), v.end(), [](const conversation_entry& a, const conversation_entry& b) {
        if (a.updated_at != b.updated_at) return a.updated_at > b.updated_at;
        return a.key < b.key;
    });
    if (q.limit != 0 && v.size() > q.limit) v.resize(q.limit);
}

inline boost::system::error_code check_query(const conversation_query& q, diagnostics* diag) {
    if (auto p = id_problem(q.app_name); !p.empty()) {
        if (diag) diag->assign("session index: list: the app id " + p);
        return errc::invalid_argument;
    }
    // A NaN time compares false with every time: the query would list nothing, silently.
    for (auto [name, t] : {std::pair{"active_since", q.active_since}, {"inactive_since", q.inactive_since}})
        if (t && std::isnan(*t)) {
            if (diag) diag->assign(std::string("session index: list: conversation_query::") + name + " is NaN");
            return errc::invalid_argument;
        }
    return {};
}

/// The arguments of index_replace: a valid app, and valid entries of that app.
inline boost::system::error_code check_replace(std::string_view app, const std::vector<conversation_entry>& entries,
                                               diagnostics* diag) {
    if (auto p = id_problem(app); !p.empty()) {
        if (diag) diag->assign("session index: replace: the app id " + p);
        return errc::invalid_argument;
    }
    for (const auto& e : entries) {
        if (auto ec = check_entry(e, diag)) return ec;
        if (e.app_name != app) {
            if (diag) diag->assign("session index: replace: entry '" + e.key + "' is of app '" + e.app_name + "'");
            return errc::invalid_argument;
        }
    }
    return {};
}

inline boost::system::error_code not_in_index(std::string_view app, std::string_view key, diagnostics* diag) {
    if (diag) diag->assign("session index: no conversation '" + std::string(key) + "' in app '" + std::string(app) + "'");
    return errc::not_found;
}

} // namespace libretto::detail

#endif
