// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target canonical_json (RFC 8785, sign/canonical_json.hpp): the input is JSON text
// (strings that are not UTF-8 allowed, nesting up to 1100, so that both refusals are
// reached); its first 8 bytes are also taken as a double for canonical_number.
//
//   - canonical_json either refuses with system_error(errc::invalid_argument) and a
//     message, or gives text that a strict reader (UTF-8 checked, exact doubles) parses
//     back to an equal value, and whose canonical form is itself (idempotent);
//   - the canonical text has no whitespace outside strings and its object members in
//     order;
//   - canonical_number of a finite double reads back as that double; of NaN or an
//     infinity, a clean refusal.

#include "fuzz_support.hpp"

#include <libretto/event/json.hpp> // detail::precise_handler: exact doubles (Boost 1.81's parser can be 1 ulp off)
#include <libretto/sign/canonical_json.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/system/system_error.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace {

namespace lb = libretto;
namespace json = boost::json;

/// `text` parsed with exact doubles, strict UTF-8, up to `depth` levels; nullopt on error.
std::optional<json::value> parse_strict(std::string_view text, bool allow_invalid_utf8, std::size_t depth) {
    unsigned char temp[BOOST_JSON_STACK_BUFFER_SIZE];
    json::parse_options opt;
    opt.allow_invalid_utf8 = allow_invalid_utf8;
    opt.max_depth = depth;
    json::basic_parser<lb::detail::precise_handler> p(opt, json::storage_ptr(), temp, sizeof temp);
    p.handler().st.reset(json::storage_ptr());
    boost::system::error_code ec;
    const std::size_t n = p.write_some(false, text.data(), text.size(), ec);
    if (ec || n != text.size()) return std::nullopt;
    return p.handler().st.release();
}

bool is_integer_kind(const json::value& v) { return v.is_int64() || v.is_uint64(); }

/// Equal as JSON values: numbers by value (an integral double may come back as an integer,
/// a large integer-valued double as a double), objects regardless of member order.
bool same_value(const json::value& a, const json::value& b) {
    if (a.is_number() && b.is_number()) {
        if (is_integer_kind(a) && is_integer_kind(b)) {
            if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
            if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
            const json::value& s = a.is_int64() ? a : b;
            const json::value& u = a.is_int64() ? b : a;
            return s.get_int64() >= 0 && static_cast<std::uint64_t>(s.get_int64()) == u.get_uint64();
        }
        return a.to_number<double>() == b.to_number<double>();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case json::kind::array: {
        const auto& x = a.get_array();
        const auto& y = b.get_array();
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!same_value(x[i], y[i])) return false;
        return true;
    }
    case json::kind::object: {
        const auto& x = a.get_object();
        const auto& y = b.get_object();
        if (x.size() != y.size()) return false;
        for (const auto& kv : x) {
            const auto* other = y.if_contains(kv.key());
            if (!other || !same_value(kv.value(), *other)) return false;
        }
        return true;
    }
    default: return a == b;
    }
}

/// No whitespace outside strings (JCS writes none).
bool whitespace_outside_strings(std::string_view t) {
    bool in_string = false;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            return true;
        }
    }
    return false;
}

/// Every object's members in strictly increasing UTF-16 order of their names (the text's
/// order: Boost.JSON keeps members in the order it read them).
bool members_sorted(const json::value& v) {
    if (const auto* a = v.if_array()) {
        for (const auto& x : *a)
            if (!members_sorted(x)) return false;
    } else if (const auto* o = v.if_object()) {
        const json::key_value_pair* prev = nullptr;
        for (const auto& kv : *o) {
            if (prev && !lb::detail::utf16_less(prev->key(), kv.key())) return false;
            if (!members_sorted(kv.value())) return false;
            prev = &kv;
        }
    }
    return true;
}

/// Calls canonical_json; on a refusal checks it is a clean one and returns nullopt.
std::optional<std::string> canonical_or_refusal(const json::value& v) {
    try {
        return lb::canonical_json(v);
    } catch (const boost::system::system_error& e) {
        FUZZ_CHECK(e.code() == lb::errc::invalid_argument, std::string("refused with another code: ") + e.what());
        FUZZ_CHECK(std::string_view(e.what()).find("canonical JSON: ") != std::string_view::npos,
                   std::string("a refusal that does not say what refused: ") + e.what());
        return std::nullopt;
    }
}

void check_number(double d) {
    std::string t;
    try {
        t = lb::canonical_number(d);
    } catch (const boost::system::system_error& e) {
        FUZZ_CHECK(!std::isfinite(d), std::string("a finite number refused: ") + e.what());
        FUZZ_CHECK(e.code() == lb::errc::invalid_argument, std::string("refused with another code: ") + e.what());
        return;
    }
    FUZZ_CHECK(std::isfinite(d), "a non-finite number written as " + t);
    double back = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), back);
    FUZZ_CHECK(r.ec == std::errc() && r.ptr == t.data() + t.size(), "canonical_number wrote " + t + ", not a number");
    FUZZ_CHECK(back == d, "canonical_number(" + std::to_string(d) + ") = " + t + " reads back as another number");
    FUZZ_CHECK(!(d == 0 && t != "0"), "zero written as " + t);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    if (size >= 8) {
        double d;
        std::memcpy(&d, data, 8);
        check_number(d);
    }

    const auto v = parse_strict(text, true, 1100);
    if (!v) return 0;
    const auto canon = canonical_or_refusal(*v);
    if (!canon) return 0;

    FUZZ_CHECK(!whitespace_outside_strings(*canon), "whitespace in " + fuzz::shown(*canon));
    const auto back = parse_strict(*canon, false, 1100);
    FUZZ_CHECK(back.has_value(), "the canonical text does not parse (strict UTF-8): " + fuzz::shown(*canon));
    FUZZ_CHECK(members_sorted(*back), "members out of order in " + fuzz::shown(*canon));
    FUZZ_CHECK(same_value(*v, *back), "the canonical text means another value: " + fuzz::shown(text) + " -> " +
                                          fuzz::shown(*canon));
    const auto again = canonical_or_refusal(*back);
    FUZZ_CHECK(again.has_value(), "the canonical text's value is refused: " + fuzz::shown(*canon));
    FUZZ_CHECK(*again == *canon, "not idempotent: " + fuzz::shown(*canon) + " -> " + fuzz::shown(*again));
    return 0;
}
