// jsonl_store: what the conformance suite does not cover — the file format, torn-tail
// recovery (truncation and flipped bytes at every offset of the last record, a writer
// killed with SIGKILL), the writer lock (busy, stale reclaim), reading only the tail,
// maintenance, corrupt lines, oversize events.
#include <libretto/event/filters.hpp>
#include <libretto/store/detail/jsonl_engine.hpp> // the engine's helpers (not in jsonl_store.hpp with separate compilation)
#include <libretto/store/jsonl_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace lb = libretto;
using boost::system::error_code;

/// A fresh directory under the working directory, removed afterwards.
struct temp_dir {
    fs::path path;
    temp_dir() {
        static std::atomic<int> counter{0};
        path = fs::current_path() / ("jsonl-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// One pool for the blocking work of every store in this file (a store per reopen would
/// otherwise start and join threads hundreds of times).
asio::any_io_executor shared_pool() {
    static asio::thread_pool pool(2);
    return pool.get_executor();
}

lb::jsonl_store_options opts(const fs::path& dir, lb::durability d = lb::durability::none) {
    lb::jsonl_store_options o;
    o.directory = dir;
    o.durability = d;
    o.blocking_executor = shared_pool();
    return o;
}

lb::event text_event(std::string text, double ts = 0) {
    lb::event e = lb::event::make(lb::event_type::agent_message, "agent", lb::content::from_text(std::move(text)));
    if (ts != 0) e.timestamp = ts;
    return e;
}

std::string read_bytes(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void write_bytes(const fs::path& p, const std::string& data) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << data;
}

fs::path session_path(const fs::path& root, const lb::session_key& k) {
    return root / "apps" / k.app_name / "users" / k.user_id / "sessions" / k.session_id;
}

/// Byte offset of the start of every line of a file.
std::vector<std::size_t> line_offsets(const std::string& bytes) {
    std::vector<std::size_t> out{0};
    for (std::size_t i = 0; i < bytes.size(); ++i)
        if (bytes[i] == '\n' && i + 1 < bytes.size()) out.push_back(i + 1);
    return out;
}

std::vector<fs::path> side_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().starts_with("torn-")) out.push_back(e.path());
    return out;
}

/// Creates app/u/s with `n` events ("e1".."en") and closes the store.
lb::session_key make_session(const fs::path& root, int n, lb::durability d = lb::durability::none) {
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(root, d));
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u";
    co.session_id = "s";
    co.state["k0"] = 0;
    lb::session s;
    BOOST_REQUIRE(!st.create(co, s));
    for (int i = 1; i <= n; ++i) {
        std::int64_t seq = 0;
        auto e = text_event("e" + std::to_string(i), 1000.0 + i);
        e.actions.state_delta["k"] = i;
        BOOST_REQUIRE(!st.append(s, std::move(e), seq));
        BOOST_REQUIRE_EQUAL(seq, i);
    }
    return {"app", "u", "s"};
}

} // namespace

BOOST_AUTO_TEST_SUITE(jsonl_format)

BOOST_AUTO_TEST_CASE(crc32c_and_line_framing) {
    using namespace lb::detail::jsonl;
    BOOST_TEST(crc32c("123456789") == 0xE3069283u);
    const std::string_view v = "The quick brown fox jumps over the lazy dog, 0123456789 times.";
    BOOST_TEST(crc32c_portable(0, reinterpret_cast<const unsigned char*>(v.data()), v.size()) == crc32c(v));
    std::string line = R"({"a":1,"b":"x"})";
    frame_line(line);
    BOOST_TEST(line.back() == '\n');
    std::string body = line.substr(0, line.size() - 1);
    BOOST_TEST(verify_frame(body));
    BOOST_TEST(boost::json::parse(body).as_object().at("a").as_int64() == 1); // still plain JSON
    for (std::size_t i = 0; i < body.size(); ++i) {
        std::string bad = body;
        bad[i] ^= 0x20; // flips letter case too: uppercase hex digits must not pass
        BOOST_TEST_CONTEXT("byte " << i) { BOOST_TEST(!verify_frame(bad)); }
    }
    for (std::size_t n = 0; n < body.size(); ++n) BOOST_TEST(!verify_frame(std::string_view(body).substr(0, n)));
}

// The store's fast decoder must yield exactly what parse_event yields, or decline.
BOOST_AUTO_TEST_CASE(fast_decoder_agrees_with_parse_event) {
    using namespace lb::detail::jsonl;
    std::vector<lb::event> evs;
    unsigned seed = 12345;
    auto rnd = [&](unsigned n) {
        seed = seed * 1103515245u + 12345u;
        return (seed >> 16) % n;
    };
    const std::vector<std::string> texts{"", "plain", "quote \" backslash \\ slash / tab \t nl \n",
                                         "unicode \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", std::string(300, 'z'),
                                         std::string("nul \0 inside", 13)};
    for (int i = 0; i < 400; ++i) {
        lb::event e = lb::event::make(static_cast<lb::event_type>(rnd(4)), rnd(2) ? "agent" : "");
        e.sequence = rnd(3) ? i + 1 : 0;
        e.timestamp = rnd(5) == 0 ? 100.0 : (rnd(2) ? 1.7e9 + rnd(100000) / 7.0 : 0.1 * rnd(1000));
        if (rnd(2)) e.invocation_id = "inv-" + std::to_string(i);
        if (rnd(2)) e.session_id = "s";
        if (rnd(3) == 0) e.branch = "a.b";
        if (rnd(3) == 0) e.content.role = "model";
        const unsigned nparts = rnd(4);
        for (unsigned k = 0; k < nparts; ++k) {
            lb::json::object md;
            if (rnd(3) == 0)
                md["k"] = lb::json::array{1, -2, 3.25, "x", nullptr, true, lb::json::object{{"n", 18446744073709551615ull}}};
            switch (rnd(6)) {
            case 0: e.content.parts.emplace_back(lb::text_part{texts[rnd(texts.size())], md}); break;
            case 1: e.content.parts.emplace_back(lb::thinking_part{texts[rnd(texts.size())], md}); break;
            case 2: e.content.parts.emplace_back(lb::data_part{lb::json::object{{"a", 1}, {"b", lb::json::array{}}}, md}); break;
            case 3: {
                lb::file_part f;
                if (rnd(2)) f.uri = "file:///x";
                if (rnd(2)) f.inline_bytes = "AAEC";
                if (rnd(2)) f.mime_type = "image/png";
                if (rnd(2)) f.name = "x.png";
                f.metadata = md;
                e.content.parts.emplace_back(std::move(f));
                break;
            }
            case 4:
                e.content.parts.emplace_back(
                    lb::tool_call_part{"c" + std::to_string(k), "tool", lb::json::object{{"q", texts[rnd(texts.size())]}}, md});
                break;
            default: {
                lb::tool_response_part r{"c" + std::to_string(k), "tool", {}, {}, md};
                switch (rnd(5)) {
                case 0: break;
                case 1: r.result = 42; break;
                case 2: r.result = "text"; break;
                case 3: r.result = lb::json::array{1.5, lb::json::object{{"z", nullptr}}}; break;
                default: r.result = lb::json::object{{"ok", true}}; break;
                }
                if (rnd(3) == 0) r.error = "boom";
                e.content.parts.emplace_back(std::move(r));
            }
            }
        }
        if (rnd(2)) e.actions.state_delta["k" + std::to_string(rnd(3))] = rnd(2) ? lb::json::value(nullptr) : lb::json::value(i);
        if (rnd(4) == 0) e.actions.artifact_delta["f.txt"] = rnd(5);
        if (rnd(4) == 0) e.actions.transfer_to_agent = "other";
        if (rnd(4) == 0) e.actions.escalate = rnd(2) == 0;
        if (rnd(4) == 0) e.actions.skip_summarization = true;
        if (rnd(4) == 0) e.actions.end_of_agent = false;
        if (rnd(5) == 0) e.actions.compaction = lb::event_compaction{1, 1 + rnd(9), 1.5, 2.25, "sum", 3};
        if (rnd(5) == 0) e.actions.rewind_before_invocation_id = "inv-" + std::to_string(rnd(3));
        if (rnd(4) == 0) e.metadata["m"] = lb::json::object{{"deep", lb::json::object{{"er", lb::json::array{lb::json::array{}}}}}};
        if (rnd(5) == 0) e.partial = true;
        if (rnd(3) == 0) e.usage = lb::usage{rnd(1000), rnd(100), rnd(2) ? "model-1" : ""};
        if (rnd(5) == 0) e.signature = "sig";
        if (rnd(5) == 0) e.signer_did = "did:key:z";
        if (rnd(5) == 0) e.prev_signature = "prev";
        evs.push_back(std::move(e));
    }
    for (std::size_t i = 0; i < evs.size(); ++i) {
        BOOST_TEST_CONTEXT("event " << i) {
            std::string line = lb::serialize_event(evs[i]);
            frame_line(line);
            line.pop_back();
            lb::event fast;
            BOOST_TEST(fast_decode_event(line, fast));
            auto slow = lb::parse_event(line);
            BOOST_REQUIRE(slow.has_value());
            BOOST_TEST((fast == *slow));
            BOOST_TEST((fast == evs[i]));
        }
    }
    // Other shapes: the fast path declines, or agrees with parse_event.
    const std::vector<std::string> odd{
        R"({"id":"a","type":"agent_message","timestamp":5})",
        R"({"id":"a","type":"agent_message","timestamp":18446744073709551615})",
        R"({"id":"a","type":"agent_message","id":"b"})",
        R"({"id":"a","type":"agent_message","extra":1})",
        R"({"id":"a","type":"nope"})",
        R"({"id":"a","type":"agent_message","signature":null})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"type":"text","text":"x","uri":"u"}]}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"type":"text"}]}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"text":"x"}]}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[1]}})",
        R"({"id":"a","type":"agent_message","content":{"parts":{}}})",
        R"({"id":"a","type":"agent_message","sequence":-1})",
        R"({"id":"a","type":"agent_message","sequence":18446744073709551615})",
        R"({"id":"a","type":"agent_message","sequence":1.5})",
        R"({"id":"a","type":"agent_message","actions":{"artifact_delta":{"f":"x"}}})",
        R"({"id":"a","type":"agent_message","actions":{"state_delta":[]}})",
        R"({"id":"a","type":"agent_message","actions":{"compaction":{"first_sequence":5,"last_sequence":1,"summary":"s"}}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"type":"tool_response","tool_call_id":"c","tool_name":"t","result":[1,{"a":null},"s",1.5,true]}]}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"type":"tool_response","tool_call_id":"c","tool_name":"t","result":null}]}})",
        R"({"type":"agent_message"})",
        R"({"id":"a"})",
        R"([1,2])",
        R"("x")",
        R"({"id":"a","type":"agent_message"} )",
        R"({"id":"a","type":"agent_message"}{})",
        R"({"id":"a\u0000b","type":"agent_message","author":"\ud83d\ude00 \u00e9"})",
        R"({"id":"a","type":"agent_message","timestamp":1.7976931348623157e308,"usage":{"input_tokens":1,"output_tokens":2}})",
        R"({"id":"a","type":"agent_message","usage":{"input_tokens":1}})",
        R"({"id":"a","type":"agent_message","partial":1})",
        R"({"id":1,"type":"agent_message"})",
        // Keys as long as a known one but not it, a known key's prefix, members in another
        // order than the writer's: the fast path declines or agrees.
        R"({"id":"a","type":"agent_message","metadatb":{}})",
        R"({"id":"a","typ":"agent_message"})",
        R"({"type":"agent_message","author":"x","id":"a","sequence":3})",
        R"({"id":"a","type":"agent_message","usage":{"model_version":"m","output_tokens":2,"input_tokens":1}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"text":"x","type":"text"}],"role":"user"}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"type":"file","url":"u"}]}})",
        // A tool result that is a string with escapes comes in parts: all of it is the result,
        // none of it leaks into the next string.
        R"({"id":"a","type":"tool_response","content":{"parts":[{"type":"tool_response","tool_call_id":"c","tool_name":"t","result":"/\n\nZ"}]}})",
        R"({"id":"a","type":"tool_response","content":{"parts":[{"type":"tool_response","tool_call_id":"c","tool_name":"t","result":"\u00e9/<\nZ\u0000","error":"  /{<\""}]}})",
        // What parse_event refuses (json_limits.hpp), the fast path declines.
        R"({"id":"a","type":"agent_message","metadata":{"k":1,"k":2}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"type":"tool_call","tool_call_id":"c","tool_name":"t","args":{"x":{"y":1,"y":1}}}]}})",
        R"({"id":"a","type":"agent_message","metadata":{"k":1e400}})",
        R"({"id":"a","type":"agent_message","timestamp":-1e400})",
    };
    for (const auto& l : odd) {
        BOOST_TEST_CONTEXT(l) {
            lb::event fast;
            const bool ok = fast_decode_event(l, fast);
            auto slow = lb::parse_event(l);
            if (l.find("\"result\":\"") != std::string::npos) BOOST_TEST(ok); // the shape the store writes
            if (ok) {
                BOOST_TEST(slow.has_value());
                if (slow) BOOST_TEST((fast == *slow));
            }
        }
    }
    // Known members in another order than the writer's: still the fast path, same event.
    const std::vector<std::string> reordered{
        R"({"type":"agent_message","author":"x","id":"a","sequence":3})",
        R"({"id":"a","type":"agent_message","usage":{"model_version":"m","output_tokens":2,"input_tokens":1}})",
        R"({"id":"a","type":"agent_message","content":{"parts":[{"text":"x","type":"text"}],"role":"user"}})",
    };
    for (const auto& l : reordered) {
        BOOST_TEST_CONTEXT(l) {
            lb::event fast;
            BOOST_TEST(fast_decode_event(l, fast));
            auto slow = lb::parse_event(l);
            BOOST_TEST_REQUIRE(slow.has_value());
            BOOST_TEST((fast == *slow));
        }
    }
}

BOOST_AUTO_TEST_CASE(transcript_is_json_lines_with_a_header) {
    temp_dir d;
    auto k = make_session(d.path, 3);
    const auto bytes = read_bytes(session_path(d.path, k) / "transcript.jsonl");
    std::istringstream in(bytes);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        auto v = boost::json::parse(line).as_object();
        if (n == 0) {
            BOOST_TEST(v.at("format").as_string() == "libretto-session");
            BOOST_TEST(v.at("session_id").as_string() == "s");
            BOOST_TEST(v.at("state").as_object().at("k0").as_int64() == 0);
        } else {
            BOOST_TEST(v.at("sequence").as_int64() == n);
            BOOST_TEST(v.contains("crc32c"));
        }
        ++n;
    }
    BOOST_TEST(n == 4);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(jsonl_recovery)

// Reopening after the last record was cut at byte k (0 <= k < its length), with and without
// a checkpoint: the intact prefix stays, the k bytes go to a side file and are reported,
// and the next append works.
BOOST_AUTO_TEST_CASE(torn_tail_truncated_at_every_offset_of_the_last_record) {
    temp_dir d;
    const int n = 4;
    auto k = make_session(d.path, n);
    const fs::path sdir = session_path(d.path, k);
    const fs::path tp = sdir / "transcript.jsonl";
    const std::string orig = read_bytes(tp);
    const std::string meta = read_bytes(sdir / "meta.json");
    BOOST_REQUIRE(!meta.empty());
    const auto lines = line_offsets(orig);
    BOOST_REQUIRE_EQUAL(lines.size(), static_cast<std::size_t>(n + 1));
    const std::size_t prefix = lines.back();
    const std::size_t len = orig.size() - prefix;
    for (int with_meta = 0; with_meta < 2; ++with_meta) {
        for (std::size_t cut = 0; cut < len; ++cut) {
            // Without a checkpoint the open takes the same full scan as with a rejected
            // one: every offset with the checkpoint, a sample without.
            if (!with_meta && cut % 7 != 0 && cut + 2 < len) continue;
            BOOST_TEST_CONTEXT("cut at " << cut << " of " << len << (with_meta ? ", checkpoint" : ", no checkpoint")) {
                for (auto& f : side_files(sdir)) fs::remove(f);
                write_bytes(tp, orig.substr(0, prefix + cut));
                if (with_meta) write_bytes(sdir / "meta.json", meta);
                else fs::remove(sdir / "meta.json");
                asio::io_context io;
                lb::jsonl_store st(io.get_executor(), opts(d.path));
                std::optional<lb::session> g;
                BOOST_REQUIRE(!st.get(k, {}, g));
                BOOST_REQUIRE(g.has_value());
                BOOST_TEST(g->events.size() == static_cast<std::size_t>(n - 1));
                BOOST_TEST(g->last_sequence == n - 1);
                BOOST_TEST(g->state.at("k").as_int64() == n - 1);
                BOOST_TEST(fs::file_size(tp) == prefix);
                const auto rec = st.recoveries();
                const auto sides = side_files(sdir);
                if (cut == 0) {
                    BOOST_TEST(rec.empty()); // nothing torn: the record is just not there
                    BOOST_TEST(sides.empty());
                } else {
                    BOOST_REQUIRE_EQUAL(rec.size(), 1u);
                    BOOST_TEST(rec[0].intact_bytes == prefix);
                    BOOST_TEST(rec[0].moved_bytes == cut);
                    BOOST_TEST(rec[0].last_sequence == n - 1);
                    BOOST_TEST(rec[0].line == static_cast<std::uint64_t>(n + 1));
                    BOOST_TEST(rec[0].side_file == (sides.empty() ? fs::path() : sides[0]));
                    BOOST_REQUIRE_EQUAL(sides.size(), 1u);
                    BOOST_TEST(read_bytes(sides[0]) == orig.substr(prefix, cut));
                }
                std::int64_t seq = 0;
                BOOST_TEST(!st.append(*g, text_event("after"), seq));
                BOOST_TEST(seq == n);
            }
        }
    }
}

// A flipped byte anywhere in the last record: the whole record goes to the side file.
BOOST_AUTO_TEST_CASE(garbled_byte_at_every_offset_of_the_last_record) {
    temp_dir d;
    const int n = 4;
    auto k = make_session(d.path, n);
    const fs::path sdir = session_path(d.path, k);
    const fs::path tp = sdir / "transcript.jsonl";
    const std::string orig = read_bytes(tp);
    const std::string meta = read_bytes(sdir / "meta.json");
    const std::size_t prefix = line_offsets(orig).back();
    const std::size_t len = orig.size() - prefix;
    for (int with_meta = 0; with_meta < 2; ++with_meta) {
        for (std::size_t i = 0; i < len; ++i) {
            if (!with_meta && i % 7 != 0 && i + 2 < len) continue;
            BOOST_TEST_CONTEXT("byte " << i << " of " << len << (with_meta ? ", checkpoint" : ", no checkpoint")) {
                for (auto& f : side_files(sdir)) fs::remove(f);
                std::string bad = orig;
                bad[prefix + i] = static_cast<char>(bad[prefix + i] ^ (i % 2 ? 0x20 : 0x01));
                write_bytes(tp, bad);
                if (with_meta) write_bytes(sdir / "meta.json", meta);
                else fs::remove(sdir / "meta.json");
                asio::io_context io;
                lb::jsonl_store st(io.get_executor(), opts(d.path));
                std::optional<lb::session> g;
                BOOST_REQUIRE(!st.get(k, {}, g));
                BOOST_REQUIRE(g.has_value());
                BOOST_TEST(g->last_sequence == n - 1);
                BOOST_TEST(g->events.size() == static_cast<std::size_t>(n - 1));
                const auto rec = st.recoveries();
                BOOST_REQUIRE_EQUAL(rec.size(), 1u);
                BOOST_TEST(rec[0].moved_bytes == len);
                const auto sides = side_files(sdir);
                BOOST_REQUIRE_EQUAL(sides.size(), 1u);
                BOOST_TEST(read_bytes(sides[0]) == bad.substr(prefix));
                std::int64_t seq = 0;
                BOOST_TEST(!st.append(*g, text_event("after"), seq));
                BOOST_TEST(seq == n);
            }
        }
    }
}

// An instance that has the session open sees a torn tail appear (another writer crashed
// mid-write): it waits briefly (a write in progress completes), then takes the lock and
// recovers.
BOOST_AUTO_TEST_CASE(torn_tail_appearing_under_an_open_session_is_recovered) {
    temp_dir d;
    auto k = make_session(d.path, 3);
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    const auto size = fs::file_size(tp);
    {
        std::ofstream f(tp, std::ios::binary | std::ios::app);
        f << R"({"id":"x","sequence":4,"timest)";
    }
    std::optional<lb::session> g2;
    BOOST_REQUIRE(!st.get(k, {}, g2));
    BOOST_TEST(g2->last_sequence == 3);
    BOOST_TEST(fs::file_size(tp) == size);
    BOOST_REQUIRE_EQUAL(st.recoveries().size(), 1u);
    std::int64_t seq = 0;
    BOOST_TEST(!st.append(*g2, text_event("x"), seq));
    BOOST_TEST(seq == 4);
}

// A child process appends and reports every acknowledged sequence through a pipe; it is
// killed with SIGKILL mid-stream. Even rounds use durability per_event (a kill mostly lands
// in fdatasync); odd rounds use none with 600 KB events and kill inside write(2),
// which SIGKILL cuts short: torn tails. Every acknowledged event is there after reopening
// (a process crash loses nothing acknowledged at any level); a torn tail is moved aside and
// reported; appending continues.
BOOST_AUTO_TEST_CASE(sigkill_during_appends_loses_no_acknowledged_event) {
    temp_dir d;
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        lb::create_options co;
        co.app_name = "app";
        co.user_id = "u";
        co.session_id = "s";
        lb::session s;
        BOOST_REQUIRE(!st.create(co, s));
    }
    const lb::session_key k{"app", "u", "s"};
    std::int64_t acked_total = 0;
    std::size_t torn = 0;
    const auto t0 = std::chrono::steady_clock::now();
    // 8 rounds; more (up to 32) while no kill has landed inside a write yet, so that the
    // recovery of a real torn tail is always exercised (it takes 4-5 of 8 rounds here).
    for (int round = 0; round < 8 || (torn == 0 && round < 32); ++round) {
        const bool sync_each = round % 2 == 0;
        int fds[2];
        BOOST_REQUIRE(::pipe(fds) == 0);
        const pid_t pid = ::fork();
        BOOST_REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fds[0]);
            asio::io_context io;
            auto co = opts(d.path, sync_each ? lb::durability::per_event : lb::durability::none);
            co.blocking_executor.reset(); // the parent's pool has no threads in this process
            co.threads = 1;
            lb::jsonl_store st(io.get_executor(), co);
            std::optional<lb::session> s;
            lb::get_options none;
            none.num_recent_events = 0;
            if (st.get(k, none, s) || !s) ::_exit(2);
            const std::string big((sync_each ? 100'000 : 600'000) + 1000 * round, 'x');
            for (;;) {
                std::int64_t seq = 0;
                if (st.append(*s, text_event(big), seq)) ::_exit(3);
                if (::write(fds[1], &seq, sizeof seq) != sizeof seq) ::_exit(4);
            }
        }
        ::close(fds[1]);
        std::int64_t last = 0, v = 0;
        const int target = 2 + round / 2;
        int got = 0;
        while (got < target && ::read(fds[0], &v, sizeof v) == sizeof v) {
            last = v;
            ++got;
        }
        if (sync_each) {
            // Land the kill at varying points of the next append.
            std::this_thread::sleep_for(std::chrono::microseconds(250 * round));
        } else {
            // Kill inside write(2): as soon as the transcript ends in the middle of a line.
            const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
            const int fd = ::open(tp.c_str(), O_RDONLY | O_CLOEXEC);
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
            while (fd >= 0 && std::chrono::steady_clock::now() < until) {
                struct stat st;
                char c = '\n';
                if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n') break;
            }
            if (fd >= 0) ::close(fd);
        }
        ::kill(pid, SIGKILL);
        while (::read(fds[0], &v, sizeof v) == sizeof v) last = v; // acknowledged before the kill
        ::close(fds[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        BOOST_REQUIRE(WIFSIGNALED(status));
        BOOST_REQUIRE(got == target);
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        // This round's events (earlier rounds' were checked then); the store verifies every
        // line it decodes (checksum, sequence), so a gap or damage fails the get.
        lb::get_options since;
        since.from_sequence = acked_total + 1;
        std::optional<lb::session> g;
        BOOST_REQUIRE(!st.get(k, since, g));
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST_CONTEXT("round " << round << ": last acknowledged " << last) {
            BOOST_TEST(g->last_sequence >= last);
            BOOST_TEST(g->last_sequence <= last + 1); // at most the one in flight
            BOOST_TEST(g->events.size() == static_cast<std::size_t>(g->last_sequence - acked_total));
            for (std::size_t i = 0; i < g->events.size(); ++i)
                BOOST_TEST(g->events[i].sequence == acked_total + 1 + static_cast<std::int64_t>(i));
        }
        for (const auto& r : st.recoveries()) {
            BOOST_TEST(fs::exists(r.side_file));
            BOOST_TEST(r.moved_bytes > 0u);
            ++torn;
        }
        std::int64_t seq = 0;
        BOOST_TEST(!st.append(*g, text_event("after the crash"), seq));
        BOOST_TEST(seq == g->last_sequence);
        acked_total = seq;
    }
    BOOST_TEST(torn > 0u); // a kill inside write(2) left a torn tail, and it was recovered
    BOOST_TEST_MESSAGE("sigkill rounds: " << torn << " torn tails recovered, "
                                          << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                                          << " s");
}

BOOST_AUTO_TEST_CASE(corrupt_middle_line_is_corrupt_data_naming_the_line) {
    temp_dir d;
    auto k = make_session(d.path, 10);
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    const std::string orig = read_bytes(tp);
    const auto lines = line_offsets(orig);
    for (int with_meta = 0; with_meta < 2; ++with_meta) {
        BOOST_TEST_CONTEXT((with_meta ? "checkpoint" : "no checkpoint")) {
            std::string bad = orig;
            bad[lines[4] + 20] ^= 0x01; // line 5: the event of sequence 4
            write_bytes(tp, bad);
            if (!with_meta) fs::remove(session_path(d.path, k) / "meta.json");
            asio::io_context io;
            lb::jsonl_store st(io.get_executor(), opts(d.path));
            std::optional<lb::session> g;
            lb::diagnostics diag;
            BOOST_TEST(st.get(k, {}, g, &diag) == lb::errc::corrupt_data);
            BOOST_TEST(!g.has_value());
            // The file, line 5 (the header is line 1) and the line's first byte.
            const std::string where = "jsonl_store: " + tp.string() + ":5 (byte " + std::to_string(lines[4]) +
                                      "): stored data is corrupt (";
            BOOST_TEST(diag.message().find(where) == 0u, diag.message());
            BOOST_TEST(st.recoveries().empty()); // never moved aside, never skipped
            BOOST_TEST(read_bytes(tp) == bad);
            lb::session s;
            s.app_name = "app";
            s.user_id = "u";
            s.id = "s";
            s.last_sequence = 10;
            std::int64_t seq = 0;
            if (!with_meta) BOOST_TEST(st.append(s, text_event("x"), seq) == lb::errc::corrupt_data);
            write_bytes(tp, orig);
        }
    }
}

BOOST_AUTO_TEST_CASE(corrupt_header_is_corrupt_data_line_1) {
    temp_dir d;
    auto k = make_session(d.path, 2);
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    std::string bytes = read_bytes(tp);
    bytes[5] ^= 0x01;
    write_bytes(tp, bytes);
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    std::optional<lb::session> g;
    lb::diagnostics diag;
    BOOST_TEST(st.get(k, {}, g, &diag) == lb::errc::corrupt_data);
    // Line 1, at byte 0 (which the message leaves out).
    BOOST_TEST(diag.message().find("jsonl_store: " + tp.string() + ":1: stored data is corrupt (") == 0u, diag.message());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(jsonl_lock)

// Holds a session's lock from outside the store, as another process would.
struct external_holder {
    int fd = -1;
    external_holder(const fs::path& lock, const std::string& record) {
        fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        BOOST_REQUIRE(fd >= 0);
        BOOST_REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
        BOOST_REQUIRE(::ftruncate(fd, 0) == 0);
        BOOST_REQUIRE(::pwrite(fd, record.data(), record.size(), 0) == static_cast<ssize_t>(record.size()));
    }
    ~external_holder() { ::close(fd); }
};

std::string record(long pid, unsigned long long start) {
    return "libretto-lock pid=" + std::to_string(pid) + " start=" + std::to_string(start) + " nonce=test since=0\n";
}

long dead_pid() {
    pid_t p = ::fork();
    if (p == 0) ::_exit(0);
    int status = 0;
    ::waitpid(p, &status, 0);
    return p;
}

void age(const fs::path& p, int seconds) {
    struct timespec ts[2];
    ::clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= seconds;
    ts[1] = ts[0];
    ::utimensat(AT_FDCWD, p.c_str(), ts, 0);
}

BOOST_AUTO_TEST_CASE(a_second_holder_times_out_with_busy) {
    temp_dir d;
    auto k = make_session(d.path, 1);
    const fs::path lock = session_path(d.path, k) / "lock";
    auto o = opts(d.path);
    o.lock_timeout = std::chrono::milliseconds(150);
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), o);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    {
        external_holder h(lock, record(::getpid(), lb::detail::jsonl::self_start_time())); // alive
        std::int64_t seq = 0;
        const auto t0 = std::chrono::steady_clock::now();
        lb::diagnostics diag;
        BOOST_TEST(st.append(*g, text_event("x"), seq, &diag) == lb::errc::busy);
        const auto waited = std::chrono::steady_clock::now() - t0;
        BOOST_TEST((waited >= std::chrono::milliseconds(150)));
        BOOST_TEST((waited < std::chrono::seconds(3)));
        BOOST_TEST(g->events.size() == 1u); // nothing appended
        // The lock file, the code, and the holder's pid.
        BOOST_TEST(diag.message().find("jsonl_store: " + lock.string() + ": resource is busy (") == 0u, diag.message());
        BOOST_TEST(diag.message().find("(held by pid " + std::to_string(::getpid()) + " (instance ") != std::string::npos,
                   diag.message());
        BOOST_TEST(st.remove(k) == lb::errc::busy);
    }
    std::int64_t seq = 0;
    BOOST_TEST(!st.append(*g, text_event("x"), seq));
    BOOST_TEST(seq == 2);

    // Two store instances: one keeps its lock (a long linger), the other times out.
    auto slow = opts(d.path);
    slow.lock_linger = std::chrono::seconds(30);
    lb::jsonl_store a(io.get_executor(), slow);
    std::optional<lb::session> ga;
    BOOST_REQUIRE(!a.get(k, {}, ga));
    BOOST_REQUIRE(!a.append(*ga, text_event("a"), seq));
    std::optional<lb::session> gb;
    BOOST_REQUIRE(!st.get(k, {}, gb));
    BOOST_TEST(gb->last_sequence == 3); // reads need no lock
    BOOST_TEST(st.append(*gb, text_event("b"), seq) == lb::errc::busy);
}

BOOST_AUTO_TEST_CASE(a_lock_timeout_past_the_clock_waits_and_a_negative_one_is_refused) {
    temp_dir d;
    asio::io_context io;
    for (auto [member, set] : {std::pair<std::string, void (*)(lb::jsonl_store_options&)>{
                                   "lock_timeout", [](auto& o) { o.lock_timeout = std::chrono::milliseconds(-1); }},
                               {"lock_linger", [](auto& o) { o.lock_linger = std::chrono::milliseconds(-1); }},
                               {"stale_lock_age", [](auto& o) { o.stale_lock_age = std::chrono::milliseconds(-1); }}}) {
        auto o = opts(d.path);
        set(o);
        try {
            lb::jsonl_store st(io.get_executor(), o);
            BOOST_ERROR(member << " -1 ms was taken");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST((e.code() == lb::errc::invalid_argument));
            BOOST_TEST(std::string(e.what()).find("jsonl_store: " + member + " is negative (-1 ms)") != std::string::npos,
                       e.what());
        }
    }
    // milliseconds::max() once overflowed the deadline into the past: busy at once. Now it
    // waits for the holder.
    auto k = make_session(d.path, 1);
    const fs::path lock = session_path(d.path, k) / "lock";
    auto o = opts(d.path);
    o.lock_timeout = std::chrono::milliseconds::max();
    lb::jsonl_store st(io.get_executor(), o);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    auto holder = std::make_unique<external_holder>(lock, record(::getpid(), lb::detail::jsonl::self_start_time()));
    std::future<boost::system::error_code> appended = std::async(std::launch::async, [&] {
        std::int64_t seq = 0;
        return st.append(*g, text_event("x"), seq);
    });
    BOOST_TEST((appended.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout)); // still waiting
    holder.reset();
    BOOST_TEST(!appended.get());
    BOOST_TEST(g->last_sequence == 2);
}

BOOST_AUTO_TEST_CASE(stale_locks_are_reclaimed) {
    temp_dir d;
    auto k = make_session(d.path, 1);
    const fs::path lock = session_path(d.path, k) / "lock";
    auto o = opts(d.path);
    o.lock_timeout = std::chrono::milliseconds(2000);
    o.stale_lock_age = std::chrono::milliseconds(100);
    const long dead = dead_pid();
    const auto self_start = lb::detail::jsonl::self_start_time();
    struct case_t {
        const char* name;
        std::string rec;
        bool hold;
    };
    std::vector<case_t> cases{
        {"record of a dead pid, not held", record(dead, 12345), false},
        {"record of a dead pid, held by an orphan descriptor", record(dead, 12345), true},
        {"record of a reused pid (start time differs), held", record(::getpid(), self_start + 1), true},
    };
    std::int64_t expect = 1;
    for (auto& c : cases) {
        BOOST_TEST_CONTEXT(c.name) {
            std::optional<external_holder> h;
            if (c.hold) {
                h.emplace(lock, c.rec);
                age(lock, 3600);
            } else {
                write_bytes(lock, c.rec);
            }
            asio::io_context io;
            lb::jsonl_store st(io.get_executor(), o);
            std::optional<lb::session> g;
            BOOST_REQUIRE(!st.get(k, {}, g));
            std::int64_t seq = 0;
            const auto t0 = std::chrono::steady_clock::now();
            BOOST_TEST(!st.append(*g, text_event("x"), seq));
            BOOST_TEST(seq == ++expect);
            BOOST_TEST((std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500)));
            // The record now names this process.
            lb::detail::jsonl::lock_holder who;
            BOOST_TEST(lb::detail::jsonl::parse_lock_record(read_bytes(lock), who));
            BOOST_TEST(who.pid == ::getpid());
            BOOST_TEST(who.start_time == self_start);
        }
    }
}

// Two instances race to append from the same revision while an orphan holds the stale
// lock: both reclaim paths run at once, yet exactly one append wins each round.
BOOST_AUTO_TEST_CASE(racing_reclaimers_leave_one_writer) {
    temp_dir d;
    auto k = make_session(d.path, 1);
    const fs::path lock = session_path(d.path, k) / "lock";
    auto o = opts(d.path);
    o.lock_linger = std::chrono::milliseconds(0);
    o.stale_lock_age = std::chrono::milliseconds(100);
    o.lock_timeout = std::chrono::milliseconds(3000);
    o.inline_appends = false;
    const long dead = dead_pid();
    asio::io_context io;
    lb::jsonl_store a(io.get_executor(), o), b(io.get_executor(), o);
    for (int round = 0; round < 12; ++round) {
        BOOST_TEST_CONTEXT("round " << round) {
            std::optional<lb::session> ca, cb;
            BOOST_REQUIRE(!a.get(k, {}, ca));
            BOOST_REQUIRE(!b.get(k, {}, cb));
            external_holder orphan(lock, record(dead, 1));
            age(lock, 3600);
            error_code ea, eb;
            std::int64_t sa = 0, sb = 0;
            std::thread ta([&] { ea = a.append(*ca, text_event("a"), sa); });
            std::thread tb([&] { eb = b.append(*cb, text_event("b"), sb); });
            ta.join();
            tb.join();
            BOOST_TEST(((!ea) != (!eb)));
            BOOST_TEST((ea == lb::errc::stale_session || eb == lb::errc::stale_session));
        }
    }
    std::optional<lb::session> g;
    BOOST_REQUIRE(!a.get(k, {}, g));
    BOOST_TEST(g->last_sequence == 13);
    for (std::size_t i = 0; i < g->events.size(); ++i) BOOST_TEST(g->events[i].sequence == static_cast<std::int64_t>(i + 1));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(jsonl_store_behaviour)

BOOST_AUTO_TEST_CASE(invalid_ids_create_nothing) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    const std::vector<std::string> bad{"",  "..", "a/b", "../x", std::string("a\0b", 3), std::string(129, 'x'), ".",
                                       "a\xff", "\xc3", "x\xed\xa0\x80"};
    for (const auto& id : bad) {
        BOOST_TEST_CONTEXT("id of " << id.size() << " bytes") {
            lb::session s;
            lb::create_options co;
            co.app_name = id;
            co.user_id = "u";
            co.session_id = "s";
            BOOST_TEST(st.create(co, s) == lb::errc::invalid_argument);
            co.app_name = "app";
            co.user_id = id;
            BOOST_TEST(st.create(co, s) == lb::errc::invalid_argument);
            co.user_id = "u";
            co.session_id = id;
            if (!id.empty()) BOOST_TEST(st.create(co, s) == lb::errc::invalid_argument);
            const lb::session_key k{"app", "u", id};
            std::optional<lb::session> g;
            BOOST_TEST(st.get(k, {}, g) == lb::errc::invalid_argument);
            BOOST_TEST(st.remove(k) == lb::errc::invalid_argument);
            BOOST_TEST(st.flush(k) == lb::errc::invalid_argument);
        }
    }
    // Nothing was created, inside the directory or next to it.
    BOOST_TEST(!fs::exists(d.path / "apps"));
    BOOST_TEST(!fs::exists(d.path.parent_path() / "x"));
}

BOOST_AUTO_TEST_CASE(a_refused_id_is_named_with_its_reason) {
    // id_problem, the reason every store reports.
    const std::vector<std::pair<std::string, std::string>> cases{
        {"ok-id", ""},
        {"", "is empty"},
        {"a/b", "'a/b' contains a path separator ('/' or '\\')"},
        {"a\\b", "'a\\b' contains a path separator ('/' or '\\')"},
        {"..", "'..' contains '..' (or is '.')"},
        {".", "'.' contains '..' (or is '.')"},
        {std::string(129, 'x'), "'" + std::string(40, 'x') + "...' is 129 bytes long (at most 128)"},
        {std::string("a\nb"), "contains a control character (0x0a at offset 1)"},
        {std::string("ab\0", 3), "contains a control character (0x00 at offset 2)"},
        {"ok\xff", "is not valid UTF-8 (byte 0xff at offset 2)"},
        {"caf\xc3\xa9", ""}, // "café": multi-byte UTF-8 is fine
        // validate_id checks in one pass: ".." anywhere, separators and control characters
        // after non-ASCII bytes, UTF-8 cut short at the end.
        {"a..b", "'a..b' contains '..' (or is '.')"},
        {"ab..", "'ab..' contains '..' (or is '.')"},
        {"a.b.c", ""},
        {".x", ""},
        {"x.", ""},
        {"\xc3\xa9/x", "'\xc3\xa9/x' contains a path separator ('/' or '\\')"},
        {"\xc3\xa9\x01", "contains a control character (0x01 at offset 2)"},
        {"ok\x7f", "contains a control character (0x7f at offset 2)"},
        {"ok\xc3", "is not valid UTF-8 (byte 0xc3 at offset 2)"},
    };
    for (const auto& [id, why] : cases) BOOST_TEST(lb::id_problem(id) == why);
    BOOST_TEST(lb::detail::key_problem("app", "u/1", "s") == "user id 'u/1' contains a path separator ('/' or '\\')");
    BOOST_TEST(lb::detail::key_problem("app", "u", "") == "session id is empty");
    BOOST_TEST(lb::detail::key_problem("app", "u", "s").empty());

    // jsonl_store's diagnostic names the id and the reason.
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u/1";
    co.session_id = "s";
    lb::session s;
    lb::diagnostics diag;
    BOOST_TEST(st.create(co, s, &diag) == lb::errc::invalid_argument);
    BOOST_TEST(diag.message() == "jsonl_store: invalid argument (user id 'u/1' contains a path separator ('/' or '\\'))");
    std::optional<lb::session> g;
    BOOST_TEST(st.get(lb::session_key{"app", "u", ".."}, {}, g, &diag) == lb::errc::invalid_argument);
    BOOST_TEST(diag.message() == "jsonl_store: invalid argument (session id '..' contains '..' (or is '.'))");
    lb::list_options lo;
    lo.app_name = "a\x01";
    lb::list_page page;
    BOOST_TEST(st.list(lo, page, &diag) == lb::errc::invalid_argument);
    BOOST_TEST(diag.message() == "jsonl_store: invalid argument (app name contains a control character (0x01 at offset 1))");
}

// An append that finds the session's lock held by this store (the lease after an append)
// runs on the caller's thread: a coroutine's co_await (use_awaitable, as_tuple of it) then
// resumes without suspending; a callback token still completes through a post. The first
// append, which takes the lock, goes through the pool; so does every append with
// inline_appends off. Same events and sequences either way.
BOOST_AUTO_TEST_CASE(appends_under_a_held_lock_complete_at_once_for_coroutines) {
    for (const bool inline_appends : {true, false}) {
        BOOST_TEST_CONTEXT("inline_appends " << inline_appends) {
            temp_dir d;
            asio::io_context io;
            auto o = opts(d.path);
            o.lock_linger = std::chrono::seconds(30); // the lease outlives the test's steps
            o.inline_appends = inline_appends;
            lb::jsonl_store st(io.get_executor(), o);
            std::exception_ptr failure;
            bool done = false;
            auto body = [&]() -> asio::awaitable<void> {
                lb::create_options co;
                co.app_name = "app";
                co.user_id = "u";
                co.session_id = "s";
                auto create = st.async_create(co, asio::use_awaitable);
                lb::session s = co_await std::move(create);
                auto first = st.async_append(s, text_event("one"), asio::use_awaitable);
                const std::int64_t a = co_await std::move(first); // takes the lock on the pool
                BOOST_TEST(a == 1);

                auto posted_ran = std::make_shared<bool>(false);
                asio::post(io, [posted_ran] { *posted_ran = true; });
                auto second = st.async_append(s, text_event("two"), asio::use_awaitable);
                BOOST_TEST(s.events.size() == 1u); // lazy: nothing before the co_await
                const std::int64_t b = co_await std::move(second);
                BOOST_TEST(b == 2);
                auto third = st.async_append(s, text_event("three"), asio::as_tuple(asio::use_awaitable));
                auto [ec, c] = co_await std::move(third);
                BOOST_TEST(!ec);
                BOOST_TEST(c == 3);
                lb::session stale = s;
                stale.last_sequence = 1;
                auto late = st.async_append(stale, text_event("late"), asio::as_tuple(asio::use_awaitable));
                auto [ec_late, n_late] = co_await std::move(late);
                BOOST_TEST(ec_late == lb::errc::stale_session);
                BOOST_TEST(n_late == 0);
                BOOST_TEST(*posted_ran == !inline_appends); // inline: not one suspension

                bool completed = false;
                st.async_append(s, text_event("four"), [&](error_code e, std::int64_t n) {
                    BOOST_TEST(!e);
                    BOOST_TEST(n == 4);
                    completed = true;
                });
                BOOST_TEST(!completed); // never inside the initiation
                asio::steady_timer t(io, std::chrono::milliseconds(20));
                co_await t.async_wait(asio::use_awaitable);
                BOOST_TEST(completed);
                BOOST_TEST(s.last_sequence == 4);
            };
            asio::co_spawn(io, body(), [&](std::exception_ptr ep) {
                failure = ep;
                done = true;
            });
            io.run();
            BOOST_REQUIRE(done);
            if (failure) std::rethrow_exception(failure);
            std::optional<lb::session> g;
            BOOST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
            BOOST_REQUIRE(g);
            BOOST_REQUIRE(g->events.size() == 4u);
            BOOST_TEST(g->events[3].text() == "four");
        }
    }
}

BOOST_AUTO_TEST_CASE(context_only_reads_only_the_ranges_the_view_needs) {
    temp_dir d;
    const lb::session_key k{"app", "u", "long"};
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        lb::create_options co;
        co.app_name = k.app_name;
        co.user_id = k.user_id;
        co.session_id = k.session_id;
        lb::session s;
        BOOST_REQUIRE(!st.create(co, s));
        std::int64_t seq = 0;
        for (int i = 1; i <= 1000; ++i) {
            auto e = text_event("event " + std::to_string(i));
            if (i == 600) e.actions.compaction = lb::event_compaction{1, 400, 0, 0, "old", 400};
            if (i == 900) e.actions.compaction = lb::event_compaction{700, 850, 0, 0, "newest", 151};
            BOOST_REQUIRE(!st.append(s, std::move(e), seq));
        }
        BOOST_REQUIRE(!st.flush(k)); // checkpoint
    }
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    auto bytes = read_bytes(tp);
    auto lines = line_offsets(bytes); // lines[s] is the line of sequence s
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    lb::get_options o;
    o.context_only = true;
    std::optional<lb::session> g;
    // Both summaries are shown: read 401..699 (with 600) and 851..1000 (with 900).
    BOOST_REQUIRE(!st.get(k, o, g));
    BOOST_REQUIRE_EQUAL(g->events.size(), 449u);
    BOOST_TEST(g->events.front().sequence == 401);
    BOOST_TEST(g->events[298].sequence == 699);
    BOOST_TEST(g->events[299].sequence == 851);
    BOOST_TEST(g->last_sequence == 1000);
    auto stats = st.last_read_stats();
    BOOST_TEST(stats.file_bytes == bytes.size());
    BOOST_TEST(stats.scanned_bytes == 0u);        // the checkpoint (with the summaries) was current
    BOOST_TEST(stats.parse_offset == lines[401]); // decoding starts at sequence 401
    BOOST_TEST(stats.read_offset == lines[385]);  // the offset mark at or before it
    // Each range from the mark before it to the mark after it: 385..704, then 833..1000.
    BOOST_TEST(stats.bytes_read == (lines[705] - lines[385]) + (bytes.size() - lines[833]));
    BOOST_TEST(stats.events_decoded == 449u);
    // num_recent_events reads only the tail too.
    o = {};
    o.num_recent_events = 10;
    BOOST_REQUIRE(!st.get(k, o, g));
    BOOST_TEST(g->events.size() == 10u);
    stats = st.last_read_stats();
    BOOST_TEST(stats.parse_offset == lines[991]);
    BOOST_TEST(stats.read_offset == lines[961]);
    // A rolling summary of 1..995 (it subsumes both): the summary and the 5 events before it.
    {
        o = {};
        BOOST_REQUIRE(!st.get(k, o, g));
        auto c = text_event("rolled");
        c.actions.compaction = lb::event_compaction{1, 995, 0, 0, "everything so far", 993};
        std::int64_t seq = 0;
        BOOST_REQUIRE(!st.append(*g, std::move(c), seq));
        BOOST_REQUIRE(!st.append(*g, text_event("after"), seq));
        BOOST_REQUIRE(!st.flush(k));
    }
    bytes = read_bytes(tp);
    lines = line_offsets(bytes);
    o = {};
    o.context_only = true;
    BOOST_REQUIRE(!st.get(k, o, g));
    BOOST_REQUIRE_EQUAL(g->events.size(), 7u); // 996..1000, the summary 1001, 1002
    BOOST_TEST(g->events.front().sequence == 996);
    BOOST_TEST(g->events[5].is_compaction());
    stats = st.last_read_stats();
    BOOST_TEST(stats.parse_offset == lines[996]);
    BOOST_TEST(stats.bytes_read == bytes.size() - lines[961]);
    // Without the checkpoint, opening scans the transcript once (and finds the summaries);
    // the read is the same.
    fs::remove(session_path(d.path, k) / "meta.json");
    lb::jsonl_store cold(io.get_executor(), opts(d.path));
    BOOST_REQUIRE(!cold.get(k, o, g));
    BOOST_TEST(g->events.size() == 7u);
    stats = cold.last_read_stats();
    BOOST_TEST(stats.scanned_bytes > 0u);
    BOOST_TEST(stats.parse_offset == lines[996]);
    BOOST_TEST(fs::exists(session_path(d.path, k) / "meta.json")); // written back by the scan
    // The checkpoint keeps the shown summaries; one of an earlier version (without them) is
    // not trusted: the next store rescans, and reads the same.
    const fs::path meta = session_path(d.path, k) / "meta.json";
    auto cp = lb::detail::jsonl::parse_meta(read_bytes(meta));
    BOOST_REQUIRE(cp.has_value());
    BOOST_REQUIRE_EQUAL(cp->shown.items().size(), 1u);
    BOOST_TEST((cp->shown.items().front() == lb::detail::compaction_entry{1001, 1, 995}));
    {
        std::string text = read_bytes(meta);
        text.pop_back();
        auto old = lb::json::parse(text).as_object();
        old.erase("compactions");
        old.erase("crc32c");
        std::string line = lb::json::serialize(old);
        lb::detail::jsonl::frame_line(line);
        BOOST_TEST(!lb::detail::jsonl::parse_meta(line).has_value());
        write_bytes(meta, line);
    }
    lb::jsonl_store upgraded(io.get_executor(), opts(d.path));
    BOOST_REQUIRE(!upgraded.get(k, o, g));
    BOOST_TEST(g->events.size() == 7u);
    BOOST_TEST(upgraded.last_read_stats().scanned_bytes > 0u);
}

// Reads over 1 MiB are decoded on several threads, 8 MiB at a time: the events come back in
// order across chunk and thread boundaries, and damage found by any thread is reported
// with its own line.
BOOST_AUTO_TEST_CASE(large_reads_decode_in_parallel_and_in_chunks) {
    temp_dir d;
    const lb::session_key k{"app", "u", "big"};
    auto o = opts(d.path);
    o.load_threads = 3;
    const int n = 2050; // ~4.2 KB each: ~8.7 MB, two chunks
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), o);
        lb::create_options co;
        co.app_name = k.app_name;
        co.user_id = k.user_id;
        co.session_id = k.session_id;
        lb::session s;
        BOOST_REQUIRE(!st.create(co, s));
        std::int64_t seq = 0;
        for (int i = 1; i <= n; ++i) {
            BOOST_REQUIRE(!st.append(s, text_event(std::to_string(i) + std::string(4200, 'p')), seq));
            s.events.clear();
        }
    }
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    BOOST_REQUIRE(fs::file_size(tp) > (8u << 20));
    asio::io_context io;
    {
        lb::jsonl_store st(io.get_executor(), o);
        std::optional<lb::session> g;
        BOOST_REQUIRE(!st.get(k, {}, g));
        BOOST_REQUIRE_EQUAL(g->events.size(), static_cast<std::size_t>(n));
        bool ordered = true;
        for (int i = 0; i < n; ++i)
            ordered = ordered && g->events[i].sequence == i + 1 && g->events[i].text().starts_with(std::to_string(i + 1) + "p");
        BOOST_TEST(ordered);
    }
    // Damage in the part of the first chunk that the third thread decodes.
    const std::string orig = read_bytes(tp);
    const auto lines = line_offsets(orig);
    for (int bad_seq : {1700}) {
        BOOST_TEST_CONTEXT("sequence " << bad_seq) {
            std::string bad = orig;
            bad[lines[bad_seq] + 100] ^= 0x01;
            write_bytes(tp, bad);
            lb::jsonl_store st(io.get_executor(), o);
            std::optional<lb::session> g;
            lb::get_options go;
            go.from_sequence = 2; // the checkpoint is current: nothing is scanned at open
            lb::diagnostics diag;
            BOOST_TEST(st.get(k, go, g, &diag) == lb::errc::corrupt_data);
            // Line 1701 (sequence 1700 after the header), at that line's first byte.
            const std::string where = tp.string() + ":1701 (byte " + std::to_string(lines[bad_seq]) + "): ";
            BOOST_TEST(diag.message().find(where) != std::string::npos, diag.message());
        }
    }
    write_bytes(tp, orig);
}

BOOST_AUTO_TEST_CASE(oversize_event_is_rejected_and_nothing_written) {
    temp_dir d;
    auto o = opts(d.path);
    o.max_event_bytes = 512;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), o);
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u";
    co.session_id = "s";
    lb::session s;
    BOOST_REQUIRE(!st.create(co, s));
    const fs::path tp = session_path(d.path, {"app", "u", "s"}) / "transcript.jsonl";
    const auto size = fs::file_size(tp);
    std::int64_t seq = 0;
    auto big = text_event(std::string(1000, 'x'));
    big.actions.state_delta["k"] = 1;
    lb::diagnostics diag;
    BOOST_TEST(st.append(s, big, seq, &diag) == lb::errc::oversize);
    BOOST_TEST(fs::file_size(tp) == size);
    // The diagnostic names the transcript, the event, its size and the limit.
    BOOST_TEST(diag.message().find("jsonl_store: " + tp.string() + ": input exceeds the size limit (event " + big.id +
                                   " ") == 0u,
               diag.message());
    BOOST_TEST(diag.message().find("over max_event_bytes (512)") != std::string::npos, diag.message());
    BOOST_TEST(s.events.empty());
    BOOST_TEST(!s.state.contains("k"));
    BOOST_TEST(s.last_sequence == 0);
    BOOST_TEST(!st.append(s, text_event("small"), seq));
    BOOST_TEST(seq == 1);
    // The default limit is 16 MiB.
    lb::jsonl_store def(io.get_executor(), opts(d.path));
    BOOST_TEST(def.options().max_event_bytes == 16u * 1024 * 1024);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!def.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(def.append(*g, text_event(std::string(16u * 1024 * 1024, 'y')), seq) == lb::errc::oversize);
    BOOST_TEST(g->last_sequence == 1);
}

/// The session's texts and its state key "k", as a reopened store reads them.
std::pair<std::vector<std::string>, boost::json::value> reread(const fs::path& root, const lb::session_key& k) {
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(root));
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    BOOST_REQUIRE(g);
    BOOST_TEST(st.recoveries().empty()); // nothing torn was left behind
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < g->events.size(); ++i) texts.push_back(g->events[i].text());
    const boost::json::value* v = g->state.if_contains("k");
    return {texts, v ? *v : boost::json::value()};
}

// per_event acknowledges an append once it is on disk. When the fdatasync fails, the line
// is taken back: the error names the sync, nothing of the event stays (file, sequence,
// state), and the next append follows the last acknowledged event.
BOOST_AUTO_TEST_CASE(a_failed_sync_takes_the_event_back) {
    temp_dir d;
    const auto k = make_session(d.path, 2, lb::durability::per_event);
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path, lb::durability::per_event));
    std::optional<lb::session> s;
    BOOST_REQUIRE(!st.get(k, {}, s));
    BOOST_REQUIRE(s);
    const auto size = fs::file_size(tp);
    struct unhook {
        ~unhook() { lb::detail::jsonl::fdatasync_for_tests = nullptr; }
    } unhook_at_exit;
    static int syncs = 0;
    lb::detail::jsonl::fdatasync_for_tests = [](int) {
        ++syncs;
        errno = EIO;
        return -1;
    };
    std::int64_t seq = 0;
    auto e = text_event("not on disk");
    e.actions.state_delta["k"] = 99;
    lb::diagnostics diag;
    BOOST_TEST(st.append(*s, e, seq, &diag) == lb::errc::io_error);
    lb::detail::jsonl::fdatasync_for_tests = nullptr;
    BOOST_TEST(syncs == 1);
    BOOST_TEST(seq == 0);
    BOOST_TEST(fs::file_size(tp) == size);
    BOOST_TEST(diag.message().find("jsonl_store: " + tp.string() + ": I/O error (fdatasync (the event was taken back: not stored): ") == 0u,
               diag.message());
    BOOST_TEST(s->last_sequence == 2);
    BOOST_TEST(s->events.size() == 2u);
    BOOST_TEST(s->state.at("k").as_int64() == 2);
    // The same instance goes on from the last acknowledged event.
    BOOST_REQUIRE(!st.append(*s, text_event("next"), seq));
    BOOST_TEST(seq == 3);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    BOOST_TEST(g->last_sequence == 3);
    auto [texts, kv] = reread(d.path, k);
    BOOST_TEST(texts == (std::vector<std::string>{"e1", "e2", "next"}));
    BOOST_TEST(kv == boost::json::value(2));
}

// A write that fails part-way (here the file-size limit, EFBIG) is taken back too: no
// partial line stays for the next append to follow, and a reopen finds nothing torn.
BOOST_AUTO_TEST_CASE(a_failed_write_leaves_no_partial_line) {
    temp_dir d;
    const auto k = make_session(d.path, 2);
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    std::optional<lb::session> s;
    BOOST_REQUIRE(!st.get(k, {}, s));
    BOOST_REQUIRE(s);
    const auto size = fs::file_size(tp);
    rlimit old{};
    BOOST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN); // else the process is killed
    rlimit lim = old;
    lim.rlim_cur = static_cast<rlim_t>(size + 40); // room for 40 bytes of the line
    BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &lim) == 0);
    std::int64_t seq = 0;
    lb::diagnostics diag;
    const auto ec = st.append(*s, text_event(std::string(500, 'x')), seq, &diag);
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    BOOST_TEST(ec == lb::errc::io_error);
    BOOST_TEST(seq == 0);
    BOOST_TEST(fs::file_size(tp) == size);
    BOOST_TEST(diag.message().find("jsonl_store: " + tp.string() + ": I/O error (write (the event was not stored): ") == 0u,
               diag.message());
    BOOST_TEST(s->last_sequence == 2);
    BOOST_REQUIRE(!st.append(*s, text_event("next"), seq));
    BOOST_TEST(seq == 3);
    auto [texts, kv] = reread(d.path, k);
    BOOST_TEST(texts == (std::vector<std::string>{"e1", "e2", "next"}));
}

// A shared scope that cannot be written (here users/u/state.json is a directory) fails the
// append with io_error and takes the line back; the app: keys already written get their old
// values back (one was absent, one had a value). With the file writable again the same
// session copy appends: it was never advanced, and nothing was stored in between.
BOOST_AUTO_TEST_CASE(a_failed_shared_scope_write_takes_the_event_back) {
    temp_dir d;
    const auto k = make_session(d.path, 2);
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    const fs::path app_state = d.path / "apps" / "app" / "state.json";
    const fs::path user_state = d.path / "apps" / "app" / "users" / "u" / "state.json";
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    std::optional<lb::session> s;
    BOOST_REQUIRE(!st.get(k, {}, s));
    BOOST_REQUIRE(s);
    std::int64_t seq = 0;
    auto first = text_event("sets app:kept");
    first.actions.state_delta["app:kept"] = "old";
    BOOST_REQUIRE(!st.append(*s, std::move(first), seq));
    BOOST_REQUIRE_EQUAL(seq, 3);
    const std::string app_before = read_bytes(app_state);
    const auto size = fs::file_size(tp);

    fs::create_directories(user_state); // not a file: reading it fails
    auto e = text_event("not stored");
    e.actions.state_delta["app:kept"] = "new";
    e.actions.state_delta["app:added"] = 1;
    e.actions.state_delta["user:u1"] = true;
    e.actions.state_delta["k"] = 99;
    lb::diagnostics diag;
    BOOST_TEST(st.append(*s, e, seq, &diag) == lb::errc::io_error);
    BOOST_TEST(seq == 0);
    BOOST_TEST(fs::file_size(tp) == size);
    // The file that failed, then what became of the app: keys and of the event.
    BOOST_TEST(diag.message().find("jsonl_store: " + user_state.string() + ": I/O error (") == 0u, diag.message());
    BOOST_TEST(diag.message().find("): the app: keys were restored: the event was taken back: not stored") != std::string::npos,
               diag.message());
    const auto app_after = boost::json::parse(read_bytes(app_state)).as_object();
    BOOST_TEST(app_after.at("kept") == boost::json::value("old"));
    BOOST_TEST(!app_after.contains("added"));
    BOOST_TEST(s->last_sequence == 3);
    BOOST_TEST(s->state.at("k").as_int64() == 2);
    BOOST_TEST(!s->state.contains("app:added"));

    // The app scope failing first: nothing is written at all.
    fs::remove(user_state);
    fs::rename(app_state, d.path / "app-state.saved");
    fs::create_directories(app_state);
    BOOST_TEST(st.append(*s, e, seq) == lb::errc::io_error);
    BOOST_TEST(fs::file_size(tp) == size);
    BOOST_TEST(!fs::exists(user_state));
    fs::remove(app_state);
    fs::rename(d.path / "app-state.saved", app_state);
    BOOST_TEST(read_bytes(app_state) == app_before);

    BOOST_REQUIRE(!st.append(*s, std::move(e), seq));
    BOOST_TEST(seq == 4);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    BOOST_TEST(g->state.at("app:kept") == boost::json::value("new"));
    BOOST_TEST(g->state.at("app:added") == boost::json::value(1));
    BOOST_TEST(g->state.at("user:u1") == boost::json::value(true));
    auto [texts, kv] = reread(d.path, k);
    BOOST_TEST(texts == (std::vector<std::string>{"e1", "e2", "sets app:kept", "not stored"}));
    BOOST_TEST(kv == boost::json::value(99));
}

// create() with a shared scope that cannot be written creates nothing: the id is free for
// the next create, which succeeds once the scope is writable.
BOOST_AUTO_TEST_CASE(a_failed_shared_scope_write_creates_no_session) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    const fs::path user_state = d.path / "apps" / "app" / "users" / "u" / "state.json";
    fs::create_directories(user_state);
    lb::create_options co;
    co.app_name = "app";
    co.user_id = "u";
    co.session_id = "s";
    co.state["app:a"] = 1;
    co.state["user:b"] = 2;
    lb::session s;
    BOOST_TEST(st.create(co, s) == lb::errc::io_error);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
    BOOST_TEST(!g.has_value());
    const fs::path app_state = d.path / "apps" / "app" / "state.json";
    const bool app_key_left = fs::exists(app_state) && boost::json::parse(read_bytes(app_state)).as_object().contains("a");
    BOOST_TEST(!app_key_left);
    fs::remove(user_state);
    BOOST_REQUIRE(!st.create(co, s));
    BOOST_TEST(s.state.at("app:a") == boost::json::value(1));
    BOOST_TEST(s.state.at("user:b") == boost::json::value(2));
}

// Strings that are not UTF-8 (strict JSON readers reject them): refused on append, with
// nothing written; but lines an earlier version wrote with them read back as events.
BOOST_AUTO_TEST_CASE(invalid_utf8_event_is_refused_and_nothing_written) {
    temp_dir d;
    auto k = make_session(d.path, 3);
    const fs::path sdir = session_path(d.path, k);
    const fs::path tp = sdir / "transcript.jsonl";
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        std::optional<lb::session> g;
        BOOST_REQUIRE(!st.get(k, {}, g));
        BOOST_REQUIRE(g.has_value());
        const std::string before = read_bytes(tp);
        std::vector<lb::event> bad;
        bad.push_back(text_event("bad \xff text"));
        bad.push_back(text_event("ok"));
        bad.back().actions.state_delta["k\xc0\xaf"] = 1;
        bad.push_back(text_event("ok"));
        bad.back().id = "id\xed\xa0\x80";
        bad.push_back(text_event("truncated at the end \xe2\x82"));
        lb::diagnostics diag;
        for (std::size_t i = 0; i < bad.size(); ++i) {
            BOOST_TEST_CONTEXT("event " << i) {
                const std::string id = bad[i].id;
                std::int64_t seq = -1;
                BOOST_TEST(st.append(*g, bad[i], seq, &diag) == lb::errc::invalid_argument);
                BOOST_TEST(read_bytes(tp) == before); // not a byte written
                BOOST_TEST(g->last_sequence == 3);
                BOOST_TEST(g->events.size() == 3u);
                BOOST_TEST(!g->state.contains("k\xc0\xaf"));
                const std::string& m = diag.message();
                BOOST_TEST(m.find("jsonl_store: " + tp.string() + ": invalid argument (") == 0u, m);
                BOOST_TEST(m.find("not valid UTF-8") != std::string::npos, m);
                if (i == 2) BOOST_TEST(m.find("id is not valid UTF-8") != std::string::npos, m);
                else BOOST_TEST(m.find("(event " + id + ":") != std::string::npos, m);
            }
        }
        BOOST_TEST(diag.message().find("(byte 0xe2 at offset 21)") != std::string::npos, diag.message());
        // Through the asynchronous path (inline, since this store holds the lock) too.
        auto last = bad[0];
        bool done = false;
        lb::diagnostics async_diag;
        st.async_append(*g, last, async_diag, [&](error_code ec, std::int64_t) {
            BOOST_TEST(ec == lb::errc::invalid_argument);
            BOOST_TEST(async_diag.message().find("(byte 0xff at offset 4)") != std::string::npos, async_diag.message());
            done = true;
        });
        io.run();
        BOOST_TEST(done);
        BOOST_TEST(read_bytes(tp) == before);
        std::int64_t seq = 0;
        BOOST_TEST(!st.append(*g, text_event("e4 \xc3\xa9\xf0\x9f\x8e\xb5"), seq));
        BOOST_TEST(seq == 4);
    }
    // Reopened: every acknowledged event, nothing recovered or moved aside.
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get(k, {}, g));
    BOOST_REQUIRE(g.has_value());
    BOOST_TEST(g->last_sequence == 4);
    BOOST_REQUIRE_EQUAL(g->events.size(), 4u);
    BOOST_TEST((g->events[3].content == lb::content::from_text("e4 \xc3\xa9\xf0\x9f\x8e\xb5")));
    BOOST_TEST(st.recoveries().empty());
    BOOST_TEST(side_files(sdir).empty());
}

namespace {

/// The line an earlier version wrote for `e`: its bytes as they are, framed.
std::string old_line(lb::event e, std::int64_t seq) {
    e.sequence = seq;
    e.session_id = "s";
    std::string line = lb::serialize_event(e);
    lb::detail::jsonl::frame_line(line);
    return line;
}

} // namespace

BOOST_AUTO_TEST_CASE(invalid_utf8_written_by_an_earlier_version_reads_back) {
    const std::string bad_text = "older \xff version \xed\xa0\x80 wrote \xc3";
    auto bad_event = [&] {
        auto e = text_event(bad_text, 2000.5);
        e.actions.state_delta["k"] = "v\xfe";
        e.metadata["m\xc1"] = 1;
        return e;
    };
    for (const bool last : {true, false}) {
        for (const bool with_meta : {true, false}) {
            BOOST_TEST_CONTEXT((last ? "last line" : "middle line") << (with_meta ? ", checkpoint" : ", no checkpoint")) {
                temp_dir d;
                auto k = make_session(d.path, 3);
                const fs::path sdir = session_path(d.path, k);
                const fs::path tp = sdir / "transcript.jsonl";
                {
                    const std::string line = old_line(bad_event(), 4);
                    // The store's fast decoder takes it as well (no detour through parse_event).
                    lb::event fast;
                    BOOST_TEST(lb::detail::jsonl::fast_decode_event(std::string_view(line).substr(0, line.size() - 1), fast));
                    BOOST_TEST(fast.content.parts.size() == 1u);
                    std::ofstream f(tp, std::ios::binary | std::ios::app);
                    f << line;
                    if (!last) f << old_line(text_event("e5", 2001.5), 5);
                }
                if (!with_meta) fs::remove(sdir / "meta.json");
                const std::string bytes = read_bytes(tp);
                const std::int64_t n = last ? 4 : 5;
                asio::io_context io;
                lb::jsonl_store st(io.get_executor(), opts(d.path));
                std::optional<lb::session> g;
                BOOST_REQUIRE(!st.get(k, {}, g));
                BOOST_REQUIRE(g.has_value());
                BOOST_TEST(g->last_sequence == n);
                BOOST_REQUIRE_EQUAL(g->events.size(), static_cast<std::size_t>(n));
                BOOST_TEST((g->events[3].content == lb::content::from_text(bad_text)));
                BOOST_TEST(g->events[3].metadata.contains("m\xc1"));
                BOOST_TEST(g->state.at("k").as_string() == "v\xfe");
                BOOST_TEST(st.recoveries().empty()); // not torn
                BOOST_TEST(side_files(sdir).empty());
                BOOST_TEST(read_bytes(tp) == bytes);
                std::int64_t seq = 0;
                BOOST_TEST(!st.append(*g, text_event("after"), seq));
                BOOST_TEST(seq == n + 1);
                // And once more from the start, through the checkpoint this open wrote.
                lb::jsonl_store again(io.get_executor(), opts(d.path));
                std::optional<lb::session> h;
                BOOST_REQUIRE(!again.get(k, {}, h));
                BOOST_REQUIRE(h.has_value());
                BOOST_TEST(h->last_sequence == n + 1);
                BOOST_TEST(again.recoveries().empty());
            }
        }
    }
}

// A framed line (its CRC right) that claims the smallest sequence there is and carries a
// compaction: read as what it is, a line out of order, without computing "sequence - 1"
// (signed overflow: UBSan stops the clang preset's run).
BOOST_AUTO_TEST_CASE(a_line_with_the_smallest_sequence_is_out_of_order) {
    temp_dir d;
    auto k = make_session(d.path, 3);
    const fs::path tp = session_path(d.path, k) / "transcript.jsonl";
    {
        lb::event e = text_event("summary", 2000.5);
        lb::event_compaction c;
        c.first_sequence = 1;
        c.last_sequence = 2;
        c.summary = "summary";
        e.actions.compaction = c;
        std::ofstream f(tp, std::ios::binary | std::ios::app);
        f << old_line(e, std::numeric_limits<std::int64_t>::min());
    }
    fs::remove(session_path(d.path, k) / "meta.json"); // read from the start
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    std::optional<lb::session> g;
    lb::diagnostics why;
    // The last line, so it is the torn tail: moved to a side file and reported.
    BOOST_REQUIRE_MESSAGE(!st.get(k, {}, g, &why), why.message());
    BOOST_REQUIRE(g.has_value());
    BOOST_TEST(g->events.size() == 3u);
    BOOST_TEST(g->last_sequence == 3);
    BOOST_REQUIRE_EQUAL(st.recoveries().size(), 1u);
    BOOST_TEST(st.recoveries()[0].reason == "sequence -9223372036854775808 where 4 was expected");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_in_create_state_reads_back) {
    // Initial state goes into the header line. This version refuses a string that is not
    // UTF-8 there (json_limits.hpp); an earlier one wrote it as it was, and that header must
    // still read.
    temp_dir d;
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        lb::create_options bad{"app", "u", "s", {}};
        bad.state["k\xff"] = "v\xc0";
        lb::session s;
        lb::diagnostics diag;
        BOOST_TEST((st.create(bad, s, &diag) == lb::errc::invalid_argument));
        BOOST_TEST(diag.message().find("initial state: string is not valid UTF-8 (byte 0xff at offset 1)") !=
                       std::string::npos,
                   diag.message());
        BOOST_TEST(!fs::exists(session_path(d.path, {"app", "u", "s"}) / "transcript.jsonl"));
        lb::create_options co{"app", "u", "s", {}};
        co.state["k"] = "v";
        BOOST_REQUIRE(!st.create(co, s));
    }
    {
        // The header as the earlier version wrote it.
        const fs::path t = session_path(d.path, {"app", "u", "s"}) / "transcript.jsonl";
        std::ifstream in(t, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        in.close();
        const std::size_t nl = text.find('\n');
        std::string why;
        auto h = lb::detail::jsonl::parse_header(std::string_view(text).substr(0, nl), why);
        BOOST_REQUIRE(h.has_value());
        h->state.clear();
        h->state["k\xff"] = "v\xc0";
        std::ofstream out(t, std::ios::binary | std::ios::trunc);
        out << lb::detail::jsonl::header_line(*h) << text.substr(nl + 1);
    }
    for (const bool with_meta : {false}) {
        if (!with_meta) fs::remove(session_path(d.path, {"app", "u", "s"}) / "meta.json");
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        std::optional<lb::session> g;
        BOOST_REQUIRE(!st.get({"app", "u", "s"}, {}, g));
        BOOST_REQUIRE(g.has_value());
        BOOST_TEST(g->state.at("k\xff").as_string() == "v\xc0");
    }
}

BOOST_AUTO_TEST_CASE(flush_and_durability_levels) {
    for (auto level : {lb::durability::none, lb::durability::per_turn, lb::durability::per_event}) {
        temp_dir d;
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path, level));
        lb::create_options co;
        co.app_name = "app";
        co.user_id = "u";
        co.session_id = "s";
        lb::session s;
        BOOST_REQUIRE(!st.create(co, s));
        error_code fec = lb::errc::invalid_argument;
        std::int64_t seq = 0;
        auto run = [&]() -> asio::awaitable<void> {
            lb::event e = text_event("turn");
            e.actions.state_delta["user:lang"] = "nb";
            auto op = st.async_append(s, std::move(e), asio::use_awaitable);
            seq = co_await std::move(op);
            lb::session_key k{"app", "u", "s"};
            auto f = st.async_flush(std::move(k), asio::as_tuple(asio::use_awaitable));
            auto [ec] = co_await std::move(f);
            fec = ec;
        };
        asio::co_spawn(io, run(), asio::detached);
        io.run();
        BOOST_TEST(seq == 1);
        BOOST_TEST(!fec);
        BOOST_TEST(st.flush({"app", "u", "nope"}) == lb::errc::not_found);
        // A second instance sees the event and the shared state.
        lb::jsonl_store other(io.get_executor(), opts(d.path, level));
        std::optional<lb::session> g;
        BOOST_REQUIRE(!other.get({"app", "u", "s"}, {}, g));
        BOOST_TEST(g->events.size() == 1u);
        BOOST_TEST(g->state.at("user:lang").as_string() == "nb");
    }
}

BOOST_AUTO_TEST_CASE(async_operations_complete_on_the_callers_executor) {
    temp_dir d;
    asio::io_context io;
    asio::thread_pool blocking(1);
    auto o = opts(d.path);
    o.blocking_executor = blocking.get_executor();
    lb::jsonl_store st(io.get_executor(), o);
    const auto io_thread = std::this_thread::get_id();
    int checked = 0;
    auto run = [&]() -> asio::awaitable<void> {
        lb::create_options co;
        co.app_name = "app";
        co.user_id = "u";
        auto op = st.async_create(std::move(co), asio::use_awaitable);
        auto s = co_await std::move(op);
        BOOST_TEST((std::this_thread::get_id() == io_thread));
        for (int i = 0; i < 50; ++i) {
            lb::event e = text_event("x");
            auto a = st.async_append(s, std::move(e), asio::use_awaitable);
            co_await std::move(a);
            BOOST_TEST((std::this_thread::get_id() == io_thread));
            ++checked;
        }
        lb::session_key k{s.app_name, s.user_id, s.id};
        lb::get_options go;
        auto g = st.async_get(std::move(k), std::move(go), asio::use_awaitable);
        auto got = co_await std::move(g);
        BOOST_TEST(got->events.size() == 50u);
    };
    asio::co_spawn(io, run(), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
    });
    io.run();
    BOOST_TEST(checked == 50);
    blocking.join();
}

BOOST_AUTO_TEST_CASE(list_sees_other_instances_and_keeps_the_index) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store a(io.get_executor(), opts(d.path));
    lb::jsonl_store b(io.get_executor(), opts(d.path));
    std::vector<lb::session> ss(3);
    for (int i = 0; i < 3; ++i) {
        lb::create_options co;
        co.app_name = "app";
        co.user_id = "u";
        co.session_id = "s" + std::to_string(i);
        BOOST_REQUIRE(!a.create(co, ss[i]));
        std::int64_t seq = 0;
        BOOST_REQUIRE(!a.append(ss[i], text_event("x", 100 + i), seq));
    }
    lb::list_options lo;
    lo.app_name = "app";
    lb::list_page p;
    BOOST_REQUIRE(!a.list(lo, p));
    BOOST_REQUIRE_EQUAL(p.sessions.size(), 3u);
    BOOST_TEST(p.sessions[0].id == "s2");
    BOOST_TEST(fs::exists(d.path / "apps" / "app" / "index.json"));
    // b appends to the oldest: a's next listing sees it first.
    std::optional<lb::session> g;
    BOOST_REQUIRE(!b.get({"app", "u", "s0"}, {}, g));
    std::int64_t seq = 0;
    BOOST_REQUIRE(!b.append(*g, text_event("y", 200), seq));
    BOOST_REQUIRE(!a.list(lo, p));
    BOOST_TEST(p.sessions[0].id == "s0");
    BOOST_TEST(p.sessions[0].last_update_time == 200.0);
    // A session deleted through b disappears from a's listing.
    BOOST_REQUIRE(!b.remove({"app", "u", "s1"}));
    BOOST_REQUIRE(!a.list(lo, p));
    BOOST_TEST(p.sessions.size() == 2u);
    // The index lists what a listing found.
    auto idx = boost::json::parse(read_bytes(d.path / "apps" / "app" / "index.json")).as_object();
    BOOST_TEST(idx.at("sessions").as_array().size() == 2u);
}

// A compaction another tool wrote with a bad range or an empty summary covers nothing: the
// store's context load reads the events it claims to cover, the context view ignores it
// and says why, whether the store learns of it from its checkpoint or from a scan.
BOOST_AUTO_TEST_CASE(bad_compactions_written_by_another_tool_hide_nothing) {
    for (const bool with_meta : {true, false}) {
        BOOST_TEST_CONTEXT((with_meta ? "checkpoint" : "no checkpoint")) {
            temp_dir d;
            auto k = make_session(d.path, 5);
            const fs::path sdir = session_path(d.path, k);
            {
                auto bad = [](std::int64_t first, std::int64_t last, std::string summary) {
                    auto e = text_event("");
                    e.actions.compaction = lb::event_compaction{first, last, 0, 0, std::move(summary), 1};
                    return e;
                };
                std::ofstream f(sdir / "transcript.jsonl", std::ios::binary | std::ios::app);
                f << old_line(bad(5, 2, "reversed"), 6);
                f << old_line(bad(1, 9, "past its own event"), 7);
                f << old_line(bad(1, 5, " "), 8);
                f << old_line(bad(0, 5, "before 1"), 9);
                f << old_line(bad(2, 3, "a good one"), 10);
                f << old_line(text_event("e11"), 11);
            }
            if (with_meta) {
                asio::io_context io; // scans the new lines once, then checkpoints them
                lb::jsonl_store st(io.get_executor(), opts(d.path));
                std::optional<lb::session> g;
                BOOST_REQUIRE(!st.get(k, {}, g));
                BOOST_REQUIRE(!st.flush(k));
            } else {
                fs::remove(sdir / "meta.json");
            }
            asio::io_context io;
            lb::jsonl_store st(io.get_executor(), opts(d.path));
            lb::get_options o;
            o.context_only = true;
            std::optional<lb::session> g;
            BOOST_REQUIRE(!st.get(k, o, g));
            std::vector<std::int64_t> seqs;
            for (const auto& e : g->events) seqs.push_back(e.sequence);
            // Only 2..3 is covered: 1, 4..11 are read (the bad ones among them).
            BOOST_TEST(seqs == (std::vector<std::int64_t>{1, 4, 5, 6, 7, 8, 9, 10, 11}), boost::test_tools::per_element());
            auto view = lb::make_context_view(g->events);
            BOOST_REQUIRE_EQUAL(view.ignored_compactions().size(), 4u);
            BOOST_TEST(view.ignored_compactions()[0].reason.find("reversed") != std::string::npos);
            BOOST_TEST(view.ignored_compactions()[1].reason.find("last_sequence 9") != std::string::npos);
            BOOST_TEST(view.ignored_compactions()[2].reason.find("summary") != std::string::npos);
            BOOST_TEST(view.ignored_compactions()[3].reason.find("first_sequence is 0") != std::string::npos);
            std::vector<std::string> texts;
            for (const auto& e : view) texts.push_back(e.text());
            BOOST_REQUIRE_EQUAL(texts.size(), 5u); // e1, the summary of 2..3, e4, e5, e11
            BOOST_TEST(texts[0] == "e1");
            BOOST_TEST(texts[1].find("a good one") != std::string::npos);
            BOOST_TEST(texts[4] == "e11");
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(jsonl_maintenance)

// Ten sessions, last updated at 100 .. 109.
void populate(lb::jsonl_store& st) {
    for (int i = 0; i < 10; ++i) {
        lb::create_options co;
        co.app_name = i < 8 ? "app" : "other";
        co.user_id = "u" + std::to_string(i % 2);
        co.session_id = "s" + std::to_string(i);
        lb::session s;
        BOOST_REQUIRE(!st.create(co, s));
        std::int64_t seq = 0;
        BOOST_REQUIRE(!st.append(s, text_event(std::string(200 * (i + 1), 'x'), 100.0 + i), seq));
    }
}

std::vector<std::string> ids(const std::vector<lb::jsonl_removal>& r) {
    std::vector<std::string> out;
    for (const auto& x : r) out.push_back(x.key.session_id);
    return out;
}

std::size_t count_sessions(lb::jsonl_store& st) {
    std::size_t n = 0;
    for (const char* app : {"app", "other"}) {
        lb::list_options lo;
        lo.app_name = app;
        lb::list_page p;
        BOOST_REQUIRE(!st.list(lo, p));
        n += p.sessions.size();
    }
    return n;
}

/// A dry run, then the real run: both must report the same removals.
lb::jsonl_maintenance_report dry_then_real(lb::jsonl_store& st, lb::jsonl_maintenance_options o) {
    lb::jsonl_maintenance_report dry, real;
    o.dry_run = true;
    BOOST_REQUIRE(!st.maintain(o, dry));
    const auto before = count_sessions(st);
    BOOST_TEST(before == dry.sessions_before); // a dry run removes nothing
    o.dry_run = false;
    BOOST_REQUIRE(!st.maintain(o, real));
    BOOST_TEST(dry.dry_run);
    BOOST_TEST(!real.dry_run);
    BOOST_TEST(ids(dry.removed) == ids(real.removed), boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(dry.removed.size(), real.removed.size());
    for (std::size_t i = 0; i < dry.removed.size(); ++i) BOOST_TEST(dry.removed[i].reason == real.removed[i].reason);
    BOOST_TEST(ids(dry.removed).size() + dry.busy.size() == ids(real.removed).size() + real.busy.size());
    BOOST_TEST(count_sessions(st) == real.sessions_after);
    return real;
}

BOOST_AUTO_TEST_CASE(prunes_idle_sessions) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    populate(st);
    lb::jsonl_maintenance_options o;
    o.max_idle_seconds = 5;
    o.now = 110;
    auto r = dry_then_real(st, o);
    using v = std::vector<std::string>;
    BOOST_TEST(ids(r.removed) == (v{"s0", "s1", "s2", "s3", "s4"}), boost::test_tools::per_element());
    for (const auto& x : r.removed) BOOST_TEST(x.reason == "idle");
    BOOST_TEST(r.sessions_after == 5u);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!st.get({"app", "u0", "s0"}, {}, g));
    BOOST_TEST(!g.has_value());
}

BOOST_AUTO_TEST_CASE(keeps_at_most_n_sessions) {
    temp_dir d;
    asio::io_context io;
    // No linger: the second instance below must not find the sessions still held by
    // this one (the linger release would need `io` to run, and this test never runs it).
    auto so = opts(d.path);
    so.lock_linger = std::chrono::milliseconds(0);
    lb::jsonl_store st(io.get_executor(), so);
    populate(st);
    lb::jsonl_maintenance_options o;
    o.max_sessions = 3;
    auto r = dry_then_real(st, o);
    BOOST_TEST(r.removed.size() == 7u);
    BOOST_TEST(r.sessions_after == 3u);
    for (const auto& x : r.removed) BOOST_TEST(x.reason == "max_sessions");
    // Per app.
    lb::jsonl_store st2(io.get_executor(), opts(d.path));
    o.app_name = "other";
    o.max_sessions = 1;
    lb::jsonl_maintenance_report r2;
    BOOST_REQUIRE(!st2.maintain(o, r2));
    BOOST_REQUIRE_EQUAL(r2.removed.size(), 1u);
    BOOST_TEST(r2.removed[0].key.session_id == "s8");
}

BOOST_AUTO_TEST_CASE(byte_budget_removes_oldest_down_to_the_high_water_mark) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    populate(st);
    lb::jsonl_maintenance_options probe;
    probe.dry_run = true;
    lb::jsonl_maintenance_report all;
    BOOST_REQUIRE(!st.maintain(probe, all));
    BOOST_REQUIRE(all.removed.empty());
    const auto total = all.bytes_before;
    lb::jsonl_maintenance_options o;
    o.max_bytes = total - 1;      // just over budget
    o.high_water_bytes = total / 2;
    auto r = dry_then_real(st, o);
    BOOST_REQUIRE(!r.removed.empty());
    BOOST_TEST(r.bytes_after <= total / 2);
    for (std::size_t i = 0; i < r.removed.size(); ++i) {
        BOOST_TEST(r.removed[i].reason == "byte_budget");
        BOOST_TEST(r.removed[i].key.session_id == "s" + std::to_string(i)); // oldest first
    }
    // Removing one fewer would not have reached the mark.
    BOOST_TEST(r.bytes_after + r.removed.back().bytes > total / 2);
    // Under budget: nothing to do.
    lb::jsonl_maintenance_report again;
    BOOST_REQUIRE(!st.maintain(o, again));
    BOOST_TEST(again.removed.empty());
}

BOOST_AUTO_TEST_CASE(bad_maintenance_options_are_refused_and_remove_nothing) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    populate(st);
    const auto before = count_sessions(st);
    struct bad_case {
        lb::jsonl_maintenance_options o;
        std::string why;
    };
    std::vector<bad_case> cases(6);
    cases[0].o.max_idle_seconds = -1; // would make every session idle
    cases[0].why = "max_idle_seconds is -1, not a finite number of seconds >= 0";
    cases[1].o.max_idle_seconds = std::numeric_limits<double>::quiet_NaN();
    cases[1].why = "max_idle_seconds is nan";
    cases[2].o.max_idle_seconds = std::numeric_limits<double>::infinity();
    cases[2].why = "max_idle_seconds is inf";
    cases[3].o.max_idle_seconds = 5;
    cases[3].o.now = std::numeric_limits<double>::quiet_NaN();
    cases[3].why = "now is not a finite number";
    cases[4].o.max_bytes = 100;
    cases[4].o.high_water_bytes = 101;
    cases[4].why = "high_water_bytes (101) is above max_bytes (100)";
    cases[5].o.app_name = "../x";
    cases[5].why = "app name";
    for (auto& c : cases) {
        for (bool dry : {true, false}) {
            c.o.dry_run = dry;
            lb::jsonl_maintenance_report r;
            lb::diagnostics why;
            BOOST_TEST((st.maintain(c.o, r, &why) == lb::errc::invalid_argument), c.why);
            BOOST_TEST(why.message().find(c.why) != std::string::npos, why.message());
            BOOST_TEST(r.removed.empty());
        }
    }
    BOOST_TEST(count_sessions(st) == before);
    // The edges are valid: no idle window at all (0 s) and a mark equal to the budget.
    lb::jsonl_maintenance_options edge;
    edge.max_idle_seconds = 0;
    edge.now = 1e9;
    edge.max_bytes = 1;
    edge.high_water_bytes = 1;
    edge.dry_run = true;
    lb::jsonl_maintenance_report r;
    lb::diagnostics why;
    BOOST_TEST(!st.maintain(edge, r, &why), why.message());
    BOOST_TEST(r.removed.size() == before);
}

BOOST_AUTO_TEST_CASE(a_session_in_use_is_kept_and_reported) {
    temp_dir d;
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(d.path));
    populate(st);
    auto slow = opts(d.path);
    slow.lock_linger = std::chrono::seconds(30);
    lb::jsonl_store writer(io.get_executor(), slow);
    std::optional<lb::session> g;
    BOOST_REQUIRE(!writer.get({"app", "u0", "s0"}, {}, g));
    std::int64_t seq = 0;
    BOOST_REQUIRE(!writer.append(*g, text_event("busy", 100.5), seq)); // holds the lock
    lb::jsonl_maintenance_options o;
    o.max_idle_seconds = 5;
    o.now = 110;
    auto r = dry_then_real(st, o);
    BOOST_REQUIRE_EQUAL(r.busy.size(), 1u);
    BOOST_TEST(r.busy[0].session_id == "s0");
    BOOST_TEST(ids(r.removed).size() == 4u);
}

BOOST_AUTO_TEST_SUITE_END()
