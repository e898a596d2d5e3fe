// The conformance suite through any_store (wrapping memory_store): the erasure must not
// change any behaviour.
#include <libretto/store/any_store.hpp>

#include <libretto/agent/agent.hpp>
#include <libretto/detail/token_archetype.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/detail/jsonl_engine.hpp> // the engine's helpers (not in jsonl_store.hpp with separate compilation)
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>
#include <libretto/stream/event_stream.hpp>

#include "../runner_test_support.hpp"
#include "store_conformance.hpp"

#include <boost/asio/bind_executor.hpp>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

struct any_memory_fixture {
    using store_type = libretto::any_store;
    std::optional<libretto::memory_store> first;
    libretto::any_store open(boost::asio::any_io_executor ex) {
        if (!first) first.emplace(ex);
        return libretto::any_store(*first);
    }
};

/// Answers every turn with two stored events.
struct two_events_agent {
    std::string_view name() const { return "a"; }
    std::string_view description() const { return "answers with two events"; }
    std::vector<libretto::agent_ref> sub_agents() const { return {}; }
    libretto::event_stream run(libretto::invocation_context ctx) const {
        std::vector<libretto::event> v;
        for (const char* text : {"thinking", "answer"}) {
            auto e = libretto::event::make(libretto::event_type::agent_message, "a", libretto::content::from_text(text));
            e.invocation_id = ctx.invocation_id();
            e.branch = ctx.branch();
            v.push_back(std::move(e));
        }
        return libretto::make_stream(ctx.get_executor(), std::move(v));
    }
};
static_assert(libretto::agent<two_events_agent>);

/// A fresh directory under the working directory, removed afterwards.
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        static std::atomic<int> counter{0};
        path = std::filesystem::current_path() /
               ("any-store-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

/// Every fdatasync jsonl_store makes while installed, by the file it synced (through the
/// store's fault-injection hook, so the count is of real calls, not of the store's own
/// bookkeeping). `fail`: each sync fails with EIO instead.
struct fdatasync_log {
    static inline std::mutex mu;
    static inline std::vector<std::string> files;
    static inline bool fail = false;

    fdatasync_log() {
        std::lock_guard l(mu);
        files.clear();
        fail = false;
        libretto::detail::jsonl::fdatasync_for_tests = &hook;
    }
    ~fdatasync_log() { libretto::detail::jsonl::fdatasync_for_tests = nullptr; }

    static int hook(int fd) {
        char target[4096] = {};
        const std::string link = "/proc/self/fd/" + std::to_string(fd);
        const auto n = ::readlink(link.c_str(), target, sizeof target - 1);
        std::lock_guard l(mu);
        files.push_back(n > 0 ? std::filesystem::path(std::string(target, static_cast<std::size_t>(n))).filename().string()
                              : "?");
        if (fail) {
            errno = EIO;
            return -1;
        }
        return ::fdatasync(fd);
    }
    static std::vector<std::string> take() {
        std::lock_guard l(mu);
        return std::exchange(files, {});
    }
};

libretto::jsonl_store jsonl_on(boost::asio::io_context& io, const std::filesystem::path& dir, libretto::durability d) {
    libretto::jsonl_store_options o;
    o.directory = dir;
    o.durability = d;
    return libretto::jsonl_store(io.get_executor(), o);
}

} // namespace

LIBRETTO_STORE_CONFORMANCE(any_memory_fixture)

BOOST_AUTO_TEST_SUITE(any_store_specific)

BOOST_AUTO_TEST_CASE(target_reaches_the_wrapped_store) {
    boost::asio::io_context io;
    libretto::any_store st{libretto::memory_store(io.get_executor())};
    BOOST_TEST(st.target<libretto::memory_store>() != nullptr);
    BOOST_TEST(st.target<int>() == nullptr);
    libretto::session s;
    BOOST_TEST(!st.target<libretto::memory_store>()->create(conformance::create_opts("a", "u", "s"), s));
}

BOOST_AUTO_TEST_CASE(copies_share_the_store_and_default_token_works) {
    using namespace conformance;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        libretto::any_store a{libretto::memory_store(ex)};
        libretto::any_store b = a;
        lb::create_options o = create_opts("app", "u", "s");
        auto op = a.async_create(std::move(o)); // deferred by default
        auto s = co_await std::move(op);
        auto g = co_await get(b, s);
        BOOST_TEST(g.has_value());
    });
}

// jsonl_store promises one fdatasync of the transcript per turn (durability per_turn): the
// runner flushes after each turn that stored events. Through any_store the promise holds:
// one per turn, of the transcript, where the runner over any_store once synced nothing.
// per_event syncs each stored event instead (3 per turn: the user's message and the
// agent's two), and the flush has nothing left to sync.
BOOST_AUTO_TEST_CASE(a_runner_over_any_store_keeps_jsonl_stores_per_turn_flush) {
    namespace lb = libretto;
    static_assert(lb::flushable_session_store<lb::jsonl_store>);
    for (auto durability : {lb::durability::per_turn, lb::durability::per_event}) {
        BOOST_TEST_CONTEXT((durability == lb::durability::per_turn ? "per_turn" : "per_event")) {
            temp_dir d;
            boost::asio::io_context io;
            lb::any_store st{jsonl_on(io, d.path, durability)};
            BOOST_TEST(!st.supports_batch());
            two_events_agent agent;
            lb::runner r{agent, st};
            fdatasync_log log;
            const std::size_t per_turn = durability == lb::durability::per_turn ? 1 : 3;
            for (int turn = 1; turn <= 3; ++turn) {
                BOOST_TEST_CONTEXT("turn " << turn) {
                    auto got = runner_support::run_turn(io, r.run(runner_support::run_opts(), "go"));
                    BOOST_TEST_REQUIRE(!got.error, got.what());
                    BOOST_TEST(got.texts() == (std::vector<std::string>{"thinking", "answer"}));
                    const auto synced = fdatasync_log::take();
                    BOOST_TEST(synced == std::vector<std::string>(per_turn, "transcript.jsonl"));
                }
            }
            auto s = runner_support::load_session(io, st);
            BOOST_REQUIRE(s);
            BOOST_TEST(s->last_sequence == 9);
        }
    }
}

// A flush that fails through any_store fails the turn, with what jsonl_store said.
BOOST_AUTO_TEST_CASE(a_failed_flush_through_any_store_fails_the_turn_with_the_stores_words) {
    namespace lb = libretto;
    temp_dir d;
    boost::asio::io_context io;
    lb::any_store st{jsonl_on(io, d.path, lb::durability::per_turn)};
    two_events_agent agent;
    lb::runner r{agent, st};
    fdatasync_log log;
    fdatasync_log::fail = true;
    auto got = runner_support::run_turn(io, r.run(runner_support::run_opts(), "go"));
    BOOST_TEST((got.code() == lb::errc::io_error));
    BOOST_TEST(got.what().find("at the end of the turn failed") != std::string::npos, got.what());
    BOOST_TEST(got.what().find("transcript.jsonl: I/O error (fdatasync: ") != std::string::npos, got.what());
    BOOST_TEST(fdatasync_log::take() == (std::vector<std::string>{"transcript.jsonl"}));
}

// jsonl_store has no all-or-nothing batch append: any_store refuses one (splitting it would
// break the promise) with operation_not_supported and says why; nothing is stored.
BOOST_AUTO_TEST_CASE(a_batch_through_any_store_of_a_store_without_one_is_refused) {
    namespace lb = libretto;
    using namespace conformance;
    static_assert(!lb::batch_session_store<lb::jsonl_store>);
    static_assert(lb::batch_session_store<lb::memory_store>);
    temp_dir d;
    boost::asio::io_context io;
    lb::any_store st{jsonl_on(io, d.path, lb::durability::none)};
    lb::any_store mem{lb::memory_store(io.get_executor())};
    BOOST_TEST(!st.supports_batch());
    BOOST_TEST(mem.supports_batch());
    std::exception_ptr failure;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto s = co_await create(st, "app", "u", "s");
            std::vector<lb::event> events;
            events.push_back(text_event("one"));
            events.push_back(text_event("two"));
            lb::diagnostics diag;
            auto op = st.async_append_batch(s, events, diag, asio::as_tuple(asio::use_awaitable));
            auto [ec, seq] = co_await std::move(op);
            BOOST_TEST((ec == asio::error::operation_not_supported));
            BOOST_TEST(seq == 0);
            BOOST_TEST(diag.message() == "any_store: the wrapped store has no all-or-nothing batch append");
            // use_awaitable without diagnostics: the thrown error carries the same words.
            try {
                auto thrown = st.async_append_batch(s, events, asio::use_awaitable);
                co_await std::move(thrown);
                BOOST_TEST(false, "no error thrown");
            } catch (const lb::error_with_diagnostics& e) {
                BOOST_TEST((e.code() == asio::error::operation_not_supported));
                BOOST_TEST(std::string(e.what()).find("no all-or-nothing batch append") != std::string::npos, e.what());
            }
            auto g = co_await get(st, s);
            BOOST_REQUIRE(g);
            BOOST_TEST(g->events.empty());
            BOOST_TEST(s.last_sequence == 0);
            // The same batch through any_store of memory_store is stored whole.
            auto m = co_await create(mem, "app", "u", "s");
            auto mop = mem.async_append_batch(m, std::move(events), diag, asio::use_awaitable);
            const std::int64_t last = co_await std::move(mop);
            BOOST_TEST(last == 2);
            BOOST_TEST(diag.empty());
        },
        [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

// A moved-from any_store is empty (it used to dereference a null pointer): every operation
// completes with not_connected and says why, never inside the initiating call; the
// destination still works.
BOOST_AUTO_TEST_CASE(a_moved_from_any_store_is_empty_and_fails_every_operation) {
    namespace lb = libretto;
    using namespace conformance;
    boost::asio::io_context io;
    lb::any_store a{lb::memory_store(io.get_executor())};
    BOOST_TEST(static_cast<bool>(a));
    lb::any_store b = std::move(a);
    BOOST_TEST(!a); // NOLINT(bugprone-use-after-move): the documented empty state
    BOOST_TEST(!a.get_executor());
    BOOST_TEST(!a.supports_batch());
    BOOST_TEST(a.target<lb::memory_store>() == nullptr);
    BOOST_TEST(b.supports_batch());
    BOOST_TEST(b.target<lb::memory_store>() != nullptr);

    // A plain callback bound to an executor: completed through it, not inside the call.
    int called = 0;
    lb::diagnostics cb_diag;
    a.async_get(lb::session_key("app", "u", "s"), lb::get_options{}, cb_diag,
                asio::bind_executor(io.get_executor(), [&](error_code ec, std::optional<lb::session> s) {
                    ++called;
                    BOOST_TEST((ec == asio::error::not_connected), ec.message());
                    BOOST_TEST(!s);
                }));
    BOOST_TEST(called == 0);
    BOOST_TEST(cb_diag.message() == "any_store: empty (moved-from)");
    a.async_flush(lb::session_key("app", "u", "s"), asio::bind_executor(io.get_executor(), [&](error_code ec) {
                      ++called;
                      BOOST_TEST((ec == asio::error::not_connected), ec.message());
                  }));
    BOOST_TEST(called == 0);
    io.run();
    io.restart();
    BOOST_TEST(called == 2);

    std::exception_ptr failure;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            lb::diagnostics diag;
            auto cop = a.async_create(create_opts("app", "u", "s"), diag, asio::as_tuple(asio::use_awaitable));
            auto [cec, created] = co_await std::move(cop);
            BOOST_TEST((cec == asio::error::not_connected), cec.message());
            BOOST_TEST(diag.message() == "any_store: empty (moved-from)");
            BOOST_TEST(created.id.empty());
            auto lop = a.async_list(lb::list_options{}, asio::as_tuple(asio::use_awaitable));
            auto [lec, page] = co_await std::move(lop);
            BOOST_TEST((lec == asio::error::not_connected), lec.message());
            BOOST_TEST(page.sessions.empty());
            auto dop = a.async_delete(lb::session_key("app", "u", "s"), asio::as_tuple(asio::use_awaitable));
            auto [dec] = co_await std::move(dop);
            BOOST_TEST((dec == asio::error::not_connected), dec.message());
            // The destination still works; a's appends to its session fail.
            auto s = co_await create(b, "app", "u", "s");
            auto aop = a.async_append(s, text_event("lost"), diag, asio::as_tuple(asio::use_awaitable));
            auto [aec, seq] = co_await std::move(aop);
            BOOST_TEST((aec == asio::error::not_connected), aec.message());
            BOOST_TEST(seq == 0);
            std::vector<lb::event> evs;
            evs.push_back(text_event("lost too"));
            auto bop = a.async_append_batch(s, std::move(evs), diag, asio::as_tuple(asio::use_awaitable));
            auto [bec, bseq] = co_await std::move(bop);
            BOOST_TEST((bec == asio::error::not_connected), bec.message());
            BOOST_TEST(bseq == 0);
            // use_awaitable without diagnostics: the thrown error carries the words.
            try {
                auto thrown = a.async_get(key_of(s), lb::get_options{}, asio::use_awaitable);
                (void)co_await std::move(thrown);
                BOOST_TEST(false, "no error thrown");
            } catch (const lb::error_with_diagnostics& e) {
                BOOST_TEST((e.code() == asio::error::not_connected), e.what());
                BOOST_TEST(std::string(e.what()).find("any_store: empty (moved-from)") != std::string::npos, e.what());
            }
            auto g = co_await get(b, s);
            BOOST_REQUIRE(g);
            BOOST_TEST(g->events.empty());
        },
        [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

// ---- what the session_store concept accepts ---------------------------------------------
// A model takes any completion token and completes with the concept's signatures; the
// concept checks both with detail::token_archetype, which starts nothing.

/// Operations that must never start (the concept's check must not start them); async_get's
/// completion signature is `GetSig`.
template <class GetSig>
struct signature_store {
    using executor_type = boost::asio::any_io_executor;
    executor_type ex;
    executor_type get_executor() const { return ex; }
    template <class Sig, class Token>
    auto never_started(Token&& t) {
        return boost::asio::async_initiate<Token, Sig>([](auto) { BOOST_TEST(false, "started"); }, t);
    }
    template <class Token>
    auto async_create(libretto::create_options, libretto::diagnostics&, Token&& t) {
        return never_started<libretto::create_signature>(t);
    }
    template <class Token>
    auto async_get(libretto::session_key, libretto::get_options, libretto::diagnostics&, Token&& t) {
        return never_started<GetSig>(t);
    }
    template <class Token>
    auto async_list(libretto::list_options, libretto::diagnostics&, Token&& t) {
        return never_started<libretto::list_signature>(t);
    }
    template <class Token>
    auto async_delete(libretto::session_key, libretto::diagnostics&, Token&& t) {
        return never_started<libretto::delete_signature>(t);
    }
    template <class Token>
    auto async_append(libretto::session&, libretto::event, libretto::diagnostics&, Token&& t) {
        return never_started<libretto::append_signature>(t);
    }
};
static_assert(libretto::session_store<signature_store<libretto::get_signature>>);
static_assert(!libretto::session_store<signature_store<void(boost::system::error_code, libretto::session)>>);
static_assert(!libretto::session_store<signature_store<void(boost::system::error_code)>>);

/// Operations that take use_awaitable and nothing else: not a session_store.
struct awaitable_only_store {
    using executor_type = boost::asio::any_io_executor;
    executor_type get_executor() const;
    boost::asio::awaitable<libretto::session> async_create(libretto::create_options, libretto::diagnostics&,
                                                           boost::asio::use_awaitable_t<>);
    boost::asio::awaitable<std::optional<libretto::session>> async_get(libretto::session_key, libretto::get_options,
                                                                       libretto::diagnostics&,
                                                                       boost::asio::use_awaitable_t<>);
    boost::asio::awaitable<libretto::list_page> async_list(libretto::list_options, libretto::diagnostics&,
                                                           boost::asio::use_awaitable_t<>);
    boost::asio::awaitable<void> async_delete(libretto::session_key, libretto::diagnostics&,
                                              boost::asio::use_awaitable_t<>);
    boost::asio::awaitable<std::int64_t> async_append(libretto::session&, libretto::event, libretto::diagnostics&,
                                                      boost::asio::use_awaitable_t<>);
};
static_assert(!libretto::session_store<awaitable_only_store>);

// The shipped stores' operations started with the archetype token start nothing: the check
// costs no coroutine and no I/O.
BOOST_AUTO_TEST_CASE(an_operation_started_with_the_archetype_token_does_nothing) {
    namespace lb = libretto;
    boost::asio::io_context io;
    lb::memory_store mem(io.get_executor());
    lb::diagnostics diag;
    auto r = mem.async_create(lb::create_options("app", "u", "s"), diag,
                              lb::detail::token_archetype{});
    static_assert(std::is_same_v<decltype(r), lb::detail::archetype_result<lb::create_signature>>);
    signature_store<lb::get_signature> never{io.get_executor()};
    auto g = never.async_get(lb::session_key{"app", "u", "s"}, {}, diag, lb::detail::token_archetype{});
    static_assert(std::is_same_v<decltype(g), lb::detail::archetype_result<lb::get_signature>>);
    BOOST_TEST(io.poll() == 0u);
    std::optional<lb::session> out;
    BOOST_TEST(!mem.get(lb::session_key{"app", "u", "s"}, {}, out));
    BOOST_TEST(!out.has_value(), "the create ran");
    // The same create with a real token does create the session (the check above can fail).
    mem.async_create(lb::create_options("app", "u", "s"), diag,
                     [](boost::system::error_code, lb::session) {});
    io.run();
    BOOST_TEST(!mem.get(lb::session_key{"app", "u", "s"}, {}, out));
    BOOST_TEST(out.has_value());
}

BOOST_AUTO_TEST_SUITE_END()
