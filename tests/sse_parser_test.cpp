// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/http/sse_parser.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lb = libretto;
using lb::http::sse_event;
using lb::http::sse_parser;

namespace {

struct got {
    std::string event, data, id;
    bool operator==(const got&) const = default;
};

std::ostream& operator<<(std::ostream& os, const got& g) {
    return os << "{" << g.event << "|" << g.data << "|" << g.id << "}";
}

using events = std::vector<got>;

/// Feeds `parts` in order to a fresh parser; fails the test on an error.
events parse_parts(const std::vector<std::string_view>& parts, bool* idle = nullptr) {
    sse_parser p;
    events out;
    for (auto part : parts) {
        // Copy each part so that views into it die with it (ASan catches a kept view).
        std::string owned(part);
        auto ec = p.feed(owned, [&](const sse_event& e) {
            out.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
        });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    }
    if (idle) *idle = p.idle();
    return out;
}

/// Checks `input` against `expected` whole, byte by byte, and in every two-way split.
void check_all_splits(std::string_view input, const events& expected, bool expect_idle = true) {
    bool idle = false;
    BOOST_TEST(parse_parts({input}, &idle) == expected, boost::test_tools::per_element());
    BOOST_TEST(idle == expect_idle);
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < input.size(); ++i) bytes.push_back(input.substr(i, 1));
    BOOST_TEST(parse_parts(bytes, &idle) == expected, boost::test_tools::per_element());
    BOOST_TEST(idle == expect_idle);
    for (std::size_t cut = 0; cut <= input.size(); ++cut) {
        auto r = parse_parts({input.substr(0, cut), input.substr(cut)}, &idle);
        BOOST_TEST_CONTEXT("split at " << cut) {
            BOOST_TEST(r == expected, boost::test_tools::per_element());
            BOOST_TEST(idle == expect_idle);
        }
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(sse_parser_suite)

BOOST_AUTO_TEST_CASE(single_data_event_with_lf) {
    check_all_splits("data: hello\n\n", {{"message", "hello", ""}});
}

BOOST_AUTO_TEST_CASE(crlf_and_cr_line_ends) {
    check_all_splits("data: a\r\n\r\ndata: b\r\rdata: c\n\r\n", {{"message", "a", ""}, {"message", "b", ""}, {"message", "c", ""}});
}

BOOST_AUTO_TEST_CASE(cr_then_lf_across_chunks_is_one_line_end) {
    // "data: x\r" + "\ndata: y\r\n\r\n": the LF after the CR must not end a second (empty) line,
    // which would dispatch "x" alone.
    BOOST_TEST(parse_parts({"data: x\r", "\ndata: y\r\n\r\n"}) == events({{"message", "x\ny", ""}}),
               boost::test_tools::per_element());
    // But CR then CR is two line ends: it dispatches.
    BOOST_TEST(parse_parts({"data: x\r", "\rdata: y\r\r"}) == events({{"message", "x", ""}, {"message", "y", ""}}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(multi_line_data_joined_with_lf) {
    check_all_splits("data: one\ndata: two\ndata:three\n\n", {{"message", "one\ntwo\nthree", ""}});
}

BOOST_AUTO_TEST_CASE(event_names_and_ids) {
    check_all_splits("event: message_start\ndata: {\"a\":1}\nid: 7\n\n"
                     "data: plain\n\n"
                     "event: ping\ndata: {}\n\n",
                     {{"message_start", "{\"a\":1}", "7"}, {"message", "plain", "7"}, {"ping", "{}", "7"}});
}

BOOST_AUTO_TEST_CASE(comments_and_unknown_fields_are_ignored) {
    check_all_splits(": keep-alive\n:\nfoo: bar\ndata: x\n: inside\n\n", {{"message", "x", ""}});
}

// llama.cpp server's older streams wrote errors as an `error:` line: read as an "error" event
// only when asked (error_field), else ignored like any unknown field.
BOOST_AUTO_TEST_CASE(error_lines_when_asked) {
    const std::string_view input = "data: {\"a\":1}\n\nerror: {\"code\":400,\"message\":\"too big\"}\n\ndata: [DONE]\n\n";
    for (std::size_t piece : {input.size(), std::size_t{1}, std::size_t{7}}) {
        BOOST_TEST_CONTEXT("pieces of " << piece) {
            sse_parser p(libretto::http::sse_parser_options{.error_field = true});
            events out;
            for (std::size_t i = 0; i < input.size(); i += piece) {
                std::string owned(input.substr(i, piece));
                BOOST_REQUIRE(!p.feed(owned, [&](const sse_event& e) {
                    out.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
                }));
            }
            BOOST_TEST(out == events({{"message", "{\"a\":1}", ""}, {"error", "{\"code\":400,\"message\":\"too big\"}", ""}, {"message", "[DONE]", ""}}),
                       boost::test_tools::per_element());
        }
    }
    // Off (the default): the line is an unknown field.
    check_all_splits(input, {{"message", "{\"a\":1}", ""}, {"message", "[DONE]", ""}});
    // An event: name given before the error line is replaced by "error".
    sse_parser p(libretto::http::sse_parser_options{.error_field = true});
    events out;
    BOOST_REQUIRE(!p.feed("event: x\nerror: boom\n\n", [&](const sse_event& e) {
        out.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
    }));
    BOOST_TEST(out == events({{"error", "boom", ""}}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(only_one_leading_space_is_stripped) {
    check_all_splits("data:  two spaces\ndata:none\n\n", {{"message", " two spaces\nnone", ""}});
}

BOOST_AUTO_TEST_CASE(field_without_colon_has_empty_value) {
    // "data" alone adds an empty line; "event" alone sets an empty name (so "message").
    check_all_splits("data\ndata\n\nevent\ndata: z\n\n", {{"message", "\n", ""}, {"message", "z", ""}});
}

BOOST_AUTO_TEST_CASE(empty_data_dispatches_empty_string) {
    check_all_splits("data:\n\n", {{"message", "", ""}});
}

BOOST_AUTO_TEST_CASE(event_without_data_is_not_dispatched_and_name_is_forgotten) {
    check_all_splits("event: lonely\n\ndata: later\n\n", {{"message", "later", ""}});
}

BOOST_AUTO_TEST_CASE(leading_bom_is_skipped_once) {
    check_all_splits("\xEF\xBB\xBF" "data: a\n\n", {{"message", "a", ""}});
    // A second BOM is not stripped: it is part of the field name, so the line is ignored.
    check_all_splits("\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\ndata: b\n\n", {{"message", "b", ""}});
    // A broken BOM prefix is kept as bytes of the first line (here, an unknown field).
    check_all_splits("\xEF\xBB" "data: a\n\ndata: b\n\n", {{"message", "b", ""}});
}

BOOST_AUTO_TEST_CASE(openai_done_sentinel) {
    bool done = false;
    sse_parser p;
    auto ec = p.feed("data: {\"x\":1}\n\ndata: [DONE]\n\n", [&](const sse_event& e) { done = e.is_done(); });
    BOOST_TEST(!ec);
    BOOST_TEST(done);
}

BOOST_AUTO_TEST_CASE(id_with_nul_is_ignored_and_id_persists) {
    using namespace std::string_literals;
    check_all_splits("id: 1\ndata: a\n\nid: x\0y\ndata: b\n\nid\ndata: c\n\n"s,
                     {{"message", "a", "1"}, {"message", "b", "1"}, {"message", "c", ""}});
}

BOOST_AUTO_TEST_CASE(retry_field) {
    sse_parser p;
    auto ignore = [](const sse_event&) {};
    BOOST_TEST(!p.retry_ms().has_value());
    BOOST_TEST(!p.feed("retry: 1500\n", ignore));
    BOOST_TEST(p.retry_ms().value() == 1500u);
    BOOST_TEST(!p.feed("retry: 12x\nretry:\nretry: -1\n", ignore)); // invalid values are ignored
    BOOST_TEST(p.retry_ms().value() == 1500u);
    BOOST_TEST(!p.feed("id: abc\n", ignore));
    BOOST_TEST(p.last_event_id() == "abc");
}

BOOST_AUTO_TEST_CASE(cut_stream_is_not_idle_and_pending_event_is_discarded) {
    bool idle = true;
    // Ends without the blank line: the event is never dispatched, and the parser says so.
    auto r = parse_parts({"data: a\n\ndata: b\n"}, &idle);
    BOOST_TEST(r == events({{"message", "a", ""}}), boost::test_tools::per_element());
    BOOST_TEST(!idle);
    parse_parts({"data: a\n\ndata: partial li"}, &idle);
    BOOST_TEST(!idle);
    parse_parts({"event: x\n"}, &idle);
    BOOST_TEST(!idle);
    parse_parts({""}, &idle);
    BOOST_TEST(idle);
}

BOOST_AUTO_TEST_CASE(anthropic_shaped_stream) {
    const std::string_view s =
        "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n"
        "event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n"
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\r\n\r\n"
        "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";
    check_all_splits(s, {{"message_start", "{\"type\":\"message_start\"}", ""},
                         {"ping", "{\"type\": \"ping\"}", ""},
                         {"content_block_delta",
                          "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}",
                          ""},
                         {"message_stop", "{\"type\":\"message_stop\"}", ""}});
}

BOOST_AUTO_TEST_CASE(data_views_into_the_chunk_when_possible) {
    const std::string chunk = "data: in place\n\n";
    sse_parser p;
    const char* seen = nullptr;
    auto ec = p.feed(chunk, [&](const sse_event& e) { seen = e.data.data(); });
    BOOST_TEST(!ec);
    BOOST_TEST(seen == chunk.data() + 6); // no copy
}

BOOST_AUTO_TEST_CASE(oversize_event_is_an_error_and_sticks) {
    sse_parser p(lb::http::sse_parser_options{.max_event_size = 16});
    auto ignore = [](const sse_event&) {};
    BOOST_TEST(!p.feed("data: 0123456789\n\n", ignore)); // 10 bytes of data: fine
    // A line that never ends, fed in pieces.
    BOOST_TEST(!p.feed("data: 0123", ignore));
    auto ec = p.feed("456789abcdef", ignore);
    BOOST_TEST(ec == lb::errc::oversize);
    BOOST_TEST(p.failed());
    BOOST_TEST(p.feed("\n\n", ignore) == lb::errc::oversize);
    p.reset();
    BOOST_TEST(!p.failed());
    BOOST_TEST(!p.feed("data: ok\n\n", ignore));
    // Many short data lines that add up past the limit.
    sse_parser q(lb::http::sse_parser_options{.max_event_size = 16});
    BOOST_TEST(!q.feed("data: 12345\ndata: 12345\n", ignore));
    BOOST_TEST(q.feed("data: 12345\n", ignore) == lb::errc::oversize);
}

BOOST_AUTO_TEST_CASE(callback_sees_each_event_once_in_order_over_many_chunks) {
    std::string s;
    for (int i = 0; i < 200; ++i) s += "data: " + std::to_string(i) + "\n\n";
    events expected;
    for (int i = 0; i < 200; ++i) expected.push_back({"message", std::to_string(i), ""});
    for (std::size_t step : {1u, 3u, 7u, 64u}) {
        std::vector<std::string_view> parts;
        for (std::size_t i = 0; i < s.size(); i += step) parts.push_back(std::string_view(s).substr(i, step));
        BOOST_TEST(parse_parts(parts) == expected, boost::test_tools::per_element());
    }
}

// Every line-end style, alone and mixed, gives the same events in every split. The mixed
// streams hold CR-ended lines before a later LF: the parser keeps the LF's position across
// those lines, and must not take it for their end.
BOOST_AUTO_TEST_CASE(every_line_end_style_in_every_split) {
    const events expected{{"e", "a\nb", "1"}, {"message", "c", "1"}};
    for (std::string_view eol : {"\n", "\r", "\r\n"}) {
        std::string s;
        for (std::string_view line : {"event: e", "data: a", "data: b", "id: 1", "", ": ping", "data: c", ""})
            s.append(line).append(eol);
        BOOST_TEST_CONTEXT("line end " << (eol == "\n" ? "LF" : eol == "\r" ? "CR" : "CRLF")) {
            check_all_splits(s, expected);
        }
    }
    check_all_splits("event: e\rdata: a\r\ndata: b\rid: 1\n\r: ping\r\ndata: c\r\r", expected);
    check_all_splits("event: e\rdata: a\rdata: b\rid: 1\r\r: ping\rdata: c\r\n\n", expected);
    check_all_splits("event: e\ndata: a\rdata: b\r\nid: 1\r\n\n: ping\rdata: c\n\r", expected);
}

// A CR-only stream once cost a search of the rest of the chunk per line (quadratic: 1 MiB
// took most of a second). The result is checked here; the speed is not timed.
BOOST_AUTO_TEST_CASE(four_mebibytes_of_cr_only_events_in_one_chunk) {
    std::string s;
    std::size_t n = 0;
    while (s.size() < 4u << 20) {
        s += "data: " + std::to_string(n++) + "\r\r";
    }
    s += "data: last\r\n\n"; // one LF at the very end, after every CR-ended line
    sse_parser p;
    std::size_t seen = 0;
    bool in_order = true;
    auto ec = p.feed(s, [&](const sse_event& e) {
        const std::string want = seen < n ? std::to_string(seen) : "last";
        if (e.data != want) in_order = false;
        ++seen;
    });
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(seen == n + 1);
    BOOST_TEST(in_order);
    BOOST_TEST(p.idle());
}

// WHATWG: a value of ASCII digits sets the reconnection time. 19 digits or more were once
// ignored, so "retry: 00000000000000000001000" kept an older value; now they saturate.
BOOST_AUTO_TEST_CASE(long_retry_values_saturate_instead_of_being_ignored) {
    auto ignore = [](const sse_event&) {};
    const auto most = static_cast<std::uint64_t>(std::chrono::milliseconds::max().count());
    sse_parser p;
    BOOST_TEST(!p.feed("retry: 999999999999999999\n", ignore)); // 18 digits
    BOOST_TEST(p.retry_ms().value() == 999999999999999999u);
    BOOST_TEST(!p.feed("retry: 00000000000000000001000\n", ignore)); // leading zeros
    BOOST_TEST(p.retry_ms().value() == 1000u);
    BOOST_TEST(!p.feed("retry: 9223372036854775807\n", ignore)); // milliseconds::max(), 19 digits
    BOOST_TEST(p.retry_ms().value() == most);
    BOOST_TEST(!p.feed("retry: 1\n", ignore));
    BOOST_TEST(!p.feed("retry: 9223372036854775808\n", ignore)); // one past it
    BOOST_TEST(p.retry_ms().value() == most);
    BOOST_TEST(!p.feed("retry: 1\n", ignore));
    BOOST_TEST(!p.feed("retry: 18446744073709551616\n", ignore)); // past uint64_t
    BOOST_TEST(p.retry_ms().value() == most);
    BOOST_TEST(!p.feed("retry: 1\nretry: " + std::string(100, '9') + "\n", ignore));
    BOOST_TEST(p.retry_ms().value() == most);
    BOOST_TEST(!p.feed("retry: 12345678901234567890x\n", ignore)); // not digits only: ignored
    BOOST_TEST(p.retry_ms().value() == most);
}

// max_event_size = 0 admits no event with data (not "no limit"): the first one is oversize.
BOOST_AUTO_TEST_CASE(max_event_size_zero_refuses_every_event_with_data) {
    auto count = [](std::size_t& n) { return [&n](const sse_event&) { ++n; }; };
    std::size_t n = 0;
    sse_parser p(lb::http::sse_parser_options{.max_event_size = 0});
    BOOST_TEST(!p.feed(": ping\nevent: x\n\n", count(n))); // no data, nothing to hold
    BOOST_TEST(p.feed("data:\n\n", count(n)) == lb::errc::oversize);
    BOOST_TEST(p.failed());
    BOOST_TEST(n == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
