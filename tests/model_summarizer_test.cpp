// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/compaction/model_summarizer.hpp>

#include <libretto/model/scripted_model.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;
using lb::scripted_model;
using lb::scripted_reply;

namespace {

lb::event user(std::string text) {
    return lb::event::make(lb::event_type::user_message, "user", lb::content::from_text(std::move(text)));
}
lb::event assistant(std::string text) {
    return lb::event::make(lb::event_type::agent_message, "assistant", lb::content::from_text(std::move(text)));
}
lb::event call(std::string name, json::object args, std::string id = "call_1") {
    lb::content c;
    c.parts.emplace_back(lb::tool_call_part{std::move(id), std::move(name), std::move(args), {}});
    return lb::event::make(lb::event_type::agent_message, "assistant", std::move(c));
}
lb::event result(std::string name, json::value v, std::string id = "call_1") {
    lb::content c;
    c.parts.emplace_back(lb::tool_response_part{std::move(id), std::move(name), std::move(v), std::nullopt, {}});
    return lb::event::make(lb::event_type::tool_response, "assistant", std::move(c));
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

/// Runs s.async_summarize(r) to completion; rethrows its failure.
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

/// The summary_error summarize(io, ) throws (fails the test when none is thrown).
template <class S>
std::optional<lb::summary_error> summarize_error(asio::io_context& io, S s, lb::summary_request r) {
    try {
        (void)summarize(io, std::move(s), std::move(r));
    } catch (const lb::summary_error& e) {
        return e;
    }
    BOOST_FAIL("expected a summary_error");
    return std::nullopt;
}

std::vector<lb::event> trip() {
    std::vector<lb::event> ev;
    ev.push_back(user("Find me a flight from Oslo to Rome on 12 May, under 300 EUR."));
    ev.push_back(call("search_flights", json::object{{"from", "OSL"}, {"to", "FCO"}, {"date", "2026-05-12"}}));
    ev.push_back(result("search_flights", json::object{{"flights", json::array{"SK-4711 249 EUR", "FR-1234 99 EUR"}}}));
    lb::event reply = assistant("SK-4711 at 249 EUR is the best direct flight.");
    reply.content.parts.insert(reply.content.parts.begin(), lb::thinking_part{"PRIVATE-THOUGHT compare prices", {}});
    ev.push_back(std::move(reply));
    ev.push_back(user("Book SK-4711 for me and send the ticket to anna@example.com."));
    return ev;
}

const std::string good_summary =
    "## Goal\nBook SK-4711 for me and send the ticket to anna@example.com (flight Oslo to Rome, 12 May).\n"
    "## Constraints\nUnder 300 EUR.\n## Progress\n- [x] searched flights\n## Decisions\n- SK-4711: best direct\n"
    "## Open items\n1. book it\n## Critical identifiers\nSK-4711, anna@example.com, 2026-05-12";

} // namespace

BOOST_AUTO_TEST_SUITE(model_summarizer_tests)

BOOST_AUTO_TEST_CASE(summary_usage_and_name) {
    static_assert(lb::summarizer<lb::model_summarizer<>>);
    static_assert(lb::summarizer<lb::model_summarizer<scripted_model>>);
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("\n  " + good_summary + "\n\n").in_chunks(3).with_usage(1200, 150)},
                     "summ-1"};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    lb::summary s = summarize(io, lb::model_summarizer<>(m), r);
    BOOST_TEST(s.text == good_summary); // trimmed
    BOOST_TEST(s.produced_by == "model:summ-1");
    BOOST_REQUIRE(s.usage.has_value());
    BOOST_TEST(s.usage->input_tokens == 1200);
    BOOST_TEST(s.usage->output_tokens == 150);
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(the_prompt) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text(good_summary)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    (void)summarize(io, lb::model_summarizer<scripted_model>(m), r);
    lb::llm_request req = m.last_request();
    // our own system prompt with the six sections, and "do not continue"
    for (std::string_view h : {"## Goal\n", "## Constraints\n", "## Progress\n", "## Decisions\n", "## Open items\n",
                               "## Critical identifiers\n"})
        BOOST_TEST(contains(req.system_instruction, h), h);
    BOOST_TEST(contains(req.system_instruction, "do not continue the transcript"));
    BOOST_TEST((req.options.max_output_tokens == 2048));
    BOOST_TEST(req.tools.empty());
    BOOST_REQUIRE(req.messages.size() == 1u);
    BOOST_TEST((req.messages[0].role == lb::message_role::user));
    std::string p = req.messages[0].text();
    BOOST_TEST_MESSAGE(p);
    BOOST_TEST(p.starts_with("<transcript>\n[User]: Find me a flight from Oslo to Rome on 12 May, under 300 EUR.\n"
                             "[Tool call]: search_flights(from=\"OSL\", to=\"FCO\", date=\"2026-05-12\")\n"
                             "[Tool result (search_flights)]: {\"flights\":[\"SK-4711 249 EUR\",\"FR-1234 99 EUR\"]}\n"
                             "[Assistant]: SK-4711 at 249 EUR is the best direct flight.\n"
                             "[User]: Book SK-4711 for me and send the ticket to anna@example.com.\n"
                             "</transcript>\n\nSummarize the transcript above"));
    BOOST_TEST(!contains(p, "PRIVATE-THOUGHT")); // thinking left out
    BOOST_TEST(!contains(p, "<previous-summary>"));
    BOOST_TEST(!contains(p, "<turn-start>"));
    BOOST_TEST(!contains(p, "Turn context"));
}

BOOST_AUTO_TEST_CASE(options_reach_the_request) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text(good_summary)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    lb::model_summarizer_options o;
    o.max_output_tokens = 777;
    o.temperature = 0.1;
    o.model_name = "cheap-model";
    o.include_thinking = true;
    o.extra_instructions = "the booking reference";
    lb::model_summarizer<scripted_model> s(m, o);
    BOOST_TEST(s.name() == "model:cheap-model");
    (void)summarize(io, s, r);
    lb::llm_request req = m.last_request();
    BOOST_TEST((req.options.max_output_tokens == 777));
    BOOST_TEST((req.options.temperature == 0.1));
    BOOST_TEST(req.model == "cheap-model");
    std::string p = req.messages[0].text();
    BOOST_TEST(contains(p, "[Assistant thinking]: PRIVATE-THOUGHT compare prices\n"));
    BOOST_TEST(p.ends_with("\n\nAdditional focus: the booking reference"));
}

BOOST_AUTO_TEST_CASE(tool_results_are_truncated_with_a_marker) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("## Goal\nread the log")}};
    std::vector<lb::event> ev;
    ev.push_back(user("read the log"));
    ev.push_back(call("read", json::object{{"path", "/var/log/x.log"}, {"pattern", std::string(700, 'p')}}));
    // 2,500 characters, of which the last 500 are two-byte: the cut falls among them
    ev.push_back(result("read", json::value(std::string(1999, 'x') + [] {
                            std::string s;
                            for (int i = 0; i < 501; ++i) s += "\xC3\xA9";
                            return s;
                        }())));
    lb::summary_request r;
    r.events = ev;
    (void)summarize(io, lb::model_summarizer<scripted_model>(m), r);
    std::string p = m.last_request().messages[0].text();
    // 1,999 'x' and 'é' fit in 2,000 bytes only without the é: the cut is at 1,999 bytes.
    BOOST_TEST(contains(p, "[Tool result (read)]: " + std::string(1999, 'x') + "[\xE2\x80\xA6 501 more characters]\n"));
    // argument values: 500 bytes of JSON
    BOOST_TEST(contains(p, "pattern=\"" + std::string(499, 'p') + "[\xE2\x80\xA6 202 more characters])"));
}

BOOST_AUTO_TEST_CASE(update_mode) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text(good_summary)}};
    std::vector<lb::event> ev;
    ev.push_back(user("Book SK-4711 for me and send the ticket to anna@example.com."));
    ev.push_back(assistant("Booked."));
    lb::summary_request r;
    r.events = ev;
    r.previous_summary = "## Goal\nA flight Oslo-Rome.\n## Progress\n- [ ] choose a flight";
    (void)summarize(io, lb::model_summarizer<scripted_model>(m), r);
    std::string p = m.last_request().messages[0].text();
    BOOST_TEST(p.starts_with("<previous-summary>\n## Goal\nA flight Oslo-Rome.\n## Progress\n- [ ] choose a flight\n"
                             "</previous-summary>\n\n<new-events>\n[User]: Book SK-4711"));
    BOOST_TEST(contains(p, "[Assistant]: Booked.\n</new-events>\n\n"));
    BOOST_TEST(contains(p, "Revise it"));
    BOOST_TEST(contains(p, "Edit the previous summary; do not summarize it."));
    BOOST_TEST(!contains(p, "<transcript>"));
}

BOOST_AUTO_TEST_CASE(split_turn) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::text(good_summary + "\n## Turn context (split turn)\nRefactoring src/a.cpp")}};
    std::vector<lb::event> history = trip();
    std::vector<lb::event> prefix;
    prefix.push_back(user("Now refactor src/a.cpp"));
    prefix.push_back(call("read_file", json::object{{"path", "src/a.cpp"}}));
    lb::summary_request r;
    r.events = history;
    r.turn_prefix = prefix;
    lb::summary s = summarize(io, lb::model_summarizer<scripted_model>(m), r);
    std::string p = m.last_request().messages[0].text();
    BOOST_TEST(contains(p, "</transcript>\n\n<turn-start>\n[User]: Now refactor src/a.cpp\n"
                           "[Tool call]: read_file(path=\"src/a.cpp\")\n</turn-start>\n\n"));
    BOOST_TEST(contains(p, "add a section \"## Turn context (split turn)\""));
    BOOST_TEST(contains(s.text, "## Turn context (split turn)"));

    // a prefix alone
    scripted_model m2{io.get_executor(), {scripted_reply::text("## Goal\nNow refactor src/a.cpp")}};
    lb::summary_request only;
    only.turn_prefix = prefix;
    (void)summarize(io, lb::model_summarizer<scripted_model>(m2), only);
    BOOST_TEST(m2.last_request().messages[0].text().starts_with("<transcript>\n(no earlier messages)\n</transcript>\n\n<turn-start>"));
}

BOOST_AUTO_TEST_CASE(identifiers_are_demanded) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text(good_summary)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    r.identifiers = {"SK-4711", "anna@example.com"};
    (void)summarize(io, lb::model_summarizer<scripted_model>(m), r);
    std::string p = m.last_request().messages[0].text();
    BOOST_TEST(contains(p, "Copy each one into the summary exactly as written"));
    BOOST_TEST(p.ends_with(":\n- SK-4711\n- anna@example.com"));
    BOOST_TEST(m.request_count() == 1u);
}

BOOST_AUTO_TEST_CASE(quality_retry_for_a_missing_identifier) {
    asio::io_context io;
    std::string first = "## Goal\nBook SK-4711 for me and send the ticket by mail.";
    scripted_model m{io.get_executor(),
                     {scripted_reply::text(first).with_usage(1000, 40), scripted_reply::text(good_summary).with_usage(1100, 90)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    r.identifiers = {"SK-4711", "anna@example.com", "2026-05-12"};
    lb::summary s = summarize(io, lb::model_summarizer<scripted_model>(m), r);
    BOOST_TEST(s.text == good_summary);
    BOOST_REQUIRE(s.usage.has_value());
    BOOST_TEST(s.usage->input_tokens == 2100); // both calls
    BOOST_TEST(s.usage->output_tokens == 130);
    BOOST_REQUIRE(m.request_count() == 2u);
    lb::llm_request retry = m.last_request();
    BOOST_REQUIRE(retry.messages.size() == 3u);
    BOOST_TEST((retry.messages[0] == m.request_at(0).messages[0])); // the same prompt
    BOOST_TEST((retry.messages[1].role == lb::message_role::assistant));
    BOOST_TEST(retry.messages[1].text() == first);
    BOOST_TEST((retry.messages[2].role == lb::message_role::user));
    std::string fix = retry.messages[2].text();
    BOOST_TEST(fix.starts_with("This summary cannot be used: it leaves out these identifiers: anna@example.com, 2026-05-12."));
    BOOST_TEST(contains(fix, "Write the complete summary again"));
}

BOOST_AUTO_TEST_CASE(quality_retry_for_the_latest_request) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::text("## Goal\nThe user travels to Italy."), scripted_reply::text(good_summary)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    lb::summary s = summarize(io, lb::model_summarizer<scripted_model>(m), r);
    BOOST_TEST(s.text == good_summary);
    BOOST_REQUIRE(m.request_count() == 2u);
    BOOST_TEST(m.last_request().messages[2].text().starts_with(
        "This summary cannot be used: it does not state the user's latest request (\"Book SK-4711 for me and send "
        "the ticket to anna@example.com.\")."));
}

BOOST_AUTO_TEST_CASE(quality_fails_twice) {
    asio::io_context io;
    scripted_model m{io.get_executor(),
                     {scripted_reply::text("## Goal\nsomething").with_usage(10, 1),
                      scripted_reply::text("## Goal\nsomething else").with_usage(20, 2)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    r.identifiers = {"SK-4711"};
    auto e = summarize_error(io, lb::model_summarizer<scripted_model>(m), r);
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST((e->code() == lb::errc::bad_response));
    BOOST_TEST(contains(e->what(), "model:scripted: the summary failed the quality check twice: it does not state"));
    BOOST_TEST(contains(e->what(), "it leaves out these identifiers: SK-4711"));
    BOOST_REQUIRE(e->spent().has_value());
    BOOST_TEST(e->spent()->input_tokens == 30);
    BOOST_TEST(m.request_count() == 2u);
}

BOOST_AUTO_TEST_CASE(quality_check_can_be_off) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text("short and vague")}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    r.identifiers = {"SK-4711"};
    lb::model_summarizer_options o;
    o.quality_check = false;
    BOOST_TEST(summarize(io, lb::model_summarizer<scripted_model>(m, o), r).text == "short and vague");
}

BOOST_AUTO_TEST_CASE(model_errors_throw_with_their_code) {
    asio::io_context io;
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    {
        scripted_model m{io.get_executor(), {scripted_reply::transient("rate limited (429)")}};
        auto e = summarize_error(io, lb::model_summarizer<scripted_model>(m), r);
        BOOST_TEST((e->code() == lb::errc::transient));
        BOOST_TEST(contains(e->what(), "model:scripted: the model failed: rate limited (429)"));
        BOOST_TEST(!e->spent().has_value());
    }
    {
        scripted_model m{io.get_executor(), {scripted_reply::context_overflow()}};
        auto e = summarize_error(io, lb::model_summarizer<scripted_model>(m), r);
        BOOST_TEST((e->code() == lb::errc::context_overflow));
    }
    {
        // empty (whitespace, or only a tool call): bad_response, no retry
        scripted_model m{io.get_executor(), {scripted_reply::text(" \n ").with_usage(5, 1), scripted_reply::text(good_summary)}};
        auto e = summarize_error(io, lb::model_summarizer<scripted_model>(m), r);
        BOOST_TEST((e->code() == lb::errc::bad_response));
        BOOST_TEST(contains(e->what(), "empty summary"));
        BOOST_TEST(e->spent()->input_tokens == 5);
        BOOST_TEST(m.request_count() == 1u);
    }
    {
        scripted_model m{io.get_executor(), {scripted_reply::tool_call("search", {{"q", "x"}})}};
        auto e = summarize_error(io, lb::model_summarizer<scripted_model>(m), r);
        BOOST_TEST((e->code() == lb::errc::bad_response));
    }
}

BOOST_AUTO_TEST_CASE(empty_history_needs_no_model) {
    asio::io_context io;
    scripted_model m{io.get_executor()};
    lb::summary_request r;
    lb::summary s = summarize(io, lb::model_summarizer<scripted_model>(m), r);
    BOOST_TEST(s.text == "No prior history.");
    BOOST_TEST(!s.usage.has_value());
    r.previous_summary = "## Goal\nkept";
    BOOST_TEST(summarize(io, lb::model_summarizer<scripted_model>(m), r).text == "## Goal\nkept");
    BOOST_TEST(m.request_count() == 0u);
}

BOOST_AUTO_TEST_CASE(through_any_model_and_a_completion_token) {
    asio::io_context io;
    scripted_model m{io.get_executor(), {scripted_reply::text(good_summary)}};
    std::vector<lb::event> ev = trip();
    lb::summary_request r;
    r.events = ev;
    lb::model_summarizer<> s{lb::any_model(m)};
    std::optional<lb::summary> got;
    lb::async_summarize(io.get_executor(), s, r, [&](boost::system::error_code ec, lb::summary v) {
        BOOST_TEST(!ec);
        got = std::move(v);
    });
    io.run();
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(got->text == good_summary);
}

BOOST_AUTO_TEST_SUITE_END()
