// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// What the fault tests share (fault_jsonl_test, fault_sqlite_test, fault_postgres_test): a
// signed, compacting runner over a scripted model with a tool, the turns they run, and the
// checks made after every fault: the session loads from a fresh store, its signed chain
// verifies, every acknowledged event is there as acknowledged, nothing is there twice.
//
// "Acknowledged" is what a caller was told is stored: the non-partial events a turn's stream
// yielded (the runner yields an event only once the store accepted it; the user message is
// yielded too, run_options::yield_user_message).
#ifndef LIBRETTO_TESTS_FAULT_TEST_SUPPORT_HPP
#define LIBRETTO_TESTS_FAULT_TEST_SUPPORT_HPP

#include <libretto/agent/llm_agent.hpp>
#include <libretto/compaction/char_budget.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/sign/transcript.hpp>
#include <libretto/tool/function_tool.hpp>

#include "runner_test_support.hpp"
#include "sign_test_support.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/describe/class.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <unistd.h>

namespace fault_support {

namespace asio = boost::asio;
namespace lb = libretto;
namespace json = boost::json;

using runner_support::turn_outcome;

struct add_args {
    int a;
    int b;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))
inline int add(add_args x) { return x.a + x.b; }

inline bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

/// The model's reply to `r`: a tool result is answered in text; a question holding "[tool]"
/// gets a call of `add`; anything else a text answer.
inline lb::scripted_reply reply_to(const lb::llm_request& r) {
    const auto& last = r.messages.back();
    for (const auto& p : last.parts)
        if (std::holds_alternative<lb::tool_response_part>(p))
            return lb::scripted_reply::text("The tool says 5. " + std::string(120, 'r')).with_usage(40, 20);
    if (contains(last.text(), "[tool]")) return lb::scripted_reply::tool_call("add", {{"a", 2}, {"b", 3}}).with_usage(30, 5);
    return lb::scripted_reply::text("Plain answer. " + std::string(120, 'p')).with_usage(30, 10);
}

/// Called with each request before the model answers it: the test's hand in the middle of a
/// turn (the model "thinking"), e.g. to stop a server or lock a database.
using model_hook = std::function<void(const lb::llm_request&)>;

/// A scripted model answering `n` requests with reply_to (more than any test's turns need).
inline lb::scripted_model make_model(asio::any_io_executor ex, std::size_t n = 64, model_hook hook = {}) {
    lb::scripted_model m{std::move(ex)};
    for (std::size_t i = 0; i < n; ++i)
        m.then(lb::scripted_reply::computed([hook](const lb::llm_request& r) {
            if (hook) hook(r);
            return reply_to(r);
        }));
    return m;
}

using fault_agent = lb::llm_agent<lb::scripted_model>;

inline fault_agent make_agent(lb::scripted_model m) {
    lb::llm_agent_options<lb::scripted_model> o{.name = "assistant", .model = std::move(m)};
    o.tools = lb::tools(lb::function_tool("add", "Adds two integers", add));
    return fault_agent(std::move(o));
}

/// A compaction a third turn of turn_text's triggers (the first two stay under it).
inline lb::char_budget compaction() { return lb::char_budget{.threshold_chars = 1100, .retention_chars = 300}; }

/// The runner of the fault tests: signed (sign_test's stand-in signer), compacting.
template <class Store>
using fault_runner = lb::runner<fault_agent, Store, lb::char_budget, sign_test::checksum_signer>;

inline const std::string signer_did = sign_test::checksum_signer{}.id;

/// Turn `n` of session app/u1/s1: the user message yielded too, and state for every scope
/// (the app: and user: keys make the store write its shared state files in the turn).
inline lb::run_options turn_options(int n, std::string session = "s1") {
    lb::run_options o = runner_support::run_opts(std::move(session));
    o.yield_user_message = true;
    o.state_delta["turn"] = n;
    o.state_delta["app:turn"] = n;
    o.state_delta["user:turn"] = n;
    return o;
}

/// Turn `n`'s question: it asks for the tool, and is long enough to compact at turn 3.
inline std::string turn_text(int n) { return "question " + std::to_string(n) + " [tool] " + std::string(200, 'q'); }

/// The turn number a question of turn_text's holds (0 if it is not one).
inline int turn_of(const lb::event& e) {
    if (e.type != lb::event_type::user_message) return 0;
    const std::string t = e.text();
    if (t.rfind("question ", 0) != 0) return 0;
    return std::atoi(t.c_str() + 9);
}

/// One acknowledged event.
struct acked_event {
    std::string id;
    std::int64_t sequence = 0;
    std::string signature;
};

inline void add_acked(std::vector<acked_event>& out, const turn_outcome& t) {
    for (const auto& e : t.events)
        if (!e.partial) out.push_back({e.id, e.sequence, e.signature.value_or("")});
}

/// The first of `v` ("" if none), for messages (which Boost.Test builds even when a check passes).
inline std::string first_of(const std::vector<std::string>& v) { return v.empty() ? std::string() : v.front(); }

/// "a: b" lines of what a turn failed with, for messages.
inline std::string failure_of(const turn_outcome& t) {
    return t.error ? t.code().message() + ": " + t.what() : std::string("(no failure)");
}

/// Checks a session a fresh store loaded whole: the signed chain verifies (every event
/// signed by the runner's signer, sequences 1..n in order, each linked to the one before),
/// no event id and no question twice, and every acknowledged event is there with the
/// sequence and signature it was acknowledged with. Returns the ids stored that were not
/// acknowledged.
inline std::vector<std::string> check_loaded(const lb::session& s, const std::vector<acked_event>& acked) {
    sign_test::checksum_verifier v;
    lb::transcript_options to;
    to.trusted_dids = {signer_did};
    const lb::transcript_report rep = lb::verify_transcript(s, v, to);
    BOOST_TEST(rep.ok, "the signed chain does not verify: " << rep.message << " (event " << rep.index << ")");
    BOOST_TEST(rep.checked == s.events.size());
    BOOST_TEST(s.last_sequence == static_cast<std::int64_t>(s.events.size()));
    std::unordered_map<std::string, const lb::event*> by_id;
    std::set<int> questions;
    for (std::size_t i = 0; i < s.events.size(); ++i) {
        const lb::event& e = s.events[i];
        BOOST_TEST(e.sequence == static_cast<std::int64_t>(i + 1));
        BOOST_TEST(by_id.emplace(e.id, &e).second, "event " << e.id << " is stored twice");
        if (const int q = turn_of(e)) BOOST_TEST(questions.insert(q).second, "question " << q << " is stored twice");
    }
    std::set<std::string> acked_ids;
    for (const auto& a : acked) {
        acked_ids.insert(a.id);
        auto it = by_id.find(a.id);
        BOOST_TEST((it != by_id.end()), "acknowledged event " << a.id << " (sequence " << a.sequence << ") is missing");
        if (it == by_id.end()) continue;
        BOOST_TEST(it->second->sequence == a.sequence);
        BOOST_TEST(it->second->signature.value_or("") == a.signature);
    }
    std::vector<std::string> extra;
    for (const auto& [id, e] : by_id)
        if (!acked_ids.count(id)) extra.push_back(id + " (sequence " + std::to_string(e->sequence) + ")");
    return extra;
}

/// The newest question stored in `s` (0 if none).
inline int newest_question(const lb::session& s) {
    int n = 0;
    for (const auto& e : s.events) n = std::max(n, turn_of(e));
    return n;
}

/// The value of state key `k` as an int (-1 if absent or not a number).
inline std::int64_t state_int(const lb::session& s, const char* k) {
    auto it = s.state.find(k);
    if (it == s.state.end() || !it->value().is_int64()) return -1;
    return it->value().get_int64();
}

// ---- the kill tests' child: acknowledged events through a pipe ---------------------------

/// Drains a turn, writing "<id> <sequence> <signature>\n" to `fd` for each non-partial
/// event as the stream yields it, "ok\n" when the turn ends and "error <message>\n" when it
/// fails.
inline asio::awaitable<void> drain_reporting(lb::event_stream s, int fd) {
    auto say = [fd](const std::string& line) {
        std::size_t done = 0;
        while (done < line.size()) {
            const ssize_t r = ::write(fd, line.data() + done, line.size() - done);
            if (r <= 0) ::_exit(5);
            done += static_cast<std::size_t>(r);
        }
    };
    try {
        for (;;) {
            auto next = s.next();
            std::optional<lb::event> e = co_await std::move(next);
            if (!e) break;
            if (e->partial) continue;
            say(e->id + " " + std::to_string(e->sequence) + " " + e->signature.value_or("-") + "\n");
        }
        say("ok\n");
    } catch (const std::exception& x) {
        std::string m = x.what();
        for (char& c : m)
            if (c == '\n') c = ' ';
        say("error " + m + "\n");
    }
}

/// A turn run in a child, writing to `fd` (see drain_reporting).
inline void run_reporting(asio::io_context& io, lb::event_stream s, int fd) {
    asio::co_spawn(io, drain_reporting(std::move(s), fd), asio::detached);
    io.run();
    io.restart();
}

/// What a child reported: its acknowledged events, and how many turns ended and failed.
struct child_report {
    std::vector<acked_event> acked;
    int turns_ok = 0;
    std::vector<std::string> errors;
};

inline child_report parse_report(const std::string& text) {
    child_report r;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) break; // a line cut by the kill: nothing acknowledged
        const std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (line == "ok") {
            ++r.turns_ok;
        } else if (line.rfind("error ", 0) == 0) {
            r.errors.push_back(line.substr(6));
        } else {
            acked_event a;
            const auto s1 = line.find(' '), s2 = line.rfind(' ');
            if (s1 == std::string::npos || s2 == s1) continue;
            a.id = line.substr(0, s1);
            a.sequence = std::stoll(line.substr(s1 + 1, s2 - s1 - 1));
            a.signature = line.substr(s2 + 1);
            if (a.signature == "-") a.signature.clear();
            r.acked.push_back(std::move(a));
        }
    }
    return r;
}

/// Reads `fd` to its end.
inline std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

/// A fresh empty directory under the test's working directory.
inline std::filesystem::path scratch(const std::string& name) {
    auto p = std::filesystem::current_path() / name;
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p;
}

} // namespace fault_support

#endif
