// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_JSONL_SESSION_INDEX_HPP
#define LIBRETTO_STORE_JSONL_SESSION_INDEX_HPP

// jsonl_session_index: the session index beside a jsonl_store, in the same directory:
//
//   <directory>/apps/<app>/conversations.json   every entry (atomic replace: temp, fsync,
//                                               rename, fsync of the directory)
//   <directory>/apps/<app>/conversations.log    changes since, one JSON line each
//   <directory>/apps/<app>/conversations.lock   flock: one writer at a time, across processes
//
// A change appends one line to the log (O(1): the index is never rewritten for a patch);
// when the log outgrows the snapshot (and 64 KiB), the entries are written to a new
// conversations.json and the log is emptied. A crash between the two replays lines the
// snapshot has already: each line is a whole entry (or an erase), so replaying is harmless.
// Destroying the index folds the log into conversations.json, so a stopped program leaves one
// file, which is safe to edit by hand. A malformed file fails every call for that app with
// errc::corrupt_data naming the file, the line and what is wrong; index_replace (what
// rebuild_session_index calls) moves it aside and writes the rebuilt entries.
//
// Each instance caches an app's entries and rereads only what another writer added (the
// log's new lines; everything when the snapshot was replaced).

#include <libretto/detail/deadline.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/store/detail/index_entry.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/json/serialize.hpp>

#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace libretto {

struct jsonl_session_index_options {
    /// The jsonl_store's directory (created if missing).
    std::filesystem::path directory = "sessions";
    /// fdatasync of the log after every change. Off by default: the index is repaired from
    /// the transcripts, which the store makes durable.
    bool sync_every_change = false;
    /// How long a call waits for another writer's lock before errc::busy.
    std::chrono::milliseconds lock_timeout{10'000};
};

class jsonl_session_index {
public:
    static constexpr bool blocking = true;

    explicit jsonl_session_index(jsonl_session_index_options o) : state_(std::make_unique<state>(std::move(o))) {}
    jsonl_session_index(jsonl_session_index&&) noexcept = default;
    jsonl_session_index& operator=(jsonl_session_index&&) noexcept = default;
    ~jsonl_session_index() {
        if (!state_) return;
        for (auto& [app, c] : state_->apps) {
            if (c.log_bytes == 0) continue;
            app_lock lock;
            if (lock.take(c, std::chrono::milliseconds(100))) continue;
            if (!refresh(app, c, nullptr)) (void)compact(app, c, nullptr);
        }
    }

    boost::system::error_code index_get(const std::string& app, const std::string& key,
                                        std::optional<conversation_entry>& out, diagnostics* diag = nullptr) {
        out.reset();
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        return with_app(app, diag, [&](app_cache& c) -> boost::system::error_code {
            if (auto it = c.entries.find(key); it != c.entries.end()) out = it->second;
            return {};
        });
    }

    boost::system::error_code index_put(const conversation_entry& e, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_entry(e, diag)) return ec;
        return with_app(e.app_name, diag, [&](app_cache& c) { return write_put(e.app_name, c, e, diag); });
    }

    boost::system::error_code index_patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                          conversation_entry& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        return with_app(app, diag, [&](app_cache& c) -> boost::system::error_code {
            auto it = c.entries.find(key);
            if (it == c.entries.end()) return detail::not_in_index(app, key, diag);
            conversation_entry changed = it->second;
            if (auto ec = detail::apply_patch(changed, p, diag)) return ec;
            if (auto ec = write_put(app, c, changed, diag)) return ec;
            out = std::move(changed);
            return {};
        });
    }

    boost::system::error_code index_list(const conversation_query& q, std::vector<conversation_entry>& out,
                                         diagnostics* diag = nullptr) {
        out.clear();
        if (auto ec = detail::check_query(q, diag)) return ec;
        return with_app(q.app_name, diag, [&](app_cache& c) -> boost::system::error_code {
            for (const auto& [k, e] : c.entries)
                if (detail::matches(e, q)) out.push_back(e);
            detail::order_and_limit(out, q);
            return {};
        });
    }

    boost::system::error_code index_erase(const std::string& app, const std::string& key, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        return with_app(app, diag, [&](app_cache& c) -> boost::system::error_code {
            if (!c.entries.contains(key)) return {};
            json::object line;
            line["erase"] = key;
            if (auto ec = append_line(app, c, json::serialize(line), diag)) return ec;
            c.entries.erase(key);
            return maybe_compact(app, c, diag);
        });
    }

    /// Replaces every entry of `app` with `entries` (a rebuild). A malformed snapshot or log
    /// is moved aside first (conversations.json.bad-<ms>, conversations.log.bad-<ms>).
    boost::system::error_code index_replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                            diagnostics* diag = nullptr) {
        if (auto ec = detail::check_replace(app, entries, diag)) return ec;
        std::lock_guard guard(state_->mutex);
        app_cache& c = cache_of(app);
        app_lock lock;
        if (auto ec = open_and_lock(app, c, lock, diag)) return ec;
        diagnostics ignored;
        if (refresh(app, c, &ignored)) {
            const auto ms = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
            for (const char* name : {"conversations.json", "conversations.log"}) {
                const auto p = dir_of(app) / name;
                if (std::filesystem::exists(p)) ::rename(p.c_str(), (p.string() + ".bad-" + ms).c_str());
            }
        }
        c.entries.clear();
        for (const auto& e : entries) c.entries.insert_or_assign(e.key, e);
        c.loaded = true;
        return compact(app, c, diag);
    }

private:
    struct app_cache {
        bool loaded = false;
        std::uint64_t snap_ino = 0, snap_size = 0;
        std::int64_t snap_mtime_ns = -1;
        std::uint64_t snap_bytes = 0; ///< what we last wrote or read
        std::uint64_t log_bytes = 0;  ///< log bytes applied
        std::unordered_map<std::string, conversation_entry> entries;
        detail::jsonl::file lock_fd;
        detail::jsonl::file log_fd;
    };

    struct state {
        explicit state(jsonl_session_index_options o) : options(std::move(o)) {}
        jsonl_session_index_options options;
        std::mutex mutex; // an instance is one writer among the processes' writers
        std::map<std::string, app_cache> apps;
    };

    // flock on the app's lock file, held for one call.
    class app_lock {
    public:
        app_lock() = default;
        app_lock(const app_lock&) = delete;
        app_lock& operator=(const app_lock&) = delete;
        ~app_lock() {
            if (fd_ >= 0) ::flock(fd_, LOCK_UN);
        }
        boost::system::error_code take(app_cache& c, std::chrono::milliseconds timeout) {
            const auto deadline = detail::deadline_after(timeout);
            auto delay = std::chrono::microseconds(100);
            while (::flock(c.lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
                if (errno != EWOULDBLOCK && errno != EINTR) return detail::jsonl::errno_code();
                if (std::chrono::steady_clock::now() >= deadline) return errc::busy;
                std::this_thread::sleep_for(delay);
                delay = std::min(delay * 2, std::chrono::microseconds(10'000));
            }
            fd_ = c.lock_fd.get();
            return {};
        }

    private:
        int fd_ = -1;
    };

    std::filesystem::path dir_of(const std::string& app) const { return state_->options.directory / "apps" / app; }

    app_cache& cache_of(const std::string& app) { return state_->apps[app]; }

    boost::system::error_code io_failure(const std::string& app, const char* what, boost::system::error_code ec,
                                         diagnostics* diag) const {
        if (diag) diag->assign("session index " + (dir_of(app) / what).string() + ": " + ec.message());
        return errc::io_error;
    }

    boost::system::error_code open_and_lock(const std::string& app, app_cache& c, app_lock& lock, diagnostics* diag) {
        if (!c.lock_fd) {
            std::error_code fec;
            std::filesystem::create_directories(dir_of(app), fec);
            if (fec) return io_failure(app, "", boost::system::error_code(fec.value(), boost::system::generic_category()), diag);
            boost::system::error_code ec;
            c.lock_fd = detail::jsonl::file::open(dir_of(app) / "conversations.lock", O_RDWR | O_CREAT | O_CLOEXEC, ec);
            if (ec) return io_failure(app, "conversations.lock", ec, diag);
            c.log_fd = detail::jsonl::file::open(dir_of(app) / "conversations.log", O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, ec);
            if (ec) {
                c.lock_fd.close();
                return io_failure(app, "conversations.log", ec, diag);
            }
        }
        if (auto ec = lock.take(c, state_->options.lock_timeout)) {
            if (diag)
                diag->assign("session index " + (dir_of(app) / "conversations.lock").string() +
                             ": another writer held the lock for longer than lock_timeout");
            return ec == errc::busy ? ec : io_failure(app, "conversations.lock", ec, diag);
        }
        return {};
    }

    // Runs f(cache) with the app's lock held and the cache caught up with the files.
    template <class F>
    boost::system::error_code with_app(const std::string& app, diagnostics* diag, F&& f) {
        std::lock_guard guard(state_->mutex);
        app_cache& c = cache_of(app);
        app_lock lock;
        if (auto ec = open_and_lock(app, c, lock, diag)) return ec;
        if (auto ec = refresh(app, c, diag)) return ec;
        return f(c);
    }

    static boost::system::error_code corrupt(const std::filesystem::path& p, std::string where, const std::string& what,
                                             diagnostics* diag) {
        if (diag) diag->assign("session index " + p.string() + where + ": " + what +
                               " (fix the file by hand, or rebuild the index from the transcripts)");
        return errc::corrupt_data;
    }

    // Catches the cache up with conversations.json and the log (another writer's changes).
    boost::system::error_code refresh(const std::string& app, app_cache& c, diagnostics* diag) {
        const auto snap = dir_of(app) / "conversations.json";
        struct stat st{};
        const bool have_snap = ::stat(snap.c_str(), &st) == 0;
        if (!have_snap && errno != ENOENT) return io_failure(app, "conversations.json", detail::jsonl::errno_code(), diag);
        const std::int64_t mtime = have_snap ? std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec : -1;
        const std::uint64_t ino = have_snap ? st.st_ino : 0, size = have_snap ? std::uint64_t(st.st_size) : 0;
        if (!c.loaded || ino != c.snap_ino || size != c.snap_size || mtime != c.snap_mtime_ns) {
            c.loaded = false;
            c.entries.clear();
            c.log_bytes = 0;
            if (have_snap) {
                std::string text;
                if (auto ec = detail::jsonl::read_file(snap, text)) return io_failure(app, "conversations.json", ec, diag);
                boost::system::error_code pec;
                json::value v = detail::parse_precise(text, pec, {}); // exact doubles: times round-trip
                if (pec) return corrupt(snap, "", "not JSON (" + pec.message() + ")", diag);
                const json::object* o = v.if_object();
                const json::value* list = o ? o->if_contains("entries") : nullptr;
                if (!list || !list->is_array()) return corrupt(snap, "", "no \"entries\" array", diag);
                std::size_t i = 0;
                for (const auto& item : list->get_array()) {
                    conversation_entry e;
                    decode_error err;
                    if (!detail::read_entry(item, e, err) || e.app_name != app)
                        return corrupt(snap, "", "entries[" + std::to_string(i) + "]: " +
                                                     (err.code ? err.message() : "app_name is not '" + app + "'"),
                                       diag);
                    if (diagnostics why; detail::check_entry_ids_and_times(e, &why))
                        return corrupt(snap, "", "entries[" + std::to_string(i) + "]: " + why.message(), diag);
                    c.entries.insert_or_assign(e.key, std::move(e));
                    ++i;
                }
            }
            c.snap_ino = ino;
            c.snap_size = size;
            c.snap_mtime_ns = mtime;
            c.snap_bytes = size;
        }
        // The log's new lines.
        struct stat ls{};
        if (::fstat(c.log_fd.get(), &ls) != 0) return io_failure(app, "conversations.log", detail::jsonl::errno_code(), diag);
        const auto log_size = std::uint64_t(ls.st_size);
        if (log_size < c.log_bytes) { // emptied by another writer's compaction: the snapshot changed too
            c.loaded = false;
            return refresh(app, c, diag);
        }
        if (log_size > c.log_bytes) {
            std::string text;
            if (auto ec = detail::jsonl::pread_all(c.log_fd.get(), c.log_bytes, log_size - c.log_bytes, text))
                return io_failure(app, "conversations.log", ec, diag);
            std::size_t pos = 0;
            for (;;) {
                const auto nl = text.find('\n', pos);
                if (nl == std::string::npos) break; // a torn last line: cut by the next write
                if (auto ec = apply_line(app, c, std::string_view(text).substr(pos, nl - pos), c.log_bytes + pos, diag))
                    return ec;
                pos = nl + 1;
            }
            c.log_bytes += pos;
        }
        c.loaded = true;
        return {};
    }

    boost::system::error_code apply_line(const std::string& app, app_cache& c, std::string_view line,
                                         std::uint64_t offset, diagnostics* diag) {
        const auto where = " at byte " + std::to_string(offset);
        const auto log = dir_of(app) / "conversations.log";
        boost::system::error_code pec;
        json::value v = detail::parse_precise(line, pec, {});
        const json::object* o = pec ? nullptr : v.if_object();
        if (!o) return corrupt(log, where, "a line that is not a JSON object", diag);
        if (const json::value* k = o->if_contains("erase"); k && k->is_string()) {
            c.entries.erase(std::string(k->get_string()));
            return {};
        }
        const json::value* put = o->if_contains("put");
        conversation_entry e;
        decode_error err;
        if (!put) return corrupt(log, where, "neither \"put\" nor \"erase\"", diag);
        if (!detail::read_entry(*put, e, err)) return corrupt(log, where, "put." + err.message(), diag);
        c.entries.insert_or_assign(e.key, std::move(e));
        return {};
    }

    boost::system::error_code append_line(const std::string& app, app_cache& c, std::string line, diagnostics* diag) {
        // A torn line left by a crashed writer is cut first, so that this one starts a line.
        struct stat ls{};
        if (::fstat(c.log_fd.get(), &ls) != 0) return io_failure(app, "conversations.log", detail::jsonl::errno_code(), diag);
        if (std::uint64_t(ls.st_size) != c.log_bytes && ::ftruncate(c.log_fd.get(), off_t(c.log_bytes)) != 0)
            return io_failure(app, "conversations.log", detail::jsonl::errno_code(), diag);
        line += '\n';
        if (auto ec = detail::jsonl::write_all(c.log_fd.get(), line)) {
            (void)::ftruncate(c.log_fd.get(), off_t(c.log_bytes)); // nothing half-written stays
            return io_failure(app, "conversations.log", ec, diag);
        }
        if (state_->options.sync_every_change)
            if (auto ec = detail::jsonl::fdatasync_fd(c.log_fd.get())) return io_failure(app, "conversations.log", ec, diag);
        c.log_bytes += line.size();
        return {};
    }

    boost::system::error_code write_put(const std::string& app, app_cache& c, const conversation_entry& e,
                                        diagnostics* diag) {
        json::object line;
        line["put"] = detail::entry_to_json(e);
        if (auto ec = append_line(app, c, json::serialize(line), diag)) return ec;
        c.entries.insert_or_assign(e.key, e);
        return maybe_compact(app, c, diag);
    }

    boost::system::error_code maybe_compact(const std::string& app, app_cache& c, diagnostics* diag) {
        if (c.log_bytes <= std::max<std::uint64_t>(c.snap_bytes, 64 * 1024)) return {};
        return compact(app, c, diag);
    }

    // The entries to a new conversations.json (one per line, sorted by key), then the log
    // emptied.
    boost::system::error_code compact(const std::string& app, app_cache& c, diagnostics* diag) {
        std::map<std::string_view, const conversation_entry*> sorted;
        for (const auto& [k, e] : c.entries) sorted.emplace(k, &e);
        std::string text = "{\"format\":\"libretto.session_index\",\"version\":1,\"entries\":[";
        bool first = true;
        for (const auto& [k, e] : sorted) {
            text += first ? "\n" : ",\n";
            first = false;
            text += json::serialize(detail::entry_to_json(*e));
        }
        text += "\n]}\n";
        const auto snap = dir_of(app) / "conversations.json";
        if (auto ec = detail::jsonl::write_file_atomic(snap, text, true, "index"))
            return io_failure(app, "conversations.json", ec, diag);
        if (::ftruncate(c.log_fd.get(), 0) != 0) return io_failure(app, "conversations.log", detail::jsonl::errno_code(), diag);
        struct stat st{};
        if (::stat(snap.c_str(), &st) == 0) {
            c.snap_ino = st.st_ino;
            c.snap_size = std::uint64_t(st.st_size);
            c.snap_mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
        }
        c.snap_bytes = text.size();
        c.log_bytes = 0;
        return {};
    }

    std::unique_ptr<state> state_;
};

static_assert(session_index<jsonl_session_index>);

} // namespace libretto

#endif
