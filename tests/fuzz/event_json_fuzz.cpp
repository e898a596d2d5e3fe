// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target event_json: the input is the text of one event (a transcript line, a row).
//
//   - parse_event never throws; a refusal has an error code and a message; an event it
//     reads holds no NaN or infinite number;
//   - an event it reads is either refused by serialize_event_checked with a clear reason
//     (invalid_argument, a message, nothing written), or written as text that parse_event
//     reads back equal, and writing that again gives the same bytes (a fixed point);
//   - serialize_event and json::serialize(encode(e)) give the same bytes, and
//     decode(encode(e)) gives the event back;
//   - the store's fast line decoder, when it accepts the text, yields what parse_event yields.

#include "fuzz_support.hpp"

#include <libretto/event/json.hpp>
#include <libretto/store/detail/jsonl_decode.hpp>

#include <boost/json/serialize.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace lb = libretto;
namespace json = boost::json;

bool has_non_finite(const json::value& v) {
    switch (v.kind()) {
    case json::kind::double_: return !std::isfinite(v.get_double());
    case json::kind::array:
        for (const auto& x : v.get_array())
            if (has_non_finite(x)) return true;
        return false;
    case json::kind::object:
        for (const auto& kv : v.get_object())
            if (has_non_finite(kv.value())) return true;
        return false;
    default: return false;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = lb::parse_event(text);

    // The fast decoder declines or agrees.
    {
        lb::event fast;
        if (lb::detail::jsonl::fast_decode_event(text, fast)) {
            FUZZ_CHECK(r.has_value(), "the fast decoder accepted what parse_event refuses: " + r.error().message());
            FUZZ_CHECK(fast == *r, "the fast decoder and parse_event disagree on " + fuzz::shown(text));
        }
    }

    if (!r) {
        FUZZ_CHECK(r.error().code.failed(), "a refusal without an error code");
        FUZZ_CHECK(!r.error().message().empty(), "a refusal without a message");
        return 0;
    }
    const lb::event& e = *r;
    const json::value encoded = lb::encode(e);

    // The JSON rule (json_limits.hpp): no number an event holds is NaN or infinite (1e400
    // is refused on read; docs/reliability.md, "What fuzzing found").
    FUZZ_CHECK(!has_non_finite(encoded), "parse_event read a non-finite number from " + fuzz::shown(text));

    std::string out, why;
    const auto ec = lb::serialize_event_checked(e, out, why);
    if (ec) {
        FUZZ_CHECK(ec == lb::errc::invalid_argument, "serialize_event_checked refused with " + ec.message());
        FUZZ_CHECK(!why.empty(), "serialize_event_checked refused without a reason");
        FUZZ_CHECK(out.empty(), "serialize_event_checked refused but left text behind");
        return 0;
    }
    FUZZ_CHECK(out == lb::serialize_event(e), "serialize_event and serialize_event_checked differ");
    FUZZ_CHECK(out == json::serialize(encoded), "serialize_event differs from json::serialize(encode(e)): " +
                                                   fuzz::shown(out) + " vs " + fuzz::shown(json::serialize(encoded)));
    {
        auto d = lb::decode<lb::event>(encoded);
        FUZZ_CHECK(d.has_value(), "decode(encode(e)) fails: " + d.error().message());
        FUZZ_CHECK(*d == e, "decode(encode(e)) differs from e");
    }

    auto back = lb::parse_event(out);
    FUZZ_CHECK(back.has_value(), "the event's own text does not parse back (" + back.error().message() +
                                     "): " + fuzz::shown(out));
    FUZZ_CHECK(*back == e, "the event read back differs: " + fuzz::shown(text) + " -> " + fuzz::shown(out));

    std::string again, why2;
    FUZZ_CHECK(!lb::serialize_event_checked(*back, again, why2), "the event read back is refused: " + why2);
    FUZZ_CHECK(again == out, "not a fixed point: " + fuzz::shown(out) + " -> " + fuzz::shown(again));
    return 0;
}
