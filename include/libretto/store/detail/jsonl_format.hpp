// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_FORMAT_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_FORMAT_HPP

// The jsonl_store's on-disk format, as pure functions (no I/O): CRC-32C, line framing,
// the transcript header, the per-session checkpoint ("meta") and the classification of
// a region of lines (valid / torn tail / corrupt middle).
//
// Every line the store writes is one JSON object followed by '\n'. The object's last
// member is its checksum, "crc32c": eight lowercase hex digits of the CRC-32C of the same
// object serialized without that member:
//
//   {"id":"…","sequence":7,…,"crc32c":"1a2b3c4d"}
//
// so the file stays plain JSON Lines (jq, grep) while any torn or flipped byte of a line
// is detected: every byte is covered by the CRC, by an exact match of the framing, or by
// the strict hex digits.

#include <libretto/event/event.hpp>
#include <libretto/event/json.hpp>
#include <libretto/store/detail/context_load.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace libretto::detail::jsonl {

// ---- CRC-32C (Castagnoli) ----------------------------------------------------------------

struct crc32c_tables {
    std::uint32_t t[8][256];
};

constexpr crc32c_tables make_crc32c_tables() {
    crc32c_tables tab{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
        tab.t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
        for (int s = 1; s < 8; ++s) tab.t[s][i] = (tab.t[s - 1][i] >> 8) ^ tab.t[0][tab.t[s - 1][i] & 0xff];
    return tab;
}

inline constexpr crc32c_tables crc32c_table = make_crc32c_tables();

/// Portable slicing-by-8.
inline std::uint32_t crc32c_portable(std::uint32_t crc, const unsigned char* p, std::size_t n) noexcept {
    const auto& t = crc32c_table.t;
    std::uint32_t c = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n >= 8) {
        std::uint32_t lo, hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
            t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
#endif
    while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LIBRETTO_JSONL_HW_CRC 1
/// SSE 4.2 crc32 instruction, 8 bytes per step (used when the CPU has it).
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* p,
                                                                    std::size_t n) noexcept {
    std::uint64_t c = ~crc & 0xffffffffu;
    while (n >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    auto c32 = static_cast<std::uint32_t>(c);
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
#endif

/// CRC-32C of `n` bytes, continuing from `crc` (0 to start).
inline std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
#ifdef LIBRETTO_JSONL_HW_CRC
    static const bool hw = __builtin_cpu_supports("sse4.2");
    if (hw) return crc32c_sse42(crc, p, n);
#endif
    return crc32c_portable(crc, p, n);
}

inline std::uint32_t crc32c(std::string_view s) noexcept { return crc32c(0, s.data(), s.size()); }

// ---- line framing ------------------------------------------------------------------------

inline constexpr std::string_view crc_member = ",\"crc32c\":\"";
/// Bytes the frame adds before the closing brace: `,"crc32c":"` + 8 hex + `"`.
inline constexpr std::size_t frame_overhead = crc_member.size() + 8 + 1;
/// A framed line (without '\n') ends with: `,"crc32c":"XXXXXXXX"}`.
inline constexpr std::size_t frame_tail = frame_overhead + 1;

/// What replaces the closing brace of a serialized object: `,"crc32c":"XXXXXXXX"}\n`.
struct frame_suffix {
    char bytes[frame_tail + 1];
    static constexpr std::size_t size = frame_tail + 1;

    /// The suffix for `body`, a serialized JSON object with at least one member.
    explicit frame_suffix(std::string_view body) noexcept {
        const std::uint32_t c = crc32c(body);
        static constexpr char hex[] = "0123456789abcdef";
        std::memcpy(bytes, crc_member.data(), crc_member.size());
        char* d = bytes + crc_member.size();
        for (int i = 0; i < 8; ++i) d[i] = hex[(c >> (28 - 4 * i)) & 0xf];
        d[8] = '"';
        d[9] = '}';
        d[10] = '\n';
    }
    std::string_view view() const noexcept { return {bytes, size}; }
};

/// Turns `body`, a serialized JSON object with at least one member, into a framed line
/// ending in '\n'.
inline void frame_line(std::string& body) {
    const frame_suffix f(body);
    body.pop_back(); // the closing brace
    body.append(f.view());
}

inline int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; // uppercase is rejected on purpose: a flipped case bit is corruption
}

/// True if `line` (without its '\n') is a framed line whose checksum matches.
inline bool verify_frame(std::string_view line) noexcept {
    const std::size_t n = line.size();
    if (n < frame_tail + 2 || line.front() != '{') return false;
    if (line.substr(n - frame_tail, crc_member.size()) != crc_member) return false;
    if (line[n - 2] != '"' || line[n - 1] != '}') return false;
    std::uint32_t want = 0;
    for (std::size_t i = n - frame_tail + crc_member.size(); i < n - 2; ++i) {
        int d = hex_digit(line[i]);
        if (d < 0) return false;
        want = (want << 4) | static_cast<std::uint32_t>(d);
    }
    std::uint32_t c = crc32c(0, line.data(), n - frame_tail);
    c = crc32c(c, "}", 1);
    return c == want;
}


// ---- header --------------------------------------------------------------------------------

inline constexpr std::string_view header_format = "libretto-session";
inline constexpr std::string_view meta_format = "libretto-session-meta";
inline constexpr std::int64_t format_version = 1;

/// Line 1 of a transcript: who the session is and its initial session-scope state.
struct header {
    std::string app_name;
    std::string user_id;
    std::string session_id;
    std::string file_id; ///< random, new for every transcript (tells a re-created session apart)
    double created = 0;
    json::object state; ///< session scope, as created
};

inline std::string header_line(const header& h) {
    json::object o;
    o["format"] = header_format;
    o["version"] = format_version;
    o["app_name"] = h.app_name;
    o["user_id"] = h.user_id;
    o["session_id"] = h.session_id;
    o["file_id"] = h.file_id;
    o["created"] = h.created;
    o["state"] = h.state;
    std::string s = json::serialize(o);
    frame_line(s);
    return s;
}

/// Parses a header line (without '\n'); an empty optional says why in `why`.
inline std::optional<header> parse_header(std::string_view line, std::string& why) {
    if (!verify_frame(line)) {
        why = "header: checksum mismatch or not a framed line";
        return std::nullopt;
    }
    boost::system::error_code ec;
    std::string jwhy;
    json::value v = parse_precise(line, ec, {}, &jwhy);
    if (ec || !v.is_object()) {
        why = ec ? "header: invalid JSON: " + jwhy : "header: not a JSON object";
        return std::nullopt;
    }
    const auto& o = v.get_object();
    auto str = [&](std::string_view k) -> const json::string* {
        auto* p = o.if_contains(k);
        return p ? p->if_string() : nullptr;
    };
    const auto* fmt = str("format");
    const auto* ver = o.if_contains("version");
    if (!fmt || *fmt != header_format || !ver || !ver->is_int64()) {
        why = "header: not a libretto session transcript";
        return std::nullopt;
    }
    if (ver->get_int64() != format_version) {
        why = "header: unsupported format version " + std::to_string(ver->get_int64());
        return std::nullopt;
    }
    header h;
    const auto *a = str("app_name"), *u = str("user_id"), *s = str("session_id"), *f = str("file_id");
    const auto* c = o.if_contains("created");
    const auto* st = o.if_contains("state");
    if (!a || !u || !s || !f || !c || !c->is_number() || !st || !st->is_object()) {
        why = "header: missing or mistyped field";
        return std::nullopt;
    }
    h.app_name = std::string(*a);
    h.user_id = std::string(*u);
    h.session_id = std::string(*s);
    h.file_id = std::string(*f);
    h.created = c->to_number<double>();
    h.state = st->get_object();
    return h;
}

// ---- the per-event facts a scan keeps --------------------------------------------------------

/// What a scan of one verified event line yields (without building an event).
struct line_facts {
    std::int64_t sequence = 0;
    double timestamp = 0;
    std::string id;
    std::int64_t compaction_first = 0; ///< first_sequence of its compaction, 0 if none
    /// Its compaction, if check_compaction accepts it (one it refuses covers nothing).
    std::optional<compaction_entry> compaction;
};

// ---- checkpoint ("meta") ---------------------------------------------------------------------

/// Sequence interval of the offset marks: marks[j] is the byte offset of the line of
/// sequence j * mark_interval + 1.
inline constexpr std::int64_t mark_interval = 64;

/// What a scan of a transcript up to `covered` bytes established. Kept in memory per open
/// session and written to meta.json as a cache: it is trusted only after the line it names
/// as the last one verifies against the transcript.
struct checkpoint {
    std::string file_id;
    std::uint64_t header_end = 0;    ///< offset of the first event line
    std::uint64_t covered = 0;       ///< bytes verified (a line boundary)
    std::int64_t last_sequence = 0;
    std::uint64_t last_line = 0;     ///< offset of the newest event's line (if any)
    std::string last_id;             ///< and its event id
    double created = 0;
    double last_update = 0;
    std::int64_t compaction_first = 0; ///< newest compaction's first_sequence, 0: none
    shown_compactions shown;         ///< what a context_only get reads
    json::object state;              ///< session scope as of `covered`
    std::vector<std::uint64_t> marks;

    /// Records the event line of `f` at `offset`, `len` bytes long (with '\n').
    void add(const line_facts& f, std::uint64_t offset, std::uint64_t len) {
        add(f.sequence, f.timestamp, f.id, f.compaction_first, f.compaction ? &*f.compaction : nullptr, offset, len);
    }
    /// `valid`: the line's compaction if check_compaction accepts it.
    void add(std::int64_t sequence, double timestamp, std::string_view id, std::int64_t first_of_compaction,
             const compaction_entry* valid, std::uint64_t offset, std::uint64_t len) {
        if ((sequence - 1) % mark_interval == 0) marks.push_back(offset);
        last_sequence = sequence;
        last_line = offset;
        last_id.assign(id.data(), id.size());
        last_update = timestamp;
        if (first_of_compaction > 0) compaction_first = first_of_compaction;
        if (valid) shown.add(*valid);
        covered = offset + len;
    }

    /// The greatest known line offset at or before the line of `seq` (1 <= seq <=
    /// last_sequence + 1), and the sequence of the line found there.
    std::pair<std::uint64_t, std::int64_t> seek(std::int64_t seq) const {
        if (seq > last_sequence) return {covered, last_sequence + 1};
        if (seq < 1) seq = 1;
        auto j = static_cast<std::size_t>((seq - 1) / mark_interval);
        if (marks.empty()) return {header_end, 1};
        if (j >= marks.size()) j = marks.size() - 1;
        return {marks[j], static_cast<std::int64_t>(j) * mark_interval + 1};
    }

    /// A known line offset at or after the end of the line of `seq`, and the sequence of
    /// the line there (last_sequence + 1 at the end of the covered part).
    std::pair<std::uint64_t, std::int64_t> seek_after(std::int64_t seq) const {
        if (seq >= last_sequence) return {covered, last_sequence + 1};
        const auto j = static_cast<std::size_t>((std::max<std::int64_t>(seq, 0) + mark_interval - 1) / mark_interval);
        if (j >= marks.size()) return {covered, last_sequence + 1};
        return {marks[j], static_cast<std::int64_t>(j) * mark_interval + 1};
    }
};

inline std::string meta_line(const checkpoint& c) {
    json::object o;
    o["format"] = meta_format;
    o["version"] = format_version;
    o["file_id"] = c.file_id;
    o["header_end"] = c.header_end;
    o["covered"] = c.covered;
    o["last_sequence"] = c.last_sequence;
    o["last_line"] = c.last_line;
    o["last_id"] = c.last_id;
    o["created"] = c.created;
    o["last_update"] = c.last_update;
    o["compaction_first"] = c.compaction_first;
    json::array shown;
    for (const auto& x : c.shown.items()) shown.push_back(json::array{x.sequence, x.first, x.last});
    o["compactions"] = std::move(shown);
    o["mark_interval"] = mark_interval;
    json::array m;
    m.reserve(c.marks.size());
    for (auto x : c.marks) m.emplace_back(x);
    o["marks"] = std::move(m);
    o["state"] = c.state;
    std::string s = json::serialize(o);
    frame_line(s);
    return s;
}

/// Parses meta.json's text. Any doubt gives nullopt: the caller then rescans.
inline std::optional<checkpoint> parse_meta(std::string_view text) {
    if (text.empty() || text.back() != '\n') return std::nullopt;
    text.remove_suffix(1);
    if (!verify_frame(text)) return std::nullopt;
    boost::system::error_code ec;
    json::value v = parse_precise(text, ec, {});
    if (ec || !v.is_object()) return std::nullopt;
    const auto& o = v.get_object();
    auto u64 = [&](std::string_view k, std::uint64_t& out) {
        const auto* p = o.if_contains(k);
        if (!p) return false;
        if (p->is_uint64()) out = p->get_uint64();
        else if (p->is_int64() && p->get_int64() >= 0) out = static_cast<std::uint64_t>(p->get_int64());
        else return false;
        return true;
    };
    auto i64 = [&](std::string_view k, std::int64_t& out) {
        const auto* p = o.if_contains(k);
        if (!p || !p->is_int64()) return false;
        out = p->get_int64();
        return true;
    };
    auto dbl = [&](std::string_view k, double& out) {
        const auto* p = o.if_contains(k);
        if (!p || !p->is_number()) return false;
        out = p->to_number<double>();
        return true;
    };
    auto str = [&](std::string_view k, std::string& out) {
        const auto* p = o.if_contains(k);
        if (!p || !p->is_string()) return false;
        out = std::string(p->get_string());
        return true;
    };
    const auto* fmt = o.if_contains("format");
    if (!fmt || !fmt->is_string() || fmt->get_string() != meta_format) return std::nullopt;
    std::int64_t ver = 0, interval = 0;
    if (!i64("version", ver) || ver != format_version || !i64("mark_interval", interval) || interval != mark_interval)
        return std::nullopt;
    checkpoint c;
    if (!str("file_id", c.file_id) || !u64("header_end", c.header_end) || !u64("covered", c.covered) ||
        !i64("last_sequence", c.last_sequence) || !u64("last_line", c.last_line) || !str("last_id", c.last_id) ||
        !dbl("created", c.created) || !dbl("last_update", c.last_update) ||
        !i64("compaction_first", c.compaction_first))
        return std::nullopt;
    const auto* st = o.if_contains("state");
    const auto* m = o.if_contains("marks");
    const auto* shown = o.if_contains("compactions"); // absent before context loads: rescan
    if (!st || !st->is_object() || !m || !m->is_array() || !shown || !shown->is_array()) return std::nullopt;
    for (const auto& x : shown->get_array()) {
        const auto* a = x.if_array();
        if (!a || a->size() != 3 || !(*a)[0].is_int64() || !(*a)[1].is_int64() || !(*a)[2].is_int64()) return std::nullopt;
        const compaction_entry e{(*a)[0].get_int64(), (*a)[1].get_int64(), (*a)[2].get_int64()};
        if (e.first < 1 || e.first > e.last || e.last >= e.sequence || e.sequence > c.last_sequence) return std::nullopt;
        c.shown.add(e);
    }
    c.state = st->get_object();
    const auto& arr = m->get_array();
    c.marks.reserve(arr.size());
    for (const auto& x : arr) {
        if (x.is_uint64()) c.marks.push_back(x.get_uint64());
        else if (x.is_int64() && x.get_int64() >= 0) c.marks.push_back(static_cast<std::uint64_t>(x.get_int64()));
        else return std::nullopt;
    }
    // Internal consistency: a mark per started interval, increasing, inside the covered part.
    const auto want_marks = c.last_sequence <= 0 ? 0 : static_cast<std::size_t>((c.last_sequence - 1) / mark_interval + 1);
    if (c.last_sequence < 0 || c.marks.size() != want_marks || c.covered < c.header_end) return std::nullopt;
    for (std::size_t i = 0; i < c.marks.size(); ++i)
        if (c.marks[i] < c.header_end || c.marks[i] >= c.covered || (i && c.marks[i] <= c.marks[i - 1]))
            return std::nullopt;
    if (c.last_sequence > 0 && (c.last_line < c.header_end || c.last_line >= c.covered)) return std::nullopt;
    return c;
}

// ---- classifying a region of lines -------------------------------------------------------------

/// True if some complete line after `from` in `buf` carries a valid frame: then a bad line
/// before it is damage in the middle, not a torn tail.
inline bool any_valid_line_after(std::string_view buf, std::size_t from) noexcept {
    std::size_t pos = from;
    while (pos < buf.size()) {
        std::size_t nl = buf.find('\n', pos);
        if (nl == std::string_view::npos) return false;
        if (verify_frame(buf.substr(pos, nl - pos))) return true;
        pos = nl + 1;
    }
    return false;
}

} // namespace libretto::detail::jsonl

#endif
