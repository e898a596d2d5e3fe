// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target sse_parser: the input is [split seed: 4 bytes][size limit: 1 byte][stream bytes].
//
//   - fed whole, byte by byte, and in chunks cut where the seed says, the parser gives
//     the same events (name, data, id), the same idle(), last_event_id() and retry_ms();
//   - a parser reset() and fed again gives what a fresh one gives;
//   - with a small max_event_size, a feed that fails (errc::oversize) has given a prefix of
//     the whole feed's events, and fails every later call; the whole feed fails only if
//     every split feed does (a split can only buffer more, never less).
// Each chunk is a fresh heap copy freed after its feed, so a view kept past its chunk is
// a use after free that AddressSanitizer reports.

#include "fuzz_support.hpp"

#include <libretto/http/sse_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace http = libretto::http;

struct got {
    std::string event, data, id;
    bool operator==(const got&) const = default;
};

struct outcome {
    std::vector<got> events;
    bool failed = false;
    bool idle = false;
    std::string last_id;
    std::optional<std::uint64_t> retry;
};

std::string describe(const outcome& o) {
    std::string s = std::to_string(o.events.size()) + " events" + (o.failed ? ", failed" : "") +
                    (o.idle ? ", idle" : "") + ", last id '" + fuzz::shown(o.last_id, 40) + "'";
    for (std::size_t i = 0; i < o.events.size() && i < 8; ++i)
        s += "\n       [" + fuzz::shown(o.events[i].event, 40) + "|" + fuzz::shown(o.events[i].data, 80) + "|" +
             fuzz::shown(o.events[i].id, 40) + "]";
    return s;
}

void feed_all(http::sse_parser& p, const std::vector<std::string>& chunks, outcome& out) {
    for (const auto& c : chunks) {
        auto owned = std::make_unique<char[]>(c.size() + 1); // a view kept past this feed dangles
        std::memcpy(owned.get(), c.data(), c.size());
        auto ec = p.feed(std::string_view(owned.get(), c.size()), [&](const http::sse_event& e) {
            out.events.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
        });
        if (ec) {
            FUZZ_CHECK(ec == libretto::errc::oversize, "feed failed with " + ec.message());
            FUZZ_CHECK(p.failed(), "feed failed but failed() is false");
            out.failed = true;
            // Every later call fails too, and dispatches nothing.
            const std::size_t n = out.events.size();
            auto again = p.feed("data: x\n\n", [&](const http::sse_event&) { out.events.push_back({}); });
            FUZZ_CHECK(again == libretto::errc::oversize, "a failed parser accepted more input");
            FUZZ_CHECK(out.events.size() == n, "a failed parser dispatched an event");
            return;
        }
    }
    out.idle = p.idle();
    out.last_id = std::string(p.last_event_id());
    out.retry = p.retry_ms();
}

outcome run(const std::vector<std::string>& chunks, http::sse_parser_options o) {
    http::sse_parser p(o);
    outcome out;
    feed_all(p, chunks, out);
    return out;
}

bool same(const outcome& a, const outcome& b) {
    return a.events == b.events && a.failed == b.failed && a.idle == b.idle && a.last_id == b.last_id &&
           a.retry == b.retry;
}

bool is_prefix(const std::vector<got>& a, const std::vector<got>& b) {
    if (a.size() > b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i])) return false;
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::input in(data, size);
    const std::uint32_t seed = in.u32();
    const std::uint8_t limit_byte = in.byte();
    const std::string_view stream = in.rest();

    const std::vector<std::string> whole_chunks{std::string(stream)};
    const std::vector<std::string> bytes = fuzz::bytewise(stream);
    const std::vector<std::string> pieces = fuzz::split(stream, seed, 1 + seed % 23);

    // The default limit (8 MiB) is never reached here: every feed succeeds and agrees.
    {
        const http::sse_parser_options o{};
        const outcome whole = run(whole_chunks, o);
        FUZZ_CHECK(!whole.failed, "the whole feed failed under the default limit");
        const outcome one = run(bytes, o);
        FUZZ_CHECK(same(whole, one), "whole and byte by byte differ:\n     whole: " + describe(whole) +
                                         "\n     bytes: " + describe(one));
        const outcome split = run(pieces, o);
        FUZZ_CHECK(same(whole, split), "whole and split differ:\n     whole: " + describe(whole) +
                                           "\n     split: " + describe(split));

        http::sse_parser p(o);
        outcome first;
        feed_all(p, pieces, first);
        p.reset();
        outcome second;
        feed_all(p, whole_chunks, second);
        FUZZ_CHECK(same(whole, second), "reset() then a feed differs from a fresh parser:\n     fresh: " +
                                            describe(whole) + "\n     reset: " + describe(second));
    }

    // A small limit: failures are allowed, but only as a prefix of the whole feed.
    if (limit_byte != 0) {
        const http::sse_parser_options o{static_cast<std::size_t>(limit_byte)};
        const outcome whole = run(whole_chunks, o);
        for (const auto* chunks : {&bytes, &pieces}) {
            const outcome other = run(*chunks, o);
            if (!other.failed) {
                FUZZ_CHECK(same(whole, other), "a split feed under max_event_size " + std::to_string(limit_byte) +
                                                   " differs from the whole feed:\n     whole: " + describe(whole) +
                                                   "\n     split: " + describe(other));
            } else {
                FUZZ_CHECK(is_prefix(other.events, whole.events),
                           "a failed split feed gave events the whole feed did not:\n     whole: " + describe(whole) +
                               "\n     split: " + describe(other));
            }
            if (whole.failed)
                FUZZ_CHECK(other.failed, "the whole feed failed under max_event_size " + std::to_string(limit_byte) +
                                             " but a split feed did not:\n     whole: " + describe(whole) +
                                             "\n     split: " + describe(other));
        }
    }
    return 0;
}
