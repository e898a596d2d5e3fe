// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The non-store operations with every kind of completion token (docs/errors.md,
// "Completion tokens"): event_stream::async_next, async_generate_response and
// async_summarize complete with (error_code, value), put their words in the caller's
// diagnostics, and throw error_with_diagnostics only for use_awaitable. The stores have
// the same checks in diagnostics_test.cpp.
#include <libretto/async.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/model/model.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace asio = boost::asio;
namespace lb = libretto;
using boost::system::error_code;

namespace {

static_assert(std::is_same_v<lb::default_completion_token_t, asio::deferred_t>);

/// Runs `body()` as a coroutine on `io` to its end; rethrows what it threw.
template <class Body>
void run_coro(asio::io_context& io, Body body) {
    std::exception_ptr failure;
    bool done = false;
    asio::co_spawn(io, body(), [&](std::exception_ptr e) {
        failure = e;
        done = true;
    });
    io.run();
    io.restart();
    BOOST_TEST_REQUIRE(done);
    if (failure) std::rethrow_exception(failure);
}

/// A stream of 0, 1, 2, then an exception that is not a system_error.
lb::basic_event_stream<int> numbers_then_throw(asio::any_io_executor ex) {
    return lb::basic_event_stream<int>(ex, [](lb::stream_writer<int> out) -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
            auto op = out.emit(int(i));
            co_await std::move(op);
        }
        throw std::runtime_error("the producer broke");
    });
}

/// A stream whose producer waits for a long time before its one item.
lb::basic_event_stream<int> slow(asio::any_io_executor ex) {
    return lb::basic_event_stream<int>(ex, [](lb::stream_writer<int> out) -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(30));
        auto wait = t.async_wait(asio::use_awaitable);
        co_await std::move(wait);
        auto op = out.emit(1);
        co_await std::move(op);
    });
}

lb::llm_request ask(std::string text) {
    lb::llm_request r;
    r.messages.push_back(lb::message::user(std::move(text)));
    return r;
}

std::vector<lb::event> three_events() {
    std::vector<lb::event> v;
    for (int i = 1; i <= 3; ++i) {
        lb::event e = lb::event::make(lb::event_type::user_message, "user",
                                      lb::content::from_text("message number " + std::to_string(i)));
        e.sequence = i;
        v.push_back(std::move(e));
    }
    return v;
}

/// A summarizer that always fails with a system_error naming why.
struct failing_summarizer {
    asio::awaitable<lb::summary> async_summarize(lb::summary_request) {
        throw boost::system::system_error(lb::errc::model_error, "the summary model is down");
        co_return lb::summary{};
    }
};
static_assert(lb::summarizer<failing_summarizer>);

} // namespace

BOOST_AUTO_TEST_SUITE(completion_tokens)

// ---- event_stream::async_next --------------------------------------------------------------

BOOST_AUTO_TEST_CASE(async_next_with_every_token) {
    asio::io_context io;
    auto s = numbers_then_throw(io.get_executor());
    // A plain callback.
    std::optional<int> first;
    error_code first_ec = lb::errc::io_error;
    s.async_next([&](error_code ec, std::optional<int> v) {
        first_ec = ec;
        first = v;
    });
    io.run();
    io.restart();
    BOOST_TEST(!first_ec);
    BOOST_TEST((first == std::optional<int>(0)));
    run_coro(io, [&]() -> asio::awaitable<void> {
        // The default token (deferred), use_awaitable and as_tuple of both.
        std::optional<int> a = co_await s.async_next();
        BOOST_TEST((a == std::optional<int>(1)));
        auto [ec, b] = co_await s.async_next(asio::as_tuple(asio::deferred));
        BOOST_TEST(!ec);
        BOOST_TEST((b == std::optional<int>(2)));
        // The producer's own exception: errc::unexpected_exception and its what() as the words.
        lb::diagnostics diag;
        auto [ec2, c] = co_await s.async_next(diag, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec2 == lb::errc::unexpected_exception);
        BOOST_TEST(!c.has_value());
        BOOST_TEST(diag.message() == "the producer broke");
        // Then the stream is closed: use_awaitable throws error_with_diagnostics.
        bool threw = false;
        try {
            auto op = s.async_next(asio::use_awaitable);
            co_await std::move(op);
        } catch (const lb::error_with_diagnostics& e) {
            threw = e.code() == lb::errc::stream_closed;
        }
        BOOST_TEST(threw);
    });
}

BOOST_AUTO_TEST_CASE(async_next_with_use_future_on_another_thread) {
    asio::io_context io;
    auto s = numbers_then_throw(io.get_executor());
    std::future<std::optional<int>> f = s.async_next(asio::use_future);
    std::thread runner([&] { io.run(); });
    const std::optional<int> v = f.get();
    runner.join();
    BOOST_TEST((v == std::optional<int>(0)));
}

BOOST_AUTO_TEST_CASE(async_next_cancelled_through_a_bound_slot) {
    asio::io_context io;
    auto s = slow(io.get_executor());
    asio::cancellation_signal signal;
    error_code got;
    bool called = false;
    s.async_next(asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, std::optional<int>) {
        got = ec;
        called = true;
    }));
    asio::steady_timer t(io, std::chrono::milliseconds(20));
    t.async_wait([&](error_code) { signal.emit(asio::cancellation_type::terminal); });
    const auto start = std::chrono::steady_clock::now();
    io.run();
    BOOST_TEST(called);
    BOOST_TEST(got == lb::errc::cancelled);
    BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(10))); // not the producer's 30 s
}

// ---- async_generate_response ---------------------------------------------------------------

BOOST_AUTO_TEST_CASE(async_generate_response_with_every_token) {
    asio::io_context io;
    lb::scripted_model m{io.get_executor(),
                         {lb::scripted_reply::text("one"), lb::scripted_reply::text("two"),
                          lb::scripted_reply::auth_failed("invalid API key (401)"), lb::scripted_reply::text("four"),
                          lb::scripted_reply::text("five")}};
    run_coro(io, [&]() -> asio::awaitable<void> {
        lb::llm_response a = co_await lb::async_generate_response(m, ask("a")); // deferred
        BOOST_TEST(a.text() == "one");
        auto op = lb::async_generate_response(m, ask("b"), asio::use_awaitable);
        lb::llm_response b = co_await std::move(op);
        BOOST_TEST(b.text() == "two");
        // A failed generation: the code, the response (with its error) and the words.
        bool threw = false;
        try {
            auto failing = lb::async_generate_response(m, ask("c"), asio::use_awaitable);
            co_await std::move(failing);
        } catch (const lb::error_with_diagnostics& e) {
            threw = e.code() == lb::errc::auth_failed &&
                    e.get_diagnostics().message() == "invalid API key (401)";
        }
        BOOST_TEST(threw);
        lb::diagnostics diag;
        diag.assign("left over from before");
        auto [ec, d] = co_await lb::async_generate_response(m, ask("d"), diag, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec);
        BOOST_TEST(d.text() == "four");
        BOOST_TEST(diag.empty()); // cleared by the operation that succeeded
    });
    std::future<lb::llm_response> f = lb::async_generate_response(m, ask("e"), asio::use_future);
    std::thread runner([&] { io.run(); });
    const lb::llm_response e = f.get();
    runner.join();
    BOOST_TEST(e.text() == "five");
    BOOST_TEST(m.request_count() == 5u);
}

// ---- async_summarize ----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(async_summarize_with_every_token) {
    asio::io_context io;
    const std::vector<lb::event> events = three_events();
    lb::summary_request r;
    r.events = events;
    lb::extractive_summarizer s{lb::extractive_summarizer_options{}};
    std::string by_callback;
    lb::async_summarize(io.get_executor(), s, r, [&](error_code ec, lb::summary v) {
        BOOST_TEST(!ec);
        by_callback = v.text;
    });
    io.run();
    io.restart();
    BOOST_TEST(by_callback.find("message number 3") != std::string::npos, by_callback);
    run_coro(io, [&]() -> asio::awaitable<void> {
        lb::summary a = co_await lb::async_summarize(io.get_executor(), s, r); // deferred
        BOOST_TEST(a.text == by_callback);
        // A summarizer that throws a system_error: its code and words.
        lb::diagnostics diag;
        auto [ec, none] = co_await lb::async_summarize(io.get_executor(), failing_summarizer{}, r, diag,
                                                       asio::as_tuple(asio::deferred));
        BOOST_TEST(ec == lb::errc::model_error);
        BOOST_TEST(diag.message().find("the summary model is down") != std::string::npos, diag.message());
        bool threw = false;
        try {
            auto op = lb::async_summarize(io.get_executor(), failing_summarizer{}, r, asio::use_awaitable);
            co_await std::move(op);
        } catch (const lb::error_with_diagnostics& e) {
            threw = e.code() == lb::errc::model_error;
        }
        BOOST_TEST(threw);
    });
    std::future<lb::summary> f = lb::async_summarize(io.get_executor(), s, r, asio::use_future);
    std::thread runner([&] { io.run(); });
    const lb::summary viaf = f.get();
    runner.join();
    BOOST_TEST(viaf.text == by_callback);
}

BOOST_AUTO_TEST_SUITE_END()
