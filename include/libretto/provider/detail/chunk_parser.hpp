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
#include <string>
#include <string_view>

namespace libretto::detail {

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
