// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// A fault-injection shim for the fault tests: write, pwrite, writev, fsync, fdatasync,
// rename and ftruncate, defined in the test executable itself and forwarding to the next
// definition (dlsym(RTLD_NEXT, ...): ASan's interceptor under gcc-asan, libc otherwise).
// An LD_PRELOAD library would break ASan's "runtime must come first" rule; a definition in
// the executable comes first in the symbol search for every caller, the header-only stores
// compiled into the test and the shared libraries it links (libsqlite3 calls pwrite64,
// write, fdatasync and ftruncate64 through its PLT).
//
// Only calls on files under a plan's directory count (the descriptor's path through
// /proc/self/fd), and only while a plan is armed; everything else (Boost.Test's output, the
// pipes of the kill tests) passes straight through. A plan counts the calls it sees, and can
// fail the at-th with an errno (once, or from then on: a full disk), cut that write short
// (half of its bytes, as a disk filling up mid-write does), or SIGKILL the process there.
//
// Include this header in exactly one translation unit of a test executable (each test file is
// one): it defines the C functions it intercepts.
#ifndef LIBRETTO_TESTS_FAULT_INJECTION_HPP
#define LIBRETTO_TESTS_FAULT_INJECTION_HPP

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace fault {

/// The intercepted calls (pwrite64 counts as pwrite, ftruncate64 as ftruncate, renameat as
/// rename).
enum class call : unsigned { write = 1, pwrite = 2, writev = 4, fsync = 8, fdatasync = 16, rename = 32, ftruncate = 64 };

inline constexpr unsigned writes = 1 | 2 | 4;
inline constexpr unsigned syncs = 8 | 16;
/// What the fault matrix fails: writes, syncs and renames (ftruncate is the store's own
/// take-back; tests fail it on purpose only).
inline constexpr unsigned durable_calls = writes | syncs | 32;
inline constexpr unsigned all_calls = durable_calls | 64;

inline const char* name_of(call c) {
    switch (c) {
    case call::write: return "write";
    case call::pwrite: return "pwrite";
    case call::writev: return "writev";
    case call::fsync: return "fsync";
    case call::fdatasync: return "fdatasync";
    case call::rename: return "rename";
    case call::ftruncate: return "ftruncate";
    }
    return "?";
}

inline std::ostream& operator<<(std::ostream& os, call c) { return os << name_of(c); }

/// What to do with the calls under `root`.
struct plan {
    std::string root;             ///< an absolute directory: only calls on files under it count
    unsigned calls = durable_calls; ///< which calls count (a mask of `call`)
    std::size_t at = 0;           ///< the counted call to hit (1-based); 0: only count
    int error = EIO;              ///< the errno a failed call reports
    bool sticky = false;          ///< fail every counted call from `at` on (a full disk), not only the at-th
    bool short_write = false;     ///< the at-th call, a write, writes half of its bytes and reports that
    bool kill = false;            ///< SIGKILL the process at the at-th call (after the half, with short_write)
    unsigned then_fail = 0;       ///< calls (a mask) that fail too, uncounted, once the at-th call was hit
    bool trace = false;           ///< keep the list of counted calls (kind and path)
};

/// One counted call.
struct traced {
    call kind;
    std::string path;
};

namespace detail {

struct state {
    std::atomic<bool> armed{false};
    plan p;                            // written only while disarmed
    std::atomic<std::size_t> count{0}; // counted calls so far
    std::atomic<std::size_t> hits{0};  // calls failed (or cut short)
    std::mutex mu;                     // guards the two below
    std::vector<traced> trace;
    std::vector<traced> failed;
};

inline state& the_state() {
    static state s;
    return s;
}

/// The path a descriptor names ("" if unknown).
inline std::string fd_path(int fd) {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    char buf[4096];
    const ssize_t n = ::readlink(link, buf, sizeof buf - 1);
    if (n <= 0) return {};
    return std::string(buf, static_cast<std::size_t>(n));
}

inline std::string absolute(const char* p) {
    if (!p) return {};
    if (p[0] == '/') return p;
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) return p;
    return std::string(cwd) + "/" + p;
}

/// What the wrapper of one call does.
struct decision {
    bool hit = false;   // fail it (or cut it short)
    bool cut = false;   // a write: write half, report that
    bool kill = false;  // then SIGKILL
    int error = 0;
};

inline bool under(const std::string& path, const std::string& root) {
    if (root.empty() || path.size() < root.size()) return false;
    if (path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || path[root.size()] == '/' || root.back() == '/';
}

/// Counts a call on `fd` (or on `path` when fd < 0) and decides its fate.
inline decision consider(call kind, int fd, const char* path, const char* path2 = nullptr) {
    decision d;
    state& s = the_state();
    if (!s.armed.load(std::memory_order_acquire)) return d;
    const bool counts = (s.p.calls & static_cast<unsigned>(kind)) != 0;
    const bool follows = (s.p.then_fail & static_cast<unsigned>(kind)) != 0 && s.hits.load() > 0;
    if (!counts && !follows) return d;
    std::string where = fd >= 0 ? fd_path(fd) : absolute(path);
    if (!under(where, s.p.root)) {
        if (!path2) return d;
        where = absolute(path2);
        if (!under(where, s.p.root)) return d;
    }
    const int saved = errno;
    if (!counts) {
        d.hit = true;
        d.error = s.p.error;
        std::lock_guard l(s.mu);
        s.failed.push_back({kind, where});
        errno = saved;
        return d;
    }
    const std::size_t n = s.count.fetch_add(1) + 1;
    if (s.p.trace) {
        std::lock_guard l(s.mu);
        s.trace.push_back({kind, where});
    }
    if (s.p.at != 0 && (n == s.p.at || (s.p.sticky && n > s.p.at))) {
        d.hit = true;
        d.error = s.p.error;
        d.kill = s.p.kill;
        d.cut = n == s.p.at && s.p.short_write && (kind == call::write || kind == call::pwrite || kind == call::writev);
        s.hits.fetch_add(1);
        std::lock_guard l(s.mu);
        s.failed.push_back({kind, where});
    }
    errno = saved;
    return d;
}

[[noreturn]] inline void die() {
    ::raise(SIGKILL);
    ::_exit(137); // not reached
}

template <class F>
F next(const char* name) {
    return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

} // namespace detail

/// Arms `p` (counters and records reset). Not thread-safe against another arm or disarm.
inline void arm(plan p) {
    auto& s = detail::the_state();
    s.armed.store(false, std::memory_order_release);
    if (!p.root.empty() && p.root.back() == '/') p.root.pop_back();
    s.p = std::move(p);
    s.count = 0;
    s.hits = 0;
    {
        std::lock_guard l(s.mu);
        s.trace.clear();
        s.failed.clear();
    }
    s.armed.store(true, std::memory_order_release);
}

/// Stops counting and failing; what was recorded stays readable.
inline void disarm() { detail::the_state().armed.store(false, std::memory_order_release); }

/// Calls counted since arm().
inline std::size_t counted() { return detail::the_state().count.load(); }
/// Calls failed (or cut short) since arm().
inline std::size_t hits() { return detail::the_state().hits.load(); }

/// The counted calls (with plan::trace).
inline std::vector<traced> trace() {
    auto& s = detail::the_state();
    std::lock_guard l(s.mu);
    return s.trace;
}

/// The calls that were failed, in order.
inline std::vector<traced> failed() {
    auto& s = detail::the_state();
    std::lock_guard l(s.mu);
    return s.failed;
}

/// `p` without the run's own part of a temporary file's name (".state.json.<nonce>.<n>.tmp"
/// becomes ".state.json.tmp"), so that the calls of two runs compare.
inline std::string stable_path(const std::string& p) {
    const auto slash = p.rfind('/');
    std::string name = p.substr(slash == std::string::npos ? 0 : slash + 1);
    if (name.size() <= 5 || name[0] != '.' || name.compare(name.size() - 4, 4, ".tmp") != 0) return p;
    std::string core = name.substr(0, name.size() - 4);
    for (int i = 0; i < 2; ++i) {
        const auto dot = core.rfind('.');
        if (dot == std::string::npos || dot == 0) return p;
        core.erase(dot);
    }
    return p.substr(0, slash == std::string::npos ? 0 : slash + 1) + core + ".tmp";
}

/// "fdatasync .../transcript.jsonl" (the path relative to `root` when under it).
inline std::string describe(const traced& t, const std::string& root = {}) {
    std::string p = stable_path(t.path);
    if (!root.empty() && p.compare(0, root.size(), root) == 0) p = "<dir>" + p.substr(root.size());
    return std::string(name_of(t.kind)) + " " + p;
}

/// Arms a plan for the scope.
class armed {
public:
    explicit armed(plan p) { arm(std::move(p)); }
    ~armed() { disarm(); }
    armed(const armed&) = delete;
    armed& operator=(const armed&) = delete;
};

} // namespace fault

// ---- the intercepted functions --------------------------------------------------------------

extern "C" {

ssize_t write(int fd, const void* buf, size_t n) {
    using fn = ssize_t (*)(int, const void*, size_t);
    static const fn real = fault::detail::next<fn>("write");
    const auto d = fault::detail::consider(fault::call::write, fd, nullptr);
    if (d.hit) {
        if (d.cut && n > 1) {
            const ssize_t r = real(fd, buf, n / 2);
            if (d.kill) fault::detail::die();
            return r;
        }
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec* iov, int cnt) {
    using fn = ssize_t (*)(int, const struct iovec*, int);
    static const fn real = fault::detail::next<fn>("writev");
    const auto d = fault::detail::consider(fault::call::writev, fd, nullptr);
    if (d.hit) {
        if (d.cut && cnt > 0) {
            // Half of the first buffer only.
            iovec half = iov[0];
            half.iov_len = half.iov_len > 1 ? half.iov_len / 2 : half.iov_len;
            const ssize_t r = real(fd, &half, 1);
            if (d.kill) fault::detail::die();
            return r;
        }
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd, iov, cnt);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
    using fn = ssize_t (*)(int, const void*, size_t, off_t);
    static const fn real = fault::detail::next<fn>("pwrite");
    const auto d = fault::detail::consider(fault::call::pwrite, fd, nullptr);
    if (d.hit) {
        if (d.cut && n > 1) {
            const ssize_t r = real(fd, buf, n / 2, off);
            if (d.kill) fault::detail::die();
            return r;
        }
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
    using fn = ssize_t (*)(int, const void*, size_t, off64_t);
    static const fn real = fault::detail::next<fn>("pwrite64");
    const auto d = fault::detail::consider(fault::call::pwrite, fd, nullptr);
    if (d.hit) {
        if (d.cut && n > 1) {
            const ssize_t r = real(fd, buf, n / 2, off);
            if (d.kill) fault::detail::die();
            return r;
        }
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd, buf, n, off);
}

int fsync(int fd) {
    using fn = int (*)(int);
    static const fn real = fault::detail::next<fn>("fsync");
    const auto d = fault::detail::consider(fault::call::fsync, fd, nullptr);
    if (d.hit) {
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd);
}

int fdatasync(int fd) {
    using fn = int (*)(int);
    static const fn real = fault::detail::next<fn>("fdatasync");
    const auto d = fault::detail::consider(fault::call::fdatasync, fd, nullptr);
    if (d.hit) {
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd);
}

int rename(const char* from, const char* to) noexcept {
    using fn = int (*)(const char*, const char*);
    static const fn real = fault::detail::next<fn>("rename");
    const auto d = fault::detail::consider(fault::call::rename, -1, to, from);
    if (d.hit) {
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(from, to);
}

int renameat(int fromfd, const char* from, int tofd, const char* to) noexcept {
    using fn = int (*)(int, const char*, int, const char*);
    static const fn real = fault::detail::next<fn>("renameat");
    // Only absolute or cwd-relative names are matched (what the stores use).
    const bool plain = (to && to[0] == '/') || tofd == AT_FDCWD;
    const auto d = plain ? fault::detail::consider(fault::call::rename, -1, to, from) : fault::detail::decision{};
    if (d.hit) {
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fromfd, from, tofd, to);
}

int ftruncate(int fd, off_t len) noexcept {
    using fn = int (*)(int, off_t);
    static const fn real = fault::detail::next<fn>("ftruncate");
    const auto d = fault::detail::consider(fault::call::ftruncate, fd, nullptr);
    if (d.hit) {
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd, len);
}

int ftruncate64(int fd, off64_t len) noexcept {
    using fn = int (*)(int, off64_t);
    static const fn real = fault::detail::next<fn>("ftruncate64");
    const auto d = fault::detail::consider(fault::call::ftruncate, fd, nullptr);
    if (d.hit) {
        if (d.kill) fault::detail::die();
        errno = d.error;
        return -1;
    }
    return real(fd, len);
}

} // extern "C"

#endif
