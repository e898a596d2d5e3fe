// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_READ_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_READ_HPP

// jsonl_store's read path: which byte ranges of a transcript a get reads (the ranges a
// context view needs, through the checkpoint's offset marks) and decoding them, split over
// threads for large reads. Apart from the engine: it is the hot path of a load.

#include <libretto/store/detail/jsonl_engine.hpp>

#include <libretto/event/detail/event_slab.hpp>
#include <libretto/event/json.hpp>
#include <libretto/store/detail/jsonl_decode.hpp>
#include <libretto/store/detail/jsonl_format.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

namespace libretto::detail::jsonl {

/// Where and why decoding a region of lines stopped.
struct decode_failure {
    std::uint64_t line = 0;   ///< line number in the transcript
    std::size_t offset = 0;   ///< in buf
    std::string detail;
};

/// Loads smaller than this decode into nodes of their own: a slab block is 2 MiB, which one
/// surviving event keeps alive, and a runner caches hundreds of small sessions.
inline constexpr std::size_t slab_min_bytes = std::size_t{1} << 20;

inline bool decode_chunk(std::string_view buf, std::size_t base, event_list& out, event_slab& slab,
                         decode_failure& f, bool& failed, bool use_slab = true) {
    std::size_t pos = 0;
    while (pos < buf.size()) {
        const void* p = std::memchr(buf.data() + pos, '\n', buf.size() - pos);
        if (!p) {
            f = {0, base + pos, "incomplete line"};
            failed = true;
            return false;
        }
        const std::size_t nl = static_cast<std::size_t>(static_cast<const char*>(p) - buf.data());
        const std::string_view line = buf.substr(pos, nl - pos);
        if (!verify_frame(line)) {
            f = {0, base + pos, "checksum mismatch"};
            failed = true;
            return false;
        }
        // Decoded straight into the node the session (and a cache) will share.
        std::shared_ptr<event> node = use_slab ? slab.make() : std::make_shared<event>();
        if (!fast_decode_event(line, *node, true)) {
            auto r = parse_event(line); // the authority on anything unusual, and on errors
            if (!r) {
                f = {0, base + pos, r.error().message()};
                failed = true;
                return false;
            }
            *node = std::move(*r);
        }
        out.push_back(event_list::pointer_type(std::move(node)));
        pos = nl + 1;
    }
    return true;
}

/// Decodes the framed event lines of `buf` (each ending in '\n'), expecting sequences
/// first_seq, first_seq + 1, ..., and appends the events to `out`; large inputs are split
/// over threads. `scratch` holds the other threads' lists between calls (kept with their
/// capacity), `slabs` each thread's event_slab (so that a load fills its blocks across
/// calls). Each thread allocates its events' nodes; stitching moves pointers only.
inline bool decode_lines(std::string_view buf, std::int64_t first_seq, std::size_t expected_count, unsigned threads,
                         event_list& out, decode_failure& fail, std::vector<event_list>& scratch,
                         std::vector<event_slab>& slabs) {
    const std::size_t start_size = out.size();
    unsigned t = threads;
    if (buf.size() < (1u << 20)) t = 1;
    t = std::max(1u, std::min<unsigned>(t, static_cast<unsigned>(buf.size() >> 19)));
    // The calling thread's part (the first) is smaller than the others (0.7 of one): it
    // also moves their events into `out` afterwards, and reads the next chunk.
    std::vector<std::size_t> cuts{0};
    for (unsigned k = 1; k < t; ++k) {
        const double share = (0.7 + (k - 1)) / (t - 0.3);
        std::size_t want = std::max(cuts.back(), static_cast<std::size_t>(static_cast<double>(buf.size()) * share));
        std::size_t nl = buf.find('\n', want);
        if (nl == std::string_view::npos || nl + 1 >= buf.size()) break;
        if (nl + 1 > cuts.back()) cuts.push_back(nl + 1);
    }
    cuts.push_back(buf.size());
    const std::size_t parts = cuts.size() - 1;
    if (scratch.size() < parts) scratch.resize(parts);
    if (slabs.size() < parts) slabs.resize(parts);
    auto& chunks = scratch;
    std::vector<decode_failure> fails(parts);
    std::vector<char> failed(parts, 0);
    auto work = [&](std::size_t k) {
        bool f = false;
        auto& vec = k == 0 ? out : chunks[k];
        if (k != 0) {
            vec.clear();
            const std::size_t want = expected_count * (cuts[k + 1] - cuts[k]) / std::max<std::size_t>(buf.size(), 1) + 16;
            if (vec.capacity() < want) vec.reserve(want);
        }
        decode_chunk(buf.substr(cuts[k], cuts[k + 1] - cuts[k]), cuts[k], vec, slabs[k], fails[k], f,
                     buf.size() >= slab_min_bytes);
        failed[k] = f;
    };
    std::vector<std::thread> pool;
    for (std::size_t k = 1; k < parts; ++k) {
        try {
            pool.emplace_back(work, k);
        } catch (...) {
            work(k); // no thread: decode here
        }
    }
    work(0);
    for (auto& th : pool) th.join();
    // Stitch, checking that sequences continue.
    std::int64_t expected = first_seq;
    auto check = [&](const event_list& v, std::size_t from) {
        for (std::size_t i = from; i < v.size(); ++i, ++expected) {
            if (v[i].sequence != expected) {
                fail.line = static_cast<std::uint64_t>(expected) + 1;
                fail.detail = "sequence " + std::to_string(v[i].sequence) + " where " + std::to_string(expected) +
                              " was expected";
                return false;
            }
        }
        return true;
    };
    if (!check(out, start_size)) return false;
    for (std::size_t k = 0; k < parts; ++k) {
        if (k > 0) {
            const std::size_t before = out.size();
            out.append(chunks[k]);
            chunks[k].clear();
            if (!check(out, before)) return false;
        }
        if (failed[k]) {
            fail.line = static_cast<std::uint64_t>(expected) + 1;
            fail.offset = fails[k].offset;
            fail.detail = fails[k].detail;
            return false;
        }
    }
    return true;
}

inline error_code engine::get(diagnostics* d, const session_key& k, const get_options& o,
                              std::optional<session>& out) {
    out.reset();
    if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
    if (auto why = detail::get_options_problem(o); !why.empty()) return bad_key(d, errc::invalid_argument, why);
    std::shared_ptr<open_session> sp;
    std::unique_lock<std::mutex> lk;
    if (auto ec = enter(d, k, false, sp, lk)) return ec;
    if (!sp) return {};
    open_session& s = *sp;
    jsonl_read_stats st;
    st.scanned_bytes = std::exchange(s.scanned, 0);
    st.file_bytes = s.cp.covered;
    session r;
    r.id = k.session_id;
    r.app_name = k.app_name;
    r.user_id = k.user_id;
    r.last_update_time = s.cp.last_update;
    r.last_sequence = s.cp.last_sequence;
    json::object sstate = s.cp.state;
    // Which events: the range filters narrow the first sequence to read; context_only
    // reads the ranges a context view needs (the shown summaries, what they leave out).
    const std::int64_t last = s.cp.last_sequence;
    std::int64_t from = 1;
    if (o.from_sequence) from = std::max(from, *o.from_sequence);
    const bool context = o.context_only && !s.cp.shown.empty();
    if (!context && o.num_recent_events && !o.from_timestamp && *o.num_recent_events < static_cast<std::size_t>(last))
        from = std::max(from, last - static_cast<std::int64_t>(*o.num_recent_events) + 1);
    std::vector<detail::sequence_range> ranges;
    if (context) ranges = detail::clip_ranges(s.cp.shown.load_ranges(o.with_newest_range), from);
    else ranges.push_back({from, last});
    std::erase_if(ranges, [&](const detail::sequence_range& r) { return r.first > last; });
    if (o.num_recent_events && *o.num_recent_events == 0) ranges.clear();
    struct span { // one read: [start, end) of the file, lines start_seq.., decoded first..last
        std::uint64_t start, end;
        std::int64_t start_seq, end_seq, first, last;
    };
    std::vector<span> spans;
    spans.reserve(ranges.size());
    for (const auto& r : ranges) {
        span x{};
        x.first = r.first;
        x.last = std::min(r.last, last);
        std::tie(x.start, x.start_seq) = s.cp.seek(x.first);
        std::tie(x.end, x.end_seq) = s.cp.seek_after(x.last);
        spans.push_back(x);
    }
    const bool want_events = !spans.empty();
    auto data = s.data;
    const fs::path transcript = s.transcript;
    const std::uint64_t header_end = s.cp.header_end;
    const std::string file_id = o.with_initial_state ? s.cp.file_id : std::string();
    lk.unlock(); // [0, covered) is verified and append-only: read it without the session
    // The creation state is the header's (line 1): read again only when asked for.
    if (o.with_initial_state)
        if (auto ec = read_initial_state(d, data->get(), transcript, header_end, file_id, r.initial_state)) return ec;
    if (want_events) {
        event_list decoded;
        std::size_t want = 0;
        for (const auto& x : spans) want += static_cast<std::size_t>(x.last - x.first + 1);
        decoded.reserve(want);
        read_buffers buffers; // one buffer and one slab for every range (a summary is one line)
        for (std::size_t i = 0; i < spans.size(); ++i) {
            const span& x = spans[i];
            jsonl_read_stats one;
            if (auto ec = read_events(d, data->get(), transcript, x.start, x.end, x.start_seq, x.end_seq, x.first,
                                      x.last, decoded, one, buffers))
                return ec;
            if (i == 0) {
                st.read_offset = one.read_offset;
                st.parse_offset = one.parse_offset;
            }
            st.bytes_read += one.bytes_read;
        }
        st.first_sequence = decoded.empty() ? 0 : decoded.front().sequence;
        st.events_decoded = decoded.size();
        if (o.from_timestamp)
            decoded.erase_if([&](const event& e) { return e.timestamp < *o.from_timestamp; });
        if (o.num_recent_events && decoded.size() > *o.num_recent_events)
            decoded.erase(decoded.begin(),
                          decoded.begin() + static_cast<std::ptrdiff_t>(decoded.size() - *o.num_recent_events));
        r.events = std::move(decoded);
    }
    json::object app_state, user_state;
    if (auto ec = read_shared(d, app_dir(k.app_name) / "state.json", app_state)) return ec;
    if (auto ec = read_shared(d, user_dir(k.app_name, k.user_id) / "state.json", user_state)) return ec;
    r.state = detail::merged_state(sstate, &app_state, &user_state);
    {
        std::lock_guard g(mu);
        stats_ = st;
    }
    out = std::move(r);
    return {};
}

/// The session-scope state of the header line [0, header_end) of the transcript whose
/// file id is `file_id` (line 1, verified when the session was loaded; re-verified here).
inline error_code engine::read_initial_state(diagnostics* d, int fd, const fs::path& transcript,
                                             std::uint64_t header_end, const std::string& file_id,
                                             json::object& out) {
    std::string line;
    if (header_end == 0) return fail(d, errc::corrupt_data, transcript, 1, 0, "no header line");
    if (auto ec = pread_all(fd, 0, static_cast<std::size_t>(header_end), line)) return io_fail(d, ec, transcript, "read");
    if (line.size() != header_end || line.back() != '\n')
        return fail(d, errc::corrupt_data, transcript, 1, 0, "header line changed since it was read");
    line.pop_back();
    std::string why;
    auto h = parse_header(line, why);
    if (!h) return fail(d, errc::corrupt_data, transcript, 1, 0, why);
    if (h->file_id != file_id) return fail(d, errc::corrupt_data, transcript, 1, 0, "header line changed since it was read");
    out = std::move(h->state);
    return {};
}

/// Reads the verified lines [start, end) (the first of sequence start_seq, the one at
/// `end` of end_seq) and appends the events of sequences `from` to `last` to `out`,
/// in chunks through one reused buffer.
inline error_code engine::read_events(diagnostics* d, int fd, const fs::path& transcript, std::uint64_t start,
                                      std::uint64_t end, std::int64_t start_seq, std::int64_t end_seq,
                                      std::int64_t from, std::int64_t last, event_list& out,
                                      jsonl_read_stats& st, read_buffers& rb) {
    constexpr std::size_t chunk = 8u << 20;
    if (out.capacity() < out.size() + static_cast<std::size_t>(last - from + 1))
        out.reserve(out.size() + static_cast<std::size_t>(last - from + 1));
    std::vector<char>& buf = rb.buf;
    std::vector<event_list>& scratch = rb.scratch;
    std::vector<event_slab>& slabs = rb.slabs;
    std::size_t carried = 0;        // bytes of an unfinished line at the front of buf
    std::uint64_t pos = start;      // file offset of the next read
    std::int64_t seq = start_seq;   // sequence of the line at the front of buf
    st.read_offset = start;
    st.parse_offset = 0;
    while (pos < end) {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - pos));
        if (buf.size() < carried + want) {
            buf.reserve(carried + want);
            advise_huge_pages(buf.data(), buf.capacity());
            buf.resize(carried + want);
        }
        std::size_t got = 0;
        if (auto ec = pread_into(fd, pos, buf.data() + carried, want, got)) return io_fail(d, ec, transcript, "read");
        if (got != want) return fail(d, errc::corrupt_data, transcript, 0, pos + got, "transcript shrank while read");
        const std::uint64_t base = pos - carried; // file offset of buf[0]
        pos += want;
        st.bytes_read += want;
        const std::size_t total = carried + want;
        const void* lastnl = ::memrchr(buf.data(), '\n', total);
        if (!lastnl) {
            carried = total; // one line longer than the chunk: read on
            continue;
        }
        const std::size_t complete = static_cast<std::size_t>(static_cast<const char*>(lastnl) - buf.data()) + 1;
        std::string_view region(buf.data(), complete);
        // Skip to the line of `from` (offset marks are every 64 lines).
        std::size_t skip = 0;
        while (seq < from && skip < region.size()) {
            const void* p = std::memchr(region.data() + skip, '\n', region.size() - skip);
            skip = static_cast<std::size_t>(static_cast<const char*>(p) - region.data()) + 1;
            ++seq;
        }
        if (seq >= from && skip < region.size()) {
            if (!st.parse_offset) st.parse_offset = base + skip;
            std::string_view lines = region.substr(skip);
            if (last + 1 < end_seq) { // a range that ends before `end`: its lines only
                std::size_t cut = 0;
                for (std::int64_t n = seq; n <= last && cut < lines.size(); ++n) {
                    const void* p = std::memchr(lines.data() + cut, '\n', lines.size() - cut);
                    cut = static_cast<std::size_t>(static_cast<const char*>(p) - lines.data()) + 1;
                }
                lines = lines.substr(0, cut);
            }
            const std::size_t before = out.size();
            decode_failure df;
            if (!decode_lines(lines, seq, lines.size() / 128, load_threads, out, df, scratch, slabs))
                return fail(d, errc::corrupt_data, transcript, df.line, base + skip + df.offset, df.detail);
            seq += static_cast<std::int64_t>(out.size() - before);
            if (seq > last) return {}; // the range is read
        }
        std::memmove(buf.data(), buf.data() + complete, total - complete);
        carried = total - complete;
    }
    if (carried) return fail(d, errc::corrupt_data, transcript, static_cast<std::uint64_t>(seq) + 1, end - carried, "incomplete line");
    if (seq != end_seq) return fail(d, errc::corrupt_data, transcript, static_cast<std::uint64_t>(seq) + 1, end, "lines missing");
    return {};
}

} // namespace libretto::detail::jsonl

#endif
