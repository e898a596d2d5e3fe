// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_CHUNK_PARSER_HPP
#define LIBRETTO_PROVIDER_DETAIL_CHUNK_PARSER_HPP

// Parses one streamed JSON payload at a time into a reused arena: a stream's chunks are
// small and many, so each parse allocates nothing once the arena and the parser's stack
// have grown to the largest chunk seen (a payload that outgrows the inline buffer takes
// blocks from the heap, released before the next parse).

#include <libretto/provider/detail/text.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace libretto::detail {

inline int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// The UTF-16 code unit of the escape at text[i] (a backslash, "u" and four hex digits), or -1.
inline long utf16_escape_at(std::string_view text, std::size_t i) noexcept {
    if (i + 6 > text.size() || text[i + 1] != 'u') return -1;
    long v = 0;
    for (std::size_t k = 2; k < 6; ++k) {
        const int h = hex_value(text[i + k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/// `text` with every unpaired surrogate escape (a high half without its low half, or a low
/// half alone) replaced by the escape of U+FFFD; nullopt when it has none. Servers that cut
/// a stream's text in UTF-16 units (JavaScript's slice) can split an emoji's pair across
/// two events, each then holding a lone surrogate, which Boost.JSON refuses: U+FFFD keeps
/// the rest of the answer.
inline std::optional<std::string> replace_lone_surrogates(std::string_view text) {
    std::optional<std::string> out;
    std::size_t copied = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') continue;
        const long u = utf16_escape_at(text, i);
        if (u < 0xD800 || u > 0xDFFF) { // another escape (or none): skip its escaped character
            ++i;
            continue;
        }
        if (u <= 0xDBFF && i + 6 < text.size() && text[i + 6] == '\\') {
            const long low = utf16_escape_at(text, i + 6);
            if (low >= 0xDC00 && low <= 0xDFFF) { // a whole pair
                i += 11;
                continue;
            }
        }
        if (!out) out.emplace();
        out->append(text.substr(copied, i - copied));
        out->append("\\ufffd");
        copied = i + 6;
        i += 5;
    }
    if (out) out->append(text.substr(copied));
    return out;
}

class chunk_parser {
public:
    chunk_parser() : state_(std::make_unique<state>()) {}

    /// Parses `data` (a whole JSON text) into the arena: the value must be gone before the
    /// next parse(). On failure `ec` is set and the value is null.
    boost::json::value parse(std::string_view data, boost::system::error_code& ec) {
        state& s = *state_;
        s.arena.release();
        s.parser.reset(boost::json::storage_ptr(&s.arena));
        s.parser.write(data.data(), data.size(), ec); // a whole text: incomplete or trailing data is an error
        if (ec) {
            // Only on failure: a half of a surrogate pair becomes U+FFFD, then once more.
            if (auto repaired = replace_lone_surrogates(data)) {
                boost::system::error_code again;
                s.arena.release();
                s.parser.reset(boost::json::storage_ptr(&s.arena));
                s.parser.write(repaired->data(), repaired->size(), again);
                if (!again) {
                    ec = {};
                    return s.parser.release();
                }
            }
            s.parser.reset();
            return nullptr;
        }
        return s.parser.release();
    }

private:
    struct state {
        alignas(16) unsigned char buffer[4096];
        boost::json::monotonic_resource arena{buffer, sizeof buffer};
        boost::json::parser parser;
    };
    std::unique_ptr<state> state_; // the arena points into its own buffer: keep it in place
};

/// "chunk #3 is not valid JSON (syntax error): {\"choices\":[..." — at most 200 bytes of it.
inline std::string bad_json_message(std::string_view what, std::size_t number, const boost::system::error_code& ec,
                                    std::string_view data) {
    std::string m(what);
    m += " #";
    m += std::to_string(number);
    m += " is not valid JSON (";
    m += ec.message();
    m += "): ";
    m += bounded_utf8(data, 200);
    return m;
}

} // namespace libretto::detail

#endif
