// The runner's compaction step (compaction/compactor.hpp + runner/runner.hpp): after a turn, on a
// context overflow (compact, retry once), with a memory flush, racing another writer, with
// every strategy on every store.
#include "runner_compaction_cases.hpp"

#if __has_include(<sqlite3.h>)
#include <libretto/store/sqlite_store.hpp>
#define LIBRETTO_TEST_SQLITE 1
#endif

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <libretto/store/detail/jsonl_format.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace compaction_cases;

struct memory_env {
    static constexpr const char* name = "memory_store";
    asio::io_context io;
    lb::memory_store store{io.get_executor()};
};
struct jsonl_env {
    static constexpr const char* name = "jsonl_store";
    asio::io_context io;
    lb::jsonl_store_options options_used = options();
    lb::jsonl_store store;
    jsonl_env() : store(io.get_executor(), options_used) {}
    static lb::jsonl_store_options options() {
        lb::jsonl_store_options o;
        o.directory = scratch("jsonl");
        return o;
    }
};
#ifdef LIBRETTO_TEST_SQLITE
struct sqlite_env {
    static constexpr const char* name = "sqlite_store";
    asio::io_context io;
    lb::sqlite_store store;
    sqlite_env() : store(io.get_executor(), options()) {}
    static lb::sqlite_store_options options() {
        lb::sqlite_store_options o;
        auto dir = scratch("sqlite");
        std::filesystem::create_directories(dir);
        o.path = (dir / "s.db").string();
        return o;
    }
};
using envs = std::tuple<memory_env, jsonl_env, sqlite_env>;
#else
using envs = std::tuple<memory_env, jsonl_env>;
#endif

struct failing_summarizer {
    asio::awaitable<lb::summary> async_summarize(lb::summary_request) {
        throw boost::system::system_error(lb::make_error_code(lb::errc::model_error), "summary model unavailable");
        co_return lb::summary{};
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(runner_compaction)

// ---- the pure steps ----------------------------------------------------------------------

lb::event ev(std::int64_t seq, lb::event_type t, std::string text, std::string inv = "i") {
    lb::event e = lb::event::make(t, t == lb::event_type::user_message ? "user" : "assistant",
                                  lb::content::from_text(std::move(text)));
    e.sequence = seq;
    e.invocation_id = std::move(inv);
    return e;
}

BOOST_AUTO_TEST_CASE(prepare_compaction_rolls_the_previous_summary_and_summarises_only_new_events) {
    std::vector<lb::event> events;
    events.push_back(ev(1, lb::event_type::user_message, "first question"));
    events.push_back(ev(2, lb::event_type::agent_message, "first answer"));
    lb::event c = ev(3, lb::event_type::agent_message, "");
    c.actions.compaction = lb::event_compaction{1, 2, 0, 0, "OLD SUMMARY", 2};
    events.push_back(c);
    events.push_back(ev(4, lb::event_type::user_message, "second question about ORD-77812"));
    events.push_back(ev(5, lb::event_type::agent_message, "second answer"));
    events.push_back(ev(6, lb::event_type::user_message, "third"));

    auto in = lb::prepare_compaction(events, lb::compaction_plan{1, 5});
    BOOST_REQUIRE(in);
    BOOST_TEST(in->request.previous_summary.value_or("") == "OLD SUMMARY");
    BOOST_REQUIRE_EQUAL(in->request.events.size(), 2u); // 4 and 5; the old compaction event is skipped
    BOOST_TEST(in->request.events.front().sequence == 4);
    BOOST_TEST(in->request.turn_prefix.empty()); // the kept tail starts at a user message
    BOOST_TEST(in->event_count == 4);            // compaction events are not counted
    BOOST_TEST((std::find(in->request.identifiers.begin(), in->request.identifiers.end(), "ORD-77812") !=
                in->request.identifiers.end()));

    // A plan that does not start where the old one starts does not roll it.
    auto other = lb::prepare_compaction(events, lb::compaction_plan{2, 5});
    BOOST_REQUIRE(other);
    BOOST_TEST(!other->request.previous_summary);
    BOOST_TEST(other->request.events.front().sequence == 2);
}

BOOST_AUTO_TEST_CASE(prepare_compaction_never_summarises_what_a_rewind_undid) {
    std::vector<lb::event> events;
    events.push_back(ev(1, lb::event_type::user_message, "kept question", "a"));
    events.push_back(ev(2, lb::event_type::agent_message, "kept answer", "a"));
    events.push_back(ev(3, lb::event_type::user_message, "undone question ORD-1", "b"));
    events.push_back(ev(4, lb::event_type::agent_message, "undone answer", "b"));
    lb::event r = ev(5, lb::event_type::agent_start, "", "r");
    r.actions.rewind_before_invocation_id = "b";
    events.push_back(r);
    events.push_back(ev(6, lb::event_type::user_message, "later question", "c"));
    events.push_back(ev(7, lb::event_type::agent_message, "later answer", "c"));
    events.push_back(ev(8, lb::event_type::user_message, "newest", "d"));
    auto in = lb::prepare_compaction(events, lb::compaction_plan{1, 7});
    BOOST_REQUIRE(in);
    std::vector<std::string> texts;
    for (const auto& e : in->request.events) texts.push_back(e.text());
    BOOST_TEST((texts == std::vector<std::string>{"kept question", "kept answer", "later question", "later answer"}));
    BOOST_TEST((std::find(in->request.identifiers.begin(), in->request.identifiers.end(), "ORD-1") ==
                in->request.identifiers.end()));
    // The request outlives a copy of the input (the kept events are shared, not borrowed).
    lb::compaction_input copy = *in;
    in.reset();
    BOOST_TEST(copy.request.events.back().text() == "later answer");
    // Without a rewind in the range, the request points into the given events.
    auto plain = lb::prepare_compaction(events, lb::compaction_plan{1, 2});
    BOOST_REQUIRE(plain);
    BOOST_TEST(!plain->shown);
    BOOST_TEST(&plain->request.events.front() == &events[0]);
}

BOOST_AUTO_TEST_CASE(prepare_compaction_splits_a_turn_cut_in_the_middle) {
    std::vector<lb::event> events;
    events.push_back(ev(1, lb::event_type::user_message, "old"));
    events.push_back(ev(2, lb::event_type::agent_message, "old answer"));
    events.push_back(ev(3, lb::event_type::user_message, "new request"));
    events.push_back(ev(4, lb::event_type::agent_message, "step one"));
    events.push_back(ev(5, lb::event_type::agent_message, "step two")); // kept raw
    auto in = lb::prepare_compaction(events, lb::compaction_plan{1, 4});
    BOOST_REQUIRE(in);
    BOOST_TEST(in->request.events.size() == 2u);
    BOOST_REQUIRE_EQUAL(in->request.turn_prefix.size(), 2u);
    BOOST_TEST(in->request.turn_prefix.front().text() == "new request");

    // Bad input is refused with invalid_argument and a message naming the field: a range
    // past the last event, a reversed one, one starting before 1, events that lack the range.
    auto refused = [&](lb::event_span evs, lb::compaction_plan p, std::string_view names) {
        try {
            (void)lb::prepare_compaction(evs, p);
            BOOST_ERROR("no refusal for " << p.first_sequence << ".." << p.last_sequence);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument));
            BOOST_TEST(std::string(e.what()).find(names) != std::string::npos, e.what());
        }
    };
    refused(events, lb::compaction_plan{7, 9}, "last_sequence 9 is past the session's last stored sequence 5");
    refused(events, lb::compaction_plan{4, 2}, "first_sequence 4 is after last_sequence 2");
    refused(events, lb::compaction_plan{0, 2}, "first_sequence is 0");
    refused({}, lb::compaction_plan{1, 1}, "last_sequence 1 is past the session's last stored sequence 0");
    std::vector<lb::event> holey{events[0], events[3], events[4]}; // 1, 4, 5
    refused(holey, lb::compaction_plan{1, 4}, "do not hold sequences 1 to 4");
}

BOOST_AUTO_TEST_CASE(make_compaction_event_records_range_usage_and_provenance) {
    std::vector<lb::event> events{ev(1, lb::event_type::user_message, "q"), ev(2, lb::event_type::agent_message, "a")};
    events[0].timestamp = 100;
    events[1].timestamp = 200;
    auto in = lb::prepare_compaction(events, lb::compaction_plan{1, 2});
    BOOST_REQUIRE(in);
    lb::summary s{"the summary", lb::usage{40, 7, "m"}, "model:m", "attempt 1: timeout"};
    lb::event e = lb::make_compaction_event(*in, s);
    BOOST_REQUIRE(e.is_compaction());
    BOOST_TEST(e.actions.compaction->summary == "the summary");
    BOOST_TEST(e.actions.compaction->first_sequence == 1);
    BOOST_TEST(e.actions.compaction->last_sequence == 2);
    BOOST_TEST(e.actions.compaction->start_timestamp == 100);
    BOOST_TEST(e.actions.compaction->end_timestamp == 200);
    BOOST_TEST(e.usage->input_tokens == 40);
    BOOST_TEST(e.metadata.at("produced_by").as_string() == "model:m");
    BOOST_TEST(e.metadata.at("fallback_reason").as_string() == "attempt 1: timeout");
    BOOST_TEST(e.author == "compaction");
    BOOST_TEST(e.sequence == 0); // not stored
    // An empty or blank summary is refused: the event would hide its range for nothing.
    for (const char* text : {"", " \n\t"}) {
        try {
            (void)lb::make_compaction_event(*in, lb::summary{text});
            BOOST_ERROR("no refusal for '" << text << "'");
        } catch (const boost::system::system_error& x) {
            BOOST_TEST((x.code() == lb::errc::invalid_argument));
            BOOST_TEST(std::string(x.what()).find("actions.compaction.summary") != std::string::npos, x.what());
        }
    }
}

BOOST_AUTO_TEST_CASE(prepare_compaction_rolls_up_a_summary_from_a_context_load) {
    // What a runner holds after a context load of a session rolled up to 1..4: the summary
    // (5) and the events after it, not the covered ones.
    lb::event c = ev(5, lb::event_type::agent_message, "");
    c.actions.compaction = lb::event_compaction{1, 4, 100, 400, "OLD SUMMARY", 4};
    std::vector<lb::event> events{c, ev(6, lb::event_type::user_message, "new question"),
                                  ev(7, lb::event_type::agent_message, "new answer"),
                                  ev(8, lb::event_type::user_message, "current")};
    events[1].timestamp = 600;
    events[2].timestamp = 700;
    const lb::compaction_plan plan{1, 7};
    BOOST_TEST(lb::holds_plan_events(events, plan));
    BOOST_TEST(!lb::holds_plan_events(events, lb::compaction_plan{2, 7})); // no summary rolls into it
    auto in = lb::prepare_compaction(events, plan);
    BOOST_REQUIRE(in);
    BOOST_TEST(in->request.previous_summary.value_or("") == "OLD SUMMARY");
    BOOST_REQUIRE_EQUAL(in->request.events.size(), 2u); // 6 and 7
    BOOST_TEST(in->request.events.front().sequence == 6);
    BOOST_TEST(in->event_count == 6); // the 4 the summary stands for, and 6, 7
    BOOST_TEST(in->start_timestamp == 100);
    BOOST_TEST(in->end_timestamp == 700);
    // A bad summary is no summary to roll up: the events it claims to cover are needed.
    events[0].actions.compaction->summary = "";
    BOOST_TEST(!lb::holds_plan_events(events, plan));
}

BOOST_AUTO_TEST_CASE(holds_plan_events_takes_any_range_without_overflow) {
    // A custom strategy's plan may name any range: the test once computed last - first + 1
    // in int64_t (UBSan: signed overflow for {0, INT64_MAX}).
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    constexpr auto min = std::numeric_limits<std::int64_t>::min();
    std::vector<lb::event> events{ev(1, lb::event_type::user_message, "a"), ev(2, lb::event_type::agent_message, "b"),
                                  ev(3, lb::event_type::user_message, "c")};
    BOOST_TEST(lb::holds_plan_events(events, lb::compaction_plan{1, 3}));
    BOOST_TEST(lb::holds_plan_events(events, lb::compaction_plan{2, 2}));
    BOOST_TEST(!lb::holds_plan_events(events, lb::compaction_plan{0, max}));
    BOOST_TEST(!lb::holds_plan_events(events, lb::compaction_plan{min, max}));
    BOOST_TEST(!lb::holds_plan_events(events, lb::compaction_plan{1, max}));
    BOOST_TEST(!lb::holds_plan_events(events, lb::compaction_plan{min, 3}));
    BOOST_TEST(!lb::holds_plan_events(events, lb::compaction_plan{2, 4}));
    BOOST_TEST(!lb::holds_plan_events(std::vector<lb::event>{}, lb::compaction_plan{1, 1}));
    // The range is refused where the plan is checked (prepare_compaction), not here.
    BOOST_CHECK_THROW(lb::prepare_compaction(events, lb::compaction_plan{0, max}), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(forced_plan_keeps_the_current_turn_and_never_splits_a_call_from_its_result) {
    lb::session s;
    s.events.push_back(ev(1, lb::event_type::user_message, "old"));
    s.events.push_back(ev(2, lb::event_type::agent_message, "old answer"));
    s.events.push_back(ev(3, lb::event_type::user_message, "current"));
    auto p = lb::forced_plan(lb::no_compaction{}, lb::session_view{s});
    BOOST_REQUIRE(p);
    BOOST_TEST(p->first_sequence == 1);
    BOOST_TEST(p->last_sequence == 2);

    // Only the current turn: all of it but its newest event, not past an open call.
    lb::session t;
    t.events.push_back(ev(1, lb::event_type::user_message, "go"));
    lb::event call = ev(2, lb::event_type::agent_message, "");
    call.content.parts.push_back(lb::tool_call_part{"c1", "search", {}});
    t.events.push_back(call);
    lb::event resp = ev(3, lb::event_type::tool_response, "");
    resp.content.parts.clear();
    resp.content.parts.push_back(lb::tool_response_part{"c1", "search", json::value("found")});
    t.events.push_back(resp);
    t.events.push_back(ev(4, lb::event_type::agent_message, "thinking aloud"));
    auto q = lb::forced_plan(lb::no_compaction{}, lb::session_view{t});
    BOOST_REQUIRE(q);
    BOOST_TEST(q->last_sequence == 3); // the call and its response go together

    // A lone user message: nothing can go.
    lb::session u;
    u.events.push_back(ev(1, lb::event_type::user_message, "hello"));
    BOOST_TEST(!lb::forced_plan(lb::no_compaction{}, lb::session_view{u}));
    BOOST_TEST(!lb::forced_plan(lb::no_compaction{}, lb::session_view{lb::session{}}));

    // The strategy's own plan wins when it has one.
    auto w = lb::forced_plan(lb::sliding_window{1, 0}, lb::session_view{s});
    BOOST_REQUIRE(w);
}

// ---- run-time choice ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(any_strategy_plans_like_the_strategy_it_holds) {
    lb::session s;
    for (int i = 1; i <= 6; ++i)
        s.events.push_back(ev(i, i % 2 ? lb::event_type::user_message : lb::event_type::agent_message,
                              "m" + std::to_string(i), "inv" + std::to_string((i + 1) / 2)));
    const lb::sliding_window w{2, 0};
    lb::any_strategy a = w;
    BOOST_TEST(static_cast<bool>(a));
    BOOST_TEST((a.plan(lb::session_view{s}) == w.plan(lb::session_view{s})));
    BOOST_REQUIRE(a.target<lb::sliding_window>());
    BOOST_TEST(a.target<lb::sliding_window>()->compaction_interval == 2u);
    BOOST_TEST(!a.target<lb::char_budget>());
    lb::any_strategy copy = a; // shares the strategy
    BOOST_TEST((copy.plan(lb::session_view{s}) == w.plan(lb::session_view{s})));
    lb::any_strategy empty;
    BOOST_TEST(!empty);
    BOOST_TEST(!empty.plan(lb::session_view{s}));
}

BOOST_AUTO_TEST_CASE(any_summarizer_defaults_to_extractive_and_copies_what_it_holds) {
    asio::io_context io;
    std::vector<lb::event> events{ev(1, lb::event_type::user_message, "please check ORD-5151")};
    auto run = [&](lb::any_summarizer s) {
        lb::summary out;
        lb::summary_request r;
        r.events = events;
        std::exception_ptr failure;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                auto op = s.async_summarize(r);
                out = co_await std::move(op);
            },
            [&](std::exception_ptr e) { failure = e; });
        io.run();
        io.restart();
        if (failure) std::rethrow_exception(failure);
        return out;
    };
    lb::any_summarizer d;
    BOOST_TEST(run(d).produced_by == "extractive");
    BOOST_TEST(contains(run(d).text, "ORD-5151"));
    lb::any_summarizer f = failing_summarizer{};
    BOOST_CHECK_THROW(run(f), boost::system::system_error);
    lb::any_summarizer moved = std::move(f);
    BOOST_CHECK_THROW(run(moved), boost::system::system_error);
    BOOST_TEST(run(f).produced_by == "extractive"); // moved from: extractive again
    BOOST_TEST(moved.target<failing_summarizer>() != nullptr);
}

// ---- after a turn ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(token_budget_compacts_after_the_turn_and_the_next_request_shows_the_summary, Env,
                              envs) {
    Env env;
    auto model = answering_model(env.io.get_executor(), 6, 300);
    auto agent = make_agent(model);
    // window 1000 - reserve 200: the third reply reports 900 + 5 tokens, the second 605.
    lb::runner r{agent, env.store, lb::any_strategy{lb::token_budget{.context_window = 1000, .reserve_tokens = 200, .keep_recent_tokens = 5}}};
    for (int i = 1; i <= 2; ++i) {
        auto t = run_turn(env.io, r.run(opts(), "question " + std::to_string(i) + " about /srv/data/file" +
                                                   std::to_string(i) + ".csv"));
        BOOST_TEST(t.what() == "");
        BOOST_TEST(t.compactions().empty());
    }
    auto t3 = run_turn(env.io, r.run(opts(), "question 3"));
    BOOST_TEST(t3.what() == "");
    BOOST_REQUIRE_EQUAL(t3.compactions().size(), 1u);
    const lb::event& c = *t3.compactions().front();
    BOOST_TEST(c.sequence > 0); // stored
    BOOST_TEST(c.is_compaction());
    BOOST_TEST(c.actions.compaction->first_sequence == 1);
    BOOST_TEST(contains(c.actions.compaction->summary, "/srv/data/file1.csv")); // identifiers kept
    BOOST_TEST(c.metadata.at("produced_by").as_string() == "extractive");
    BOOST_TEST(&t3.events.back() == &*std::find_if(t3.events.begin(), t3.events.end(),
                                                    [](const lb::event& e) { return e.is_compaction(); }));

    auto t4 = run_turn(env.io, r.run(opts(), "question 4"));
    BOOST_TEST(t4.what() == "");
    const lb::llm_request req = model.request_at(3);
    const std::string text = request_text(req);
    BOOST_TEST(contains(text, c.actions.compaction->summary.substr(0, 40)));
    // The summarised user messages are not sent raw any more.
    std::size_t raw_question_1 = 0;
    for (const auto& m : req.messages)
        for (const auto& p : m.parts)
            if (auto tp = std::get_if<lb::text_part>(&p); tp && tp->text.starts_with("question 1")) ++raw_question_1;
    BOOST_TEST(raw_question_1 == 0u);

    lb::session s = load(env.io, env.store);
    check_transcript(s, 4);
}

BOOST_AUTO_TEST_CASE(a_compactor_summarises_with_its_model_and_rolls_the_previous_summary) {
    memory_env env;
    auto model = answering_model(env.io.get_executor(), 8, 300);
    auto agent = make_agent(model);
    lb::scripted_model summarizer_model{env.io.get_executor(),
                                        {scripted_reply::computed([](const lb::llm_request& r) {
                                             // echoes the transcript: passes the quality check
                                             return scripted_reply::text("## Goal\nSUMMARY ONE\n" + request_text(r));
                                         }),
                                         scripted_reply::computed([](const lb::llm_request& r) {
                                             const bool update = contains(request_text(r), "SUMMARY ONE");
                                             return scripted_reply::text(
                                                 (update ? "## Goal\nSUMMARY TWO (updated)\n" : "## Goal\nNOT UPDATED\n") +
                                                 request_text(r));
                                         })}};
    lb::any_summarizer ms{lb::model_summarizer<lb::scripted_model>{summarizer_model}};
    // Turns 3 and 4 report more than 800 tokens: two compactions, the second rolling the first.
    lb::token_budget budget{.context_window = 1000, .reserve_tokens = 200, .keep_recent_tokens = 5};
    lb::runner r{agent, env.store, dyn_compactor{budget, ms}};
    std::vector<std::string> summaries;
    std::vector<std::int64_t> firsts;
    for (int i = 1; i <= 4; ++i) {
        auto t = run_turn(env.io, r.run(opts(), "question " + std::to_string(i)));
        BOOST_TEST(t.what() == "");
        for (const auto* c : t.compactions()) {
            summaries.push_back(c->actions.compaction->summary);
            firsts.push_back(c->actions.compaction->first_sequence);
        }
    }
    BOOST_REQUIRE_EQUAL(summaries.size(), 2u);
    BOOST_TEST(contains(summaries[0], "SUMMARY ONE"));
    BOOST_TEST(contains(summaries[1], "SUMMARY TWO (updated)"));
    BOOST_TEST(firsts == (std::vector<std::int64_t>{1, 1})); // the second subsumes the first
    BOOST_TEST(summarizer_model.requests().size() == 2u);
    lb::session s = load(env.io, env.store);
    check_transcript(s, 4);
}

BOOST_AUTO_TEST_CASE(sliding_window_reproduces_the_worked_example_through_the_runner) {
    // Interval 2, overlap 1: after invocation 2 a summary of invocations 1-2, after
    // invocation 4 one of invocations 2-4 (seed 004). The second plan starts before the
    // events the turn loaded (they start at the newest compaction's range): the runner reads
    // the overlap back from the store.
    memory_env env;
    auto model = answering_model(env.io.get_executor(), 4);
    auto agent = make_agent(model);
    lb::runner r{agent, env.store, lb::any_strategy{lb::sliding_window{2, 1}}};
    std::vector<std::string> invocations;
    std::vector<lb::event_compaction> ranges;
    for (int i = 1; i <= 4; ++i) {
        auto t = run_turn(env.io, r.run(opts(), "q" + std::to_string(i)));
        BOOST_TEST(t.what() == "");
        for (const auto* c : t.compactions()) ranges.push_back(*c->actions.compaction);
    }
    lb::session s = load(env.io, env.store);
    auto inv_of = [&](std::int64_t seq) { return s.events.at(static_cast<std::size_t>(seq - 1)).invocation_id; };
    for (const auto& e : s.events)
        if (e.type == lb::event_type::user_message) invocations.push_back(e.invocation_id);
    BOOST_REQUIRE_EQUAL(invocations.size(), 4u);
    BOOST_REQUIRE_EQUAL(ranges.size(), 2u);
    BOOST_TEST(inv_of(ranges[0].first_sequence) == invocations[0]);
    BOOST_TEST(inv_of(ranges[0].last_sequence) == invocations[1]);
    BOOST_TEST(inv_of(ranges[1].first_sequence) == invocations[1]);
    BOOST_TEST(inv_of(ranges[1].last_sequence) == invocations[3]);
    check_transcript(s, 4);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(every_strategy_works_with_every_store, Env, envs) {
    compaction_cases::every_strategy_on<Env>(Env::name);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(older_summaries_stay_in_the_models_context, Env, envs) {
    compaction_cases::older_summaries_stay_on<Env>(Env::name);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_reload_after_a_rolling_summary_reads_only_what_the_view_needs, Env, envs) {
    compaction_cases::reload_after_rolling_summary_on<Env>(Env::name);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(sliding_window_overlap_holds_with_a_fresh_runner_every_turn, Env, envs) {
    // The overlap invocations lie inside the newest summary's range: a runner that did not
    // make it (another process) loads that range too (plans_from_newest_range), and plans
    // the worked example's ranges all the same.
    Env env;
    const lb::any_strategy window{lb::sliding_window{2, 1}};
    BOOST_TEST(lb::plans_from_newest_range(window));
    BOOST_TEST(!lb::plans_from_newest_range(lb::any_strategy{lb::sliding_window{2, 0}}));
    BOOST_TEST(!lb::plans_from_newest_range(lb::token_budget{}));
    std::vector<lb::event_compaction> ranges;
    for (int i = 1; i <= 4; ++i) {
        auto model = answering_model(env.io.get_executor(), 1);
        auto agent = make_agent(model);
        lb::runner r{agent, env.store, window};
        auto t = run_turn(env.io, r.run(opts(), "q" + std::to_string(i)));
        BOOST_TEST(t.what() == "");
        for (const auto* c : t.compactions()) ranges.push_back(*c->actions.compaction);
    }
    lb::session s = load(env.io, env.store);
    std::vector<std::string> invocations;
    for (const auto& e : s.events)
        if (e.type == lb::event_type::user_message) invocations.push_back(e.invocation_id);
    auto inv_of = [&](std::int64_t seq) { return s.events.at(static_cast<std::size_t>(seq - 1)).invocation_id; };
    BOOST_REQUIRE_EQUAL(ranges.size(), 2u);
    BOOST_TEST(inv_of(ranges[0].first_sequence) == invocations[0]);
    BOOST_TEST(inv_of(ranges[1].first_sequence) == invocations[1]); // the overlap
    BOOST_TEST(inv_of(ranges[1].last_sequence) == invocations[3]);
    check_transcript(s, 4);
}

BOOST_AUTO_TEST_CASE(compactions_another_tool_stored_badly_hide_nothing_from_the_runner) {
    // Two turns, then lines another tool appended to the transcript: a summary with an empty
    // text over everything, and a reversed one. A fresh runner ignores both: its model
    // is shown every earlier message, and its strategy plans around them.
    jsonl_env env; // its directory; the stores below take turns on it (the other tool
                   // writes while none holds the session's lock)
    {
        lb::jsonl_store first(env.io.get_executor(), env.options_used);
        auto model = answering_model(env.io.get_executor(), 2);
        auto agent = make_agent(model);
        lb::runner r{agent, first};
        BOOST_TEST(run_turn(env.io, r.run(opts(), "first about ORD-1")).what() == "");
        BOOST_TEST(run_turn(env.io, r.run(opts(), "second")).what() == "");
        lb::session before = load(env.io, first);
        BOOST_REQUIRE_EQUAL(before.last_sequence, 4);
    }
    {
        auto line = [&](std::int64_t seq, lb::event_compaction c) {
            lb::event e = lb::event::make(lb::event_type::agent_message, "other-tool");
            e.sequence = seq;
            e.session_id = "s1";
            e.actions.compaction = std::move(c);
            std::string text = lb::serialize_event(e);
            lb::detail::jsonl::frame_line(text);
            return text;
        };
        const auto path = env.options_used.directory / "apps" / "app" / "users" / "u1" / "sessions" / "s1" /
                          "transcript.jsonl";
        BOOST_REQUIRE(std::filesystem::exists(path));
        std::ofstream f(path, std::ios::binary | std::ios::app);
        f << line(5, lb::event_compaction{1, 4, 0, 0, "", 4});
        f << line(6, lb::event_compaction{4, 2, 0, 0, "reversed", 3});
    }
    auto model = answering_model(env.io.get_executor(), 1);
    auto agent = make_agent(model);
    lb::jsonl_store second(env.io.get_executor(), env.options_used);
    // The runner says which events it ignores, and why.
    std::vector<std::string> ignored;
    lb::runner_options ro;
    ro.on_ignored_compaction = [&](const lb::session_key& k, const lb::ignored_compaction& ic) {
        ignored.push_back(k.session_id + " " + std::to_string(ic.source->sequence) + ": " + ic.reason);
    };
    lb::runner fresh{agent, second, ro, lb::any_strategy{lb::char_budget{.threshold_chars = 100000}}};
    auto t = run_turn(env.io, fresh.run(opts(), "third"));
    BOOST_TEST(t.what() == "");
    const std::vector<std::string> expected_ignored{
        "s1 5: actions.compaction.summary is empty",
        "s1 6: actions.compaction.first_sequence 4 is after last_sequence 2 (a reversed range)"};
    BOOST_TEST(ignored == expected_ignored, boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(model.requests().size(), 1u);
    const std::string sent = request_text(model.requests().front());
    BOOST_TEST(contains(sent, "first about ORD-1"));
    BOOST_TEST(contains(sent, "answer 2"));
    BOOST_TEST(!contains(sent, "[Summary of"));
    BOOST_TEST(t.compactions().empty());
    // And the store's context load reads them all: nothing is covered.
    lb::get_options go;
    go.context_only = true;
    std::optional<lb::session> after;
    lb::diagnostics d;
    boost::system::error_code ec = second.get(lb::session_key{"app", "u1", "s1"}, go, after, &d);
    BOOST_TEST(!ec, d.message());
    BOOST_REQUIRE(after.has_value());
    BOOST_TEST(after->last_sequence == 8);
    BOOST_TEST(after->events.size() == 8u);
}

// ---- context overflow ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(overflow_compacts_then_retries_once_and_succeeds, Env, envs) {
    Env env;
    lb::scripted_model model{env.io.get_executor(),
                             {scripted_reply::text("a1"), scripted_reply::text("a2"), scripted_reply::context_overflow(),
                              scripted_reply::text("a3 after compaction")}};
    auto agent = make_agent(model);
    // A budget that never triggers on its own: the overflow forces the plan.
    lb::runner r{agent, env.store, lb::any_strategy{lb::token_budget{.context_window = 1'000'000}}};
    BOOST_TEST(run_turn(env.io, r.run(opts(), "first about ORD-4242")).what() == "");
    BOOST_TEST(run_turn(env.io, r.run(opts(), "second")).what() == "");
    auto t = run_turn(env.io, r.run(opts(), "third"));
    BOOST_TEST(t.what() == "");
    BOOST_REQUIRE_EQUAL(t.compactions().size(), 1u);
    BOOST_REQUIRE(t.final_answer());
    BOOST_TEST(t.final_answer()->text() == "a3 after compaction");
    const auto& c = *t.compactions().front()->actions.compaction;
    BOOST_TEST(c.first_sequence == 1);
    BOOST_TEST(c.last_sequence == 4); // both earlier turns; the current one stays raw
    auto reqs = model.requests();
    BOOST_REQUIRE_EQUAL(reqs.size(), 4u);
    BOOST_TEST(reqs[3].messages.size() < reqs[2].messages.size());
    BOOST_TEST(contains(request_text(reqs[3]), "ORD-4242")); // the summary keeps the identifier
    BOOST_TEST(contains(request_text(reqs[3]), "third"));
    lb::session s = load(env.io, env.store);
    check_transcript(s, 3);
}

BOOST_AUTO_TEST_CASE(a_second_overflow_is_reported_not_retried_forever) {
    memory_env env;
    lb::scripted_model model{env.io.get_executor(),
                             {scripted_reply::text("a1"), scripted_reply::context_overflow("too long 1"),
                              scripted_reply::context_overflow("too long 2"), scripted_reply::text("unused")}};
    auto agent = make_agent(model);
    lb::runner r{agent, env.store, lb::any_strategy{lb::char_budget{}}};
    BOOST_TEST(run_turn(env.io, r.run(opts(), "first")).what() == "");
    auto t = run_turn(env.io, r.run(opts(), "second"));
    BOOST_TEST(t.compactions().size() == 1u);
    BOOST_TEST(!t.final_answer());
    bool reported = false;
    for (const auto& e : t.events)
        reported = reported || (e.error() && contains(*e.error(), "too long 2"));
    BOOST_TEST(reported);
    BOOST_TEST(model.requests().size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_budget_that_cannot_hold_ends_the_turn_with_its_reason_after_storing_it) {
    memory_env env;
    lb::scripted_model model{env.io.get_executor(), {scripted_reply::text("a1")}};
    auto agent = make_agent(model);
    // The default reserve (16,384 tokens) with an 8,000-token window: every turn would compact.
    lb::runner r{agent, env.store, lb::any_strategy{lb::token_budget{.context_window = 8'000}}};
    auto t = run_turn(env.io, r.run(opts(), "first"));
    BOOST_TEST(t.code() == lb::errc::invalid_argument);
    BOOST_TEST(contains(t.what(), "token_budget: reserve_tokens (16384) leaves no room in context_window (8000)"), t.what());
    BOOST_TEST(t.compactions().empty());
    BOOST_REQUIRE(t.final_answer());
    lb::session s = load(env.io, env.store);
    BOOST_TEST(s.events.size() == 2u); // the turn's question and answer were stored first
}

BOOST_AUTO_TEST_CASE(overflow_with_nothing_to_compact_reports_the_overflow) {
    memory_env env;
    lb::scripted_model model{env.io.get_executor(), {scripted_reply::context_overflow("way too long")}};
    auto agent = make_agent(model);
    lb::runner r{agent, env.store, lb::any_strategy{lb::char_budget{}}};
    auto t = run_turn(env.io, r.run(opts(), "a single enormous message"));
    BOOST_TEST(t.compactions().empty());
    bool reported = false;
    for (const auto& e : t.events) reported = reported || (e.error() && contains(*e.error(), "way too long"));
    BOOST_TEST(reported);
    BOOST_TEST(model.requests().size() == 1u);
}

BOOST_AUTO_TEST_CASE(without_a_compaction_policy_an_overflow_is_just_an_error) {
    memory_env env;
    lb::scripted_model model{env.io.get_executor(), {scripted_reply::text("a1"), scripted_reply::context_overflow()}};
    auto agent = make_agent(model);
    lb::runner r{agent, env.store};
    BOOST_TEST(run_turn(env.io, r.run(opts(), "first")).what() == "");
    auto t = run_turn(env.io, r.run(opts(), "second"));
    BOOST_TEST(t.compactions().empty());
    BOOST_TEST(model.requests().size() == 2u);
}

// ---- memory flush, races, failures -----------------------------------------------------------

BOOST_AUTO_TEST_CASE(the_memory_flush_runs_a_silent_turn_before_the_compaction) {
    memory_env env;
    lb::scripted_model model{env.io.get_executor(),
                             {scripted_reply::text("a1"), scripted_reply::text("a2"),
                              scripted_reply::computed([](const lb::llm_request& r) {
                                  return scripted_reply::text(contains(request_text(r), "about to be compacted")
                                                                  ? "NO_REPLY saved"
                                                                  : "unexpected");
                              })}};
    auto agent = make_agent(model);
    lb::compactor_options co;
    co.memory_flush = lb::memory_flush_options{};
    lb::runner r{agent, env.store, dyn_compactor{lb::sliding_window{2, 0}, lb::extractive_summarizer{}, co}};
    BOOST_TEST(run_turn(env.io, r.run(opts(), "q1")).what() == "");
    auto t = run_turn(env.io, r.run(opts(), "q2"));
    BOOST_TEST(t.what() == "");
    for (const auto& e : t.events) BOOST_TEST(!e.metadata.contains("memory_flush")); // silent
    BOOST_REQUIRE_EQUAL(t.compactions().size(), 1u);
    lb::session s = load(env.io, env.store);
    std::int64_t flush_answer = 0;
    for (const auto& e : s.events)
        if (e.metadata.contains("memory_flush") && e.text() == "NO_REPLY saved") flush_answer = e.sequence;
    BOOST_TEST(flush_answer > 0);
    BOOST_TEST(flush_answer < t.compactions().front()->sequence); // flushed first
    BOOST_TEST(model.requests().size() == 3u);
}

/// A summarizer that appends an event to the session through the store (another writer)
/// while it "computes" the summary.
struct racing_summarizer {
    lb::memory_store* store;
    std::shared_ptr<int> calls = std::make_shared<int>(0);
    asio::awaitable<lb::summary> async_summarize(lb::summary_request r) {
        ++*calls;
        auto get = store->async_get(lb::session_key{"app", "u1", "s1"}, lb::get_options{}, asio::use_awaitable);
        std::optional<lb::session> s = co_await std::move(get);
        lb::event other = lb::event::make(lb::event_type::agent_message, "other_writer", lb::content::from_text("raced"));
        auto append = store->async_append(*s, std::move(other), asio::use_awaitable);
        co_await std::move(append);
        co_return lb::summary{"summary of " + std::to_string(r.events.size()) + " events", {}, "racer", {}};
    }
};
static_assert(lb::summarizer<racing_summarizer>);

BOOST_AUTO_TEST_CASE(an_append_racing_with_the_compaction_is_kept_and_not_covered) {
    memory_env env;
    auto model = answering_model(env.io.get_executor(), 2);
    auto agent = make_agent(model);
    racing_summarizer rs{&env.store};
    lb::runner r{agent, env.store, dyn_compactor{lb::sliding_window{2, 0}, rs}};
    BOOST_TEST(run_turn(env.io, r.run(opts(), "q1")).what() == "");
    auto t = run_turn(env.io, r.run(opts(), "q2"));
    BOOST_TEST(t.what() == "");
    BOOST_REQUIRE_EQUAL(t.compactions().size(), 1u);
    BOOST_TEST(*rs.calls == 1);
    lb::session s = load(env.io, env.store);
    check_transcript(s, 2);
    BOOST_REQUIRE_GE(s.events.size(), 2u);
    const lb::event& raced = s.events[s.events.size() - 2];
    const lb::event& c = s.events.back();
    BOOST_TEST(raced.text() == "raced");
    BOOST_REQUIRE(c.is_compaction());
    BOOST_TEST(c.actions.compaction->last_sequence < raced.sequence); // covers only what it planned
}

BOOST_AUTO_TEST_CASE(a_failing_summarizer_ends_the_turn_with_an_error_after_storing_it) {
    memory_env env;
    auto model = answering_model(env.io.get_executor(), 2);
    auto agent = make_agent(model);
    lb::runner r{agent, env.store, dyn_compactor{lb::sliding_window{1, 0}, failing_summarizer{}}};
    auto t = run_turn(env.io, r.run(opts(), "q1"));
    BOOST_TEST(contains(t.what(), "compacting"));
    BOOST_TEST(contains(t.what(), "summary model unavailable"));
    BOOST_TEST(contains(t.what(), "the turn's events are stored"));
    BOOST_TEST(t.final_answer() != nullptr); // yielded before the compaction step
    lb::session s = load(env.io, env.store);
    BOOST_TEST(s.events.size() == 2u); // the user message and the answer
    // The next turn works and compacts again.
    lb::runner r2{agent, env.store, lb::any_strategy{lb::sliding_window{1, 0}}};
    auto t2 = run_turn(env.io, r2.run(opts(), "q2"));
    BOOST_TEST(t2.what() == "");
    BOOST_TEST(t2.compactions().size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
