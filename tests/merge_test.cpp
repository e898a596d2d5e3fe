// Tests of libretto::merge (include/libretto/stream/merge.hpp).
#include <libretto/stream/merge.hpp>

#include <libretto/error.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using libretto::basic_event_stream;
using libretto::stream_options;
using libretto::stream_writer;

namespace {

using executor = asio::any_io_executor;

/// An item tagged with its source.
struct tagged {
    int source;
    int index;
};

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

/// Source `id` emits `count` items, sleeping `delay` before each.
basic_event_stream<tagged> paced_source(executor ex, int id, int count,
                                        std::chrono::steady_clock::duration delay) {
    return basic_event_stream<tagged>(ex, [=](stream_writer<tagged> out) -> asio::awaitable<void> {
        for (int i = 0; i < count; ++i) {
            if (delay.count() > 0) co_await sleep_for(delay);
            tagged item{id, i};
            co_await out.emit(std::move(item));
        }
    });
}

/// Emits `before` items, then sleeps for an hour; records cancellation.
struct sleeper_flags {
    bool observed_cancel = false;
    bool finished = false;
};
basic_event_stream<tagged> sleeping_source(executor ex, int id, int before, std::shared_ptr<sleeper_flags> flags) {
    return basic_event_stream<tagged>(ex, [=](stream_writer<tagged> out) -> asio::awaitable<void> {
        for (int i = 0; i < before; ++i) {
            tagged item{id, i};
            co_await out.emit(std::move(item));
        }
        try {
            asio::steady_timer t(out.get_executor(), 1h);
            co_await t.async_wait(asio::use_awaitable);
        } catch (const boost::system::system_error&) {
            flags->observed_cancel = true;
            flags->finished = true;
            throw;
        }
        flags->finished = true;
    });
}

/// Drains `s`; checks every source's items arrive in order; returns the per-source counts
/// and the sequence of source ids in arrival order.
asio::awaitable<std::pair<std::map<int, int>, std::vector<int>>> drain(basic_event_stream<tagged>& s) {
    std::map<int, int> next_index;
    std::vector<int> arrival;
    while (std::optional<tagged> v = co_await s.next()) {
        BOOST_REQUIRE_EQUAL(v->index, next_index[v->source]); // per-source order
        ++next_index[v->source];
        arrival.push_back(v->source);
    }
    co_return std::make_pair(std::move(next_index), std::move(arrival));
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

} // namespace

BOOST_AUTO_TEST_SUITE(merge)

BOOST_AUTO_TEST_CASE(interleaves_and_keeps_each_source_order) {
    run([](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(paced_source(ex, 0, 10, 8ms));
        sources.push_back(paced_source(ex, 1, 15, 2ms));
        sources.push_back(paced_source(ex, 2, 30, 1ms));
        auto merged = libretto::merge(ex, std::move(sources));
        auto result = co_await drain(merged);
        auto& counts = result.first;
        auto& arrival = result.second;
        BOOST_TEST(counts[0] == 10);
        BOOST_TEST(counts[1] == 15);
        BOOST_TEST(counts[2] == 30);
        BOOST_REQUIRE_EQUAL(arrival.size(), 55u);
        // Interleaved, not concatenated: the slow source 0 finishes last, and its first
        // item arrives before the fast source 2 has finished.
        BOOST_TEST(arrival.back() == 0);
        std::size_t first_zero = 0;
        while (arrival[first_zero] != 0) ++first_zero;
        std::size_t last_two = arrival.size() - 1;
        while (arrival[last_two] != 2) --last_two;
        BOOST_TEST(first_zero < last_two);
    });
}

BOOST_AUTO_TEST_CASE(empty_list_ends_at_once) {
    run([](executor ex) -> asio::awaitable<void> {
        auto merged = libretto::merge(ex, std::vector<basic_event_stream<int>>{});
        std::optional<int> v = co_await merged.next();
        BOOST_TEST(!v.has_value());
    });
}

BOOST_AUTO_TEST_CASE(an_empty_source_does_not_end_the_merge) {
    run([](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(paced_source(ex, 0, 0, 0ms));
        sources.push_back(paced_source(ex, 1, 20, 1ms));
        auto merged = libretto::merge(ex, std::move(sources));
        auto result = co_await drain(merged);
        BOOST_TEST(result.first[0] == 0);
        BOOST_TEST(result.first[1] == 20);
    });
}

BOOST_AUTO_TEST_CASE(eight_sources_of_a_thousand) {
    for (std::size_t capacity : {0u, 1u, 16u}) {
        run([capacity](executor ex) -> asio::awaitable<void> {
            std::vector<basic_event_stream<tagged>> sources;
            for (int id = 0; id < 8; ++id) sources.push_back(paced_source(ex, id, 1000, 0ms));
            auto merged = libretto::merge(ex, std::move(sources), stream_options{capacity});
            auto result = co_await drain(merged);
            for (int id = 0; id < 8; ++id) BOOST_TEST(result.first[id] == 1000);
            BOOST_TEST(result.second.size() == 8000u);
        });
    }
}

BOOST_AUTO_TEST_CASE(a_failing_source_cancels_the_others_and_its_error_arrives_last) {
    auto a = std::make_shared<sleeper_flags>();
    auto b = std::make_shared<sleeper_flags>();
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(sleeping_source(ex, 0, 2, a));
        sources.push_back(basic_event_stream<tagged>(ex, [](stream_writer<tagged> out) -> asio::awaitable<void> {
            for (int i = 0; i < 3; ++i) {
                co_await sleep_for(2ms);
                tagged item{1, i};
                co_await out.emit(std::move(item));
            }
            throw std::runtime_error("source 1 broke");
        }));
        sources.push_back(sleeping_source(ex, 2, 1, b));
        auto merged = libretto::merge(ex, std::move(sources));
        std::map<int, int> counts;
        std::string message;
        try {
            while (std::optional<tagged> v = co_await merged.next()) ++counts[v->source];
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
        BOOST_TEST(message == "source 1 broke");
        BOOST_TEST(counts[0] == 2);
        BOOST_TEST(counts[1] == 3); // everything source 1 emitted came before its error
        BOOST_TEST(counts[2] == 1);
        auto after = co_await merged.async_next(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(std::get<0>(after) == libretto::errc::stream_closed);
    });
    BOOST_TEST(a->observed_cancel);
    BOOST_TEST(b->observed_cancel);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(error_after_buffered_items_with_slow_consumer) {
    // The failing source's items are buffered while the consumer is slow; they are all
    // delivered before the error.
    run([](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(paced_source(ex, 0, 5, 0ms));
        sources.push_back(basic_event_stream<tagged>(ex, [](stream_writer<tagged> out) -> asio::awaitable<void> {
            for (int i = 0; i < 4; ++i) {
                tagged item{1, i};
                co_await out.emit(std::move(item));
            }
            throw std::runtime_error("late failure");
        }));
        auto merged = libretto::merge(ex, std::move(sources), stream_options{64});
        std::map<int, int> counts;
        std::string message;
        try {
            while (std::optional<tagged> v = co_await merged.next()) {
                ++counts[v->source];
                co_await sleep_for(1ms);
            }
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
        BOOST_TEST(message == "late failure");
        BOOST_TEST(counts[1] == 4);
    });
}

BOOST_AUTO_TEST_CASE(destroying_the_merged_stream_cancels_every_source) {
    auto a = std::make_shared<sleeper_flags>();
    auto b = std::make_shared<sleeper_flags>();
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(sleeping_source(ex, 0, 1, a));
        sources.push_back(sleeping_source(ex, 1, 1, b));
        std::optional<basic_event_stream<tagged>> merged;
        merged.emplace(libretto::merge(ex, std::move(sources)));
        {
            auto first = co_await merged->next();
            BOOST_TEST(first.has_value());
        }
        co_await sleep_for(5ms); // both sources now sleep
        merged.reset();
        co_await sleep_for(5ms);
        BOOST_TEST(a->observed_cancel);
        BOOST_TEST(b->observed_cancel);
    });
    BOOST_TEST(a->finished);
    BOOST_TEST(b->finished);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(destroying_an_unstarted_merge_cancels_sources) {
    auto a = std::make_shared<sleeper_flags>();
    run([&](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(sleeping_source(ex, 0, 0, a));
        {
            auto merged = libretto::merge(ex, std::move(sources));
        }
        co_await sleep_for(1ms);
    });
    BOOST_TEST(!a->finished); // never started, and nothing left running
}

BOOST_AUTO_TEST_CASE(cancelling_a_pending_next_on_the_merge_cancels_sources) {
    auto a = std::make_shared<sleeper_flags>();
    auto b = std::make_shared<sleeper_flags>();
    auto took = run([&](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> sources;
        sources.push_back(sleeping_source(ex, 0, 0, a));
        sources.push_back(sleeping_source(ex, 1, 0, b));
        auto merged = std::make_shared<basic_event_stream<tagged>>(libretto::merge(ex, std::move(sources)));
        asio::cancellation_signal signal;
        std::exception_ptr error;
        bool done = false;
        auto consumer = [](std::shared_ptr<basic_event_stream<tagged>> m) -> asio::awaitable<void> {
            (void)co_await m->next();
        };
        asio::co_spawn(ex, consumer(merged), asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr ep) {
            error = ep;
            done = true;
        }));
        co_await sleep_for(5ms);
        signal.emit(asio::cancellation_type::terminal);
        co_await sleep_for(5ms);
        BOOST_TEST(done);
        BOOST_TEST(is_errc(error, libretto::errc::cancelled));
    });
    BOOST_TEST(a->observed_cancel);
    BOOST_TEST(b->observed_cancel);
    BOOST_TEST(took < 5s);
}

BOOST_AUTO_TEST_CASE(merge_of_merges) {
    run([](executor ex) -> asio::awaitable<void> {
        std::vector<basic_event_stream<tagged>> left;
        left.push_back(paced_source(ex, 0, 50, 0ms));
        left.push_back(paced_source(ex, 1, 50, 1ms));
        std::vector<basic_event_stream<tagged>> right;
        right.push_back(paced_source(ex, 2, 50, 0ms));
        right.push_back(libretto::make_stream<tagged>(ex, {tagged{3, 0}, tagged{3, 1}}));
        auto merged = libretto::merge(ex, libretto::merge(ex, std::move(left)),
                                      libretto::merge(ex, std::move(right), stream_options{2}));
        auto result = co_await drain(merged);
        BOOST_TEST(result.first[0] == 50);
        BOOST_TEST(result.first[1] == 50);
        BOOST_TEST(result.first[2] == 50);
        BOOST_TEST(result.first[3] == 2);
    });
}

BOOST_AUTO_TEST_CASE(variadic_merge_of_move_only_items) {
    run([](executor ex) -> asio::awaitable<void> {
        auto make = [ex](int base) {
            return basic_event_stream<std::unique_ptr<int>>(
                ex, [base](stream_writer<std::unique_ptr<int>> out) -> asio::awaitable<void> {
                    for (int i = 0; i < 10; ++i) {
                        auto item = std::make_unique<int>(base + i);
                        co_await out.emit(std::move(item));
                    }
                });
        };
        auto merged = libretto::merge(ex, make(0), make(100), make(200));
        int sum = 0, n = 0;
        while (auto v = co_await merged.next()) {
            sum += **v;
            ++n;
        }
        BOOST_TEST(n == 30);
        BOOST_TEST(sum == (0 + 100 + 200) * 10 + 3 * 45);
    });
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_mid_merge) {
    // The io_context goes away while the consumer is parked on the merge, one pump is
    // parked on a sleeping source and another source sits on a full buffer. Must be leak-
    // and ASan-clean.
    auto a = std::make_shared<sleeper_flags>();
    {
        asio::io_context io;
        auto consumer = [](executor ex, std::shared_ptr<sleeper_flags> flags) -> asio::awaitable<void> {
            std::vector<basic_event_stream<tagged>> sources;
            sources.push_back(sleeping_source(ex, 0, 1, flags));
            sources.push_back(paced_source(ex, 1, 1000, 0ms));
            auto merged = libretto::merge(ex, std::move(sources), stream_options{1});
            auto first = co_await merged.next();
            BOOST_TEST(first.has_value());
            asio::steady_timer t(ex, 1h);
            co_await t.async_wait(asio::use_awaitable);
        };
        asio::co_spawn(io, consumer(io.get_executor(), a), asio::detached);
        io.run_for(20ms);
    }
    BOOST_TEST(!a->finished);
}

BOOST_AUTO_TEST_SUITE_END()
