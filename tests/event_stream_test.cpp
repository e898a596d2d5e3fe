// Tests of libretto::basic_event_stream (include/libretto/stream/event_stream.hpp).
#include <libretto/stream/event_stream.hpp>

#include <libretto/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using libretto::basic_event_stream;
using libretto::stream_options;
using libretto::stream_writer;

namespace {

using executor = asio::any_io_executor;

/// Runs `test(executor)` as a coroutine in a fresh io_context until everything finished;
/// rethrows what escaped it. Returns the wall time io.run() took.
template <class Test>
std::chrono::steady_clock::duration run(Test test) {
    asio::io_context io;
    std::exception_ptr failure;
    bool finished = false;
    auto started = std::chrono::steady_clock::now();
    asio::co_spawn(io, test(io.get_executor()), [&](std::exception_ptr ep) {
        failure = ep;
        finished = true;
    });
    io.run();
    auto took = std::chrono::steady_clock::now() - started;
    BOOST_REQUIRE(finished);
    if (failure) std::rethrow_exception(failure);
    return took;
}

asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

/// The libretto::errc a system_error carries, or nothing.
template <class Awaitable>
asio::awaitable<std::optional<libretto::errc>> error_of(Awaitable a) {
    try {
        co_await std::move(a);
    } catch (const boost::system::system_error& e) {
        if (e.code().category() == libretto::error_category())
            co_return static_cast<libretto::errc>(e.code().value());
        throw;
    }
    co_return std::nullopt;
}

bool is_errc(const std::exception_ptr& ep, libretto::errc e) {
    try {
        std::rethrow_exception(ep);
    } catch (const boost::system::system_error& x) {
        return x.code() == libretto::make_error_code(e);
    } catch (...) {
        return false;
    }
}

/// A producer emitting 0..n-1.
struct counting_producer {
    int n;
    asio::awaitable<void> operator()(stream_writer<int> out) {
        for (int i = 0; i < n; ++i) co_await out.emit(i);
    }
};

/// Emits `before` items, then waits on a one-hour timer, recording whether it observed
/// cancellation (an exception while waiting) and whether it finished.
struct sleeping_producer {
    int before;
    std::shared_ptr<bool> observed_cancel;
    std::shared_ptr<bool> finished;
    asio::awaitable<void> operator()(stream_writer<int> out) {
        for (int i = 0; i < before; ++i) co_await out.emit(i);
        try {
            asio::steady_timer t(out.get_executor(), 1h);
            co_await t.async_wait(asio::use_awaitable);
        } catch (const boost::system::system_error&) {
            *observed_cancel = true;
            *finished = true;
            throw;
        }
        *finished = true;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(event_stream)

BOOST_AUTO_TEST_CASE(delivers_10k_items_in_order_then_nullopt_then_stream_closed) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, counting_producer{10000});
        int expected = 0;
        while (std::optional<int> v = co_await s.next()) {
            BOOST_REQUIRE_EQUAL(*v, expected);
            ++expected;
        }
        BOOST_TEST(expected == 10000);
        // After the end has been reported once, next() throws errc::stream_closed.
        auto again = co_await error_of(s.next());
        BOOST_TEST((again == libretto::errc::stream_closed));
        auto third = co_await error_of(s.next());
        BOOST_TEST((third == libretto::errc::stream_closed));
    });
}

BOOST_AUTO_TEST_CASE(empty_stream_ends_at_once) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, [](stream_writer<int>) -> asio::awaitable<void> { co_return; });
        std::optional<int> v = co_await s.next();
        BOOST_TEST(!v.has_value());
        auto again = co_await error_of(s.next());
        BOOST_TEST((again == libretto::errc::stream_closed));
    });
}

BOOST_AUTO_TEST_CASE(producer_throws_before_emitting) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, [](stream_writer<int>) -> asio::awaitable<void> {
            throw std::runtime_error("no items, just trouble");
            co_return;
        });
        std::string message;
        try {
            (void)co_await s.next();
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
        BOOST_TEST(message == "no items, just trouble");
        auto again = co_await error_of(s.next());
        BOOST_TEST((again == libretto::errc::stream_closed));
    });
}

BOOST_AUTO_TEST_CASE(producer_throws_after_n_items_which_are_delivered_first) {
    for (std::size_t capacity : {0u, 1u, 16u}) {
        run([capacity](executor ex) -> asio::awaitable<void> {
            basic_event_stream<int> s(
                ex,
                [](stream_writer<int> out) -> asio::awaitable<void> {
                    for (int i = 0; i < 5; ++i) co_await out.emit(i * 10);
                    throw std::runtime_error("failed after five");
                },
                stream_options{capacity});
            std::vector<int> got;
            std::string message;
            try {
                while (std::optional<int> v = co_await s.next()) got.push_back(*v);
            } catch (const std::runtime_error& e) {
                message = e.what();
            }
            const std::vector<int> expected{0, 10, 20, 30, 40};
            BOOST_TEST(got == expected, boost::test_tools::per_element());
            BOOST_TEST(message == "failed after five");
            auto again = co_await error_of(s.next());
            BOOST_TEST((again == libretto::errc::stream_closed));
        });
    }
}

BOOST_AUTO_TEST_CASE(back_pressure_bounds_the_producer_lead) {
    // The producer never starts more than capacity + 1 emits (the +1 is the one it is
    // suspended in, whose item is already queued) ahead of what the consumer received,
    // and never completes more than capacity. The consumer is slow (sleeps) so the
    // producer always runs into the bound; the test checks the bound is reached exactly.
    for (std::size_t capacity : {0u, 1u, 4u}) {
        struct progress {
            long started = 0;   // emit() calls begun
            long completed = 0; // emit() calls returned
        };
        auto p = std::make_shared<progress>();
        long max_started_lead = 0;
        long max_completed_lead = 0;
        run([&](executor ex) -> asio::awaitable<void> {
            auto producer = [p](stream_writer<int> out) -> asio::awaitable<void> {
                for (int i = 0; i < 40; ++i) {
                    ++p->started;
                    co_await out.emit(i);
                    ++p->completed;
                }
            };
            basic_event_stream<int> s(ex, producer, stream_options{capacity});
            long consumed = 0;
            while (std::optional<int> v = co_await s.next()) {
                BOOST_REQUIRE_EQUAL(*v, consumed);
                ++consumed;
                co_await sleep_for(1ms); // let the producer run as far as it can
                max_started_lead = std::max(max_started_lead, p->started - consumed);
                max_completed_lead = std::max(max_completed_lead, p->completed - consumed);
            }
            BOOST_TEST(consumed == 40);
        });
        BOOST_TEST_CONTEXT("capacity " << capacity) {
            BOOST_TEST(max_started_lead == static_cast<long>(capacity) + 1);
            BOOST_TEST(max_completed_lead == static_cast<long>(capacity));
        }
    }
}


BOOST_AUTO_TEST_CASE(a_capacity_near_size_max_means_no_bound_not_no_room) {
    // The room test once added the capacity to the count taken, which wrapped: after the
    // first item was taken the producer never had room again and the stream hung.
    for (std::size_t capacity : {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() - 1}) {
        auto completed = std::make_shared<int>(0);
        run([&](executor ex) -> asio::awaitable<void> {
            auto producer = [completed](stream_writer<int> out) -> asio::awaitable<void> {
                for (int i = 0; i < 50; ++i) {
                    co_await out.emit(i);
                    ++*completed;
                }
            };
            basic_event_stream<int> s(ex, producer, stream_options{capacity});
            int consumed = 0;
            while (std::optional<int> v = co_await s.next()) {
                BOOST_REQUIRE_EQUAL(*v, consumed);
                ++consumed;
                co_await sleep_for(1ms);
                BOOST_TEST(*completed == 50); // no bound: the producer never waited
            }
            BOOST_TEST(consumed == 50);
        });
    }
}
BOOST_AUTO_TEST_CASE(cancelled_through_slot_by_awaitable_operator_while_producer_sleeps) {
    using namespace asio::experimental::awaitable_operators;
    auto observed = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, sleeping_producer{2, observed, finished});
        {
            auto got_ = co_await s.next();
            BOOST_TEST(*got_== 0);
        }
        {
            auto got_ = co_await s.next();
            BOOST_TEST(*got_== 1);
        }
        // The producer now sleeps for an hour; time the next() out after 20 ms.
        asio::steady_timer timeout(ex, 20ms);
        std::variant<std::optional<int>, std::monostate> r =
            co_await (s.next() || timeout.async_wait(asio::use_awaitable));
        BOOST_TEST(r.index() == 1u); // the timer won
        // Cancelling a pending next() finishes the stream.
        auto after = co_await error_of(s.next());
        BOOST_TEST((after == libretto::errc::cancelled));
    });
    BOOST_TEST(*observed);  // the producer was woken from its one-hour timer
    BOOST_TEST(*finished);
    BOOST_TEST(took < 5s); // and io.run() did not wait for the hour
}

BOOST_AUTO_TEST_CASE(cancelled_through_bound_cancellation_slot) {
    auto observed = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    auto consumer_error = std::make_shared<std::exception_ptr>();
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        auto s = std::make_shared<basic_event_stream<int>>(ex, sleeping_producer{1, observed, finished});
        asio::cancellation_signal signal;
        bool consumer_done = false;
        auto consumer = [](std::shared_ptr<basic_event_stream<int>> stream) -> asio::awaitable<void> {
            {
                auto got_ = co_await stream->next();
                BOOST_TEST(*got_== 0);
            }
            (void)co_await stream->next(); // parks: the producer sleeps
            BOOST_FAIL("next() should have been cancelled");
        };
        auto on_done = [&, consumer_error](std::exception_ptr ep) {
            *consumer_error = ep;
            consumer_done = true;
        };
        asio::co_spawn(ex, consumer(s), asio::bind_cancellation_slot(signal.slot(), on_done));
        co_await sleep_for(10ms);
        BOOST_TEST(!consumer_done);
        signal.emit(asio::cancellation_type::terminal);
        co_await sleep_for(10ms);
        BOOST_TEST(consumer_done);
        auto after = co_await error_of(s->next());
        BOOST_TEST((after == libretto::errc::cancelled));
    });
    BOOST_TEST(is_errc(*consumer_error, libretto::errc::cancelled));
    BOOST_TEST(*observed);
    BOOST_TEST(*finished);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(destroying_the_stream_while_producer_sleeps) {
    auto observed = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        std::optional<basic_event_stream<int>> s;
        s.emplace(ex, sleeping_producer{3, observed, finished});
        {
            auto got_ = co_await s->next();
            BOOST_TEST(*got_== 0);
        }
        {
            auto got_ = co_await s->next();
            BOOST_TEST(*got_== 1);
        }
        co_await sleep_for(5ms); // the producer is now on its timer, item 2 buffered
        s.reset();
        co_await sleep_for(5ms);
        BOOST_TEST(*observed);
    });
    BOOST_TEST(*finished);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(destroying_the_stream_while_producer_is_parked_in_emit) {
    auto emit_error = std::make_shared<std::exception_ptr>();
    auto emitted = std::make_shared<int>(0);
    run([&](executor ex) -> asio::awaitable<void> {
        auto producer = [emit_error, emitted](stream_writer<int> out) -> asio::awaitable<void> {
            try {
                for (int i = 0;; ++i) {
                    co_await out.emit(i);
                    ++*emitted;
                }
            } catch (...) {
                *emit_error = std::current_exception();
                throw;
            }
        };
        std::optional<basic_event_stream<int>> s;
        s.emplace(ex, producer, stream_options{2});
        {
            auto got_ = co_await s->next();
            BOOST_TEST(*got_== 0);
        }
        co_await sleep_for(5ms); // buffer full: the producer is parked in emit()
        BOOST_TEST(*emitted == 3);
        s.reset();
        co_await sleep_for(5ms);
    });
    BOOST_TEST(is_errc(*emit_error, libretto::errc::cancelled));
}

// An emit whose item the consumer took has delivered it: dropping the stream afterwards
// does not make that emit throw (a consumer that stops at the item it needs costs its
// producer no exception when the producer has nothing more to emit); the producer's next
// co_await fails with operation_aborted (it was sent terminal cancellation).
BOOST_AUTO_TEST_CASE(dropping_the_stream_after_taking_the_parked_item_fails_only_the_next_emit) {
    auto emit_error = std::make_shared<std::exception_ptr>();
    auto returned = std::make_shared<std::vector<int>>();
    run([&](executor ex) -> asio::awaitable<void> {
        auto producer = [emit_error, returned](stream_writer<int> out) -> asio::awaitable<void> {
            try {
                for (int i = 0;; ++i) {
                    co_await out.emit(i);
                    returned->push_back(i);
                }
            } catch (...) {
                *emit_error = std::current_exception();
                throw;
            }
        };
        std::optional<basic_event_stream<int>> s;
        s.emplace(ex, producer, stream_options{1});
        // The first next() starts the producer: 0 is handed over inside emit(0).
        std::optional<int> a = co_await s->next();
        // Meanwhile the producer emits 1 (buffered) and parks in emit(2).
        co_await sleep_for(5ms);
        std::optional<int> b = co_await s->next(); // takes 1: emit(2) is woken, not yet resumed
        std::optional<int> c = co_await s->next(); // takes the parked item
        BOOST_TEST(*a == 0);
        BOOST_TEST(*b == 1);
        BOOST_TEST(*c == 2);
        s.reset();
        co_await sleep_for(5ms);
    });
    BOOST_TEST(*returned == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
    // The producer was sent terminal cancellation: Asio refuses its next co_await.
    bool aborted = false;
    try {
        std::rethrow_exception(*emit_error);
    } catch (const boost::system::system_error& e) {
        aborted = e.code() == asio::error::operation_aborted;
    } catch (...) {
    }
    BOOST_TEST(aborted);
}

namespace {

/// What became of a producer that emits one item to a consumer parked in next() (the item is
/// handed over inside emit(), and the consumer drops the stream there), then either returns
/// or waits on a one-hour timer.
struct handover_outcome {
    bool emit_returned = false;   ///< the co_await of the emit completed
    bool returned = false;        ///< the body ran to its end
    std::exception_ptr error;     ///< what the body threw
};

template <bool UseEmitOrWait>
handover_outcome drop_inside_handover(bool wait_after) {
    auto out_state = std::make_shared<handover_outcome>();
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        auto producer = [out_state, wait_after](stream_writer<int> out) -> asio::awaitable<void> {
            try {
                co_await sleep_for(1ms); // the consumer parks in next() meanwhile
                if constexpr (UseEmitOrWait) {
                    std::optional<asio::awaitable<void>> op = out.emit_or_wait(7);
                    if (op) co_await std::move(*op);
                } else {
                    auto emit = out.emit(7);
                    co_await std::move(emit);
                }
                out_state->emit_returned = true;
                if (wait_after) {
                    asio::steady_timer t(out.get_executor(), 1h);
                    co_await t.async_wait(asio::use_awaitable);
                }
                out_state->returned = true;
            } catch (...) {
                out_state->error = std::current_exception();
                throw;
            }
        };
        std::optional<basic_event_stream<int>> s;
        s.emplace(ex, producer, stream_options{1});
        std::optional<int> got = co_await s->next(); // resumed inside emit(7)
        BOOST_TEST((got == 7));
        s.reset(); // still inside the producer's emit(7)
        co_await sleep_for(5ms);
    });
    BOOST_TEST(took < 5s); // a producer on its timer was cancelled, not waited for
    return *out_state;
}

bool is_operation_aborted(const std::exception_ptr& ep) {
    try {
        std::rethrow_exception(ep);
    } catch (const boost::system::system_error& e) {
        return e.code() == asio::error::operation_aborted;
    } catch (...) {
        return false;
    }
}

/// The producer returning after the emit ends without an exception; one going on to wait is
/// cancelled there (its next co_await fails).
template <bool UseEmitOrWait>
void check_drop_inside_handover() {
    handover_outcome done = drop_inside_handover<UseEmitOrWait>(false);
    BOOST_TEST(done.emit_returned);
    BOOST_TEST(done.returned);
    BOOST_TEST(!done.error);

    handover_outcome waiting = drop_inside_handover<UseEmitOrWait>(true);
    BOOST_TEST(waiting.emit_returned);
    BOOST_TEST(!waiting.returned);
    BOOST_TEST(is_operation_aborted(waiting.error));
}

} // namespace

// A consumer that stops at the item it wanted (llm_agent at a model's final chunk) and drops
// the stream inside the hand-over: the producer's emit of that item completes (no exception
// for a producer with nothing more to do); its next co_await is refused, as after any
// cancel(), so a producer that goes on to wait is still cancelled at once.
BOOST_AUTO_TEST_CASE(dropping_the_stream_inside_the_handover_costs_the_emit_no_exception) {
    check_drop_inside_handover<false>();
}

BOOST_AUTO_TEST_CASE(dropping_the_stream_inside_the_handover_of_emit_or_wait) {
    check_drop_inside_handover<true>();
}

BOOST_AUTO_TEST_CASE(destroying_the_stream_while_producer_awaits_another_stream) {
    auto inner_observed = std::make_shared<bool>(false);
    auto inner_finished = std::make_shared<bool>(false);
    auto outer_error = std::make_shared<std::exception_ptr>();
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        // The outer producer relays an inner stream whose producer sleeps for an hour.
        auto relay = [=](stream_writer<int> out) -> asio::awaitable<void> {
            basic_event_stream<int> inner(out.get_executor(),
                                          sleeping_producer{1, inner_observed, inner_finished});
            try {
                while (std::optional<int> v = co_await inner.next()) co_await out.emit(*v + 100);
            } catch (...) {
                *outer_error = std::current_exception();
                throw;
            }
        };
        std::optional<basic_event_stream<int>> s;
        s.emplace(ex, relay);
        {
            auto got_ = co_await s->next();
            BOOST_TEST(*got_== 100);
        }
        co_await sleep_for(5ms); // outer producer parked in inner.next()
        s.reset();
        co_await sleep_for(5ms);
    });
    BOOST_TEST(is_errc(*outer_error, libretto::errc::cancelled));
    BOOST_TEST(*inner_observed);
    BOOST_TEST(*inner_finished);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(cancel_fails_pending_and_later_next) {
    auto observed = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        auto s = std::make_shared<basic_event_stream<int>>(ex, sleeping_producer{1, observed, finished});
        {
            auto got_ = co_await s->next();
            BOOST_TEST(*got_== 0);
        }
        std::exception_ptr pending_error;
        bool pending_done = false;
        auto consumer = [](std::shared_ptr<basic_event_stream<int>> stream) -> asio::awaitable<void> {
            (void)co_await stream->next();
        };
        asio::co_spawn(ex, consumer(s), [&](std::exception_ptr ep) {
            pending_error = ep;
            pending_done = true;
        });
        co_await sleep_for(5ms);
        BOOST_TEST(!pending_done);
        s->cancel();
        s->cancel(); // idempotent
        co_await sleep_for(5ms);
        BOOST_TEST(pending_done);
        BOOST_TEST(is_errc(pending_error, libretto::errc::cancelled));
        auto after = co_await error_of(s->next());
        BOOST_TEST((after == libretto::errc::cancelled));
        auto again = co_await error_of(s->next());
        BOOST_TEST((again == libretto::errc::cancelled));
    });
    BOOST_TEST(*observed);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(cancel_drops_buffered_items) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, counting_producer{10});
        {
            auto got_ = co_await s.next();
            BOOST_TEST(*got_== 0);
        } // the producer has buffered the rest
        s.cancel();
        auto after = co_await error_of(s.next());
        BOOST_TEST((after == libretto::errc::cancelled));
    });
}

BOOST_AUTO_TEST_CASE(cancel_before_start_never_runs_the_producer) {
    auto ran = std::make_shared<bool>(false);
    run([&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, [ran](stream_writer<int>) -> asio::awaitable<void> {
            *ran = true;
            co_return;
        });
        s.cancel();
        auto after = co_await error_of(s.next());
        BOOST_TEST((after == libretto::errc::cancelled));
    });
    BOOST_TEST(!*ran);
}

BOOST_AUTO_TEST_CASE(move_only_items) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<std::unique_ptr<int>> s(
            ex,
            [](stream_writer<std::unique_ptr<int>> out) -> asio::awaitable<void> {
                for (int i = 0; i < 100; ++i) {
                    auto item = std::make_unique<int>(i);
                    co_await out.emit(std::move(item));
                }
            },
            stream_options{3});
        int expected = 0;
        while (std::optional<std::unique_ptr<int>> v = co_await s.next()) {
            BOOST_REQUIRE(*v);
            BOOST_REQUIRE_EQUAL(**v, expected);
            ++expected;
        }
        BOOST_TEST(expected == 100);
    });
}

/// Counts its instances, copies and moves (all on one thread).
struct tracked {
    static inline long live = 0, copies = 0, moves = 0;
    std::string text; // longer than the small-string buffer: a leak would show under ASan
    explicit tracked(int i) : text("item number " + std::to_string(i) + " with a tail past SSO") { ++live; }
    tracked(const tracked& o) : text(o.text) { ++live, ++copies; }
    tracked(tracked&& o) noexcept : text(std::move(o.text)) { ++live, ++moves; }
    tracked& operator=(const tracked&) = delete;
    tracked& operator=(tracked&&) = delete;
    ~tracked() { --live; }
};

BOOST_AUTO_TEST_CASE(items_are_moved_not_copied_and_none_outlives_the_stream) {
    // Capacity 0 and 4 (the buffer grows and wraps around); a consumer that keeps up and
    // one that falls behind. Each item reaches the consumer intact, is never copied, moves
    // at most three times on its way (into the buffer, from its slot into next()'s result,
    // out to the caller) plus when the buffer grows, and every instance is gone once the
    // stream is.
    for (std::size_t capacity : {0u, 4u}) {
        for (bool slow : {false, true}) {
            tracked::live = tracked::copies = tracked::moves = 0;
            constexpr int n = 60;
            run([&](executor ex) -> asio::awaitable<void> {
                {
                    basic_event_stream<tracked> s(
                        ex,
                        [](stream_writer<tracked> out) -> asio::awaitable<void> {
                            for (int i = 0; i < n; ++i) co_await out.emit(tracked(i));
                        },
                        stream_options{capacity});
                    int expected = 0;
                    for (;;) {
                        auto next = s.next();
                        std::optional<tracked> v = co_await std::move(next);
                        if (!v) break;
                        BOOST_REQUIRE_EQUAL(v->text, tracked(expected).text);
                        ++expected;
                        if (slow && expected % 7 == 0) co_await sleep_for(1ms);
                    }
                    BOOST_TEST(expected == n);
                }
            });
            BOOST_TEST_CONTEXT("capacity " << capacity << (slow ? ", slow consumer" : "")) {
                BOOST_TEST_MESSAGE("capacity " << capacity << (slow ? " slow" : "") << ": " << tracked::moves
                                               << " moves for " << n << " items");
                BOOST_TEST(tracked::copies == 0);
                BOOST_TEST(tracked::live == 0);
                if (capacity == 0) BOOST_TEST(tracked::moves <= 3L * n); // the buffer never grows
                else BOOST_TEST(tracked::moves <= 3L * n + 2L * static_cast<long>(capacity + 1) * 2);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(producer_starts_on_first_next) {
    auto started = std::make_shared<bool>(false);
    run([&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, [started](stream_writer<int> out) -> asio::awaitable<void> {
            *started = true;
            co_await out.emit(7);
        });
        co_await sleep_for(5ms); // the io_context runs, the producer must not
        BOOST_TEST(!*started);
        {
            auto got_ = co_await s.next();
            BOOST_TEST(*got_== 7);
        }
        BOOST_TEST(*started);
    });
}

BOOST_AUTO_TEST_CASE(producer_lambda_captures_stay_alive) {
    run([](executor ex) -> asio::awaitable<void> {
        std::string prefix = "item-";
        std::vector<std::string> words{"a", "b", "c"};
        basic_event_stream<std::string> s(
            ex,
            [prefix, words](stream_writer<std::string> out) -> asio::awaitable<void> {
                for (const auto& w : words) {
                    co_await asio::post(out.get_executor(), asio::use_awaitable); // suspend
                    std::string item = prefix + w;
                    co_await out.emit(std::move(item));
                }
            },
            stream_options{1});
        prefix.clear();
        words.clear();
        std::vector<std::string> got;
        while (auto v = co_await s.next()) got.push_back(*v);
        const std::vector<std::string> expected{"item-a", "item-b", "item-c"};
        BOOST_TEST(got == expected, boost::test_tools::per_element());
    });
}

BOOST_AUTO_TEST_CASE(async_next_with_default_token_and_use_awaitable) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, counting_producer{3});
        std::optional<int> a = co_await s.async_next();
        std::optional<int> b = co_await s.async_next(asio::use_awaitable);
        BOOST_TEST(*a == 0);
        BOOST_TEST(*b == 1);
        // A plain callback and asio::deferred (launched with a callback) work too.
        std::optional<int> c;
        bool called = false;
        s.async_next([&](boost::system::error_code ec, std::optional<int> v) {
            BOOST_TEST(!ec);
            c = v;
            called = true;
        });
        co_await sleep_for(1ms);
        BOOST_TEST(called);
        BOOST_TEST(*c == 2);
        boost::system::error_code end_error = libretto::errc::io_error;
        std::optional<int> end_value = 42;
        auto op = s.async_next(asio::deferred);
        std::move(op)([&](boost::system::error_code ec, std::optional<int> v) {
            end_error = ec;
            end_value = v;
        });
        co_await sleep_for(1ms);
        BOOST_TEST(!end_error);
        BOOST_TEST(!end_value.has_value());
        // Errors are reported through the error_code, their words through diagnostics.
        boost::system::error_code closed_error;
        libretto::diagnostics diag;
        s.async_next(diag, [&](boost::system::error_code ec, std::optional<int>) { closed_error = ec; });
        co_await sleep_for(1ms);
        BOOST_TEST(closed_error == libretto::errc::stream_closed);
        BOOST_TEST(!diag.message().empty());
        // use_awaitable throws error_with_diagnostics with the same code.
        bool threw = false;
        try {
            auto again = s.async_next(asio::use_awaitable);
            co_await std::move(again);
        } catch (const libretto::error_with_diagnostics& e) {
            threw = e.code() == libretto::errc::stream_closed;
        }
        BOOST_TEST(threw);
    });
}

BOOST_AUTO_TEST_CASE(async_next_cancelled_through_its_slot) {
    auto observed = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    run([&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, sleeping_producer{0, observed, finished});
        asio::cancellation_signal signal;
        boost::system::error_code error;
        bool called = false;
        s.async_next(asio::bind_cancellation_slot(signal.slot(), [&](boost::system::error_code ec, std::optional<int>) {
            error = ec;
            called = true;
        }));
        co_await sleep_for(5ms);
        BOOST_TEST(!called);
        signal.emit(asio::cancellation_type::terminal);
        co_await sleep_for(5ms);
        BOOST_TEST(called);
        BOOST_TEST(error == libretto::errc::cancelled);
    });
    BOOST_TEST(*observed);
}

BOOST_AUTO_TEST_CASE(make_stream_over_a_vector) {
    run([](executor ex) -> asio::awaitable<void> {
        std::vector<std::string> items{"x", "y", "z"};
        auto s = libretto::make_stream<std::string>(ex, items, stream_options{1});
        std::vector<std::string> got;
        while (auto v = co_await s.next()) got.push_back(*v);
        BOOST_TEST(got == items, boost::test_tools::per_element());

        auto empty = libretto::make_stream<int>(ex, {});
        {
            auto got_ = co_await empty.next();
            BOOST_TEST(!got_.has_value());
        }
    });
}

// make_stream has no producer: the items are buffered up front and next() never suspends
// (a handler posted before the loop has not run when the last item is out), whatever the
// capacity; after the end next() reports stream_closed; cancel() drops what was not taken;
// move-only items work.
BOOST_AUTO_TEST_CASE(make_stream_is_ready_at_once_and_never_suspends) {
    run([](executor ex) -> asio::awaitable<void> {
        auto s = libretto::make_stream<int>(ex, {1, 2, 3}, stream_options{0});
        auto posted_ran = std::make_shared<bool>(false); // shared: the handler may outlive this frame
        asio::post(ex, [posted_ran] { *posted_ran = true; });
        std::vector<int> got;
        for (;;) {
            auto next = s.next();
            std::optional<int> v = co_await std::move(next);
            if (!v) break;
            got.push_back(*v);
        }
        BOOST_TEST(!*posted_ran);
        BOOST_TEST(got == (std::vector<int>{1, 2, 3}), boost::test_tools::per_element());
        auto after = co_await error_of(s.next());
        BOOST_TEST((after == libretto::errc::stream_closed));

        auto c = libretto::make_stream<std::string>(ex, {"a", "b", "c"});
        {
            auto first = co_await c.next();
            BOOST_TEST((first == std::optional<std::string>("a")));
        }
        c.cancel();
        auto cancelled = co_await error_of(c.next());
        BOOST_TEST((cancelled == libretto::errc::cancelled));

        std::vector<std::unique_ptr<int>> boxes;
        boxes.push_back(std::make_unique<int>(7));
        boxes.push_back(std::make_unique<int>(8));
        auto u = libretto::make_stream<std::unique_ptr<int>>(ex, std::move(boxes));
        int sum = 0;
        while (auto b = co_await u.next()) sum += **b;
        BOOST_TEST(sum == 15);
        co_await sleep_for(1ms); // the first suspension of this coroutine: the handler runs
        BOOST_TEST(*posted_ran);
    });
}

// A consumer parked in next() on the stream's executor takes each item inside the
// producer's emit() call: with capacity 1 the producer never waits for room, and the whole
// exchange, end included, runs without a pass through the event loop.
BOOST_AUTO_TEST_CASE(a_parked_consumer_takes_each_item_inside_emit) {
    run([](executor ex) -> asio::awaitable<void> {
        auto got = std::make_shared<std::vector<int>>();
        auto seen_at_emit = std::make_shared<std::vector<std::size_t>>();
        auto producer = [got, seen_at_emit](stream_writer<int> out) -> asio::awaitable<void> {
            for (int i = 0; i < 5; ++i) {
                auto room = out.emit(i); // the consumer runs inside this call
                seen_at_emit->push_back(got->size());
                co_await std::move(room);
            }
        };
        basic_event_stream<int> s(ex, producer, stream_options{1});
        auto posted_ran = std::make_shared<bool>(false);
        asio::post(ex, [posted_ran] { *posted_ran = true; });
        for (;;) {
            auto next = s.next();
            std::optional<int> v = co_await std::move(next);
            if (!v) break;
            got->push_back(*v);
        }
        BOOST_TEST(!*posted_ran); // never back to the event loop
        BOOST_TEST(*got == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
        BOOST_TEST(*seen_at_emit == (std::vector<std::size_t>{1, 2, 3, 4, 5}), boost::test_tools::per_element());
        co_await sleep_for(1ms);
        BOOST_TEST(*posted_ran);
    });
}

// A consumer run inside emit() whose coroutine ends in an exception that its co_spawn
// handler rethrows: the exception leaves io_context::run(), as it would have through a
// post (Asio's io_context captures what an inline-dispatched handler throws), and the
// producer's emit() is not affected.
BOOST_AUTO_TEST_CASE(an_exception_escaping_a_consumer_run_inside_emit_leaves_the_event_loop) {
    asio::io_context io;
    auto returned = std::make_shared<std::vector<int>>();
    auto producer = [returned](stream_writer<int> out) -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
            auto room = out.emit(i); // named: g++ 12
            co_await std::move(room);
            returned->push_back(i);
        }
    };
    auto s = std::make_shared<basic_event_stream<int>>(io.get_executor(), producer, stream_options{1});
    auto consumer = [](std::shared_ptr<basic_event_stream<int>> s) -> asio::awaitable<void> {
        // A real suspension first: Asio then completes this coroutine's co_spawn inline
        // (dispatch) instead of posting, so the handler runs inside the producer's emit().
        co_await sleep_for(1ms);
        auto next = s->next();
        std::optional<int> v = co_await std::move(next);
        if (v) throw std::runtime_error("consumer failed at " + std::to_string(*v));
    };
    asio::co_spawn(io, consumer(s), [](std::exception_ptr ep) {
        if (ep) std::rethrow_exception(ep);
    });
    std::string what;
    try {
        io.run();
    } catch (const std::runtime_error& e) {
        what = e.what();
    }
    BOOST_TEST(what == "consumer failed at 0");
    s.reset(); // the producer is done or parked: dropping the stream cancels what is left
    io.restart();
    io.run();
    BOOST_TEST(!returned->empty()); // emit(0) returned normally
    BOOST_TEST(returned->front() == 0);
}

// A consumer on another executor (a strand here) is never run from inside emit(): it is
// woken through its executor, as every completion is.
BOOST_AUTO_TEST_CASE(a_consumer_on_another_executor_is_woken_by_post) {
    asio::io_context io;
    auto got = std::make_shared<std::vector<int>>();
    auto seen_at_emit = std::make_shared<std::vector<std::size_t>>();
    auto producer = [got, seen_at_emit](stream_writer<int> out) -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
            auto room = out.emit(i);
            seen_at_emit->push_back(got->size());
            co_await std::move(room);
        }
    };
    basic_event_stream<int> s(io.get_executor(), producer, stream_options{1});
    auto consumer = [](basic_event_stream<int>* s, std::shared_ptr<std::vector<int>> got) -> asio::awaitable<void> {
        for (;;) {
            auto next = s->next();
            std::optional<int> v = co_await std::move(next);
            if (!v) break;
            got->push_back(*v);
        }
    };
    std::exception_ptr failure;
    bool done = false;
    asio::co_spawn(asio::make_strand(io), consumer(&s, got), [&](std::exception_ptr ep) {
        failure = ep;
        done = true;
    });
    io.run();
    BOOST_REQUIRE(done);
    if (failure) std::rethrow_exception(failure);
    BOOST_TEST(*got == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
    // Each emit() returned before its item was delivered.
    BOOST_REQUIRE(seen_at_emit->size() == 3u);
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST((*seen_at_emit)[i] <= i);
}

// The consumer, run inside emit(), drops the stream: the producer, still inside that
// call, is sent the cancellation once it awaits that emit, which completes (its item was
// delivered); its next co_await throws; nothing is used after free.
BOOST_AUTO_TEST_CASE(a_consumer_dropping_the_stream_inside_emit_cancels_the_producer) {
    auto outcome = std::make_shared<std::optional<libretto::errc>>();
    auto returned = std::make_shared<std::vector<int>>();
    run([&](executor ex) -> asio::awaitable<void> {
        auto producer = [outcome, returned](stream_writer<int> out) -> asio::awaitable<void> {
            try {
                for (int i = 0;; ++i) {
                    auto room = out.emit(i); // named: g++ 12
                    co_await std::move(room);
                    returned->push_back(i);
                }
            } catch (const boost::system::system_error& e) {
                if (e.code().category() == libretto::error_category())
                    *outcome = static_cast<libretto::errc>(e.code().value());
                else if (e.code() == asio::error::operation_aborted)
                    *outcome = libretto::errc::cancelled;
                throw;
            }
        };
        auto s = std::make_unique<basic_event_stream<int>>(ex, producer, stream_options{1});
        std::optional<int> a = co_await s->next();
        BOOST_TEST(*a == 0);
        s.reset(); // runs inside the producer's emit(0): the item is taken, the stream gone
        co_await sleep_for(5ms);
    });
    // emit(0) returned; the co_await of emit(1) threw.
    BOOST_TEST(*returned == (std::vector<int>{0}), boost::test_tools::per_element());
    BOOST_TEST((*outcome == libretto::errc::cancelled));
}

BOOST_AUTO_TEST_CASE(moving_the_stream_mid_way) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> a(ex, counting_producer{50}, stream_options{2});
        {
            auto got_ = co_await a.next();
            BOOST_TEST(*got_== 0);
        }
        basic_event_stream<int> b(std::move(a));
        {
            auto got_ = co_await b.next();
            BOOST_TEST(*got_== 1);
        }
        auto moved_from = co_await error_of(a.next());
        BOOST_TEST((moved_from == libretto::errc::stream_closed));
        // async_next as well, with every kind of token (it once dereferenced the null state).
        libretto::diagnostics said;
        auto op = a.async_next(said, asio::as_tuple(asio::use_awaitable));
        auto [ec, item] = co_await std::move(op);
        BOOST_TEST((ec == libretto::errc::stream_closed));
        BOOST_TEST(!item.has_value());
        BOOST_TEST(said.message() == "event_stream: next on a moved-from stream");
        bool called = false;
        a.async_next(asio::bind_executor(ex, [&](boost::system::error_code e, std::optional<int> v) {
            called = true;
            BOOST_TEST((e == libretto::errc::stream_closed));
            BOOST_TEST(!v.has_value());
        }));
        BOOST_TEST(!called); // never inside the initiation
        co_await sleep_for(1ms);
        BOOST_TEST(called);
        basic_event_stream<int> c = libretto::make_stream<int>(ex, {9});
        c = std::move(b); // c's old stream is cancelled
        int expected = 2;
        while (auto v = co_await c.next()) BOOST_REQUIRE_EQUAL(*v, expected++);
        BOOST_TEST(expected == 50);
    });
}

BOOST_AUTO_TEST_CASE(second_concurrent_next_is_busy) {
    run([](executor ex) -> asio::awaitable<void> {
        auto s = std::make_shared<basic_event_stream<int>>(
            ex, [](stream_writer<int> out) -> asio::awaitable<void> {
                co_await sleep_for(10ms);
                co_await out.emit(1);
            });
        std::optional<int> first;
        auto consumer = [](std::shared_ptr<basic_event_stream<int>> stream) -> asio::awaitable<std::optional<int>> {
            co_return co_await stream->next();
        };
        asio::co_spawn(ex, consumer(s), [&](std::exception_ptr ep, std::optional<int> v) {
            BOOST_TEST(!ep);
            first = v;
        });
        co_await sleep_for(1ms);
        auto second = co_await error_of(s->next());
        BOOST_TEST((second == libretto::errc::busy));
        co_await sleep_for(20ms);
        BOOST_TEST(*first == 1);
    });
}

BOOST_AUTO_TEST_CASE(emit_after_the_producer_returned_is_stream_closed) {
    auto stray = std::make_shared<std::optional<stream_writer<int>>>();
    run([&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, [stray](stream_writer<int> out) -> asio::awaitable<void> {
            *stray = out; // a copy that outlives the producer
            co_return;
        });
        {
            auto got_ = co_await s.next();
            BOOST_TEST(!got_.has_value());
        }
        auto late = co_await error_of((*stray)->emit(1));
        BOOST_TEST((late == libretto::errc::stream_closed));
        // emit_or_wait returns the refusal to await (it has something to report).
        std::optional<asio::awaitable<void>> refused = (*stray)->emit_or_wait(7);
        BOOST_TEST_REQUIRE(refused.has_value());
        auto later = co_await error_of(std::move(*refused));
        BOOST_TEST((later == libretto::errc::stream_closed));
        BOOST_TEST(!s.try_next().has_value());
    });
    stray->reset();
}

// emit() queues its item when called; the awaitable only waits for room. An emit that is
// never awaited still delivers its item, in call order, and a const item is copied.
BOOST_AUTO_TEST_CASE(emit_queues_when_called_and_awaiting_only_waits) {
    run([&](executor ex) -> asio::awaitable<void> {
        stream_options o;
        o.capacity = 4;
        basic_event_stream<std::string> s(
            ex,
            [](stream_writer<std::string> out) -> asio::awaitable<void> {
                const std::string kept = "second";
                auto first = out.emit(std::string("first"));
                auto second = out.emit(kept); // a copy: `kept` stays as it was
                (void)first;                  // never awaited: queued all the same
                co_await std::move(second);
                std::string third = "third";
                co_await out.emit(std::move(third));
                if (kept != "second") throw std::logic_error("emit(const T&) changed its argument");
            },
            o);
        std::vector<std::string> got;
        for (;;) {
            auto next = s.next();
            std::optional<std::string> item = co_await std::move(next);
            if (!item) break;
            got.push_back(std::move(*item));
        }
        BOOST_TEST((got == std::vector<std::string>{"first", "second", "third"}));
    });
}

// emit_or_wait queues like emit() and returns an awaitable only when the item is past the
// capacity; awaiting it waits until the consumer has taken enough.
BOOST_AUTO_TEST_CASE(emit_or_wait_returns_a_wait_only_past_the_capacity) {
    run([&](executor ex) -> asio::awaitable<void> {
        stream_options o;
        o.capacity = 2;
        auto waits = std::make_shared<std::vector<bool>>();
        auto log = std::make_shared<std::vector<std::string>>();
        basic_event_stream<int> s(
            ex,
            [waits, log](stream_writer<int> out) -> asio::awaitable<void> {
                for (int i = 0; i < 4; ++i) {
                    std::optional<asio::awaitable<void>> w = out.emit_or_wait(int(i));
                    waits->push_back(w.has_value());
                    if (w) {
                        log->push_back("wait " + std::to_string(i));
                        co_await std::move(*w);
                        log->push_back("room " + std::to_string(i));
                    }
                }
            },
            o);
        // Let the producer run ahead of a consumer that takes nothing yet.
        co_await sleep_for(5ms);
        BOOST_TEST(!s.try_next().has_value()); // not started before next()
        auto first = co_await s.next();
        BOOST_TEST((first == std::optional<int>(0)));
        co_await sleep_for(5ms);
        // Item 0 was taken inside its emit by the consumer parked in the first next(); items
        // 1 and 2 fit in the capacity (two unread items); item 3 is past it until the
        // consumer takes one more.
        std::vector<int> got{*first};
        for (;;) {
            auto next = s.next();
            std::optional<int> item = co_await std::move(next);
            if (!item) break;
            got.push_back(*item);
        }
        BOOST_TEST((got == std::vector<int>{0, 1, 2, 3}));
        BOOST_TEST(waits->size() == 4u);
        BOOST_TEST(!(*waits)[0]);
        BOOST_TEST(!(*waits)[1]);
        BOOST_TEST(!(*waits)[2]);
        BOOST_TEST((*waits)[3]);
        BOOST_TEST((*log == std::vector<std::string>{"wait 3", "room 3"}));
    });
}

// With capacity 0 (rendezvous) an emit has nothing to wait for only when a consumer parked
// on the stream's executor took the item inside the call.
BOOST_AUTO_TEST_CASE(emit_or_wait_at_capacity_zero_waits_unless_the_consumer_took_the_item) {
    run([&](executor ex) -> asio::awaitable<void> {
        stream_options o;
        o.capacity = 0;
        auto waits = std::make_shared<std::vector<bool>>();
        basic_event_stream<int> s(
            ex,
            [waits](stream_writer<int> out) -> asio::awaitable<void> {
                std::optional<asio::awaitable<void>> first = out.emit_or_wait(1); // the consumer is parked
                waits->push_back(first.has_value());
                std::optional<asio::awaitable<void>> second = out.emit_or_wait(2); // it is not, yet
                waits->push_back(second.has_value());
                if (second) co_await std::move(*second);
            },
            o);
        auto one = co_await s.next();
        co_await sleep_for(5ms); // not parked when the second item comes
        auto two = co_await s.next();
        auto end = co_await s.next();
        BOOST_TEST((one == std::optional<int>(1)));
        BOOST_TEST((two == std::optional<int>(2)));
        BOOST_TEST(!end.has_value());
        BOOST_TEST((*waits == std::vector<bool>{false, true}));
    });
}

// A refused emit (the producer has returned) queues nothing; the awaitable reports it.
BOOST_AUTO_TEST_CASE(a_refused_emit_queues_nothing) {
    auto stray = std::make_shared<std::optional<stream_writer<int>>>();
    run([&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, [stray](stream_writer<int> out) -> asio::awaitable<void> {
            *stray = out;
            co_await out.emit(1);
        });
        auto one = co_await s.next();
        BOOST_TEST((one == std::optional<int>(1)));
        auto end = co_await s.next();
        BOOST_TEST(!end.has_value());
        auto refused = (*stray)->emit(2); // not queued: the stream has ended
        auto late = co_await error_of(std::move(refused));
        BOOST_TEST((late == libretto::errc::stream_closed));
        auto after = co_await error_of(s.next());
        BOOST_TEST((after == libretto::errc::stream_closed));
    });
    stray->reset();
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_everything_suspended) {
    // No io.run() to completion: the io_context is destroyed while the consumer is parked
    // in next() and the producer on a timer. Must be leak- and ASan-clean.
    auto observed = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    {
        asio::io_context io;
        auto consumer = [](executor ex, std::shared_ptr<bool> o, std::shared_ptr<bool> f) -> asio::awaitable<void> {
            basic_event_stream<int> s(ex, sleeping_producer{1, o, f});
            while (co_await s.next()) {
            }
        };
        asio::co_spawn(io, consumer(io.get_executor(), observed, finished), asio::detached);
        io.run_for(20ms);
    }
    BOOST_TEST(!*finished); // nothing ran during destruction; it was just freed
}

BOOST_AUTO_TEST_SUITE_END()

// ---- run_inline: the producer run in the consumer's coroutine, a sink taking items -------

BOOST_AUTO_TEST_SUITE(event_stream_run_inline)

using access = libretto::detail::stream_access;

/// Records the items; fails at item `fail_at` (if set) with a runtime_error. What accept()
/// returns is what the producer's emit() waits for: an awaitable that counts its awaits,
/// or (with `nothing_to_wait`) nothing.
struct recording_sink final : libretto::detail::stream_state<int>::sink {
    std::vector<int> items;
    std::optional<int> fail_at;
    bool nothing_to_wait = false;
    std::shared_ptr<int> awaited = std::make_shared<int>(0);
    static asio::awaitable<void> count(std::shared_ptr<int> n) {
        ++*n;
        co_return;
    }
    std::optional<asio::awaitable<void>> accept(int&& item) override {
        if (fail_at && item == *fail_at) throw std::runtime_error("sink failed at " + std::to_string(item));
        items.push_back(item);
        if (nothing_to_wait) return std::nullopt;
        return count(awaited);
    }
};

BOOST_AUTO_TEST_CASE(the_sink_takes_every_item_inside_emit_and_the_stream_ends) {
    run([](executor ex) -> asio::awaitable<void> {
        auto consumed = std::make_shared<std::vector<bool>>();
        auto log = std::make_shared<std::vector<int>>();
        recording_sink k;
        auto producer = [consumed, log, &k](stream_writer<int> out) -> asio::awaitable<void> {
            for (int i = 0; i < 5; ++i) {
                auto op = out.emit(i); // the sink has the item before emit() is awaited
                log->push_back(static_cast<int>(k.items.size()));
                co_await std::move(op);
                consumed->push_back(out.consumed_on_emit());
            }
        };
        basic_event_stream<int> s(ex, producer, stream_options{16});
        BOOST_TEST(access::can_run_inline(s, ex));
        auto op = access::run_inline(s, k);
        co_await std::move(op);
        BOOST_TEST(k.items == (std::vector<int>{0, 1, 2, 3, 4}));
        BOOST_TEST(*log == (std::vector<int>{1, 2, 3, 4, 5}));
        BOOST_TEST(*k.awaited == 5);
        BOOST_TEST(*consumed == (std::vector<bool>(5, true)));
        // Ended: a later next() reports a closed stream, and it cannot run again.
        BOOST_TEST(!access::can_run_inline(s, ex));
        auto again = error_of(s.next());
        BOOST_TEST((co_await std::move(again) == libretto::errc::stream_closed));
    });
}

// start_inline, what the runner uses: the caller awaits the producer in its own frame,
// then finish() reports. A second start finds nothing to run. Dropped before its body is
// awaited, it cancels the stream: a consumer is not left waiting for a producer that
// nobody runs.
BOOST_AUTO_TEST_CASE(start_inline_runs_the_producer_in_the_callers_frame_and_an_unawaited_one_cancels) {
    run([](executor ex) -> asio::awaitable<void> {
        auto producer = [](stream_writer<int> out) -> asio::awaitable<void> {
            for (int i = 0; i < 3; ++i) {
                auto op = out.emit(i);
                co_await std::move(op);
            }
        };
        {
            recording_sink k;
            basic_event_stream<int> s(ex, producer, stream_options{16});
            auto r = access::start_inline(s, k);
            BOOST_TEST(!access::can_run_inline(s, ex));
            bool busy = false;
            try {
                auto again = access::start_inline(s, k);
            } catch (const boost::system::system_error& e) {
                busy = e.code() == libretto::make_error_code(libretto::errc::busy);
            }
            BOOST_TEST(busy);
            BOOST_TEST(k.items.empty()); // nothing runs before the body is awaited
            co_await std::move(r.body());
            r.finish();
            BOOST_TEST(k.items == (std::vector<int>{0, 1, 2}));
            auto after = error_of(s.next());
            BOOST_TEST((co_await std::move(after) == libretto::errc::stream_closed));
        }
        {
            recording_sink k;
            basic_event_stream<int> s(ex, producer, stream_options{16});
            { auto dropped = access::start_inline(s, k); }
            auto after = error_of(s.next());
            BOOST_TEST((co_await std::move(after) == libretto::errc::cancelled));
            BOOST_TEST(k.items.empty());
        }
    });
}

// A sink with nothing to wait for: emit_or_wait gives nothing to await, and emit() an
// awaitable that completes at once; the items are the sink's either way.
BOOST_AUTO_TEST_CASE(a_sink_with_nothing_to_wait_for_makes_emit_or_wait_return_nothing) {
    run([](executor ex) -> asio::awaitable<void> {
        recording_sink k;
        k.nothing_to_wait = true;
        auto waits = std::make_shared<std::vector<bool>>();
        auto producer = [waits](stream_writer<int> out) -> asio::awaitable<void> {
            for (int i = 0; i < 3; ++i) {
                std::optional<asio::awaitable<void>> w = out.emit_or_wait(int(i));
                waits->push_back(w.has_value());
            }
            co_await out.emit(3);
        };
        basic_event_stream<int> s(ex, producer);
        auto op = access::run_inline(s, k);
        co_await std::move(op);
        BOOST_TEST(k.items == (std::vector<int>{0, 1, 2, 3}));
        BOOST_TEST(*waits == (std::vector<bool>{false, false, false}));
        BOOST_TEST(*k.awaited == 0);
    });
}

BOOST_AUTO_TEST_CASE(the_producers_exception_comes_out_of_run_inline_after_its_items) {
    run([](executor ex) -> asio::awaitable<void> {
        recording_sink k;
        auto producer = [](stream_writer<int> out) -> asio::awaitable<void> {
            co_await out.emit(1);
            co_await out.emit(2);
            throw std::logic_error("producer broke");
        };
        basic_event_stream<int> s(ex, producer);
        std::string what;
        try {
            auto op = access::run_inline(s, k);
            co_await std::move(op);
        } catch (const std::logic_error& e) {
            what = e.what();
        }
        BOOST_TEST(what == "producer broke");
        BOOST_TEST(k.items == (std::vector<int>{1, 2}));
    });
}

BOOST_AUTO_TEST_CASE(a_failing_sink_cancels_the_producer_and_its_error_wins) {
    run([](executor ex) -> asio::awaitable<void> {
        recording_sink k;
        k.fail_at = 2;
        auto seen = std::make_shared<std::optional<libretto::errc>>();
        auto after = std::make_shared<std::optional<libretto::errc>>();
        auto producer = [seen, after](stream_writer<int> out) -> asio::awaitable<void> {
            co_await out.emit(1);
            try {
                co_await out.emit(2);
            } catch (const boost::system::system_error& e) {
                *seen = static_cast<libretto::errc>(e.code().value());
            }
            // A producer that goes on anyway is refused, and its item goes nowhere:
            // emit_or_wait returns the refusal to await.
            std::optional<asio::awaitable<void>> more = out.emit_or_wait(3);
            if (more) *after = co_await error_of(std::move(*more));
            throw std::logic_error("the producer's own error, after the sink's");
        };
        basic_event_stream<int> s(ex, producer);
        std::string what;
        try {
            auto op = access::run_inline(s, k);
            co_await std::move(op);
        } catch (const std::runtime_error& e) {
            what = e.what();
        }
        BOOST_TEST(what == "sink failed at 2");
        BOOST_TEST(k.items == (std::vector<int>{1}));
        BOOST_TEST((*seen == libretto::errc::cancelled));
        BOOST_TEST((*after == libretto::errc::cancelled));
    });
}

BOOST_AUTO_TEST_CASE(cancelling_the_consumers_coroutine_reaches_the_producer) {
    asio::io_context io;
    asio::cancellation_signal signal;
    auto cancelled = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    recording_sink k;
    std::exception_ptr outcome;
    bool done = false;
    auto consumer = [&](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(ex, sleeping_producer{2, cancelled, finished});
        auto op = access::run_inline(s, k);
        co_await std::move(op);
    };
    asio::co_spawn(io, consumer(io.get_executor()), asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr ep) {
                       outcome = ep;
                       done = true;
                   }));
    asio::steady_timer t(io, 10ms);
    t.async_wait([&](boost::system::error_code) { signal.emit(asio::cancellation_type::terminal); });
    io.run();
    BOOST_TEST(done);
    BOOST_TEST(*cancelled);
    BOOST_TEST(*finished);
    BOOST_TEST(k.items == (std::vector<int>{0, 1}));
    BOOST_TEST(static_cast<bool>(outcome)); // the producer's cancellation, rethrown
}

BOOST_AUTO_TEST_CASE(only_an_unstarted_producer_on_the_same_executor_runs_inline) {
    run([](executor ex) -> asio::awaitable<void> {
        // Started by a next(): no longer.
        basic_event_stream<int> started(ex, counting_producer{3});
        auto first = started.next();
        std::optional<int> v = co_await std::move(first);
        BOOST_TEST((v == 0));
        BOOST_TEST(!access::can_run_inline(started, ex));
        // A stream over ready items has no producer to run.
        auto ready = libretto::make_stream<int>(ex, {1, 2});
        BOOST_TEST(!access::can_run_inline(ready, ex));
        // Another executor (a strand of this one).
        executor strand = asio::make_strand(ex);
        basic_event_stream<int> elsewhere(strand, counting_producer{3});
        BOOST_TEST(!access::can_run_inline(elsewhere, ex));
        BOOST_TEST(access::can_run_inline(elsewhere, strand));
        // Moved-from, and cancelled.
        basic_event_stream<int> moved(ex, counting_producer{3});
        basic_event_stream<int> taker(std::move(moved));
        BOOST_TEST(!access::can_run_inline(moved, ex));
        taker.cancel();
        BOOST_TEST(!access::can_run_inline(taker, ex));
        // An ordinary consumer: the writer says items are not consumed inside emit().
        auto flags = std::make_shared<std::vector<bool>>();
        basic_event_stream<int> plain(ex, [flags](stream_writer<int> out) -> asio::awaitable<void> {
            co_await out.emit(7);
            flags->push_back(out.consumed_on_emit());
        });
        auto n1 = plain.next();
        co_await std::move(n1);
        auto n2 = plain.next();
        co_await std::move(n2);
        BOOST_TEST(*flags == (std::vector<bool>{false}));
    });
}

BOOST_AUTO_TEST_SUITE_END()

// ---- try_next: ready items without a coroutine ---------------------------------------------

BOOST_AUTO_TEST_SUITE(event_stream_try_next)

BOOST_AUTO_TEST_CASE(takes_ready_items_then_leaves_the_end_to_next) {
    run([](executor ex) -> asio::awaitable<void> {
        auto s = libretto::make_stream<int>(ex, {1, 2, 3});
        std::vector<int> got;
        while (auto v = s.try_next()) got.push_back(*v);
        BOOST_TEST(got == (std::vector<int>{1, 2, 3}));
        BOOST_TEST(!s.try_next().has_value()); // still nothing: the end is next()'s to report
        auto end = s.next();
        BOOST_TEST(!(co_await std::move(end)).has_value());
        auto closed = error_of(s.next());
        BOOST_TEST((co_await std::move(closed) == libretto::errc::stream_closed));
        BOOST_TEST(!s.try_next().has_value());
    });
}

BOOST_AUTO_TEST_CASE(never_starts_the_producer_and_takes_what_it_ran_ahead_with) {
    run([](executor ex) -> asio::awaitable<void> {
        auto started = std::make_shared<bool>(false);
        basic_event_stream<int> s(
            ex,
            [started](stream_writer<int> out) -> asio::awaitable<void> {
                *started = true;
                for (int i = 0; i < 4; ++i) co_await out.emit(i);
            },
            stream_options{16});
        BOOST_TEST(!s.try_next().has_value());
        BOOST_TEST(!*started);
        auto first = s.next(); // starts it; it runs ahead into the buffer
        std::optional<int> v = co_await std::move(first);
        BOOST_TEST((v == 0));
        std::vector<int> rest;
        for (;;) {
            std::optional<int> item = s.try_next();
            if (!item) {
                auto next = s.next();
                item = co_await std::move(next);
            }
            if (!item) break;
            rest.push_back(*item);
        }
        BOOST_TEST(rest == (std::vector<int>{1, 2, 3}));
    });
}

BOOST_AUTO_TEST_CASE(a_failed_producers_items_first_then_next_throws) {
    run([](executor ex) -> asio::awaitable<void> {
        basic_event_stream<int> s(
            ex,
            [](stream_writer<int> out) -> asio::awaitable<void> {
                co_await out.emit(1);
                co_await out.emit(2);
                throw std::logic_error("broke after two");
            },
            stream_options{16});
        auto first = s.next();
        std::optional<int> v = co_await std::move(first);
        BOOST_TEST((v == 1));
        // The consumer took 1 inside the producer's emit(): let the producer run on (it
        // buffers 2, then fails).
        co_await sleep_for(1ms);
        std::optional<int> second = s.try_next();
        BOOST_TEST((second == 2));
        BOOST_TEST(!s.try_next().has_value());
        std::string what;
        try {
            auto next = s.next();
            co_await std::move(next);
        } catch (const std::logic_error& e) {
            what = e.what();
        }
        BOOST_TEST(what == "broke after two");
    });
}

// stream_access::try_take: try_next's items, in their slots (the caller moves from them).
BOOST_AUTO_TEST_CASE(try_take_gives_the_ready_items_in_their_slots_and_nothing_else) {
    using access = libretto::detail::stream_access;
    run([](executor ex) -> asio::awaitable<void> {
        auto s = libretto::make_stream<std::string>(ex, {"one", "two", "three"});
        std::vector<std::string> got;
        while (std::string* slot = access::try_take(s)) {
            got.push_back(std::move(*slot));
            BOOST_TEST(slot->empty()); // moved from: the slot itself, not a copy
        }
        BOOST_TEST((got == std::vector<std::string>{"one", "two", "three"}));
        BOOST_TEST(!access::try_take(s)); // the end is next()'s to report
        auto end = s.next();
        BOOST_TEST(!(co_await std::move(end)).has_value());
        BOOST_TEST(!access::try_take(s));

        // A producer that has not started is not started; a cancelled or moved-from stream
        // gives nothing.
        auto started = std::make_shared<bool>(false);
        basic_event_stream<std::string> lazy(ex, [started](stream_writer<std::string> out) -> asio::awaitable<void> {
            *started = true;
            co_await out.emit(std::string("x"));
        });
        BOOST_TEST(!access::try_take(lazy));
        BOOST_TEST(!*started);
        auto ready = libretto::make_stream<std::string>(ex, {"a", "b"});
        basic_event_stream<std::string> taker(std::move(ready));
        BOOST_TEST(!access::try_take(ready));
        std::string* a = access::try_take(taker);
        BOOST_TEST_REQUIRE(a);
        BOOST_TEST(*a == "a");
        taker.cancel();
        BOOST_TEST(!access::try_take(taker)); // "b" was dropped
    });
}

BOOST_AUTO_TEST_CASE(nothing_from_a_cancelled_or_moved_from_stream) {
    run([](executor ex) -> asio::awaitable<void> {
        auto s = libretto::make_stream<int>(ex, {1, 2});
        basic_event_stream<int> taker(std::move(s));
        BOOST_TEST(!s.try_next().has_value()); // moved-from
        BOOST_TEST((taker.try_next() == 1));
        taker.cancel();
        BOOST_TEST(!taker.try_next().has_value()); // the buffered 2 was dropped
        auto after = error_of(taker.next());
        BOOST_TEST((co_await std::move(after) == libretto::errc::cancelled));
    });
}

BOOST_AUTO_TEST_SUITE_END()
