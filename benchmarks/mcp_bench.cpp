// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The MCP client against the real @modelcontextprotocol/server-everything (node),
// as scripts/setup installs it (docs/mcp.md):
//
//   mcp_call_stdio_us         one tools/call of `echo` ({"message":"ping"}), awaited with
//                             client::call_tool, request to parsed call_result: median of 2,000
//                             sequential calls after 200 untimed
//   mcp_call_stdio_client_us  this process's CPU time over those 2,000 calls, per call
//                             (CLOCK_PROCESS_CPUTIME_ID: user + system, every thread of this
//                             process; the server is another process and not in it): what
//                             libretto itself costs per call, the rest of the round trip is
//                             the pipes, the scheduler and node
//   mcp_call_http_us          the same call over Streamable HTTP (server-everything with
//   mcp_call_http_client_us   `streamableHttp` on a free loopback port), and our CPU per call
//   mcp_list_tools_us         tools/list (13 tools, ~6.6 KB of JSON) sent with client::request, so the
//                             client's tool cache is not in the way: request to parsed JSON
//                             object, without read_tools' conversion to tool_info; median of
//                             1,000 after 100 untimed
//
// stderr: min, p90 and max, the user/system split of our CPU, and the server's CPU per call
// (read from /proc/<pid>/stat of our child process, where there is one).
// Without node, or without the package ($LIBRETTO_NPM_CACHE, else <source>/.cache/npm), a
// line on stderr says why and nothing is reported.
#include "harness.hpp"

#include <libretto/mcp/client.hpp>

#include <boost/asio/read_until.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace mcp_bench {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace mcp = libretto::mcp;
using clock_type = std::chrono::steady_clock;

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}


/// The command that runs server-everything over stdio, or nullopt (and why on stderr).
std::optional<mcp::stdio_options> everything(const char* metric) {
    const std::string node = mcp::find_executable("node");
    if (node.empty()) {
        std::fprintf(stderr, "%s: skipped, node is not on PATH\n", metric);
        return std::nullopt;
    }
    std::vector<fs::path> caches;
    if (auto c = env_or_empty("LIBRETTO_NPM_CACHE"); !c.empty()) caches.emplace_back(c);
    const std::string source = env_or_empty("LIBRETTO_SOURCE_DIR");
    caches.push_back((source.empty() ? fs::path(__FILE__).parent_path().parent_path() : fs::path(source)) / ".cache" / "npm");
    for (const auto& c : caches) {
        const fs::path index = c / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js";
        if (fs::exists(index)) {
            mcp::stdio_options o;
            o.command = node;
            o.args = {index.string(), "stdio"};
            return o;
        }
    }
    std::fprintf(stderr, "%s: skipped, @modelcontextprotocol/server-everything is not installed (scripts/setup)\n", metric);
    return std::nullopt;
}

/// Runs `f(executor)` (a coroutine) to its end on a fresh io_context; stops there even if the
/// client's reader still waits.
template <class F>
void run(F f) {
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, f(io.get_executor()), [&](std::exception_ptr e) {
        failure = e;
        io.stop();
    });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

double cpu_seconds(clockid_t id) {
    timespec ts{};
    ::clock_gettime(id, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_of(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; }

/// Our child processes' CPU time (user + system, seconds) from /proc/<pid>/stat: the server's.
/// Negative when there is no /proc or no child.
double children_cpu_seconds() {
    const long ticks = ::sysconf(_SC_CLK_TCK);
    const pid_t self = ::getpid();
    double total = -1;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat;
        if (!std::getline(in, stat)) continue;
        const auto close = stat.rfind(')'); // the command name may hold spaces
        if (close == std::string::npos) continue;
        std::istringstream fields(stat.substr(close + 2));
        std::string state;
        long ppid = 0;
        fields >> state >> ppid;
        if (ppid != self) continue;
        std::string skip;
        for (int i = 0; i < 9; ++i) fields >> skip; // pgrp .. cmajflt: fields 5 to 13
        unsigned long utime = 0, stime = 0;
        fields >> utime >> stime;
        total = std::max(total, 0.0) + static_cast<double>(utime + stime) / static_cast<double>(ticks);
    }
    return total;
}

struct spread {
    double median, min, p90, max;
};

spread spread_of(std::vector<double> us) {
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us.front(), us[us.size() * 9 / 10], us.back()};
}

constexpr int call_warmup = 200;
constexpr int calls = 2'000;
constexpr int list_warmup = 100;
constexpr int lists = 1'000;

void bench_mcp_call_stdio(libretto_bench::reporter& r) {
    auto so = everything("mcp_call_stdio_us");
    if (!so) return;
    std::vector<double> us;
    us.reserve(calls);
    double cpu = 0, user = 0, sys = 0, server = -1;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        mcp::client_options co;
        std::shared_ptr<mcp::client> c = co_await mcp::connect_stdio(ex, std::move(*so), co);
        const boost::json::object args{{"message", "ping"}};
        for (int i = 0; i < call_warmup; ++i) {
            mcp::call_result res = co_await c->call_tool("echo", args);
            if (res.is_error || res.content.empty() || res.content[0].at("text") != "Echo: ping")
                throw std::runtime_error("echo did not answer 'Echo: ping'");
        }
        rusage ru0{};
        ::getrusage(RUSAGE_SELF, &ru0);
        const double server0 = children_cpu_seconds();
        const double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < calls; ++i) {
            const auto t0 = clock_type::now();
            mcp::call_result res = co_await c->call_tool("echo", args);
            us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            libretto_bench::do_not_optimize(res);
        }
        cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        const double server1 = children_cpu_seconds();
        rusage ru1{};
        ::getrusage(RUSAGE_SELF, &ru1);
        user = seconds_of(ru1.ru_utime) - seconds_of(ru0.ru_utime);
        sys = seconds_of(ru1.ru_stime) - seconds_of(ru0.ru_stime);
        if (server0 >= 0 && server1 >= 0) server = server1 - server0;
        co_await c->close();
    });
    const spread s = spread_of(us);
    const double per_call = cpu / calls * 1e6;
    std::fprintf(stderr, "mcp_call_stdio_us: min %.1f median %.1f p90 %.1f max %.1f us over %d calls\n", s.min, s.median,
                 s.p90, s.max, calls);
    std::fprintf(stderr, "mcp_call_stdio_client_us: %.2f us of our CPU per call (user %.2f, system %.2f)", per_call,
                 user / calls * 1e6, sys / calls * 1e6);
    if (server >= 0) std::fprintf(stderr, "; the server (node): %.1f us of CPU per call", server / calls * 1e6);
    std::fprintf(stderr, "\n");
    r.report("mcp_call_stdio_us", s.median, "us");
    r.report("mcp_call_stdio_client_us", per_call, "us");
}

void bench_mcp_list_tools(libretto_bench::reporter& r) {
    auto so = everything("mcp_list_tools_us");
    if (!so) return;
    std::vector<double> us;
    us.reserve(lists);
    std::size_t tools = 0, bytes = 0;
    double cpu = 0;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        mcp::client_options co;
        std::shared_ptr<mcp::client> c = co_await mcp::connect_stdio(ex, std::move(*so), co);
        for (int i = 0; i < list_warmup; ++i) {
            boost::json::object res = co_await c->request("tools/list", {});
            const auto* t = res.if_contains("tools");
            if (!t || !t->is_array()) throw std::runtime_error("tools/list: no tools");
            tools = t->get_array().size();
            bytes = boost::json::serialize(res).size();
        }
        const double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < lists; ++i) {
            const auto t0 = clock_type::now();
            boost::json::object res = co_await c->request("tools/list", {});
            us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            libretto_bench::do_not_optimize(res);
        }
        cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        co_await c->close();
    });
    const spread s = spread_of(us);
    std::fprintf(stderr, "mcp_list_tools_us: min %.1f median %.1f p90 %.1f max %.1f us over %d lists of %zu tools "
                 "(%zu bytes of result); %.2f us of our CPU per list\n",
                 s.min, s.median, s.p90, s.max, lists, tools, bytes, cpu / lists * 1e6);
    r.report("mcp_list_tools_us", s.median, "us");
}

// The same echo over Streamable HTTP: server-everything started with `streamableHttp` on a
// free loopback port (ready when its stderr says "listening on port"), one session, each call
// a POST answered with an SSE stream. 1,000 timed after 200 untimed, median.
void bench_mcp_call_http(libretto_bench::reporter& r) {
    auto so = everything("mcp_call_http_us");
    if (!so) return;
    const int port = [] {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        ::close(fd);
        return static_cast<int>(ntohs(a.sin_port));
    }();
    constexpr int http_calls = 1'000;
    std::vector<double> us;
    double cpu = 0;
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        mcp::detail::child_process server(ex);
        mcp::detail::spawn_spec spec{so->command, {so->args.at(0), "streamableHttp"}, {{"PORT", std::to_string(port)}}, true, {}};
        std::string what;
        if (auto ec = server.start(spec, what)) throw std::runtime_error(what);
        std::string err;
        while (err.find("listening on port") == std::string::npos) {
            auto [ec, n] = co_await asio::async_read_until(server.stderr_pipe(), asio::dynamic_buffer(err), '\n',
                                                           asio::as_tuple(asio::use_awaitable));
            if (ec) throw std::runtime_error("server-everything (streamableHttp) did not start: " + err);
        }
        mcp::http_options ho("http://127.0.0.1:" + std::to_string(port) + "/mcp");
        mcp::client_options co;
        std::shared_ptr<mcp::client> c = co_await mcp::connect_http(ex, std::move(ho), co);
        const boost::json::object args{{"message", "ping"}};
        for (int i = 0; i < call_warmup; ++i) {
            mcp::call_result res = co_await c->call_tool("echo", args);
            if (res.is_error || res.content.empty() || res.content[0].at("text") != "Echo: ping")
                throw std::runtime_error("echo did not answer 'Echo: ping'");
        }
        const double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < http_calls; ++i) {
            const auto t0 = clock_type::now();
            mcp::call_result res = co_await c->call_tool("echo", args);
            us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            libretto_bench::do_not_optimize(res);
        }
        cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        co_await c->close();
        server.signal(SIGTERM);
    });
    const spread s = spread_of(us);
    std::fprintf(stderr, "mcp_call_http_us: min %.1f median %.1f p90 %.1f max %.1f us over %d calls\n", s.min, s.median,
                 s.p90, s.max, http_calls);
    r.report("mcp_call_http_us", s.median, "us");
    r.report("mcp_call_http_client_us", cpu / http_calls * 1e6, "us");
}

LIBRETTO_BENCHMARK(bench_mcp_call_stdio, "mcp_call_stdio_us", "mcp_call_stdio_client_us");
LIBRETTO_BENCHMARK(bench_mcp_call_http, "mcp_call_http_us", "mcp_call_http_client_us");
LIBRETTO_BENCHMARK(bench_mcp_list_tools, "mcp_list_tools_us");

} // namespace
} // namespace mcp_bench
