// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_IMPL_JSON_TEXT_IPP
#define LIBRETTO_EVENT_IMPL_JSON_TEXT_IPP

// parse_precise and its SAX handler: Boost.JSON's basic_parser instantiated once for both
// the parse and the search for a repeated key, compiled once with
// LIBRETTO_SEPARATE_COMPILATION.

#include <libretto/event/detail/json_text.hpp>

#include <boost/json/basic_parser_impl.hpp>

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace libretto::detail {

/// json::parser's handler, except that a double is re-read from its text with
/// std::from_chars: Boost.JSON's default number parser (the only one before 1.83) can be
/// 1 ulp off, which breaks the lossless round trip of timestamps. With find_repeat it also
/// stops at the first key an object repeats (the slow path of parse_precise, taken only
/// when a repeat is known to exist): one handler, so the parser is instantiated once.
struct precise_handler {
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    json::value_stack st;
    std::string number;   // the parts of a number split across writes
    std::size_t keys = 0; // members of every object, a repeated key included
    std::string why;      // what a callback refused, for the caller's message
    bool find_repeat = false;
    std::vector<std::unordered_set<std::string>> open_keys; // with find_repeat: each open object's
    std::string key;                                        // the key being read
    std::optional<std::string> repeated;                    // the key found twice

    precise_handler(json::storage_ptr temp, unsigned char* buf, std::size_t size) : st(std::move(temp), buf, size) {}

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_object_begin(json::error_code&) {
        if (find_repeat) open_keys.emplace_back();
        return true;
    }
    bool on_object_end(std::size_t n, json::error_code&) {
        if (find_repeat) open_keys.pop_back();
        keys += n; // a repeated key makes the object smaller than n: see parse_precise
        st.push_object(n);
        return true;
    }
    bool on_array_begin(json::error_code&) { return true; }
    bool on_array_end(std::size_t n, json::error_code&) { st.push_array(n); return true; }
    bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
        if (find_repeat) key.append(s.data(), s.size());
        st.push_chars(s);
        return true;
    }
    bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
        if (find_repeat) {
            key.append(s.data(), s.size());
            if (!open_keys.back().insert(key).second) {
                repeated = std::move(key);
                ec = json::error::syntax;
                return false;
            }
            key.clear();
        }
        st.push_key(s);
        return true;
    }
    bool on_string_part(json::string_view s, std::size_t, json::error_code&) { st.push_chars(s); return true; }
    bool on_string(json::string_view s, std::size_t, json::error_code&) { st.push_string(s); return true; }
    bool on_number_part(json::string_view s, json::error_code&) { number.append(s.data(), s.size()); return true; }
    bool on_int64(std::int64_t i, json::string_view, json::error_code&) { number.clear(); st.push_int64(i); return true; }
    bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) { number.clear(); st.push_uint64(u); return true; }
    bool on_double(double d, json::string_view s, json::error_code& err) {
        number.append(s.data(), s.size());
        double exact = 0;
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), exact);
        if (ec == std::errc() && end == number.data() + number.size()) d = exact;
        if (!std::isfinite(d)) [[unlikely]] {
            // Boost.JSON reads 1e400 as inf, which has no JSON text to write back.
            why = "number " + number.substr(0, 40) + (number.size() > 40 ? "..." : "") +
                  " is out of the range of a double";
            err = json::error::exponent_overflow;
            return false;
        }
        number.clear();
        st.push_double(d);
        return true;
    }
    bool on_bool(bool b, json::error_code&) { st.push_bool(b); return true; }
    bool on_null(json::error_code&) { st.push_null(); return true; }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }
};

LIBRETTO_DECL std::string repeated_key_message(std::string_view text) {
    unsigned char temp[BOOST_JSON_STACK_BUFFER_SIZE];
    json::basic_parser<precise_handler> p(stored_parse_options(), json::storage_ptr(), temp, sizeof temp);
    p.handler().find_repeat = true;
    json::error_code ec;
    p.write_some(false, text.data(), text.size(), ec);
    const auto& found = p.handler().repeated;
    if (!found) return "an object holds a key twice";
    return "the key \"" + found->substr(0, 64) + (found->size() > 64 ? "..." : "") + "\" appears twice in one object";
}

LIBRETTO_DECL json::value parse_precise(std::string_view text, json::error_code& ec, json::storage_ptr sp,
                                        std::string* why, std::size_t max_depth) {
    unsigned char temp[BOOST_JSON_STACK_BUFFER_SIZE];
    json::parse_options opt = stored_parse_options();
    opt.max_depth = max_depth;
    json::basic_parser<precise_handler> p(opt, json::storage_ptr(), temp, sizeof temp);
    p.handler().st.reset(std::move(sp));
    const std::size_t n = p.write_some(false, text.data(), text.size(), ec);
    if (!ec && n < text.size()) ec = json::error::extra_data;
    if (ec) {
        if (why) {
            if (!p.handler().why.empty()) *why = std::move(p.handler().why);
            else if (ec == json::error::too_deep)
                *why = max_depth == max_json_depth
                           ? "arrays and objects nest deeper than max_json_depth (" + std::to_string(max_json_depth) + ")"
                           : "arrays and objects nest deeper than " + std::to_string(max_depth) + " levels";
            else *why = ec.message();
        }
        return nullptr;
    }
    json::value v = p.handler().st.release();
    if (p.handler().keys != 0 && count_members(v) != p.handler().keys) [[unlikely]] {
        ec = json::error::syntax;
        if (why) *why = repeated_key_message(text);
        return nullptr;
    }
    return v;
}

} // namespace libretto::detail

#endif
