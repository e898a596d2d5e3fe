// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_FILE_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_FILE_HPP

// POSIX file helpers for jsonl_store: an owning file descriptor, full reads and writes,
// atomic file replacement (temp file, fsync, rename, fsync of the directory), process
// identity (pid + start time from /proc) and the per-session writer lock.

#include <libretto/detail/deadline.hpp>
#include <libretto/error.hpp>

#include <boost/system/error_code.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

namespace libretto::detail::jsonl {

namespace fs = std::filesystem;
using boost::system::error_code;

inline error_code errno_code(int e = errno) noexcept { return error_code(e, boost::system::generic_category()); }

/// An owning file descriptor.
class file {
public:
    file() = default;
    explicit file(int fd) noexcept : fd_(fd) {}
    file(file&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    file& operator=(file&& o) noexcept {
        if (this != &o) {
            close();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    ~file() { close(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    void close() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    static file open(const fs::path& p, int flags, error_code& ec, mode_t mode = 0644) {
        int fd;
        do fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
        while (fd < 0 && errno == EINTR);
        if (fd < 0) ec = errno_code();
        else ec = {};
        return file(fd);
    }

private:
    int fd_ = -1;
};

/// Reads up to `n` bytes at `offset` into `out` (resized to what was read: less at EOF).
inline error_code pread_all(int fd, std::uint64_t offset, std::size_t n, std::string& out) {
    out.resize(n);
    std::size_t got = 0;
    while (got < n) {
        ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            auto ec = errno_code();
            out.resize(got);
            return ec;
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return {};
}

/// Reads up to `n` bytes at `offset` into `dst`; `got` says how many (less at EOF).
inline error_code pread_into(int fd, std::uint64_t offset, char* dst, std::size_t n, std::size_t& got) {
    got = 0;
    while (got < n) {
        ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno_code();
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    return {};
}

/// Writes all of `data` (the fd may be O_APPEND).
inline error_code write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t r = ::write(fd, data.data(), data.size());
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno_code();
        }
        data.remove_prefix(static_cast<std::size_t>(r));
    }
    return {};
}

/// Writes `a` then `b` with as few system calls as possible (one writev, normally).
inline error_code write_all(int fd, std::string_view a, std::string_view b) {
    while (!a.empty()) {
        iovec v[2] = {{const_cast<char*>(a.data()), a.size()}, {const_cast<char*>(b.data()), b.size()}};
        ssize_t r = ::writev(fd, v, 2);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno_code();
        }
        auto n = static_cast<std::size_t>(r);
        if (n >= a.size()) {
            b.remove_prefix(n - a.size());
            a = {};
        } else {
            a.remove_prefix(n);
        }
    }
    return write_all(fd, b);
}

/// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with transparent huge
/// pages (a hint; ignored where unsupported). For large arrays about to be filled once: a
/// first touch of fresh memory otherwise costs a page fault per 4 KiB.
inline void advise_huge_pages(const void* p, std::size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
    constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
    const auto b = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
    const auto e = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
    if (e > b) (void)::madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

/// Fault injection for tests: when set, fdatasync_fd calls it instead of ::fdatasync (a
/// disk that fails a sync cannot be made on demand).
inline int (*fdatasync_for_tests)(int fd) = nullptr;

inline error_code fdatasync_fd(int fd) {
    int r;
    do r = fdatasync_for_tests ? fdatasync_for_tests(fd) : ::fdatasync(fd);
    while (r < 0 && errno == EINTR);
    return r < 0 ? errno_code() : error_code{};
}

inline error_code fsync_fd(int fd) {
    int r;
    do r = ::fsync(fd);
    while (r < 0 && errno == EINTR);
    return r < 0 ? errno_code() : error_code{};
}

/// fsync of a directory, so that names created, renamed or removed in it are durable.
inline error_code fsync_dir(const fs::path& dir) {
    error_code ec;
    file d = file::open(dir, O_RDONLY | O_DIRECTORY, ec);
    if (ec) return ec;
    return fsync_fd(d.get());
}

/// Reads a whole (small) file. ENOENT comes back as generic errc::no_such_file_or_directory.
inline error_code read_file(const fs::path& p, std::string& out) {
    out.clear();
    error_code ec;
    file f = file::open(p, O_RDONLY, ec);
    if (ec) return ec;
    struct stat st;
    if (::fstat(f.get(), &st) != 0) return errno_code();
    return pread_all(f.get(), 0, static_cast<std::size_t>(st.st_size), out);
}

/// A name for a temporary file next to `target`, unique in this process and across processes.
inline fs::path temp_name(const fs::path& target, std::string_view nonce) {
    static std::atomic<std::uint64_t> counter{0};
    std::string name = ".";
    name += target.filename().string();
    name += '.';
    name += nonce;
    name += '.';
    name += std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    name += ".tmp";
    return target.parent_path() / name;
}

/// Replaces `target` with `data` atomically: a reader sees the old or the new content, never
/// a mix. With `durable`: fsync of the temp file before the rename and of the directory after.
/// `renamed` (if given) says whether `target` now holds `data`: true also when only the
/// directory's fsync failed, after the rename.
inline error_code write_file_atomic(const fs::path& target, std::string_view data, bool durable,
                                    std::string_view nonce, bool* renamed = nullptr) {
    if (renamed) *renamed = false;
    const fs::path tmp = temp_name(target, nonce);
    error_code ec;
    {
        file f = file::open(tmp, O_WRONLY | O_CREAT | O_EXCL, ec);
        if (ec) return ec;
        ec = write_all(f.get(), data);
        if (!ec && durable) ec = fsync_fd(f.get());
        if (ec) {
            f.close();
            ::unlink(tmp.c_str());
            return ec;
        }
    }
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
        ec = errno_code();
        ::unlink(tmp.c_str());
        return ec;
    }
    if (renamed) *renamed = true;
    if (durable) return fsync_dir(target.parent_path());
    return {};
}

// ---- process identity -----------------------------------------------------------------------

/// The start time of process `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat),
/// or 0 if unknown. With the pid it identifies a process even after pid reuse.
inline std::uint64_t process_start_time(long pid) {
    std::string text;
    error_code ec;
    file f = file::open(fs::path("/proc") / std::to_string(pid) / "stat", O_RDONLY, ec);
    if (ec || pread_all(f.get(), 0, 4096, text)) return 0; // /proc files report size 0: read, don't stat
    auto paren = text.rfind(')');
    if (paren == std::string::npos) return 0;
    // Fields after the command name start with field 3 (state); starttime is field 22.
    std::size_t pos = paren + 1;
    for (int field = 3; field < 22; ++field) {
        pos = text.find(' ', pos + 1);
        if (pos == std::string::npos) return 0;
    }
    return std::strtoull(text.c_str() + pos + 1, nullptr, 10);
}

inline std::uint64_t self_start_time() {
    static const std::uint64_t t = process_start_time(static_cast<long>(::getpid()));
    return t;
}

/// True if a process with this pid exists (it may belong to another user).
inline bool pid_alive(long pid) {
    if (pid <= 0) return false;
    if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
    return errno == EPERM;
}

// ---- the writer lock ---------------------------------------------------------------------------

/// Who holds (or last held) a lock, from the lock file's record.
struct lock_holder {
    long pid = 0;
    std::uint64_t start_time = 0;
    std::string nonce;  ///< the store instance
    double since = 0;   ///< unix time of acquisition
};

inline std::string lock_record(std::string_view nonce) {
    using namespace std::chrono;
    char buf[160];
    const double now = duration<double>(system_clock::now().time_since_epoch()).count();
    int n = std::snprintf(buf, sizeof buf, "libretto-lock pid=%ld start=%llu nonce=%.*s since=%.6f\n",
                          static_cast<long>(::getpid()), static_cast<unsigned long long>(self_start_time()),
                          static_cast<int>(nonce.size()), nonce.data(), now);
    return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

inline bool parse_lock_record(std::string_view text, lock_holder& h) {
    if (!text.starts_with("libretto-lock ")) return false;
    auto field = [&](std::string_view key) -> std::string_view {
        auto p = text.find(key);
        if (p == std::string_view::npos) return {};
        p += key.size();
        auto e = text.find_first_of(" \n", p);
        return text.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p);
    };
    std::string pid(field(" pid=")), start(field(" start=")), since(field(" since="));
    if (pid.empty() || start.empty()) return false;
    h.pid = std::strtol(pid.c_str(), nullptr, 10);
    h.start_time = std::strtoull(start.c_str(), nullptr, 10);
    h.nonce = std::string(field(" nonce="));
    h.since = since.empty() ? 0.0 : std::strtod(since.c_str(), nullptr);
    return h.pid > 0;
}

/// True if the recorded holder is certainly gone: its pid does not exist, or it exists with
/// another start time (the pid was reused).
inline bool holder_is_dead(const lock_holder& h) {
    if (!pid_alive(h.pid)) return true;
    if (h.start_time == 0) return false;
    const auto now_start = process_start_time(h.pid);
    return now_start != 0 && now_start != h.start_time;
}

struct lock_options {
    std::chrono::milliseconds timeout{10'000};
    /// A lock whose flock is held but whose recorded holder is dead is broken only after the
    /// record is this old (a fresh holder writes its record microseconds after taking it).
    std::chrono::milliseconds stale_age{2'000};
};

/// flock on a directory, for the few microseconds of a lock hand-over (see writer_lock).
class dir_guard {
public:
    explicit dir_guard(const fs::path& dir) {
        error_code ec;
        fd_ = file::open(dir, O_RDONLY | O_DIRECTORY, ec);
        if (fd_)
            while (::flock(fd_.get(), LOCK_EX) != 0 && errno == EINTR) {
            }
    }
    ~dir_guard() {
        if (fd_) ::flock(fd_.get(), LOCK_UN);
    }
    dir_guard(const dir_guard&) = delete;
    dir_guard& operator=(const dir_guard&) = delete;

private:
    file fd_;
};

/// The per-session writer lock: the file `<session>/lock`.
///
/// Exclusion comes from flock(2) on the file, which the kernel drops when the holder's
/// descriptor closes (exit, crash, SIGKILL), and which is per open file description, so two
/// store instances in one process exclude each other too. On taking it the holder writes
/// its record (pid, process start time, instance nonce, time). A lock that is held while its
/// record names a dead process (or a reused pid) — a descriptor inherited by a forked child
/// that outlived the holder — is stale: it is reclaimed by replacing the lock file.
///
/// A lock counts only on the file the path names. Two steps run under a flock of the
/// session directory so that a reclaim can never leave two holders: a new holder, after
/// writing its record, checks that the path still names its file; a reclaimer re-reads the
/// record and checks that the path still names the stale file before replacing it. Either
/// the reclaimer sees the fresh record (and backs off) or the holder sees the new file (and
/// tries again).
class writer_lock {
public:
    bool held() const noexcept { return held_; }

    /// Takes the lock. errc::busy after the timeout (with `holder` filled when known),
    /// errc::not_found if the session directory is gone.
    /// `on_wait` runs once, before the first wait (the store releases its idle leases there).
    error_code acquire(const fs::path& path, const lock_options& o, std::string_view nonce, lock_holder* holder = nullptr,
                       const std::function<void()>& on_wait = {}) {
        if (held_) return {};
        using clock = std::chrono::steady_clock;
        const auto deadline = deadline_after(o.timeout);
        auto delay = std::chrono::microseconds(200);
        bool waited = false;
        int reclaims = 0;
        for (;;) {
            error_code ec;
            if (!fd_) {
                fd_ = file::open(path, O_RDWR | O_CREAT, ec);
                if (ec) return ec == boost::system::errc::no_such_file_or_directory ? error_code(errc::not_found) : ec;
            }
            if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) {
                const std::string rec = lock_record(nonce);
                if (::pwrite(fd_.get(), rec.data(), rec.size(), 0) < 0 ||
                    ::ftruncate(fd_.get(), static_cast<off_t>(rec.size())) != 0) {
                    ec = errno_code();
                    ::flock(fd_.get(), LOCK_UN);
                    return ec;
                }
                // The file may have been replaced (stale reclaim) or removed (session deleted)
                // since it was opened: the lock counts only on the file the path names now.
                bool current;
                {
                    dir_guard g(path.parent_path());
                    current = names_our_file(path);
                }
                if (!current) {
                    ::flock(fd_.get(), LOCK_UN);
                    fd_.close();
                    std::error_code fec;
                    if (!fs::exists(path.parent_path(), fec)) return errc::not_found;
                    continue;
                }
                held_ = true;
                return {};
            }
            if (errno != EWOULDBLOCK && errno != EINTR) return errno_code();
            lock_holder h;
            const bool known = read_holder(h);
            if (known && holder_is_dead(h) && record_age(o) >= o.stale_age && reclaims < 8) {
                ++reclaims;
                if (reclaim(path, nonce, o)) continue;
            }
            if (clock::now() >= deadline) {
                if (holder && known) *holder = h;
                return errc::busy;
            }
            if (!waited && on_wait) on_wait();
            waited = true;
            auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - clock::now());
            std::this_thread::sleep_for(std::min(delay, left));
            delay = std::min(delay * 2, std::chrono::microseconds(20'000));
        }
    }

    /// Releases the lock (the file stays; its record names the last holder).
    void release() noexcept {
        if (held_ && fd_) ::flock(fd_.get(), LOCK_UN);
        held_ = false;
    }

    /// Releases and closes.
    void close() noexcept {
        release();
        fd_.close();
    }

    ~writer_lock() { close(); }

private:
    bool read_holder(lock_holder& h) const {
        std::string text;
        if (pread_all(fd_.get(), 0, 256, text)) return false;
        return parse_lock_record(text, h);
    }

    std::chrono::milliseconds record_age(const lock_options&) const {
        struct stat st;
        if (::fstat(fd_.get(), &st) != 0) return {};
        using namespace std::chrono;
        const auto mtime = seconds(st.st_mtim.tv_sec) + nanoseconds(st.st_mtim.tv_nsec);
        const auto now = system_clock::now().time_since_epoch();
        return duration_cast<milliseconds>(now - mtime);
    }

    bool names_our_file(const fs::path& path) const {
        struct stat a, b;
        return ::fstat(fd_.get(), &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
               a.st_dev == b.st_dev;
    }

    /// Puts a fresh lock file in place of the stale one (the orphan keeps its flock on the
    /// old file, which no longer counts) — if, under the directory's flock, the path still
    /// names that file and its record is still stale. False if nothing was replaced.
    bool reclaim(const fs::path& path, std::string_view nonce, const lock_options& o) {
        bool replaced = false;
        {
            dir_guard g(path.parent_path());
            lock_holder h;
            if (names_our_file(path) && read_holder(h) && holder_is_dead(h) && record_age(o) >= o.stale_age) {
                error_code ec;
                const fs::path tmp = temp_name(path, nonce);
                { file f = file::open(tmp, O_WRONLY | O_CREAT | O_EXCL, ec); }
                if (!ec) {
                    replaced = ::rename(tmp.c_str(), path.c_str()) == 0;
                    if (!replaced) ::unlink(tmp.c_str());
                }
            }
        }
        fd_.close(); // reopen the path, whatever it names now
        return replaced;
    }

    file fd_;
    bool held_ = false;
};

/// A lock file for short critical sections (shared state files, the index): flock only.
class scoped_flock {
public:
    scoped_flock() = default;
    scoped_flock(const scoped_flock&) = delete;
    scoped_flock& operator=(const scoped_flock&) = delete;
    ~scoped_flock() {
        if (fd_) ::flock(fd_.get(), LOCK_UN);
    }

    /// Blocks up to `timeout` (errc::busy); a zero timeout tries once.
    error_code lock(const fs::path& path, std::chrono::milliseconds timeout) {
        error_code ec;
        fd_ = file::open(path, O_RDWR | O_CREAT, ec);
        if (ec) return ec;
        using clock = std::chrono::steady_clock;
        const auto deadline = deadline_after(timeout);
        auto delay = std::chrono::microseconds(100);
        for (;;) {
            if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) return {};
            if (errno != EWOULDBLOCK && errno != EINTR) {
                ec = errno_code();
                fd_.close();
                return ec;
            }
            if (clock::now() >= deadline) {
                fd_.close();
                return errc::busy;
            }
            std::this_thread::sleep_for(delay);
            delay = std::min(delay * 2, std::chrono::microseconds(10'000));
        }
    }

private:
    file fd_;
};

} // namespace libretto::detail::jsonl

#endif
