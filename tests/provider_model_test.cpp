// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// openai_model and anthropic_model over beast_transport<> against the loopback
// llm_test::server (every fault it can make), and over fake_transport.
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/fake_transport.hpp>
#include <libretto/provider/anthropic_model.hpp>
#include <libretto/provider/openai_model.hpp>

#include "llm_test_server.hpp"

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <random>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace lb = libretto;
namespace lh = libretto::http;
using namespace std::chrono_literals;
using llm_test::protocol;
using transport = lh::beast_transport<>;

static_assert(lb::model<lb::openai_model<transport>>);
static_assert(lb::model<lb::anthropic_model<transport>>);
static_assert(lb::model<lb::openai_model<lh::fake_transport>>);

namespace {

template <class Test>
void run(asio::io_context& io, Test test) {
    std::exception_ptr failure;
    bool finished = false;
    asio::co_spawn(io, test(), [&](std::exception_ptr ep) {
        failure = ep;
        finished = true;
    });
    io.run();
    BOOST_REQUIRE(finished);
    if (failure) std::rethrow_exception(failure);
}

lb::llm_request ask(std::string text) {
    lb::llm_request r;
    r.messages.push_back(lb::message::user(std::move(text)));
    return r;
}

/// Quick retries for tests.
lb::provider_http_options fast(std::size_t attempts = 4) {
    lb::provider_http_options o;
    o.retry.max_attempts = attempts;
    o.retry.initial_delay = 1ms;
    o.retry.max_delay = 5ms;
    return o;
}

struct outcome {
    std::vector<lb::llm_chunk> deltas;
    lb::llm_response final;
    int finals = 0;
};

template <class Model>
asio::awaitable<outcome> drain(Model m, lb::llm_request r) {
    lb::llm_stream s = m.generate(std::move(r));
    outcome out;
    for (;;) {
        std::optional<lb::llm_chunk> c = co_await s.next();
        if (!c) break;
        if (c->final) {
            out.final = std::move(*c->final);
            ++out.finals;
        } else {
            out.deltas.push_back(std::move(*c));
        }
    }
    co_return out;
}

std::string delta_text(const outcome& o) {
    std::string t;
    for (const auto& c : o.deltas) t += c.text;
    return t;
}

struct openai_fixture {
    llm_test::server srv;
    asio::io_context io;
    transport http{io.get_executor(), {.timeouts = {.idle = 300ms}}};
    lb::openai_model<transport> model(lb::provider_http_options o = fast()) {
        return {http, {.base_url = srv.base_url() + "/v1", .api_key = "sk-test", .model = "gpt-test"}, o};
    }
};

struct anthropic_fixture {
    llm_test::server srv;
    asio::io_context io;
    transport http{io.get_executor(), {.timeouts = {.idle = 300ms}}};
    lb::anthropic_model<transport> model(lb::provider_http_options o = fast()) {
        return {http, {.base_url = srv.base_url(), .api_key = "ak-test", .model = "claude-test"}, o};
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(openai_model_suite)

BOOST_FIXTURE_TEST_CASE(streams_text_and_usage, openai_fixture) {
    srv.push(llm_test::openai_stream({.text = {"Hel", "lo", " world"}, .input_tokens = 9, .output_tokens = 3})
                 .in_random_pieces(17, 7));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(o.finals == 1);
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "Hello world");
        BOOST_TEST((o.final.reply == lb::reply_kind::streamed));
        BOOST_TEST(delta_text(o) == "Hello world");
        BOOST_REQUIRE(o.final.usage.has_value());
        BOOST_TEST(o.final.usage->input_tokens == 9);
        BOOST_TEST(o.final.usage->output_tokens == 3);
    });
    auto reqs = srv.requests();
    BOOST_REQUIRE(reqs.size() == 1u);
    BOOST_TEST(reqs[0].target == "/v1/chat/completions");
    BOOST_TEST(reqs[0].header("authorization") == "Bearer sk-test");
    auto body = reqs[0].json().as_object();
    BOOST_TEST(body.at("model").as_string() == "gpt-test");
    BOOST_TEST(body.at("stream").as_bool());
    BOOST_TEST(body.at("stream_options").at("include_usage").as_bool());
}

BOOST_FIXTURE_TEST_CASE(tool_call_fragments_are_joined, openai_fixture) {
    srv.push(llm_test::openai_stream(
        {.tool_calls = {{"call_1", "get_weather", {"{\"ci", "ty\": \"Os", "lo\"}"}}, {"call_2", "now", {"{}"}}}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("weather?"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.finish == lb::finish_reason::tool_calls);
        std::vector<lb::tool_call_part> calls(o.final.tool_calls().begin(), o.final.tool_calls().end());
        BOOST_REQUIRE(calls.size() == 2u);
        BOOST_TEST(calls[0].tool_call_id == "call_1");
        BOOST_TEST(calls[0].tool_name == "get_weather");
        BOOST_TEST(calls[0].args.at("city").as_string() == "Oslo");
        BOOST_TEST(calls[1].tool_name == "now");
    });
}

BOOST_FIXTURE_TEST_CASE(rate_limit_is_retried_after_retry_after, openai_fixture) {
    srv.push(llm_test::rate_limited(protocol::openai, 0));
    srv.push(llm_test::server_error(protocol::openai, 503));
    srv.push(llm_test::openai_stream({.text = {"ok"}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "ok");
    });
    BOOST_TEST(srv.request_count() == 3u);
}

BOOST_FIXTURE_TEST_CASE(rate_limit_reported_when_attempts_run_out, openai_fixture) {
    srv.push(llm_test::rate_limited(protocol::openai, 7));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(fast(1)), ask("hi"));
        BOOST_TEST(o.final.error == lb::errc::transient);
        BOOST_REQUIRE(o.final.retry_after.has_value());
        BOOST_TEST(o.final.retry_after->count() == 7000);
        BOOST_TEST(o.final.error_message.find("429") != std::string::npos);
    });
    BOOST_TEST(srv.request_count() == 1u);
}

BOOST_FIXTURE_TEST_CASE(overflow_and_auth_are_not_retried, openai_fixture) {
    srv.push(llm_test::context_overflow(protocol::openai));
    srv.push(llm_test::unauthorized(protocol::openai));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("long"));
        BOOST_TEST(o.final.error == lb::errc::context_overflow);
        BOOST_TEST(o.finals == 1);
        outcome a = co_await drain(model(), ask("hi"));
        BOOST_TEST(a.final.error == lb::errc::auth_failed);
    });
    BOOST_TEST(srv.request_count() == 2u);
}

BOOST_FIXTURE_TEST_CASE(cut_mid_stream_is_an_error_and_not_retried, openai_fixture) {
    auto r = llm_test::openai_stream({.text = {"partial ", "answer ", "that ", "never ", "ends"}});
    const std::string full = llm_test::render_openai(*r.stream, true);
    const std::size_t cut = full.find("that ") - 5; // after two deltas, inside the third's event
    srv.push(std::move(r).cut(cut));
    srv.push(llm_test::openai_stream({.text = {"must not be used"}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(!o.final.ok());
        BOOST_TEST(o.final.error == lh::http_errc::truncated);
        BOOST_TEST(lb::is_transient(o.final.error));
        BOOST_TEST(delta_text(o) == "partial answer ");
        BOOST_TEST(o.final.text() == "partial answer "); // what arrived is kept
    });
    BOOST_TEST(srv.request_count() == 1u);
}

BOOST_FIXTURE_TEST_CASE(cut_before_any_delta_is_retried, openai_fixture) {
    srv.push(llm_test::openai_stream({.text = {"first"}}).cut(30)); // inside the role chunk
    srv.push(llm_test::openai_stream({.text = {"second"}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "second");
    });
    BOOST_TEST(srv.request_count() == 2u);
}

BOOST_FIXTURE_TEST_CASE(stalled_stream_times_out, openai_fixture) {
    auto r = llm_test::openai_stream({.text = {"slow ", "then nothing"}});
    const std::string full = llm_test::render_openai(*r.stream, true);
    srv.push(std::move(r).stall(full.find("then")));
    run(io, [&]() -> asio::awaitable<void> {
        const auto t0 = std::chrono::steady_clock::now();
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(o.final.error == lh::http_errc::idle_timeout);
        BOOST_TEST(delta_text(o) == "slow ");
        BOOST_TEST((std::chrono::steady_clock::now() - t0 < 3s));
    });
}

BOOST_FIXTURE_TEST_CASE(error_chunk_in_stream_is_classified, openai_fixture) {
    srv.push(llm_test::openai_stream({.text = {"a"}, .error = llm_test::stream_error{"server_error", "boom"}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(o.final.error == lb::errc::transient);
        BOOST_TEST(o.final.error_message.find("boom") != std::string::npos);
    });
    BOOST_TEST(srv.request_count() == 1u); // a delta was delivered: no retry
}

BOOST_FIXTURE_TEST_CASE(garbage_is_a_bad_response, openai_fixture) {
    auto r = llm_test::text_reply("data: {not json\n\ndata: [DONE]\n\n");
    r.proto = protocol::openai;
    srv.push(std::move(r));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(o.final.error == lb::errc::bad_response);
    });
}

BOOST_FIXTURE_TEST_CASE(cancellation_closes_the_connection, openai_fixture) {
    auto r = llm_test::openai_stream({.text = {"one ", "two"}});
    const std::string full = llm_test::render_openai(*r.stream, true);
    srv.push(std::move(r).stall(full.find("two")));
    run(io, [&]() -> asio::awaitable<void> {
        lb::llm_stream s = model().generate(ask("hi"));
        std::optional<lb::llm_chunk> c;
        do {
            c = co_await s.next();
        } while (c && c->text.empty());
        BOOST_REQUIRE(c.has_value());
        BOOST_TEST(c->text == "one ");
        s.cancel();
        bool threw = false;
        try {
            c = co_await s.next();
        } catch (const boost::system::system_error& e) {
            threw = e.code() == lb::errc::cancelled;
        }
        BOOST_TEST(threw);
        for (int i = 0; i < 100 && srv.connections_closed() < 1; ++i) {
            asio::steady_timer w(io, 10ms);
            co_await w.async_wait(asio::use_awaitable);
        }
    });
    BOOST_TEST(srv.connections_closed() == 1u);
}

BOOST_FIXTURE_TEST_CASE(bad_request_is_a_final_error_without_io, openai_fixture) {
    lb::llm_request req = ask("x");
    lb::message m;
    m.role = lb::message_role::assistant;
    m.parts.push_back(lb::tool_call_part{"", "", {}, {}}); // a call without id or name
    req.messages.push_back(std::move(m));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), std::move(req));
        BOOST_TEST(o.final.error == lb::errc::invalid_argument);
        BOOST_TEST(o.finals == 1);
    });
    BOOST_TEST(srv.request_count() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_stream_longer_than_max_stream_bytes_ends_with_an_error, openai_fixture) {
    srv.push(llm_test::openai_stream({.text = std::vector<std::string>(200, std::string(50, 'x'))}));
    lb::provider_http_options o = fast();
    o.max_stream_bytes = 4000;
    run(io, [&]() -> asio::awaitable<void> {
        outcome r = co_await drain(model(o), ask("hi"));
        BOOST_TEST(r.final.error == lb::errc::bad_response);
        BOOST_TEST(r.final.error_message.find("the streamed reply exceeds max_stream_bytes (4000 bytes)") != std::string::npos,
                   r.final.error_message);
        BOOST_TEST(!delta_text(r).empty()); // what came before the limit was delivered
        BOOST_TEST(delta_text(r).size() < 4000u);
    });
    BOOST_TEST(srv.request_count() == 1u); // content was delivered: not retried
}

BOOST_FIXTURE_TEST_CASE(a_key_with_its_newline_is_named_not_sent, openai_fixture) {
    lb::openai_model<transport> m{http, {.base_url = srv.base_url() + "/v1", .api_key = "sk-secret\n", .model = "gpt-test"},
                                  fast()};
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(m, ask("hi"));
        BOOST_TEST(o.final.error == lb::errc::invalid_argument);
        BOOST_TEST(o.final.error_message.find("the value of the header 'authorization' holds a line break") !=
                       std::string::npos,
                   o.final.error_message);
        BOOST_TEST(o.final.error_message.find("sk-secret") == std::string::npos, o.final.error_message); // never the key
    });
    BOOST_TEST(srv.request_count() == 0u);
}

BOOST_FIXTURE_TEST_CASE(copies_share_the_connection_pool, openai_fixture) {
    srv.set_default(llm_test::openai_stream({.text = {"same"}}));
    run(io, [&]() -> asio::awaitable<void> {
        auto m1 = model();
        auto m2 = m1;
        for (int i = 0; i < 3; ++i) {
            outcome a = co_await drain(m1, ask("a"));
            outcome b = co_await drain(m2, ask("b"));
            BOOST_TEST(a.final.text() == "same");
            BOOST_TEST(b.final.text() == "same");
        }
    });
    BOOST_TEST(srv.connections_accepted() == 1u);
    BOOST_TEST(srv.request_count() == 6u);
}

BOOST_AUTO_TEST_CASE(over_fake_transport_in_one_byte_reads) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    const std::string sse = llm_test::render_openai({.text = {"by", "te"}}, false);
    fake.push(lh::fake_response::chunked(200, sse, 1));
    lb::openai_model<lh::fake_transport> m(fake, {.base_url = "http://fake/v1", .model = "m"}, fast());
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(m, ask("hi"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "byte");
    });
    BOOST_REQUIRE(fake.requests().size() == 1u);
    BOOST_TEST(fake.requests()[0].url == "http://fake/v1/chat/completions");
}

// Content negotiation: the reply's first bytes decide its form, whatever was asked and
// whatever its content-type says; read one byte at a time, so that the decision waits.
struct negotiation_fixture {
    asio::io_context io;
    lh::fake_transport fake{io.get_executor()};

    template <class Model>
    lb::llm_response reply(Model m, unsigned status, std::string_view body, std::string_view content_type,
                           std::size_t chunk = 1) {
        fake.push(lh::fake_response::chunked(status, body, chunk, {{"content-type", std::string(content_type)}}));
        lb::llm_response out;
        run(io, [&]() -> asio::awaitable<void> {
            outcome o = co_await drain(m, ask("hi"));
            out = std::move(o.final);
        });
        io.restart();
        return out;
    }
    lb::openai_model<lh::fake_transport> openai(bool stream = true, lb::provider_http_options o = fast()) {
        return {fake, {.base_url = "http://fake/v1", .model = "m", .stream = stream}, o};
    }
    lb::anthropic_model<lh::fake_transport> anthropic(lb::provider_http_options o = fast()) {
        return {fake, {.base_url = "http://fake", .model = "claude"}, o};
    }
};

// The body of a server that ignores stream: true (or answers stream: false).
constexpr std::string_view openai_whole_body =
    R"({"id":"chatcmpl-1","object":"chat.completion","model":"m-1","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":"whole answer"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})";

BOOST_FIXTURE_TEST_CASE(a_whole_json_reply_is_decoded_whatever_was_asked, negotiation_fixture) {
    for (bool stream : {true, false}) {
        BOOST_TEST_CONTEXT("stream " << stream) {
            auto r = reply(openai(stream), 200, openai_whole_body, "application/json");
            BOOST_TEST_REQUIRE(r.ok(), r.error_message);
            BOOST_TEST((r.reply == lb::reply_kind::whole));
            BOOST_TEST(r.text() == "whole answer");
            BOOST_TEST(r.model_version == "m-1");
            BOOST_REQUIRE(r.usage.has_value());
            BOOST_TEST(r.usage->output_tokens == 2);
        }
    }
    // The request said which form it wanted.
    const auto sent = fake.requests();
    auto accept = [&](std::size_t i) {
        for (const auto& h : sent[i].headers)
            if (h.name == "accept") return h.value;
        return std::string();
    };
    BOOST_TEST(accept(0) == "text/event-stream");
    BOOST_TEST(accept(1) == "application/json");
    // White space and a BOM before the body, read in one piece.
    auto spaced = reply(openai(), 200, "\xEF\xBB\xBF \r\n" + std::string(openai_whole_body), "application/json", 0);
    BOOST_TEST_REQUIRE(spaced.ok(), spaced.error_message);
    BOOST_TEST(spaced.text() == "whole answer");
}

BOOST_FIXTURE_TEST_CASE(the_bytes_decide_not_the_content_type, negotiation_fixture) {
    const std::string sse = llm_test::render_openai({.text = {"stre", "am"}}, false);
    auto mislabelled = reply(openai(false), 200, sse, "application/json");
    BOOST_TEST_REQUIRE(mislabelled.ok(), mislabelled.error_message);
    BOOST_TEST((mislabelled.reply == lb::reply_kind::streamed));
    BOOST_TEST(mislabelled.text() == "stream");
    auto json_as_sse = reply(openai(), 200, openai_whole_body, "text/event-stream");
    BOOST_TEST_REQUIRE(json_as_sse.ok(), json_as_sse.error_message);
    BOOST_TEST((json_as_sse.reply == lb::reply_kind::whole));
    auto comment_first = reply(openai(), 200, ": keep-alive\n\n" + sse, "text/event-stream");
    BOOST_TEST(comment_first.text() == "stream");
}

BOOST_FIXTURE_TEST_CASE(a_reply_that_is_neither_is_a_bad_response_not_retried, negotiation_fixture) {
    auto html = reply(openai(), 200, "<html><body>Gateway login</body></html>", "text/html");
    BOOST_TEST((html.error == lb::errc::bad_response));
    BOOST_TEST(!lb::is_transient(html.error));
    BOOST_TEST(html.error_message ==
               "the reply is neither an SSE stream nor a JSON body (content-type text/html): <html><body>Gateway login</body></html>");
    BOOST_TEST(fake.requests().size() == 1u); // not retried
    auto empty = reply(openai(), 200, "", "");
    BOOST_TEST((empty.error == lb::errc::bad_response));
    BOOST_TEST(empty.error_message == "the reply body is empty (no content-type): expected an SSE stream or a JSON body");
    auto blank = reply(anthropic(), 200, " \n\n ", "text/event-stream");
    BOOST_TEST((blank.error == lb::errc::bad_response));
    auto text = reply(openai(), 200, "dat", "text/plain"); // a field name's prefix, then the end
    BOOST_TEST((text.error == lb::errc::bad_response));
    BOOST_TEST(text.error_message.find(": dat") != std::string::npos, text.error_message);
    BOOST_TEST(fake.requests().size() == 4u);
}

BOOST_FIXTURE_TEST_CASE(whole_replies_are_bounded_and_errors_in_them_classified, negotiation_fixture) {
    lb::provider_http_options small = fast();
    small.max_event_size = 100;
    auto big = reply(openai(true, small), 200, openai_whole_body, "application/json", 16);
    BOOST_TEST((big.error == lb::errc::bad_response));
    BOOST_TEST(big.error_message == "the JSON reply exceeds max_event_size (100 bytes)");
    // A 200 whose body is an error object (a few proxies do this).
    auto overflow = reply(openai(), 200,
                          R"({"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}})",
                          "application/json");
    BOOST_TEST((overflow.error == lb::errc::context_overflow));
    BOOST_TEST((overflow.reply == lb::reply_kind::whole));
    auto garbage = reply(openai(), 200, "{\"choices\": [", "application/json");
    BOOST_TEST((garbage.error == lb::errc::bad_response));
    BOOST_TEST(garbage.error_message.find("OpenAI response is not valid JSON") == 0u, garbage.error_message);
    BOOST_TEST(fake.requests().size() == 3u);
}

BOOST_FIXTURE_TEST_CASE(anthropic_takes_a_whole_message_too, negotiation_fixture) {
    auto r = reply(anthropic(), 200,
                   R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"whole"}],)"
                   R"("stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":1}})",
                   "application/json");
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    BOOST_TEST((r.reply == lb::reply_kind::whole));
    BOOST_TEST(r.text() == "whole");
}

// Errors inside a 200 stream, in the bytes each server writes (the comment names where).
BOOST_FIXTURE_TEST_CASE(stream_errors_as_the_servers_write_them, negotiation_fixture) {
    const std::string role = R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]})" "\n\n";
    // Older llama.cpp server (examples/server/utils.hpp server_sent_event(sink, "error", ...)):
    // an `error:` line with the bare error object, then data: [DONE]. Not an empty success.
    auto old_llama = reply(openai(), 200,
                           role + R"(error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"})"
                                  "\n\ndata: [DONE]\n\n",
                           "text/event-stream");
    BOOST_TEST((old_llama.error == lb::errc::context_overflow));
    BOOST_TEST(old_llama.error_message.find("the request exceeds the available context size") != std::string::npos,
               old_llama.error_message);
    BOOST_TEST(old_llama.text() == "Hi"); // what arrived before the error is kept
    // Current llama.cpp server (tools/server/server-context.cpp, format_oai_sse({"error": ...})):
    // the error as a data chunk, and no [DONE].
    auto new_llama = reply(openai(), 200,
                           role + R"(data: {"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}})" "\n\n",
                           "text/event-stream");
    BOOST_TEST((new_llama.error == lb::errc::context_overflow));
    BOOST_TEST(new_llama.error_message == "provider error (server_error): Context size has been exceeded.");
    // vLLM (serving_chat.py create_streaming_error_response, json.dumps spacing), then [DONE].
    auto vllm = reply(openai(), 200,
                      role + R"(data: {"error": {"object": "error", "message": "The server had an error", "type": "InternalServerError", "param": null, "code": 500}})"
                             "\n\ndata: [DONE]\n\n",
                      "text/event-stream");
    BOOST_TEST((vllm.error == lb::errc::transient));
    BOOST_TEST(vllm.error_message.find("The server had an error") != std::string::npos, vllm.error_message);
    // llama.cpp's /v1/messages (format_anthropic_sse({"event": "error", "data": ...})): the
    // bare object, whose "type" is not the event's name. Not "ended before message_stop".
    auto anthropic_llama = reply(anthropic(), 200,
                                 "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
                                 "event: error\ndata: {\"code\":400,\"message\":\"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it\",\"type\":\"exceed_context_size_error\"}\n\n",
                                 "text/event-stream");
    BOOST_TEST((anthropic_llama.error == lb::errc::context_overflow));
    BOOST_TEST(anthropic_llama.error_message ==
               "provider error (exceed_context_size_error): request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it");
    // Anthropic's own error event, for comparison.
    auto overloaded = reply(anthropic(fast(1)), 200,
                            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
                            "text/event-stream");
    BOOST_TEST((overloaded.error == lb::errc::transient));
}

// A refusal arrives as the answer's text with finish_reason::refusal (openai-python
// chat_completion_chunk.py ChoiceDelta.refusal, chat_completion_message.py refusal).
BOOST_FIXTURE_TEST_CASE(a_refusal_is_marked_as_one, negotiation_fixture) {
    auto streamed = reply(openai(), 200,
                          R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""}}]})" "\n\n"
                          R"(data: {"choices":[{"index":0,"delta":{"refusal":"I can't help "}}]})" "\n\n"
                          R"(data: {"choices":[{"index":0,"delta":{"refusal":"with that."}}]})" "\n\n"
                          R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" "\n\ndata: [DONE]\n\n",
                          "text/event-stream");
    BOOST_TEST_REQUIRE(streamed.ok(), streamed.error_message);
    BOOST_TEST(streamed.text() == "I can't help with that.");
    BOOST_TEST((streamed.finish == lb::finish_reason::refusal));
    auto whole = reply(openai(false), 200,
                       R"({"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"stop"}]})",
                       "application/json");
    BOOST_TEST_REQUIRE(whole.ok(), whole.error_message);
    BOOST_TEST(whole.text() == "No.");
    BOOST_TEST((whole.finish == lb::finish_reason::refusal));
    auto plain = reply(openai(false), 200, openai_whole_body, "application/json");
    BOOST_TEST((plain.finish == lb::finish_reason::stop));
    auto anthropic_refusal = reply(anthropic(), 200,
                                   R"({"content":[{"type":"text","text":"No."}],"stop_reason":"refusal","usage":{"input_tokens":4,"output_tokens":1}})",
                                   "application/json");
    BOOST_TEST((anthropic_refusal.finish == lb::finish_reason::refusal));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(anthropic_model_suite)

BOOST_FIXTURE_TEST_CASE(streams_thinking_text_and_tool_use, anthropic_fixture) {
    srv.push(llm_test::anthropic_stream({.text = {"Let me ", "check."},
                                         .thinking = {"The user ", "wants weather."},
                                         .tool_calls = {{"toolu_1", "get_weather", {"{\"city\":", " \"Oslo\"}"}}},
                                         .input_tokens = 25,
                                         .output_tokens = 15})
                 .in_random_pieces(23, 3));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("weather?"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "Let me check.");
        BOOST_TEST(o.final.thinking() == "The user wants weather.");
        std::vector<lb::tool_call_part> calls(o.final.tool_calls().begin(), o.final.tool_calls().end());
        BOOST_REQUIRE(calls.size() == 1u);
        BOOST_TEST(calls[0].tool_call_id == "toolu_1");
        BOOST_TEST(calls[0].args.at("city").as_string() == "Oslo");
        BOOST_TEST(o.final.finish == lb::finish_reason::tool_calls);
        BOOST_REQUIRE(o.final.usage.has_value());
        BOOST_TEST(o.final.usage->input_tokens == 25);
        BOOST_TEST(o.final.usage->output_tokens == 15);
    });
    auto reqs = srv.requests();
    BOOST_REQUIRE(reqs.size() == 1u);
    BOOST_TEST(reqs[0].target == "/v1/messages");
    BOOST_TEST(reqs[0].header("x-api-key") == "ak-test");
    BOOST_TEST(!reqs[0].header("anthropic-version").empty());
    BOOST_TEST(reqs[0].json().at("model").as_string() == "claude-test");
}

BOOST_FIXTURE_TEST_CASE(overloaded_529_and_500_are_retried, anthropic_fixture) {
    srv.push(llm_test::server_error(protocol::anthropic, 529));
    srv.push(llm_test::server_error(protocol::anthropic, 500));
    srv.push(llm_test::rate_limited(protocol::anthropic, 0));
    srv.push(llm_test::anthropic_stream({.text = {"fine"}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "fine");
    });
    BOOST_TEST(srv.request_count() == 4u);
}

BOOST_FIXTURE_TEST_CASE(prompt_too_long_is_context_overflow, anthropic_fixture) {
    srv.push(llm_test::context_overflow(protocol::anthropic));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("long"));
        BOOST_TEST(o.final.error == lb::errc::context_overflow);
        BOOST_TEST(o.final.error_message.find("prompt is too long") != std::string::npos);
    });
    BOOST_TEST(srv.request_count() == 1u);
}

BOOST_FIXTURE_TEST_CASE(unauthorized_is_auth_failed, anthropic_fixture) {
    srv.push(llm_test::unauthorized(protocol::anthropic));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(o.final.error == lb::errc::auth_failed);
    });
}

BOOST_FIXTURE_TEST_CASE(error_event_mid_stream, anthropic_fixture) {
    srv.push(llm_test::anthropic_stream({.text = {"par", "tial"}, .error = llm_test::stream_error{}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST(o.final.error == lb::errc::transient); // overloaded_error
        BOOST_TEST(delta_text(o) == "partial");
    });
    BOOST_TEST(srv.request_count() == 1u);
}

BOOST_FIXTURE_TEST_CASE(error_event_before_any_delta_is_retried, anthropic_fixture) {
    srv.push(llm_test::anthropic_stream({.error = llm_test::stream_error{}}));
    srv.push(llm_test::anthropic_stream({.text = {"recovered"}}));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(), ask("hi"));
        BOOST_TEST_REQUIRE(o.final.ok(), o.final.error_message);
        BOOST_TEST(o.final.text() == "recovered");
    });
    BOOST_TEST(srv.request_count() == 2u);
}

BOOST_FIXTURE_TEST_CASE(stream_ending_without_message_stop_is_an_error, anthropic_fixture) {
    auto r = llm_test::anthropic_stream({.text = {"cut ", "here"}});
    const std::string full = llm_test::render_anthropic(*r.stream);
    // A clean end of the HTTP body right after an event: only the decoder can tell.
    auto clean = llm_test::text_reply(full.substr(0, full.find("event: message_delta")));
    clean.proto = protocol::anthropic;
    srv.push(std::move(clean));
    run(io, [&]() -> asio::awaitable<void> {
        outcome o = co_await drain(model(fast(1)), ask("hi"));
        BOOST_TEST(!o.final.ok());
        BOOST_TEST(o.final.error == lb::errc::bad_response);
        BOOST_TEST(o.final.text() == "cut here");
    });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(retry_options_suite)

BOOST_AUTO_TEST_CASE(next_delay_keeps_no_delay_and_caps_without_nan) {
    // initial_delay 0 once became max_delay: 0 x pow(1e300, n) = 0 x inf = NaN, and
    // std::min(cap, NaN) is the cap (attempt 3 gave 30000 ms).
    std::mt19937 rng(7);
    for (auto jitter : {lb::retry_jitter::none, lb::retry_jitter::full, lb::retry_jitter::equal,
                        lb::retry_jitter::decorrelated}) {
        const lb::retry_options zero{.max_attempts = 1000, .initial_delay = 0ms, .multiplier = 1e300, .jitter = jitter};
        BOOST_TEST(lb::check(zero).empty());
        for (std::size_t attempt : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{999}}) {
            auto d = lb::next_delay(zero, attempt, std::nullopt, rng);
            BOOST_TEST_REQUIRE(d.has_value());
            BOOST_TEST(d->count() == 0, "attempt " << attempt);
        }
    }
    // A growth past double's range, and many attempts at x2, are the cap.
    const lb::retry_options huge{.max_attempts = 5000, .initial_delay = 1ms, .multiplier = 1e300,
                                 .max_delay = 30'000ms, .jitter = lb::retry_jitter::none};
    BOOST_TEST(lb::next_delay(huge, 1, std::nullopt, rng)->count() == 1);
    BOOST_TEST(lb::next_delay(huge, 3, std::nullopt, rng)->count() == 30'000);
    const lb::retry_options many{.max_attempts = 5000, .initial_delay = 500ms, .jitter = lb::retry_jitter::none};
    BOOST_TEST(lb::next_delay(many, 4000, std::nullopt, rng)->count() == 30'000);
    BOOST_TEST(lb::next_delay(many, 2, std::nullopt, rng)->count() == 1000);
}

BOOST_AUTO_TEST_CASE(provider_models_refuse_retry_options_check_refuses) {
    asio::io_context io;
    lh::fake_transport fake(io.get_executor());
    auto refused = [&](lb::provider_http_options http, std::string_view member) {
        std::string openai_what, anthropic_what;
        bool openai_invalid = false, anthropic_invalid = false;
        try {
            lb::openai_model<lh::fake_transport> m(fake, {.base_url = "http://fake/v1", .model = "m"}, http);
        } catch (const boost::system::system_error& e) {
            openai_invalid = e.code() == lb::errc::invalid_argument;
            openai_what = e.what();
        }
        try {
            lb::anthropic_model<lh::fake_transport> m(fake, {.base_url = "http://fake/v1", .model = "m"}, http);
        } catch (const boost::system::system_error& e) {
            anthropic_invalid = e.code() == lb::errc::invalid_argument;
            anthropic_what = e.what();
        }
        BOOST_TEST(openai_invalid, member << ": " << openai_what);
        BOOST_TEST(anthropic_invalid, member << ": " << anthropic_what);
        BOOST_TEST(openai_what.find("openai_model: provider_http_options::retry." + std::string(member)) !=
                       std::string::npos,
                   openai_what);
        BOOST_TEST(anthropic_what.find("anthropic_model: provider_http_options::retry." + std::string(member)) !=
                       std::string::npos,
                   anthropic_what);
    };
    lb::provider_http_options nan = fast();
    nan.retry.multiplier = std::numeric_limits<double>::quiet_NaN();
    refused(nan, "multiplier must be a finite number >= 1");
    lb::provider_http_options inf = fast();
    inf.retry.multiplier = std::numeric_limits<double>::infinity();
    refused(inf, "multiplier must be a finite number >= 1");
    lb::provider_http_options shrinking = fast();
    shrinking.retry.multiplier = 0.5;
    refused(shrinking, "multiplier must be a finite number >= 1");
    lb::provider_http_options negative = fast();
    negative.retry.initial_delay = -1ms;
    refused(negative, "initial_delay must not be negative");
    lb::provider_http_options none = fast();
    none.retry.max_attempts = 0;
    refused(none, "max_attempts must be at least 1");
    // Good options, the defaults among them, make a model.
    const lb::openai_options openai{.base_url = "http://fake/v1", .model = "m"};
    const lb::anthropic_options anthropic{.base_url = "http://fake/v1", .model = "m"};
    BOOST_CHECK_NO_THROW(lb::openai_model<lh::fake_transport>(fake, openai));
    BOOST_CHECK_NO_THROW(lb::anthropic_model<lh::fake_transport>(fake, anthropic, fast()));
}

BOOST_AUTO_TEST_SUITE_END()
