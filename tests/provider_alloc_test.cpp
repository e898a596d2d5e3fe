// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The stream decoders sit on the hot path: once warmed up, decoding a typical event must
// not allocate (the payload is parsed into a reused arena). This executable counts every
// operator new, so it is a test file of its own.
#include <libretto/provider/anthropic_protocol.hpp>
#include <libretto/provider/openai_protocol.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<std::size_t> allocations{0};
} // namespace

void* operator new(std::size_t n) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace lb = libretto;

BOOST_AUTO_TEST_CASE(openai_chunks_decode_without_allocating) {
    std::vector<std::string> events;
    for (int i = 0; i < 1000; ++i)
        events.push_back(R"({"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" word)" +
                         std::to_string(i % 100) + R"("},"logprobs":null,"finish_reason":null}],"usage":null})");
    lb::openai_stream_decoder d;
    (void)d.feed("", events[0]); // warm-up: the arena, the parser's stack, the model name
    const std::size_t before = allocations.load();
    std::size_t without_text = 0; // checked after the loop: Boost.Test's logging allocates
    for (const auto& e : events) {
        lb::llm_chunk c = d.feed("", e);
        without_text += c.text.empty();
    }
    const std::size_t used = allocations.load() - before;
    BOOST_TEST(without_text == 0u);
    // Only the accumulated answer text grows (amortised doubling): a handful in all.
    BOOST_TEST_MESSAGE(used << " allocations for " << events.size() << " chunks");
    BOOST_TEST(used < events.size() / 20, used << " allocations for " << events.size() << " chunks");
    (void)d.feed("", "[DONE]");
    BOOST_TEST(d.finish().text().size() > 5000u);
}

BOOST_AUTO_TEST_CASE(anthropic_events_decode_without_allocating) {
    std::vector<std::string> events;
    for (int i = 0; i < 1000; ++i)
        events.push_back(R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word)" +
                         std::to_string(i % 100) + R"("}})");
    lb::anthropic_stream_decoder d;
    (void)d.feed("", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
    (void)d.feed("", events[0]);
    const std::size_t before = allocations.load();
    for (const auto& e : events) (void)d.feed("", e);
    const std::size_t used = allocations.load() - before;
    BOOST_TEST(used < events.size() / 20, used << " allocations for " << events.size() << " events");
}
