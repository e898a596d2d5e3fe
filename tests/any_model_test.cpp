// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/model/any_model.hpp>

#include <libretto/model/scripted_model.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cctype>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace lb = libretto;
using lb::any_model;
using lb::llm_chunk;
using lb::llm_request;
using lb::llm_response;
using lb::scripted_model;
using lb::scripted_reply;

namespace {

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

llm_request ask(std::string text) {
    llm_request r;
    r.messages.push_back(lb::message::user(std::move(text)));
    return r;
}

/// A user's own model: answers with the upper-cased last message, one chunk per word.
struct shouting_model {
    asio::any_io_executor ex;
    std::shared_ptr<int> calls = std::make_shared<int>(0);

    lb::llm_stream generate(llm_request r) {
        ++*calls;
        std::string text = r.messages.empty() ? std::string() : r.messages.back().text();
        for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        std::vector<llm_chunk> chunks;
        lb::llm_response_accumulator acc;
        std::size_t start = 0;
        while (start < text.size()) {
            std::size_t end = text.find(' ', start);
            end = end == std::string::npos ? text.size() : end + 1;
            llm_chunk c;
            c.text = text.substr(start, end - start);
            acc.add(c);
            chunks.push_back(std::move(c));
            start = end;
        }
        chunks.push_back(llm_chunk::last(std::move(acc).finish()));
        return lb::make_stream(ex, std::move(chunks));
    }
    std::string_view name() const { return "shout-1"; }
    asio::any_io_executor get_executor() const { return ex; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(any_model_tests)

BOOST_AUTO_TEST_CASE(wraps_a_scripted_model) {
    static_assert(lb::model<any_model>);
    static_assert(lb::model<shouting_model>);
    asio::io_context io;
    scripted_model script{io.get_executor(), {scripted_reply::text("from the script").in_chunks(3)}, "scripted-x"};
    any_model m = script;
    BOOST_TEST(m.name() == "scripted-x");
    BOOST_TEST((m.get_executor() == asio::any_io_executor(io.get_executor())));
    run(io, [&]() -> asio::awaitable<void> {
        lb::llm_stream s = m.generate(ask("hello"));
        std::string streamed;
        std::optional<llm_response> final;
        for (;;) {
            std::optional<llm_chunk> c = co_await s.next();
            if (!c) break;
            streamed += c->text;
            if (c->final) final = std::move(c->final);
        }
        BOOST_TEST(streamed == "from the script");
        BOOST_REQUIRE(final.has_value());
        BOOST_TEST(final->text() == "from the script");
    });
    // The wrapped model is a copy of `script`, which shares its record.
    BOOST_TEST(script.request_count() == 1u);
    BOOST_TEST(script.last_request().messages.at(0).text() == "hello");
    scripted_model* inner = m.target<scripted_model>();
    BOOST_REQUIRE(inner != nullptr);
    BOOST_TEST(inner->request_count() == 1u);
    BOOST_TEST(m.target<shouting_model>() == nullptr);
    const any_model& cm = m;
    BOOST_TEST(cm.target<scripted_model>() == inner);
}

BOOST_AUTO_TEST_CASE(wraps_a_users_own_model_and_copies_share_it) {
    asio::io_context io;
    shouting_model own{io.get_executor()};
    any_model a = own;
    any_model b = a;
    BOOST_TEST(b.name() == "shout-1");
    run(io, [&]() -> asio::awaitable<void> {
        llm_response r1 = co_await lb::generate_response(a, ask("make it loud"));
        BOOST_TEST(r1.text() == "MAKE IT LOUD");
        llm_response r2 = co_await lb::generate_response(b, ask("again"));
        BOOST_TEST(r2.text() == "AGAIN");
    });
    BOOST_TEST(*own.calls == 2);
    BOOST_TEST(a.target<shouting_model>() == b.target<shouting_model>());
}

BOOST_AUTO_TEST_CASE(chosen_at_run_time) {
    asio::io_context io;
    auto make = [&](std::string_view kind) -> any_model {
        if (kind == "shout") return shouting_model{io.get_executor()};
        return scripted_model{io.get_executor(), {scripted_reply::transient("503 overloaded")}};
    };
    std::vector<any_model> models{make("shout"), make("script")};
    BOOST_TEST(models[0].name() == "shout-1");
    BOOST_TEST(models[1].name() == "scripted");
    run(io, [&]() -> asio::awaitable<void> {
        llm_response ok = co_await lb::generate_response(models[0], ask("hi"));
        BOOST_TEST(ok.text() == "HI");
        llm_response failed = co_await lb::generate_response(models[1], ask("hi"));
        BOOST_TEST(lb::is_transient(failed.error));
        BOOST_TEST(failed.error_message == "503 overloaded");
    });
}

BOOST_AUTO_TEST_CASE(a_name_returned_by_value_is_kept) {
    // A model whose name() builds a string: the wrapper must not return a view of a temporary.
    struct by_value : shouting_model {
        std::string name() const { return std::string("built-") + "name"; }
    };
    static_assert(lb::model<by_value>);
    asio::io_context io;
    any_model m = by_value{{io.get_executor()}};
    std::string_view n = m.name();
    std::string other(64, 'x'); // reuse freed memory, if any had been freed
    BOOST_TEST(n == "built-name");
}

BOOST_AUTO_TEST_CASE(exhaustion_propagates_through_the_wrapper) {
    asio::io_context io;
    any_model m = scripted_model{io.get_executor()};
    std::string what;
    run(io, [&]() -> asio::awaitable<void> {
        try {
            (void)co_await lb::generate_response(m, ask("x"));
        } catch (const boost::system::system_error& e) {
            what = e.what();
        }
    });
    BOOST_TEST(what.find("script exhausted: request #1 but only 0 replies were scripted") != std::string::npos, what);
}

// A moved-from any_model is empty and every call on it is defined (it used to dereference a
// null pointer): name() "", an empty executor, a stream that fails with not_connected.
BOOST_AUTO_TEST_CASE(a_moved_from_any_model_is_empty_and_its_stream_fails) {
    asio::io_context io;
    any_model a = shouting_model{io.get_executor()};
    BOOST_TEST(static_cast<bool>(a));
    any_model b = std::move(a);
    BOOST_TEST(!a); // NOLINT(bugprone-use-after-move): the documented empty state
    BOOST_TEST(a.name() == "");
    BOOST_TEST(!a.get_executor());
    BOOST_TEST(!a.retries_transient());
    BOOST_TEST(a.target<shouting_model>() == nullptr);
    BOOST_TEST(std::as_const(a).target<shouting_model>() == nullptr);
    bool failed = false;
    std::string reply;
    run(io, [&]() -> asio::awaitable<void> {
        auto s = a.generate(ask("hello"));
        try {
            auto next = s.next();
            (void)co_await std::move(next);
        } catch (const boost::system::system_error& e) {
            failed = true;
            BOOST_TEST((e.code() == asio::error::not_connected), e.what());
            BOOST_TEST(std::string(e.what()).find("any_model: empty (moved-from)") != std::string::npos, e.what());
        }
        // The destination still works.
        auto r = co_await lb::generate_response(b, ask("still here"));
        reply = r.text();
    });
    BOOST_TEST(failed);
    BOOST_TEST(reply == "STILL HERE");
    BOOST_TEST(b.name() == "shout-1");
}

BOOST_AUTO_TEST_SUITE_END()
