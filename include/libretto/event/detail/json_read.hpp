// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_DETAIL_JSON_READ_HPP
#define LIBRETTO_EVENT_DETAIL_JSON_READ_HPP

// Strict, non-throwing field readers for hand-written JSON decoders. On failure they
// fill a decode_error whose path is built while unwinding, so the happy path never
// formats a string.

#include <libretto/event/detail/json_kind.hpp>
#include <libretto/event/boxed_optional.hpp>
#include <libretto/error.hpp>
#include <libretto/json_error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace libretto {
struct content;
struct event;
struct event_actions;
struct event_compaction;
struct usage;
} // namespace libretto

namespace libretto::detail {

namespace json = boost::json;

// Readers of the event-model types (defined in event/json.hpp), declared here so that the
// templates below find them.
bool read(const json::value& v, content& out, decode_error& err);
bool read(const json::value& v, event& out, decode_error& err);
bool read(const json::value& v, event_actions& out, decode_error& err);
bool read(const json::value& v, event_compaction& out, decode_error& err);
bool read(const json::value& v, usage& out, decode_error& err);

inline bool fail(decode_error& err, errc code, std::string detail) {
    err.code = code;
    err.path.clear();
    err.detail = std::move(detail);
    return false;
}

inline bool wrong_type(decode_error& err, const char* expected, const json::value& got) {
    return fail(err, errc::wrong_type, std::string("expected ") + expected + ", got " + kind_name(got.kind()));
}

/// Prepends a member name to the error path (while unwinding).
inline bool in_field(decode_error& err, std::string_view key) {
    if (err.path.empty() || err.path.front() == '[')
        err.path.insert(0, key);
    else {
        err.path.insert(0, 1, '.');
        err.path.insert(0, key);
    }
    return false;
}

/// Prepends an array index to the error path (while unwinding).
inline bool in_index(decode_error& err, std::size_t i) {
    std::string seg = "[" + std::to_string(i) + "]";
    if (!err.path.empty() && err.path.front() != '[') seg += '.';
    err.path.insert(0, seg);
    return false;
}

inline const json::object* as_object(const json::value& v, decode_error& err) {
    if (auto o = v.if_object()) return o;
    wrong_type(err, "object", v);
    return nullptr;
}

inline bool read(const json::value& v, std::string& out, decode_error& err) {
    if (auto s = v.if_string()) {
        out.assign(s->data(), s->size());
        return true;
    }
    return wrong_type(err, "string", v);
}

inline bool read(const json::value& v, std::int64_t& out, decode_error& err) {
    if (v.is_int64()) {
        out = v.get_int64();
        return true;
    }
    if (v.is_uint64()) {
        if (v.get_uint64() > static_cast<std::uint64_t>(INT64_MAX))
            return fail(err, errc::wrong_type, "integer out of range");
        out = static_cast<std::int64_t>(v.get_uint64());
        return true;
    }
    return wrong_type(err, "integer", v);
}

inline bool read(const json::value& v, double& out, decode_error& err) {
    switch (v.kind()) {
    case json::kind::double_: out = v.get_double(); return true;
    case json::kind::int64: out = static_cast<double>(v.get_int64()); return true;
    case json::kind::uint64: out = static_cast<double>(v.get_uint64()); return true;
    default: return wrong_type(err, "number", v);
    }
}

inline bool read(const json::value& v, bool& out, decode_error& err) {
    if (v.is_bool()) {
        out = v.get_bool();
        return true;
    }
    return wrong_type(err, "bool", v);
}

inline bool read(const json::value& v, json::object& out, decode_error& err) {
    if (auto o = v.if_object()) {
        out = *o;
        return true;
    }
    return wrong_type(err, "object", v);
}

inline bool read(const json::value& v, json::value& out, decode_error&) {
    out = v;
    return true;
}

template <class T>
inline constexpr bool is_optional_member = false;
template <class T>
inline constexpr bool is_optional_member<std::optional<T>> = true;
template <class T>
inline constexpr bool is_optional_member<boxed_optional<T>> = true;

/// An optional member (std::optional or boxed_optional): absent or null leaves `out`
/// disengaged.
template <class Optional>
    requires is_optional_member<Optional>
bool read(const json::value& v, Optional& out, decode_error& err) {
    if (v.is_null()) {
        out.reset();
        return true;
    }
    typename Optional::value_type tmp{};
    if (!read(v, tmp, err)) return false;
    out = std::move(tmp);
    return true;
}

/// Reads member `key` of `o` into `out` if present; `required` makes absence an error.
template <class T>
bool read_member(const json::object& o, std::string_view key, T& out, decode_error& err, bool required = false) {
    auto it = o.find(key);
    if (it == o.end()) {
        if (!required) return true;
        fail(err, errc::missing_field, "required field is missing");
        return in_field(err, key);
    }
    if (!read(it->value(), out, err)) return in_field(err, key);
    return true;
}

} // namespace libretto::detail

#endif
