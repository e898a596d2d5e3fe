// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_SHAPE_READER_HPP
#define LIBRETTO_PROVIDER_DETAIL_SHAPE_READER_HPP

// Lenient, allocation-free readers for the members of provider JSON: absent and null are
// "not there", a wrong type is a problem named by its path (built only when it happens).

#include <libretto/event/detail/json_kind.hpp>
#include <libretto/provider/provider_error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace libretto::detail {

/// Reads the optional members of one JSON object, keeping the first problem found. `where`
/// is a callable giving the object's path; it is called only to describe a problem.
class shape_reader {
public:
    template <class Where>
    const json::string* str(const json::object& o, std::string_view key, Where&& where) {
        const json::value* v = member(o, key);
        if (!v || v->is_null()) return nullptr;
        if (const auto* s = v->if_string()) return s;
        wrong(where(), key, "string", *v);
        return nullptr;
    }
    template <class Where>
    const json::object* obj(const json::object& o, std::string_view key, Where&& where) {
        const json::value* v = member(o, key);
        if (!v || v->is_null()) return nullptr;
        if (const auto* x = v->if_object()) return x;
        wrong(where(), key, "object", *v);
        return nullptr;
    }
    template <class Where>
    const json::array* arr(const json::object& o, std::string_view key, Where&& where) {
        const json::value* v = member(o, key);
        if (!v || v->is_null()) return nullptr;
        if (const auto* x = v->if_array()) return x;
        wrong(where(), key, "array", *v);
        return nullptr;
    }
    /// A non-negative integer member.
    template <class Where>
    std::optional<std::int64_t> count(const json::object& o, std::string_view key, Where&& where) {
        const json::value* v = member(o, key);
        if (!v || v->is_null()) return std::nullopt;
        if (v->is_int64() && v->get_int64() >= 0) return v->get_int64();
        if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
            return static_cast<std::int64_t>(v->get_uint64());
        if (v->is_double() && v->get_double() >= 0 && v->get_double() < 9.0e18 &&
            v->get_double() == static_cast<double>(static_cast<std::int64_t>(v->get_double())))
            return static_cast<std::int64_t>(v->get_double());
        wrong(where(), key, "non-negative integer", *v);
        return std::nullopt;
    }

    bool ok() const noexcept { return problem_.empty(); }
    const std::string& problem() const noexcept { return problem_; }
    void set(std::string p) {
        if (problem_.empty()) problem_ = std::move(p);
    }

private:
    void wrong(std::string path, std::string_view key, const char* expected, const json::value& got) {
        if (!problem_.empty()) return;
        if (!path.empty()) path += '.';
        path += key;
        set(path + ": expected " + expected + ", got " + kind_name(got.kind()));
    }

    std::string problem_;
};

} // namespace libretto::detail

#endif
