// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The message of one store operation's failure, carried from the thread that ran it to the
// thread that runs its completion handler (detail/store_message.hpp, post_result).
#include <libretto/session/detail/await_inline.hpp>
#include <libretto/session/detail/post_result.hpp>
#include <libretto/error.hpp>
#include <libretto/session/detail/store_message.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <tuple>

namespace asio = boost::asio;
namespace ld = libretto::detail;

BOOST_AUTO_TEST_SUITE(store_message_suite)

BOOST_AUTO_TEST_CASE(take_returns_the_note_once_and_clear_forgets_it) {
    ld::clear_store_message();
    BOOST_TEST(ld::take_store_message().empty());
    ld::note_store_message("sqlite_store: disk I/O error");
    BOOST_TEST(ld::take_store_message() == "sqlite_store: disk I/O error");
    BOOST_TEST(ld::take_store_message().empty()); // taken
    ld::note_store_message("first");
    ld::note_store_message("second");
    BOOST_TEST(ld::take_store_message() == "second"); // the newest note
    ld::note_store_message("stale");
    ld::clear_store_message();
    BOOST_TEST(ld::take_store_message().empty());
}

BOOST_AUTO_TEST_CASE(the_slot_is_per_thread) {
    ld::note_store_message("mine");
    std::string seen = "unset";
    std::thread other([&] { seen = ld::take_store_message(); });
    other.join();
    BOOST_TEST(seen.empty());
    BOOST_TEST(ld::take_store_message() == "mine");
}

// What a store does: the operation runs on its worker thread and notes its failure there;
// the completion is posted to the caller's executor and finds the note on its own thread.
BOOST_AUTO_TEST_CASE(a_note_on_the_worker_reaches_the_handler_on_the_callers_thread) {
    asio::io_context io;
    asio::thread_pool pool(1);
    std::string seen = "unset";
    std::thread::id ran_on;
    ld::note_store_message("stale, on the caller's thread");
    auto handler = [&](int code) {
        ran_on = std::this_thread::get_id();
        seen = ld::take_store_message() + " / " + std::to_string(code);
    };
    auto ex = io.get_executor();
    asio::post(pool, [ex, h = std::move(handler)]() mutable {
        ld::clear_store_message();
        ld::note_store_message("jsonl_store: /data/s.jsonl: No space left on device");
        ld::post_result(std::move(h), ex, 28);
    });
    pool.join();
    io.run();
    BOOST_TEST(ran_on == std::this_thread::get_id());
    BOOST_TEST(seen == "jsonl_store: /data/s.jsonl: No space left on device / 28");
    // Taken on the worker: a later operation there that notes nothing carries nothing.
    asio::thread_pool pool2(1);
    io.restart();
    ld::note_store_message("stale again");
    asio::post(pool2, [&, ex] {
        ld::post_result([&](int code) { seen = "[" + ld::take_store_message() + "] " + std::to_string(code); }, ex, 0);
    });
    pool2.join();
    io.run();
    BOOST_TEST(seen == "[] 0"); // the handler's thread's stale note was replaced, not read
}

BOOST_AUTO_TEST_CASE(the_wrapped_handler_keeps_its_executor_and_cancellation_slot) {
    asio::io_context io, other;
    asio::cancellation_signal sig;
    bool ran = false;
    auto inner = asio::bind_cancellation_slot(sig.slot(), asio::bind_executor(other.get_executor(), [&](int) {
                                                  ran = true;
                                              }));
    ld::with_store_message<decltype(inner)> h{std::move(inner), "said"};
    BOOST_TEST((asio::get_associated_executor(h, io.get_executor()) == other.get_executor()));
    BOOST_TEST(asio::get_associated_cancellation_slot(h).is_connected());
    // Posted through io, it runs on the handler's own executor.
    ld::note_store_message("about this one");
    ld::post_result(std::move(h), io.get_executor(), 1);
    io.run();
    BOOST_TEST(!ran);
    other.run();
    BOOST_TEST(ran);
}

// An operation completed inline (memory_store with an awaitable token): no completion
// handler carries the note, the caller takes it on the same thread; a failure that notes
// nothing gives "" there, not what an earlier operation noted.
BOOST_AUTO_TEST_CASE(an_inline_awaitable_operation_leaves_only_its_own_note) {
    asio::io_context io;
    using token = asio::as_tuple_t<asio::use_awaitable_t<>>;
    std::string first = "unset", second = "unset";
    auto body = [&]() -> asio::awaitable<void> {
        auto failing = ld::await_inline<token>([] {
            ld::note_store_message("memory_store: append: too big");
            return std::make_tuple(make_error_code(libretto::errc::oversize));
        });
        auto [ec1] = co_await std::move(failing);
        BOOST_TEST((ec1 == libretto::errc::oversize));
        first = ld::take_store_message();
        ld::note_store_message("left behind");
        auto silent = ld::await_inline<token>([] { return std::make_tuple(make_error_code(libretto::errc::io_error)); });
        auto [ec2] = co_await std::move(silent);
        BOOST_TEST((ec2 == libretto::errc::io_error));
        second = ld::take_store_message();
    };
    asio::co_spawn(io, body(), asio::detached);
    io.run();
    BOOST_TEST(first == "memory_store: append: too big");
    BOOST_TEST(second.empty());
}

BOOST_AUTO_TEST_SUITE_END()
