// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// fuzz target jsonl_store: a session's transcript file as the bytes on disk, opened through
// the public jsonl_store. Once per process a valid session is made with the public API (a
// header line, then events with state deltas, a tool call and response, usage, a
// compaction; docs/stores.md has the format). The input is
//
//   [mode: 1 byte][bytes]
//     mode & 1  1: the bytes are edits of the valid transcript, each [op][offset: 2][n][data]
//                  (overwrite, insert, truncate, erase); 0: the bytes follow its header line
//     mode & 2  keep the valid session's checkpoint (meta.json), which must be verified
//     mode & 4  frame every line that looks like an object again (a valid CRC-32C), so that
//               the edits reach the JSON and event decoding, not only the checksum
//     mode >> 3 the get_options: all events, the newest 2, context_only, from sequence 3
//
// written as apps/app/users/u/sessions/s/transcript.jsonl of a fresh directory. Then:
//
//   - store A gets the session: recovery of a torn tail happens at most once, and is
//     byte-exact: the bytes kept plus the bytes moved to the side file are the file as it
//     was, and the report says so; without a recovery the file is untouched;
//   - a fresh store B gets it too: the same session (id, state, events, sequence, update
//     time) or the same error, and no second recovery;
//   - if the session loaded, an append through B succeeds with the next sequence, and a
//     fresh store C reads it back (the same event, state and sequence);
//   - if it did not load, an append through a fresh store is refused and changes no byte.

#include "fuzz_support.hpp"

#include <libretto/store/jsonl_store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <signal.h>
#include <unistd.h>

namespace {

namespace lb = libretto;
namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace json = boost::json;

std::string read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, std::string_view data) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

/// Where the harness works: tmpfs when there is one (each run writes a few files).
/// The directory is removed at exit; one left by a process that crashed (a finding) is
/// removed by the next run.
fs::path work_root() {
    static const fs::path root = [] {
        std::error_code ec;
        const fs::path base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
                                  ? fs::path("/dev/shm")
                                  : fs::temp_directory_path();
        const std::string prefix = "libretto-fuzz-jsonl-";
        for (const auto& e : fs::directory_iterator(base, ec)) {
            const std::string name = e.path().filename().string();
            if (!name.starts_with(prefix)) continue;
            const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
            if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
        }
        fs::path r = base / (prefix + std::to_string(::getpid()));
        fs::remove_all(r, ec);
        fs::create_directories(r);
        // A copy that outlives the static (static objects are destroyed before this runs).
        static const std::string* remove_at_exit = new std::string(r.string());
        std::atexit([] {
            std::error_code ignored;
            fs::remove_all(*remove_at_exit, ignored);
        });
        return r;
    }();
    return root;
}

asio::any_io_executor pool() {
    static asio::thread_pool p(1);
    return p.get_executor();
}

lb::jsonl_store_options options(const fs::path& dir) {
    lb::jsonl_store_options o;
    o.directory = dir;
    o.durability = lb::durability::none;
    o.blocking_executor = pool();
    o.lock_linger = std::chrono::milliseconds(0); // a store releases the lock when it is done
    o.lock_timeout = std::chrono::milliseconds(2000);
    return o;
}

const lb::session_key key{"app", "u", "s"};

fs::path session_dir(const fs::path& root) { return root / "apps" / "app" / "users" / "u" / "sessions" / "s"; }

struct valid_session {
    std::string transcript, meta;
    std::size_t header_end = 0;
};

lb::event make_event(lb::event_type t, std::string author, lb::content c, double ts) {
    lb::event e = lb::event::make(t, std::move(author), std::move(c));
    e.timestamp = ts;
    e.invocation_id = "inv-1";
    return e;
}

/// The session every input starts from, made through the public API.
const valid_session& valid() {
    static const valid_session v = [] {
        const fs::path dir = work_root() / "template";
        asio::io_context io;
        valid_session out;
        {
            lb::jsonl_store st(io.get_executor(), options(dir));
            lb::create_options co("app", "u", "s");
            co.state["k0"] = 0;
            co.state["nested"] = json::object{{"a", json::array{1, 2.5, "x"}}};
            lb::session s;
            FUZZ_CHECK(!st.create(co, s), "cannot create the template session");
            std::vector<lb::event> evs;
            {
                auto e = make_event(lb::event_type::user_message, "user", lb::content::from_text("hello \xc3\xa9"), 1000.5);
                e.actions.state_delta["k"] = 1;
                e.actions.state_delta["user:pref"] = "dark";
                evs.push_back(std::move(e));
            }
            {
                lb::content c;
                c.role = "model";
                c.parts.emplace_back(lb::tool_call_part{"call_1", "get_weather", json::object{{"city", "Oslo"}}, {}});
                evs.push_back(make_event(lb::event_type::agent_message, "agent", std::move(c), 1001.25));
            }
            {
                lb::content c;
                c.parts.emplace_back(
                    lb::tool_response_part{"call_1", "get_weather", json::object{{"temp", -3.5}, {"sky", "snow"}}, {}, {}});
                auto e = make_event(lb::event_type::tool_response, "agent", std::move(c), 1002);
                e.actions.state_delta["k"] = nullptr;
                evs.push_back(std::move(e));
            }
            {
                auto e = make_event(lb::event_type::agent_message, "agent", lb::content::from_text("It snows."), 1003);
                e.usage = lb::usage{120, 7, "model-1"};
                e.metadata["m"] = json::array{true, nullptr, 18446744073709551615ull};
                evs.push_back(std::move(e));
            }
            {
                auto e = make_event(lb::event_type::agent_message, "compactor", {}, 1004);
                e.actions.compaction = lb::event_compaction{1, 2, 1000.5, 1001.25, "asked for the weather", 2};
                evs.push_back(std::move(e));
            }
            for (auto& e : evs) {
                std::int64_t seq = 0;
                lb::diagnostics diag;
                const auto ec = st.append(s, std::move(e), seq, &diag);
                FUZZ_CHECK(!ec, "cannot append to the template session: " + std::string(diag.message()));
            }
            FUZZ_CHECK(!st.flush(key), "cannot flush the template session");
        }
        out.transcript = read_file(session_dir(dir) / "transcript.jsonl");
        out.meta = read_file(session_dir(dir) / "meta.json");
        out.header_end = out.transcript.find('\n') + 1;
        FUZZ_CHECK(out.header_end > 1 && !out.meta.empty(), "the template session has no header or checkpoint");
        return out;
    }();
    return v;
}

/// Frames every line that looks like a JSON object again, replacing a checksum it has.
std::string reframe(std::string_view bytes) {
    namespace fmt = lb::detail::jsonl;
    std::string out;
    std::size_t i = 0;
    while (i < bytes.size()) {
        std::size_t nl = bytes.find('\n', i);
        const bool complete = nl != std::string_view::npos;
        if (!complete) nl = bytes.size();
        std::string line(bytes.substr(i, nl - i));
        i = complete ? nl + 1 : nl;
        if (line.size() >= 2 && line.front() == '{' && line.back() == '}') {
            const std::size_t n = line.size();
            if (n >= fmt::frame_tail + 2 && std::string_view(line).substr(n - fmt::frame_tail, fmt::crc_member.size()) == fmt::crc_member)
                line = line.substr(0, n - fmt::frame_tail) + "}";
            if (line.size() > 2) {
                fmt::frame_line(line); // ends it with '\n'
                if (!complete) line.pop_back();
                out += line;
                continue;
            }
        }
        out += line;
        if (complete) out += '\n';
    }
    return out;
}

std::string build_transcript(fuzz::input& in, bool edits) {
    const valid_session& v = valid();
    if (!edits) return v.transcript.substr(0, v.header_end) + std::string(in.rest());
    std::string t = v.transcript;
    for (int k = 0; k < 12 && !in.empty(); ++k) {
        const std::uint8_t op = in.byte();
        const std::size_t at = in.u16() % (t.size() + 1);
        const std::size_t n = 1 + in.byte() % 48;
        switch (op % 4) {
        case 0: { // overwrite
            const std::string_view with = in.take(n);
            t.replace(at, std::min(with.size(), t.size() - at), with);
            break;
        }
        case 1: t.insert(at, in.take(n)); break;
        case 2: t.resize(at); break;
        default: t.erase(at, n); break;
        }
    }
    return t;
}

lb::get_options get_options_for(unsigned variant) {
    lb::get_options o;
    switch (variant % 4) {
    case 1: o.num_recent_events = 2; break;
    case 2: o.context_only = true; break;
    case 3: o.from_sequence = 3; break;
    default: break;
    }
    return o;
}

std::vector<fs::path> side_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().starts_with("torn-")) out.push_back(e.path());
    return out;
}

std::string describe(const boost::system::error_code& ec, const lb::diagnostics& d, const std::optional<lb::session>& s) {
    if (ec) return ec.message() + " (" + std::string(d.message()) + ")";
    if (!s) return "no session";
    return std::to_string(s->events.size()) + " events, last sequence " + std::to_string(s->last_sequence);
}

bool same_session(const lb::session& a, const lb::session& b) {
    return a.id == b.id && a.app_name == b.app_name && a.user_id == b.user_id && a.state == b.state &&
           a.events == b.events && a.last_update_time == b.last_update_time && a.last_sequence == b.last_sequence;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)valid(); // the template, before the first input
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static std::uint64_t run = 0;
    fuzz::input in(data, size);
    const std::uint8_t mode = in.byte();
    const bool edits = mode & 1, keep_meta = mode & 2, frame = mode & 4;
    const lb::get_options go = get_options_for(mode >> 3);

    std::string bytes = build_transcript(in, edits);
    if (frame) bytes = reframe(bytes);

    const fs::path root = work_root() / ("run-" + std::to_string(run++));
    const fs::path sdir = session_dir(root);
    const fs::path tp = sdir / "transcript.jsonl";
    fs::create_directories(sdir);
    write_file(tp, bytes);
    if (keep_meta) write_file(sdir / "meta.json", valid().meta);

    asio::io_context io;
    std::optional<lb::session> ga, gb;
    boost::system::error_code eca, ecb;
    lb::diagnostics da, db;

    // Store A: the first open, which may recover a torn tail.
    {
        lb::jsonl_store a(io.get_executor(), options(root));
        eca = a.get(key, go, ga, &da);
        const auto rec = a.recoveries();
        const std::string now = read_file(tp);
        const auto sides = side_files(sdir);
        FUZZ_CHECK(rec.size() <= 1, "one open recovered " + std::to_string(rec.size()) + " times");
        FUZZ_CHECK(sides.size() == rec.size(), std::to_string(sides.size()) + " side files for " +
                                                   std::to_string(rec.size()) + " recoveries");
        if (rec.empty()) {
            FUZZ_CHECK(now == bytes, "the transcript changed without a recovery");
        } else {
            const std::string moved = read_file(rec[0].side_file);
            FUZZ_CHECK(rec[0].side_file == sides[0], "the recovery names another side file");
            FUZZ_CHECK(now + moved == bytes, "recovery is not byte-exact: kept " + std::to_string(now.size()) +
                                                 " + moved " + std::to_string(moved.size()) + " bytes of " +
                                                 std::to_string(bytes.size()));
            FUZZ_CHECK(rec[0].intact_bytes == now.size() && rec[0].moved_bytes == moved.size(),
                       "the recovery report's sizes are not the files'");
            FUZZ_CHECK(!rec[0].reason.empty(), "a recovery without a reason");
            if (ga)
                FUZZ_CHECK(rec[0].last_sequence == ga->last_sequence,
                           "the recovery report's last sequence is not the session's");
        }
        if (eca) FUZZ_CHECK(!da.message().empty(), "a failed get without words: " + eca.message());
    }
    const std::string after_a = read_file(tp);

    // Store B: a fresh open of what A left.
    {
        lb::jsonl_store b(io.get_executor(), options(root));
        ecb = b.get(key, go, gb, &db);
        FUZZ_CHECK(eca == ecb && ga.has_value() == gb.has_value(),
                   "two fresh stores disagree: " + describe(eca, da, ga) + " / " + describe(ecb, db, gb));
        if (ga && gb) FUZZ_CHECK(same_session(*ga, *gb), "two fresh stores read different sessions: " + describe(eca, da, ga));
        FUZZ_CHECK(b.recoveries().empty(), "a second recovery: " + b.recoveries()[0].reason);
        FUZZ_CHECK(read_file(tp) == after_a, "a second open changed the transcript");

        if (gb) {
            lb::event e = make_event(lb::event_type::agent_message, "agent", lb::content::from_text("after"), 2000);
            std::int64_t seq = 0;
            lb::diagnostics d;
            const auto ec = b.append(*gb, std::move(e), seq, &d);
            FUZZ_CHECK(!ec, "an append after a good get failed: " + ec.message() + " (" + std::string(d.message()) + ")");
            FUZZ_CHECK(seq == ga->last_sequence + 1, "the append took sequence " + std::to_string(seq) + " after " +
                                                         std::to_string(ga->last_sequence));
        }
    }

    if (gb) {
        // Store C: the append reads back, with the same get options (which may leave the
        // new event out, and leave unread events that do not decode), and as the newest event.
        lb::jsonl_store c(io.get_executor(), options(root));
        std::optional<lb::session> gc;
        lb::diagnostics dc;
        const auto ecc = c.get(key, go, gc, &dc);
        FUZZ_CHECK(!ecc && gc, "the session does not load after an append: " + describe(ecc, dc, gc));
        FUZZ_CHECK(gc->last_sequence == gb->last_sequence, "the appended sequence is not the last one read back");
        FUZZ_CHECK(gc->state == gb->state, "the state reads back different after an append");
        if (!go.num_recent_events && !go.from_sequence && !go.context_only)
            FUZZ_CHECK(gc->events == gb->events, "the events read back different after an append");
        lb::get_options newest;
        newest.num_recent_events = 1;
        const auto ecn = c.get(key, newest, gc, &dc);
        FUZZ_CHECK(!ecn && gc && gc->events.size() == 1, "the newest event does not load: " + describe(ecn, dc, gc));
        FUZZ_CHECK(gc->events.back() == gb->events.back(), "the appended event reads back different");
        FUZZ_CHECK(c.recoveries().empty(), "a recovery after an append: " + c.recoveries()[0].reason);
    } else if (eca) {
        // A session that does not load refuses an append and keeps every byte.
        lb::jsonl_store d(io.get_executor(), options(root));
        lb::session s;
        s.id = key.session_id;
        s.app_name = key.app_name;
        s.user_id = key.user_id;
        s.last_sequence = 0;
        std::int64_t seq = 0;
        const auto ec = d.append(s, make_event(lb::event_type::agent_message, "agent", lb::content::from_text("x"), 3000), seq);
        FUZZ_CHECK(ec, "an append to a session that does not load succeeded (sequence " + std::to_string(seq) + ")");
        FUZZ_CHECK(read_file(tp) == after_a, "a refused append changed the transcript");
    }

    std::error_code rec;
    fs::remove_all(root, rec);
    return 0;
}
