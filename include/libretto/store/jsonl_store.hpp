// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_JSONL_STORE_HPP
#define LIBRETTO_STORE_JSONL_STORE_HPP

// jsonl_store: the embedded default store. A directory of append-only JSON Lines
// transcripts, one per session, safe to share between store instances and processes.
//
//   <directory>/apps/<app>/state.json                     app: scope (atomic replace)
//   <directory>/apps/<app>/index.json                     session index (atomic replace; a cache)
//   <directory>/apps/<app>/users/<user>/state.json        user: scope (atomic replace)
//   <directory>/apps/<app>/users/<user>/sessions/<id>/
//       transcript.jsonl    header line, then one event per line, each with a CRC-32C
//       meta.json           checkpoint: state, sequence, byte offsets (a cache, verified)
//       lock                the writer lock (flock + holder record: pid, start time)
//       torn-<offset>-<ms>.bin   bytes of a torn tail moved aside by recovery
//
// docs/stores.md explains the design: durability levels, the checkpoint and the index,
// locking, recovery and maintenance. POSIX only (Linux: /proc is read for process start
// times).

#include <libretto/async.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/event/detail/event_slab.hpp>
#include <libretto/event/json.hpp>
#include <libretto/store/detail/jsonl_decode.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/detail/jsonl_format.hpp>
#include <libretto/store/detail/await_inline.hpp>
#include <libretto/store/detail/post_result.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace libretto {

/// What an acknowledged append survives. Every level survives a crash of the process
/// (SIGKILL included): an append is acknowledged only after write(2) returned, so the
/// bytes are in the kernel. The levels differ on power failure or a kernel crash.
enum class durability {
    /// No fsync anywhere. A power failure may lose whatever the kernel had not written
    /// back yet (up to ~30 s on Linux), including creates, deletes and shared state.
    none,
    /// fdatasync of a transcript when the caller says a turn ended (jsonl_store::flush /
    /// async_flush; the runner calls it after each turn). Creates, deletes, app:/user:
    /// state and the index are fsynced when made. A power failure loses at most the events
    /// appended since the session's last flush.
    per_turn,
    /// fdatasync after every append, before it is acknowledged. A power failure loses no
    /// acknowledged event.
    per_event,
};

struct jsonl_store_options {
    /// The store's directory; created if missing.
    std::filesystem::path directory = "sessions";
    libretto::durability durability = libretto::durability::per_turn;
    /// Largest accepted event, as serialized JSON bytes; 0: no limit. Oversize appends fail
    /// with errc::oversize and write nothing.
    std::size_t max_event_bytes = 16 * 1024 * 1024;
    /// How long a writer waits for a session's lock before errc::busy.
    std::chrono::milliseconds lock_timeout{10'000};
    /// A writer keeps a session's lock this long after its last append, so a burst of
    /// appends takes it once (0: release after every operation). Other writers wait at
    /// most this long after the burst.
    std::chrono::milliseconds lock_linger{5};
    /// A lock held while its record names a dead process (or a reused pid) is reclaimed
    /// once the record is this old.
    std::chrono::milliseconds stale_lock_age{2'000};
    /// Threads of the store's own pool for blocking work (fsync, reads, lock waits).
    std::size_t threads = 2;
    /// Run blocking work here instead of on an own pool (a thread_pool's executor, say;
    /// never the io_context the caller runs).
    std::optional<boost::asio::any_io_executor> blocking_executor{};
    /// Appends that need no fsync and find the session's lock already held run on the
    /// caller's thread (one write(2)); the result still completes through a post.
    bool inline_appends = true;
    /// Sessions kept open (descriptors, checkpoints in memory) per store instance.
    std::size_t max_open_sessions = 256;
    /// Write a session's checkpoint (meta.json) after this many new transcript bytes.
    std::uint64_t checkpoint_bytes = 4 * 1024 * 1024;
    /// Threads decoding a large read (over 1 MiB); 0: the hardware's, at most 8.
    unsigned load_threads = 0;
};

/// A torn or corrupt tail found when a session was opened: the intact prefix was kept and
/// the bad bytes were moved to `side_file`.
struct jsonl_recovery {
    session_key key{};
    std::filesystem::path transcript{};
    std::filesystem::path side_file{};
    std::uint64_t intact_bytes = 0;  ///< the transcript's size after recovery
    std::uint64_t moved_bytes = 0;   ///< bytes moved to the side file
    std::int64_t last_sequence = 0;  ///< newest event kept
    std::uint64_t line = 0;          ///< first bad line (1 is the header)
    std::string reason{};
};

/// What the store's last get read (for tests and benchmarks).
struct jsonl_read_stats {
    std::uint64_t file_bytes = 0;     ///< verified transcript size
    std::uint64_t read_offset = 0;    ///< where reading started (an offset mark at or before parse_offset)
    std::uint64_t parse_offset = 0;   ///< offset of the first decoded line
    std::uint64_t bytes_read = 0;     ///< transcript bytes read for events
    std::int64_t first_sequence = 0;  ///< of the first decoded event (0: none)
    std::size_t events_decoded = 0;
    std::uint64_t scanned_bytes = 0;  ///< bytes scanned to catch up with the file (tail after the checkpoint)
};

/// Maintenance: which sessions to remove. Unset limits do not apply.
struct jsonl_maintenance_options {
    std::optional<std::string> app_name{};          ///< only this app (default: every app)
    std::optional<double> max_idle_seconds{};        ///< remove sessions idle longer than this
    std::optional<std::size_t> max_sessions{};       ///< keep at most this many (the newest)
    std::optional<std::uint64_t> max_bytes{};        ///< when the directory is over this, remove
    std::optional<std::uint64_t> high_water_bytes{}; ///< ... oldest first down to this (default 80 % of max_bytes)
    bool dry_run = false;                            ///< report, remove nothing
    std::optional<double> now{};                     ///< the clock (default: now)
};

struct jsonl_removal {
    session_key key{};
    double last_update = 0;
    std::uint64_t bytes = 0;
    std::string reason{}; ///< "idle", "max_sessions" or "byte_budget"
};

struct jsonl_maintenance_report {
    bool dry_run = false;
    std::size_t sessions_before = 0;
    std::uint64_t bytes_before = 0;
    std::vector<jsonl_removal> removed{};   ///< removed (or, in a dry run, would be), in order
    std::vector<session_key> busy{};        ///< selected but locked by a writer: kept
    std::size_t sessions_after = 0;
    std::uint64_t bytes_after = 0;
};

namespace detail::jsonl {

using steady = std::chrono::steady_clock;

inline double unix_now() { return event::now(); }

/// One session as this store instance has it open.
struct open_session {
    std::mutex mu; // serialises this instance's work on the session
    session_key key;
    fs::path dir, transcript;
    std::shared_ptr<file> data; // the transcript, O_RDWR | O_APPEND; null: not loaded
    dev_t dev = 0;
    ino_t ino = 0;
    checkpoint cp;                 // what the verified prefix [0, cp.covered) establishes
    std::uint64_t checkpointed = 0; // cp.covered when meta.json was last written
    writer_lock lock;              // held: nobody else can have written since we caught up
    steady::time_point last_use{};
    std::optional<boost::asio::steady_timer> timer;
    bool timer_armed = false;
    bool checkpoint_posted = false; // a checkpoint task is queued
    bool unsynced = false;
    bool closed = false; // retired (evicted, deleted, store closing): look it up again
    std::uint64_t touch = 0;
    std::uint64_t scanned = 0; // bytes scanned by catch-ups, for jsonl_read_stats
};

struct index_entry {
    std::string user_id, session_id;
    std::uint64_t ino = 0, size = 0;
    std::int64_t mtime_ns = 0;
    double created = 0, last_update = 0;
    std::int64_t last_sequence = 0;
};

inline std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

/// The outcome of scanning transcript lines from a checkpoint on.
struct scan_outcome {
    enum kind { ok, torn, corrupt, io } status = ok;
    std::uint64_t offset = 0; ///< the first bad byte
    std::uint64_t line = 0;   ///< its line number
    std::string detail;
    boost::system::error_code error; ///< for io
};

/// Decodes the framed event lines of `buf` (each ending in '\n'), expecting sequences
/// first_seq, first_seq + 1, ... Large inputs are split over threads.
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

/// Appends the events of `buf` to `out`. `scratch` holds the other threads' lists between
/// calls (kept with their capacity), `slabs` each thread's event_slab (so that a load fills
/// its blocks across calls). Each thread allocates its events' nodes; stitching moves
/// pointers only.
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

/// The engine behind jsonl_store (shared by its copies).
class engine : public std::enable_shared_from_this<engine> {
public:
    engine(jsonl_store_options o, boost::asio::any_io_executor blocking_ex)
        : opt(std::move(o)), root(opt.directory), blocking(std::move(blocking_ex)) {
        std::string id = event::new_id();
        for (char c : id)
            if (c != '-' && nonce.size() < 16) nonce += c;
        lock_opt.timeout = opt.lock_timeout;
        lock_opt.stale_age = opt.stale_lock_age;
        std::error_code fec;
        fs::create_directories(root, fec);
        load_threads = opt.load_threads ? opt.load_threads
                                        : std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    }

    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    ~engine() {
        std::vector<std::shared_ptr<open_session>> all;
        {
            std::lock_guard g(mu);
            for (auto& [k, s] : sessions) all.push_back(s);
            sessions.clear();
        }
        for (auto& s : all) {
            std::lock_guard l(s->mu);
            retire(*s, true);
        }
    }

    jsonl_store_options opt;
    fs::path root;
    std::string nonce;
    boost::asio::any_io_executor blocking;
    lock_options lock_opt;
    unsigned load_threads = 1;

    // ---- reports --------------------------------------------------------------------

    std::vector<jsonl_recovery> recoveries() const {
        std::lock_guard g(mu);
        return recoveries_;
    }
    jsonl_read_stats last_read_stats() const {
        std::lock_guard g(mu);
        return stats_;
    }

    // ---- paths --------------------------------------------------------------------

    fs::path app_dir(const std::string& app) const { return root / "apps" / app; }
    fs::path user_dir(const std::string& app, const std::string& user) const { return app_dir(app) / "users" / user; }
    fs::path sessions_dir(const std::string& app, const std::string& user) const {
        return user_dir(app, user) / "sessions";
    }
    fs::path session_dir(const session_key& k) const { return sessions_dir(k.app_name, k.user_id) / k.session_id; }

    bool durable() const { return opt.durability != durability::none; }

    // ---- operations -------------------------------------------------------------------

    error_code create(diagnostics* d, create_options o, session& out) {
        if (auto ec = detail::validate_key(o.app_name, o.user_id, o.session_id.empty() ? "-" : o.session_id))
            return bad_key(d, ec, detail::key_problem(o.app_name, o.user_id, o.session_id.empty() ? "-" : o.session_id));
        if (auto why = detail::state_problem(o.state); !why.empty()) return bad_key(d, errc::invalid_argument, why);
        if (o.session_id.empty()) o.session_id = event::new_id();
        const session_key k{o.app_name, o.user_id, o.session_id};
        auto routed = detail::route_delta(o.state);
        const fs::path sdir = session_dir(k);
        if (auto ec = make_dirs(d, sdir.parent_path())) return ec;
        if (::mkdir(sdir.c_str(), 0755) != 0) {
            if (errno != EEXIST) return io_fail(d, errno_code(), sdir, "mkdir");
            std::error_code fec;
            if (fs::exists(sdir / "transcript.jsonl", fec)) return errc::already_exists;
            // A directory without a transcript: an interrupted create, or one in progress
            // (its creator holds the lock).
        }
        std::shared_ptr<open_session> sp;
        std::unique_lock<std::mutex> lk;
        lock_entry(k, sp, lk);
        // Whatever this instance had open under this key is gone: start afresh.
        sp->data.reset();
        sp->lock.close();
        sp->cp = {};
        sp->unsynced = false;
        lock_holder h;
        auto ec = sp->lock.acquire(sdir / "lock", lock_opt, nonce, &h, [this, p = sp.get()] { release_idle_leases(p); });
        if (ec == errc::busy) return errc::already_exists; // its creator holds it
        if (ec == errc::not_found) return io_fail(d, errno_code(ENOENT), sdir, "session directory vanished");
        if (ec) return io_fail(d, ec, sdir / "lock", "lock");
        ec = create_locked(d, k, routed, sp, out);
        after_write(sp, false);
        if (ec) {
            if (!sp->data) sp->lock.release();
            return ec;
        }
        lk.unlock();
        return {};
    }

    error_code create_locked(diagnostics* d, const session_key& k, const detail::routed_delta& routed,
                             const std::shared_ptr<open_session>& sp, session& out) {
        const fs::path sdir = sp->dir;
        error_code ec;
        std::error_code fec;
        if (fs::exists(sdir / "transcript.jsonl", fec)) return errc::already_exists;
        header h_;
        h_.app_name = k.app_name;
        h_.user_id = k.user_id;
        h_.session_id = k.session_id;
        h_.file_id = event::new_id();
        h_.created = unix_now();
        for (const auto& kv : routed.session)
            if (!kv.value().is_null()) h_.state[kv.key()] = kv.value();
        const std::string line = header_line(h_);
        const fs::path tp = sdir / "transcript.jsonl";
        // A failure once the transcript is in place takes it back: without its transcript the
        // session does not exist, so an error means "not created" and a retry creates it.
        auto unmake = [&] {
            std::error_code rfec;
            fs::remove(tp, rfec);
            if (durable()) (void)fsync_dir(sdir);
        };
        bool renamed = false;
        if (auto e = write_file_atomic(tp, line, durable(), nonce, &renamed)) {
            if (renamed) unmake(); // only the directory's fsync failed
            return io_fail(d, e, tp, "create transcript");
        }
        if (durable())
            if (auto e = fsync_dir(sdir.parent_path())) {
                unmake();
                return io_fail(d, e, sdir.parent_path(), "fsync");
            }
        if (auto e = write_shared_scopes(d, k, routed)) {
            unmake();
            return e;
        }
        // Install the open session.
        auto f = std::make_shared<file>(file::open(tp, O_RDWR | O_APPEND, ec));
        if (ec) return io_fail(d, ec, tp, "open");
        struct stat st;
        if (::fstat(f->get(), &st) != 0) return io_fail(d, errno_code(), tp, "fstat");
        sp->data = std::move(f);
        sp->dev = st.st_dev;
        sp->ino = st.st_ino;
        checkpoint cp;
        cp.file_id = h_.file_id;
        cp.header_end = cp.covered = line.size();
        cp.created = cp.last_update = h_.created;
        cp.state = h_.state;
        sp->cp = std::move(cp);
        sp->checkpointed = 0;
        index_entry ie{k.user_id, k.session_id, static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                       mtime_ns(st), h_.created, h_.created, 0};
        json::object app_state, user_state;
        if (auto e = read_shared(d, app_dir(k.app_name) / "state.json", app_state)) return e;
        if (auto e = read_shared(d, user_dir(k.app_name, k.user_id) / "state.json", user_state)) return e;
        out = make_session(k, sp->cp, app_state, user_state);
        index_update(k.app_name, &ie, nullptr);
        return {};
    }

    error_code get(diagnostics* d, const session_key& k, const get_options& o, std::optional<session>& out) {
        out.reset();
        if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
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
        lk.unlock(); // [0, covered) is verified and append-only: read it without the session
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

    /// What read_events reads and decodes through, kept across the ranges of one get.
    struct read_buffers {
        std::vector<char> buf;
        std::vector<event_list> scratch;
        std::vector<event_slab> slabs;
    };

    /// Reads the verified lines [start, end) (the first of sequence start_seq, the one at
    /// `end` of end_seq) and appends the events of sequences `from` to `last` to `out`,
    /// in chunks through one reused buffer.
    error_code read_events(diagnostics* d, int fd, const fs::path& transcript, std::uint64_t start, std::uint64_t end,
                           std::int64_t start_seq, std::int64_t end_seq, std::int64_t from, std::int64_t last,
                           event_list& out, jsonl_read_stats& st, read_buffers& rb) {
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

    error_code list(diagnostics* d, const list_options& o, list_page& out) {
        out = {};
        if (auto ec = validate_id(o.app_name)) return bad_key(d, ec, "app name " + id_problem(o.app_name));
        if (o.user_id)
            if (auto ec = validate_id(*o.user_id)) return bad_key(d, ec, "user id " + id_problem(*o.user_id));
        if (o.page_size == 0 || o.page_size > 1000) return bad_key(d, errc::invalid_argument, "page_size must be 1..1000");
        std::optional<detail::page_cursor> cursor;
        if (!o.page_token.empty()) {
            auto c = detail::parse_page_token(o.page_token);
            if (!c) return c.error();
            cursor = std::move(*c);
        }
        std::vector<summary> all;
        bool index_dirty = false;
        std::map<std::string, index_entry> idx;
        if (auto ec = summarize_app(d, o.app_name, o.user_id ? &*o.user_id : nullptr, all, idx, index_dirty)) return ec;
        std::vector<const summary*> rows;
        for (const auto& s : all)
            if (!cursor || detail::after_cursor(*cursor, s.e.last_update, s.e.user_id, s.e.session_id))
                rows.push_back(&s);
        std::sort(rows.begin(), rows.end(), [](const summary* a, const summary* b) {
            return detail::list_before(a->e.last_update, a->e.user_id, a->e.session_id, b->e.last_update, b->e.user_id,
                                       b->e.session_id);
        });
        const std::size_t n = std::min(rows.size(), o.page_size);
        json::object app_state;
        if (auto ec = read_shared(d, app_dir(o.app_name) / "state.json", app_state)) return ec;
        std::map<std::string, json::object> user_states;
        for (std::size_t i = 0; i < n; ++i) {
            const auto& e = rows[i]->e;
            const session_key k{o.app_name, e.user_id, e.session_id};
            std::shared_ptr<open_session> sp;
            std::unique_lock<std::mutex> lk;
            if (auto ec = enter(d, k, false, sp, lk)) return ec;
            if (!sp) continue; // deleted meanwhile
            auto us = user_states.find(e.user_id);
            if (us == user_states.end()) {
                json::object u;
                if (auto ec = read_shared(d, user_dir(o.app_name, e.user_id) / "state.json", u)) return ec;
                us = user_states.emplace(e.user_id, std::move(u)).first;
            }
            out.sessions.push_back(make_session(k, sp->cp, app_state, us->second));
            // The listed time is the one the page was ordered by.
            out.sessions.back().last_update_time = e.last_update;
        }
        if (rows.size() > n)
            out.next_page_token =
                detail::make_page_token(rows[n - 1]->e.last_update, rows[n - 1]->e.user_id, rows[n - 1]->e.session_id);
        if (index_dirty) write_index(o.app_name, all, o.user_id ? &*o.user_id : nullptr, idx);
        return {};
    }

    error_code remove(diagnostics* d, const session_key& k) { return remove(d, k, std::nullopt); }

    error_code remove(diagnostics* d, const session_key& k, std::optional<std::chrono::milliseconds> timeout) {
        if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
        const fs::path sdir = session_dir(k);
        std::shared_ptr<open_session> sp;
        std::unique_lock<std::mutex> lk;
        lock_entry(k, sp, lk);
        std::error_code fec;
        if (!fs::exists(sdir, fec)) {
            forget(sp);
            return {};
        }
        if (!sp->lock.held()) {
            auto ec = take_lock(d, *sp, timeout);
            if (ec == errc::not_found) {
                forget(sp);
                return {};
            }
            if (ec) return ec;
        }
        const fs::path trash = root / ".trash";
        fs::create_directories(trash, fec);
        const fs::path dst = trash / event::new_id();
        if (::rename(sdir.c_str(), dst.c_str()) != 0) {
            auto e = errno_code();
            if (e != boost::system::errc::no_such_file_or_directory) {
                after_write(sp, false);
                return io_fail(d, e, sdir, "rename to trash");
            }
        }
        if (durable()) fsync_dir(sdir.parent_path());
        forget(sp);
        lk.unlock();
        fs::remove_all(dst, fec);
        index_update(k.app_name, nullptr, &k);
        return {};
    }

    /// A partial event is not stored (sequence 0).
    error_code append(diagnostics* d, session& caller, event e, std::int64_t& seq) {
        return append(d, caller, std::make_shared<event>(std::move(e)), seq);
    }
    /// append(), with the event in the node the caller's session keeps on success.
    error_code append(diagnostics* d, session& caller, std::shared_ptr<event> node, std::int64_t& seq) {
        seq = 0;
        if (node->partial) return {};
        const session_key k{caller.app_name, caller.user_id, caller.id};
        if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
        std::shared_ptr<open_session> sp;
        std::unique_lock<std::mutex> lk;
        if (auto ec = enter(d, k, true, sp, lk)) return ec;
        if (!sp) return errc::not_found;
        auto ec = append_locked(d, *sp, caller, node, seq);
        after_write(sp, false);
        return ec;
    }

    /// The fast path: true if it ran (result in ec/seq), false to go through the pool.
    /// `node` is left alone when it returns false.
    bool try_append_inline(diagnostics* d, session& caller, std::shared_ptr<event>& node, std::int64_t& seq, error_code& ec) {
        if (!opt.inline_appends || opt.durability == durability::per_event) return false;
        const event& e = *node;
        if (e.partial) {
            seq = 0;
            ec = {};
            return true;
        }
        for (const auto& kv : e.actions.state_delta) {
            const auto sc = scope_of(kv.key());
            if (sc == state_scope::app || sc == state_scope::user) return false; // shared files: fsync
        }
        // No id check here: only sessions opened with valid ids are in `sessions`, and a key
        // not found takes the slow path, which checks and reports it.
        std::shared_ptr<open_session> sp;
        {
            std::lock_guard g(mu);
            auto it = sessions.find(std::tie(caller.app_name, caller.user_id, caller.id));
            if (it == sessions.end()) return false;
            sp = it->second;
            sp->touch = ++touch_;
        }
        std::unique_lock l(sp->mu, std::try_to_lock);
        if (!l || sp->closed || !sp->data || !sp->lock.held()) return false;
        ec = append_locked(d, *sp, caller, node, seq);
        after_write(sp, true);
        return true;
    }

    error_code flush(diagnostics* d, const session_key& k) {
        if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
        if (auto sp = lookup(k, false)) {
            std::unique_lock l(sp->mu);
            if (!sp->closed && sp->data) {
                if (sp->unsynced) {
                    if (auto ec = fdatasync_fd(sp->data->get())) return io_fail(d, ec, sp->transcript, "fdatasync");
                    sp->unsynced = false;
                }
                checkpoint_if_worth_it(*sp);
                return {};
            }
        }
        error_code ec;
        const fs::path tp = session_dir(k) / "transcript.jsonl";
        file f = file::open(tp, O_RDONLY, ec);
        if (ec == boost::system::errc::no_such_file_or_directory) return errc::not_found;
        if (ec) return io_fail(d, ec, tp, "open");
        if (auto e = fdatasync_fd(f.get())) return io_fail(d, e, tp, "fdatasync");
        return {};
    }

    error_code maintain(diagnostics* d, const jsonl_maintenance_options& o, jsonl_maintenance_report& rep) {
        rep = {};
        rep.dry_run = o.dry_run;
        if (o.app_name)
            if (auto ec = validate_id(*o.app_name)) return bad_key(d, ec, "app name " + id_problem(*o.app_name));
        if (o.max_bytes && o.high_water_bytes && *o.high_water_bytes > *o.max_bytes) return errc::invalid_argument;
        // Pending checkpoints would otherwise land between a dry run and the real one.
        checkpoint_all();
        std::vector<std::string> apps;
        if (o.app_name) apps.push_back(*o.app_name);
        else list_dir(root / "apps", apps);
        struct cand {
            session_key key;
            double last_update;
            std::uint64_t bytes;
            const char* reason = nullptr;
        };
        std::vector<cand> cands;
        for (const auto& app : apps) {
            std::vector<summary> all;
            std::map<std::string, index_entry> idx;
            bool dirty = false;
            if (auto ec = summarize_app(d, app, nullptr, all, idx, dirty)) return ec;
            if (dirty) write_index(app, all, nullptr, idx);
            for (const auto& s : all) {
                session_key k{app, s.e.user_id, s.e.session_id};
                cands.push_back({k, s.e.last_update, dir_bytes(session_dir(k))});
            }
        }
        // Leftovers of interrupted deletes.
        std::error_code fec;
        if (!o.dry_run) fs::remove_all(root / ".trash", fec);
        rep.sessions_before = cands.size();
        rep.bytes_before = dir_bytes(o.app_name ? app_dir(*o.app_name) : root);
        const double now = o.now ? *o.now : unix_now();
        // Oldest first; ties by key, so a dry run and a real run choose alike.
        std::sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) {
            if (a.last_update != b.last_update) return a.last_update < b.last_update;
            return std::tie(a.key.app_name, a.key.user_id, a.key.session_id) <
                   std::tie(b.key.app_name, b.key.user_id, b.key.session_id);
        });
        if (o.max_idle_seconds)
            for (auto& c : cands)
                if (now - c.last_update > *o.max_idle_seconds) c.reason = "idle";
        if (o.max_sessions) {
            std::size_t kept = 0;
            for (auto it = cands.rbegin(); it != cands.rend(); ++it) {
                if (it->reason) continue;
                if (kept < *o.max_sessions) ++kept;
                else it->reason = "max_sessions";
            }
        }
        std::uint64_t bytes = rep.bytes_before;
        auto removed_bytes = [&] {
            std::uint64_t b = 0;
            for (auto& c : cands)
                if (c.reason) b += c.bytes;
            return b;
        };
        if (o.max_bytes && bytes - std::min(bytes, removed_bytes()) > *o.max_bytes) {
            const std::uint64_t target = o.high_water_bytes ? *o.high_water_bytes : *o.max_bytes / 10 * 8;
            std::uint64_t left = bytes - std::min(bytes, removed_bytes());
            for (auto& c : cands) {
                if (left <= target) break;
                if (c.reason) continue;
                c.reason = "byte_budget";
                left -= std::min(left, c.bytes);
            }
        }
        std::uint64_t gone_bytes = 0;
        std::size_t gone = 0;
        for (auto& c : cands) {
            if (!c.reason) continue;
            error_code ec = o.dry_run ? probe_lock(c.key) : remove_now(d, c.key);
            if (ec == errc::busy) {
                rep.busy.push_back(c.key);
                continue;
            }
            if (ec) return ec;
            rep.removed.push_back({c.key, c.last_update, c.bytes, c.reason});
            gone_bytes += c.bytes;
            ++gone;
        }
        rep.sessions_after = rep.sessions_before - gone;
        rep.bytes_after = rep.bytes_before - std::min(rep.bytes_before, gone_bytes);
        return {};
    }

private:
    // ---- diagnostics --------------------------------------------------------------------

    /// Writes "jsonl_store: <file>:<line> (byte <offset>): <code's message> (<detail>)" to the
    /// caller's diagnostics (if any) and returns `code`.
    static error_code fail(diagnostics* d, error_code code, const fs::path& f, std::uint64_t line, std::uint64_t offset,
                           std::string_view detail) {
        if (!d) return code;
        std::string m = "jsonl_store: ";
        if (!f.empty()) {
            m += f.string();
            if (line) m += ":" + std::to_string(line);
            if (offset) m += " (byte " + std::to_string(offset) + ")";
            m += ": ";
        }
        m += code.message();
        if (!detail.empty()) {
            m += " (";
            m += detail;
            m += ')';
        }
        d->assign(std::move(m));
        return code;
    }
    /// A refused id or option: the diagnostic says which and why (no file involved).
    static error_code bad_key(diagnostics* d, error_code code, std::string_view why) { return fail(d, code, {}, 0, 0, why); }
    static error_code io_fail(diagnostics* d, error_code sys, const fs::path& f, std::string_view what) {
        return fail(d, errc::io_error, f, 0, 0, std::string(what) + ": " + sys.message());
    }

    // ---- open sessions ------------------------------------------------------------------

    static auto key_of(const session_key& k) { return std::tie(k.app_name, k.user_id, k.session_id); }

    std::shared_ptr<open_session> lookup(const session_key& k, bool make) {
        std::vector<std::shared_ptr<open_session>> evict;
        std::shared_ptr<open_session> s;
        {
            std::lock_guard g(mu);
            auto it = sessions.find(key_of(k));
            if (it != sessions.end()) {
                it->second->touch = ++touch_;
                return it->second;
            }
            if (!make) return nullptr;
            s = std::make_shared<open_session>();
            s->key = k;
            s->dir = session_dir(k);
            s->transcript = s->dir / "transcript.jsonl";
            s->touch = ++touch_;
            sessions.emplace(key_tuple(k.app_name, k.user_id, k.session_id), s);
            if (sessions.size() > std::max<std::size_t>(opt.max_open_sessions, 1)) {
                std::vector<std::shared_ptr<open_session>> v;
                for (auto& [key, p] : sessions)
                    if (p != s) v.push_back(p);
                std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a->touch < b->touch; });
                const std::size_t keep = opt.max_open_sessions * 3 / 4;
                const std::size_t drop = sessions.size() > keep ? sessions.size() - keep : 0;
                v.resize(std::min(v.size(), drop));
                evict = std::move(v);
            }
        }
        for (auto& e : evict) {
            std::unique_lock l(e->mu, std::try_to_lock);
            if (!l || e->closed) continue;
            forget(e, true);
        }
        return s;
    }

    /// Locks the entry for k (making one if needed), never a retired one.
    void lock_entry(const session_key& k, std::shared_ptr<open_session>& sp, std::unique_lock<std::mutex>& lk) {
        for (;;) {
            sp = lookup(k, true);
            lk = std::unique_lock(sp->mu);
            if (!sp->closed) return;
            lk.unlock();
        }
    }

    /// Retires `s` (caller holds s.mu) and drops it from the map.
    void forget(const std::shared_ptr<open_session>& s, bool keep_checkpoint = false) {
        retire(*s, keep_checkpoint);
        std::lock_guard g(mu);
        auto it = sessions.find(key_of(s->key));
        if (it != sessions.end() && it->second == s) sessions.erase(it);
    }

    void retire(open_session& s, bool keep_checkpoint) {
        if (s.timer) s.timer->cancel();
        if (keep_checkpoint && s.data) write_checkpoint(s);
        s.lock.close();
        s.data.reset();
        s.closed = true;
    }

    /// The open session for k, locked, loaded and caught up with the file (and holding the
    /// writer lock if `want_lock`). A null `sp` means the session does not exist.
    error_code enter(diagnostics* d, const session_key& k, bool want_lock, std::shared_ptr<open_session>& sp,
                     std::unique_lock<std::mutex>& lk) {
        lock_entry(k, sp, lk);
        bool gone = false;
        error_code ec;
        if (!sp->data) {
            ec = load(d, *sp, gone);
            if (!ec && !gone && want_lock) ec = sync(d, *sp, true, gone);
        } else {
            ec = sync(d, *sp, want_lock, gone);
        }
        if (gone || (ec && !sp->data)) {
            forget(sp);
            lk.unlock();
            sp.reset();
            return ec;
        }
        // A reader may have taken the lock to recover a torn tail: keep it for lock_linger
        // (or release it now). A writer settles it after writing — or here, on failure.
        if (!want_lock || ec) after_write(sp, false);
        return ec;
    }

    error_code take_lock(diagnostics* d, open_session& s, std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
        lock_holder h;
        lock_options lo = lock_opt;
        if (timeout) lo.timeout = *timeout;
        auto ec = s.lock.acquire(s.dir / "lock", lo, nonce, &h, [this, p = &s] { release_idle_leases(p); });
        if (ec == errc::busy) {
            std::string who = h.pid ? "held by pid " + std::to_string(h.pid) + " (instance " + h.nonce + ")"
                                    : "held by another writer";
            return fail(d, errc::busy, s.dir / "lock", 0, 0, who);
        }
        if (ec && ec != errc::not_found) return io_fail(d, ec, s.dir / "lock", "lock");
        return ec;
    }

    /// Brings s up to date with its file. With `want_lock`, takes the writer lock first.
    error_code sync(diagnostics* d, open_session& s, bool want_lock, bool& gone) {
        gone = false;
        if (s.lock.held()) return {}; // nobody else can have written, truncated or deleted
        if (want_lock) {
            auto ec = take_lock(d, s);
            if (ec == errc::not_found) {
                gone = true;
                return {};
            }
            if (ec) return ec;
        }
        return catch_up(d, s, gone);
    }

    /// Opens the transcript: header, checkpoint (if it verifies), then the tail after it.
    error_code load(diagnostics* d, open_session& s, bool& gone) {
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
    static bool verify_last_line(int fd, const checkpoint& m) {
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
    error_code catch_up(diagnostics* d, open_session& s, bool& gone) {
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
            if (!deadline) deadline = steady::now() + opt.lock_timeout;
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
    scan_outcome scan(open_session& s, std::uint64_t end) {
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
    std::size_t max_line_bytes() const noexcept {
        if (!opt.max_event_bytes) return std::numeric_limits<std::size_t>::max() / 2;
        return std::max<std::size_t>(opt.max_event_bytes, jsonl_store_options{}.max_event_bytes) + frame_tail + 1024;
    }

    /// Whether a valid line follows the bad line that starts at buf[pos]; buf holds the file
    /// up to `next`, the file ends at `end`. Streams the rest in chunks, keeping at most one
    /// unfinished line of up to `limit` bytes: a damaged tail of any size costs bounded memory.
    static error_code valid_line_follows(int fd, std::string& buf, std::size_t pos, std::uint64_t& next, std::uint64_t end,
                                         std::size_t limit, bool& follows) {
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

    static bool read_facts(const json::object& o, line_facts& out, std::string& why) {
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
                    if (!check_compaction(ec, out.sequence - 1))
                        out.compaction = detail::compaction_entry{out.sequence, ec.first_sequence, ec.last_sequence};
                }
            }
        }
        return true;
    }

    static void apply_session_delta(const json::object& ev, json::object& state) {
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
    error_code recover(diagnostics* d, open_session& s, const scan_outcome& r) {
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

    void write_checkpoint(open_session& s) {
        if (!s.data || s.cp.covered == s.checkpointed) return;
        if (!write_file_atomic(s.dir / "meta.json", meta_line(s.cp), false, nonce)) s.checkpointed = s.cp.covered;
    }

    // ---- appends --------------------------------------------------------------------------

    /// Under s.mu and the writer lock, caught up.
    /// On success the caller's session keeps `node` (the event as stored).
    error_code append_locked(diagnostics* d, open_session& s, session& caller, std::shared_ptr<event>& node, std::int64_t& seq) {
        event& e = *node;
        detail::routed_delta routed;
        if (auto ec = detail::prepare_append(caller, e, s.cp.last_sequence, routed))
            return bad_key(d, ec, detail::append_refusal(caller, e, s.cp.last_sequence));
        // The line is built in a buffer of this thread, reused from append to append: the
        // body, then (in place of its closing brace) the checksum member and '\n'.
        thread_local std::string line;
        line.clear();
        if (auto f = detail::append_event_json(line, e)) {
            // Refused before anything is written: a strict JSON reader would reject the line.
            if (line.capacity() > (1u << 20)) std::string().swap(line);
            return fail(d, errc::invalid_argument, s.transcript, 0, 0, detail::event_name(e) + ": " + f->message());
        }
        if (opt.max_event_bytes && line.size() > opt.max_event_bytes) {
            const std::size_t size = line.size();
            if (line.capacity() > (1u << 20)) std::string().swap(line); // keep no huge buffer
            return fail(d, errc::oversize, s.transcript, 0, 0,
                        detail::event_name(e) + " is " + std::to_string(size) +
                            " bytes as a line, over max_event_bytes (" + std::to_string(opt.max_event_bytes) + ")");
        }
        const frame_suffix suffix(line);
        line.pop_back();
        line.append(suffix.view());
        const std::uint64_t len = line.size();
        const std::uint64_t off = s.cp.covered;
        const error_code wec = write_all(s.data->get(), line);
        if (line.capacity() > (1u << 20)) std::string().swap(line);
        if (wec) {
            take_back(s, off);
            return io_fail(d, wec, s.transcript, "write (the event was not stored)");
        }
        // per_event: acknowledged only once on disk. A failed sync takes the line back, so a
        // failure never leaves behind an event the caller was told is not stored.
        if (opt.durability == durability::per_event) {
            if (auto ec = fdatasync_fd(s.data->get())) {
                take_back(s, off);
                return io_fail(d, ec, s.transcript, "fdatasync (the event was taken back: not stored)");
            }
        } else {
            s.unsynced = true;
        }
        // The shared scopes, after the line (the transcript is the record: a crash between
        // the two leaves the event stored without its shared keys). A failure takes the
        // line back, so io_error still means "not stored".
        if (auto ec = write_shared_scopes(d, s.key, routed)) {
            take_back(s, off);
            append_detail(d, "the event was taken back: not stored");
            return ec;
        }
        const auto& c = e.actions.compaction; // checked by prepare_append
        const detail::compaction_entry entry{e.sequence, c ? c->first_sequence : 0, c ? c->last_sequence : 0};
        s.cp.add(e.sequence, e.timestamp, e.id, c ? c->first_sequence : 0, c ? &entry : nullptr, off, len);
        apply_delta(s.cp.state, routed.session);
        seq = e.sequence;
        detail::commit_append(caller, event_list::pointer_type(std::move(node)), routed);
        return {};
    }

    /// Takes back what a failed append wrote from `off` on, so the file ends with the last
    /// stored event again (O_APPEND: the next line would otherwise follow the bad one, at an
    /// offset the checkpoint does not know). If even the truncate fails, the session is
    /// loaded from its file at its next use, as after a crash: a torn line is moved aside,
    /// a whole one counts as stored.
    void take_back(open_session& s, std::uint64_t off) noexcept {
        if (::ftruncate(s.data->get(), static_cast<off_t>(off)) != 0) s.data.reset();
    }

    /// After an operation that may hold the lock: keep it for lock_linger, checkpoint if due.
    void after_write(const std::shared_ptr<open_session>& sp, bool on_callers_thread) {
        open_session& s = *sp;
        if (s.lock.held()) {
            if (opt.lock_linger.count() <= 0) {
                release_lease(s);
            } else {
                s.last_use = steady::now();
                arm_timer(sp, opt.lock_linger);
            }
        }
        if (s.data && s.cp.covered - s.checkpointed >= opt.checkpoint_bytes) {
            if (!on_callers_thread) {
                write_checkpoint(s);
            } else if (!s.checkpoint_posted) {
                s.checkpoint_posted = true;
                boost::asio::post(blocking, [w = std::weak_ptr<open_session>(sp), self = weak_from_this()] {
                    auto p = w.lock();
                    auto e = self.lock();
                    if (!p || !e) return;
                    std::lock_guard l(p->mu);
                    p->checkpoint_posted = false;
                    if (!p->closed) e->write_checkpoint(*p);
                });
            }
        }
    }

    void arm_timer(const std::shared_ptr<open_session>& sp, std::chrono::steady_clock::duration d) {
        open_session& s = *sp;
        if (s.timer_armed) return;
        if (!s.timer) s.timer.emplace(blocking);
        s.timer_armed = true;
        s.timer->expires_after(d);
        s.timer->async_wait([w = std::weak_ptr<open_session>(sp), self = weak_from_this()](error_code ec) {
            // Cancelled: the session was retired (closed, lock released). Going on would
            // find its mutex held by the retiring caller and leave a re-check timer of
            // lock_linger on the pool, which ~jsonl_store then waits for.
            if (ec == boost::asio::error::operation_aborted) return;
            auto p = w.lock();
            auto e = self.lock();
            if (p && e) e->on_linger(p);
        });
    }

    void on_linger(const std::shared_ptr<open_session>& sp) {
        std::unique_lock l(sp->mu, std::try_to_lock);
        if (!l) {
            // In use — perhaps waiting for a lock whose release needs a thread of this very
            // executor: never block one here. Look again later (the session's own timer is
            // touched only under its mutex, so a one-shot timer does the waiting).
            auto t = std::make_shared<boost::asio::steady_timer>(blocking, opt.lock_linger);
            t->async_wait([t, w = std::weak_ptr<open_session>(sp), self = weak_from_this()](error_code) {
                auto p = w.lock();
                auto e = self.lock();
                if (p && e) e->on_linger(p);
            });
            return;
        }
        sp->timer_armed = false;
        if (sp->closed || !sp->lock.held()) return;
        const auto idle = steady::now() - sp->last_use;
        if (idle >= opt.lock_linger) release_lease(*sp);
        else arm_timer(sp, opt.lock_linger - idle);
    }

    void checkpoint_all() {
        std::vector<std::shared_ptr<open_session>> all;
        {
            std::lock_guard g(mu);
            for (auto& [k, p] : sessions) all.push_back(p);
        }
        for (auto& p : all) {
            std::lock_guard l(p->mu);
            if (!p->closed) write_checkpoint(*p);
        }
    }

    void release_lease(open_session& s) {
        checkpoint_if_worth_it(s);
        s.lock.release();
    }

    /// A checkpoint rewrites meta.json, whose offset marks grow with the session: written
    /// only once 64 KiB of transcript are past the last one, so turns stay O(1) amortised
    /// (a reader scans at most that much more).
    void checkpoint_if_worth_it(open_session& s) {
        if (s.data && s.cp.covered - s.checkpointed >= (64u << 10)) write_checkpoint(s);
    }

    /// Before waiting for a lock: release this instance's idle leases, so two instances
    /// waiting on each other's sessions cannot stall each other until the timeout.
    void release_idle_leases(const open_session* except) {
        std::vector<std::shared_ptr<open_session>> all;
        {
            std::lock_guard g(mu);
            for (auto& [k, p] : sessions)
                if (p.get() != except) all.push_back(p);
        }
        for (auto& p : all) {
            std::unique_lock l(p->mu, std::try_to_lock);
            if (l && !p->closed && p->lock.held()) release_lease(*p);
        }
    }

    // ---- shared state files ------------------------------------------------------------------

    struct cached_state {
        dev_t dev = 0;
        ino_t ino = 0;
        off_t size = 0;
        std::int64_t mtime = 0;
        json::object value;
    };

    error_code read_shared(diagnostics* d, const fs::path& f, json::object& out) {
        out.clear();
        struct stat st;
        if (::stat(f.c_str(), &st) != 0) {
            if (errno == ENOENT) return {};
            return io_fail(d, errno_code(), f, "stat");
        }
        const std::string key = f.string();
        {
            std::lock_guard g(mu);
            auto it = shared_.find(key);
            if (it != shared_.end() && it->second.dev == st.st_dev && it->second.ino == st.st_ino &&
                it->second.size == st.st_size && it->second.mtime == mtime_ns(st)) {
                out = it->second.value;
                return {};
            }
        }
        std::string text;
        if (auto ec = read_file(f, text)) {
            if (ec == boost::system::errc::no_such_file_or_directory) return {};
            return io_fail(d, ec, f, "read");
        }
        boost::system::error_code ec;
        std::string why;
        json::value v = libretto::detail::parse_precise(text, ec, {}, &why);
        if (ec || !v.is_object())
            return fail(d, errc::corrupt_data, f, 1, 0, "shared state is not a JSON object" + (ec ? ": " + why : std::string()));
        out = v.get_object();
        std::lock_guard g(mu);
        shared_[key] = cached_state{st.st_dev, st.st_ino, st.st_size, mtime_ns(st), v.get_object()};
        return {};
    }

    /// Writes the app: then the user: keys of `routed`, each to its state.json. If the user
    /// scope fails after the app scope was written, the app keys get their old values back,
    /// so a failure leaves neither scope changed (unless that restore fails too, which the
    /// diagnostic then says). Another process's write of the same app keys in between is
    /// overwritten by the restore.
    error_code write_shared_scopes(diagnostics* d, const session_key& k, const detail::routed_delta& routed) {
        if (routed.app.empty() && routed.user.empty()) return {}; // most appends: no path built
        json::object undo_app;
        const fs::path app_file = app_dir(k.app_name) / "state.json";
        if (!routed.app.empty())
            if (auto ec = update_shared(d, app_file, routed.app, &undo_app)) return ec;
        if (!routed.user.empty())
            if (auto ec = update_shared(d, user_dir(k.app_name, k.user_id) / "state.json", routed.user)) {
                if (!undo_app.empty()) {
                    // The first failure is the one to report; the restore's own words
                    // (if it fails too) are not.
                    diagnostics first;
                    if (d) first = *d;
                    const bool restored = !update_shared(nullptr, app_file, undo_app);
                    if (d) {
                        *d = std::move(first);
                        d->append(restored ? "the app: keys were restored"
                                           : "restoring the app: keys failed as well: " + app_file.string() +
                                                 " keeps this event's app: keys");
                    }
                }
                return ec;
            }
        return {};
    }

    static void append_detail(diagnostics* d, std::string_view more) {
        if (d) d->append(more);
    }

    /// Applies `delta` to the JSON object in `f` (atomic replace, under the directory's
    /// state.lock). With `undo`: on success it receives the delta that restores the keys
    /// `delta` changed (their old values; null for keys that were absent).
    error_code update_shared(diagnostics* d, const fs::path& f, const json::object& delta, json::object* undo = nullptr) {
        if (delta.empty()) return {};
        scoped_flock l;
        if (auto ec = l.lock(f.parent_path() / "state.lock", opt.lock_timeout)) {
            if (ec == errc::busy) return fail(d, errc::busy, f.parent_path() / "state.lock", 0, 0, "shared state lock");
            return io_fail(d, ec, f.parent_path() / "state.lock", "lock");
        }
        json::object cur;
        std::string text;
        if (auto ec = read_file(f, text)) {
            if (ec != boost::system::errc::no_such_file_or_directory) return io_fail(d, ec, f, "read");
        } else {
            boost::system::error_code ec2;
            std::string why;
            json::value v = libretto::detail::parse_precise(text, ec2, {}, &why);
            if (ec2 || !v.is_object())
                return fail(d, errc::corrupt_data, f, 1, 0,
                            "shared state is not a JSON object" + (ec2 ? ": " + why : std::string()));
            cur = std::move(v.get_object());
        }
        json::object before;
        if (undo)
            for (const auto& kv : delta) {
                auto it = cur.find(kv.key());
                before[kv.key()] = it == cur.end() ? json::value(nullptr) : it->value();
            }
        apply_delta(cur, delta);
        std::string out = json::serialize(cur);
        out += '\n';
        bool renamed = false;
        if (auto ec = write_file_atomic(f, out, durable(), nonce, &renamed)) {
            if (!renamed) return io_fail(d, ec, f, "write");
            // Replaced, then the directory's fsync failed: the failed operation must not leave
            // its keys behind, so the old content goes back (not synced: neither was the new).
            const bool existed = !text.empty(); // read above; a missing file reads as empty
            const bool restored = existed ? !write_file_atomic(f, text, false, nonce) : ::unlink(f.c_str()) == 0;
            return io_fail(d, ec, f,
                           restored ? "fsync of the directory after the replace (the old content was put back)"
                                    : "fsync of the directory after the replace; putting the old content back "
                                      "failed too: the file keeps the new keys");
        }
        if (undo) *undo = std::move(before);
        return {};
    }

    // ---- directories -----------------------------------------------------------------------

    /// Creates the directories from the root down to `dir`; with durability, fsyncs the
    /// parent of each one created.
    error_code make_dirs(diagnostics* d, const fs::path& dir) {
        std::error_code fec;
        if (fs::is_directory(dir, fec)) return {};
        const fs::path rel = dir.lexically_relative(root);
        fs::path cur = root;
        fs::create_directories(root, fec);
        for (const auto& part : rel) {
            const fs::path parent = cur;
            cur /= part;
            if (::mkdir(cur.c_str(), 0755) == 0) {
                if (durable())
                    if (auto ec = fsync_dir(parent)) return io_fail(d, ec, parent, "fsync");
            } else if (errno != EEXIST) {
                return io_fail(d, errno_code(), cur, "mkdir");
            }
        }
        return {};
    }

    static void list_dir(const fs::path& dir, std::vector<std::string>& out) {
        std::error_code fec;
        for (fs::directory_iterator it(dir, fec), end; !fec && it != end; it.increment(fec)) {
            std::string name = it->path().filename().string();
            if (!validate_id(name) && it->is_directory(fec)) out.push_back(std::move(name));
        }
        std::sort(out.begin(), out.end());
    }

    static std::uint64_t dir_bytes(const fs::path& dir) {
        std::uint64_t total = 0;
        std::error_code fec;
        for (fs::recursive_directory_iterator it(dir, fec), end; !fec && it != end; it.increment(fec)) {
            struct stat st;
            if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
        }
        return total;
    }

    // ---- listing and the index --------------------------------------------------------------

    struct summary {
        index_entry e;
    };

    /// Every session of `app` (of one user if given), with its last update. Uses the
    /// index entry when the transcript is unchanged since (inode, size, mtime), the open
    /// session when this instance is up to date, else opens the session.
    error_code summarize_app(diagnostics* d, const std::string& app, const std::string* user, std::vector<summary>& out,
                             std::map<std::string, index_entry>& idx, bool& dirty) {
        std::vector<std::string> users;
        if (user) users.push_back(*user);
        else list_dir(app_dir(app) / "users", users);
        idx = read_index(app);
        for (const auto& u : users) {
            std::vector<std::string> ids;
            list_dir(sessions_dir(app, u), ids);
            for (const auto& id : ids) {
                const session_key k{app, u, id};
                const fs::path tp = session_dir(k) / "transcript.jsonl";
                struct stat st;
                if (::stat(tp.c_str(), &st) != 0) continue; // an interrupted create, or deleted meanwhile
                index_entry e{u, id, static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                              mtime_ns(st), 0, 0, 0};
                bool known = false;
                if (auto sp = lookup(k, false)) {
                    std::unique_lock l(sp->mu, std::try_to_lock);
                    if (l && !sp->closed && sp->data && sp->ino == st.st_ino && sp->cp.covered == e.size) {
                        e.created = sp->cp.created;
                        e.last_update = sp->cp.last_update;
                        e.last_sequence = sp->cp.last_sequence;
                        known = true;
                    }
                }
                auto it = idx.find(u + '\0' + id);
                if (!known && it != idx.end() && it->second.ino == e.ino && it->second.size == e.size &&
                    it->second.mtime_ns == e.mtime_ns) {
                    e = it->second;
                    known = true;
                }
                if (!known) {
                    std::shared_ptr<open_session> sp;
                    std::unique_lock<std::mutex> lk;
                    if (auto ec = enter(d, k, false, sp, lk)) return ec;
                    if (!sp) continue;
                    e.created = sp->cp.created;
                    e.last_update = sp->cp.last_update;
                    e.last_sequence = sp->cp.last_sequence;
                    e.size = sp->cp.covered;
                    struct stat st2;
                    if (::fstat(sp->data->get(), &st2) == 0) {
                        e.ino = static_cast<std::uint64_t>(st2.st_ino);
                        e.mtime_ns = mtime_ns(st2);
                        if (static_cast<std::uint64_t>(st2.st_size) != e.size) e.mtime_ns = 0; // changing: don't trust
                    }
                }
                if (it == idx.end() || it->second.ino != e.ino || it->second.size != e.size ||
                    it->second.mtime_ns != e.mtime_ns || it->second.last_update != e.last_update)
                    dirty = true;
                out.push_back({std::move(e)});
            }
        }
        // Entries for sessions that are gone also make the index dirty.
        std::size_t in_scope = 0;
        for (const auto& [key, e] : idx)
            if (!user || e.user_id == *user) ++in_scope;
        if (in_scope != out.size()) dirty = true;
        return {};
    }

    std::map<std::string, index_entry> read_index(const std::string& app) {
        std::map<std::string, index_entry> idx;
        std::string text;
        if (read_file(app_dir(app) / "index.json", text)) return idx;
        boost::system::error_code ec;
        json::value v = libretto::detail::parse_precise(text, ec, {});
        if (ec || !v.is_object()) return idx; // a cache: rebuilt from the transcripts
        const auto* arr = v.get_object().if_contains("sessions");
        if (!arr || !arr->is_array()) return idx;
        for (const auto& x : arr->get_array()) {
            if (!x.is_object()) continue;
            const auto& o = x.get_object();
            index_entry e;
            try {
                e.user_id = json::value_to<std::string>(o.at("user_id"));
                e.session_id = json::value_to<std::string>(o.at("session_id"));
                e.ino = json::value_to<std::uint64_t>(o.at("ino"));
                e.size = json::value_to<std::uint64_t>(o.at("size"));
                e.mtime_ns = json::value_to<std::int64_t>(o.at("mtime_ns"));
                e.created = o.at("created").to_number<double>();
                e.last_update = o.at("last_update").to_number<double>();
                e.last_sequence = json::value_to<std::int64_t>(o.at("last_sequence"));
            } catch (const std::exception&) {
                continue;
            }
            idx[e.user_id + '\0' + e.session_id] = std::move(e);
        }
        return idx;
    }

    static json::object index_json(const index_entry& e) {
        json::object o;
        o["user_id"] = e.user_id;
        o["session_id"] = e.session_id;
        o["ino"] = e.ino;
        o["size"] = e.size;
        o["mtime_ns"] = e.mtime_ns;
        o["created"] = e.created;
        o["last_update"] = e.last_update;
        o["last_sequence"] = e.last_sequence;
        return o;
    }

    void store_index(const std::string& app, const std::map<std::string, index_entry>& idx) {
        json::object root_o;
        root_o["format"] = "libretto-index";
        root_o["version"] = format_version;
        json::array arr;
        arr.reserve(idx.size());
        for (const auto& [k, e] : idx) arr.push_back(index_json(e));
        root_o["sessions"] = std::move(arr);
        std::string text = json::serialize(root_o);
        text += '\n';
        write_file_atomic(app_dir(app) / "index.json", text, durable(), nonce);
    }

    /// Writes the index after a listing: the listed sessions (and, when the listing was of
    /// one user, the other users' entries as they were). Skipped if another writer has it.
    void write_index(const std::string& app, const std::vector<summary>& all, const std::string* user,
                     const std::map<std::string, index_entry>& old) {
        scoped_flock l;
        if (l.lock(app_dir(app) / "index.lock", std::chrono::milliseconds(0))) return;
        std::map<std::string, index_entry> idx;
        if (user)
            for (const auto& [k, e] : read_index(app))
                if (e.user_id != *user) idx.emplace(k, e);
        (void)old;
        for (const auto& s : all) idx[s.e.user_id + '\0' + s.e.session_id] = s.e;
        store_index(app, idx);
    }

    /// Adds or removes one entry (create, delete). Best effort: the index is a cache.
    void index_update(const std::string& app, const index_entry* add, const session_key* erase) {
        scoped_flock l;
        if (l.lock(app_dir(app) / "index.lock", std::chrono::milliseconds(1000))) return;
        auto idx = read_index(app);
        if (add) idx[add->user_id + '\0' + add->session_id] = *add;
        if (erase) idx.erase(erase->user_id + '\0' + erase->session_id);
        store_index(app, idx);
    }

    // ---- maintenance helpers ------------------------------------------------------------------

    error_code probe_lock(const session_key& k) {
        std::shared_ptr<open_session> sp;
        std::unique_lock<std::mutex> lk;
        lock_entry(k, sp, lk);
        if (sp->lock.held()) return {};
        writer_lock probe;
        lock_options lo = lock_opt;
        lo.timeout = std::chrono::milliseconds(0);
        auto ec = probe.acquire(sp->dir / "lock", lo, nonce);
        if (ec == errc::not_found) return {};
        return ec;
    }

    error_code remove_now(diagnostics* d, const session_key& k) { return remove(d, k, std::chrono::milliseconds(0)); }

    // ---- sessions ----------------------------------------------------------------------------

    static session make_session(const session_key& k, const checkpoint& cp, const json::object& app_state,
                                const json::object& user_state) {
        session out;
        out.id = k.session_id;
        out.app_name = k.app_name;
        out.user_id = k.user_id;
        out.state = detail::merged_state(cp.state, &app_state, &user_state);
        out.last_update_time = cp.last_update;
        out.last_sequence = cp.last_sequence;
        return out;
    }

    mutable std::mutex mu; // sessions, reports, shared-state cache
    using key_tuple = std::tuple<std::string, std::string, std::string>;
    std::map<key_tuple, std::shared_ptr<open_session>, std::less<>> sessions;
    std::uint64_t touch_ = 0;
    std::vector<jsonl_recovery> recoveries_;
    jsonl_read_stats stats_;
    std::map<std::string, cached_state> shared_;
};

} // namespace detail::jsonl

/// The JSON Lines session store. Copies share one store (its open sessions and its
/// thread pool); two stores opened on one directory (in one process or several) exclude
/// each other through per-session lock files and see each other's writes through the files.
class jsonl_store {
public:
    using executor_type = boost::asio::any_io_executor;

    /// `ex` is where completions run (the caller's io_context); blocking work runs on the
    /// store's own thread pool or on `o.blocking_executor`.
    explicit jsonl_store(executor_type ex, jsonl_store_options o = {}) : ex_(std::move(ex)) {
        boost::asio::any_io_executor blocking;
        if (o.blocking_executor) {
            blocking = *o.blocking_executor;
        } else {
            pool_ = std::make_shared<pool_owner>(std::max<std::size_t>(o.threads, 1));
            blocking = pool_->pool.get_executor();
        }
        impl_ = std::make_shared<detail::jsonl::engine>(std::move(o), std::move(blocking));
    }

    executor_type get_executor() const { return ex_; }
    const jsonl_store_options& options() const { return impl_->opt; }

    // ---- synchronous core (blocking; the async operations run these on the pool) --------
    // A failure's words go to *diag when the caller passes one (docs/errors.md).

    boost::system::error_code create(create_options o, session& out, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->create(diag, std::move(o), out);
    }
    boost::system::error_code get(const session_key& k, const get_options& o, std::optional<session>& out,
                                  diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->get(diag, k, o, out);
    }
    boost::system::error_code list(const list_options& o, list_page& out, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->list(diag, o, out);
    }
    boost::system::error_code remove(const session_key& k, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->remove(diag, k);
    }
    boost::system::error_code append(session& s, event e, std::int64_t& sequence, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->append(diag, s, std::move(e), sequence);
    }
    /// Ends a turn: fdatasync of the session's transcript if this store wrote to it since
    /// the last flush (durability per_turn), and a checkpoint. not_found if there is no
    /// such session.
    boost::system::error_code flush(const session_key& k, diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->flush(diag, k);
    }
    boost::system::error_code maintain(const jsonl_maintenance_options& o, jsonl_maintenance_report& r,
                                       diagnostics* diag = nullptr) {
        if (diag) diag->clear();
        return impl_->maintain(diag, o, r);
    }

    // ---- reports ----------------------------------------------------------------------------

    /// Every torn tail this store recovered, oldest first.
    std::vector<jsonl_recovery> recoveries() const { return impl_->recoveries(); }
    /// What the last get read.
    jsonl_read_stats last_read_stats() const { return impl_->last_read_stats(); }

    // ---- asynchronous operations (the session_store concept) ---------------------------
    // Each has a form with the caller's diagnostics, which names the file, line and cause
    // when the operation fails (docs/errors.md), and one without.

    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, diagnostics& diag, Token&& token = {}) {
        return create_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, Token&& token = {}) {
        return create_op(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o, diagnostics& diag, Token&& token = {}) {
        return get_op(&diag, std::move(k), std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o = {}, Token&& token = {}) {
        return get_op(nullptr, std::move(k), std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, diagnostics& diag, Token&& token = {}) {
        return list_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, Token&& token = {}) {
        return list_op(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, diagnostics& diag, Token&& token = {}) {
        return delete_op(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, Token&& token = {}) {
        return delete_op(nullptr, std::move(k), std::forward<Token>(token));
    }

    /// Appends `e` to `s` (see session_store). `s` must stay alive and untouched until the
    /// operation completes. With durability none or per_turn, an append that finds the
    /// session's lock held by this store runs on the calling thread (one write(2)); a
    /// coroutine caller (use_awaitable, or as_tuple of it) then resumes at once, without
    /// suspending. Other appends run on the pool.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& s, event e, diagnostics& diag, Token&& token = {}) {
        return append_op(&diag, s, std::move(e), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& s, event e, Token&& token = {}) {
        return append_op(nullptr, s, std::move(e), std::forward<Token>(token));
    }

    /// flush() on the pool: the runner calls it after each turn.
    template <boost::asio::completion_token_for<flush_signature> Token = default_completion_token_t>
    auto async_flush(session_key k, diagnostics& diag, Token&& token = {}) {
        return flush_op(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<flush_signature> Token = default_completion_token_t>
    auto async_flush(session_key k, Token&& token = {}) {
        return flush_op(nullptr, std::move(k), std::forward<Token>(token));
    }

    using maintain_signature = void(boost::system::error_code, jsonl_maintenance_report);

    template <boost::asio::completion_token_for<maintain_signature> Token = default_completion_token_t>
    auto async_maintain(jsonl_maintenance_options o, diagnostics& diag, Token&& token = {}) {
        return maintain_op(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<maintain_signature> Token = default_completion_token_t>
    auto async_maintain(jsonl_maintenance_options o, Token&& token = {}) {
        return maintain_op(nullptr, std::move(o), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto create_op(diagnostics* d, create_options o, Token&& token) {
        return run<create_signature>(d, std::forward<Token>(token),
                                     [o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) mutable {
                                         session out;
                                         auto ec = e.create(d, std::move(o), out);
                                         return std::make_tuple(ec, std::move(out));
                                     });
    }
    template <class Token>
    auto get_op(diagnostics* d, session_key k, get_options o, Token&& token) {
        return run<get_signature>(d, std::forward<Token>(token),
                                  [k = std::move(k), o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) {
                                      std::optional<session> out;
                                      auto ec = e.get(d, k, o, out);
                                      return std::make_tuple(ec, std::move(out));
                                  });
    }
    template <class Token>
    auto list_op(diagnostics* d, list_options o, Token&& token) {
        return run<list_signature>(d, std::forward<Token>(token),
                                   [o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) {
                                       list_page out;
                                       auto ec = e.list(d, o, out);
                                       return std::make_tuple(ec, std::move(out));
                                   });
    }
    template <class Token>
    auto delete_op(diagnostics* d, session_key k, Token&& token) {
        return run<delete_signature>(d, std::forward<Token>(token),
                                     [k = std::move(k)](detail::jsonl::engine& e, diagnostics* d) {
                                         return std::make_tuple(e.remove(d, k));
                                     });
    }
    template <class Token>
    auto flush_op(diagnostics* d, session_key k, Token&& token) {
        return run<flush_signature>(d, std::forward<Token>(token),
                                    [k = std::move(k)](detail::jsonl::engine& e, diagnostics* d) {
                                        return std::make_tuple(e.flush(d, k));
                                    });
    }
    template <class Token>
    auto maintain_op(diagnostics* d, jsonl_maintenance_options o, Token&& token) {
        return run<maintain_signature>(d, std::forward<Token>(token),
                                       [o = std::move(o)](detail::jsonl::engine& e, diagnostics* d) {
                                           jsonl_maintenance_report r;
                                           auto ec = e.maintain(d, o, r);
                                           return std::make_tuple(ec, std::move(r));
                                       });
    }

    template <class Token>
    auto append_op(diagnostics* d, session& s, event&& e, Token&& token) { // &&: no move before the node
        // Boxed once, in the node the caller's session then keeps: completion tokens
        // move their arguments around, and an event's moves are not cheap.
        auto node = std::make_shared<event>(std::move(e));
        if constexpr (detail::is_awaitable_token<Token>) {
            using ex_type = typename detail::awaitable_token<std::decay_t<Token>>::executor_type;
            return detail::await_inline_or<Token>(
                d,
                [impl = impl_, sess = &s,
                 node](diagnostics* d) mutable -> std::optional<std::tuple<boost::system::error_code, std::int64_t>> {
                    std::int64_t seq = 0;
                    boost::system::error_code ec;
                    if (!impl->try_append_inline(d, *sess, node, seq, ec)) return std::nullopt;
                    return std::make_tuple(ec, seq);
                },
                [impl = impl_, ex = ex_, sess = &s, node](diagnostics* d) {
                    auto tok = boost::asio::as_tuple(boost::asio::use_awaitable_t<ex_type>{});
                    return boost::asio::async_initiate<decltype(tok), append_signature>(append_on_pool{impl, ex}, tok, d,
                                                                                        sess, node);
                });
        } else {
            return boost::asio::async_initiate<Token, append_signature>(
                [impl = impl_, ex = ex_](auto handler, diagnostics* d, session* sess, std::shared_ptr<event> e) {
                    std::int64_t seq = 0;
                    boost::system::error_code ec;
                    if (d) d->clear();
                    if (impl->try_append_inline(d, *sess, e, seq, ec)) {
                        detail::post_result(std::move(handler), ex, ec, seq);
                        return;
                    }
                    append_on_pool{impl, ex}(std::move(handler), d, sess, std::move(e));
                },
                token, d, &s, std::move(node));
        }
    }

    /// The append on the blocking executor, completing on `ex`.
    struct append_on_pool {
        std::shared_ptr<detail::jsonl::engine> impl;
        executor_type ex;
        template <class Handler>
        void operator()(Handler&& handler, diagnostics* d, session* sess, std::shared_ptr<event> e) const {
            auto work = boost::asio::make_work_guard(ex);
            boost::asio::post(impl->blocking, [impl = impl, ex = ex, d, sess, e = std::move(e),
                                               h = std::forward<Handler>(handler), work = std::move(work)]() mutable {
                std::int64_t seq = 0;
                auto ec = impl->append(d, *sess, std::move(e), seq);
                detail::post_result(std::move(h), ex, ec, seq);
                work.reset();
            });
        }
    };

    struct pool_owner {
        boost::asio::thread_pool pool;
        explicit pool_owner(std::size_t n) : pool(n) {}
        ~pool_owner() { pool.join(); } // finish queued operations and lock-linger timers
    };

    /// Runs `fn(engine, diagnostics*)` on the blocking executor and completes with its tuple
    /// on ex_. With use_awaitable and no caller diagnostics, the error thrown carries the
    /// operation's words (detail::initiate_with_diagnostics).
    template <class Sig, class Token, class Fn>
    auto run(diagnostics* d, Token&& token, Fn fn) {
        return detail::initiate_with_diagnostics<Sig>(
            d, std::forward<Token>(token),
            [impl = impl_, ex = ex_](auto handler, diagnostics* d, Fn fn) {
                if (d) d->clear();
                auto work = boost::asio::make_work_guard(ex);
                boost::asio::post(impl->blocking, [impl, ex, d, fn = std::move(fn), h = std::move(handler),
                                                   work = std::move(work)]() mutable {
                    std::apply([&](auto&&... r) { detail::post_result(std::move(h), ex, std::move(r)...); },
                               fn(*impl, d));
                    work.reset();
                });
            },
            std::move(fn));
    }

    // Destroyed in reverse order: the engine first (checkpoints, lease timers cancelled),
    // then the pool, whose destructor waits for operations still queued.
    std::shared_ptr<pool_owner> pool_;
    std::shared_ptr<detail::jsonl::engine> impl_;
    executor_type ex_;
};

static_assert(session_store<jsonl_store>);
static_assert(flushable_session_store<jsonl_store>);

} // namespace libretto

#endif
