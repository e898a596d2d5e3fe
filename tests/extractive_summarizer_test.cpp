// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/compaction/extractive_summarizer.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>

#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;
namespace st = libretto::detail::summary_text;

namespace {

lb::event user(std::string text) {
    return lb::event::make(lb::event_type::user_message, "user", lb::content::from_text(std::move(text)));
}
lb::event assistant(std::string text, std::string author = "assistant") {
    return lb::event::make(lb::event_type::agent_message, std::move(author), lb::content::from_text(std::move(text)));
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
lb::event failed(std::string name, std::string error, std::string id = "call_1") {
    lb::content c;
    c.parts.emplace_back(lb::tool_response_part{std::move(id), std::move(name), nullptr, std::move(error), {}});
    return lb::event::make(lb::event_type::tool_response, "assistant", std::move(c));
}

/// True if s is well-formed UTF-8 (no truncated or stray sequences).
bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        i += n;
    }
    return true;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

/// A small session: a question, a tool call with six arguments, its result, an answer, and
/// a follow-up request.
std::vector<lb::event> session() {
    std::vector<lb::event> ev;
    ev.push_back(user("Please look up order ORD-77812 and check the shipping address in /srv/orders/77812.json."));
    ev.push_back(call("lookup_order", json::object{{"order_id", "ORD-77812"},
                                                   {"fields", json::array{"address", "status"}},
                                                   {"verbose", true},
                                                   {"note", std::string(300, 'n')},
                                                   {"region", "eu"},
                                                   {"retries", 3}}));
    ev.push_back(result("lookup_order", json::object{{"status", "shipped"}, {"tracking", "https://track.example.com/t/ZX81"}}));
    lb::event thought = assistant("The order shipped.");
    thought.content.parts.insert(thought.content.parts.begin(), lb::thinking_part{"SECRET-REASONING private", {}});
    ev.push_back(std::move(thought));
    ev.push_back(user("Now change the delivery date of ORD-77812 to Friday\nand tell me the new ETA."));
    return ev;
}

} // namespace

BOOST_AUTO_TEST_SUITE(extractive_summarizer_tests)

BOOST_AUTO_TEST_CASE(models_the_concept_and_runs_as_a_coroutine) {
    static_assert(lb::summarizer<lb::extractive_summarizer>);
    std::vector<lb::event> ev = session();
    lb::summary_request r;
    r.events = ev;
    asio::io_context io;
    lb::summary got;
    std::exception_ptr failure;
    {
        lb::extractive_summarizer s;
        asio::co_spawn(io, s.async_summarize(r), [&](std::exception_ptr ep, lb::summary v) {
            failure = ep;
            got = std::move(v);
        });
    } // the summarizer is gone: the operation holds its own copy
    io.run();
    BOOST_REQUIRE(!failure);
    BOOST_TEST(got.produced_by == "extractive");
    BOOST_TEST(!got.usage.has_value());
    BOOST_TEST(got.text == lb::extractive_summarizer{}.summarize(r).text);
}

BOOST_AUTO_TEST_CASE(empty_history) {
    lb::extractive_summarizer s;
    lb::summary_request r;
    BOOST_TEST(s.summarize(r).text == "No prior history.");
    r.previous_summary = "  Goal: ship ORD-1.  ";
    BOOST_TEST(s.summarize(r).text == "Goal: ship ORD-1.");
    // bounded even then
    r.previous_summary = std::string(10000, 'x');
    BOOST_TEST(s.summarize(r).text.size() <= s.options().max_chars);
}

BOOST_AUTO_TEST_CASE(digest_of_a_session) {
    std::vector<lb::event> ev = session();
    lb::summary_request r;
    r.events = ev;
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST_MESSAGE(t);
    BOOST_TEST(t.starts_with("Summary of 5 events (extractive, no model)."));
    // the latest request verbatim, line break included
    BOOST_TEST(contains(t, "Latest user request:\nNow change the delivery date of ORD-77812 to Friday\nand tell me the new ETA."));
    // earlier turns one line each
    BOOST_TEST(contains(t, "\n- User: Please look up order ORD-77812"));
    BOOST_TEST(contains(t, "\n- Assistant: The order shipped."));
    BOOST_TEST(contains(t, "\n- User: Now change the delivery date of ORD-77812 to Friday and tell me the new ETA."));
    // the tool call: name, first four arguments, long values shortened, the rest counted
    BOOST_TEST(contains(t, "Tool call: lookup_order(order_id=\"ORD-77812\", fields=[\"address\",\"status\"], verbose=true, note=\"nnn"));
    BOOST_TEST(contains(t, ", +2 more)"));
    BOOST_TEST(!contains(t, "region="));
    BOOST_TEST(!contains(t, std::string(100, 'n')));
    BOOST_TEST(contains(t, "Tool result (lookup_order): {\"status\":\"shipped\""));
    // thinking is never shown
    BOOST_TEST(!contains(t, "SECRET-REASONING"));
    // identifiers verbatim
    BOOST_TEST(contains(t, "Critical identifiers:"));
    BOOST_TEST(contains(t, "\n- ORD-77812"));
    BOOST_TEST(contains(t, "\n- /srv/orders/77812.json"));
    BOOST_TEST(contains(t, "\n- https://track.example.com/t/ZX81"));
    BOOST_TEST(contains(t, "\n- lookup_order"));
    BOOST_TEST(t.size() <= 4000u);
}

BOOST_AUTO_TEST_CASE(tool_errors_and_authors) {
    std::vector<lb::event> ev;
    ev.push_back(user("deploy it"));
    ev.push_back(assistant("Deploying.", "deployer"));
    ev.push_back(failed("deploy", "permission denied: /etc/nginx/nginx.conf"));
    lb::summary_request r;
    r.events = ev;
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(contains(t, "- Assistant (deployer): Deploying."));
    BOOST_TEST(contains(t, "- Tool error (deploy): permission denied: /etc/nginx/nginx.conf"));
    BOOST_TEST(contains(t, "- /etc/nginx/nginx.conf"));
}

BOOST_AUTO_TEST_CASE(deterministic) {
    std::vector<lb::event> a = session();
    std::vector<lb::event> b = session(); // other ids and timestamps
    lb::summary_request ra, rb;
    ra.events = a;
    rb.events = b;
    ra.previous_summary = rb.previous_summary = "Earlier the user asked about ORD-1.";
    lb::extractive_summarizer s;
    std::string x = s.summarize(ra).text;
    BOOST_TEST(x == s.summarize(ra).text);
    BOOST_TEST(x == s.summarize(rb).text);
}

BOOST_AUTO_TEST_CASE(huge_tool_result_stays_bounded) {
    std::vector<lb::event> ev;
    ev.push_back(user("dump the log"));
    ev.push_back(call("read_log", json::object{{"path", "/var/log/app.log"}}));
    ev.push_back(result("read_log", json::value(std::string(1 << 20, 'L'))));
    ev.push_back(user("what failed?"));
    lb::summary_request r;
    r.events = ev;
    for (std::size_t max : {4000u, 1000u, 300u, 64u, 16u}) {
        lb::extractive_summarizer_options o;
        o.max_chars = max;
        std::string t = lb::extractive_summarizer(o).summarize(r).text;
        BOOST_TEST(t.size() <= max);
        BOOST_TEST(valid_utf8(t));
    }
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(contains(t, "Tool result (read_log): LLLL"));
    BOOST_TEST(contains(t, "Latest user request:\nwhat failed?"));
}

BOOST_AUTO_TEST_CASE(a_max_chars_too_small_for_a_summary_is_refused) {
    // max_chars 0 gave an empty summary, which the compaction it was for then refused
    // ("actions.compaction.summary is empty") without naming the option.
    for (std::size_t max : {0u, 1u, 15u}) {
        lb::extractive_summarizer_options o;
        o.max_chars = max;
        try {
            lb::extractive_summarizer s(o);
            BOOST_ERROR("max_chars " << max << " was taken");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument));
            BOOST_TEST(std::string(e.what()).find("extractive_summarizer_options::max_chars is " + std::to_string(max) +
                                                  "; a summary needs at least 16 bytes") != std::string::npos,
                       e.what());
        }
    }
    lb::extractive_summarizer_options o;
    o.max_chars = 16;
    lb::summary_request r;
    std::vector<lb::event> ev{user("hello there, a long enough question")};
    r.events = ev;
    const std::string t = lb::extractive_summarizer(o).summarize(r).text;
    BOOST_TEST(!t.empty());
    BOOST_TEST(t.size() <= 16u);
}

BOOST_AUTO_TEST_CASE(never_cuts_inside_a_character) {
    // Multi-byte text everywhere, at every limit: the output is valid UTF-8 and within bounds.
    std::string greek = "Ελληνικά κείμενα 日本語のテキスト 😀🎉 ";
    std::string big;
    for (int i = 0; i < 40; ++i) big += greek;
    std::vector<lb::event> ev;
    ev.push_back(user(big));
    ev.push_back(assistant(big));
    ev.push_back(result("t", json::value(big)));
    ev.push_back(user(big));
    lb::summary_request r;
    r.events = ev;
    r.previous_summary = big;
    for (std::size_t max = 16; max < 700; max += 7) {
        lb::extractive_summarizer_options o;
        o.max_chars = max;
        o.message_chars = 1 + max / 10;
        o.tool_result_chars = 1 + max / 13;
        std::string t = lb::extractive_summarizer(o).summarize(r).text;
        BOOST_TEST_REQUIRE(t.size() <= max);
        BOOST_TEST_REQUIRE(valid_utf8(t));
    }
}

BOOST_AUTO_TEST_CASE(update_carries_the_previous_summary_forward) {
    std::vector<lb::event> ev;
    ev.push_back(user("Also book a hotel near /maps/oslo-centre for 2 nights."));
    ev.push_back(assistant("Booked Hotel Bristol, confirmation BK-99001."));
    lb::summary_request r;
    r.events = ev;
    r.previous_summary = "Goal: a trip to Oslo. Flight LH-4711 booked for 12 May. Budget 900 EUR.";
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(contains(t, "Earlier:\nGoal: a trip to Oslo. Flight LH-4711 booked for 12 May. Budget 900 EUR."));
    BOOST_TEST(contains(t, "BK-99001"));
    BOOST_TEST(contains(t, "\n- LH-4711")); // the previous summary's identifiers are kept too

    // A second update over that summary still mentions the first one's key facts.
    std::vector<lb::event> ev2;
    ev2.push_back(user("Thanks, that is all."));
    lb::summary_request r2;
    r2.events = ev2;
    r2.previous_summary = t;
    std::string t2 = lb::extractive_summarizer{}.summarize(r2).text;
    BOOST_TEST(contains(t2, "LH-4711"));
    BOOST_TEST(contains(t2, "BK-99001"));
    BOOST_TEST(t2.size() <= 4000u);

    // A long previous summary is trimmed to a quarter of max_chars.
    r.previous_summary = "KEY-FACT-00001 first. " + std::string(9000, 'p');
    std::string t3 = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(contains(t3, "Earlier:\nKEY-FACT-00001 first."));
    BOOST_TEST(t3.size() <= 4000u);
    BOOST_TEST(contains(t3, "Latest user request:\nAlso book a hotel"));
}

BOOST_AUTO_TEST_CASE(long_history_keeps_the_newest_items) {
    std::vector<lb::event> ev;
    for (int i = 0; i < 300; ++i) {
        ev.push_back(user("question number " + std::to_string(i) + " " + std::string(100, 'q')));
        ev.push_back(assistant("answer number " + std::to_string(i)));
    }
    lb::summary_request r;
    r.events = ev;
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(t.size() <= 4000u);
    BOOST_TEST(contains(t, "earlier items omitted)"));
    BOOST_TEST(contains(t, "answer number 299"));
    BOOST_TEST(!contains(t, "answer number 0\n"));
    BOOST_TEST(contains(t, "Latest user request:\nquestion number 299"));
}

BOOST_AUTO_TEST_CASE(split_turn_section) {
    std::vector<lb::event> history;
    history.push_back(user("first task"));
    history.push_back(assistant("done with the first task"));
    std::vector<lb::event> prefix;
    prefix.push_back(user("Refactor src/parser.cpp into two files"));
    prefix.push_back(call("read_file", json::object{{"path", "src/parser.cpp"}}));
    lb::summary_request r;
    r.events = history;
    r.turn_prefix = prefix;
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(t.starts_with("Summary of 4 events (extractive, no model), ending inside a turn."));
    auto conv = t.find("Conversation:");
    auto turn = t.find("Turn context (split turn):");
    BOOST_REQUIRE(conv != std::string::npos);
    BOOST_REQUIRE(turn != std::string::npos);
    BOOST_TEST(conv < turn);
    BOOST_TEST(t.find("first task") < turn);
    BOOST_TEST(t.find("Tool call: read_file(path=\"src/parser.cpp\")") > turn);
    BOOST_TEST(contains(t, "Latest user request:\nRefactor src/parser.cpp into two files"));

    // only a prefix: no conversation section
    lb::summary_request p;
    p.turn_prefix = prefix;
    std::string tp = lb::extractive_summarizer{}.summarize(p).text;
    BOOST_TEST(!contains(tp, "Conversation:"));
    BOOST_TEST(contains(tp, "Turn context (split turn):"));
}

BOOST_AUTO_TEST_CASE(requested_identifiers_are_listed) {
    std::vector<lb::event> ev;
    ev.push_back(user("hello there"));
    lb::summary_request r;
    r.events = ev;
    r.identifiers = {"customer bob", "X"};
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(contains(t, "\n- customer bob"));
    BOOST_TEST(contains(t, "\n- X"));
}

BOOST_AUTO_TEST_CASE(partial_and_lifecycle_events_are_skipped) {
    std::vector<lb::event> ev;
    ev.push_back(user("hi"));
    lb::event part = assistant("PARTIAL-CHUNK");
    part.partial = true;
    ev.push_back(part);
    ev.push_back(lb::event::make(lb::event_type::agent_start, "assistant"));
    ev.push_back(assistant("hello"));
    lb::summary_request r;
    r.events = ev;
    std::string t = lb::extractive_summarizer{}.summarize(r).text;
    BOOST_TEST(!contains(t, "PARTIAL-CHUNK"));
    BOOST_TEST(contains(t, "- Assistant: hello"));
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the text helpers and critical_identifiers ----------------------------------------

BOOST_AUTO_TEST_SUITE(summary_text_tests)

BOOST_AUTO_TEST_CASE(utf8_cut_at_every_position) {
    std::string s = "a\xC3\xA9" "b\xE2\x82\xAC" "c\xF0\x9F\x98\x80" "d"; // a é b € c 😀 d
    for (std::size_t max = 0; max <= s.size() + 1; ++max) {
        std::size_t n = st::utf8_cut(s, max);
        BOOST_TEST(n <= max);
        BOOST_TEST(valid_utf8(std::string_view(s).substr(0, n)));
        // as long as possible: the next character would not fit
        if (n < s.size()) {
            std::size_t next = n + 1;
            while (next < s.size() && st::is_continuation(s[next])) ++next;
            BOOST_TEST(next > max);
        }
    }
    // invalid input: a run of continuation bytes is cut at the limit
    std::string bad(10, '\x80');
    BOOST_TEST(st::utf8_cut(bad, 6) == 6u);
}

BOOST_AUTO_TEST_CASE(truncation_marker) {
    BOOST_TEST(st::truncate_marked("short", 10) == "short");
    BOOST_TEST(st::truncate_marked("abcdefghij", 4) == "abcd[\xE2\x80\xA6 6 more characters]");
    // characters, not bytes: "é" is one character
    BOOST_TEST(st::truncate_marked("ab\xC3\xA9\xC3\xA9", 3) == "ab[\xE2\x80\xA6 2 more characters]");
    BOOST_TEST(st::shorten("abcdefghij", 6) == "abc\xE2\x80\xA6");
    BOOST_TEST(st::shorten("abcdefghij", 2) == "ab");
    BOOST_TEST(st::shorten("ab\xC3\xA9xyz", 6) == "ab\xE2\x80\xA6"); // é would need 2 of the 3 bytes left
    BOOST_TEST(st::fold_whitespace("  a \n\t b  ") == "a b");
}

BOOST_AUTO_TEST_CASE(critical_identifiers_kinds) {
    std::vector<lb::event> ev;
    ev.push_back(user("See https://example.com/a?b=1, the file ./build/out.txt and src/main.cpp. "
                      "Mail ops@example.org about order #123456 (ticket JIRA-42) and 550e8400-e29b-41d4-a716-446655440000. "
                      "Words like e.g. and 3.14 or v1.2, and/or km/h, are not identifiers."));
    ev.push_back(call("get_invoice", json::object{{"invoice_number", 884}, {"customer_id", "bob"}, {"q", "plain words"}},
                      "call_XYZ_never"));
    ev.push_back(result("get_invoice", json::object{{"pdf", "/tmp/invoices/884.pdf"}, {"total", 12.5}}));
    std::vector<std::string> ids = lb::critical_identifiers(ev);
    std::vector<std::string> want = {"https://example.com/a?b=1", "./build/out.txt", "src/main.cpp", "ops@example.org",
                                     "123456", "JIRA-42", "550e8400-e29b-41d4-a716-446655440000", "get_invoice", "884",
                                     "bob", "/tmp/invoices/884.pdf"};
    BOOST_TEST(ids == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(critical_identifiers_bounds) {
    std::vector<lb::event> ev;
    for (int i = 0; i < 40; ++i) ev.push_back(user("item ID-" + std::to_string(10000 + i) + " and ID-" + std::to_string(10000 + i)));
    ev.push_back(user("blob " + std::string(500, 'a') + "1"));
    std::vector<std::string> ids = lb::critical_identifiers(ev);
    BOOST_TEST(ids.size() == 16u);
    BOOST_TEST(ids.front() == "ID-10024"); // the newest 16, oldest first
    BOOST_TEST(ids.back() == "ID-10039");
    lb::identifier_options o;
    o.max_count = 3;
    BOOST_TEST(lb::critical_identifiers(ev, o).size() == 3u);
    BOOST_TEST(lb::critical_identifiers(ev) == lb::critical_identifiers(ev)); // deterministic
    BOOST_TEST(lb::critical_identifiers({}).empty());
}

BOOST_AUTO_TEST_CASE(names_request_rules) {
    // the first 40 normalised bytes
    BOOST_TEST(lb::names_request("## Goal\nThe user asked: please BOOK a table for four at 19:00, somewhere quiet.",
                                 "Please book a table for four at 19:00 somewhere quiet and cheap"));
    // most significant words (prefix matches of 4+ bytes count)
    BOOST_TEST(lb::names_request("Goal: booking of a quiet restaurant table", "Could you book a table in a quiet restaurant?"));
    BOOST_TEST(!lb::names_request("Goal: weather in Oslo", "Could you book a table in a quiet restaurant?"));
    // nothing significant: always named
    BOOST_TEST(lb::names_request("anything", "ok, go on"));
    BOOST_TEST(lb::names_request("anything", ""));
    BOOST_TEST((lb::missing_identifiers("has A-1 and B-2", {"A-1", "C-3", "B-2"}) == std::vector<std::string>{"C-3"}));
}

BOOST_AUTO_TEST_SUITE_END()
