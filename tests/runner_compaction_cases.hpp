// Shared by runner_compaction_test.cpp and runner_compaction_postgres_test.cpp: drivers for
// runner turns, a scripted agent, transcript checks, and the "every strategy on a store" case.
#ifndef LIBRETTO_TESTS_RUNNER_COMPACTION_CASES_HPP
#define LIBRETTO_TESTS_RUNNER_COMPACTION_CASES_HPP

#include <libretto/compaction/compactor.hpp>
#include <libretto/libretto.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include "runner_test_support.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compaction_cases {

namespace asio = boost::asio;
namespace lb = libretto;
namespace json = boost::json;

using lb::scripted_reply;

/// The run-time-chosen compactor: one runner instantiation for every strategy/summarizer.
using dyn_compactor = lb::compactor<lb::any_strategy, lb::any_summarizer>;


using outcome = runner_support::turn_outcome;
using runner_support::drain;
using runner_support::run_turn;

/// Session s1 as the store has it (it must exist).
template <class Store>
lb::session load(asio::io_context& io, Store& st, lb::get_options go = {}) {
    std::optional<lb::session> out = runner_support::load_session(io, st, "s1", std::move(go));
    BOOST_REQUIRE(out.has_value());
    return std::move(*out);
}

inline lb::run_options opts() { return runner_support::run_opts(); }

/// Every text of a request, messages and system instruction.
std::string request_text(const lb::llm_request& r) {
    std::string s = r.system_instruction;
    for (const auto& m : r.messages)
        for (const auto& p : m.parts)
            if (auto t = std::get_if<lb::text_part>(&p)) s += "\n" + t->text;
    return s;
}

bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

std::filesystem::path scratch(const std::string& name) {
    static int n = 0;
    auto p = std::filesystem::current_path() / ("compaction_" + name + "_" + std::to_string(++n));
    std::filesystem::remove_all(p);
    return p;
}

/// A scripted model answering "answer N" to every request, reporting `input_tokens` each time.
lb::scripted_model answering_model(asio::any_io_executor ex, std::size_t n, std::int64_t input_tokens = 10) {
    lb::scripted_model m{std::move(ex)};
    for (std::size_t i = 1; i <= n; ++i)
        m.then(scripted_reply::text("answer " + std::to_string(i) + " about ORD-" + std::to_string(1000 + i))
                   .with_usage(input_tokens * static_cast<std::int64_t>(i), 5));
    return m;
}

lb::llm_agent<lb::scripted_model> make_agent(lb::scripted_model m) {
    lb::llm_agent_options<lb::scripted_model> o{.name = "assistant", .model = std::move(m)};
    return lb::llm_agent<lb::scripted_model>(std::move(o));
}

/// What a model is shown of `events` (make_context_view), as texts.
inline std::vector<std::string> view_texts(lb::event_span events) {
    std::vector<std::string> out;
    for (const auto& e : lb::make_context_view(events)) out.push_back(e.text());
    return out;
}

/// Checks what every stored transcript must satisfy after compactions: sequences 1..n, each
/// compaction covering stored events before it, and nothing lost.
void check_transcript(const lb::session& s, std::size_t expected_user_messages) {
    std::size_t users = 0;
    for (std::size_t i = 0; i < s.events.size(); ++i) {
        const auto& e = s.events[i];
        BOOST_TEST(e.sequence == static_cast<std::int64_t>(i + 1));
        if (e.type == lb::event_type::user_message && !e.metadata.contains("memory_flush")) ++users;
        if (const auto& c = e.actions.compaction) {
            BOOST_TEST(c->first_sequence >= 1);
            BOOST_TEST(c->first_sequence <= c->last_sequence);
            BOOST_TEST(c->last_sequence < e.sequence);
            BOOST_TEST(!c->summary.empty());
        }
    }
    BOOST_TEST(users == expected_user_messages);
}


/// Eight turns with each strategy on a fresh `Env` (io + store): compactions happen, every
/// turn answers, the transcript stays whole, and a context load holds a summary and shows
/// what a view of the whole session shows.
template <class Env>
void every_strategy_on(const char* store_name) {
    // One runner type for all four (any_strategy): each strategy type would instantiate
    // the whole runner again, and the suite's compile time is CI's budget.
    auto run_with = [&](lb::any_strategy strategy, const char* name) {
        BOOST_TEST_CONTEXT(store_name << ", strategy " << name) {
            Env env;
            auto model = answering_model(env.io.get_executor(), 8, 300);
            auto agent = make_agent(model);
            lb::runner r{agent, env.store, strategy};
            std::size_t compactions = 0;
            for (int i = 1; i <= 8; ++i) {
                auto t = run_turn(env.io, r.run(opts(), "question " + std::to_string(i) + " " + std::string(200, 'x')));
                BOOST_TEST(t.what() == "");
                BOOST_TEST(t.final_answer() != nullptr);
                compactions += t.compactions().size();
            }
            BOOST_TEST(compactions >= 1u);
            lb::session s = load(env.io, env.store);
            check_transcript(s, 8);
            lb::get_options go;
            go.context_only = true;
            lb::session tail = load(env.io, env.store, go);
            bool has_summary = false;
            for (const auto& e : tail.events) has_summary = has_summary || e.is_compaction();
            BOOST_TEST(has_summary);
            BOOST_TEST(tail.events.size() < s.events.size());
            BOOST_TEST(view_texts(tail.events) == view_texts(s.events), boost::test_tools::per_element());
        }
    };
    run_with(lb::char_budget{.threshold_chars = 1000, .retention_chars = 300}, "char_budget");
    run_with(lb::sliding_window{3, 1}, "sliding_window");
    run_with(lb::token_budget{.context_window = 1500, .reserve_tokens = 100, .keep_recent_tokens = 100}, "token_budget");
    run_with(lb::first_of{lb::token_budget{.context_window = 1500, .reserve_tokens = 100, .keep_recent_tokens = 100},
                          lb::sliding_window{3, 1}},
             "token_budget then sliding_window");
}

/// An llm_agent whose before_model callback records the sequences of the events its
/// context's session holds (what the turn loaded, and the turn's own events so far).
inline lb::llm_agent<lb::scripted_model> probing_agent(lb::scripted_model m,
                                                       std::shared_ptr<std::vector<std::vector<std::int64_t>>> seen) {
    lb::llm_agent_options<lb::scripted_model> o{.name = "assistant", .model = std::move(m)};
    o.before_model = [seen](lb::callback_context& cb, lb::llm_request&) -> std::optional<lb::llm_response> {
        std::vector<std::int64_t> seqs;
        for (const auto& e : cb.context().session().events) seqs.push_back(e.sequence);
        seen->push_back(std::move(seqs));
        return std::nullopt;
    };
    return lb::llm_agent<lb::scripted_model>(std::move(o));
}

/// How often `needle` occurs in `hay`.
inline std::size_t count_of(const std::string& hay, std::string_view needle) {
    std::size_t n = 0;
    for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
    return n;
}

/// A sliding window without overlap leaves summaries that follow each other: the model is
/// sent all of them, by the runner that made them (its cached copy) and by a fresh one
/// (another process), as a view of the whole session shows them.
template <class Env>
void older_summaries_stay_on(const char* store_name) {
    BOOST_TEST_CONTEXT(store_name) {
        Env env;
        auto model = answering_model(env.io.get_executor(), 5);
        auto agent = make_agent(model);
        lb::runner r{agent, env.store, lb::any_strategy{lb::sliding_window{2, 0}}};
        std::size_t compactions = 0;
        for (const char* q : {"q1 ALPHA", "q2", "q3 BRAVO", "q4"}) {
            auto t = run_turn(env.io, r.run(opts(), q));
            BOOST_TEST(t.what() == "");
            compactions += t.compactions().size();
        }
        BOOST_REQUIRE_EQUAL(compactions, 2u);
        lb::session whole = load(env.io, env.store);
        const std::vector<std::string> shown = view_texts(whole.events);
        BOOST_TEST(count_of(shown.front(), "ALPHA") == 1u); // the older summary comes first

        auto t5 = run_turn(env.io, r.run(opts(), "q5 from the cache"));
        BOOST_TEST(t5.what() == "");
        std::string sent = request_text(model.requests().back());
        BOOST_TEST(count_of(sent, "[Summary of") == 2u, sent);
        BOOST_TEST(contains(sent, "ALPHA"));
        BOOST_TEST(contains(sent, "BRAVO"));

        auto m2 = answering_model(env.io.get_executor(), 1);
        auto a2 = make_agent(m2);
        lb::runner fresh{a2, env.store, lb::any_strategy{lb::sliding_window{2, 0}}};
        auto t6 = run_turn(env.io, fresh.run(opts(), "q6 from a fresh runner"));
        BOOST_TEST(t6.what() == "");
        BOOST_REQUIRE_EQUAL(m2.requests().size(), 1u);
        sent = request_text(m2.requests().front());
        BOOST_TEST(count_of(sent, "[Summary of") == 2u, sent);
        BOOST_TEST(contains(sent, "ALPHA"));
        BOOST_TEST(contains(sent, "BRAVO"));
        BOOST_TEST(contains(sent, "q5 from the cache"));
    }
}

/// token_budget's rolling summary always starts at sequence 1: a fresh runner's turn loads
/// that summary and the events after its range, never the events it covers, and shows the
/// model what a view of the whole session shows.
template <class Env>
void reload_after_rolling_summary_on(const char* store_name) {
    BOOST_TEST_CONTEXT(store_name) {
        Env env;
        const lb::token_budget budget{.context_window = 1500, .reserve_tokens = 100, .keep_recent_tokens = 100};
        auto model = answering_model(env.io.get_executor(), 8, 300);
        auto agent = make_agent(model);
        {
            lb::runner r{agent, env.store, lb::any_strategy{budget}};
            for (int i = 1; i <= 8; ++i) {
                auto t = run_turn(env.io, r.run(opts(), "question " + std::to_string(i) + " " + std::string(200, 'x')));
                BOOST_TEST(t.what() == "");
            }
        }
        lb::session whole = load(env.io, env.store);
        const lb::event* newest = nullptr;
        std::size_t compactions = 0;
        for (const auto& e : whole.events)
            if (e.is_compaction()) {
                newest = &e;
                ++compactions;
            }
        BOOST_REQUIRE(newest);
        BOOST_REQUIRE_GE(compactions, 2u);
        const auto& range = *newest->actions.compaction;
        BOOST_TEST(range.first_sequence == 1); // rolling: it subsumes every earlier summary
        std::vector<std::int64_t> expected;
        for (const auto& e : whole.events)
            if (e.sequence > range.last_sequence) expected.push_back(e.sequence);
        BOOST_REQUIRE(expected.size() < whole.events.size() / 2);
        expected.push_back(whole.last_sequence + 1); // the turn's user message

        auto seen = std::make_shared<std::vector<std::vector<std::int64_t>>>();
        auto m2 = answering_model(env.io.get_executor(), 1);
        auto probe = probing_agent(m2, seen);
        lb::runner fresh{probe, env.store, lb::any_strategy{budget}};
        auto t = run_turn(env.io, fresh.run(opts(), "after the reload"));
        BOOST_TEST(t.what() == "");
        BOOST_REQUIRE(!seen->empty());
        BOOST_TEST(seen->front() == expected, boost::test_tools::per_element());
        std::vector<std::string> shown = view_texts(whole.events);
        shown.push_back("after the reload");
        std::string want;
        for (const auto& x : shown) want += "\n" + x;
        BOOST_TEST(request_text(m2.requests().front()) == want);
    }
}

} // namespace compaction_cases

#endif
