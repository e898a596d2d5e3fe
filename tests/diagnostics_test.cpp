// diagnostics.hpp and the one error model of the stores (docs/errors.md): every operation of
// memory_store, jsonl_store and any_store, driven with each kind of completion token (a
// plain callback, use_awaitable, as_tuple(use_awaitable), deferred, as_tuple(deferred),
// use_future with the io_context on another thread, a bound cancellation slot), completes
// with its error_code and writes its words to the caller's diagnostics; a following
// successful operation clears them; operations that interleave on one thread keep their own.
#include <libretto/diagnostics.hpp>

#include <libretto/async.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <exception>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;
namespace fs = std::filesystem;
using boost::system::error_code;

} // namespace

// ---- the diagnostics type itself ----------------------------------------------------------

BOOST_AUTO_TEST_SUITE(diagnostics_type)

BOOST_AUTO_TEST_CASE(assign_append_clear_and_compare) {
    lb::diagnostics d;
    BOOST_TEST(d.empty());
    BOOST_TEST(d.message() == "");
    d.append("");
    BOOST_TEST(d.empty()); // nothing to add
    d.append("first");
    BOOST_TEST(d.message() == "first"); // no separator before the first cause
    d.append("second");
    BOOST_TEST(d.message() == "first: second");
    d.append("");
    BOOST_TEST(d.message() == "first: second");
    lb::diagnostics e;
    e.assign("first: second");
    BOOST_TEST((d == e));
    e.assign("other");
    BOOST_TEST(e.message() == "other"); // replaced, not added to
    BOOST_TEST(!(d == e));
    d.clear();
    BOOST_TEST(d.empty());
    BOOST_TEST((d == lb::diagnostics{}));
}

BOOST_AUTO_TEST_CASE(error_with_diagnostics_carries_code_and_words) {
    lb::diagnostics d;
    d.assign("jsonl_store: a.jsonl:3: the line is cut short");
    const lb::error_with_diagnostics e(lb::errc::corrupt_data, d);
    BOOST_TEST((e.code() == lb::errc::corrupt_data));
    BOOST_TEST(e.get_diagnostics().message() == "jsonl_store: a.jsonl:3: the line is cut short");
    // what(): the words, then the code's own message (and Boost.System's "[category:value]").
    const std::string what = e.what();
    BOOST_TEST(what.find("jsonl_store: a.jsonl:3: the line is cut short: stored data is corrupt [") == 0u, what);
    // It is a system_error: code that catches those sees the same code.
    const boost::system::system_error& base = e;
    BOOST_TEST((base.code() == lb::errc::corrupt_data));
}

BOOST_AUTO_TEST_CASE(throw_on_error_and_describe) {
    lb::diagnostics d;
    BOOST_CHECK_NO_THROW(lb::throw_on_error(error_code{}, d));
    d.assign("sqlite_store: session a/b/c does not exist");
    BOOST_CHECK_NO_THROW(lb::throw_on_error(error_code{}, d)); // words without a failure: no throw
    try {
        lb::throw_on_error(lb::errc::not_found, d);
        BOOST_TEST(false, "no exception");
    } catch (const lb::error_with_diagnostics& e) {
        BOOST_TEST((e.code() == lb::errc::not_found));
        BOOST_TEST(e.get_diagnostics().message() == "sqlite_store: session a/b/c does not exist");
    }
    BOOST_TEST(lb::describe(lb::errc::not_found, d) == "not found (sqlite_store: session a/b/c does not exist)");
    BOOST_TEST(lb::describe(lb::errc::not_found, lb::diagnostics{}) == "not found");
}

BOOST_AUTO_TEST_CASE(the_default_token_is_deferred) {
    static_assert(std::is_same_v<lb::default_completion_token_t, asio::deferred_t>);
    asio::io_context io;
    lb::memory_store st(io.get_executor());
    lb::diagnostics d;
    auto op = st.async_create(lb::create_options("app", "u", "s"), d);
    static_assert(!std::is_void_v<decltype(op)>); // a deferred operation, nothing started yet
    bool done = false;
    std::move(op)([&](error_code ec, lb::session s) {
        BOOST_TEST(!ec);
        BOOST_TEST(s.id == "s");
        done = true;
    });
    io.run();
    BOOST_TEST(done);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// ---- the stores ---------------------------------------------------------------------------

/// One pool for the blocking work of every jsonl_store in this file.
asio::any_io_executor shared_pool() {
    static asio::thread_pool pool(2);
    return pool.get_executor();
}

struct temp_dir {
    fs::path path;
    temp_dir() {
        static std::atomic<int> counter{0};
        path = fs::current_path() / ("diagnostics-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

lb::jsonl_store jsonl_on(asio::io_context& io, const fs::path& dir) {
    lb::jsonl_store_options o;
    o.directory = dir;
    o.durability = lb::durability::none;
    o.blocking_executor = shared_pool();
    return lb::jsonl_store(io.get_executor(), o);
}

struct memory_kind {
    static constexpr const char* prefix = "memory_store: ";
    lb::memory_store make(asio::io_context& io) { return lb::memory_store(io.get_executor()); }
};
struct jsonl_kind {
    static constexpr const char* prefix = "jsonl_store: ";
    temp_dir dir;
    lb::jsonl_store make(asio::io_context& io) { return jsonl_on(io, dir.path); }
};
struct any_jsonl_kind {
    static constexpr const char* prefix = "jsonl_store: ";
    temp_dir dir;
    lb::any_store make(asio::io_context& io) { return lb::any_store(jsonl_on(io, dir.path)); }
};
using kinds = std::tuple<memory_kind, jsonl_kind, any_jsonl_kind>;

lb::event text_event(std::string text) {
    return lb::event::make(lb::event_type::agent_message, "agent", lb::content::from_text(std::move(text)));
}

// ---- one driver per kind of completion token ----------------------------------------------
// Driver::call<T>(io, start) runs `start(token)` (which starts one store operation with the
// driver's token) to its completion and returns what came back.

template <class T>
struct outcome {
    error_code ec;
    std::optional<T> value;
    bool completed = false;
    bool completed_inline = false; ///< the handler ran inside the initiating call
    bool threw = false;            ///< use_awaitable: the failure was thrown
    bool threw_with_diagnostics = false;
    std::string what;              ///< the thrown error's what()
};

/// Rethrows what a coroutine let escape (a failed BOOST_REQUIRE, an unexpected exception).
inline void run_coroutine(asio::io_context& io, asio::awaitable<void> a) {
    std::exception_ptr failure;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e) { failure = e; });
    io.run();
    io.restart();
    if (failure) std::rethrow_exception(failure);
}

struct callback_driver {
    static constexpr bool checks_inline = true;
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        int calls = 0;
        start([&](error_code ec, T v) {
            ++calls;
            o.ec = ec;
            if (!ec) o.value = std::move(v);
            o.completed = true;
        });
        o.completed_inline = o.completed;
        io.run();
        io.restart();
        BOOST_TEST(calls == 1);
        return o;
    }
};

struct awaitable_driver {
    static constexpr bool throws = true;
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        auto body = [&]() -> asio::awaitable<void> {
            try {
                auto op = start(asio::use_awaitable);
                o.value = co_await std::move(op);
            } catch (const lb::error_with_diagnostics& e) {
                o.ec = e.code();
                o.threw = o.threw_with_diagnostics = true;
                o.what = e.what();
            } catch (const boost::system::system_error& e) {
                o.ec = e.code();
                o.threw = true;
                o.what = e.what();
            }
            o.completed = true;
        };
        run_coroutine(io, body());
        return o;
    }
};

struct as_tuple_awaitable_driver {
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        auto body = [&]() -> asio::awaitable<void> {
            auto op = start(asio::as_tuple(asio::use_awaitable));
            auto [ec, v] = co_await std::move(op);
            o.ec = ec;
            if (!ec) o.value = std::move(v);
            o.completed = true;
        };
        run_coroutine(io, body());
        return o;
    }
};

/// deferred: the operation starts when the deferred object is called with a handler.
struct deferred_driver {
    static constexpr bool checks_inline = true;
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        auto op = start(asio::deferred);
        int calls = 0;
        std::move(op)([&](error_code ec, T v) {
            ++calls;
            o.ec = ec;
            if (!ec) o.value = std::move(v);
            o.completed = true;
        });
        o.completed_inline = o.completed;
        io.run();
        io.restart();
        BOOST_TEST(calls == 1);
        return o;
    }
};

/// as_tuple(deferred), awaited in a coroutine.
struct as_tuple_deferred_driver {
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        auto body = [&]() -> asio::awaitable<void> {
            auto op = start(asio::as_tuple(asio::deferred));
            auto [ec, v] = co_await std::move(op);
            o.ec = ec;
            if (!ec) o.value = std::move(v);
            o.completed = true;
        };
        run_coroutine(io, body());
        return o;
    }
};

/// use_future: the io_context runs on a thread of its own; this thread waits on the future.
struct future_driver {
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        auto guard = asio::make_work_guard(io);
        std::thread runner([&] { io.run(); });
        std::future<T> f = start(asio::use_future);
        try {
            o.value = f.get();
        } catch (const boost::system::system_error& e) {
            o.ec = e.code();
        }
        o.completed = true;
        guard.reset();
        runner.join();
        io.restart();
        return o;
    }
};

/// A plain callback with a cancellation slot bound to it, and a terminal cancellation
/// emitted while the operation is in flight. These stores' operations are not
/// cancellable (each is short and completes anyway): the operation completes once, with
/// its own result and words, and a handler with a slot works with every store.
struct cancellation_slot_driver {
    template <class T, class Start>
    static outcome<T> call(asio::io_context& io, Start start) {
        outcome<T> o;
        asio::cancellation_signal signal;
        int calls = 0;
        start(asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, T v) {
            ++calls;
            o.ec = ec;
            if (!ec) o.value = std::move(v);
            o.completed = true;
        }));
        signal.emit(asio::cancellation_type::terminal);
        io.run();
        io.restart();
        BOOST_TEST(calls == 1);
        return o;
    }
};

template <class D>
constexpr bool driver_throws() {
    if constexpr (requires { D::throws; }) return D::throws;
    else return false;
}
template <class D>
constexpr bool driver_checks_inline() {
    if constexpr (requires { D::checks_inline; }) return D::checks_inline;
    else return false;
}

/// A failed operation: its code, the store's prefix and `words` in the caller's
/// diagnostics, and (use_awaitable) an error_with_diagnostics saying the same.
template <class Kind, class Driver, class T>
void check_failed(const outcome<T>& o, lb::errc code, const lb::diagnostics& d, const std::string& words) {
    BOOST_TEST(o.completed);
    BOOST_TEST((o.ec == code), o.ec.message());
    BOOST_TEST(!o.value.has_value());
    BOOST_TEST(d.message().find(Kind::prefix) == 0u, d.message());
    BOOST_TEST(d.message().find(words) != std::string::npos, "'" << words << "' not in '" << d.message() << "'");
    if constexpr (driver_throws<Driver>()) {
        BOOST_TEST(o.threw_with_diagnostics);
        BOOST_TEST(o.what.find(words) != std::string::npos, o.what);
    }
    if constexpr (driver_checks_inline<Driver>()) BOOST_TEST(!o.completed_inline);
}

template <class Kind, class Driver, class T>
void check_succeeded(const outcome<T>& o, const lb::diagnostics& d) {
    BOOST_TEST(o.completed);
    BOOST_TEST(!o.ec, o.ec.message());
    BOOST_TEST(o.value.has_value());
    BOOST_TEST(d.empty(), "not cleared: '" << d.message() << "'"); // the failure before it is gone
    if constexpr (driver_throws<Driver>()) BOOST_TEST(!o.threw);
    if constexpr (driver_checks_inline<Driver>()) BOOST_TEST(!o.completed_inline);
}

/// async_create, async_get and async_append, each failing and then succeeding with one
/// diagnostics object, through Driver's token.
template <class Kind, class Driver>
void each_operation_reports_through(Kind& kind) {
    asio::io_context io;
    auto st = kind.make(io);
    lb::diagnostics diag;

    auto bad_create = Driver::template call<lb::session>(io, [&](auto token) {
        return st.async_create(lb::create_options("app", "u/1", "s"), diag, std::move(token));
    });
    check_failed<Kind, Driver>(bad_create, lb::errc::invalid_argument, diag,
                               "user id 'u/1' contains a path separator ('/' or '\\')");
    auto created = Driver::template call<lb::session>(io, [&](auto token) {
        return st.async_create(lb::create_options("app", "u", "s"), diag, std::move(token));
    });
    check_succeeded<Kind, Driver>(created, diag);
    BOOST_REQUIRE(created.value.has_value());
    lb::session s = *created.value;
    BOOST_TEST(s.id == "s");

    diag.assign("left over from an earlier operation"); // a success clears whatever was there
    auto bad_get = Driver::template call<std::optional<lb::session>>(io, [&](auto token) {
        return st.async_get(lb::session_key("app", "u", ".."), lb::get_options{}, diag, std::move(token));
    });
    check_failed<Kind, Driver>(bad_get, lb::errc::invalid_argument, diag, "session id '..' contains '..' (or is '.')");
    auto got = Driver::template call<std::optional<lb::session>>(io, [&](auto token) {
        return st.async_get(lb::session_key("app", "u", "s"), lb::get_options{}, diag, std::move(token));
    });
    check_succeeded<Kind, Driver>(got, diag);
    BOOST_REQUIRE(got.value.has_value());
    BOOST_REQUIRE(got.value->has_value());
    BOOST_TEST((*got.value)->id == "s");

    lb::session stale = s; // at sequence 0, the store at 1 after the next append
    auto one = Driver::template call<std::int64_t>(
        io, [&](auto token) { return st.async_append(s, text_event("one"), diag, std::move(token)); });
    check_succeeded<Kind, Driver>(one, diag);
    BOOST_TEST(one.value.value_or(0) == 1);
    auto late = Driver::template call<std::int64_t>(
        io, [&](auto token) { return st.async_append(stale, text_event("late"), diag, std::move(token)); });
    check_failed<Kind, Driver>(late, lb::errc::stale_session, diag,
                               "session app/u/s is at sequence 1, the caller's copy at 0");
    auto two = Driver::template call<std::int64_t>(
        io, [&](auto token) { return st.async_append(s, text_event("two"), diag, std::move(token)); });
    check_succeeded<Kind, Driver>(two, diag);
    BOOST_TEST(two.value.value_or(0) == 2);
    BOOST_TEST(s.last_sequence == 2);
    BOOST_TEST(stale.last_sequence == 0); // the refused append left the caller's copy alone
}

} // namespace

BOOST_AUTO_TEST_SUITE(store_operations_with_each_token)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_plain_callback, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, callback_driver>(k);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(use_awaitable_throws_error_with_diagnostics, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, awaitable_driver>(k);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(as_tuple_of_use_awaitable, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, as_tuple_awaitable_driver>(k);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(deferred_started_with_a_callback, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, deferred_driver>(k);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(as_tuple_of_deferred_awaited, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, as_tuple_deferred_driver>(k);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(use_future_with_the_io_context_on_another_thread, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, future_driver>(k);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(a_bound_cancellation_slot, Kind, kinds) {
    Kind k;
    each_operation_reports_through<Kind, cancellation_slot_driver>(k);
}

// Without the caller's diagnostics: use_awaitable still throws error_with_diagnostics with
// the store's words (the operation had diagnostics of its own); as_tuple gives the code.
BOOST_AUTO_TEST_CASE_TEMPLATE(use_awaitable_without_diagnostics_still_throws_the_stores_words, Kind, kinds) {
    Kind k;
    asio::io_context io;
    auto st = k.make(io);
    auto body = [&]() -> asio::awaitable<void> {
        try {
            auto op = st.async_create(lb::create_options("app", "u", "a\x01"), asio::use_awaitable);
            co_await std::move(op);
            BOOST_TEST(false, "no exception");
        } catch (const lb::error_with_diagnostics& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument));
            const std::string what = e.what();
            BOOST_TEST(what.find(Kind::prefix) == 0u, what);
            BOOST_TEST(what.find("session id contains a control character (0x01 at offset 1)") != std::string::npos, what);
            BOOST_TEST(e.get_diagnostics().message().find("session id contains a control character") != std::string::npos);
        }
        auto created = st.async_create(lb::create_options("app", "u", "s"), asio::use_awaitable);
        lb::session s = co_await std::move(created);
        lb::session stale = s;
        auto first = st.async_append(s, text_event("one"), asio::use_awaitable);
        co_await std::move(first);
        try {
            auto op = st.async_append(stale, text_event("late"), asio::use_awaitable);
            co_await std::move(op);
            BOOST_TEST(false, "no exception");
        } catch (const lb::error_with_diagnostics& e) {
            BOOST_TEST((e.code() == lb::errc::stale_session));
            BOOST_TEST(std::string(e.what()).find("is at sequence 1, the caller's copy at 0") != std::string::npos, e.what());
        }
        auto tuple_op = st.async_append(stale, text_event("late"), asio::as_tuple(asio::use_awaitable));
        auto [ec, seq] = co_await std::move(tuple_op);
        BOOST_TEST((ec == lb::errc::stale_session));
        BOOST_TEST(seq == 0);
    };
    run_coroutine(io, body());
}

// Two coroutines on one thread, each with an operation in flight at the same time, failing
// for different reasons: each finds its own words in its own diagnostics afterwards (no
// per-store or per-thread "last error" for the other to overwrite).
BOOST_AUTO_TEST_CASE_TEMPLATE(interleaved_operations_keep_their_own_words, Kind, kinds) {
    Kind k;
    asio::io_context io;
    auto st = k.make(io);
    std::optional<lb::session> s;
    {
        auto setup = [&]() -> asio::awaitable<void> {
            auto op = st.async_create(lb::create_options("app", "u", "s"), asio::use_awaitable);
            s = co_await std::move(op);
            auto first = st.async_append(*s, text_event("one"), asio::use_awaitable);
            co_await std::move(first);
        };
        run_coroutine(io, setup());
    }
    BOOST_REQUIRE(s.has_value());
    std::vector<std::string> order;
    lb::diagnostics da, db;
    auto a = [&]() -> asio::awaitable<void> {
        lb::session stale = *s;
        stale.last_sequence = 0;
        order.push_back("A starts");
        auto op = st.async_append(stale, text_event("late"), da, asio::as_tuple(asio::deferred));
        auto [ec, seq] = co_await std::move(op);
        order.push_back("A completes");
        BOOST_TEST((ec == lb::errc::stale_session));
        BOOST_TEST(da.message().find("session app/u/s is at sequence 1, the caller's copy at 0") != std::string::npos,
                   da.message());
        BOOST_TEST(da.message().find("u/x") == std::string::npos, da.message());
    };
    auto b = [&]() -> asio::awaitable<void> {
        order.push_back("B starts");
        auto op = st.async_get(lb::session_key("app", "u/x", "s"), lb::get_options{}, db, asio::as_tuple(asio::deferred));
        auto [ec, g] = co_await std::move(op);
        order.push_back("B completes");
        BOOST_TEST((ec == lb::errc::invalid_argument));
        BOOST_TEST(!g.has_value());
        BOOST_TEST(db.message().find("user id 'u/x' contains a path separator") != std::string::npos, db.message());
        BOOST_TEST(db.message().find("sequence") == std::string::npos, db.message());
    };
    std::exception_ptr fa, fb;
    asio::co_spawn(io, a(), [&](std::exception_ptr e) { fa = e; });
    asio::co_spawn(io, b(), [&](std::exception_ptr e) { fb = e; });
    io.run();
    if (fa) std::rethrow_exception(fa);
    if (fb) std::rethrow_exception(fb);
    BOOST_REQUIRE_EQUAL(order.size(), 4u);
    // Both started before either completed: the two operations were in flight together.
    BOOST_TEST(order[0] == "A starts");
    BOOST_TEST(order[1] == "B starts");
}

BOOST_AUTO_TEST_SUITE_END()
