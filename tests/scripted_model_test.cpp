// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/model/scripted_model.hpp>

#include <libretto/event/filters.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>

#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;
using lb::llm_chunk;
using lb::llm_request;
using lb::llm_response;
using lb::scripted_model;
using lb::scripted_reply;

namespace {

/// Runs `test()` as a coroutine in a fresh io_context; rethrows what escaped it.
template <class Test>
void run(asio::io_context& io, Test test) {
    std::exception_ptr failure;
    bool finished = false;
    asio::co_spawn(io, test(), [&](std::exception_ptr ep) {
        failure = ep;
        finished = true;
    });
    io.restart();
    io.run();
    BOOST_REQUIRE(finished);
    if (failure) std::rethrow_exception(failure);
}

/// Every chunk of one generation.
asio::awaitable<std::vector<llm_chunk>> drain(scripted_model m, llm_request r) {
    lb::llm_stream s = m.generate(std::move(r));
    std::vector<llm_chunk> out;
    for (;;) {
        std::optional<llm_chunk> c = co_await s.next();
        if (!c) break;
        out.push_back(std::move(*c));
    }
    co_return out;
}

llm_request ask(std::string text) {
    llm_request r;
    r.messages.push_back(lb::message::user(std::move(text)));
    return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(scripted_model_tests)

BOOST_AUTO_TEST_CASE(models_the_concept) {
    static_assert(lb::model<scripted_model>);
    asio::io_context io;
    scripted_model m{io.get_executor()};
    BOOST_TEST(m.name() == "scripted");
    scripted_model named{io.get_executor(), {}, "fake-gpt"};
    BOOST_TEST(named.name() == "fake-gpt");
    BOOST_TEST((m.get_executor() == asio::any_io_executor(io.get_executor())));
}

BOOST_AUTO_TEST_CASE(a_text_reply_in_one_chunk) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("Hello!")}};
    run(io, [&]() -> asio::awaitable<void> {
        std::vector<llm_chunk> chunks = co_await drain(m, ask("hi"));
        // text delta, the tail (version, usage, finish), the final chunk
        BOOST_REQUIRE(chunks.size() == 3u);
        BOOST_TEST(chunks[0].text == "Hello!");
        BOOST_TEST(chunks[1].model_version == "scripted");
        BOOST_TEST(chunks[2].is_final());
        const llm_response& r = *chunks[2].final;
        BOOST_TEST(r.ok());
        BOOST_TEST(r.text() == "Hello!");
        BOOST_TEST(r.finish == lb::finish_reason::stop);
        BOOST_TEST(r.model_version == "scripted");
        BOOST_TEST(!r.usage.has_value());
    });
}

BOOST_AUTO_TEST_CASE(a_text_reply_streamed_in_chunks_splits_on_characters) {
    asio::io_context io;
    // "Grüße!" is 8 bytes; 3 pieces of about 3 bytes, never inside "ü" or "ß".
    scripted_model m{io.get_executor(), {scripted_reply::text("Grüße!").in_chunks(3).with_usage(10, 4)}};
    run(io, [&]() -> asio::awaitable<void> {
        std::vector<llm_chunk> chunks = co_await drain(m, ask("greet"));
        std::vector<std::string> deltas;
        for (const auto& c : chunks)
            if (!c.text.empty()) deltas.push_back(c.text);
        BOOST_TEST(deltas == (std::vector<std::string>{"Grü", "ße", "!"}), boost::test_tools::per_element());
        const llm_response& r = *chunks.back().final;
        BOOST_TEST(r.text() == "Grüße!");
        BOOST_REQUIRE(r.usage.has_value());
        BOOST_TEST(r.usage->input_tokens == 10);
        BOOST_TEST(r.usage->output_tokens == 4);
    });
}

BOOST_AUTO_TEST_CASE(split_utf8_pieces) {
    using lb::detail::split_utf8;
    BOOST_TEST(split_utf8("", 3).empty());
    BOOST_TEST(split_utf8("abcdef", 2) == (std::vector<std::string>{"abc", "def"}), boost::test_tools::per_element());
    BOOST_TEST(split_utf8("abcdefg", 3) == (std::vector<std::string>{"abc", "def", "g"}),
               boost::test_tools::per_element());
    BOOST_TEST(split_utf8("ab", 5) == (std::vector<std::string>{"a", "b"}), boost::test_tools::per_element());
    BOOST_TEST(split_utf8("€€", 6) == (std::vector<std::string>{"€", "€"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(tool_calls_thinking_and_generated_ids) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::tool_call("get_weather", {{"city", "Oslo"}})
                          .with_tool_call("get_time", {{"tz", "CET"}}, "my-id")
                          .with_thinking("two lookups")
                          .with_text("Checking."),
                      scripted_reply::tool_call("get_weather", {{"city", "Rome"}}).in_chunks(4)}};
    run(io, [&]() -> asio::awaitable<void> {
        std::vector<llm_chunk> first = co_await drain(m, ask("weather and time"));
        const llm_response& r = *first.back().final;
        BOOST_TEST(r.thinking() == "two lookups");
        BOOST_TEST(r.text() == "Checking.");
        BOOST_TEST(r.finish == lb::finish_reason::tool_calls);
        BOOST_REQUIRE(r.tool_calls().size() == 2u);
        auto it = r.tool_calls().begin();
        BOOST_TEST(it->tool_call_id == "call_1");
        BOOST_TEST(it->tool_name == "get_weather");
        BOOST_TEST(json::value(it->args) == json::parse(R"({"city":"Oslo"})"));
        ++it;
        BOOST_TEST(it->tool_call_id == "my-id");
        BOOST_TEST(json::value(it->args) == json::parse(R"({"tz":"CET"})"));

        // The second reply's arguments arrive in 4 fragments of one call.
        std::vector<llm_chunk> second = co_await drain(m, ask("and Rome?"));
        std::size_t fragments = 0;
        for (const auto& c : second) fragments += c.tool_calls.size();
        BOOST_TEST(fragments == 4u); // {"city":"Rome"} is 15 bytes: 4+4+4+3
        const llm_response& r2 = *second.back().final;
        BOOST_REQUIRE(r2.tool_calls().size() == 1u);
        BOOST_TEST(r2.tool_calls().front().tool_call_id == "call_2"); // counted across replies
        BOOST_TEST(json::value(r2.tool_calls().front().args) == json::parse(R"({"city":"Rome"})"));
    });
}

BOOST_AUTO_TEST_CASE(a_raw_tool_call_with_invalid_json_is_reported) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::raw_tool_call("get_weather", "{city: Oslo}", "c7")}};
    run(io, [&]() -> asio::awaitable<void> {
        llm_response r = co_await lb::generate_response(m, ask("x"));
        BOOST_TEST(r.ok());
        BOOST_TEST(r.tool_calls().empty());
        BOOST_REQUIRE(r.invalid_tool_calls.size() == 1u);
        BOOST_TEST(r.invalid_tool_calls[0].error.starts_with("tool call 'get_weather' (id c7): arguments are not valid JSON"));
    });
}

BOOST_AUTO_TEST_CASE(error_replies_end_the_stream_with_a_failed_response) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::context_overflow(),
                      scripted_reply::transient("429 Too Many Requests", std::chrono::milliseconds(2000)),
                      scripted_reply::bad_response(), scripted_reply::auth_failed(),
                      scripted_reply::error(lb::errc::model_error, "HTTP 400: bad tool schema"),
                      scripted_reply::error(lb::errc::io_error)}};
    run(io, [&]() -> asio::awaitable<void> {
        std::vector<llm_chunk> chunks = co_await drain(m, ask("1"));
        BOOST_REQUIRE(chunks.size() == 1u); // the final chunk alone
        const llm_response& overflow = *chunks[0].final;
        BOOST_TEST((overflow.error == lb::errc::context_overflow));
        BOOST_TEST(overflow.error_message == "prompt is too long for the context window");
        BOOST_TEST(overflow.finish == lb::finish_reason::error);
        BOOST_TEST(!lb::is_transient(overflow.error));

        llm_response transient = co_await lb::generate_response(m, ask("2"));
        BOOST_TEST((transient.error == lb::errc::transient));
        BOOST_TEST(lb::is_transient(transient.error));
        BOOST_TEST(transient.error_message == "429 Too Many Requests");
        BOOST_TEST(transient.retry_after.value_or(std::chrono::milliseconds(0)).count() == 2000);

        llm_response bad = co_await lb::generate_response(m, ask("3"));
        BOOST_TEST((bad.error == lb::errc::bad_response));
        BOOST_TEST(bad.error_message == "the reply is not valid JSON");

        llm_response auth = co_await lb::generate_response(m, ask("4"));
        BOOST_TEST((auth.error == lb::errc::auth_failed));
        BOOST_TEST(auth.error_message == "invalid API key (401)");

        llm_response other = co_await lb::generate_response(m, ask("5"));
        BOOST_TEST((other.error == lb::errc::model_error));
        BOOST_TEST(other.error_message == "HTTP 400: bad tool schema");

        // Without a message, the code's own.
        llm_response io_err = co_await lb::generate_response(m, ask("6"));
        BOOST_TEST(io_err.error_message == "I/O error");
        BOOST_TEST(io_err.model_version == "scripted");
    });
}

BOOST_AUTO_TEST_CASE(requests_are_recorded_and_shared_by_copies) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("one"), scripted_reply::text("two")}};
    BOOST_TEST(m.request_count() == 0u);
    BOOST_CHECK_THROW(m.last_request(), boost::system::system_error);
    scripted_model agent_copy = m; // what an agent would hold
    run(io, [&]() -> asio::awaitable<void> {
        llm_request r = ask("first question");
        r.system_instruction = "Be brief.";
        r.tools.push_back(lb::tool_declaration{.name = "clock", .description = "Current time"});
        r.options.temperature = 0.5;
        llm_response a = co_await lb::generate_response(agent_copy, std::move(r));
        BOOST_TEST(a.text() == "one");
        llm_response b = co_await lb::generate_response(agent_copy, ask("second question"));
        BOOST_TEST(b.text() == "two");
    });
    // The test's copy sees what the agent's copy was sent, in order.
    BOOST_TEST(m.request_count() == 2u);
    BOOST_TEST(m.remaining() == 0u);
    BOOST_TEST(m.scripted() == 2u);
    auto all = m.requests();
    BOOST_REQUIRE(all.size() == 2u);
    BOOST_TEST(all[0].system_instruction == "Be brief.");
    BOOST_TEST(all[0].tools.at(0).name == "clock");
    BOOST_TEST(all[0].options.temperature.value_or(0) == 0.5);
    BOOST_TEST(all[0].messages.at(0).text() == "first question");
    BOOST_TEST(m.last_request().messages.at(0).text() == "second question");
    BOOST_TEST(m.request_at(0).messages.at(0).text() == "first question");
    try {
        (void)m.request_at(2);
        BOOST_FAIL("request_at past the end must throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::not_found));
        BOOST_TEST(std::string(e.what()).find("request #3 asked for, 2 were sent") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_CASE(keep_requests_bounds_the_record_and_still_counts_every_request) {
    asio::io_context io;
    std::vector<scripted_reply> script;
    for (int i = 0; i < 5; ++i) script.push_back(scripted_reply::text("r" + std::to_string(i)));
    script.push_back(scripted_reply::computed([](const llm_request& r) {
        return scripted_reply::text("computed saw " + r.messages.back().text()); // needs no record
    }));
    scripted_model m{io.get_executor(), std::move(script)};
    scripted_model agent_copy = m;
    m.keep_requests(2);
    auto not_found_text = [&](std::size_t i) {
        try {
            (void)m.request_at(i);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::not_found));
            return std::string(e.what());
        }
        return std::string("(no throw)");
    };
    run(io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 5; ++i) {
            llm_response a = co_await lb::generate_response(agent_copy, ask("q" + std::to_string(i)));
            BOOST_TEST(a.text() == "r" + std::to_string(i));
        }
    });
    BOOST_TEST(m.request_count() == 5u);
    auto kept = m.requests();
    BOOST_REQUIRE(kept.size() == 2u);
    BOOST_TEST(kept[0].messages.at(0).text() == "q3");
    BOOST_TEST(kept[1].messages.at(0).text() == "q4");
    BOOST_TEST(m.request_at(3).messages.at(0).text() == "q3"); // numbered as sent, not as kept
    BOOST_TEST(m.last_request().messages.at(0).text() == "q4");
    BOOST_TEST(not_found_text(0).find("request #1 is no longer kept (keep_requests(2))") != std::string::npos,
               not_found_text(0));
    BOOST_TEST(not_found_text(5).find("request #6 asked for, 5 were sent") != std::string::npos, not_found_text(5));

    // Shrinking drops the oldest at once; 0 keeps none, and a computed reply still sees
    // its request.
    m.keep_requests(0);
    BOOST_TEST(m.requests().empty());
    run(io, [&]() -> asio::awaitable<void> {
        llm_response a = co_await lb::generate_response(agent_copy, ask("q5"));
        BOOST_TEST(a.text() == "computed saw q5");
    });
    BOOST_TEST(m.request_count() == 6u);
    BOOST_TEST(m.requests().empty());
    try {
        (void)m.last_request();
        BOOST_FAIL("last_request with none kept must throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(std::string(e.what()).find("6 requests were sent, none is kept (keep_requests(0))") !=
                       std::string::npos,
                   e.what());
    }
}

BOOST_AUTO_TEST_CASE(running_out_of_script_names_the_count) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("a"), scripted_reply::text("b")}};
    std::string what;
    run(io, [&]() -> asio::awaitable<void> {
        (void)co_await lb::generate_response(m, ask("1"));
        (void)co_await lb::generate_response(m, ask("2"));
        try {
            (void)co_await lb::generate_response(m, ask("3"));
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::model_error));
            what = e.what();
        }
    });
    BOOST_TEST(what.find("scripted_model: script exhausted: request #3 but only 2 replies were scripted") !=
                   std::string::npos,
               what);
    // The request that found no reply is still recorded.
    BOOST_TEST(m.request_count() == 3u);
    BOOST_TEST(m.last_request().messages.at(0).text() == "3");

    // One scripted reply: singular.
    scripted_model one{io.get_executor(), {scripted_reply::text("only")}};
    std::string what1;
    run(io, [&]() -> asio::awaitable<void> {
        (void)co_await lb::generate_response(one, ask("1"));
        try {
            (void)co_await lb::generate_response(one, ask("2"));
        } catch (const boost::system::system_error& e) {
            what1 = e.what();
        }
    });
    BOOST_TEST(what1.find("request #2 but only 1 reply was scripted") != std::string::npos, what1);

    // An empty script.
    scripted_model none{io.get_executor()};
    std::string what0;
    run(io, [&]() -> asio::awaitable<void> {
        try {
            (void)co_await lb::generate_response(none, ask("1"));
        } catch (const boost::system::system_error& e) {
            what0 = e.what();
        }
    });
    BOOST_TEST(what0.find("request #1 but only 0 replies were scripted") != std::string::npos, what0);
}

BOOST_AUTO_TEST_CASE(then_appends_to_the_script) {
    asio::io_context io;
    scripted_model m{io.get_executor()};
    scripted_model copy = m;
    copy.then(scripted_reply::text("late")).then(scripted_reply::thinking("hmm"));
    BOOST_TEST(m.scripted() == 2u);
    BOOST_TEST(m.remaining() == 2u);
    run(io, [&]() -> asio::awaitable<void> {
        llm_response a = co_await lb::generate_response(m, ask("?"));
        BOOST_TEST(a.text() == "late");
        llm_response b = co_await lb::generate_response(m, ask("?"));
        BOOST_TEST(b.text().empty());
        BOOST_TEST(b.thinking() == "hmm");
    });
    BOOST_TEST(m.remaining() == 0u);
}

BOOST_AUTO_TEST_CASE(a_computed_reply_sees_the_request) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::computed([](const llm_request& r) {
                          // Echo the last message, and say how many tools were offered.
                          return scripted_reply::text("echo: " + r.messages.back().text() + " (" +
                                                      std::to_string(r.tools.size()) + " tools)");
                      }),
                      scripted_reply::computed([](const llm_request& r) {
                          if (r.messages.size() > 1) return scripted_reply::context_overflow("too many messages");
                          return scripted_reply::text("fits");
                      })}};
    run(io, [&]() -> asio::awaitable<void> {
        llm_request r = ask("ping");
        r.tools.push_back(lb::tool_declaration{.name = "a"});
        r.tools.push_back(lb::tool_declaration{.name = "b"});
        llm_response a = co_await lb::generate_response(m, std::move(r));
        BOOST_TEST(a.text() == "echo: ping (2 tools)");

        llm_request big = ask("one");
        big.messages.push_back(lb::message::assistant("two"));
        llm_response b = co_await lb::generate_response(m, std::move(big));
        BOOST_TEST((b.error == lb::errc::context_overflow));
        BOOST_TEST(b.error_message == "too many messages");
    });
}

BOOST_AUTO_TEST_CASE(a_computed_reply_that_throws_fails_the_stream_not_generate) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::computed([](const llm_request&) -> scripted_reply {
                         throw std::runtime_error("the test's function failed");
                     })}};
    std::string what;
    std::optional<lb::llm_stream> s;
    BOOST_CHECK_NO_THROW(s.emplace(m.generate(ask("x"))));
    run(io, [&]() -> asio::awaitable<void> {
        try {
            (void)co_await s->next();
        } catch (const std::runtime_error& e) {
            what = e.what();
        }
    });
    BOOST_TEST(what == "the test's function failed");
    BOOST_TEST(m.request_count() == 1u);
}

namespace {
/// `n` computed replies, each returning the next, the last a text.
scripted_reply computed_chain(std::size_t n) {
    if (n == 0) return scripted_reply::text("settled");
    return scripted_reply::computed([n](const llm_request&) { return computed_chain(n - 1); });
}
} // namespace

BOOST_AUTO_TEST_CASE(a_computed_chain_deeper_than_the_limit_fails_the_stream) {
    // 17 computed replies in a row once played an empty answer without a word; 16
    // (scripted_reply::max_computed_depth) still settle.
    asio::io_context io;
    scripted_model m{io.get_executor(), {computed_chain(16), computed_chain(17)}};
    std::string text;
    std::string what;
    bool model_error = false;
    run(io, [&]() -> asio::awaitable<void> {
        llm_request first = ask("1");
        auto settled = lb::generate_response(m, std::move(first));
        llm_response a = co_await std::move(settled);
        text = a.text();
        llm_request second = ask("2");
        auto deep = lb::generate_response(m, std::move(second));
        try {
            (void)co_await std::move(deep);
        } catch (const boost::system::system_error& e) {
            model_error = e.code() == lb::errc::model_error;
            what = e.what();
        }
    });
    BOOST_TEST(text == "settled"); // 16 is the limit, not past it
    BOOST_TEST(model_error, what);
    BOOST_TEST(what.find("scripted_model: request #2: computed replies nest deeper than 16") != std::string::npos, what);
    BOOST_TEST(m.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(finish_reason_and_model_version_overrides) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::text("cut off mid-sen")
                          .with_finish(lb::finish_reason::length)
                          .with_model_version("scripted-2024-01")}};
    run(io, [&]() -> asio::awaitable<void> {
        llm_response r = co_await lb::generate_response(m, ask("long story"));
        BOOST_TEST(r.finish == lb::finish_reason::length);
        BOOST_TEST(r.model_version == "scripted-2024-01");
        BOOST_TEST(r.ok());
    });
}

BOOST_AUTO_TEST_CASE(async_generate_response_takes_a_completion_token) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("via a future")}};
    std::future<llm_response> f = lb::async_generate_response(m, ask("x"), asio::use_future);
    io.run();
    llm_response r = f.get();
    BOOST_TEST(r.text() == "via a future");
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(async_generate_response_completes_with_the_responses_error_and_words) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::text("fine"), scripted_reply::transient("overloaded: try later")}};
    boost::system::error_code first_ec = lb::errc::io_error;
    std::string first_text;
    lb::async_generate_response(m, ask("x"), [&](boost::system::error_code ec, llm_response r) {
        first_ec = ec;
        first_text = r.text();
    });
    io.run();
    BOOST_TEST(!first_ec);
    BOOST_TEST(first_text == "fine");
    // The failure: its code, the response delivered too, the words in the diagnostics.
    lb::diagnostics diag;
    io.restart();
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto [ec, r] = co_await lb::async_generate_response(m, ask("y"), diag, asio::as_tuple(asio::deferred));
        BOOST_TEST(ec == lb::errc::transient);
        BOOST_TEST(r.error == lb::errc::transient);
        BOOST_TEST(diag.message() == "overloaded: try later");
    }, asio::detached);
    io.run();
    BOOST_TEST(m.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(a_stream_without_a_final_chunk_is_a_bad_response) {
    // A broken model: deltas, then the end, no final chunk.
    struct broken {
        asio::any_io_executor ex;
        lb::llm_stream generate(llm_request) {
            llm_chunk c;
            c.text = "half an ans";
            std::vector<llm_chunk> items;
            items.push_back(std::move(c));
            return lb::make_stream(ex, std::move(items));
        }
        std::string_view name() const { return "broken"; }
        asio::any_io_executor get_executor() const { return ex; }
    };
    static_assert(lb::model<broken>);
    asio::io_context io;
    run(io, [&]() -> asio::awaitable<void> {
        llm_response r = co_await lb::generate_response(broken{io.get_executor()}, ask("x"));
        BOOST_TEST((r.error == lb::errc::bad_response));
        BOOST_TEST(r.error_message == "the model's stream ended without a final response");
        BOOST_TEST(r.text() == "half an ans");
        BOOST_TEST(r.finish == lb::finish_reason::error);
    });
}

BOOST_AUTO_TEST_CASE(the_docs_example_compiles_and_plays) {
    asio::io_context io;
    scripted_model model{io.get_executor(), {
        scripted_reply::text("Hello").with_thinking("greet them").in_chunks(2).with_usage(12, 3),
        scripted_reply::tool_call("search", {{"q", "Oslo"}}).with_tool_call("clock").with_text("Let me look."),
        scripted_reply::raw_tool_call("search", "{q: Oslo}"),
        scripted_reply::context_overflow(),
        scripted_reply::computed([](const llm_request& r) {
            return scripted_reply::text("you said: " + r.messages.back().text());
        }),
    }, "scripted"};
    model.then(scripted_reply::text("appended later"));
    BOOST_TEST(model.scripted() == 6u);
    run(io, [&]() -> asio::awaitable<void> {
        llm_response r1 = co_await lb::generate_response(model, ask("a"));
        BOOST_TEST(r1.text() == "Hello");
        llm_response r2 = co_await lb::generate_response(model, ask("b"));
        BOOST_TEST(r2.tool_calls().size() == 2u);
        BOOST_TEST(r2.tool_calls().front().tool_call_id == "call_1");
        BOOST_TEST(std::next(r2.tool_calls().begin())->tool_call_id == "call_2");
        BOOST_TEST(std::next(r2.tool_calls().begin())->args.empty());
        llm_response r3 = co_await lb::generate_response(model, ask("c"));
        BOOST_TEST(r3.invalid_tool_calls.size() == 1u);
        BOOST_TEST(r3.invalid_tool_calls[0].id == "call_3");
        llm_response r4 = co_await lb::generate_response(model, ask("d"));
        BOOST_TEST((r4.error == lb::errc::context_overflow));
        llm_response r5 = co_await lb::generate_response(model, ask("e"));
        BOOST_TEST(r5.text() == "you said: e");
        llm_response r6 = co_await lb::generate_response(model, ask("f"));
        BOOST_TEST(r6.text() == "appended later");
    });
}

BOOST_AUTO_TEST_CASE(a_minimal_agent_loop_over_events) {
    // The pieces together, as llm_agent will use them: events -> context view -> messages ->
    // model -> events, with the tool result reaching the second request next to its call.
    asio::io_context io;
    scripted_model model{io.get_executor(),
                         {scripted_reply::tool_call("get_weather", {{"city", "Oslo"}}).with_thinking("look it up"),
                          scripted_reply::text("It is 21 °C in Oslo.").in_chunks(4)}};
    std::vector<lb::event> events;
    events.push_back(lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("Weather in Oslo?")));
    std::string streamed;
    run(io, [&]() -> asio::awaitable<void> {
        for (int step = 0; step < 4; ++step) {
            llm_request req;
            req.system_instruction = "You answer weather questions.";
            req.messages = lb::build_messages(lb::make_context_view(events), "assistant");
            lb::llm_stream s = model.generate(std::move(req));
            std::optional<llm_response> final;
            for (;;) {
                std::optional<llm_chunk> c = co_await s.next();
                if (!c) break;
                if (c->final) final = std::move(c->final);
                else streamed += c->text;
            }
            BOOST_REQUIRE(final.has_value());
            BOOST_REQUIRE(final->ok());
            lb::event reply = lb::event::make(lb::event_type::agent_message, "assistant");
            reply.content.parts = final->parts;
            reply.usage = final->usage;
            events.push_back(std::move(reply));
            if (!final->has_tool_calls()) break;
            lb::event results = lb::event::make(lb::event_type::tool_response, "assistant");
            for (const auto& c : final->tool_calls())
                results.content.parts.emplace_back(
                    lb::tool_response_part{c.tool_call_id, c.tool_name, json::parse(R"({"temp_c":21})"), {}, {}});
            events.push_back(std::move(results));
        }
    });
    BOOST_TEST(streamed == "It is 21 °C in Oslo.");
    BOOST_TEST(events.size() == 4u);
    BOOST_TEST(events.back().is_final_response());
    BOOST_REQUIRE(model.request_count() == 2u);
    const llm_request second = model.last_request();
    BOOST_REQUIRE(second.messages.size() == 3u);
    BOOST_TEST(second.messages[0].role == lb::message_role::user);
    BOOST_TEST(second.messages[1].role == lb::message_role::assistant);
    BOOST_TEST(second.messages[1].tool_calls().front().tool_call_id == "call_1");
    BOOST_TEST(std::get<lb::thinking_part>(second.messages[1].parts[0]).thinking == "look it up");
    BOOST_TEST(second.messages[2].role == lb::message_role::tool);
    BOOST_TEST(second.messages[2].tool_responses().front().tool_call_id == "call_1");
    BOOST_TEST(second.system_instruction == "You answer weather questions.");
}

BOOST_AUTO_TEST_SUITE_END()
