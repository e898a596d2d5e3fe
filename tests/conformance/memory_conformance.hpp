// The memory-service conformance suite: the same cases against every memory_service model.
//
// A backend test file defines a fixture type F with
//   using service_type = ...;
//   static constexpr bool persistent = ...;  // entries outlive the service object
//   service_type open();                      // a service on the fixture's data (call twice:
//                                             // two instances on the same data)
// and instantiates the suite with LIBRETTO_MEMORY_CONFORMANCE(F).
#ifndef LIBRETTO_TESTS_MEMORY_CONFORMANCE_HPP
#define LIBRETTO_TESTS_MEMORY_CONFORMANCE_HPP

#include <libretto/store/any_memory_service.hpp>
#include <libretto/store/memory_service.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <exception>
#include <string>
#include <vector>

namespace memory_conformance {

namespace lb = libretto;
using boost::system::error_code;

inline lb::event said(lb::event_type type, std::string author, std::string text, double ts) {
    lb::event e = lb::event::make(type, std::move(author), lb::content::from_text(std::move(text)));
    e.timestamp = ts;
    e.id = "event-" + std::to_string(static_cast<long long>(ts)); // the same on every call
    return e;
}

/// A conversation about a trip, with a partial, a silent reply, a tool call and a summary.
inline std::vector<lb::event> trip(double t0 = 1000) {
    std::vector<lb::event> v;
    v.push_back(said(lb::event_type::user_message, "user", "I am flying to Lisbon in May with my sister.", t0));
    v.push_back(said(lb::event_type::agent_message, "assistant", "Lisbon in May is warm; pack light layers.", t0 + 1));
    lb::event partial = said(lb::event_type::agent_message, "assistant", "Lisbon partial chunk", t0 + 2);
    partial.partial = true;
    v.push_back(partial);
    lb::event silent = said(lb::event_type::agent_message, "assistant", "NO_REPLY lisbon", t0 + 3);
    silent.metadata["silent"] = true;
    v.push_back(silent);
    v.push_back(said(lb::event_type::user_message, "user", "My sister is vegetarian.", t0 + 4));
    lb::event summary = lb::event::make(lb::event_type::agent_message, "libretto", lb::content{});
    summary.timestamp = t0 + 5;
    summary.id = "event-summary-" + std::to_string(static_cast<long long>(t0));
    lb::event_compaction c;
    c.first_sequence = 1;
    c.last_sequence = 5;
    c.summary = "Trip planning: Lisbon, May, sister, vegetarian food.";
    summary.actions.compaction = c;
    v.push_back(summary);
    return v;
}

template <class S>
std::size_t add(S& s, const std::string& session, const std::vector<lb::event>& events, const std::string& user = "u1") {
    std::size_t added = 0;
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.memory_add("app", user, session, lb::event_span(events), added, &d), d.message());
    return added;
}

template <class S>
std::vector<lb::memory_entry> search(S& s, std::string text, std::size_t limit = 10, const std::string& user = "u1") {
    lb::memory_query q;
    q.app_name = "app";
    q.user_id = user;
    q.text = std::move(text);
    q.limit = limit;
    std::vector<lb::memory_entry> out;
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.memory_search(q, out, &d), d.message());
    return out;
}

template <class F>
void case_what_is_remembered_and_found() {
    F f;
    auto s = f.open();
    BOOST_TEST(add(s, "s1", trip()) == 4u); // two user messages, one reply, one summary
    BOOST_TEST(add(s, "s1", trip()) == 0u); // the same events again: nothing new
    auto hits = search(s, "lisbon");
    BOOST_REQUIRE_EQUAL(hits.size(), 3u); // not the partial, not the silent reply
    for (const auto& h : hits) {
        BOOST_TEST(h.session_id == "s1");
        BOOST_TEST(h.score > 0);
        BOOST_TEST(h.text.find("NO_REPLY") == std::string::npos);
    }
    // Case-insensitive; the summary keeps its range.
    auto veg = search(s, "VEGETARIAN");
    BOOST_REQUIRE_EQUAL(veg.size(), 2u);
    bool found_summary = false;
    for (const auto& h : veg)
        if (h.metadata.contains("compaction")) {
            found_summary = true;
            BOOST_TEST(h.author == "libretto");
            BOOST_TEST(h.metadata.at("compaction").at("first_sequence") == 1);
            BOOST_TEST(h.metadata.at("compaction").at("last_sequence") == 5);
        }
    BOOST_TEST(found_summary);
    // An entry names its event, author and time.
    auto sister = search(s, "sister vegetarian");
    BOOST_REQUIRE(!sister.empty());
    BOOST_TEST(sister.front().text.find("vegetarian") != std::string::npos); // more words matched ranks first
    auto first = search(s, "flying");
    BOOST_REQUIRE_EQUAL(first.size(), 1u);
    BOOST_TEST(first[0].author == "user");
    BOOST_TEST(first[0].timestamp == 1000);
    BOOST_TEST(first[0].event_id == trip()[0].id);
    BOOST_TEST(search(s, "tokyo").empty());
    BOOST_TEST(search(s, "lisbon", 2).size() == 2u); // the limit
    if constexpr (F::persistent) {
        auto again = f.open();
        BOOST_TEST(search(again, "lisbon").size() == 3u);
    }
}

template <class F>
void case_users_and_sessions_are_separate() {
    F f;
    auto s = f.open();
    add(s, "s1", trip());
    std::vector<lb::event> other{said(lb::event_type::user_message, "user", "Lisbon? Never been.", 5000)};
    add(s, "s9", other, "u2");
    BOOST_TEST(search(s, "lisbon", 10, "u2").size() == 1u);
    BOOST_TEST(search(s, "lisbon").size() == 3u);
    std::vector<lb::event> later{said(lb::event_type::user_message, "user", "Back from Lisbon!", 9000)};
    add(s, "s2", later);
    auto all = search(s, "lisbon");
    BOOST_REQUIRE_EQUAL(all.size(), 4u);
    // Erasing a session forgets only its entries.
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.memory_erase_session("app", "u1", "s1", &d), d.message());
    auto left = search(s, "lisbon");
    BOOST_REQUIRE_EQUAL(left.size(), 1u);
    BOOST_TEST(left[0].session_id == "s2");
    BOOST_TEST(search(s, "lisbon", 10, "u2").size() == 1u);
    BOOST_TEST(!s.memory_erase_session("app", "u1", "never", &d)); // absent: no error
    // Added again after the erase: found again.
    BOOST_TEST(add(s, "s1", trip()) == 4u);
}

template <class F>
void case_bad_input_is_refused() {
    F f;
    auto s = f.open();
    add(s, "s1", trip());
    lb::diagnostics d;
    std::size_t added = 0;
    const auto events = trip();
    BOOST_TEST(s.memory_add("app", "u/1", "s1", lb::event_span(events), added, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("user id") != std::string::npos, d.message());
    BOOST_TEST(s.memory_add("app", "u1", "", lb::event_span(events), added, &d) == lb::errc::invalid_argument);
    lb::memory_query q;
    q.app_name = "app";
    q.user_id = "u1";
    std::vector<lb::memory_entry> out;
    q.text = "  ,;  ";
    BOOST_TEST(s.memory_search(q, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("no words") != std::string::npos, d.message());
    q.text = "lisbon \xff";
    BOOST_TEST(s.memory_search(q, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("the query is not valid UTF-8") != std::string::npos, d.message());
    q.text = "lisbon";
    q.limit = 0;
    BOOST_TEST(s.memory_search(q, out, &d) == lb::errc::invalid_argument);
    q.limit = 1001;
    BOOST_TEST(s.memory_search(q, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("limit is 1001 (1 to 1000)") != std::string::npos, d.message());
    q.limit = 10;
    q.app_name = "../x";
    BOOST_TEST(s.memory_search(q, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(s.memory_erase_session("app", "u1", "a\nb", &d) == lb::errc::invalid_argument);
    // Words that look like a query language are words.
    q.app_name = "app";
    q.text = "\"lisbon\" OR NOT * (may) AND sister: -vegetarian";
    BOOST_TEST(!s.memory_search(q, out, &d), d.message());
    BOOST_TEST(out.size() >= 3u);
    BOOST_TEST(search(s, "lisbon").size() == 3u); // nothing changed
}

// Every field an entry stores is checked before anything of the call is: an id that keys
// it, text and author of UTF-8, a finite time (a NUL in text or author is a space). Events that are not remembered
// are not checked.
template <class F>
void case_events_that_cannot_be_remembered_are_refused_whole() {
    F f;
    auto s = f.open();
    struct bad_case {
        std::string why;      // what the message must name
        lb::event event;
    };
    auto with = [](auto change) {
        lb::event e = said(lb::event_type::user_message, "user", "Lisbon again", 7000);
        change(e);
        return e;
    };
    std::vector<bad_case> cases;
    cases.push_back({"text is not valid UTF-8", with([](lb::event& e) { e.content = lb::content::from_text("caf\xc3 Lisbon"); })});
    cases.push_back({"author is not valid UTF-8", with([](lb::event& e) { e.author = "us\xff"; })});
    cases.push_back({"id contains a control character", with([](lb::event& e) { e.id = "ev\x01"; })});
    cases.push_back({"id is not valid UTF-8", with([](lb::event& e) { e.id = "ev\xfe"; })});
    cases.push_back({"id is empty", with([](lb::event& e) { e.id.clear(); })});
    cases.push_back({"timestamp NaN is not finite", with([](lb::event& e) { e.timestamp = std::nan(""); })});
    cases.push_back({"timestamp inf is not finite", with([](lb::event& e) { e.timestamp = HUGE_VAL; })});
    lb::event summary = trip()[5];
    summary.id = "event-summary-bad";
    summary.actions.compaction->summary = "Lisbon \xc3";
    cases.push_back({"text is not valid UTF-8", summary});
    for (const auto& c : cases) {
        std::vector<lb::event> events = trip(); // four entries before the bad one
        events.push_back(c.event);
        lb::diagnostics d;
        std::size_t added = 99;
        const error_code ec = s.memory_add("app", "u1", "s1", lb::event_span(events), added, &d);
        BOOST_TEST((ec == lb::errc::invalid_argument), c.why);
        BOOST_TEST(added == 0u, c.why);
        BOOST_TEST(d.message().find(c.why) != std::string::npos, c.why + " -> " + d.message());
        BOOST_TEST(d.message().find("event 7 of 7") != std::string::npos, d.message()); // which one
        BOOST_TEST(search(s, "lisbon").empty(), c.why); // nothing of the call stored
    }
    // Two different events with an empty id: refused, not one of them dropped.
    std::vector<lb::event> blank{said(lb::event_type::user_message, "user", "Lisbon one", 1),
                                 said(lb::event_type::user_message, "user", "Lisbon two", 2)};
    for (auto& e : blank) e.id.clear();
    lb::diagnostics d;
    std::size_t added = 0;
    BOOST_TEST((s.memory_add("app", "u1", "s1", lb::event_span(blank), added, &d) == lb::errc::invalid_argument), d.message());
    BOOST_TEST(search(s, "lisbon").empty());
    // What is not remembered is not checked: a partial with a NaN time, a tool response without an id.
    std::vector<lb::event> events = trip();
    lb::event partial = said(lb::event_type::agent_message, "assistant", "Lisbon partial", 1);
    partial.partial = true;
    partial.timestamp = std::nan("");
    events.push_back(partial);
    lb::event call = lb::event::make(lb::event_type::tool_response, "tool", lb::content{});
    call.id.clear();
    events.push_back(call);
    BOOST_TEST(add(s, "s1", events) == 4u);
    // A NUL (which session stores keep) is remembered as a space, the same on every back end:
    // a turn whose message holds one is still remembered, and PostgreSQL cuts nothing.
    std::vector<lb::event> nul{said(lb::event_type::user_message, std::string("us\0er", 5), std::string("Faro\0Lagos", 10), 7500)};
    BOOST_TEST(add(s, "s1", nul) == 1u);
    auto faro = search(s, "lagos");
    BOOST_REQUIRE_EQUAL(faro.size(), 1u);
    BOOST_TEST(faro[0].text == "Faro Lagos");
    BOOST_TEST(faro[0].author == "us er");
    // Tabs and newlines are text.
    std::vector<lb::event> tabbed{said(lb::event_type::user_message, "user", "Porto\tand\nBraga", 8000)};
    BOOST_TEST(add(s, "s1", tabbed) == 1u);
    BOOST_TEST(search(s, "braga").size() == 1u);
}

// Words split at Unicode spaces and punctuation and fold case beyond ASCII, as SQLite's
// unicode61 tokenizer and PostgreSQL's parser under a UTF-8 locale do.
template <class F>
void case_words_beyond_ascii_are_found() {
    F f;
    auto s = f.open();
    std::vector<lb::event> events{
        said(lb::event_type::user_message, "user", "We loved Lisbon\u2019s old town.", 100),
        said(lb::event_type::user_message, "user", "Paris\u00A0cafe culture", 101),
        said(lb::event_type::user_message, "user", "\u00C9COLE NORMALE", 102),
        said(lb::event_type::user_message, "user", "\u00ABQuoted\u00BB\u3000\u2014dash\u2014 \u0141\u00D3D\u0179", 103),
        said(lb::event_type::user_message, "user", "\u041C\u041E\u0421\u041A\u0412\u0410 \u0391\u0398\u0397\u039D\u0391", 104),
    };
    BOOST_TEST(add(s, "s1", events) == 5u);
    BOOST_TEST(search(s, "lisbon").size() == 1u);
    BOOST_TEST(search(s, "paris").size() == 1u);
    BOOST_TEST(search(s, "cafe").size() == 1u);
    BOOST_TEST(search(s, "\u00E9cole").size() == 1u);
    BOOST_TEST(search(s, "\u00C9COLE").size() == 1u);
    BOOST_TEST(search(s, "\u00E9COLE").size() == 1u);
    BOOST_TEST(search(s, "quoted").size() == 1u);
    BOOST_TEST(search(s, "dash").size() == 1u);
    BOOST_TEST(search(s, "\u0142\u00F3d\u017A").size() == 1u); // Latin Extended-A folds too
    BOOST_TEST(search(s, "\u043C\u043E\u0441\u043A\u0432\u0430").size() == 1u); // Cyrillic
    BOOST_TEST(search(s, "\u03B1\u03B8\u03B7\u03BD\u03B1").size() == 1u); // Greek
    BOOST_TEST(search(s, "lisbon\u2019s").size() == 1u);  // the query splits the same way
    BOOST_TEST(search(s, "ecole").empty());              // accents are kept
}

template <class F>
void case_any_memory_service_runs_it_asynchronously() {
    F f;
    boost::asio::io_context io;
    lb::any_memory_service svc(io.get_executor(), f.open());
    std::exception_ptr failure;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
            namespace asio = boost::asio;
            lb::session s;
            s.app_name = "app";
            s.user_id = "u1";
            s.id = "s1";
            for (auto& e : trip()) s.events.push_back(std::move(e));
            auto add_op = svc.async_add_session(s, asio::use_awaitable);
            std::size_t added = co_await std::move(add_op);
            BOOST_TEST(added == 4u);
            lb::memory_query q;
            q.app_name = "app";
            q.user_id = "u1";
            q.text = "lisbon";
            auto search_op = svc.async_search(q, asio::use_awaitable);
            std::vector<lb::memory_entry> hits = co_await std::move(search_op);
            BOOST_TEST(hits.size() == 3u);
            lb::diagnostics d;
            q.text = "";
            auto bad = svc.async_search(q, d, asio::as_tuple(asio::use_awaitable));
            auto [ec, none] = co_await std::move(bad);
            BOOST_TEST(ec == lb::errc::invalid_argument);
            BOOST_TEST(none.empty());
            BOOST_TEST(d.message().find("no words") != std::string::npos, d.message());
            auto erase = svc.async_erase_session("app", "u1", "s1", asio::use_awaitable);
            co_await std::move(erase);
            q.text = "lisbon";
            auto again = svc.async_search(q, asio::use_awaitable);
            std::vector<lb::memory_entry> after = co_await std::move(again);
            BOOST_TEST(after.empty());
        },
        [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

} // namespace memory_conformance

/// The suite `memory_conformance` for fixture F.
#define LIBRETTO_MEMORY_CONFORMANCE(F)                                                                            \
    BOOST_AUTO_TEST_SUITE(memory_conformance)                                                                   \
    BOOST_AUTO_TEST_CASE(what_is_remembered_and_found) { ::memory_conformance::case_what_is_remembered_and_found<F>(); } \
    BOOST_AUTO_TEST_CASE(users_and_sessions_are_separate) {                                                     \
        ::memory_conformance::case_users_and_sessions_are_separate<F>();                                         \
    }                                                                                                           \
    BOOST_AUTO_TEST_CASE(bad_input_is_refused) { ::memory_conformance::case_bad_input_is_refused<F>(); }        \
    BOOST_AUTO_TEST_CASE(events_that_cannot_be_remembered_are_refused_whole) {                                  \
        ::memory_conformance::case_events_that_cannot_be_remembered_are_refused_whole<F>();                      \
    }                                                                                                           \
    BOOST_AUTO_TEST_CASE(words_beyond_ascii_are_found) { ::memory_conformance::case_words_beyond_ascii_are_found<F>(); } \
    BOOST_AUTO_TEST_CASE(any_memory_service_runs_it_asynchronously) {                                           \
        ::memory_conformance::case_any_memory_service_runs_it_asynchronously<F>();                               \
    }                                                                                                           \
    BOOST_AUTO_TEST_SUITE_END()

#endif
