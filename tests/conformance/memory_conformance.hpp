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
    q.text = "lisbon";
    q.limit = 0;
    BOOST_TEST(s.memory_search(q, out, &d) == lb::errc::invalid_argument);
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
    BOOST_AUTO_TEST_CASE(any_memory_service_runs_it_asynchronously) {                                           \
        ::memory_conformance::case_any_memory_service_runs_it_asynchronously<F>();                               \
    }                                                                                                           \
    BOOST_AUTO_TEST_SUITE_END()

#endif
