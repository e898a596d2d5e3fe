// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_ENGINE_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_ENGINE_HPP

// The engine behind jsonl_store: a session as a store instance has it open, the engine's
// state and its open-session table. Its other members are split by the part of the work
// they do (jsonl_read, jsonl_write, jsonl_recovery, jsonl_lease, jsonl_shared, jsonl_index,
// jsonl_maintenance), so that each can be read alone; this header includes them all.

// The option and report types; that header includes this one after them.
#include <libretto/store/jsonl_store.hpp>

#include <libretto/diagnostics.hpp>
#include <libretto/event/detail/event_slab.hpp>
#include <libretto/event/json.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/detail/jsonl_format.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace libretto::detail::jsonl {

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

/// The engine behind jsonl_store (shared by its copies). This class holds the state and
/// the open-session table; its other members are defined in the headers named in each
/// section below, included at the end of this one.
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

    // ---- operations (jsonl_write.hpp, jsonl_read.hpp, jsonl_index.hpp, jsonl_maintenance.hpp) ----

    error_code create(diagnostics* d, create_options o, session& out);
    error_code create_locked(diagnostics* d, const session_key& k, const detail::routed_delta& routed,
                             const std::shared_ptr<open_session>& sp, session& out);
    error_code get(diagnostics* d, const session_key& k, const get_options& o, std::optional<session>& out);

    /// What read_events reads and decodes through, kept across the ranges of one get.
    struct read_buffers {
        std::vector<char> buf;
        std::vector<event_list> scratch;
        std::vector<event_slab> slabs;
    };

    error_code read_events(diagnostics* d, int fd, const fs::path& transcript, std::uint64_t start,
                           std::uint64_t end, std::int64_t start_seq, std::int64_t end_seq, std::int64_t from,
                           std::int64_t last, event_list& out, jsonl_read_stats& st, read_buffers& rb);
    error_code read_initial_state(diagnostics* d, int fd, const fs::path& transcript, std::uint64_t header_end,
                                  const std::string& file_id, json::object& out);
    error_code list(diagnostics* d, const list_options& o, list_page& out);
    error_code remove(diagnostics* d, const session_key& k) { return remove(d, k, std::nullopt); }
    error_code remove(diagnostics* d, const session_key& k, std::optional<std::chrono::milliseconds> timeout);
    error_code append(diagnostics* d, session& caller, event e, std::int64_t& seq);
    error_code append(diagnostics* d, session& caller, std::shared_ptr<event> node, std::int64_t& seq);
    bool try_append_inline(diagnostics* d, session& caller, std::shared_ptr<event>& node, std::int64_t& seq,
                           error_code& ec);
    error_code flush(diagnostics* d, const session_key& k);
    error_code maintain(diagnostics* d, const jsonl_maintenance_options& o, jsonl_maintenance_report& rep);

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
    static void append_detail(diagnostics* d, std::string_view more) {
        if (d) d->append(more);
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

    // ---- the writer lock as a lease (jsonl_lease.hpp) -------------------------------------------

    error_code take_lock(diagnostics* d, open_session& s,
                         std::optional<std::chrono::milliseconds> timeout = std::nullopt);
    void after_write(const std::shared_ptr<open_session>& sp, bool on_callers_thread);
    void arm_timer(const std::shared_ptr<open_session>& sp, std::chrono::steady_clock::duration d);
    void on_linger(const std::shared_ptr<open_session>& sp);
    void checkpoint_all();
    void release_lease(open_session& s);
    void checkpoint_if_worth_it(open_session& s);
    void release_idle_leases(const open_session* except);

    // ---- loading, catching up, recovery and checkpoints (jsonl_recovery.hpp) --------------------

    error_code load(diagnostics* d, open_session& s, bool& gone);
    static bool verify_last_line(int fd, const checkpoint& m);
    error_code catch_up(diagnostics* d, open_session& s, bool& gone);
    scan_outcome scan(open_session& s, std::uint64_t end);
    std::size_t max_line_bytes() const noexcept;
    static error_code valid_line_follows(int fd, std::string& buf, std::size_t pos, std::uint64_t& next,
                                         std::uint64_t end, std::size_t limit, bool& follows);
    static bool read_facts(const json::object& o, line_facts& out, std::string& why);
    static void apply_session_delta(const json::object& ev, json::object& state);
    error_code recover(diagnostics* d, open_session& s, const scan_outcome& r);
    void write_checkpoint(open_session& s);

    // ---- creates and appends (jsonl_write.hpp) --------------------------------------------------

    error_code append_locked(diagnostics* d, open_session& s, session& caller, std::shared_ptr<event>& node,
                             std::int64_t& seq);
    void take_back(open_session& s, std::uint64_t off) noexcept;
    error_code make_dirs(diagnostics* d, const fs::path& dir);

    // ---- shared state files (jsonl_shared.hpp) --------------------------------------------------

    struct cached_state {
        dev_t dev = 0;
        ino_t ino = 0;
        off_t size = 0;
        std::int64_t mtime = 0;
        json::object value;
    };

    error_code read_shared(diagnostics* d, const fs::path& f, json::object& out);
    error_code write_shared_scopes(diagnostics* d, const session_key& k, const detail::routed_delta& routed);
    error_code update_shared(diagnostics* d, const fs::path& f, const json::object& delta,
                             json::object* undo = nullptr);

    // ---- listing and the index (jsonl_index.hpp) ------------------------------------------------

    struct summary {
        index_entry e;
    };

    error_code summarize_app(diagnostics* d, const std::string& app, const std::string* user,
                             std::vector<summary>& out, std::map<std::string, index_entry>& idx, bool& dirty);
    std::map<std::string, index_entry> read_index(const std::string& app);
    static json::object index_json(const index_entry& e);
    void store_index(const std::string& app, const std::map<std::string, index_entry>& idx);
    void write_index(const std::string& app, const std::vector<summary>& all, const std::string* user,
                     const std::map<std::string, index_entry>& old);
    void index_update(const std::string& app, const index_entry* add, const session_key* erase);
    static void list_dir(const fs::path& dir, std::vector<std::string>& out);

    // ---- maintenance (jsonl_maintenance.hpp) ----------------------------------------------------

    error_code probe_lock(const session_key& k);
    error_code remove_now(diagnostics* d, const session_key& k) { return remove(d, k, std::chrono::milliseconds(0)); }
    static std::uint64_t dir_bytes(const fs::path& dir);

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

} // namespace libretto::detail::jsonl

// The engine's members, one header per part of the work.
#include <libretto/store/detail/jsonl_index.hpp>
#include <libretto/store/detail/jsonl_lease.hpp>
#include <libretto/store/detail/jsonl_maintenance.hpp>
#include <libretto/store/detail/jsonl_read.hpp>
#include <libretto/store/detail/jsonl_recovery.hpp>
#include <libretto/store/detail/jsonl_shared.hpp>
#include <libretto/store/detail/jsonl_write.hpp>

// In header-only builds, jsonl_store's functions that use the engine (included here, not by
// jsonl_store.hpp, so that they follow the engine whichever header a file includes first).
#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/store/impl/jsonl_store.ipp>
#endif

#endif
