// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/detail/event_check.hpp>
#include <libretto/event/json.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>
#include <boost/system/system_error.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace json = boost::json;
using namespace libretto;

namespace {

json::value val(std::string_view text) { return json::parse(text); }
json::object obj(std::string_view text) { return json::parse(text).as_object(); }

// ---- fixtures --------------------------------------------------------------------------
// Timestamps are binary fractions so that they are exact in any decimal rendering.

event maximal_event() {
    event e;
    e.id = "0b7e7d4c-5d1f-4c9e-9a43-1e2f3a4b5c6d";
    e.sequence = 42;
    e.timestamp = 1717171717.25;
    e.invocation_id = "inv-1";
    e.session_id = "sess-1";
    e.author = "researcher";
    e.branch = "root.research";
    e.type = event_type::agent_message;
    e.content.role = "model";

    text_part t;
    t.text = "Hello \"world\"\n\\ \xc3\xa9";
    t.metadata = obj(R"({"lang":"en"})");
    e.content.parts.emplace_back(t);

    thinking_part k;
    k.thinking = "let me think";
    k.metadata = obj(R"({"budget":1024})");
    e.content.parts.emplace_back(k);

    data_part d;
    d.data = obj(R"({"score":0.5,"tags":["a","b"],"nested":{"k":null,"n":-7}})");
    d.metadata = obj(R"({"schema":"result"})");
    e.content.parts.emplace_back(d);

    file_part f;
    f.uri = "gs://bucket/report.pdf";
    f.inline_bytes = "aGVsbG8=";
    f.mime_type = "application/pdf";
    f.name = "report.pdf";
    f.metadata = obj(R"({"size":5})");
    e.content.parts.emplace_back(f);

    e.content.parts.emplace_back(file_part{}); // every optional unset

    tool_call_part c;
    c.tool_call_id = "call-1";
    c.tool_name = "search";
    c.args = obj(R"({"q":"libretto","limit":3})");
    c.metadata = obj(R"({"interactive":true})");
    e.content.parts.emplace_back(c);

    tool_response_part ok;
    ok.tool_call_id = "call-1";
    ok.tool_name = "search";
    ok.result = val(R"({"hits":[1,2,3],"more":false})");
    ok.metadata = obj(R"({"ms":12})");
    e.content.parts.emplace_back(ok);

    tool_response_part failed;
    failed.tool_call_id = "call-2";
    failed.tool_name = "fetch";
    failed.error = "timeout";
    e.content.parts.emplace_back(failed);

    tool_response_part scalar;
    scalar.tool_call_id = "call-3";
    scalar.tool_name = "count";
    scalar.result = 17;
    scalar.error = "";
    e.content.parts.emplace_back(scalar);

    e.actions.state_delta = obj(R"({"k":"v","app:x":1,"user:y":[true],"temp:t":null})");
    e.actions.artifact_delta = obj(R"({"report.md":3,"data.csv":0})");
    e.actions.transfer_to_agent = "writer";
    e.actions.escalate = false;
    e.actions.skip_summarization = true;
    e.actions.end_of_agent = false;
    event_compaction cmp;
    cmp.first_sequence = 1;
    cmp.last_sequence = 40;
    cmp.start_timestamp = 1717170000.5;
    cmp.end_timestamp = 1717171000.75;
    cmp.summary = "forty events";
    cmp.event_count = 40;
    e.actions.compaction = cmp;
    e.actions.rewind_before_invocation_id = "inv-0";

    e.metadata = obj(R"({"react_step":false,"trace":{"span":"abc"}})");
    e.partial = true;
    libretto::usage u;
    u.input_tokens = 1234;
    u.output_tokens = 567;
    u.model_version = "m-1";
    e.usage = u;
    e.signature = "c2lnbmF0dXJl";
    e.signer_did = "did:key:z6MkExample";
    e.prev_signature = "cHJldg";
    return e;
}

constexpr std::string_view maximal_json = R"({
  "id": "0b7e7d4c-5d1f-4c9e-9a43-1e2f3a4b5c6d",
  "sequence": 42,
  "timestamp": 1717171717.25,
  "invocation_id": "inv-1",
  "session_id": "sess-1",
  "author": "researcher",
  "branch": "root.research",
  "type": "agent_message",
  "content": {
    "role": "model",
    "parts": [
      {"type": "text", "text": "Hello \"world\"\n\\ \u00e9", "metadata": {"lang": "en"}},
      {"type": "thinking", "thinking": "let me think", "metadata": {"budget": 1024}},
      {"type": "data", "data": {"score": 0.5, "tags": ["a", "b"], "nested": {"k": null, "n": -7}},
       "metadata": {"schema": "result"}},
      {"type": "file", "uri": "gs://bucket/report.pdf", "inline_bytes": "aGVsbG8=",
       "mime_type": "application/pdf", "name": "report.pdf", "metadata": {"size": 5}},
      {"type": "file"},
      {"type": "tool_call", "tool_call_id": "call-1", "tool_name": "search",
       "args": {"q": "libretto", "limit": 3}, "metadata": {"interactive": true}},
      {"type": "tool_response", "tool_call_id": "call-1", "tool_name": "search",
       "result": {"hits": [1, 2, 3], "more": false}, "metadata": {"ms": 12}},
      {"type": "tool_response", "tool_call_id": "call-2", "tool_name": "fetch", "error": "timeout"},
      {"type": "tool_response", "tool_call_id": "call-3", "tool_name": "count", "result": 17, "error": ""}
    ]
  },
  "actions": {
    "state_delta": {"k": "v", "app:x": 1, "user:y": [true], "temp:t": null},
    "artifact_delta": {"report.md": 3, "data.csv": 0},
    "transfer_to_agent": "writer",
    "escalate": false,
    "skip_summarization": true,
    "end_of_agent": false,
    "compaction": {"first_sequence": 1, "last_sequence": 40, "start_timestamp": 1717170000.5,
                   "end_timestamp": 1717171000.75, "summary": "forty events", "event_count": 40},
    "rewind_before_invocation_id": "inv-0"
  },
  "metadata": {"react_step": false, "trace": {"span": "abc"}},
  "partial": true,
  "usage": {"input_tokens": 1234, "output_tokens": 567, "model_version": "m-1"},
  "signature": "c2lnbmF0dXJl",
  "signer_did": "did:key:z6MkExample",
  "prev_signature": "cHJldg"
})";

event minimal_event() {
    event e;
    e.id = "e1";
    return e;
}

/// Round trip through text with the library's own functions.
event through_text(const event& e) {
    auto r = parse_event(json::serialize(encode(e)));
    BOOST_TEST_REQUIRE(r.has_value(), "parse_event failed: " << r.error().message());
    return *r;
}

/// Asserts that decoding `text` as an event fails with `code` at `path`.
void expect_event_error(std::string_view text, errc code, std::string_view path) {
    BOOST_TEST_CONTEXT("input " << text) {
        auto r = parse_event(text);
        BOOST_TEST_REQUIRE(r.has_error());
        BOOST_TEST(r.error().code.value() == static_cast<int>(code),
                   "code " << r.error().code.message() << " != " << make_error_code(code).message());
        BOOST_TEST((r.error().code == code));
        BOOST_TEST(r.error().path == path);
        // decode<event> on the parsed value agrees with parse_event.
        auto d = decode<event>(json::parse(text));
        BOOST_TEST_REQUIRE(d.has_error());
        BOOST_TEST((d.error().code == code));
        BOOST_TEST(d.error().path == path);
    }
}

template <class T>
void expect_decode_error(std::string_view text, errc code, std::string_view path) {
    BOOST_TEST_CONTEXT("input " << text) {
        auto r = decode<T>(json::parse(text));
        BOOST_TEST_REQUIRE(r.has_error());
        BOOST_TEST((r.error().code == code), "got " << r.error().message());
        BOOST_TEST(r.error().path == path);
    }
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_json_round_trip)

BOOST_AUTO_TEST_CASE(maximal_event_round_trips_through_text) {
    const event e = maximal_event();
    BOOST_TEST((through_text(e) == e));
    auto viaser = parse_event(serialize_event(e));
    BOOST_TEST_REQUIRE(viaser.has_value());
    BOOST_TEST((*viaser == e));
}

BOOST_AUTO_TEST_CASE(maximal_event_round_trips_through_value) {
    const event e = maximal_event();
    auto r = decode<event>(encode(e));
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST((*r == e));
}

BOOST_AUTO_TEST_CASE(minimal_event_round_trips) {
    const event e = minimal_event();
    BOOST_TEST((through_text(e) == e));
    auto r = decode<event>(encode(e));
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST((*r == e));
    // Even a default event (empty id) is encodable and decodable.
    BOOST_TEST((through_text(event{}) == event{}));
}

BOOST_AUTO_TEST_CASE(every_event_type_round_trips) {
    for (auto t : {event_type::user_message, event_type::agent_message, event_type::tool_response,
                   event_type::agent_start, event_type::agent_end}) {
        auto e = minimal_event();
        e.type = t;
        BOOST_TEST((through_text(e).type == t));
    }
}

BOOST_AUTO_TEST_CASE(optional_flags_set_to_false_are_distinct_from_unset) {
    auto e = minimal_event();
    e.actions.escalate = false;
    auto back = through_text(e);
    BOOST_TEST_REQUIRE(back.actions.escalate.has_value());
    BOOST_TEST(*back.actions.escalate == false);
    BOOST_TEST(!back.actions.skip_summarization.has_value());
    BOOST_TEST(!back.actions.end_of_agent.has_value());

    auto unset = through_text(minimal_event());
    BOOST_TEST(!unset.actions.escalate.has_value());

    // Empty-but-set strings survive as set.
    auto s = minimal_event();
    s.signature = "";
    s.prev_signature = "";
    s.actions.transfer_to_agent = "";
    s.content.role = "";
    auto sb = through_text(s);
    BOOST_TEST((sb.signature == std::optional<std::string>("")));
    BOOST_TEST((sb.prev_signature == std::optional<std::string>("")));
    BOOST_TEST((sb.actions.transfer_to_agent == std::optional<std::string>("")));
    BOOST_TEST((sb.content.role == std::optional<std::string>("")));
    BOOST_TEST((sb == s));
}

BOOST_AUTO_TEST_CASE(integer_extremes_round_trip) {
    auto e = minimal_event();
    e.sequence = std::numeric_limits<std::int64_t>::max();
    libretto::usage u;
    u.input_tokens = std::numeric_limits<std::int64_t>::max();
    u.output_tokens = std::numeric_limits<std::int64_t>::min();
    e.usage = u;
    e.actions.artifact_delta["big"] = std::numeric_limits<std::uint64_t>::max();
    BOOST_TEST((through_text(e) == e));
}

BOOST_AUTO_TEST_CASE(strings_with_special_characters_round_trip) {
    auto e = minimal_event();
    std::string nasty("quote\" backslash\\ slash/ tab\t nl\n cr\r bell\x07 nul", 46);
    nasty.push_back('\0');
    nasty += " utf8 \xe2\x82\xac \xf0\x9f\x8e\xb5";
    e.content = content::from_text(nasty);
    e.author = nasty;
    e.metadata[nasty] = nasty;
    auto back = through_text(e);
    BOOST_TEST((back == e));
    BOOST_TEST(back.text() == nasty);
}

BOOST_AUTO_TEST_CASE(large_event_round_trips) {
    // Larger than the 4 KiB stack buffers used while parsing and serialising.
    auto e = minimal_event();
    e.content = content::from_text(std::string(100000, 'x'));
    json::array many;
    for (int i = 0; i < 2000; ++i) many.emplace_back(i);
    e.metadata["many"] = many;
    const std::string text = serialize_event(e);
    BOOST_TEST(text.size() > 100000u);
    auto r = parse_event(text);
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST((*r == e));
}

BOOST_AUTO_TEST_CASE(decoded_values_do_not_depend_on_the_parse_buffer) {
    // parse_event parses into a stack buffer; every decoded JSON member must own its memory.
    event kept;
    {
        const std::string text = serialize_event(maximal_event());
        auto r = parse_event(text);
        BOOST_TEST_REQUIRE(r.has_value());
        kept = std::move(*r);
    }
    // Overwrite the stack region used above, then read everything (ASan would flag a dangle).
    {
        volatile char scrub[8192];
        for (auto& c : scrub) c = 0x5a;
    }
    BOOST_TEST((kept == maximal_event()));
    BOOST_TEST(json::serialize(kept.metadata) == json::serialize(maximal_event().metadata));
}

BOOST_AUTO_TEST_CASE(serialize_event_is_compact_json_of_encode) {
    const event e = maximal_event();
    const std::string text = serialize_event(e);
    BOOST_TEST((json::parse(text) == encode(e)));
    BOOST_TEST(text.find('\n') == std::string::npos);
    BOOST_TEST(text.find(": ") == std::string::npos);
    BOOST_TEST(text.front() == '{');
    BOOST_TEST(text.back() == '}');
}

// serialize_event writes text directly (no json::value); it must stay byte for byte what
// json::serialize(encode(e)) writes, which is what stores have on disk.
namespace {

std::string random_text(std::mt19937& rng) {
    static const std::string pieces[] = {"a", "Z", " ", "\"", "\\", "/", "\b", "\f", "\n", "\r", "\t",
                                         std::string(1, '\0'), "\x01", "\x1f", "\x7f", "\xe2\x82\xac",
                                         "\xf0\x9f\x8e\xb5", "\xff", "\xc3", "{}", "[1]", "\\u0041", "abcdefghijklmnopq"};
    std::uniform_int_distribution<int> len(0, 24), pick(0, static_cast<int>(std::size(pieces)) - 1);
    std::string s;
    for (int i = len(rng); i > 0; --i) s += pieces[pick(rng)];
    return s;
}

json::value random_value(std::mt19937& rng, int depth) {
    std::uniform_int_distribution<int> kind(0, depth > 3 ? 5 : 7);
    static const double doubles[] = {0.0, -0.0, 1.0, -1.5, 0.1, 1e300, -1e-300, 5e-324, 1717171717.123456,
                                     1.7976931348623157e308, std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                                     123456789012345678.0, 2.5e-7};
    std::uniform_int_distribution<int> dpick(0, static_cast<int>(std::size(doubles)) - 1);
    switch (kind(rng)) {
    case 0: return nullptr;
    case 1: return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 2: return std::uniform_int_distribution<std::int64_t>(std::numeric_limits<std::int64_t>::min(),
                                                               std::numeric_limits<std::int64_t>::max())(rng);
    case 3: return std::uniform_int_distribution<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max())(rng);
    case 4: return doubles[dpick(rng)];
    case 5: return json::string(random_text(rng));
    case 6: {
        json::array a;
        for (int i = std::uniform_int_distribution<int>(0, 4)(rng); i > 0; --i) a.push_back(random_value(rng, depth + 1));
        return a;
    }
    default: {
        json::object o;
        for (int i = std::uniform_int_distribution<int>(0, 4)(rng); i > 0; --i)
            o[random_text(rng)] = random_value(rng, depth + 1);
        return o;
    }
    }
}

json::object random_object(std::mt19937& rng) {
    json::object o;
    for (int i = std::uniform_int_distribution<int>(0, 3)(rng); i > 0; --i) o[random_text(rng)] = random_value(rng, 1);
    return o;
}

std::optional<std::string> random_opt(std::mt19937& rng) {
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) return std::nullopt;
    return random_text(rng);
}

event random_event(std::mt19937& rng) {
    auto coin = [&] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
    event e;
    e.id = random_text(rng);
    e.sequence = std::uniform_int_distribution<std::int64_t>(0, std::numeric_limits<std::int64_t>::max())(rng);
    e.timestamp = random_value(rng, 9).is_double() ? 1717171717.5 : std::uniform_real_distribution<double>(-1e10, 1e10)(rng);
    if (coin()) e.invocation_id = random_text(rng);
    if (coin()) e.session_id = random_text(rng);
    if (coin()) e.author = random_text(rng);
    if (coin()) e.branch = random_text(rng);
    e.type = static_cast<event_type>(std::uniform_int_distribution<int>(0, 4)(rng));
    if (coin()) e.content.role = random_text(rng);
    for (int i = std::uniform_int_distribution<int>(0, 4)(rng); i > 0; --i) {
        switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
        case 0: e.content.parts.emplace_back(text_part{random_text(rng), random_object(rng)}); break;
        case 1: e.content.parts.emplace_back(thinking_part{random_text(rng), random_object(rng)}); break;
        case 2: e.content.parts.emplace_back(data_part{random_object(rng), random_object(rng)}); break;
        case 3:
            e.content.parts.emplace_back(
                file_part{random_opt(rng), random_opt(rng), random_opt(rng), random_opt(rng), random_object(rng)});
            break;
        case 4: e.content.parts.emplace_back(tool_call_part{random_text(rng), random_text(rng), random_object(rng), random_object(rng)}); break;
        default:
            e.content.parts.emplace_back(tool_response_part{random_text(rng), random_text(rng), random_value(rng, 1),
                                                            random_opt(rng), random_object(rng)});
            break;
        }
    }
    if (coin()) e.actions.state_delta = random_object(rng);
    if (coin()) e.actions.artifact_delta["f"] = std::uniform_int_distribution<std::int64_t>(0, 100)(rng);
    e.actions.transfer_to_agent = random_opt(rng);
    if (coin()) e.actions.escalate = coin();
    if (coin()) e.actions.skip_summarization = coin();
    if (coin()) e.actions.end_of_agent = coin();
    if (coin())
        e.actions.compaction = event_compaction{std::uniform_int_distribution<std::int64_t>(0, 1000)(rng),
                                                std::uniform_int_distribution<std::int64_t>(1000, 2000)(rng),
                                                std::uniform_real_distribution<double>(0, 2e9)(rng),
                                                std::uniform_real_distribution<double>(0, 2e9)(rng), random_text(rng),
                                                std::uniform_int_distribution<std::int64_t>(-5, 5000)(rng)};
    e.actions.rewind_before_invocation_id = random_opt(rng);
    if (coin()) e.metadata = random_object(rng);
    e.partial = coin();
    if (coin())
        e.usage = usage{std::uniform_int_distribution<std::int64_t>(std::numeric_limits<std::int64_t>::min(), 1 << 30)(rng),
                        std::uniform_int_distribution<std::int64_t>(0, 1 << 30)(rng), coin() ? random_text(rng) : ""};
    e.signature = random_opt(rng);
    if (coin()) e.signer_did = random_text(rng);
    e.prev_signature = random_opt(rng);
    return e;
}

} // namespace

BOOST_AUTO_TEST_CASE(serialize_event_is_byte_identical_to_serializing_encode) {
    for (const event& e : {maximal_event(), minimal_event(), event{}})
        BOOST_TEST(serialize_event(e) == json::serialize(encode(e)));
    std::mt19937 rng(20260301);
    for (int i = 0; i < 3000; ++i) {
        const event e = random_event(rng);
        const std::string direct = serialize_event(e);
        const std::string via_value = json::serialize(encode(e));
        if (via_value.find("Infinity") != std::string::npos || via_value.find("NaN") != std::string::npos) {
            // Boost.JSON writes `Infinity` and `NaN`, which no reader takes back; this writes
            // null there, so the text stays JSON.
            json::parse_options any_bytes;
            any_bytes.allow_invalid_utf8 = true;
            json::error_code ec;
            (void)json::parse(direct, ec, {}, any_bytes);
            BOOST_TEST(!ec, "event " << i);
            continue;
        }
        BOOST_TEST_REQUIRE(direct == via_value, "event " << i);
    }
}

BOOST_AUTO_TEST_CASE(serialize_event_escapes_like_boost_json) {
    // Every byte value alone, in keys and in values.
    for (int c = 0; c < 256; ++c) {
        event e = minimal_event();
        const std::string s(1, static_cast<char>(c));
        e.author = s;
        e.metadata[s] = s;
        BOOST_TEST_REQUIRE(serialize_event(e) == json::serialize(encode(e)), "byte " << c);
    }
}

BOOST_AUTO_TEST_CASE(serialize_event_escapes_inside_long_strings_at_every_offset) {
    // The writer copies eight bytes at a time while none needs escaping: every byte value
    // at every position of a 24-byte string (each lane of three blocks), between plain
    // ASCII and between UTF-8 bytes (high bit set, never escaped).
    const std::string ascii(24, 'a');
    const std::string utf8 = "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";
    for (const std::string* base : {&ascii, &utf8}) {
        for (int c = 0; c < 256; ++c) {
            for (std::size_t at = 0; at < base->size(); ++at) {
                std::string s = *base;
                s[at] = static_cast<char>(c);
                event e = minimal_event();
                e.author = s;
                e.content = content::from_text(s + s); // two blocks' worth after the first escape
                BOOST_TEST_REQUIRE(serialize_event(e) == json::serialize(encode(e)), "byte " << c << " at " << at);
            }
        }
    }
    // Lengths around the block size, all plain, and all needing escapes.
    for (std::size_t len = 0; len <= 17; ++len) {
        event e = minimal_event();
        e.author = std::string(len, 'x');
        e.metadata["k"] = std::string(len, '"');
        e.metadata["c"] = std::string(len, '\n');
        BOOST_TEST_REQUIRE(serialize_event(e) == json::serialize(encode(e)), "length " << len);
    }
}

BOOST_AUTO_TEST_CASE(encode_uses_the_given_storage) {
    json::monotonic_resource mr;
    json::value v = encode(maximal_event(), &mr);
    BOOST_TEST(v.storage().get() == json::storage_ptr(&mr).get());
    BOOST_TEST(v.at("content").storage().get() == json::storage_ptr(&mr).get());
    BOOST_TEST(v.at("content").at("parts").storage().get() == json::storage_ptr(&mr).get());
    BOOST_TEST((v == encode(maximal_event())));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// Strings that are not UTF-8: the writer flags them (stores refuse such events), readers
// accept them (stored by earlier versions).
BOOST_AUTO_TEST_SUITE(event_json_utf8)

namespace {

// Well-formed sequences, including the edges of each length's range.
const std::string valid_sequences[] = {
    "\xC2\x80",         "\xC3\xA9",         "\xDF\xBF",         "\xE0\xA0\x80",     "\xE2\x82\xAC",
    "\xED\x9F\xBF",     "\xEE\x80\x80",     "\xEF\xBF\xBF",     "\xF0\x90\x80\x80", "\xF0\x9F\x8E\xB5",
    "\xF3\xBF\xBF\xBF", "\xF4\x8F\xBF\xBF"};

struct bad_form {
    std::string bytes; // the first byte is the one reported
    const char* what;
};

const bad_form bad_forms[] = {
    {"\x80", "lone continuation byte"},
    {"\xBF", "lone continuation byte"},
    {"\xC0\xAF", "overlong C0"},
    {"\xC1\xBF", "overlong C1"},
    {"\xE0\x80\xAF", "overlong E0 80"},
    {"\xE0\x9F\xBF", "overlong E0 9F"},
    {"\xF0\x80\x80\xAF", "overlong F0 80"},
    {"\xF0\x8F\xBF\xBF", "overlong F0 8F"},
    {"\xED\xA0\x80", "surrogate ED A0"},
    {"\xED\xBF\xBF", "surrogate ED BF"},
    {"\xF4\x90\x80\x80", "above U+10FFFF (F4 90)"},
    {"\xF5\x80\x80\x80", "above U+10FFFF (F5)"},
    {"\xF8\x88\x80\x80\x80", "five-byte form"},
    {"\xFE", "FE"},
    {"\xFF", "FF"},
    {"\xC3", "truncated 2-byte"},
    {"\xC3\xC3\xA9", "2-byte lead before a lead"},
    {"\xE2\x82", "truncated 3-byte"},
    {"\xE2", "truncated 3-byte, lead only"},
    {"\xF0\x9F\x8E", "truncated 4-byte"},
    {"\xF0\x9F", "truncated 4-byte, two bytes"},
};

std::string hex_byte(unsigned char b) {
    static constexpr char hex[] = "0123456789abcdef";
    return std::string("0x") + hex[b >> 4] + hex[b & 15];
}

/// Strings with `piece` at `at` inside 24 plain bytes, and at the very end of `at` bytes.
std::vector<std::string> placements(const std::string& piece, std::size_t at) {
    const std::string ascii(24, 'a');
    return {ascii.substr(0, at) + piece + ascii.substr(at), ascii.substr(0, at) + piece};
}

} // namespace

BOOST_AUTO_TEST_CASE(valid_sequences_pass_at_every_offset) {
    for (const auto& seq : valid_sequences) {
        for (std::size_t at = 0; at <= 17; ++at) {
            for (const std::string& s : placements(seq, at)) {
                BOOST_TEST_CONTEXT("sequence of " << seq.size() << " bytes at " << at << ", length " << s.size()) {
                    BOOST_TEST(!detail::find_invalid_utf8(s));
                    event e = minimal_event();
                    e.author = s;
                    e.content = content::from_text(s + s);
                    e.metadata[s] = s;
                    std::string text, why;
                    BOOST_TEST_REQUIRE(!serialize_event_checked(e, text, why), why);
                    BOOST_TEST(text == json::serialize(encode(e)));
                    json::error_code ec;
                    (void)json::parse(text, ec); // a strict reader takes it
                    BOOST_TEST(!ec);
                    auto back = parse_event(text);
                    BOOST_TEST_REQUIRE(back.has_value());
                    BOOST_TEST(back->author == s);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(each_invalid_form_is_flagged_at_its_offset) {
    for (const auto& bad : bad_forms) {
        for (std::size_t at = 0; at <= 17; ++at) {
            for (const std::string& s : placements(bad.bytes, at)) {
                BOOST_TEST_CONTEXT(bad.what << " at " << at << ", length " << s.size()) {
                    const auto f = detail::find_invalid_utf8(s);
                    BOOST_TEST_REQUIRE(f.has_value());
                    BOOST_TEST(f->offset == at);
                    BOOST_TEST(f->byte == static_cast<unsigned char>(bad.bytes[0]));
                    event e = minimal_event();
                    e.content = content::from_text(s);
                    std::string text = "left alone?", why;
                    const auto ec = serialize_event_checked(e, text, why);
                    BOOST_TEST((ec == errc::invalid_argument));
                    BOOST_TEST(text.empty());
                    BOOST_TEST(why == "string is not valid UTF-8 (byte " + hex_byte(f->byte) + " at offset " +
                                          std::to_string(at) + ") in member \"text\"");
                    // serialize_event still writes the bytes as they are, as Boost.JSON does.
                    BOOST_TEST(serialize_event(e) == json::serialize(encode(e)));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(the_first_fault_is_reported) {
    std::string out;
    {
        event e = minimal_event();
        e.content = content::from_text(std::string(20, 'x') + "\xff" + std::string(20, 'y') + "\xc0");
        const auto f = detail::append_event_json(out, e);
        BOOST_TEST_REQUIRE(f.has_value());
        BOOST_TEST(f->offset == 20u);
        BOOST_TEST(f->byte == 0xffu);
    }
    {
        // The first string written wins: the id comes before the content.
        event e = minimal_event();
        e.id = "ab\xed\xa0\x80";
        e.content = content::from_text("\xff");
        out.clear();
        const auto f = detail::append_event_json(out, e);
        BOOST_TEST_REQUIRE(f.has_value());
        BOOST_TEST(f->offset == 2u);
        BOOST_TEST(f->byte == 0xedu);
    }
}

BOOST_AUTO_TEST_CASE(every_string_of_an_event_is_checked) {
    const std::string bad = "ok \xff";
    const std::vector<std::function<void(event&)>> setters = {
        [&](event& e) { e.id = bad; },
        [&](event& e) { e.invocation_id = bad; },
        [&](event& e) { e.session_id = bad; },
        [&](event& e) { e.author = bad; },
        [&](event& e) { e.branch = bad; },
        [&](event& e) { e.content.role = bad; },
        [&](event& e) { e.content = content::from_text(bad); },
        [&](event& e) { e.content.parts.emplace_back(thinking_part{bad, {}}); },
        [&](event& e) { e.content.parts.emplace_back(data_part{json::object{{"k", bad}}, {}}); },
        [&](event& e) { e.content.parts.emplace_back(data_part{json::object{{bad, 1}}, {}}); },
        [&](event& e) { e.content.parts.emplace_back(file_part{std::nullopt, std::nullopt, std::nullopt, bad, {}}); },
        [&](event& e) { e.content.parts.emplace_back(tool_call_part{"c", "t", json::object{{"q", bad}}, {}}); },
        [&](event& e) { e.content.parts.emplace_back(tool_call_part{bad, "t", {}, {}}); },
        [&](event& e) {
            e.content.parts.emplace_back(tool_response_part{"c", "t", json::array{1, json::string(bad)}, std::nullopt, {}});
        },
        [&](event& e) { e.content.parts.emplace_back(tool_response_part{"c", "t", nullptr, bad, {}}); },
        [&](event& e) { e.content.parts.emplace_back(text_part{"t", json::object{{"m", bad}}}); },
        [&](event& e) { e.actions.state_delta[bad] = 1; },
        [&](event& e) { e.actions.transfer_to_agent = bad; },
        [&](event& e) { e.actions.compaction = event_compaction{1, 2, 0, 0, bad, 2}; },
        [&](event& e) { e.metadata["k"] = bad; },
        [&](event& e) { e.usage = usage{1, 2, bad}; },
        [&](event& e) { e.signature = bad; },
        [&](event& e) { e.signer_did = bad; },
        [&](event& e) { e.prev_signature = bad; },
    };
    for (std::size_t i = 0; i < setters.size(); ++i) {
        event e = minimal_event();
        setters[i](e);
        std::string text, why;
        BOOST_TEST((serialize_event_checked(e, text, why) == errc::invalid_argument), "setter " << i);
        BOOST_TEST(why.starts_with("string is not valid UTF-8 (byte 0xff at offset 3) in member \""), why << ", setter " << i);
        // memory_store's checker finds the same fault, named the same way.
        const auto f = detail::event_fault(e);
        BOOST_TEST_REQUIRE(f.has_value(), "setter " << i);
        BOOST_TEST(f->message() == why, "setter " << i);
    }
}

BOOST_AUTO_TEST_CASE(the_writer_agrees_with_a_strict_reader) {
    // Boost.JSON's strict parser is the oracle: the text is refused exactly when the
    // writer flags a string (random mixes of ASCII, escapes and good and bad UTF-8).
    std::mt19937 rng(20260422);
    static const std::string pieces[] = {"a", "bcdefgh", "\"", "\n", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x8E\xB5",
                                         "\xC3", "\xE2\x82", "\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF",
                                         "\xE0\x9F\xBF", "0123456789abcdef"};
    std::uniform_int_distribution<int> len(0, 12), pick(0, static_cast<int>(std::size(pieces)) - 1);
    std::size_t flagged = 0;
    for (int i = 0; i < 10000; ++i) {
        std::string s;
        for (int k = len(rng); k > 0; --k) s += pieces[pick(rng)];
        event e = minimal_event();
        e.content = content::from_text(s);
        std::string out;
        const auto f = detail::append_event_json(out, e);
        json::error_code ec;
        (void)json::parse(out, ec);
        BOOST_TEST_REQUIRE(f.has_value() == !!ec, "string " << i);
        const auto g = detail::find_invalid_utf8(s);
        BOOST_TEST_REQUIRE(f.has_value() == g.has_value(), "string " << i);
        if (f) {
            BOOST_TEST_REQUIRE(f->offset == g->offset, "string " << i);
            ++flagged;
        }
        // Whatever the writer wrote reads back, bytes and all.
        auto back = parse_event(out);
        BOOST_TEST_REQUIRE(back.has_value(), "string " << i);
        BOOST_TEST_REQUIRE((back->content == e.content), "string " << i);
    }
    BOOST_TEST(flagged > 500u);
    BOOST_TEST(flagged < 9500u);
}

BOOST_AUTO_TEST_CASE(ascii_output_is_unchanged) {
    // Every ASCII byte at every offset of strings of 1..25 bytes: byte for byte what
    // Boost.JSON writes, and never flagged.
    for (std::size_t len = 1; len <= 25; ++len) {
        for (int c = 0; c < 128; ++c) {
            for (std::size_t at = 0; at < len; ++at) {
                std::string s(len, 'q');
                s[at] = static_cast<char>(c);
                event e = minimal_event();
                e.author = s;
                e.metadata[s] = s;
                std::string text, why;
                BOOST_TEST_REQUIRE(!serialize_event_checked(e, text, why), why);
                BOOST_TEST_REQUIRE(text == json::serialize(encode(e)), "byte " << c << " at " << at << " of " << len);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(readers_accept_strings_that_are_not_utf8) {
    // What an earlier version wrote: raw bytes inside strings, in values and keys.
    const std::string text = "{\"id\":\"e\xff\",\"type\":\"agent_message\",\"content\":{\"parts\":[{\"type\":\"text\","
                             "\"text\":\"a\xc3\\n\xed\xa0\x80\"}]},\"metadata\":{\"k\xfe\":\"\xc0\xaf\"}}";
    json::error_code ec;
    (void)json::parse(text, ec);
    BOOST_TEST(!!ec); // a strict reader refuses it
    auto r = parse_event(text);
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(r->id == "e\xff");
    BOOST_TEST((r->content == content::from_text("a\xc3\n\xed\xa0\x80")));
    BOOST_TEST((r->metadata == json::object{{"k\xfe", "\xc0\xaf"}}));
    BOOST_TEST((parse_event(serialize_event(*r)).value() == *r));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_json_wire_shape)

BOOST_AUTO_TEST_CASE(maximal_event_wire_shape) {
    BOOST_TEST((encode(maximal_event()) == json::parse(maximal_json)));
}

BOOST_AUTO_TEST_CASE(maximal_event_decodes_from_hand_written_json) {
    auto r = parse_event(maximal_json);
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST((*r == maximal_event()));
}

BOOST_AUTO_TEST_CASE(minimal_event_omits_defaults) {
    BOOST_TEST((encode(minimal_event()) ==
                val(R"({"id":"e1","sequence":0,"timestamp":0.0,"type":"agent_message","content":{"parts":[]}})")));
}

BOOST_AUTO_TEST_CASE(user_message_wire_shape) {
    event e;
    e.id = "u1";
    e.sequence = 1;
    e.timestamp = 1700000000.5;
    e.invocation_id = "inv";
    e.session_id = "s";
    e.author = "user";
    e.type = event_type::user_message;
    e.content = content::from_text("hi");
    e.content.role = "user";
    BOOST_TEST((encode(e) == val(R"({
        "id": "u1", "sequence": 1, "timestamp": 1700000000.5, "invocation_id": "inv", "session_id": "s",
        "author": "user", "type": "user_message",
        "content": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}
    })")));
}

BOOST_AUTO_TEST_CASE(tool_call_and_response_wire_shape) {
    event call;
    call.id = "c";
    call.branch = "a.b";
    tool_call_part tc;
    tc.tool_call_id = "t1";
    tc.tool_name = "add";
    call.content.parts.emplace_back(tc); // empty args are still written
    BOOST_TEST((encode(call) == val(R"({
        "id": "c", "sequence": 0, "timestamp": 0.0, "branch": "a.b", "type": "agent_message",
        "content": {"parts": [{"type": "tool_call", "tool_call_id": "t1", "tool_name": "add", "args": {}}]}
    })")));

    event resp;
    resp.id = "r";
    resp.type = event_type::tool_response;
    tool_response_part ok;
    ok.tool_call_id = "t1";
    ok.tool_name = "add";
    ok.result = "3";
    resp.content.parts.emplace_back(ok);
    tool_response_part nothing; // null result and no error: neither key
    nothing.tool_call_id = "t2";
    nothing.tool_name = "noop";
    resp.content.parts.emplace_back(nothing);
    BOOST_TEST((encode(resp) == val(R"({
        "id": "r", "sequence": 0, "timestamp": 0.0, "type": "tool_response",
        "content": {"parts": [
            {"type": "tool_response", "tool_call_id": "t1", "tool_name": "add", "result": "3"},
            {"type": "tool_response", "tool_call_id": "t2", "tool_name": "noop"}
        ]}
    })")));
}

BOOST_AUTO_TEST_CASE(actions_usage_and_flags_wire_shape) {
    event e;
    e.id = "x";
    e.actions.escalate = true;
    e.actions.state_delta["k"] = nullptr;
    e.partial = true;
    libretto::usage u;
    u.input_tokens = 3;
    e.usage = u; // empty model_version omitted, zero output_tokens kept
    e.signer_did = "did:key:z";
    BOOST_TEST((encode(e) == val(R"({
        "id": "x", "sequence": 0, "timestamp": 0.0, "type": "agent_message", "content": {"parts": []},
        "actions": {"state_delta": {"k": null}, "escalate": true},
        "partial": true,
        "usage": {"input_tokens": 3, "output_tokens": 0},
        "signer_did": "did:key:z"
    })")));
}

BOOST_AUTO_TEST_CASE(compaction_writes_every_field) {
    event e;
    e.id = "x";
    e.actions.compaction = event_compaction{}; // all zero, empty summary: still all written
    BOOST_TEST((encode(e).at("actions") == val(R"({"compaction": {"first_sequence": 0, "last_sequence": 0,
        "start_timestamp": 0.0, "end_timestamp": 0.0, "summary": "", "event_count": 0}})")));
}

BOOST_AUTO_TEST_CASE(absent_members_decode_to_defaults) {
    auto r = parse_event(R"({"id":"only","type":"agent_end"})");
    BOOST_TEST_REQUIRE(r.has_value());
    event expected;
    expected.id = "only";
    expected.type = event_type::agent_end;
    BOOST_TEST((*r == expected));
}

BOOST_AUTO_TEST_CASE(null_optionals_decode_as_unset) {
    auto r = parse_event(R"({"id":"n","type":"agent_message","signature":null,"prev_signature":null,
        "usage":null,"content":{"role":null,"parts":[{"type":"file","uri":null,"name":"f"}]},
        "actions":{"escalate":null,"transfer_to_agent":null,"compaction":null}})");
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(!r->signature.has_value());
    BOOST_TEST(!r->prev_signature.has_value());
    BOOST_TEST(!r->usage.has_value());
    BOOST_TEST(!r->content.role.has_value());
    BOOST_TEST(r->actions.empty());
    BOOST_TEST_REQUIRE(r->content.parts.size() == 1u);
    const auto& f = std::get<file_part>(r->content.parts[0]);
    BOOST_TEST(!f.uri.has_value());
    BOOST_TEST((f.name == std::optional<std::string>("f")));
}

BOOST_AUTO_TEST_CASE(numbers_are_read_leniently_where_lossless) {
    // An integer timestamp is a number; a uint64 that fits is an int64.
    auto r = parse_event(R"({"id":"n","type":"agent_message","timestamp":1700000000,
        "sequence":9223372036854775807})");
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(r->timestamp == 1700000000.0);
    BOOST_TEST(r->sequence == std::numeric_limits<std::int64_t>::max());
}

BOOST_AUTO_TEST_CASE(unknown_fields_are_ignored_at_every_level) {
    auto r = parse_event(R"({"id":"x","type":"agent_message","future":{"a":1},"turn_complete":true,
        "content":{"parts":[{"type":"text","text":"t","extra":[1]},
                            {"type":"tool_call","tool_call_id":"1","tool_name":"f","x":null}],"more":1},
        "actions":{"escalate":true,"requested_auth_configs":{},
                   "compaction":{"first_sequence":1,"last_sequence":2,"summary":"s","extra":0}},
        "usage":{"input_tokens":1,"cached_tokens":7}})");
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(r->text() == "t");
    BOOST_TEST(r->has_tool_calls());
    BOOST_TEST((r->actions.escalate == std::optional<bool>(true)));
    BOOST_TEST_REQUIRE(r->actions.compaction.has_value());
    BOOST_TEST(r->actions.compaction->summary == "s");
    BOOST_TEST_REQUIRE(r->usage.has_value());
    BOOST_TEST(r->usage->input_tokens == 1);
    // The unknown members are dropped, not kept anywhere.
    BOOST_TEST(r->metadata.empty());
    BOOST_TEST(!encode(*r).as_object().contains("future"));
}

BOOST_AUTO_TEST_CASE(value_from_equals_encode) {
    const event e = maximal_event();
    BOOST_TEST((json::value_from(e) == encode(e)));
    BOOST_TEST((json::value_from(e.content) == encode(e.content)));
    BOOST_TEST((json::value_from(e.actions) == encode(e.actions)));
    BOOST_TEST((json::value_from(*e.actions.compaction) == encode(*e.actions.compaction)));
    BOOST_TEST((json::value_from(*e.usage) == encode(*e.usage)));
}

BOOST_AUTO_TEST_CASE(value_to_decodes) {
    const json::value v = json::parse(maximal_json);
    BOOST_TEST((json::value_to<event>(v) == maximal_event()));
    BOOST_TEST((json::value_to<libretto::content>(v.at("content")) == maximal_event().content));
    BOOST_TEST((json::value_to<event_actions>(v.at("actions")) == maximal_event().actions));
    BOOST_TEST((json::value_to<event_compaction>(v.at("actions").at("compaction")) ==
                *maximal_event().actions.compaction));
    BOOST_TEST((json::value_to<libretto::usage>(v.at("usage")) == *maximal_event().usage));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_json_parts_and_members)

BOOST_AUTO_TEST_CASE(encode_each_part_kind) {
    text_part t;
    t.text = "a";
    BOOST_TEST((encode(part(t)) == val(R"({"type":"text","text":"a"})")));
    thinking_part k;
    k.thinking = "b";
    k.metadata["m"] = 1;
    BOOST_TEST((encode(part(k)) == val(R"({"type":"thinking","thinking":"b","metadata":{"m":1}})")));
    BOOST_TEST((encode(part(data_part{})) == val(R"({"type":"data","data":{}})")));
    file_part f;
    f.mime_type = "image/png";
    BOOST_TEST((encode(part(f)) == val(R"({"type":"file","mime_type":"image/png"})")));
    tool_response_part r;
    r.result = json::array{1, "two"};
    BOOST_TEST((encode(part(r)) ==
                val(R"({"type":"tool_response","tool_call_id":"","tool_name":"","result":[1,"two"]})")));
}

BOOST_AUTO_TEST_CASE(decode_part_each_kind) {
    auto t = decode<part>(val(R"({"type":"text","text":"a","metadata":{"x":true}})"));
    BOOST_TEST_REQUIRE(t.has_value());
    BOOST_TEST_REQUIRE(std::holds_alternative<text_part>(*t));
    BOOST_TEST(std::get<text_part>(*t).text == "a");
    BOOST_TEST((std::get<text_part>(*t).metadata == obj(R"({"x":true})")));

    auto k = decode<part>(val(R"({"type":"thinking","thinking":"hmm"})"));
    BOOST_TEST_REQUIRE(k.has_value());
    BOOST_TEST(std::get<thinking_part>(*k).thinking == "hmm");

    auto d = decode<part>(val(R"({"type":"data","data":{"a":[1]}})"));
    BOOST_TEST_REQUIRE(d.has_value());
    BOOST_TEST((std::get<data_part>(*d).data == obj(R"({"a":[1]})")));

    auto f = decode<part>(val(R"({"type":"file","inline_bytes":"AA==","name":"n"})"));
    BOOST_TEST_REQUIRE(f.has_value());
    const auto& fp = std::get<file_part>(*f);
    BOOST_TEST(!fp.uri.has_value());
    BOOST_TEST((fp.inline_bytes == std::optional<std::string>("AA==")));
    BOOST_TEST(!fp.mime_type.has_value());
    BOOST_TEST((fp.name == std::optional<std::string>("n")));

    // args is optional on a call; result and error optional on a response.
    auto c = decode<part>(val(R"({"type":"tool_call","tool_call_id":"1","tool_name":"f"})"));
    BOOST_TEST_REQUIRE(c.has_value());
    BOOST_TEST(std::get<tool_call_part>(*c).args.empty());
    auto r = decode<part>(val(R"({"type":"tool_response","tool_call_id":"1","tool_name":"f","result":"ok"})"));
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST((std::get<tool_response_part>(*r).result == val(R"("ok")")));
    BOOST_TEST(!std::get<tool_response_part>(*r).error.has_value());
}

BOOST_AUTO_TEST_CASE(decode_part_errors) {
    expect_decode_error<part>(R"([])", errc::wrong_type, "");
    expect_decode_error<part>(R"({})", errc::missing_field, "type");
    expect_decode_error<part>(R"({"type":7})", errc::wrong_type, "type");
    expect_decode_error<part>(R"({"type":"image"})", errc::unknown_enum_value, "type");
    expect_decode_error<part>(R"({"type":"Text","text":"a"})", errc::unknown_enum_value, "type");
    expect_decode_error<part>(R"({"type":"text"})", errc::missing_field, "text");
    expect_decode_error<part>(R"({"type":"text","text":null})", errc::wrong_type, "text");
    expect_decode_error<part>(R"({"type":"thinking"})", errc::missing_field, "thinking");
    expect_decode_error<part>(R"({"type":"data"})", errc::missing_field, "data");
    expect_decode_error<part>(R"({"type":"data","data":[1]})", errc::wrong_type, "data");
    expect_decode_error<part>(R"({"type":"file","uri":5})", errc::wrong_type, "uri");
    expect_decode_error<part>(R"({"type":"file","name":{}})", errc::wrong_type, "name");
    expect_decode_error<part>(R"({"type":"tool_call","tool_name":"f"})", errc::missing_field, "tool_call_id");
    expect_decode_error<part>(R"({"type":"tool_call","tool_call_id":"1"})", errc::missing_field, "tool_name");
    expect_decode_error<part>(R"({"type":"tool_call","tool_call_id":"1","tool_name":"f","args":"x"})",
                              errc::wrong_type, "args");
    expect_decode_error<part>(R"({"type":"tool_response","tool_call_id":"1","tool_name":"f","error":1})",
                              errc::wrong_type, "error");
    expect_decode_error<part>(R"({"type":"text","text":"a","metadata":[]})", errc::wrong_type, "metadata");
}

BOOST_AUTO_TEST_CASE(decode_content) {
    auto c = decode<libretto::content>(val(R"({"role":"model","parts":[{"type":"text","text":"a"}]})"));
    BOOST_TEST_REQUIRE(c.has_value());
    BOOST_TEST((c->role == std::optional<std::string>("model")));
    BOOST_TEST(c->parts.size() == 1u);

    auto empty = decode<libretto::content>(val(R"({})"));
    BOOST_TEST_REQUIRE(empty.has_value());
    BOOST_TEST((*empty == libretto::content{}));

    expect_decode_error<libretto::content>(R"("text")", errc::wrong_type, "");
    expect_decode_error<libretto::content>(R"({"role":1})", errc::wrong_type, "role");
    expect_decode_error<libretto::content>(R"({"parts":{}})", errc::wrong_type, "parts");
    expect_decode_error<libretto::content>(R"({"parts":[{"type":"text","text":"a"},3]})", errc::wrong_type,
                                           "parts[1]");
    expect_decode_error<libretto::content>(R"({"parts":[{"type":"text","text":"a"},{"type":"nope"}]})",
                                           errc::unknown_enum_value, "parts[1].type");
}

BOOST_AUTO_TEST_CASE(decode_usage) {
    auto u = decode<libretto::usage>(val(R"({"input_tokens":10,"output_tokens":5,"model_version":"v"})"));
    BOOST_TEST_REQUIRE(u.has_value());
    BOOST_TEST(u->input_tokens == 10);
    BOOST_TEST(u->output_tokens == 5);
    BOOST_TEST(u->model_version == "v");
    BOOST_TEST(u->total_tokens() == 15);

    auto empty = decode<libretto::usage>(val(R"({})"));
    BOOST_TEST_REQUIRE(empty.has_value());
    BOOST_TEST((*empty == libretto::usage{}));

    BOOST_TEST((encode(libretto::usage{}) == val(R"({"input_tokens":0,"output_tokens":0})")));

    expect_decode_error<libretto::usage>(R"([])", errc::wrong_type, "");
    expect_decode_error<libretto::usage>(R"({"input_tokens":"10"})", errc::wrong_type, "input_tokens");
    expect_decode_error<libretto::usage>(R"({"input_tokens":1.5})", errc::wrong_type, "input_tokens");
    expect_decode_error<libretto::usage>(R"({"output_tokens":true})", errc::wrong_type, "output_tokens");
    expect_decode_error<libretto::usage>(R"({"model_version":1})", errc::wrong_type, "model_version");
    expect_decode_error<libretto::usage>(R"({"input_tokens":9223372036854775808})", errc::wrong_type,
                                         "input_tokens");
}

BOOST_AUTO_TEST_CASE(decode_event_actions) {
    auto a = decode<event_actions>(val(R"({"state_delta":{"a":null},"artifact_delta":{"f":2},
        "transfer_to_agent":"t","escalate":false,"skip_summarization":true,"end_of_agent":true})"));
    BOOST_TEST_REQUIRE(a.has_value(), a.error().message());
    event_actions expected;
    expected.state_delta["a"] = nullptr;
    expected.artifact_delta["f"] = 2;
    expected.transfer_to_agent = "t";
    expected.escalate = false;
    expected.skip_summarization = true;
    expected.end_of_agent = true;
    BOOST_TEST((*a == expected));

    auto empty = decode<event_actions>(val(R"({})"));
    BOOST_TEST_REQUIRE(empty.has_value());
    BOOST_TEST(empty->empty());
    BOOST_TEST((encode(event_actions{}) == val(R"({})")));

    expect_decode_error<event_actions>(R"(null)", errc::wrong_type, "");
    expect_decode_error<event_actions>(R"({"state_delta":[]})", errc::wrong_type, "state_delta");
    expect_decode_error<event_actions>(R"({"artifact_delta":"f"})", errc::wrong_type, "artifact_delta");
    expect_decode_error<event_actions>(R"({"artifact_delta":{"ok":1,"notes":"2"}})", errc::wrong_type,
                                       "artifact_delta.notes");
    expect_decode_error<event_actions>(R"({"artifact_delta":{"notes":1.0}})", errc::wrong_type,
                                       "artifact_delta.notes");
    expect_decode_error<event_actions>(R"({"artifact_delta":{"notes":null}})", errc::wrong_type,
                                       "artifact_delta.notes");
    expect_decode_error<event_actions>(R"({"transfer_to_agent":1})", errc::wrong_type, "transfer_to_agent");
    expect_decode_error<event_actions>(R"({"escalate":"true"})", errc::wrong_type, "escalate");
    expect_decode_error<event_actions>(R"({"skip_summarization":1})", errc::wrong_type, "skip_summarization");
    expect_decode_error<event_actions>(R"({"end_of_agent":[]})", errc::wrong_type, "end_of_agent");
    expect_decode_error<event_actions>(R"({"compaction":true})", errc::wrong_type, "compaction");
    expect_decode_error<event_actions>(R"({"compaction":{"last_sequence":1,"summary":""}})", errc::missing_field,
                                       "compaction.first_sequence");
}

BOOST_AUTO_TEST_CASE(decode_event_compaction) {
    auto c = decode<event_compaction>(val(R"({"first_sequence":3,"last_sequence":9,"start_timestamp":1.5,
        "end_timestamp":2,"summary":"s","event_count":7})"));
    BOOST_TEST_REQUIRE(c.has_value(), c.error().message());
    event_compaction expected{3, 9, 1.5, 2.0, "s", 7};
    BOOST_TEST((*c == expected));

    // Timestamps and event_count are optional; a single-event range is valid.
    auto minimal = decode<event_compaction>(val(R"({"first_sequence":4,"last_sequence":4,"summary":""})"));
    BOOST_TEST_REQUIRE(minimal.has_value());
    BOOST_TEST(minimal->event_count == 0);
    BOOST_TEST(minimal->start_timestamp == 0.0);

    expect_decode_error<event_compaction>(R"([1,2])", errc::wrong_type, "");
    expect_decode_error<event_compaction>(R"({"last_sequence":1,"summary":""})", errc::missing_field,
                                          "first_sequence");
    expect_decode_error<event_compaction>(R"({"first_sequence":1,"summary":""})", errc::missing_field,
                                          "last_sequence");
    expect_decode_error<event_compaction>(R"({"first_sequence":1,"last_sequence":2})", errc::missing_field,
                                          "summary");
    expect_decode_error<event_compaction>(R"({"first_sequence":1,"last_sequence":2,"summary":5})",
                                          errc::wrong_type, "summary");
    expect_decode_error<event_compaction>(R"({"first_sequence":"1","last_sequence":2,"summary":""})",
                                          errc::wrong_type, "first_sequence");
    expect_decode_error<event_compaction>(
        R"({"first_sequence":1,"last_sequence":2,"summary":"","start_timestamp":"now"})", errc::wrong_type,
        "start_timestamp");
    expect_decode_error<event_compaction>(R"({"first_sequence":1,"last_sequence":2,"summary":"","event_count":0.5})",
                                          errc::wrong_type, "event_count");
    // A reversed range decodes (a stored one must not make its session unreadable);
    // check_compaction refuses it.
    auto reversed = decode<event_compaction>(val(R"({"first_sequence":5,"last_sequence":4,"summary":"s"})"));
    BOOST_TEST_REQUIRE(reversed.has_value());
    BOOST_TEST(reversed->first_sequence == 5);
    BOOST_TEST((libretto::check_compaction(*reversed).code == errc::invalid_argument));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_json_errors)

BOOST_AUTO_TEST_CASE(decoding_never_throws) {
    static_assert(noexcept(parse_event(std::string_view{})));
    static_assert(noexcept(decode<event>(std::declval<const json::value&>())));
    static_assert(noexcept(decode<part>(std::declval<const json::value&>())));
    static_assert(std::is_same_v<decltype(parse_event(std::string_view{})), decode_result<event>>);
}

BOOST_AUTO_TEST_CASE(not_json_text) {
    for (std::string_view text : {"", " ", "nope", "{", R"({"id":"x")", R"({"id":"x",})", R"({"id":"x"} {})",
                                  R"({'id':'x'})", "{\"id\":\"x\"}\x01", "\xff"}) {
        BOOST_TEST_CONTEXT("input \"" << text << "\"") {
            auto r = parse_event(text);
            BOOST_TEST_REQUIRE(r.has_error());
            BOOST_TEST((r.error().code == errc::invalid_json));
            BOOST_TEST(r.error().path.empty());
            BOOST_TEST(!r.error().detail.empty()); // the parser's reason
        }
    }
}

BOOST_AUTO_TEST_CASE(not_an_object) {
    for (std::string_view text : {"[]", "null", "1", "\"event\"", "true", R"([{"id":"x","type":"agent_end"}])"}) {
        BOOST_TEST_CONTEXT("input " << text) {
            auto r = parse_event(text);
            BOOST_TEST_REQUIRE(r.has_error());
            BOOST_TEST((r.error().code == errc::wrong_type));
            BOOST_TEST(r.error().path.empty());
            BOOST_TEST(r.error().message().find("<document>") == 0u);
        }
    }
}

BOOST_AUTO_TEST_CASE(missing_required_members) {
    expect_event_error(R"({"type":"agent_message"})", errc::missing_field, "id");
    expect_event_error(R"({"id":"x"})", errc::missing_field, "type");
    expect_event_error(R"({})", errc::missing_field, "id");
}

BOOST_AUTO_TEST_CASE(unknown_event_type) {
    expect_event_error(R"({"id":"x","type":"tool_call"})", errc::unknown_enum_value, "type");
    expect_event_error(R"({"id":"x","type":"AGENT_MESSAGE"})", errc::unknown_enum_value, "type");
    expect_event_error(R"({"id":"x","type":""})", errc::unknown_enum_value, "type");
    auto r = parse_event(R"({"id":"x","type":"tool_call"})");
    BOOST_TEST(r.error().detail.find("tool_call") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(wrong_top_level_types) {
    expect_event_error(R"({"id":7,"type":"agent_message"})", errc::wrong_type, "id");
    expect_event_error(R"({"id":"x","type":1})", errc::wrong_type, "type");
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":"1"})", errc::wrong_type, "sequence");
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":1.0})", errc::wrong_type, "sequence");
    expect_event_error(R"({"id":"x","type":"agent_message","timestamp":"now"})", errc::wrong_type, "timestamp");
    expect_event_error(R"({"id":"x","type":"agent_message","invocation_id":null})", errc::wrong_type,
                       "invocation_id");
    expect_event_error(R"({"id":"x","type":"agent_message","session_id":1})", errc::wrong_type, "session_id");
    expect_event_error(R"({"id":"x","type":"agent_message","author":[]})", errc::wrong_type, "author");
    expect_event_error(R"({"id":"x","type":"agent_message","branch":{}})", errc::wrong_type, "branch");
    expect_event_error(R"({"id":"x","type":"agent_message","content":[]})", errc::wrong_type, "content");
    expect_event_error(R"({"id":"x","type":"agent_message","actions":"none"})", errc::wrong_type, "actions");
    expect_event_error(R"({"id":"x","type":"agent_message","metadata":[1]})", errc::wrong_type, "metadata");
    expect_event_error(R"({"id":"x","type":"agent_message","partial":"true"})", errc::wrong_type, "partial");
    expect_event_error(R"({"id":"x","type":"agent_message","partial":null})", errc::wrong_type, "partial");
    expect_event_error(R"({"id":"x","type":"agent_message","usage":3})", errc::wrong_type, "usage");
    expect_event_error(R"({"id":"x","type":"agent_message","signature":false})", errc::wrong_type, "signature");
    expect_event_error(R"({"id":"x","type":"agent_message","signer_did":0})", errc::wrong_type, "signer_did");
    expect_event_error(R"({"id":"x","type":"agent_message","prev_signature":{}})", errc::wrong_type,
                       "prev_signature");
}

BOOST_AUTO_TEST_CASE(unknown_part_type_path) {
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"text","text":"a"},{"type":"audio","data":"x"}]}})",
                       errc::unknown_enum_value, "content.parts[1].type");
}

BOOST_AUTO_TEST_CASE(nested_paths) {
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"text","text":"a"},{"type":"thinking","thinking":"b"},
        {"type":"tool_call","tool_call_id":42,"tool_name":"f"}]}})",
                       errc::wrong_type, "content.parts[2].tool_call_id");
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"text","text":"a"},{"type":"thinking","thinking":"b"},
        {"type":"tool_call","tool_name":"f"}]}})",
                       errc::missing_field, "content.parts[2].tool_call_id");
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":[7]}})", errc::wrong_type,
                       "content.parts[0]");
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":{"0":{}}}})", errc::wrong_type,
                       "content.parts");
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"role":5}})", errc::wrong_type,
                       "content.role");
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"data","data":{},"metadata":"m"}]}})",
                       errc::wrong_type, "content.parts[0].metadata");
    expect_event_error(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"text","text":"0"},{"type":"text","text":"1"},{"type":"text","text":"2"},
        {"type":"text","text":"3"},{"type":"text","text":"4"},{"type":"text","text":"5"},
        {"type":"text","text":"6"},{"type":"text","text":"7"},{"type":"text","text":"8"},
        {"type":"text","text":"9"},{"type":"file","mime_type":1}]}})",
                       errc::wrong_type, "content.parts[10].mime_type");
    expect_event_error(R"({"id":"x","type":"agent_message",
        "actions":{"compaction":{"first_sequence":1,"last_sequence":2,"summary":7}}})",
                       errc::wrong_type, "actions.compaction.summary");
    expect_event_error(R"({"id":"x","type":"agent_message",
        "actions":{"compaction":{"first_sequence":1,"last_sequence":2}}})",
                       errc::missing_field, "actions.compaction.summary");
    expect_event_error(R"({"id":"x","type":"agent_message","usage":{"input_tokens":"12"}})", errc::wrong_type,
                       "usage.input_tokens");
    expect_event_error(R"({"id":"x","type":"agent_message","actions":{"state_delta":"x"}})", errc::wrong_type,
                       "actions.state_delta");
    expect_event_error(R"({"id":"x","type":"agent_message","actions":{"escalate":1}})", errc::wrong_type,
                       "actions.escalate");
}

BOOST_AUTO_TEST_CASE(artifact_delta_must_hold_integers) {
    expect_event_error(R"({"id":"x","type":"agent_message","actions":{"artifact_delta":{"report":"3"}}})",
                       errc::wrong_type, "actions.artifact_delta.report");
    expect_event_error(R"({"id":"x","type":"agent_message","actions":{"artifact_delta":{"report":3.5}}})",
                       errc::wrong_type, "actions.artifact_delta.report");
    expect_event_error(R"({"id":"x","type":"agent_message","actions":{"artifact_delta":{"a":1,"b":{}}}})",
                       errc::wrong_type, "actions.artifact_delta.b");
}

BOOST_AUTO_TEST_CASE(sequence_range) {
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":-1})", errc::invalid_argument, "sequence");
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":-9223372036854775808})",
                       errc::invalid_argument, "sequence");
    // Beyond int64: a uint64 that does not fit, and a number beyond uint64 (parsed as a double).
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":9223372036854775808})", errc::wrong_type,
                       "sequence");
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":18446744073709551615})", errc::wrong_type,
                       "sequence");
    expect_event_error(R"({"id":"x","type":"agent_message","sequence":18446744073709551616})", errc::wrong_type,
                       "sequence");
    auto zero = parse_event(R"({"id":"x","type":"agent_message","sequence":0})");
    BOOST_TEST_REQUIRE(zero.has_value());
    BOOST_TEST(zero->sequence == 0);
}

BOOST_AUTO_TEST_CASE(a_reversed_compaction_range_decodes_and_check_compaction_refuses_it) {
    // Another tool may have stored it: the session must stay readable (the context view
    // and the stores' context loads ignore it).
    auto r = parse_event(R"({"id":"x","type":"agent_message","sequence":11,
        "actions":{"compaction":{"first_sequence":10,"last_sequence":9,"summary":"s"}}})");
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(r->actions.compaction->first_sequence == 10);
    BOOST_TEST(check_compaction(*r).message ==
               "actions.compaction.first_sequence 10 is after last_sequence 9 (a reversed range)");
}

BOOST_AUTO_TEST_CASE(error_message_names_the_path) {
    auto r = parse_event(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"tool_call","tool_call_id":1,"tool_name":"f"}]}})");
    BOOST_TEST_REQUIRE(r.has_error());
    BOOST_TEST(r.error().message() ==
               "content.parts[2].tool_call_id: field has the wrong type (expected string, got number)");

    decode_error bare{make_error_code(errc::invalid_json), "", ""};
    BOOST_TEST(bare.message() == "<document>: invalid JSON");
}

BOOST_AUTO_TEST_CASE(value_throws_system_error_with_path) {
    auto r = parse_event(R"({"id":"x","type":"agent_message","usage":{"input_tokens":"12"}})");
    BOOST_TEST_REQUIRE(r.has_error());
    bool thrown = false;
    try {
        (void)r.value();
    } catch (const boost::system::system_error& e) {
        thrown = true;
        BOOST_TEST((e.code() == errc::wrong_type));
        const std::string what = e.what();
        BOOST_TEST(what.find("usage.input_tokens") != std::string::npos, what);
        BOOST_TEST(what.find("expected integer") != std::string::npos, what);
    }
    BOOST_TEST(thrown);

    // A document-level error says so.
    auto doc = parse_event("[]");
    try {
        (void)doc.value();
        BOOST_FAIL("value() did not throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::wrong_type));
        BOOST_TEST(std::string(e.what()).find("<document>") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(value_to_throws_system_error_with_path) {
    const json::value bad = json::parse(R"({"id":"x","type":"agent_message","content":{"parts":[
        {"type":"text","text":"a"},{"type":"hologram"}]}})");
    bool thrown = false;
    try {
        (void)json::value_to<event>(bad);
    } catch (const boost::system::system_error& e) {
        thrown = true;
        BOOST_TEST((e.code() == errc::unknown_enum_value));
        BOOST_TEST(std::string(e.what()).find("content.parts[1].type") != std::string::npos, e.what());
    }
    BOOST_TEST(thrown);

    try {
        (void)json::value_to<event_compaction>(json::parse(R"({"first_sequence":2,"summary":""})"));
        BOOST_FAIL("value_to did not throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == errc::missing_field));
        BOOST_TEST(std::string(e.what()).find("last_sequence") != std::string::npos);
    }
    BOOST_CHECK_THROW((void)json::value_to<libretto::usage>(json::parse("[]")), boost::system::system_error);
    BOOST_CHECK_THROW((void)json::value_to<libretto::content>(json::parse(R"({"parts":1})")),
                      boost::system::system_error);
    BOOST_CHECK_THROW((void)json::value_to<event_actions>(json::parse(R"({"escalate":0})")),
                      boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(excessive_nesting_is_an_error_not_a_crash) {
    std::string deep = R"({"id":"x","type":"agent_message","metadata":{"m":)";
    for (int i = 0; i < 10000; ++i) deep += '[';
    for (int i = 0; i < 10000; ++i) deep += ']';
    deep += "}}";
    auto r = parse_event(deep);
    BOOST_TEST_REQUIRE(r.has_error());
    BOOST_TEST((r.error().code == errc::invalid_json));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(event_json_robustness)

namespace {

const std::set<int> decode_codes = {
    static_cast<int>(errc::invalid_json),       static_cast<int>(errc::missing_field),
    static_cast<int>(errc::wrong_type),         static_cast<int>(errc::unknown_enum_value),
    static_cast<int>(errc::invalid_argument),
};

/// Whatever parse_event returns for damaged text must be well-formed: an error from the
/// decode set, or an event that re-encodes and decodes to itself.
void check_well_formed(const decode_result<event>& r) {
    if (r.has_error()) {
        BOOST_TEST((&r.error().code.category() == &error_category()));
        BOOST_TEST(decode_codes.count(r.error().code.value()) == 1u, "code " << r.error().code.value());
        if (r.error().code != errc::invalid_json && r.error().code != errc::wrong_type)
            BOOST_TEST(!r.error().path.empty()); // a field error names its field
        BOOST_TEST(!r.error().message().empty());
    } else {
        auto again = decode<event>(encode(*r));
        BOOST_TEST_REQUIRE(again.has_value());
        BOOST_TEST((*again == *r));
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(every_truncation_is_invalid_json) {
    const std::string text = serialize_event(maximal_event());
    BOOST_TEST_REQUIRE(parse_event(text).has_value());
    for (std::size_t n = 0; n < text.size(); ++n) {
        // A copy of exactly n bytes, so ASan sees any read past the end.
        const std::string prefix = text.substr(0, n);
        auto r = parse_event(prefix);
        if (!r.has_error() || r.error().code != errc::invalid_json) {
            BOOST_ERROR("prefix of length " << n << " was not rejected as invalid JSON");
            break;
        }
    }
}

BOOST_AUTO_TEST_CASE(single_byte_corruptions_never_crash) {
    const std::string text = serialize_event(maximal_event());
    const unsigned char replacements[] = {0x00, 0x01, '"', '\\', '{', '}', '[', ']', ',', ':', ' ', '0',
                                          '9',  '-',  'e', 'x',  'n', 't', 0x7f, 0x80, 0xc3, 0xff};
    std::size_t values = 0, errors = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        for (unsigned char c : replacements) {
            if (static_cast<unsigned char>(text[i]) == c) continue;
            std::string damaged = text;
            damaged[i] = static_cast<char>(c);
            auto r = parse_event(damaged);
            check_well_formed(r);
            (r.has_value() ? values : errors) += 1;
        }
        // Deletion of byte i.
        std::string shorter = text;
        shorter.erase(i, 1);
        check_well_formed(parse_event(shorter));
    }
    // Both outcomes occur (e.g. a digit changed inside a number is still a valid event).
    BOOST_TEST(values > 0u);
    BOOST_TEST(errors > 0u);
}

BOOST_AUTO_TEST_CASE(random_multi_byte_corruptions_never_crash) {
    const std::string text = serialize_event(maximal_event());
    std::mt19937 rng(12345);
    std::uniform_int_distribution<std::size_t> pos(0, text.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> count(2, 8);
    for (int iter = 0; iter < 3000; ++iter) {
        std::string damaged = text;
        for (int k = count(rng); k > 0; --k) damaged[pos(rng)] = static_cast<char>(byte(rng));
        check_well_formed(parse_event(damaged));
    }
}

BOOST_AUTO_TEST_CASE(structurally_valid_but_wrong_documents) {
    // Valid JSON of every kind in every member position: errors, never crashes.
    const char* members[] = {"id",      "sequence", "timestamp", "invocation_id", "session_id", "author",
                             "branch",  "type",     "content",   "actions",       "metadata",   "partial",
                             "usage",   "signature", "signer_did", "prev_signature"};
    const char* values[] = {"null", "true", "-1", "1.5", "18446744073709551616", "\"s\"", "[]", "{}", "[{}]",
                            R"({"parts":[{}]})"};
    for (const char* m : members) {
        for (const char* v : values) {
            json::object o = json::parse(serialize_event(minimal_event())).as_object();
            o[m] = json::parse(v);
            check_well_formed(parse_event(json::serialize(o)));
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

// ---- regressions found while writing these tests -------------------------------------
BOOST_AUTO_TEST_SUITE(json_regressions)

BOOST_AUTO_TEST_CASE(realistic_timestamps_round_trip_through_text) {
    // event::make stamps the wall clock with sub-microsecond digits; every such value must
    // survive serialize_event -> parse_event ("lossless").
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> t(1.7e9, 1.8e9);
    int lost = 0;
    for (int i = 0; i < 1000; ++i) {
        event e = event::make(event_type::agent_message, "a", content::from_text("x"));
        e.timestamp = t(rng);
        auto r = parse_event(serialize_event(e));
        BOOST_TEST_REQUIRE(r.has_value());
        if (r->timestamp != e.timestamp) ++lost;
    }
    BOOST_TEST(lost == 0);
}

BOOST_AUTO_TEST_CASE(one_known_value) {
    event e;
    e.id = "x";
    e.timestamp = 1792610249.2474365;
    auto r = parse_event(serialize_event(e));
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->timestamp == e.timestamp);
}

BOOST_AUTO_TEST_CASE(error_is_the_first_tool_responses_error_orxhestra) {
    // orxhestra: `if tool_responses: return tool_responses[0].error`
    event e;
    e.type = event_type::tool_response;
    tool_response_part ok; ok.tool_call_id = "1"; ok.tool_name = "f";
    tool_response_part bad = ok; bad.tool_call_id = "2"; bad.error = "boom";
    e.content.parts = {ok, bad};
    BOOST_TEST(!e.error().has_value());
    event m;
    m.content.parts = {ok, text_part{"msg", {}}};
    m.metadata["error"] = true;
    BOOST_TEST(!m.error().has_value());
}

BOOST_AUTO_TEST_CASE(deep_but_valid_metadata_round_trips) {
    event e;
    e.id = "x";
    json::value v = 1;
    for (int i = 0; i < 40; ++i) { json::array a; a.push_back(v); v = a; }
    e.metadata["deep"] = v;
    auto r = parse_event(serialize_event(e));
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST((*r == e));
}

BOOST_AUTO_TEST_SUITE_END()
