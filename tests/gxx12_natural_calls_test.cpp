// The calls a first program writes, verbatim as docs/ writes them: keys and options built
// inside the co_await expression. g++ 12 destroys an aggregate temporary made there twice;
// session_key, create_options and list_options have constructors so that these calls are
// safe, and get_options is trivially destructible (docs/building.md, "g++ 12 and
// coroutines"). Under the gcc-asan preset a regression aborts here with a double free.
#include <libretto/agent/llm_agent.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>

namespace asio = boost::asio;
namespace lb = libretto;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the working directory, removed afterwards.
struct temp_dir {
    fs::path path;
    temp_dir() {
        static std::atomic<int> counter{0};
        path = fs::current_path() / ("gxx12-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// Runs `body(store)` to its end on a fresh io_context and rethrows what it threw.
template <class Store, class Body>
void run_on(Store& store, asio::io_context& io, Body body) {
    std::exception_ptr failure;
    bool done = false;
    asio::co_spawn(io, body(store), [&](std::exception_ptr e) {
        failure = e;
        done = true;
    });
    io.run();
    BOOST_TEST_REQUIRE(done);
    if (failure) std::rethrow_exception(failure);
}

// Ids longer than std::string's in-place buffer (15 bytes), so that a second destruction
// frees heap memory; the short "app"/"u"/"s" of the docs are checked as well.
const std::string long_app(100, 'a');
const std::string long_user(90, 'u');

/// Every natural form, in the order a first program meets them. The store is empty.
template <class Store>
asio::awaitable<void> natural_forms(Store& store) {
    // create: a constructed create_options, and a bare braced list of the parts.
    lb::session s = co_await store.async_create(lb::create_options{"app", "u", "s"}, asio::use_awaitable);
    BOOST_TEST(s.app_name == "app");
    BOOST_TEST(s.user_id == "u");
    BOOST_TEST(s.id == "s");
    lb::session fresh = co_await store.async_create({"app", "u2"});                          // a fresh UUID
    BOOST_TEST(fresh.user_id == "u2");
    BOOST_TEST(fresh.id.size() == 36u); // a UUID
    lb::session long_one = co_await store.async_create(lb::create_options{long_app, long_user, std::string(120, 's')});
    BOOST_TEST(long_one.id == std::string(120, 's'));

    // append: an event made by event::make inside the co_await.
    std::int64_t seq = co_await store.async_append(s, lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("hi")));
    BOOST_TEST(seq == 1);
    seq = co_await store.async_append(
        s, lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text("hi")), asio::use_awaitable);
    BOOST_TEST(seq == 2);

    // get: the line that aborted on g++ 12 before session_key had a constructor.
    auto got = co_await store.async_get(lb::session_key{"app", "u", "s"}, lb::get_options{}, asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->events.size() == 2u);
    BOOST_TEST(got->id == "s");

    // docs/signing.md's form: both arguments as bare braced lists.
    got = co_await store.async_get({"app", "u", "s"}, {}, asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->events.size() == 2u);

    // The default token (deferred), a parenthesised key, designated get_options.
    got = co_await store.async_get(lb::session_key{"app", "u", "s"});
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->events.size() == 2u);
    got = co_await store.async_get(lb::session_key("app", "u", "s"), lb::get_options{.num_recent_events = 1},
                                   asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST_REQUIRE(got->events.size() == 1u);
    BOOST_TEST(got->events[0].sequence == 2);
    got = co_await store.async_get(lb::session_key{"app", "u", "s"}, lb::get_options{.num_recent_events = 20});
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->events.size() == 2u);
    got = co_await store.async_get(lb::session_key{long_app, long_user, std::string(120, 's')},
                                   lb::get_options{.from_sequence = 1}, asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->app_name == long_app);
    BOOST_TEST(got->events.empty());

    // as_tuple, unpacked by a structured binding; and the caller's diagnostics.
    auto [ec, missing] = co_await store.async_get(lb::session_key{"app", "u", "nobody"}, lb::get_options{},
                                                  asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);
    BOOST_TEST(!missing.has_value());
    lb::diagnostics diag;
    auto [bad_ec, bad] = co_await store.async_get(lb::session_key{"app", "u", "../etc"}, lb::get_options{}, diag,
                                                  asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(bad_ec == lb::errc::invalid_argument);
    BOOST_TEST(!bad.has_value());
    BOOST_TEST(diag.message().find("..") != std::string::npos, diag.message());

    // list: by app, and by app and user.
    lb::list_page page = co_await store.async_list(lb::list_options{"app"}, asio::use_awaitable);
    BOOST_TEST(page.sessions.size() == 2u);
    page = co_await store.async_list(lb::list_options{"app", "u"});
    BOOST_TEST_REQUIRE(page.sessions.size() == 1u);
    BOOST_TEST(page.sessions[0].id == "s");
    page = co_await store.async_list({"app", "u2"});
    BOOST_TEST_REQUIRE(page.sessions.size() == 1u);
    BOOST_TEST(page.sessions[0].id == fresh.id);

    // A failure thrown through the co_await destroys the temporaries once as well, and
    // changes nothing stored.
    bool threw = false;
    try {
        co_await store.async_create(lb::create_options{"app", "u", "s"}, asio::use_awaitable);
    } catch (const boost::system::system_error& e) {
        threw = true;
        BOOST_TEST(e.code() == lb::errc::already_exists);
    }
    BOOST_TEST(threw);
    got = co_await store.async_get(lb::session_key{"app", "u", "s"}, lb::get_options{}, asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->events.size() == 2u);

    // delete, then the session is gone.
    co_await store.async_delete(lb::session_key{"app", "u", "s"});
    got = co_await store.async_get(lb::session_key{"app", "u", "s"}, lb::get_options{}, asio::use_awaitable);
    BOOST_TEST(!got.has_value());
    page = co_await store.async_list(lb::list_options{"app"}, asio::use_awaitable);
    BOOST_TEST(page.sessions.size() == 1u);
}

/// docs/building.md's rule for what is still unsafe inline: name it, then co_await it.
template <class Store>
asio::awaitable<void> named_forms(Store& store) {
    lb::create_options o{"app", "u", "s"};
    o.state = {{"user:lang", "nb"}};
    auto op = store.async_create(std::move(o), asio::use_awaitable);   // not inside a co_await
    lb::session s = co_await std::move(op);
    BOOST_TEST(s.id == "s");
    auto got = co_await store.async_get(lb::session_key{"app", "u", "s"}, lb::get_options{}, asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST_REQUIRE(got->state.contains("user:lang"));
    BOOST_TEST(got->state.at("user:lang").as_string() == "nb");
}

/// docs/stores.md's end of a turn: the key built from the session inside the co_await.
template <class Store>
asio::awaitable<void> flush_form(Store& store) {
    lb::session s = co_await store.async_create(lb::create_options{"app", "u", "flushed"}, asio::use_awaitable);
    lb::event ev = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("kept"));
    co_await store.async_append(s, std::move(ev));
    co_await store.async_flush(lb::session_key{s.app_name, s.user_id, s.id});   // the turn ended
    auto got = co_await store.async_get(lb::session_key{"app", "u", "flushed"}, lb::get_options{}, asio::use_awaitable);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->events.size() == 1u);
    // A flush of a session that does not exist fails and names nothing stored away.
    auto [ec] = co_await store.async_flush(lb::session_key{"app", "u", "never-created"},
                                           asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == lb::errc::not_found);
}

} // namespace

BOOST_AUTO_TEST_SUITE(gxx12_natural_calls)

BOOST_AUTO_TEST_CASE(memory_store_natural_forms) {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    run_on(store, io, [](lb::memory_store& st) { return natural_forms(st); });
}

BOOST_AUTO_TEST_CASE(memory_store_named_forms) {
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
    run_on(store, io, [](lb::memory_store& st) { return named_forms(st); });
}

BOOST_AUTO_TEST_CASE(jsonl_store_natural_forms) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store store{io.get_executor(), {.directory = d.path}};
    run_on(store, io, [](lb::jsonl_store& st) { return natural_forms(st); });
}

BOOST_AUTO_TEST_CASE(jsonl_store_flush_form) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store store{io.get_executor(), {.directory = d.path, .durability = lb::durability::per_turn}};
    run_on(store, io, [](lb::jsonl_store& st) { return flush_form(st); });
}

BOOST_AUTO_TEST_CASE(any_store_over_memory_natural_forms) {
    asio::io_context io;
    lb::any_store store{lb::memory_store{io.get_executor()}};
    run_on(store, io, [](lb::any_store& st) { return natural_forms(st); });
}

BOOST_AUTO_TEST_CASE(any_store_over_jsonl_natural_forms) {
    temp_dir d;
    asio::io_context io;
    lb::any_store store{lb::jsonl_store{io.get_executor(), {.directory = d.path}}};
    run_on(store, io, [](lb::any_store& st) { return natural_forms(st); });
    asio::io_context io2;
    lb::any_store again{lb::jsonl_store{io2.get_executor(), {.directory = d.path}}};
    run_on(again, io2, [](lb::any_store& st) { return flush_form(st); });
}

// A turn run to its end, with the run and run_to_end options built inside the co_await
// (run_options and run_to_end_options have constructors for this).
BOOST_AUTO_TEST_CASE(async_run_to_end_natural_forms) {
    asio::io_context io;
    lb::scripted_model model{io.get_executor(),
                             {lb::scripted_reply::text("first answer"), lb::scripted_reply::text("second answer")}};
    lb::llm_agent<lb::scripted_model> assistant(lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model});
    lb::memory_store store{io.get_executor()};
    lb::runner runner{assistant, store};
    std::string first, second;
    boost::system::error_code first_ec = lb::errc::io_error;
    auto body = [&](lb::memory_store&) -> asio::awaitable<void> {
        auto [ec, r] = co_await lb::async_run_to_end(runner, {"application-name", "user-identifier-1", "session-identifier-1"},
                                                     "a question long enough for the heap", asio::as_tuple(asio::use_awaitable));
        first_ec = ec;
        first = r.final_answer;
        lb::turn_result again = co_await lb::async_run_to_end(
            runner, {"application-name", "user-identifier-1", "session-identifier-1"}, "and another one, also long",
            {std::chrono::seconds(10), [](const lb::event&) {}}, asio::use_awaitable);
        second = again.final_answer;
    };
    run_on(store, io, body);
    BOOST_TEST(!first_ec);
    BOOST_TEST(first == "first answer");
    BOOST_TEST(second == "second answer");
}

BOOST_AUTO_TEST_SUITE_END()
