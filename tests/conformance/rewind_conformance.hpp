// The rewind conformance suite: async_rewind_session against every store, with a runner
// on it. State (creation state included), artifacts, the view and the runner after a
// rewind; rewinding twice and past a compaction; a signed chain; refusals. docs/sessions.md,
// "Rewind".
//
// A backend test file defines a fixture type F with
//   using store_type = ...;
//   store_type open(asio::any_io_executor);   // a store on the fixture's data
// and instantiates the suite with LIBRETTO_REWIND_CONFORMANCE(F).
#ifndef LIBRETTO_TESTS_REWIND_CONFORMANCE_HPP
#define LIBRETTO_TESTS_REWIND_CONFORMANCE_HPP

#include <libretto/agent/llm_agent.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/rewind.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/sign/transcript.hpp>
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/store/memory_artifact_service.hpp>
#include <libretto/store/session_store.hpp>
#include <libretto/tool/artifact_tools.hpp>
#include <libretto/tool/function_tool.hpp>

#include "../sign_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rewind_conformance {

namespace asio = boost::asio;
namespace lb = libretto;
namespace json = boost::json;
using reply = lb::scripted_reply;
using agent_type = lb::llm_agent<lb::scripted_model>;

struct set_args {
    std::string key;
    json::value value;
};
BOOST_DESCRIBE_STRUCT(set_args, (), (key, value))

/// A tool that writes one state key (a null deletes it).
inline json::value set_state(set_args a, lb::tool_context& ctx) {
    ctx.state()[a.key] = a.value;
    return "ok";
}

template <class T>
T run(asio::io_context& io, asio::awaitable<T> coro) {
    std::optional<T> out;
    std::exception_ptr failure;
    asio::co_spawn(io, std::move(coro), [&](std::exception_ptr e, T r) {
        failure = e;
        if (!e) out.emplace(std::move(r));
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*out);
}

inline lb::tool_set tools_for_tests() {
    auto t = lb::artifact_tools();
    t.add(lb::function_tool("set_state", "Sets a state key", set_state));
    return t;
}

/// A signed runner over F's store, with artifacts, a scripted model and the tools above.
template <class F>
struct world {
    using runner_type = lb::runner<agent_type, typename F::store_type, lb::no_compaction, sign_test::checksum_signer>;
    F fixture;
    asio::io_context io;
    typename F::store_type store;
    lb::memory_artifact_service files; // copies share: the test reads what the tools wrote
    lb::any_artifact_service artifacts;
    lb::scripted_model model;
    agent_type agent;
    runner_type runner;

    static lb::runner_options options(lb::any_artifact_service& a) {
        lb::runner_options o;
        o.artifacts = &a;
        return o;
    }

    explicit world(std::vector<reply> replies)
        : store(fixture.open(io.get_executor())), artifacts(io.get_executor(), files),
          model(io.get_executor(), std::move(replies)),
          agent(lb::llm_agent_options<lb::scripted_model>{
              .name = "assistant", .model = model, .tools = tools_for_tests(), .retry = {.max_attempts = 1}}),
          runner(agent, store, options(artifacts), lb::no_compaction{}, sign_test::checksum_signer{}) {}

    void create(lb::json::object state) {
        run(io, [](auto& st, lb::json::object s) -> asio::awaitable<int> {
            auto op = st.async_create(lb::create_options("app", "u1", "s1", std::move(s)), asio::use_awaitable);
            co_await std::move(op);
            co_return 0;
        }(store, std::move(state)));
    }
    /// One turn; returns its invocation id.
    std::string turn(std::string text, std::string invocation_id = {}) {
        lb::run_options o("app", "u1", "s1");
        o.invocation_id = std::move(invocation_id);
        auto r = lb::run_to_end(runner, std::move(o), std::move(text));
        BOOST_TEST_REQUIRE(r.ok(), r.message());
        return r.events.front().invocation_id;
    }
    lb::session get() {
        auto s = run(io, [](auto& st) -> asio::awaitable<std::optional<lb::session>> {
            lb::get_options go;
            go.with_initial_state = true;
            auto op = st.async_get(lb::session_key("app", "u1", "s1"), go, asio::use_awaitable);
            co_return co_await std::move(op);
        }(store));
        BOOST_TEST_REQUIRE(s.has_value());
        return std::move(*s);
    }
    lb::rewind_result rewind(std::string invocation, bool restore_artifacts = false, bool sign = true) {
        lb::rewind_options o;
        if (sign) o.signer = sign_test::checksum_signer{};
        if (restore_artifacts) o.artifacts = &artifacts;
        return run(io, [](auto& st, std::string id, lb::rewind_options o) -> asio::awaitable<lb::rewind_result> {
            auto op = lb::async_rewind_session(st, lb::session_key("app", "u1", "s1"), std::move(id), std::move(o),
                                               asio::use_awaitable);
            co_return co_await std::move(op);
        }(store, std::move(invocation), std::move(o)));
    }
    /// A refused rewind: its error and what diagnostics said.
    std::pair<boost::system::error_code, std::string> refused(lb::session_key key, std::string invocation) {
        lb::diagnostics d;
        auto ec = run(io, [](auto& st, lb::session_key k, std::string id, lb::diagnostics& d) -> asio::awaitable<boost::system::error_code> {
            auto op = lb::async_rewind_session(st, std::move(k), std::move(id), lb::rewind_options{}, d,
                                               asio::as_tuple(asio::use_awaitable));
            auto [ec, r] = co_await std::move(op);
            co_return ec;
        }(store, std::move(key), std::move(invocation), d));
        return {ec, d.message()};
    }
    /// The texts of the model's newest request, in order.
    std::vector<std::string> last_request_texts() {
        std::vector<std::string> out;
        const auto requests = model.requests();
        for (const auto& m : requests.back().messages)
            for (const auto& p : m.parts)
                if (const auto* t = std::get_if<lb::text_part>(&p)) out.push_back(t->text);
        return out;
    }
    /// The texts a context view of the stored session shows.
    std::vector<std::string> view_texts() {
        lb::session s = get();
        std::vector<std::string> out;
        for (const lb::event& e : lb::make_context_view(s.events))
            for (const auto& p : e.content.parts)
                if (const auto* t = std::get_if<lb::text_part>(&p)) out.push_back(t->text);
        return out;
    }
};

inline bool contains(const std::vector<std::string>& v, std::string_view s) {
    for (const auto& x : v)
        if (x.find(s) != std::string::npos) return true;
    return false;
}

inline reply set(std::string key, json::value v) { return reply::tool_call("set_state", {{"key", key}, {"value", v}}); }

/// Turn A sets count=1 and topic; turn B changes the creation-state key mood, count, and
/// adds extra; turn C only talks. A rewind to before B puts back mood (from the creation
/// state), count, and removes extra; app: keys are left alone; nothing is deleted.
template <class F>
void case_state_comes_back_and_the_undone_turns_leave_the_view() {
    world<F> w({set("count", 1), set("topic", "cats"), reply::text("alpha answer"),
                set("mood", "angry"), set("count", 2), set("extra", true), set("app:seen", 7), reply::text("beta answer"),
                reply::text("gamma answer"), reply::text("delta answer")});
    w.create({{"mood", "calm"}, {"count", 0}, {"app:plan", "free"}});
    const std::string a = w.turn("alpha question");
    const std::string b = w.turn("beta question");
    w.turn("gamma question");
    const std::size_t before = w.get().events.size();

    auto r = w.rewind(b);
    const json::object expected{{"mood", "calm"}, {"count", 1}, {"extra", nullptr}};
    BOOST_TEST(r.rewind.actions.state_delta == expected, json::serialize(r.rewind.actions.state_delta));
    BOOST_TEST(r.rewind.actions.rewind_before_invocation_id.value_or("") == b);
    BOOST_TEST(r.rewind.invocation_id != b);
    BOOST_TEST(r.rewind.invocation_id != a);
    BOOST_TEST(r.events_undone > 0u);
    lb::session s = w.get();
    BOOST_TEST(s.events.size() == before + 1); // appended, nothing deleted
    BOOST_TEST(s.events.back().sequence == r.rewind.sequence);
    BOOST_TEST(s.events.back().actions.rewind_before_invocation_id.value_or("") == b); // read back from the store
    BOOST_TEST(s.state.at("mood") == "calm");
    BOOST_TEST(s.state.at("count") == 1);
    BOOST_TEST(s.state.at("topic") == "cats");
    BOOST_TEST(!s.state.contains("extra"));
    BOOST_TEST(s.state.at("app:seen") == 7); // shared with other sessions: left alone
    BOOST_TEST(s.state.at("app:plan") == "free");

    auto shown = w.view_texts();
    BOOST_TEST(contains(shown, "alpha answer"));
    BOOST_TEST(!contains(shown, "beta question"));
    BOOST_TEST(!contains(shown, "gamma answer"));
    // The runner's next turn (its cached session refreshed with the rewind) shows the same.
    w.turn("delta question");
    auto sent = w.last_request_texts();
    BOOST_TEST(contains(sent, "alpha question"));
    BOOST_TEST(contains(sent, "alpha answer"));
    BOOST_TEST(contains(sent, "delta question"));
    BOOST_TEST(!contains(sent, "beta"));
    BOOST_TEST(!contains(sent, "gamma"));
}

/// A rewind after a rewind: to a later invocation (keeps the first), to before the one
/// rewound (undoes the first with the rest, back to the creation state). An undone
/// invocation, a rewind's own, an unknown one, an unknown session and a bad id are refused
/// and write nothing.
template <class F>
void case_rewinding_twice_and_refusals() {
    world<F> w({set("count", 1), reply::text("one"), set("count", 2), reply::text("two"), set("count", 3),
                reply::text("three"), reply::text("four")});
    w.create({{"count", 0}, {"keep", "me"}});
    const std::string a = w.turn("q1");
    const std::string b = w.turn("q2");
    auto r1 = w.rewind(b);
    BOOST_TEST(w.get().state.at("count") == 1);
    const std::string c = w.turn("q3");
    BOOST_TEST(w.get().state.at("count") == 3);
    auto r2 = w.rewind(c); // keeps r1
    BOOST_TEST(r2.rewind.actions.state_delta == (json::object{{"count", 1}}));
    BOOST_TEST(w.get().state.at("count") == 1);
    BOOST_TEST(w.view_texts() == (std::vector<std::string>{"q1", "one"}));

    const std::size_t stored = w.get().events.size();
    auto [e1, m1] = w.refused({"app", "u1", "s1"}, b);
    BOOST_TEST((e1 == lb::errc::invalid_argument), e1.message());
    BOOST_TEST(m1.find("undone already") != std::string::npos, m1);
    auto [e2, m2] = w.refused({"app", "u1", "s1"}, r2.rewind.invocation_id);
    BOOST_TEST((e2 == lb::errc::invalid_argument), e2.message());
    BOOST_TEST(m2.find("is a rewind") != std::string::npos, m2);
    auto [e3, m3] = w.refused({"app", "u1", "s1"}, "no-such-invocation");
    BOOST_TEST((e3 == lb::errc::not_found), e3.message());
    BOOST_TEST(m3.find("no-such-invocation") != std::string::npos, m3);
    auto [e4, m4] = w.refused({"app", "u1", "nobody"}, a);
    BOOST_TEST((e4 == lb::errc::not_found), e4.message());
    auto [e5, m5] = w.refused({"app", "u1", "../s1"}, a);
    BOOST_TEST((e5 == lb::errc::invalid_argument), e5.message());
    auto [e6, m6] = w.refused({"app", "u1", "s1"}, "");
    BOOST_TEST((e6 == lb::errc::invalid_argument), e6.message());
    BOOST_TEST(w.get().events.size() == stored);

    // Before the first invocation: everything undone, r1 and r2 with it; the creation state.
    auto r3 = w.rewind(a);
    lb::session s = w.get();
    BOOST_TEST(s.state == (json::object{{"count", 0}, {"keep", "me"}}), json::serialize(s.state));
    BOOST_TEST(w.view_texts().empty());
    BOOST_TEST(r3.first_undone == 1);
    w.turn("q4");
    BOOST_TEST(w.last_request_texts() == (std::vector<std::string>{"q4"}));
    (void)r1;
}

/// A summary written after the rewound invocation is undone with it: the events it had
/// hidden show again (the runner reads the session whole for that). A summary written
/// before it stays.
template <class F>
void case_a_rewind_past_a_compaction() {
    world<F> w({reply::text("one"), reply::text("two"), reply::text("three"), reply::text("four"), reply::text("five")});
    w.create({});
    w.turn("q1");
    // (the summary below is appended unsigned, as another tool would: this case is not about the chain)
    const std::string b = w.turn("q2");
    // A summary of turns one and two, as a compaction strategy would append it.
    {
        lb::session s = w.get();
        lb::event c = lb::event::make(lb::event_type::agent_message, "compaction", lb::content::from_text("summary"));
        c.actions.compaction = lb::event_compaction{1, s.last_sequence, 0, 0, "SUMMARY-OF-ONE-AND-TWO", 4};
        c.content.role = "model";
        run(w.io, [](auto& st, lb::session& s, lb::event e) -> asio::awaitable<std::int64_t> {
            auto op = st.async_append(s, std::move(e), asio::use_awaitable);
            co_return co_await std::move(op);
        }(w.store, s, std::move(c)));
    }
    w.turn("q3");
    BOOST_TEST(contains(w.last_request_texts(), "SUMMARY-OF-ONE-AND-TWO"));
    BOOST_TEST(!contains(w.last_request_texts(), "q1"));

    w.rewind(b); // undoes turn two, the summary and turn three
    w.turn("q4");
    auto sent = w.last_request_texts();
    BOOST_TEST(!contains(sent, "SUMMARY-OF-ONE-AND-TWO"));
    BOOST_TEST(contains(sent, "q1"));
    BOOST_TEST(contains(sent, "one"));
    BOOST_TEST(!contains(sent, "q2"));
    BOOST_TEST(!contains(sent, "q3"));
    BOOST_TEST(contains(sent, "q4"));
    // A second runner on the store (nothing cached) loads what it needs and shows the same.
    typename world<F>::runner_type fresh(w.agent, w.store, world<F>::options(w.artifacts), lb::no_compaction{},
                                         sign_test::checksum_signer{});
    auto r = lb::run_to_end(fresh, lb::run_options("app", "u1", "s1"), "q5");
    BOOST_TEST_REQUIRE(r.ok(), r.message());
    auto again = w.last_request_texts();
    BOOST_TEST(!contains(again, "SUMMARY-OF-ONE-AND-TWO"));
    BOOST_TEST(contains(again, "q1"));
    BOOST_TEST(!contains(again, "q3"));
    BOOST_TEST(contains(again, "q5"));
}

/// A caller's invocation id used again after a rewind of it: a second rewind undoes the new
/// run only, not the turns between (it used to start from the id's first event).
template <class F>
void case_an_invocation_id_used_again_after_its_rewind() {
    world<F> w({set("count", 1), reply::text("one"), reply::text("zed"), set("count", 2), reply::text("two"),
                reply::text("three")});
    w.create({{"count", 0}});
    w.turn("q1", "job-7");
    w.rewind("job-7");
    w.turn("qz");
    w.turn("q2", "job-7");
    BOOST_TEST(w.get().state.at("count") == 2);
    auto r = w.rewind("job-7");
    lb::session s = w.get();
    BOOST_TEST(r.events_undone == 4u); // the user message, the call, its result, the answer
    BOOST_TEST(r.first_undone == s.events[s.events.size() - 5].sequence);
    BOOST_TEST(w.view_texts() == (std::vector<std::string>{"qz", "zed"}));
    BOOST_TEST(s.state.at("count") == 0);
    w.turn("q3", "");
    BOOST_TEST(contains(w.last_request_texts(), "qz"));
    BOOST_TEST(!contains(w.last_request_texts(), "q2"));
}

/// Rewinds append signed events that continue the chain: the transcript verifies.
template <class F>
void case_the_signed_chain_stays_valid() {
    world<F> w({reply::text("one"), reply::text("two"), reply::text("three")});
    w.create({});
    w.turn("q1");
    const std::string b = w.turn("q2");
    w.rewind(b);
    w.turn("q3");
    lb::session s = w.get();
    sign_test::checksum_verifier v;
    auto report = lb::verify_transcript(s, v);
    BOOST_TEST(report.ok, report.message);
    BOOST_TEST(report.checked == s.events.size());
    BOOST_TEST(lb::is_rewind(s.events[s.events.size() - 3]));
}

/// Artifacts saved since the invocation come back to their earlier version as new
/// versions; one that did not exist reads as missing; "user:" artifacts are left alone.
template <class F>
void case_artifacts_come_back() {
    auto save = [](std::string name, std::string content) {
        return reply::tool_call("save_artifact", {{"name", name}, {"content", content}, {"mime_type", "text/plain"}});
    };
    world<F> w({save("report.txt", "first draft"), reply::text("saved"), save("report.txt", "second draft"),
                save("notes.txt", "new notes"), save("user:profile.txt", "likes tea"), reply::text("saved more"),
                reply::tool_call("load_artifact", {{"name", "notes.txt"}}), reply::tool_call("load_artifact", {{"name", "report.txt"}}),
                reply::text("read")});
    w.create({});
    w.turn("write");
    const std::string b = w.turn("write more");
    auto r = w.rewind(b, true);
    const json::object delta{{"report.txt", 2}, {"notes.txt", 1}};
    BOOST_TEST(r.rewind.actions.artifact_delta == delta, json::serialize(r.rewind.actions.artifact_delta));
    std::optional<lb::artifact> report, notes, profile;
    BOOST_TEST_REQUIRE(!w.artifacts.load({"app", "u1", "s1", "report.txt"}, std::nullopt, report));
    BOOST_TEST_REQUIRE(report.has_value());
    BOOST_TEST(report->info.version == 2);
    BOOST_TEST(report->data == "first draft");
    BOOST_TEST(report->info.mime_type == "text/plain");
    BOOST_TEST_REQUIRE(!w.artifacts.load({"app", "u1", "s1", "notes.txt"}, std::nullopt, notes));
    BOOST_TEST_REQUIRE(notes.has_value());
    BOOST_TEST(lb::is_absent_artifact(notes->info));
    BOOST_TEST(notes->data.empty());
    std::optional<lb::artifact> old_notes;
    BOOST_TEST_REQUIRE(!w.artifacts.load({"app", "u1", "s1", "notes.txt"}, 0, old_notes)); // nothing deleted
    BOOST_TEST_REQUIRE(old_notes.has_value());
    BOOST_TEST(old_notes->data == "new notes");
    BOOST_TEST_REQUIRE(!w.artifacts.load({"app", "u1", "s1", "user:profile.txt"}, std::nullopt, profile));
    BOOST_TEST_REQUIRE(profile.has_value());
    BOOST_TEST(profile->info.version == 0);
    // Through the tools: notes.txt is missing, report.txt is the first draft.
    w.turn("read");
    lb::session s = w.get();
    std::vector<lb::event> ev(s.events.begin(), s.events.end());
    const auto& notes_reply = ev[ev.size() - 4].tool_responses().front();
    BOOST_TEST(notes_reply.error.value_or("").find("no artifact named 'notes.txt'") != std::string::npos,
               notes_reply.error.value_or("(no error)"));
    const auto& report_reply = ev[ev.size() - 2].tool_responses().front();
    BOOST_TEST(report_reply.result.at("version") == 2);
}

} // namespace rewind_conformance

#define LIBRETTO_REWIND_CONFORMANCE(F) \
    BOOST_AUTO_TEST_SUITE(rewind_conformance) \
    BOOST_AUTO_TEST_CASE(state_comes_back_and_the_undone_turns_leave_the_view) { ::rewind_conformance::case_state_comes_back_and_the_undone_turns_leave_the_view<F>(); } \
    BOOST_AUTO_TEST_CASE(rewinding_twice_and_refusals) { ::rewind_conformance::case_rewinding_twice_and_refusals<F>(); } \
    BOOST_AUTO_TEST_CASE(a_rewind_past_a_compaction) { ::rewind_conformance::case_a_rewind_past_a_compaction<F>(); } \
    BOOST_AUTO_TEST_CASE(the_signed_chain_stays_valid) { ::rewind_conformance::case_the_signed_chain_stays_valid<F>(); } \
    BOOST_AUTO_TEST_CASE(artifacts_come_back) { ::rewind_conformance::case_artifacts_come_back<F>(); } \
    BOOST_AUTO_TEST_CASE(an_invocation_id_used_again_after_its_rewind) { ::rewind_conformance::case_an_invocation_id_used_again_after_its_rewind<F>(); } \
    BOOST_AUTO_TEST_SUITE_END()

#endif
