// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_DETAIL_CHILD_PROCESS_HPP
#define LIBRETTO_MCP_DETAIL_CHILD_PROCESS_HPP

// A child process with its stdin, stdout and stderr on pipes Asio reads and writes
// (readable_pipe, writable_pipe): what the stdio transport runs a server in. POSIX only:
// posix_spawn with close-on-exec pipes, the working directory set by
// posix_spawn_file_actions_addchdir_np (glibc 2.29). Boost 1.81's Process v2 would do
// this, but it needs a compiled Boost.Filesystem of the same version, which a header-only
// library cannot ask of its users.

#include <libretto/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace libretto::mcp::detail {

/// Where `name` is on PATH, as posix_spawnp would find it ("" if nowhere; a name with a '/'
/// is returned as it is when executable).
inline std::string find_on_path(std::string_view name) {
    auto executable = [](const std::string& p) {
        struct stat st {};
        return ::access(p.c_str(), X_OK) == 0 && ::stat(p.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
    };
    if (name.find('/') != std::string_view::npos) return executable(std::string(name)) ? std::string(name) : std::string();
    const char* env = std::getenv("PATH");
    const std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find(':', start), path.size());
        std::string dir = path.substr(start, end - start);
        if (dir.empty()) dir = ".";
        std::string candidate = dir + "/" + std::string(name);
        if (executable(candidate)) return candidate;
        start = end + 1;
    }
    return {};
}

/// What to start.
struct spawn_spec {
    std::string command;                 ///< a path, or a name looked up in PATH
    std::vector<std::string> args;       ///< after the command
    std::map<std::string, std::string> env; ///< set (or replaced) in the child's environment
    bool inherit_environment = true;     ///< start from this process's environment
    std::string working_directory;       ///< empty: this process's
};

class child_process {
public:
    explicit child_process(boost::asio::any_io_executor ex) : in_(ex), out_(ex), err_(ex) {}
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    ~child_process() { kill_now(); }

    /// Starts the child; errc-style error and `what` filled on failure.
    boost::system::error_code start(const spawn_spec& s, std::string& what) {
        // What the C interfaces would cut or misread: a name with '=' would set another
        // variable, a NUL would end a string early.
        for (const auto& [k, v] : s.env)
            if (k.empty() || k.find_first_of(std::string_view("=\0", 2)) != std::string::npos ||
                v.find('\0') != std::string::npos) {
                what = "stdio_options.env: '" + k.substr(0, 64) + "' is not a variable name and value (a name is not empty, "
                       "and neither holds '=' in the name or a NUL byte)";
                return errc::invalid_argument;
            }
        for (const std::string* a : {&s.command, &s.working_directory})
            if (a->find('\0') != std::string::npos) {
                what = "stdio_options: '" + a->substr(0, a->find('\0')) + "...' holds a NUL byte";
                return errc::invalid_argument;
            }
        for (const auto& a : s.args)
            if (a.find('\0') != std::string::npos) {
                what = "stdio_options.args: '" + a.substr(0, a.find('\0')) + "...' holds a NUL byte";
                return errc::invalid_argument;
            }
        // Checked here: the child's chdir failure would read as the command's.
        if (!s.working_directory.empty()) {
            struct stat st {};
            if (::stat(s.working_directory.c_str(), &st) != 0) {
                const int e = errno;
                what = "stdio_options.working_directory '" + s.working_directory + "': " + std::strerror(e);
                return boost::system::error_code(e, boost::system::system_category());
            }
            if (!S_ISDIR(st.st_mode)) {
                what = "stdio_options.working_directory '" + s.working_directory + "' is not a directory";
                return boost::system::error_code(ENOTDIR, boost::system::system_category());
            }
        }
        int in[2], out[2], err[2];
        if (::pipe2(in, O_CLOEXEC) != 0) return fail_errno("pipe", what);
        if (::pipe2(out, O_CLOEXEC) != 0) {
            close_pair(in);
            return fail_errno("pipe", what);
        }
        if (::pipe2(err, O_CLOEXEC) != 0) {
            close_pair(in);
            close_pair(out);
            return fail_errno("pipe", what);
        }
        posix_spawn_file_actions_t fa;
        ::posix_spawn_file_actions_init(&fa);
        ::posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        ::posix_spawn_file_actions_adddup2(&fa, err[1], 2);
        if (!s.working_directory.empty()) ::posix_spawn_file_actions_addchdir_np(&fa, s.working_directory.c_str());
        posix_spawnattr_t attr;
        ::posix_spawnattr_init(&attr);
        // The child starts with default signal dispositions and its own process group, so
        // a Ctrl-C meant for this program is not also delivered to it twice.
        sigset_t all;
        sigemptyset(&all);
        ::posix_spawnattr_setsigmask(&attr, &all);
        sigset_t def;
        sigemptyset(&def);
        sigaddset(&def, SIGPIPE);
        sigaddset(&def, SIGINT);
        sigaddset(&def, SIGTERM);
        ::posix_spawnattr_setsigdefault(&attr, &def);
        ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

        std::vector<std::string> env_strings;
        if (s.inherit_environment)
            for (char** e = environ; e && *e; ++e) {
                std::string kv = *e;
                const auto eq = kv.find('=');
                if (eq != std::string::npos && s.env.count(kv.substr(0, eq))) continue; // replaced below
                env_strings.push_back(std::move(kv));
            }
        for (const auto& [k, v] : s.env) env_strings.push_back(k + "=" + v);
        std::vector<char*> envp;
        for (auto& e : env_strings) envp.push_back(e.data());
        envp.push_back(nullptr);
        std::vector<std::string> argv_strings{s.command};
        argv_strings.insert(argv_strings.end(), s.args.begin(), s.args.end());
        std::vector<char*> argv;
        for (auto& a : argv_strings) argv.push_back(a.data());
        argv.push_back(nullptr);

        pid_t pid = 0;
        const int rc = ::posix_spawnp(&pid, s.command.c_str(), &fa, &attr, argv.data(), envp.data());
        ::posix_spawn_file_actions_destroy(&fa);
        ::posix_spawnattr_destroy(&attr);
        ::close(in[0]);
        ::close(out[1]);
        ::close(err[1]);
        if (rc != 0) {
            ::close(in[1]);
            ::close(out[0]);
            ::close(err[0]);
            what = "cannot start '" + s.command + "': " + std::string(std::strerror(rc));
            return boost::system::error_code(rc, boost::system::system_category());
        }
        pid_ = pid;
        boost::system::error_code ec;
        in_.assign(in[1], ec);
        out_.assign(out[0], ec);
        err_.assign(err[0], ec);
        return ec;
    }

    boost::asio::writable_pipe& stdin_pipe() noexcept { return in_; }
    boost::asio::readable_pipe& stdout_pipe() noexcept { return out_; }
    boost::asio::readable_pipe& stderr_pipe() noexcept { return err_; }

    pid_t pid() const noexcept { return pid_; }

    /// True once the child was reaped; `status` the waitpid status.
    bool try_reap() {
        if (pid_ <= 0) return true;
        int st = 0;
        const pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_ || (r < 0 && errno == ECHILD)) {
            status_ = st;
            pid_ = 0;
            return true;
        }
        return false;
    }

    /// How the child ended ("exited with status 1", "killed by signal 9"); empty if it runs.
    std::string exit_description() const {
        if (pid_ > 0 || !status_) return {};
        if (WIFEXITED(*status_)) return "exited with status " + std::to_string(WEXITSTATUS(*status_));
        if (WIFSIGNALED(*status_)) return "killed by signal " + std::to_string(WTERMSIG(*status_));
        return "ended";
    }

    void signal(int sig) noexcept {
        if (pid_ > 0) ::kill(pid_, sig);
    }

    void close_stdin() noexcept {
        boost::system::error_code ignored;
        in_.close(ignored);
    }

    /// SIGKILL and reap (the destructor's last resort; blocks only for the reap).
    void kill_now() noexcept {
        boost::system::error_code ignored;
        in_.close(ignored);
        out_.close(ignored);
        err_.close(ignored);
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int st = 0;
            ::waitpid(pid_, &st, 0);
            status_ = st;
            pid_ = 0;
        }
    }

private:
    static void close_pair(int p[2]) noexcept {
        ::close(p[0]);
        ::close(p[1]);
    }
    static boost::system::error_code fail_errno(const char* what_call, std::string& what) {
        const int e = errno;
        what = std::string(what_call) + " failed: " + std::strerror(e);
        return boost::system::error_code(e, boost::system::system_category());
    }

    boost::asio::writable_pipe in_;
    boost::asio::readable_pipe out_;
    boost::asio::readable_pipe err_;
    pid_t pid_ = 0;
    std::optional<int> status_;
};

} // namespace libretto::mcp::detail

#endif
