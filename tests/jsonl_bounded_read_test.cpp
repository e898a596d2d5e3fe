// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// jsonl_store reads damaged transcripts in bounded memory: a huge torn tail, a huge line
// without a newline, a huge header. This executable counts the heap's live bytes (every
// operator new), so it is a test file of its own.
#include <libretto/store/jsonl_store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <string_view>

#include <malloc.h>
#include <unistd.h>

namespace {
std::atomic<std::size_t> live{0};
std::atomic<std::size_t> peak{0};

void note_alloc(void* p) {
    const std::size_t now = live.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
    std::size_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
}
} // namespace

void* operator new(std::size_t n) {
    if (void* p = std::malloc(n ? n : 1)) {
        note_alloc(p);
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    if (p) live.fetch_sub(malloc_usable_size(p));
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace lb = libretto;
namespace fs = std::filesystem;
namespace asio = boost::asio;

namespace {

constexpr std::size_t mib = 1u << 20;

struct temp_dir {
    fs::path path;
    temp_dir() {
        static int counter = 0;
        path = fs::current_path() / ("jsonl-bounded-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

lb::jsonl_store_options opts(const fs::path& dir) {
    lb::jsonl_store_options o;
    o.directory = dir;
    o.durability = lb::durability::none;
    return o;
}

const lb::session_key key{"app", "u", "s"};

fs::path transcript(const fs::path& root) {
    return root / "apps" / "app" / "users" / "u" / "sessions" / "s" / "transcript.jsonl";
}

/// A session of three events, written and closed.
void three_events(const fs::path& root) {
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(root));
    lb::session s;
    BOOST_REQUIRE(!st.create({"app", "u", "s", {}}, s));
    for (int i = 0; i < 3; ++i) {
        lb::event e = lb::event::make(lb::event_type::agent_message, "agent", lb::content::from_text("e" + std::to_string(i)));
        std::int64_t seq = 0;
        BOOST_REQUIRE(!st.append(s, std::move(e), seq));
    }
}

/// Appends `n` bytes to `f`: `pattern` over and over (cut short at the end), written in blocks
/// of whole patterns of about 1 MiB (byte by byte, hundreds of MiB took most of the test's time
/// under the sanitizers).
void append_bytes(const fs::path& f, std::size_t n, std::string_view pattern) {
    std::ofstream out(f, std::ios::binary | std::ios::app);
    std::string block;
    while (block.size() < mib) block.append(pattern);
    for (std::size_t done = 0; done < n;) {
        const std::size_t k = std::min(n - done, block.size());
        out.write(block.data(), static_cast<std::streamsize>(k));
        done += k;
    }
}

std::size_t size_of(const fs::path& f) { return static_cast<std::size_t>(fs::file_size(f)); }

/// Opens a fresh store and loads the session; returns the peak of live heap bytes above
/// what was live before.
std::size_t load_peak(const fs::path& root, std::optional<lb::session>& out, boost::system::error_code& ec,
                      lb::diagnostics* d = nullptr) {
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), opts(root));
    const std::size_t base = live.load();
    peak.store(base);
    ec = st.get(key, {}, out, d);
    return peak.load() - base;
}

} // namespace

BOOST_AUTO_TEST_SUITE(jsonl_bounded_reads)

BOOST_AUTO_TEST_CASE(a_huge_torn_tail_is_moved_aside_in_bounded_memory) {
    temp_dir d;
    three_events(d.path);
    const fs::path t = transcript(d.path);
    const std::size_t intact = size_of(t);
    // 96 MiB of damage: short lines that are not framed, then a last line without a newline.
    constexpr std::size_t damage = 96 * mib;
    std::string lines; // the pattern's period: 13,000 = lcm(1000, 26)
    for (std::size_t i = 0; i < 13000; ++i) lines.push_back(i % 1000 == 999 ? '\n' : static_cast<char>('a' + i % 26));
    append_bytes(t, damage, lines);
    std::optional<lb::session> s;
    boost::system::error_code ec;
    const std::size_t used = load_peak(d.path, s, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_REQUIRE(s.has_value());
    BOOST_TEST(s->events.size() == 3u);
    BOOST_TEST(size_of(t) == intact);
    // The side file holds the damage byte for byte.
    std::size_t side = 0;
    for (const auto& f : fs::directory_iterator(t.parent_path()))
        if (f.path().filename().string().starts_with("torn-")) side = size_of(f.path());
    BOOST_TEST(side == damage);
    // Reading the damage costs a few chunks, not the damage (which it once cost twice over).
    BOOST_TEST(used < 24 * mib, used / mib << " MiB live at the peak");
}

BOOST_AUTO_TEST_CASE(a_line_longer_than_any_event_is_damage_read_in_bounded_memory) {
    temp_dir d;
    three_events(d.path);
    const fs::path t = transcript(d.path);
    const std::size_t intact = size_of(t);
    // 80 MiB without a newline: past the longest line the store reads (16 MiB and framing).
    constexpr std::size_t damage = 80 * mib;
    append_bytes(t, damage, "x");
    std::optional<lb::session> s;
    boost::system::error_code ec;
    const std::size_t used = load_peak(d.path, s, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_REQUIRE(s.has_value());
    BOOST_TEST(s->events.size() == 3u);
    BOOST_TEST(size_of(t) == intact);
    BOOST_TEST(used < 64 * mib, used / mib << " MiB live at the peak");
    // An append after the recovery reads back from another fresh store.
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), opts(d.path));
        lb::event e = lb::event::make(lb::event_type::agent_message, "agent", lb::content::from_text("after"));
        std::int64_t seq = 0;
        BOOST_TEST(!st.append(*s, std::move(e), seq));
        BOOST_TEST(seq == 4);
    }
    std::optional<lb::session> again;
    (void)load_peak(d.path, again, ec);
    BOOST_TEST_REQUIRE(!ec);
    BOOST_TEST(again->events.size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_too_long_line_followed_by_a_valid_one_is_corruption_and_nothing_moves) {
    temp_dir d;
    three_events(d.path);
    const fs::path t = transcript(d.path);
    // Take the last (valid) line, put 40 MiB of damage before a copy of it.
    std::ifstream in(t, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const std::size_t last = text.rfind('\n', text.size() - 2) + 1;
    const std::string valid = text.substr(last);
    append_bytes(t, 40 * mib, "y");
    append_bytes(t, 1, "\n");
    append_bytes(t, valid.size(), valid);
    const std::size_t before = size_of(t);
    std::optional<lb::session> s;
    boost::system::error_code ec;
    lb::diagnostics diag;
    const std::size_t used = load_peak(d.path, s, ec, &diag);
    BOOST_TEST((ec == lb::errc::corrupt_data), ec.message());
    BOOST_TEST(diag.message().find("a line longer than") != std::string::npos, diag.message());
    BOOST_TEST(size_of(t) == before); // damage in the middle: nothing is moved
    BOOST_TEST(used < 64 * mib, used / mib << " MiB live at the peak");
}

BOOST_AUTO_TEST_CASE(a_huge_header_without_a_newline_is_refused_in_bounded_memory) {
    temp_dir d;
    const fs::path t = transcript(d.path);
    fs::create_directories(t.parent_path());
    append_bytes(t, 1, "{");
    append_bytes(t, 100 * mib - 1, "h");
    std::optional<lb::session> s;
    boost::system::error_code ec;
    lb::diagnostics diag;
    const std::size_t used = load_peak(d.path, s, ec, &diag);
    BOOST_TEST((ec == lb::errc::corrupt_data), ec.message());
    BOOST_TEST(diag.message().find("header line is longer than") != std::string::npos, diag.message());
    BOOST_TEST(size_of(t) == 100 * mib); // a header is never moved aside
    BOOST_TEST(used < 64 * mib, used / mib << " MiB live at the peak");
}

BOOST_AUTO_TEST_CASE(the_longest_event_the_store_writes_reads_back) {
    temp_dir d;
    lb::jsonl_store_options o = opts(d.path);
    o.max_event_bytes = 2 * mib;
    std::string text(2 * mib - 400, 'z');
    {
        asio::io_context io;
        lb::jsonl_store st(io.get_executor(), o);
        lb::session s;
        BOOST_REQUIRE(!st.create({"app", "u", "s", {}}, s));
        lb::event e = lb::event::make(lb::event_type::agent_message, "agent", lb::content::from_text(text));
        std::int64_t seq = 0;
        BOOST_REQUIRE(!st.append(s, std::move(e), seq));
    }
    asio::io_context io;
    lb::jsonl_store st(io.get_executor(), o);
    std::optional<lb::session> s;
    BOOST_REQUIRE(!st.get(key, {}, s));
    BOOST_REQUIRE(s.has_value());
    BOOST_REQUIRE(s->events.size() == 1u);
    BOOST_TEST(std::get<lb::text_part>(s->events[0].content.parts[0]).text == text);
}

BOOST_AUTO_TEST_SUITE_END()
