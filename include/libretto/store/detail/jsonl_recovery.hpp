// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_RECOVERY_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_RECOVERY_HPP

// Opening a transcript and catching up with it: the header, the checkpoint (meta.json, used
// only if it verifies), the scan of the lines after it, and the recovery of a torn tail
// (moved to a side file under the writer lock). Apart from the engine: this is the code that
// decides what a damaged file means.

#include <libretto/detail/deadline.hpp>
#include <libretto/store/detail/jsonl_engine.hpp>

#include <libretto/event/compaction_check.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/detail/jsonl_format.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace libretto::detail::jsonl {

/// Opens the transcript: header, checkpoint (if it verifies), then the tail after it.
inline error_code engine::load(diagnostics* d, open_session& s, bool& gone) {
    gone = false;
    s.data.reset();
    error_code ec;
    auto f = std::make_shared<file>(file::open(s.transcript, O_RDWR | O_APPEND, ec));
    if (ec) {
        if (ec == boost::system::errc::no_such_file_or_directory) {
            gone = true;
            return {};
        }
        return io_fail(d, ec, s.transcript, "open");
    }
    struct stat st;
    if (::fstat(f->get(), &st) != 0) return io_fail(d, errno_code(), s.transcript, "fstat");
    // The header line: read on from where the last read stopped, up to max_line_bytes().
    std::string head;
    std::size_t want = 64 * 1024;
    std::size_t nl = std::string::npos;
    for (;;) {
        const std::size_t have = head.size();
        head.resize(have + want);
        std::size_t got = 0;
        if (auto e = pread_into(f->get(), have, head.data() + have, want, got)) return io_fail(d, e, s.transcript, "read");
        head.resize(have + got);
        nl = head.find('\n', have);
        if (nl != std::string::npos || got < want) break;
        if (head.size() > max_line_bytes())
            return fail(d, errc::corrupt_data, s.transcript, 1, 0,
                        "header line is longer than " + std::to_string(max_line_bytes()) +
                            " bytes (max_event_bytes and the line's framing) and has no end");
        want = std::min<std::size_t>(want * 2, 4u << 20);
    }
    if (nl == std::string::npos)
        return fail(d, errc::corrupt_data, s.transcript, 1, 0, "header line is incomplete");
    std::string why;
    auto h = parse_header(std::string_view(head).substr(0, nl), why);
    if (!h) return fail(d, errc::corrupt_data, s.transcript, 1, 0, why);
    if (h->app_name != s.key.app_name || h->user_id != s.key.user_id || h->session_id != s.key.session_id)
        return fail(d, errc::corrupt_data, s.transcript, 1, 0, "header names another session");
    checkpoint cp;
    cp.file_id = h->file_id;
    cp.header_end = cp.covered = nl + 1;
    cp.created = cp.last_update = h->created;
    cp.state = std::move(h->state);
    s.checkpointed = 0;
    std::string mt;
    if (!read_file(s.dir / "meta.json", mt)) {
        if (auto m = parse_meta(mt)) {
            if (m->file_id == cp.file_id && m->header_end == cp.header_end &&
                m->covered <= static_cast<std::uint64_t>(st.st_size) && verify_last_line(f->get(), *m)) {
                m->created = cp.created;
                cp = std::move(*m);
                s.checkpointed = cp.covered;
            }
        }
    }
    s.data = std::move(f);
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    s.cp = std::move(cp);
    s.unsynced = false;
    const std::uint64_t before = s.cp.covered;
    auto e = catch_up(d, s, gone);
    if (!e && !gone && s.cp.covered - before >= 64 * 1024) write_checkpoint(s);
    return e;
}

/// True if the checkpoint's last line is in the transcript as it says.
inline bool engine::verify_last_line(int fd, const checkpoint& m) {
    if (m.last_sequence == 0) return m.covered == m.header_end;
    const std::uint64_t len = m.covered - m.last_line;
    if (len > (64u << 20)) return false;
    std::string line;
    if (pread_all(fd, m.last_line, static_cast<std::size_t>(len), line) || line.size() != len) return false;
    if (line.back() != '\n' || line.find('\n') != line.size() - 1) return false;
    line.pop_back();
    if (!verify_frame(line)) return false;
    unsigned char buf[4096];
    json::monotonic_resource mr(buf, sizeof buf);
    boost::system::error_code ec;
    json::value v = libretto::detail::parse_precise(line, ec, &mr);
    if (ec || !v.is_object()) return false;
    const auto* seq = v.get_object().if_contains("sequence");
    const auto* id = v.get_object().if_contains("id");
    return seq && seq->is_int64() && seq->get_int64() == m.last_sequence && id && id->is_string() &&
           id->get_string() == m.last_id;
}

/// Catches up with what others appended; recovers a torn tail (under the lock).
inline error_code engine::catch_up(diagnostics* d, open_session& s, bool& gone) {
    std::optional<steady::time_point> deadline;
    for (;;) {
        struct stat st;
        if (::stat(s.transcript.c_str(), &st) != 0) {
            if (errno == ENOENT) {
                gone = true;
                return {};
            }
            return io_fail(d, errno_code(), s.transcript, "stat");
        }
        const auto size = static_cast<std::uint64_t>(st.st_size);
        if (st.st_ino != s.ino || st.st_dev != s.dev || size < s.cp.covered) {
            // Deleted and created again, or truncated by another instance's recovery.
            const bool relock = s.lock.held();
            s.lock.close();
            auto ec = load(d, s, gone);
            if (ec || gone || !relock) return ec;
            return sync(d, s, true, gone);
        }
        if (size == s.cp.covered) return {};
        auto r = scan(s, size);
        if (r.status == scan_outcome::ok) return {};
        if (r.status == scan_outcome::io) return io_fail(d, r.error, s.transcript, "read");
        if (r.status == scan_outcome::corrupt) return fail(d, errc::corrupt_data, s.transcript, r.line, r.offset, r.detail);
        // A torn tail, or a write in progress by another writer: only the lock tells.
        // Writers hold it while they write, so if it is free the tail is torn; if it is
        // held, look again (re-scanning what the writer adds) until the lock timeout.
        if (s.lock.held()) return recover(d, s, r);
        if (!deadline) deadline = deadline_after(opt.lock_timeout);
        lock_options lo = lock_opt;
        lo.timeout = std::chrono::milliseconds(0);
        auto ec = s.lock.acquire(s.dir / "lock", lo, nonce);
        if (ec == errc::not_found) {
            gone = true;
            return {};
        }
        if (ec == errc::busy) {
            if (steady::now() >= *deadline) return take_lock(d, s, std::chrono::milliseconds(0));
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        if (ec) return io_fail(d, ec, s.dir / "lock", "lock");
    }
}

/// Scans [s.cp.covered, end), adding every valid line to the checkpoint.
inline scan_outcome engine::scan(open_session& s, std::uint64_t end) {
    scan_outcome r;
    constexpr std::size_t chunk = 4u << 20;
    std::string buf, tmp;
    std::uint64_t base = s.cp.covered, next = base;
    const std::uint64_t first = base;
    std::size_t i = 0;
    auto read_more = [&]() -> bool {
        buf.erase(0, i);
        base += i;
        i = 0;
        if (auto ec = pread_all(s.data->get(), next, static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - next)), tmp)) {
            r.status = scan_outcome::io;
            r.error = ec;
            return false;
        }
        if (tmp.empty()) end = next; // the file shrank meanwhile
        buf += tmp;
        next += tmp.size();
        return true;
    };
    const std::size_t limit = max_line_bytes();
    std::size_t searched = 0; // bytes of buf from i on known to hold no newline
    for (;;) {
        const std::size_t nl = buf.find('\n', i + searched);
        std::string why;
        bool good = false;
        if (nl == std::string::npos) {
            searched = buf.size() - i;
            if (next < end && searched <= limit) {
                if (!read_more()) return r; // moves the unfinished line to the front
                continue;
            }
            if (searched <= limit) break; // the end of the file: an unfinished last line
            why = "a line longer than " + std::to_string(limit) + " bytes (max_event_bytes and the line's framing)";
        }
        searched = 0;
        const std::string_view line(buf.data() + i, nl == std::string::npos ? buf.size() - i : nl - i);
        if (why.empty()) {
            good = verify_frame(line);
            if (!good) why = "checksum mismatch";
        }
        if (good) {
            unsigned char sbuf[8192];
            json::monotonic_resource mr(sbuf, sizeof sbuf);
            boost::system::error_code ec;
            json::value v = libretto::detail::parse_precise(line, ec, &mr);
            line_facts f;
            if (ec || !v.is_object()) {
                good = false;
                why = "invalid JSON";
            } else if (!read_facts(v.get_object(), f, why)) {
                good = false;
            } else if (f.sequence != s.cp.last_sequence + 1) {
                good = false;
                why = "sequence " + std::to_string(f.sequence) + " where " + std::to_string(s.cp.last_sequence + 1) +
                      " was expected";
            } else {
                apply_session_delta(v.get_object(), s.cp.state);
                s.cp.add(f, base + i, nl + 1 - i);
                i = nl + 1;
                continue;
            }
        }
        // A bad line: damage in the middle if a valid line follows, else a torn tail.
        r.offset = base + i;
        r.line = static_cast<std::uint64_t>(s.cp.last_sequence) + 2;
        r.detail = why;
        bool follows = false;
        if (auto ec = valid_line_follows(s.data->get(), buf, i, next, end, limit, follows)) {
            r.status = scan_outcome::io;
            r.error = ec;
            return r;
        }
        r.status = follows ? scan_outcome::corrupt : scan_outcome::torn;
        s.scanned += next - first;
        return r;
    }
    s.scanned += next - first;
    if (i < buf.size()) {
        r.status = scan_outcome::torn;
        r.offset = base + i;
        r.line = static_cast<std::uint64_t>(s.cp.last_sequence) + 2;
        r.detail = "incomplete line (no newline at the end of the file)";
    }
    return r;
}

/// The longest line this store reads: max_event_bytes (at least its default, so that a
/// store opened with a lower limit still reads what one with the default wrote) and the
/// framing; 0 (no limit) reads any length. A longer line is damage.
inline std::size_t engine::max_line_bytes() const noexcept {
    if (!opt.max_event_bytes) return std::numeric_limits<std::size_t>::max() / 2;
    return std::max<std::size_t>(opt.max_event_bytes, jsonl_store_options{}.max_event_bytes) + frame_tail + 1024;
}

/// Whether a valid line follows the bad line that starts at buf[pos]; buf holds the file
/// up to `next`, the file ends at `end`. Streams the rest in chunks, keeping at most one
/// unfinished line of up to `limit` bytes: a damaged tail of any size costs bounded memory.
inline error_code engine::valid_line_follows(int fd, std::string& buf, std::size_t pos, std::uint64_t& next,
                                             std::uint64_t end, std::size_t limit, bool& follows) {
    constexpr std::size_t chunk = 4u << 20;
    follows = false;
    bool in_bad_line = true; // the bad line's own bytes say nothing
    std::string tmp;
    for (;;) {
        for (std::size_t nl = buf.find('\n', pos); nl != std::string::npos; nl = buf.find('\n', pos)) {
            if (!in_bad_line && nl - pos <= limit && verify_frame(std::string_view(buf).substr(pos, nl - pos))) {
                follows = true;
                return {};
            }
            in_bad_line = false;
            pos = nl + 1;
        }
        if (next >= end) return {};
        // Keep the unfinished line, unless it is already too long to be valid.
        if (in_bad_line || buf.size() - pos > limit) {
            buf.clear();
            in_bad_line = true; // skip to its end
        } else {
            buf.erase(0, pos);
        }
        pos = 0;
        if (auto ec = pread_all(fd, next, static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - next)), tmp))
            return ec;
        if (tmp.empty()) return {}; // the file shrank meanwhile
        buf += tmp;
        next += tmp.size();
    }
}

inline bool engine::read_facts(const json::object& o, line_facts& out, std::string& why) {
    const auto* seq = o.if_contains("sequence");
    const auto* ts = o.if_contains("timestamp");
    const auto* id = o.if_contains("id");
    if (!seq || !seq->is_int64() || !id || !id->is_string() || (ts && !ts->is_number())) {
        why = "not an event (sequence, id or timestamp missing or mistyped)";
        return false;
    }
    out.sequence = seq->get_int64();
    out.timestamp = ts ? ts->to_number<double>() : 0.0;
    out.id.assign(id->get_string().data(), id->get_string().size());
    out.compaction_first = 0;
    out.compaction.reset();
    if (const auto* act = o.if_contains("actions")) {
        if (!act->is_object()) {
            why = "actions is not an object";
            return false;
        }
        if (const auto* d = act->get_object().if_contains("state_delta"); d && !d->is_object()) {
            why = "actions.state_delta is not an object";
            return false;
        }
        if (const auto* c = act->get_object().if_contains("compaction")) {
            const auto* f = c->is_object() ? c->get_object().if_contains("first_sequence") : nullptr;
            if (!f || !f->is_int64()) {
                why = "actions.compaction.first_sequence missing or mistyped";
                return false;
            }
            out.compaction_first = f->get_int64();
            // A compaction check_compaction refuses (another tool wrote it) covers nothing.
            const auto& co = c->get_object();
            const auto* l = co.if_contains("last_sequence");
            const auto* sm = co.if_contains("summary");
            if (l && l->is_int64() && sm && sm->is_string()) {
                event_compaction ec;
                ec.first_sequence = out.compaction_first;
                ec.last_sequence = l->get_int64();
                ec.summary.assign(sm->get_string().data(), sm->get_string().size());
                if (out.sequence >= 1 && !check_compaction(ec, out.sequence - 1)) // a line below 1 is refused later
                    out.compaction = detail::compaction_entry{out.sequence, ec.first_sequence, ec.last_sequence};
            }
        }
    }
    return true;
}

inline void engine::apply_session_delta(const json::object& ev, json::object& state) {
    const auto* act = ev.if_contains("actions");
    if (!act) return;
    const auto* d = act->get_object().if_contains("state_delta");
    if (!d) return;
    for (const auto& kv : d->get_object()) {
        if (scope_of(kv.key()) != state_scope::session) continue;
        if (kv.value().is_null()) state.erase(kv.key());
        else state[kv.key()] = json::value(kv.value(), state.storage());
    }
}

/// Moves the torn tail [r.offset, EOF) to a side file, truncates, reports. Under the lock.
inline error_code engine::recover(diagnostics* d, open_session& s, const scan_outcome& r) {
    struct stat st;
    if (::fstat(s.data->get(), &st) != 0) return io_fail(d, errno_code(), s.transcript, "fstat");
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (r.offset != s.cp.covered || size < r.offset) return fail(d, errc::corrupt_data, s.transcript, r.line, r.offset, "recovery lost its place");
    const std::uint64_t tail = size - r.offset;
    const auto ms = static_cast<std::uint64_t>(unix_now() * 1000);
    fs::path side = s.dir / ("torn-" + std::to_string(r.offset) + "-" + std::to_string(ms) + ".bin");
    error_code ec;
    {
        file f = file::open(side, O_WRONLY | O_CREAT | O_EXCL, ec);
        if (ec == boost::system::errc::file_exists) {
            side = s.dir / ("torn-" + std::to_string(r.offset) + "-" + std::to_string(ms) + "-" + nonce + ".bin");
            f = file::open(side, O_WRONLY | O_CREAT | O_EXCL, ec);
        }
        if (ec) return io_fail(d, ec, side, "create side file");
        // Copied in chunks: a damaged tail of any size costs bounded memory.
        std::string part;
        for (std::uint64_t at = r.offset; at < size;) {
            if (auto e = pread_all(s.data->get(), at, static_cast<std::size_t>(std::min<std::uint64_t>(4u << 20, size - at)), part))
                return io_fail(d, e, s.transcript, "read");
            if (part.empty()) return fail(d, errc::corrupt_data, s.transcript, r.line, at, "the file shrank during recovery");
            if (auto e = write_all(f.get(), part)) return io_fail(d, e, side, "write side file");
            at += part.size();
        }
        if (durable())
            if (auto e = fsync_fd(f.get())) return io_fail(d, e, side, "fsync side file");
    }
    if (durable())
        if (auto e = fsync_dir(s.dir)) return io_fail(d, e, s.dir, "fsync");
    if (::ftruncate(s.data->get(), static_cast<off_t>(r.offset)) != 0)
        return io_fail(d, errno_code(), s.transcript, "truncate");
    if (durable())
        if (auto e = fdatasync_fd(s.data->get())) return io_fail(d, e, s.transcript, "fdatasync");
    {
        std::lock_guard g(mu);
        recoveries_.push_back({s.key, s.transcript, side, r.offset, tail, s.cp.last_sequence, r.line, r.detail});
    }
    s.checkpointed = 0;
    write_checkpoint(s);
    return {};
}

inline void engine::write_checkpoint(open_session& s) {
    if (!s.data || s.cp.covered == s.checkpointed) return;
    if (!write_file_atomic(s.dir / "meta.json", meta_line(s.cp), false, nonce)) s.checkpointed = s.cp.covered;
}

} // namespace libretto::detail::jsonl

#endif
