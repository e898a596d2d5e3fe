// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
//
// openai_model over beast_transport<> (plain http on loopback), and the runner on top of it,
// against a third-party OpenAI-compatible server: @dwmkerr/mock-llm 0.1.29 from npm, an
// express server that answers by rules (JMESPath matches on the request, "last match wins").
// Every byte the model decodes here is one that server produced; the rules are in
// `mock_config` below.
//
// What the mock does (its dist/server.js and dist/streaming.js): it answers `stream: true`
// with SSE that cuts `choices[0].message.content` into `streaming.chunkSize`-character
// deltas, the last with finish_reason "stop", then `data: [DONE]` (no usage chunk, and tool
// calls cannot be streamed: a rule without content makes it throw, HTTP 500); otherwise the
// rule's JSON as one body. An error rule (status >= 400) is a plain HTTP error without
// `stream`, and with `stream: true` a 200 SSE reply holding one `data: {"error": ...}`
// event and no [DONE].
//
// scripts/setup installs the package into $LIBRETTO_NPM_CACHE (default <repo>/.cache/npm).
// Without node, or without both npm and the package, every case is skipped, saying which is
// missing; any other problem (npm here but the package not installed, a server that does not
// start or does not answer) fails.
#include <libretto/agent/llm_agent.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/libretto.hpp>
#include <libretto/provider/openai_model.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
namespace lb = libretto;
namespace lh = libretto::http;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using transport = lh::beast_transport<>;

namespace {

// ---- the rules ------------------------------------------------------------------------------

// The mock's config (its YAML format: `streaming` and `rules`, each rule `path` (a regular
// expression), `method`, `match` (JMESPath over {body, headers, method, path, query}),
// `sequence`, `response: {status, content}`; `{{jmes request <query>}}` in `content` is
// replaced by the query's value, strings unquoted and unescaped). The last matching rule wins.
constexpr std::string_view mock_config = R"yaml(streaming:
  chunkSize: 8
  chunkIntervalMs: 5
rules:
  # Anything: a whole chat.completion with usage (streamed in 8-character deltas when the
  # request says stream: true). The model field echoes the request's.
  - path: "^/v1/chat/completions$"
    method: POST
    match: "@"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-mock-1", "object": "chat.completion", "created": 1767225600,
         "model": "{{jmes request body.model}}",
         "choices": [{"index": 0,
                      "message": {"role": "assistant", "content": "The quick brown fox jumps over the lazy dog."},
                      "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}}

  # The weather question: a tool call (only as a whole body: the mock cannot stream one).
  - path: "^/v1/chat/completions$"
    method: POST
    match: "body.messages[-1].role == 'user' && body.messages[-1].content == 'Weather in Oslo?'"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-mock-2", "object": "chat.completion", "created": 1767225601, "model": "{{jmes request body.model}}",
         "choices": [{"index": 0,
                      "message": {"role": "assistant", "content": null,
                                  "tool_calls": [{"id": "call_mock_1", "type": "function",
                                                  "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                      "finish_reason": "tool_calls"}],
         "usage": {"prompt_tokens": 40, "completion_tokens": 11, "total_tokens": 51}}

  # The tool's result, sent back after the assistant's call with the matching id: an answer
  # that quotes the call id and the result the request carried.
  - path: "^/v1/chat/completions$"
    method: POST
    match: "body.messages[-1].role == 'tool' && body.messages[-1].tool_call_id == 'call_mock_1' && body.messages[-2].role == 'assistant' && body.messages[-2].tool_calls[0].id == 'call_mock_1' && body.messages[-2].tool_calls[0].function.name == 'get_weather'"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-mock-3", "object": "chat.completion", "created": 1767225602, "model": "{{jmes request body.model}}",
         "choices": [{"index": 0,
                      "message": {"role": "assistant",
                                  "content": "Tool {{jmes request body.messages[-1].tool_call_id}} says: {{jmes request body.messages[-1].content}}"},
                      "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 60, "completion_tokens": 8, "total_tokens": 68}}

  # What the request asked for: its accept header and its body's stream member.
  - path: "^/v1/chat/completions$"
    method: POST
    match: "body.messages[-1].content == 'What did I ask for?'"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-mock-5", "object": "chat.completion", "created": 1767225604, "model": "{{jmes request body.model}}",
         "choices": [{"index": 0,
                      "message": {"role": "assistant", "content": "accept: {{jmes request headers.accept}}, stream: {{jmes request body.stream}}"},
                      "finish_reason": "stop"}]}

  # Errors, in OpenAI's body shape.
  - path: "^/v1/chat/completions$"
    method: POST
    match: "body.messages[-1].content == 'overflow'"
    response:
      status: 400
      content: |
        {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
                   "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
  - path: "^/v1/chat/completions$"
    method: POST
    match: "body.messages[-1].content == 'bad key'"
    response:
      status: 401
      content: |
        {"error": {"message": "Incorrect API key provided: sk-mock. You can find your API key at https://platform.openai.com/account/api-keys.",
                   "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}
  - path: "^/v1/chat/completions$"
    method: POST
    match: "body.messages[-1].content == 'rate limit'"
    response:
      status: 429
      content: |
        {"error": {"message": "Rate limit reached for gpt-mock in organization org-mock on requests per min (RPM): Limit 3, Used 3, Requested 1.",
                   "type": "requests", "param": null, "code": "rate_limit_exceeded"}}

  # A flaky server: 503, then 429, then the answer (sequence counts the requests to the path
  # that a rule with a sequence answered).
  - path: "^/v1/chat/completions$"
    method: POST
    sequence: 0
    match: "body.messages[-1].content == 'flaky'"
    response:
      status: 503
      content: |
        {"error": {"message": "The server is overloaded or not ready yet.", "type": "server_error", "param": null, "code": null}}
  - path: "^/v1/chat/completions$"
    method: POST
    sequence: 1
    match: "body.messages[-1].content == 'flaky'"
    response:
      status: 429
      content: |
        {"error": {"message": "Rate limit reached for gpt-mock.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}
  - path: "^/v1/chat/completions$"
    method: POST
    sequence: 2
    match: "body.messages[-1].content == 'flaky'"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-mock-4", "object": "chat.completion", "created": 1767225603, "model": "{{jmes request body.model}}",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "third time lucky"}, "finish_reason": "stop"}]}
)yaml";

constexpr std::string_view mock_package = "@dwmkerr/mock-llm";
constexpr std::string_view mock_version = "0.1.29";
constexpr std::string_view streamed_text = "The quick brown fox jumps over the lazy dog.";

// ---- finding node and the package -----------------------------------------------------------

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct mock_install {
    std::string node;    ///< the node executable
    std::string main_js; ///< the package's bin (dist/main.js)
    std::string missing; ///< why the tests are skipped (no node, no npm), or empty
    std::string broken;  ///< node and npm are here but the package is not: every case fails with this
};

/// The source tree: $LIBRETTO_SOURCE_DIR (ctest sets it), else two levels above this file.
fs::path source_dir() {
    if (auto s = env("LIBRETTO_SOURCE_DIR"); !s.empty()) return s;
    return fs::path(__FILE__).parent_path().parent_path();
}

/// The first of `names` that is an executable on PATH, or "".
std::string on_path(std::initializer_list<std::string_view> names) {
    const std::string path = env("PATH");
    for (std::string_view name : names) {
        std::size_t start = 0;
        while (start <= path.size()) {
            const std::size_t end = std::min(path.find(':', start), path.size());
            fs::path dir = path.substr(start, end - start);
            if (dir.empty()) dir = ".";
            const fs::path candidate = dir / name;
            if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate.string();
            start = end + 1;
        }
    }
    return {};
}

mock_install locate_mock() {
    mock_install m;
    m.node = on_path({"node", "nodejs"});
    std::vector<fs::path> caches;
    if (auto c = env("LIBRETTO_NPM_CACHE"); !c.empty()) caches.emplace_back(c);
    caches.push_back(source_dir() / ".cache" / "npm");
    std::string looked;
    for (const auto& cache : caches) {
        const fs::path pkg = cache / "node_modules" / fs::path(std::string(mock_package));
        looked += (looked.empty() ? "" : ", ") + pkg.string();
        const std::string manifest = read_file(pkg / "package.json");
        if (manifest.empty() || !fs::exists(pkg / "dist" / "main.js")) continue;
        // The tests assert this version's bytes: another version counts as missing.
        try {
            const json::value v = json::parse(manifest);
            if (v.at("version").as_string() != mock_version) {
                looked += " (version " + std::string(v.at("version").as_string()) + ")";
                continue;
            }
        } catch (const std::exception&) {
            continue;
        }
        m.main_js = (pkg / "dist" / "main.js").string();
        break;
    }
    // Skipped only where npm cannot install the package; with npm here, a missing package
    // is a setup that did not run or failed, which the cases report as failures.
    const std::string not_installed = std::string(mock_package) + "@" + std::string(mock_version) +
                                      " is not installed (looked in " + looked + "); scripts/setup installs it with npm";
    if (m.node.empty())
        m.missing = "node is not on PATH";
    else if (m.main_js.empty() && on_path({"npm"}).empty())
        m.missing = "npm is not on PATH, and " + not_installed;
    else if (m.main_js.empty())
        m.broken = not_installed;
    return m;
}

const mock_install& installed_mock() {
    static const mock_install m = locate_mock();
    return m;
}

/// The suite's precondition: every case is skipped, with the reason, when node is missing,
/// or npm and the package are. Boost.Test logs skips only at --log_level=test_suite, so the reason
/// also goes to stderr, once.
boost::test_tools::assertion_result mock_llm_available(utf::test_unit_id) {
    const mock_install& m = installed_mock();
    if (m.missing.empty()) return true;
    static bool said = false;
    if (!said) {
        std::cerr << "provider_mock_llm: SKIPPED, every case: " << m.missing << "\n";
        said = true;
    }
    boost::test_tools::assertion_result r(false);
    r.message() << "the mock-LLM server cannot run: " << m.missing;
    return r;
}

// ---- the server process ---------------------------------------------------------------------

/// A loopback port nothing listens on right now (the kernel's pick for port 0).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error(std::string("bind to 127.0.0.1:0: ") + std::strerror(e));
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

/// One blocking HTTP/1.0 GET on loopback; the whole reply, or empty when nothing answers.
std::string http_get(int port, std::string_view target) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return {};
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        const std::string req = "GET " + std::string(target) + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
            char buf[1024];
            for (;;) {
                const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
                if (n <= 0) break;
                reply.append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    ::close(fd);
    return reply;
}

/// The last `lines` lines of `text`.
std::string tail(const std::string& text, std::size_t lines = 30) {
    std::size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') --pos;
    for (std::size_t i = 0; i < lines && pos != std::string::npos && pos > 0; ++i) pos = text.rfind('\n', pos - 1);
    return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

/// The mock server as a child process (node dist/main.js --config <file>, HOST and PORT
/// from the environment), stdout and stderr into a log file. Started by the constructor,
/// which returns once /health answers (or throws with the log's tail); stopped (SIGTERM,
/// then SIGKILL) by stop() and the destructor. PR_SET_PDEATHSIG kills it should this
/// process die without unwinding.
class mock_server {
public:
    mock_server(const mock_install& m, const fs::path& dir, const std::string& name, std::string_view config)
        : config_(dir / (name + ".yaml")), log_(dir / (name + ".log")) {
        // A server that did not start once will not start for the next case either: fail
        // those at once instead of waiting out the time limit in each.
        if (!m.broken.empty()) throw std::runtime_error("cannot start the server: " + m.broken);
        static std::string earlier_failure;
        if (!earlier_failure.empty())
            throw std::runtime_error("not started: it failed to start for an earlier case: " + earlier_failure);
        try {
            start(m, config);
        } catch (const std::exception& e) {
            earlier_failure = e.what();
            throw;
        }
    }
    mock_server(const mock_server&) = delete;
    mock_server& operator=(const mock_server&) = delete;
    ~mock_server() { stop(); }

    int port() const noexcept { return port_; }
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
    std::string log() const { return read_file(log_); }

    /// The chat-completion requests the server has received (it logs "POST <path>" for each
    /// before answering, synchronously, so a reply already read has its line).
    std::size_t completions_received() const {
        const std::string text = log();
        const std::string_view needle = "POST /v1/chat/completions\n";
        std::size_t n = 0;
        for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
        return n;
    }

    /// SIGTERM, up to 5 s for the exit, then SIGKILL. Idempotent.
    void stop() noexcept {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        pid_t r = 0;
        while ((r = ::waitpid(pid_, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(10ms);
        if (r == 0) {
            ::kill(pid_, SIGKILL);
            while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
            }
        }
        pid_ = -1;
    }

private:
    void start(const mock_install& m, std::string_view config) {
        fs::create_directories(config_.parent_path());
        std::ofstream(config_, std::ios::binary | std::ios::trunc) << config;
        std::ofstream(log_, std::ios::trunc).flush();
        // A port another process takes between our probe and the server's listen() makes it
        // exit with EADDRINUSE: pick another.
        for (int attempt = 1;; ++attempt) {
            port_ = free_port();
            launch(m);
            const std::string why = wait_ready(15s);
            if (why.empty()) return;
            stop();
            const std::string log = read_file(log_);
            if (attempt < 3 && log.find("EADDRINUSE") != std::string::npos) continue;
            throw std::runtime_error("mock-llm (" + m.main_js + ") " + why + "; the end of " + log_.string() +
                                     ":\n" + tail(log));
        }
    }

    void launch(const mock_install& m) {
        // Everything the child needs is built before fork(): after it, only async-signal-safe
        // calls until execve.
        std::vector<std::string> args{m.node, m.main_js, "--config", config_.string()};
        std::vector<std::string> envs;
        for (char** e = environ; *e; ++e) {
            const std::string_view kv(*e);
            if (kv.starts_with("HOST=") || kv.starts_with("PORT=")) continue;
            envs.emplace_back(kv);
        }
        envs.push_back("HOST=127.0.0.1");
        envs.push_back("PORT=" + std::to_string(port_));
        std::vector<char*> argv, envp;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        for (auto& e : envs) envp.push_back(e.data());
        envp.push_back(nullptr);

        const int out = ::open(log_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (out < 0) throw std::runtime_error("open " + log_.string() + ": " + std::strerror(errno));
        const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            const int e = errno;
            ::close(out);
            if (in >= 0) ::close(in);
            throw std::runtime_error(std::string("fork: ") + std::strerror(e));
        }
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(126); // the parent died before prctl
            if (in >= 0) ::dup2(in, 0);
            ::dup2(out, 1);
            ::dup2(out, 2);
            ::execve(argv[0], argv.data(), envp.data());
            constexpr char msg[] = "provider_mock_llm_test: execve of node failed\n";
            [[maybe_unused]] auto w = ::write(2, msg, sizeof msg - 1);
            ::_exit(127);
        }
        ::close(out);
        if (in >= 0) ::close(in);
        pid_ = pid;
    }

    /// Empty once /health answers; else what went wrong.
    std::string wait_ready(std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status)) +
                                               " before accepting connections"
                                         : "died of signal " + std::to_string(WTERMSIG(status)) +
                                               " before accepting connections";
            }
            if (http_get(port_, "/health").find("\"healthy\"") != std::string::npos) return {};
            std::this_thread::sleep_for(25ms);
        }
        return "did not answer GET /health on 127.0.0.1:" + std::to_string(port_) + " within " +
               std::to_string(limit.count()) + " s";
    }

    fs::path config_;
    fs::path log_;
    int port_ = 0;
    pid_t pid_ = -1;
};

fs::path scratch_dir() {
    if (auto s = env("LIBRETTO_SCRATCH_DIR"); !s.empty()) return s;
    return fs::current_path();
}

// ---- driving the model ----------------------------------------------------------------------

struct outcome {
    std::vector<lb::llm_chunk> deltas; ///< every chunk before the final one
    lb::llm_response final;
    int finals = 0;

    std::vector<std::string> texts() const {
        std::vector<std::string> t;
        for (const auto& c : deltas)
            if (!c.text.empty()) t.push_back(c.text);
        return t;
    }
};

lb::llm_request ask(std::string text) {
    lb::llm_request r;
    r.messages.push_back(lb::message::user(std::move(text)));
    return r;
}

/// Retries without waiting: the attempts are counted, not timed.
lb::provider_http_options quick_retries(std::size_t attempts) {
    lb::provider_http_options o;
    o.retry.max_attempts = attempts;
    o.retry.initial_delay = 0ms;
    o.retry.max_delay = 0ms;
    return o;
}

/// One server per case (its sequence counters and its log are the case's own), an
/// io_context and a transport.
struct mock_fixture {
    mock_server srv{installed_mock(), scratch_dir(), "mock-llm-" + utf::framework::current_test_case().p_name.get(),
                    mock_config};
    asio::io_context io;
    transport http{io.get_executor()};

    lb::openai_options options(bool stream = true) const {
        lb::openai_options o{.base_url = srv.base_url(), .api_key = "sk-mock", .model = "gpt-mock"};
        o.stream = stream;
        return o;
    }
    lb::openai_model<transport> model(lb::openai_options o, lb::provider_http_options h = quick_retries(1)) {
        return {http, std::move(o), h};
    }

    /// Runs one generation to its end on the io_context.
    outcome generate(lb::openai_model<transport> m, lb::llm_request request) {
        outcome out;
        std::exception_ptr failure;
        bool finished = false;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                lb::llm_stream s = m.generate(std::move(request));
                for (;;) {
                    std::optional<lb::llm_chunk> c = co_await s.next();
                    if (!c) break;
                    if (c->final) {
                        out.final = std::move(*c->final);
                        ++out.finals;
                    } else {
                        out.deltas.push_back(std::move(*c));
                    }
                }
            },
            [&](std::exception_ptr ep) {
                failure = ep;
                finished = true;
            });
        io.restart();
        io.run();
        BOOST_REQUIRE(finished);
        if (failure) std::rethrow_exception(failure);
        BOOST_TEST(out.finals == 1);
        return out;
    }
};

// ---- the tool -------------------------------------------------------------------------------

struct weather_args {
    std::string city;
};
BOOST_DESCRIBE_STRUCT(weather_args, (), (city))

} // namespace

BOOST_AUTO_TEST_SUITE(provider_mock_llm, *utf::precondition(mock_llm_available))

// (a) The default options stream: the mock's SSE, one delta per 8-character event.
BOOST_FIXTURE_TEST_CASE(streamed_answer_arrives_in_the_servers_chunks, mock_fixture) {
    outcome o = generate(model(options()), ask("Say something."));
    const lb::llm_response& r = o.final;
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    BOOST_TEST((r.reply == lb::reply_kind::streamed));
    BOOST_TEST(r.text() == streamed_text);
    // chunkSize 8: six content events, each its own delta, in order.
    const std::vector<std::string> expected{"The quic", "k brown ", "fox jump", "s over t", "he lazy ", "dog."};
    BOOST_TEST(o.texts() == expected, boost::test_tools::per_element());
    BOOST_TEST(r.finish == lb::finish_reason::stop);
    BOOST_TEST(r.model_version == "gpt-mock"); // the mock echoes the request's model
    // The mock's stream carries no usage chunk (its rule's usage is not streamed), and the
    // model does not invent one.
    BOOST_TEST(!r.usage.has_value());
    BOOST_TEST(srv.completions_received() == 1u);
}

// (d) stream = false: one chat.completion body, usage included.
BOOST_FIXTURE_TEST_CASE(whole_reply_when_stream_is_off, mock_fixture) {
    outcome o = generate(model(options(false)), ask("Say something."));
    const lb::llm_response& r = o.final;
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    BOOST_TEST((r.reply == lb::reply_kind::whole));
    BOOST_TEST(r.text() == streamed_text);
    BOOST_TEST(r.finish == lb::finish_reason::stop);
    BOOST_TEST(r.model_version == "gpt-mock");
    BOOST_REQUIRE(r.usage.has_value());
    BOOST_TEST(r.usage->input_tokens == 12);
    BOOST_TEST(r.usage->output_tokens == 9);
    BOOST_TEST(srv.completions_received() == 1u);
}

// The mock streams exactly when the body says `stream: true`, whatever the accept header,
// and extra_body wins over the model's own `stream` member: so the model can ask for one
// form (its accept header, what it expects) while the server is told the other, as with a
// server that ignores `stream`. The answer says what the request carried.
BOOST_FIXTURE_TEST_CASE(asked_for_a_stream_and_got_a_whole_body, mock_fixture) {
    lb::openai_options opts = options(true);
    opts.extra_body = json::object{{"stream", false}};
    outcome o = generate(model(opts), ask("What did I ask for?"));
    const lb::llm_response& r = o.final;
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "accept: text/event-stream, stream: false");
    BOOST_TEST((r.reply == lb::reply_kind::whole));
    BOOST_TEST(r.finish == lb::finish_reason::stop);
    BOOST_TEST(r.model_version == "gpt-mock");
}

BOOST_FIXTURE_TEST_CASE(asked_for_a_whole_body_and_got_a_stream, mock_fixture) {
    lb::openai_options opts = options(false);
    opts.extra_body = json::object{{"stream", true}};
    outcome o = generate(model(opts), ask("What did I ask for?"));
    const lb::llm_response& r = o.final;
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    const std::string text = "accept: application/json, stream: true";
    BOOST_TEST(r.text() == text);
    BOOST_TEST((r.reply == lb::reply_kind::streamed));
    BOOST_TEST(o.texts().size() == (text.size() + 7) / 8); // the mock's 8-character deltas
    BOOST_TEST(r.finish == lb::finish_reason::stop);
}

// (b) A tool call round trip through the runner: the mock answers the question with a call
// to get_weather (as a whole body: it cannot stream tool calls), the tool runs with its
// arguments, and the mock's answer to the tool message quotes the call id and the result.
BOOST_FIXTURE_TEST_CASE(tool_call_round_trip_through_the_runner, mock_fixture) {
    std::vector<std::string> cities; // what the tool was called with
    auto get_weather = [&cities](weather_args a) -> json::value {
        cities.push_back(a.city);
        return json::string(a.city == "Oslo" ? "21 C and clear in Oslo" : "unknown city");
    };
    using model_t = lb::openai_model<transport>;
    lb::llm_agent agent{lb::llm_agent_options<model_t>{
        .name = "assistant",
        .instruction = "You answer weather questions.",
        .model = model(options(false)),
        .tools = lb::tools(lb::function_tool("get_weather", "Current weather in a city", get_weather)),
    }};
    lb::memory_store store{io.get_executor()};
    lb::runner runner{agent, store};
    lb::run_options ro;
    ro.app = "mock";
    ro.user = "u1";
    ro.session = "s1";
    lb::turn_result r = lb::run_to_end(runner, ro, "Weather in Oslo?");
    BOOST_TEST_REQUIRE(r.ok(), r.message() << "\nserver log:\n" << tail(srv.log()));

    BOOST_TEST(cities == std::vector<std::string>{"Oslo"}, boost::test_tools::per_element());
    BOOST_TEST(r.final_answer == "Tool call_mock_1 says: 21 C and clear in Oslo");
    BOOST_TEST(srv.completions_received() == 2u);

    // The turn's stored events: the call, the tool's response, the answer.
    BOOST_REQUIRE_EQUAL(r.events.size(), 3u);
    BOOST_REQUIRE(r.events[0].has_tool_calls());
    const auto& call = *r.events[0].tool_calls().begin();
    BOOST_TEST(call.tool_call_id == "call_mock_1");
    BOOST_TEST(call.tool_name == "get_weather");
    BOOST_TEST(json::serialize(call.args) == R"({"city":"Oslo"})");
    BOOST_REQUIRE(!r.events[1].tool_responses().empty());
    const auto& resp = *r.events[1].tool_responses().begin();
    BOOST_TEST(resp.tool_call_id == "call_mock_1");
    BOOST_TEST(resp.result.as_string() == "21 C and clear in Oslo");
    BOOST_TEST(r.events[2].is_final_response());
    BOOST_TEST(r.events[2].text() == "Tool call_mock_1 says: 21 C and clear in Oslo");

    // And the store holds the whole session: the user's message first.
    std::optional<lb::session> s;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto get = store.async_get(lb::session_key{"mock", "u1", "s1"}, lb::get_options{}, asio::use_awaitable);
            s = co_await std::move(get);
        },
        asio::detached);
    io.restart();
    io.run();
    BOOST_REQUIRE(s.has_value());
    BOOST_REQUIRE_EQUAL(s->events.size(), 4u);
    BOOST_TEST((s->events[0].type == lb::event_type::user_message));
    BOOST_TEST(s->events[0].text() == "Weather in Oslo?");
    BOOST_TEST(s->events[1].has_tool_calls());
    BOOST_TEST((s->events[2].type == lb::event_type::tool_response));
    BOOST_TEST(s->events[3].text() == "Tool call_mock_1 says: 21 C and clear in Oslo");
    for (std::size_t i = 0; i < s->events.size(); ++i) BOOST_TEST(s->events[i].sequence == std::int64_t(i + 1));
}

// (c) Errors. A 400 whose message is an overflow phrasing: context_overflow, not retried. With
// stream: true the mock sends the same error as a 200 SSE reply of one error event; it is
// classified the same way from the body alone.
BOOST_FIXTURE_TEST_CASE(context_overflow_as_http_400_and_as_a_streamed_error_event, mock_fixture) {
    const std::string_view message = "This model's maximum context length is 8192 tokens. However, your messages "
                                     "resulted in 9000 tokens. Please reduce the length of the messages.";
    {
        outcome o = generate(model(options(false), quick_retries(3)), ask("overflow"));
        const lb::llm_response& r = o.final;
        BOOST_TEST((r.error == lb::errc::context_overflow), r.error.message() << ": " << r.error_message);
        BOOST_TEST(r.finish == lb::finish_reason::error);
        BOOST_TEST(r.error_message.find(message) != std::string::npos, r.error_message);
        BOOST_TEST(r.error_message.find("400") != std::string::npos, r.error_message);
        BOOST_TEST(srv.completions_received() == 1u); // never retried
    }
    {
        outcome o = generate(model(options(true), quick_retries(3)), ask("overflow"));
        const lb::llm_response& r = o.final;
        BOOST_TEST((r.error == lb::errc::context_overflow), r.error.message() << ": " << r.error_message);
        BOOST_TEST(r.error_message.find(message) != std::string::npos, r.error_message);
        BOOST_TEST(o.texts().empty());
        BOOST_TEST(srv.completions_received() == 2u);
    }
}

// A 401: auth_failed, the server's message kept, not retried (both forms).
BOOST_FIXTURE_TEST_CASE(auth_failure_as_http_401_and_as_a_streamed_error_event, mock_fixture) {
    const std::string_view message = "Incorrect API key provided: sk-mock.";
    {
        outcome o = generate(model(options(false), quick_retries(3)), ask("bad key"));
        const lb::llm_response& r = o.final;
        BOOST_TEST((r.error == lb::errc::auth_failed), r.error.message() << ": " << r.error_message);
        BOOST_TEST(r.error_message.find(message) != std::string::npos, r.error_message);
        BOOST_TEST(r.error_message.find("401") != std::string::npos, r.error_message);
        BOOST_TEST(srv.completions_received() == 1u);
    }
    {
        outcome o = generate(model(options(true), quick_retries(3)), ask("bad key"));
        const lb::llm_response& r = o.final;
        BOOST_TEST((r.error == lb::errc::auth_failed), r.error.message() << ": " << r.error_message);
        BOOST_TEST(r.error_message.find(message) != std::string::npos, r.error_message);
        BOOST_TEST(srv.completions_received() == 2u);
    }
}

// A 429 that never ends: transient, retried until the attempts are used up (3 here), then
// the last failure with the server's message.
BOOST_FIXTURE_TEST_CASE(rate_limit_429_is_retried_then_reported, mock_fixture) {
    const std::string_view message = "Rate limit reached for gpt-mock in organization org-mock";
    outcome o = generate(model(options(false), quick_retries(3)), ask("rate limit"));
    const lb::llm_response& r = o.final;
    BOOST_TEST((r.error == lb::errc::transient), r.error.message() << ": " << r.error_message);
    BOOST_TEST(r.error_message.find(message) != std::string::npos, r.error_message);
    BOOST_TEST(r.error_message.find("429") != std::string::npos, r.error_message);
    BOOST_TEST(!r.retry_after.has_value()); // the mock sends no Retry-After
    BOOST_TEST(srv.completions_received() == 3u);
}

// The same as a streamed error event (a 200 reply): transient by its code, retried the same
// way, since nothing was delivered before it.
BOOST_FIXTURE_TEST_CASE(streamed_rate_limit_event_is_retried_then_reported, mock_fixture) {
    outcome o = generate(model(options(true), quick_retries(3)), ask("rate limit"));
    const lb::llm_response& r = o.final;
    BOOST_TEST((r.error == lb::errc::transient), r.error.message() << ": " << r.error_message);
    BOOST_TEST(r.error_message.find("Rate limit reached for gpt-mock") != std::string::npos, r.error_message);
    BOOST_TEST(o.texts().empty());
    BOOST_TEST(srv.completions_received() == 3u);
}

// 503, 429, then the answer: the third attempt succeeds, and the caller sees only it.
BOOST_FIXTURE_TEST_CASE(transient_failures_then_the_answer, mock_fixture) {
    outcome o = generate(model(options(false), quick_retries(4)), ask("flaky"));
    const lb::llm_response& r = o.final;
    BOOST_TEST_REQUIRE(r.ok(), r.error_message);
    BOOST_TEST(r.text() == "third time lucky");
    BOOST_TEST((r.reply == lb::reply_kind::whole));
    BOOST_TEST(srv.completions_received() == 3u);
}

// A path the mock has no rule for: express's 404, a model_error that is not retried.
BOOST_FIXTURE_TEST_CASE(unknown_path_is_a_model_error, mock_fixture) {
    lb::openai_options opts = options(false);
    opts.base_url = "http://127.0.0.1:" + std::to_string(srv.port()) + "/v2";
    outcome o = generate(model(opts, quick_retries(3)), ask("Say something."));
    const lb::llm_response& r = o.final;
    BOOST_TEST((r.error == lb::errc::model_error), r.error.message() << ": " << r.error_message);
    BOOST_TEST(r.error_message.find("404") != std::string::npos, r.error_message);
    BOOST_TEST((r.reply == lb::reply_kind::unknown));
    BOOST_TEST(srv.log().find("POST /v2/chat/completions\n") != std::string::npos);
    BOOST_TEST(srv.completions_received() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
