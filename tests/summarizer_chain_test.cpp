// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/compaction/summarizer_chain.hpp>

#include <libretto/model/scripted_model.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace lb = libretto;
using lb::scripted_model;
using lb::scripted_reply;
using namespace std::chrono_literals;

namespace {

lb::event user(std::string text) {
    return lb::event::make(lb::event_type::user_message, "user", lb::content::from_text(std::move(text)));
}
lb::event assistant(std::string text) {
    return lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text(std::move(text)));
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

std::vector<lb::event> history() {
    std::vector<lb::event> ev;
    ev.push_back(user("Rename config.yaml to settings.yaml in the repo."));
    ev.push_back(assistant("Renamed; the loader now reads settings.yaml."));
    ev.push_back(user("Update the docs at docs/setup.md to match."));
    return ev;
}

const std::string good = "## Goal\nUpdate the docs at docs/setup.md to match the rename of config.yaml to settings.yaml.";

template <class S>
lb::summary summarize(asio::io_context& io, S s, lb::summary_request r) {
    std::exception_ptr failure;
    std::optional<lb::summary> out;
    asio::co_spawn(io, s.async_summarize(std::move(r)), [&](std::exception_ptr ep, lb::summary v) {
        failure = ep;
        out = std::move(v);
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
    BOOST_REQUIRE(out.has_value());
    return std::move(*out);
}

bool is_errc(std::exception_ptr ep, boost::system::error_code want) {
    try {
        std::rethrow_exception(ep);
    } catch (const boost::system::system_error& e) {
        return e.code() == want;
    } catch (...) {
        return false;
    }
}

using chain = lb::summarizer_chain<lb::model_summarizer<scripted_model>>;

chain make_chain(scripted_model m) { return chain(lb::model_summarizer<scripted_model>(std::move(m))); }

/// A primary that does what it is told.
struct stub_summarizer {
    enum class mode { empty, runtime_error, cancelled, aborted } what = mode::empty;
    std::shared_ptr<int> calls = std::make_shared<int>(0);
    asio::awaitable<lb::summary> async_summarize(lb::summary_request r) { return run(*this, std::move(r)); }
    static asio::awaitable<lb::summary> run(stub_summarizer self, lb::summary_request) {
        ++*self.calls;
        switch (self.what) {
        case mode::empty: break;
        case mode::runtime_error: throw std::runtime_error("stub exploded");
        case mode::cancelled: throw boost::system::system_error(lb::make_error_code(lb::errc::cancelled));
        case mode::aborted: throw boost::system::system_error(asio::error::operation_aborted);
        }
        lb::summary s;
        s.text = "  \n";
        s.produced_by = "stub";
        s.usage = lb::usage{7, 3, "stub-v"};
        co_return s;
    }
};
static_assert(lb::summarizer<stub_summarizer>);

/// A model whose stream sleeps for an hour before it answers.
struct sleeper {
    asio::awaitable<void> operator()(lb::llm_writer out) {
        asio::steady_timer t(out.get_executor(), 1h);
        co_await t.async_wait(asio::use_awaitable);
    }
};
struct sleeping_model {
    asio::any_io_executor ex;
    lb::llm_stream generate(lb::llm_request) { return lb::llm_stream(ex, sleeper{}); }
    std::string_view name() const { return "sleepy"; }
    asio::any_io_executor get_executor() const { return ex; }
};
static_assert(lb::model<sleeping_model>);

} // namespace

BOOST_AUTO_TEST_SUITE(summarizer_chain_tests)

BOOST_AUTO_TEST_CASE(model_succeeds) {
    static_assert(lb::summarizer<lb::summarizer_chain<>>);
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text(good).with_usage(100, 20)}};
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    lb::summary s = summarize(io, lb::make_fallback_summarizer(m), r);
    BOOST_TEST(s.text == good);
    BOOST_TEST(s.produced_by == "model:scripted");
    BOOST_TEST(s.fallback_reason.empty());
    BOOST_TEST(s.usage->input_tokens == 100);
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(model_error_then_retry_succeeds) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::transient("overloaded (529)"), scripted_reply::text(good).with_usage(100, 20)}};
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    lb::summary s = summarize(io, make_chain(m), r);
    BOOST_TEST(s.text == good);
    BOOST_TEST(s.produced_by == "model:scripted");
    // system_error::what(): our message, then the code's
    BOOST_TEST(s.fallback_reason ==
               "attempt 1: model:scripted: the model failed: overloaded (529): temporary failure: retry later [libretto:20]");
    BOOST_TEST(m.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(model_error_twice_then_extractive) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::transient("rate limited (429)"), scripted_reply::bad_response("garbage")}};
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    lb::summary s = summarize(io, make_chain(m), r);
    BOOST_TEST(s.produced_by == "extractive");
    BOOST_TEST(s.text == lb::extractive_summarizer{}.summarize(r).text);
    BOOST_TEST(contains(s.text, "Latest user request:\nUpdate the docs at docs/setup.md to match."));
    BOOST_TEST(s.fallback_reason.starts_with("attempt 1: model:scripted: the model failed: rate limited (429): "));
    BOOST_TEST(contains(s.fallback_reason, "; attempt 2: model:scripted: the model failed: garbage: malformed model response"));
    BOOST_TEST(!s.usage.has_value()); // the failed calls reported none
    BOOST_TEST(m.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(empty_replies_then_extractive_with_their_usage) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("").with_usage(50, 0), scripted_reply::text("   ").with_usage(60, 1)}};
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    lb::summary s = summarize(io, make_chain(m), r);
    BOOST_TEST(s.produced_by == "extractive");
    BOOST_TEST(contains(s.fallback_reason, "attempt 1: model:scripted: the model returned an empty summary"));
    BOOST_TEST(contains(s.fallback_reason, "attempt 2: "));
    BOOST_REQUIRE(s.usage.has_value());
    BOOST_TEST(s.usage->input_tokens == 110);
    BOOST_TEST(s.usage->output_tokens == 1);
}

BOOST_AUTO_TEST_CASE(quality_failures_then_extractive) {
    asio::io_context io;
    scripted_model m{io.get_executor()};
    for (int i = 0; i < 4; ++i) m.then(scripted_reply::text("## Goal\nunrelated").with_usage(10, 1));
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    r.identifiers = {"docs/setup.md"};
    lb::summary s = summarize(io, make_chain(m), r);
    BOOST_TEST(s.produced_by == "extractive");
    BOOST_TEST(m.request_count() == 4u); // 2 attempts x (1 + 1 quality retry)
    BOOST_TEST(s.usage->input_tokens == 40);
    BOOST_TEST(contains(s.fallback_reason, "failed the quality check twice"));
    BOOST_TEST(contains(s.text, "\n- docs/setup.md")); // the fallback keeps the identifiers
}

BOOST_AUTO_TEST_CASE(no_retry_when_it_cannot_help) {
    asio::io_context io;
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    for (scripted_reply reply : {scripted_reply::auth_failed(), scripted_reply::context_overflow()}) {
        scripted_model m{io.get_executor(), {reply, scripted_reply::text(good)}};
        lb::summary s = summarize(io, make_chain(m), r);
        BOOST_TEST(s.produced_by == "extractive");
        BOOST_TEST(m.request_count() == 1u);
        BOOST_TEST(!contains(s.fallback_reason, "attempt 2"));
    }
}

BOOST_AUTO_TEST_CASE(exceptions_are_model_failures_too) {
    asio::io_context io;
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    // an exhausted script: the stream throws system_error(model_error)
    scripted_model m{io.get_executor()};
    lb::summary s = summarize(io, make_chain(m), r);
    BOOST_TEST(s.produced_by == "extractive");
    BOOST_TEST(contains(s.fallback_reason, "script exhausted"));
    // any exception from a primary
    stub_summarizer stub;
    stub.what = stub_summarizer::mode::runtime_error;
    lb::summarizer_chain<stub_summarizer> c(stub);
    lb::summary s2 = summarize(io, c, r);
    BOOST_TEST(s2.produced_by == "extractive");
    BOOST_TEST(s2.fallback_reason == "attempt 1: stub exploded; attempt 2: stub exploded");
    BOOST_TEST(*stub.calls == 2);
}

BOOST_AUTO_TEST_CASE(a_primary_returning_blank_text_counts_as_failed) {
    asio::io_context io;
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    stub_summarizer stub; // blank text, usage 7/3
    lb::summarizer_chain_options o;
    o.primary_attempts = 3;
    lb::summarizer_chain<stub_summarizer> c(stub, lb::extractive_summarizer{}, o);
    lb::summary s = summarize(io, c, r);
    BOOST_TEST(s.produced_by == "extractive");
    BOOST_TEST(*stub.calls == 3);
    BOOST_TEST(contains(s.fallback_reason, "attempt 3: stub: empty summary"));
    BOOST_TEST(s.usage->input_tokens == 21);
    BOOST_TEST(s.usage->model_version == "stub-v");
}

BOOST_AUTO_TEST_CASE(cancellation_errors_propagate) {
    asio::io_context io;
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    for (auto mode : {stub_summarizer::mode::cancelled, stub_summarizer::mode::aborted}) {
        stub_summarizer stub;
        stub.what = mode;
        lb::summarizer_chain<stub_summarizer> c(stub);
        std::exception_ptr caught;
        try {
            (void)summarize(io, c, r);
        } catch (...) {
            caught = std::current_exception();
        }
        BOOST_REQUIRE(caught);
        BOOST_TEST((is_errc(caught, lb::make_error_code(lb::errc::cancelled)) ||
                    is_errc(caught, asio::error::operation_aborted)));
        BOOST_TEST(*stub.calls == 1); // no retry, no fallback
    }
    // from inside a model's stream
    scripted_model m{io.get_executor(), {scripted_reply::computed([](const lb::llm_request&) -> scripted_reply {
                                             throw boost::system::system_error(lb::make_error_code(lb::errc::cancelled));
                                         })}};
    BOOST_CHECK_EXCEPTION((void)summarize(io, make_chain(m), r), boost::system::system_error,
                          [](const boost::system::system_error& e) { return e.code() == lb::errc::cancelled; });
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(cancelled_while_the_model_works) {
    asio::io_context io;
    std::vector<lb::event> ev = history();
    lb::summary_request r;
    r.events = ev;
    lb::summarizer_chain<lb::model_summarizer<sleeping_model>> c(
        lb::model_summarizer<sleeping_model>(sleeping_model{io.get_executor()}));
    asio::cancellation_signal signal;
    std::exception_ptr failure;
    bool done = false;
    auto start = std::chrono::steady_clock::now();
    asio::co_spawn(io, c.async_summarize(r), asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr ep, lb::summary) {
                       failure = ep;
                       done = true;
                   }));
    asio::steady_timer t(io, 20ms);
    t.async_wait([&](boost::system::error_code) { signal.emit(asio::cancellation_type::terminal); });
    io.run();
    BOOST_TEST(done);
    BOOST_REQUIRE(failure);
    BOOST_TEST(is_errc(failure, lb::make_error_code(lb::errc::cancelled)));
    BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
}

BOOST_AUTO_TEST_CASE(empty_history) {
    asio::io_context io;
    scripted_model m{io.get_executor()};
    lb::summary_request r;
    lb::summary s = summarize(io, make_chain(m), r);
    BOOST_TEST(s.text == "No prior history.");
    BOOST_TEST(s.produced_by == "model:scripted"); // the primary answered without a call
    BOOST_TEST(m.request_count() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
