// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_ARGUMENTS_HPP
#define LIBRETTO_TOOL_ARGUMENTS_HPP

// Tool arguments from a struct described with BOOST_DESCRIBE_STRUCT: the JSON Schema the
// model is given (arguments_schema<T>) and a strict decoder of what the model sends
// (parse_arguments<T>), whose errors name the offending field
// ("args.items[2].qty: expected integer, got string").
//
// Type mapping (see docs/tools.md):
//   std::string                    {"type":"string"}
//   bool                           {"type":"boolean"}
//   integers                       {"type":"integer","minimum":…,"maximum":…} (no bounds for int64)
//   float, double                  {"type":"number"}
//   described enum                 {"type":"string","enum":[names…]}
//   std::optional<T> (a member)    T's schema, not in "required"; absent or null → nullopt
//   std::vector<T>                 {"type":"array","items":T}
//   std::map<std::string, T>       {"type":"object","additionalProperties":T}
//   described struct               {"type":"object","properties":…,"required":[…],"additionalProperties":false}
//   json::value / object / array   {} / {"type":"object"} / {"type":"array"}

#include <libretto/json_stringify.hpp>
#include <libretto/error.hpp>
#include <libretto/json_error.hpp>
#include <libretto/tool/tool.hpp>

#include <boost/describe/enumerators.hpp>
#include <boost/describe/members.hpp>
#include <boost/describe/modifiers.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/mp11/algorithm.hpp>
#include <boost/system/system_error.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

/// Descriptions of argument fields by path: "city", "address.street", and through arrays
/// and maps without an index: "items.qty" describes the qty of every element of items.
using field_descriptions = std::map<std::string, std::string, std::less<>>;

namespace detail::args {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
struct is_string_map : std::false_type {};
template <class T, class C, class A>
struct is_string_map<std::map<std::string, T, C, A>> : std::true_type {};

template <class T>
inline constexpr bool is_char_v = std::is_same_v<T, char> || std::is_same_v<T, wchar_t> ||
                                  std::is_same_v<T, char8_t> || std::is_same_v<T, char16_t> ||
                                  std::is_same_v<T, char32_t>;

template <class T>
inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool> && !is_char_v<T>;

template <class T>
inline constexpr bool is_described_struct_v =
    std::is_class_v<T> && boost::describe::has_describe_members<T>::value;

template <class T>
inline constexpr bool is_described_enum_v = std::is_enum_v<T> && boost::describe::has_describe_enumerators<T>::value;

template <class T>
inline constexpr bool dependent_false = false;

template <class T>
using members = boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>;

// ---- schema ---------------------------------------------------------------------------

inline constexpr int max_depth = 32;

struct schema_builder {
    const field_descriptions* descriptions = nullptr;
    std::size_t used = 0;

    template <class T>
    json::object build(const std::string& path, int depth) {
        if (depth > max_depth)
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              "argument type nested too deeply (recursive type?) at '" + path + "'");
        json::object s;
        if constexpr (std::is_same_v<T, bool>) {
            s["type"] = "boolean";
        } else if constexpr (is_integer_v<T>) {
            s["type"] = "integer";
            if constexpr (std::is_signed_v<T>) {
                if constexpr (sizeof(T) < sizeof(std::int64_t)) {
                    s["minimum"] = static_cast<std::int64_t>(std::numeric_limits<T>::min());
                    s["maximum"] = static_cast<std::int64_t>(std::numeric_limits<T>::max());
                }
            } else {
                s["minimum"] = 0;
                s["maximum"] = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
            }
        } else if constexpr (std::is_floating_point_v<T>) {
            s["type"] = "number";
        } else if constexpr (std::is_same_v<T, std::string>) {
            s["type"] = "string";
        } else if constexpr (is_described_enum_v<T>) {
            s["type"] = "string";
            json::array names;
            boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>(
                [&](auto d) { names.emplace_back(d.name); });
            s["enum"] = std::move(names);
        } else if constexpr (is_optional<T>::value) {
            static_assert(dependent_false<T>,
                          "std::optional is supported as a member of a described struct only (it makes the member "
                          "not required)");
        } else if constexpr (is_vector<T>::value) {
            s["type"] = "array";
            s["items"] = build<typename T::value_type>(path, depth + 1);
        } else if constexpr (is_string_map<T>::value) {
            s["type"] = "object";
            s["additionalProperties"] = build<typename T::mapped_type>(path, depth + 1);
        } else if constexpr (std::is_same_v<T, json::value>) {
            // any JSON value: the empty schema
        } else if constexpr (std::is_same_v<T, json::object>) {
            s["type"] = "object";
        } else if constexpr (std::is_same_v<T, json::array>) {
            s["type"] = "array";
        } else if constexpr (is_described_struct_v<T>) {
            json::object props;
            json::array required;
            boost::mp11::mp_for_each<members<T>>([&](auto d) {
                using M = std::remove_cvref_t<decltype(std::declval<T&>().*d.pointer)>;
                std::string child = path.empty() ? std::string(d.name) : path + "." + d.name;
                json::object ps;
                if constexpr (is_optional<M>::value)
                    ps = build<typename M::value_type>(child, depth + 1);
                else {
                    ps = build<M>(child, depth + 1);
                    required.emplace_back(d.name);
                }
                if (descriptions) {
                    auto it = descriptions->find(child);
                    if (it != descriptions->end()) {
                        ps["description"] = it->second;
                        ++used;
                    }
                }
                props[d.name] = std::move(ps);
            });
            s["type"] = "object";
            s["properties"] = std::move(props);
            s["required"] = std::move(required);
            s["additionalProperties"] = false;
        } else {
            static_assert(dependent_false<T>,
                          "unsupported tool argument type: use std::string, bool, an integer or floating type, a "
                          "described enum or struct, std::optional (members), std::vector, "
                          "std::map<std::string, T>, json::value, json::object or json::array");
        }
        return s;
    }
};

// ---- parsing --------------------------------------------------------------------------

inline bool fail(decode_error& err, errc code, std::string detail) {
    err.code = make_error_code(code);
    err.path.clear();
    err.detail = std::move(detail);
    return false;
}

inline bool wrong_type(decode_error& err, const char* expected, const json::value& got) {
    return fail(err, errc::wrong_type, std::string("expected ") + expected + ", got " + schema_kind_name(got.kind()));
}

/// Prepends a member name to the error path (while unwinding).
inline bool in_field(decode_error& err, std::string_view key) {
    std::string seg(key);
    if (!err.path.empty() && err.path.front() != '[') seg += '.';
    err.path.insert(0, seg);
    return false;
}

/// Prepends an array index to the error path (while unwinding).
inline bool in_index(decode_error& err, std::size_t i) {
    std::string seg = "[" + std::to_string(i) + "]";
    if (!err.path.empty() && err.path.front() != '[') seg += '.';
    err.path.insert(0, seg);
    return false;
}

template <class I>
bool out_of_range(decode_error& err, const std::string& got) {
    std::string d = "integer " + got + " out of range [" + std::to_string(std::numeric_limits<I>::min()) + ", " +
                    std::to_string(std::numeric_limits<I>::max()) + "]";
    return fail(err, errc::invalid_argument, std::move(d));
}

template <class I>
bool read_integer(const json::value& v, I& out, decode_error& err) {
    switch (v.kind()) {
    case json::kind::int64: {
        std::int64_t x = v.get_int64();
        if (!std::in_range<I>(x)) return out_of_range<I>(err, std::to_string(x));
        out = static_cast<I>(x);
        return true;
    }
    case json::kind::uint64: {
        std::uint64_t x = v.get_uint64();
        if (!std::in_range<I>(x)) return out_of_range<I>(err, std::to_string(x));
        out = static_cast<I>(x);
        return true;
    }
    case json::kind::double_: {
        // JSON Schema counts a number with a zero fractional part (3.0) as an integer.
        double d = v.get_double();
        if (!std::isfinite(d) || std::trunc(d) != d) return wrong_type(err, "integer", v);
        // min is 0 or -2^(bits-1) and max + 1 is 2^bits or 2^(bits-1): both exact doubles.
        constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
        constexpr double hi = 2.0 * static_cast<double>(std::numeric_limits<I>::max() / 2 + 1);
        if (d < lo || d >= hi) return out_of_range<I>(err, stringify(v));
        out = static_cast<I>(d);
        return true;
    }
    default: return wrong_type(err, "integer", v);
    }
}

template <class T>
bool read(const json::value& v, T& out, decode_error& err, int depth);

template <class T>
bool read_struct(const json::value& v, T& out, decode_error& err, int depth) {
    const json::object* o = v.if_object();
    if (!o) return wrong_type(err, "object", v);
    bool ok = true;
    std::size_t found = 0;
    boost::mp11::mp_for_each<members<T>>([&](auto d) {
        if (!ok) return;
        using M = std::remove_cvref_t<decltype(out.*d.pointer)>;
        auto it = o->find(d.name);
        if (it != o->end()) ++found;
        if (it == o->end()) {
            if constexpr (!is_optional<M>::value) {
                fail(err, errc::missing_field, "missing required field");
                ok = in_field(err, d.name);
            }
            return;
        }
        if (!read<M>(it->value(), out.*d.pointer, err, depth + 1)) ok = in_field(err, d.name);
    });
    if (!ok) return false;
    if (found == o->size()) return true; // every key was a member
    for (const auto& kv : *o) {
        bool known = false;
        boost::mp11::mp_for_each<members<T>>([&](auto d) { known = known || kv.key() == d.name; });
        if (known) continue;
        std::string detail = "unknown field";
        if constexpr (boost::mp11::mp_size<members<T>>::value == 0) {
            detail += " (no fields are accepted)";
        } else {
            detail += " (expected one of: ";
            bool first = true;
            boost::mp11::mp_for_each<members<T>>([&](auto d) {
                if (!first) detail += ", ";
                first = false;
                detail += d.name;
            });
            detail += ')';
        }
        fail(err, errc::invalid_argument, std::move(detail));
        return in_field(err, kv.key());
    }
    return true;
}

template <class T>
bool read(const json::value& v, T& out, decode_error& err, int depth) {
    if (depth > max_depth) return fail(err, errc::invalid_argument, "nested too deeply");
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_bool()) return wrong_type(err, "boolean", v);
        out = v.get_bool();
        return true;
    } else if constexpr (is_integer_v<T>) {
        return read_integer(v, out, err);
    } else if constexpr (std::is_floating_point_v<T>) {
        double d;
        switch (v.kind()) {
        case json::kind::double_: d = v.get_double(); break;
        case json::kind::int64: d = static_cast<double>(v.get_int64()); break;
        case json::kind::uint64: d = static_cast<double>(v.get_uint64()); break;
        default: return wrong_type(err, "number", v);
        }
        if constexpr (sizeof(T) < sizeof(double)) {
            if (std::isfinite(d) && std::abs(d) > static_cast<double>(std::numeric_limits<T>::max()))
                return fail(err, errc::invalid_argument, "number " + stringify(v) + " out of range");
        }
        out = static_cast<T>(d);
        return true;
    } else if constexpr (std::is_same_v<T, std::string>) {
        const json::string* s = v.if_string();
        if (!s) return wrong_type(err, "string", v);
        out.assign(s->data(), s->size());
        return true;
    } else if constexpr (is_described_enum_v<T>) {
        const json::string* s = v.if_string();
        if (!s) return wrong_type(err, "string", v);
        bool found = false;
        boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
            if (!found && *s == d.name) {
                out = d.value;
                found = true;
            }
        });
        if (found) return true;
        std::string detail = "unknown value " + stringify(v) + " (expected one of: ";
        bool first = true;
        boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
            if (!first) detail += ", ";
            first = false;
            detail += d.name;
        });
        detail += ')';
        return fail(err, errc::unknown_enum_value, std::move(detail));
    } else if constexpr (is_optional<T>::value) {
        if (v.is_null()) {
            out.reset();
            return true;
        }
        typename T::value_type tmp{};
        if (!read<typename T::value_type>(v, tmp, err, depth)) return false;
        out = std::move(tmp);
        return true;
    } else if constexpr (is_vector<T>::value) {
        const json::array* a = v.if_array();
        if (!a) return wrong_type(err, "array", v);
        out.clear();
        out.reserve(a->size());
        for (std::size_t i = 0; i < a->size(); ++i) {
            typename T::value_type tmp{};
            if (!read<typename T::value_type>((*a)[i], tmp, err, depth + 1)) return in_index(err, i);
            out.push_back(std::move(tmp));
        }
        return true;
    } else if constexpr (is_string_map<T>::value) {
        const json::object* o = v.if_object();
        if (!o) return wrong_type(err, "object", v);
        out.clear();
        for (const auto& kv : *o) {
            typename T::mapped_type tmp{};
            if (!read<typename T::mapped_type>(kv.value(), tmp, err, depth + 1)) return in_field(err, kv.key());
            out.insert_or_assign(std::string(kv.key()), std::move(tmp));
        }
        return true;
    } else if constexpr (std::is_same_v<T, json::value>) {
        out = v;
        return true;
    } else if constexpr (std::is_same_v<T, json::object>) {
        const json::object* o = v.if_object();
        if (!o) return wrong_type(err, "object", v);
        out = *o;
        return true;
    } else if constexpr (std::is_same_v<T, json::array>) {
        const json::array* a = v.if_array();
        if (!a) return wrong_type(err, "array", v);
        out = *a;
        return true;
    } else if constexpr (is_described_struct_v<T>) {
        return read_struct(v, out, err, depth);
    } else {
        static_assert(dependent_false<T>, "unsupported tool argument type (see arguments_schema)");
    }
}

} // namespace detail::args

/// True if `T` can be a tool's arguments: a struct described with BOOST_DESCRIBE_STRUCT.
template <class T>
inline constexpr bool is_described_arguments_v = detail::args::is_described_struct_v<T>;

/// The JSON Schema of arguments `T` (a described struct), with `descriptions` placed on
/// the fields they name. Throws system_error(errc::invalid_argument) if a description
/// names no field (a typo would otherwise go unnoticed).
template <class T>
json::object arguments_schema(const field_descriptions& descriptions = {}) {
    static_assert(is_described_arguments_v<T>,
                  "tool arguments must be a struct described with BOOST_DESCRIBE_STRUCT");
    detail::args::schema_builder b{&descriptions};
    json::object s = b.template build<T>(std::string(), 0);
    if (b.used != descriptions.size()) {
        // Find one that was not used, to name it.
        for (const auto& kv : descriptions) {
            detail::args::schema_builder probe{nullptr};
            field_descriptions one{{kv.first, kv.second}};
            probe.descriptions = &one;
            (void)probe.template build<T>(std::string(), 0);
            if (probe.used == 0)
                throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                                  "field description for unknown field '" + kv.first + "'");
        }
    }
    return s;
}

/// Decodes `args` into `out` strictly: every required field present, no unknown field,
/// every value of the declared type and in range. On failure returns false and fills
/// `err` (code, path below "args", detail); `out` is then partly assigned.
template <class T>
bool try_parse_arguments(const json::value& args, T& out, decode_error& err) {
    static_assert(is_described_arguments_v<T>,
                  "tool arguments must be a struct described with BOOST_DESCRIBE_STRUCT");
    return detail::args::read<T>(args, out, err, 0);
}

/// The message the model is shown for `err`: "args.items[2].qty: expected integer, got string".
inline std::string arguments_error_message(const decode_error& err) {
    std::string m = "args";
    if (!err.path.empty()) {
        if (err.path.front() != '[') m += '.';
        m += err.path;
    }
    m += ": ";
    m += err.detail.empty() ? err.code.message() : err.detail;
    return m;
}

/// Decodes `args` into a `T`; throws tool_error (code and message as above) on failure.
template <class T>
T parse_arguments(const json::value& args) {
    T out{};
    decode_error err;
    if (!try_parse_arguments(args, out, err)) throw tool_error(arguments_error_message(err), err.code);
    return out;
}

} // namespace libretto

#endif
