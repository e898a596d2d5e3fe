// The conformance suite against jsonl_store. Every test case gets a fresh directory under
// the working directory (removed afterwards); open() called twice gives two store
// instances on that directory, which share nothing but the files and their locks.
#include <libretto/store/jsonl_store.hpp>

#include "artifact_conformance.hpp"
#include "conversation_conformance.hpp"
#include "rewind_conformance.hpp"
#include "index_conformance.hpp"
#include "store_conformance.hpp"

#include <libretto/store/jsonl_session_index.hpp>
#include <libretto/store/file_artifact_service.hpp>

#include <fstream>
#include <sstream>

#include <atomic>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace {

static_assert(libretto::session_store<libretto::jsonl_store>);

struct jsonl_fixture {
    using store_type = libretto::jsonl_store;
    [[maybe_unused]] static constexpr bool persistent = true;

    std::filesystem::path dir;

    jsonl_fixture() {
        static std::atomic<int> counter{0};
        dir = std::filesystem::current_path() /
              ("jsonl-conformance-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(dir);
    }
    ~jsonl_fixture() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }

    libretto::jsonl_store open(boost::asio::any_io_executor ex) {
        libretto::jsonl_store_options o;
        o.directory = dir;
        o.durability = libretto::durability::per_turn;
        return libretto::jsonl_store(std::move(ex), o);
    }
};

struct jsonl_index_fixture : jsonl_fixture {
    using index_type = libretto::jsonl_session_index;
    libretto::jsonl_session_index open() { return libretto::jsonl_session_index({.directory = dir}); }
};

// Artifacts as files in the store's directory.
struct file_artifact_fixture : jsonl_fixture {
    using service_type = libretto::file_artifact_service;
    libretto::file_artifact_service open() { return libretto::file_artifact_service({.directory = dir}); }
    libretto::file_artifact_service open_limited(std::uint64_t max) {
        return libretto::file_artifact_service({.directory = dir, .max_artifact_bytes = max});
    }
};

// A store and its index in one directory, for the conversation suite.
struct jsonl_conversation_fixture : jsonl_fixture {
    libretto::jsonl_session_index open_index() { return libretto::jsonl_session_index({.directory = dir}); }
};

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
}

} // namespace

LIBRETTO_STORE_CONFORMANCE(jsonl_fixture)
LIBRETTO_INDEX_CONFORMANCE(jsonl_index_fixture)
LIBRETTO_ARTIFACT_CONFORMANCE(file_artifact_fixture)
LIBRETTO_CONVERSATION_CONFORMANCE(jsonl_conversation_fixture)
LIBRETTO_REWIND_CONFORMANCE(jsonl_conversation_fixture)

BOOST_AUTO_TEST_SUITE(jsonl_session_index_specific)

using index_conformance::entry;
namespace lb = libretto;

// A patch appends one line to the log; the log is folded into conversations.json when it
// outgrows it, and when the index is destroyed: at rest there is one file.
BOOST_AUTO_TEST_CASE(changes_go_to_the_log_and_fold_into_the_snapshot) {
    jsonl_index_fixture f;
    const auto app_dir = f.dir / "apps" / "app";
    lb::diagnostics d;
    {
        auto ix = f.open();
        BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message());
        BOOST_TEST(!std::filesystem::exists(app_dir / "conversations.json"));
        const auto one_line = std::filesystem::file_size(app_dir / "conversations.log");
        BOOST_TEST(one_line > 0u);
        lb::conversation_patch p;
        p.add_input_tokens = 1;
        lb::conversation_entry out;
        BOOST_TEST_REQUIRE(!ix.index_patch("app", "k", p, out, &d), d.message());
        // One more line of about the same size: the index is not rewritten.
        const auto two_lines = std::filesystem::file_size(app_dir / "conversations.log");
        BOOST_TEST(two_lines > one_line);
        BOOST_TEST(two_lines < 3 * one_line);
        // Enough changes to outgrow 64 KiB: folded.
        for (int i = 0; i < 400; ++i) BOOST_TEST_REQUIRE(!ix.index_patch("app", "k", p, out, &d), d.message());
        BOOST_TEST(std::filesystem::exists(app_dir / "conversations.json"));
        BOOST_TEST(std::filesystem::file_size(app_dir / "conversations.log") < 64u * 1024u);
        BOOST_TEST(out.input_tokens == 401);
    }
    BOOST_TEST(std::filesystem::file_size(app_dir / "conversations.log") == 0u);
    const std::string snap = slurp(app_dir / "conversations.json");
    BOOST_TEST(snap.find("\"input_tokens\":401") != std::string::npos, snap);
    auto again = f.open();
    auto g = index_conformance::get(again, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->input_tokens == 401);
}

// conversations.json edited by hand while nothing runs: the next call reads the edit.
BOOST_AUTO_TEST_CASE(an_edit_by_hand_is_read) {
    jsonl_index_fixture f;
    const auto app_dir = f.dir / "apps" / "app";
    lb::diagnostics d;
    { auto ix = f.open(); BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message()); }
    auto ix = f.open();
    BOOST_TEST_REQUIRE(index_conformance::get(ix, "k").has_value());
    std::string snap = slurp(app_dir / "conversations.json");
    const auto at = snap.find("\"s1\"");
    BOOST_TEST_REQUIRE(at != std::string::npos);
    snap.replace(at, 4, "\"s-edited\"");
    spit(app_dir / "conversations.json", snap);
    auto g = index_conformance::get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->session_id == "s-edited");
}

// This version refuses a label or a chat type that is not UTF-8; an earlier one stored them
// as they were, and such a snapshot still reads (and its entries can still be patched).
BOOST_AUTO_TEST_CASE(texts_an_earlier_version_stored_without_utf8_still_read) {
    jsonl_index_fixture f;
    const auto app_dir = f.dir / "apps" / "app";
    lb::diagnostics d;
    { auto ix = f.open(); BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message()); }
    std::string snap = slurp(app_dir / "conversations.json");
    const auto at = snap.find("\"key\":\"k\"");
    BOOST_TEST_REQUIRE(at != std::string::npos, snap);
    snap.insert(at, "\"labels\":[\"vip\xff\"],\"chat_type\":\"gr\xc3oup\",");
    spit(app_dir / "conversations.json", snap);
    auto ix = f.open();
    auto g = index_conformance::get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->labels == std::vector<std::string>{"vip\xff"});
    BOOST_TEST(g->chat_type == "gr\xc3oup");
    lb::conversation_patch p;
    p.add_input_tokens = 3;
    lb::conversation_entry out;
    BOOST_TEST_REQUIRE(!ix.index_patch("app", "k", p, out, &d), d.message());
    BOOST_TEST(out.input_tokens == 3);
    BOOST_TEST(out.labels == std::vector<std::string>{"vip\xff"});
}

// A malformed file fails every call for its app, naming the file and what is wrong, and
// loses nothing: index_replace moves it aside and writes the given entries.
BOOST_AUTO_TEST_CASE(a_malformed_index_is_reported_and_replaced) {
    jsonl_index_fixture f;
    const auto app_dir = f.dir / "apps" / "app";
    lb::diagnostics d;
    { auto ix = f.open(); BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message()); }
    const std::string good = slurp(app_dir / "conversations.json");
    spit(app_dir / "conversations.json", "{\"entries\": [ {\"app_name\": \"app\", \"key\": 7");
    auto ix = f.open();
    std::optional<lb::conversation_entry> out;
    BOOST_TEST(ix.index_get("app", "k", out, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("conversations.json") != std::string::npos, d.message());
    BOOST_TEST(d.message().find("not JSON") != std::string::npos, d.message());
    spit(app_dir / "conversations.json", "{\"entries\": [ {\"app_name\": \"app\", \"key\": 7} ]}");
    BOOST_TEST(ix.index_get("app", "k", out, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("entries[0]: key") != std::string::npos, d.message());
    // Another app is not affected.
    BOOST_TEST(!ix.index_get("app2", "k", out, &d));
    // The replacement.
    std::vector<lb::conversation_entry> rebuilt{entry("k", "s9"), entry("k2", "s8")};
    BOOST_TEST_REQUIRE(!ix.index_replace("app", rebuilt, &d), d.message());
    auto g = index_conformance::get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->session_id == "s9");
    BOOST_TEST(index_conformance::get(ix, "k2").has_value());
    int aside = 0;
    for (const auto& de : std::filesystem::directory_iterator(app_dir))
        if (de.path().filename().string().starts_with("conversations.json.bad-")) {
            ++aside;
            BOOST_TEST(slurp(de.path()).find("\"key\": 7") != std::string::npos);
        }
    BOOST_TEST(aside == 1);
    (void)good;
}

// A writer that crashed mid-line leaves a torn last line: it is not read, and the next
// change cuts it before writing its own line. A complete line that is not an entry is an
// error naming its offset.
BOOST_AUTO_TEST_CASE(a_torn_log_line_is_ignored_and_a_bad_one_reported) {
    jsonl_index_fixture f;
    const auto app_dir = f.dir / "apps" / "app";
    lb::diagnostics d;
    { auto ix = f.open(); BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s1"), &d), d.message()); }
    {
        std::ofstream log(app_dir / "conversations.log", std::ios::binary | std::ios::app);
        log << "{\"put\":{\"app_name\":\"app\",\"key\":\"k\",\"user_id\":\"u1\",\"sess";
    }
    auto ix = f.open();
    auto g = index_conformance::get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST(g->session_id == "s1");
    BOOST_TEST_REQUIRE(!ix.index_put(entry("k3", "s3"), &d), d.message());
    auto other = f.open();
    BOOST_TEST(index_conformance::get(other, "k3").has_value());
    BOOST_TEST(slurp(app_dir / "conversations.log").find("\"sess\n") == std::string::npos);
    {
        std::ofstream log(app_dir / "conversations.log", std::ios::binary | std::ios::app);
        log << "{\"put\":{\"key\":\"x\"}}\n";
    }
    std::optional<lb::conversation_entry> out;
    BOOST_TEST(other.index_get("app", "k", out, &d) == lb::errc::corrupt_data);
    BOOST_TEST(d.message().find("conversations.log at byte") != std::string::npos, d.message());
    BOOST_TEST(d.message().find("app_name") != std::string::npos, d.message());
}

// A JSONL index edited into invalid JSON: the conversation turn fails naming the file, a
// rebuild replaces it (the bad file kept aside), and the conversation goes on in its session.
BOOST_AUTO_TEST_CASE(a_malformed_index_stops_conversation_turns_until_rebuilt) {
    conversation_conformance::world<jsonl_conversation_fixture> w(
        {lb::scripted_reply::text("a"), lb::scripted_reply::text("b"), lb::scripted_reply::text("c")});
    const std::string key = lb::group_key("assistant", "telegram", "-100");
    auto o = [&] { return lb::run_options::in_conversation("app", "group-100", key); };
    BOOST_TEST(lb::run_to_end(w.runner, o(), "one").ok());
    const lb::conversation_entry first = w.entry(key);
    BOOST_TEST(first.chat_type == "group");
    // Written to conversations.json, then broken by hand.
    {
        lb::jsonl_session_index other({.directory = w.fixture.dir});
        std::vector<lb::conversation_entry> all{first};
        BOOST_TEST_REQUIRE(!other.index_replace("app", all));
    }
    const auto app_dir = w.fixture.dir / "apps" / "app";
    spit(app_dir / "conversations.json", "{\"entries\": [ {");
    auto broken = lb::run_to_end(w.runner, o(), "two");
    BOOST_TEST(broken.error == lb::errc::corrupt_data);
    BOOST_TEST(broken.message().find("conversations.json") != std::string::npos, broken.message());
    lb::diagnostics d;
    auto [ec, report] = w.rebuild("app", d);
    BOOST_TEST(!ec, d.message());
    BOOST_TEST(report.old_index_unreadable);
    BOOST_TEST(report.old_index_problem.find("not JSON") != std::string::npos, report.old_index_problem);
    BOOST_TEST(w.entry(key).session_id == first.session_id);
    auto next = lb::run_to_end(w.runner, o(), "three");
    BOOST_TEST(next.ok(), next.message());
    const lb::conversation_entry after = w.entry(key);
    BOOST_TEST(after.session_id == first.session_id); // the conversation went on
    BOOST_TEST(after.last_sequence == 4);
    auto transcript = w.get(first.session_id, "group-100");
    BOOST_TEST_REQUIRE(transcript.has_value());
    BOOST_TEST(transcript->events.size() == 4u); // nothing lost, nothing from the refused turn
    int aside = 0;
    for (const auto& de : std::filesystem::directory_iterator(app_dir))
        if (de.path().filename().string().starts_with("conversations.json.bad-")) ++aside;
    BOOST_TEST(aside == 1);
}

BOOST_AUTO_TEST_SUITE_END()
