// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MCP_DETAIL_STDIO_CONNECTION_HPP
#define LIBRETTO_MCP_DETAIL_STDIO_CONNECTION_HPP

// The stdio transport: a server process whose stdin and stdout carry one JSON-RPC message
// per line (MCP's stdio transport), its stderr read line by line into a log callback.

#include <libretto/detail/deadline.hpp>
#include <libretto/error.hpp>
#include <libretto/mcp/detail/child_process.hpp>
#include <libretto/mcp/detail/connection.hpp>
#include <libretto/mcp/types.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace libretto::mcp::detail {

class stdio_connection final : public connection, public std::enable_shared_from_this<stdio_connection> {
public:
    stdio_connection(boost::asio::any_io_executor ex, stdio_options o) : ex_(ex), o_(std::move(o)), child_(ex) {}

    boost::system::error_code start(std::string& what) override {
        if (o_.command.empty()) {
            what = "stdio_options.command is empty";
            return errc::invalid_argument;
        }
        spawn_spec s{o_.command, o_.args, o_.env, o_.inherit_environment, o_.working_directory};
        if (auto ec = child_.start(s, what)) return ec;
        boost::asio::co_spawn(ex_, read_stderr(shared_from_this()), boost::asio::detached);
        return {};
    }

    boost::asio::awaitable<std::optional<std::string>> read(std::size_t max_bytes) override {
        namespace asio = boost::asio;
        auto [ec, n] = co_await asio::async_read_until(child_.stdout_pipe(), asio::dynamic_buffer(in_, max_bytes + 1), '\n',
                                                       asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::not_found)
            throw boost::system::system_error(errc::oversize, "the server sent a message longer than " +
                                                                  std::to_string(max_bytes) + " bytes");
        if (ec) {
            // End of output: the server exited (or closed stdout). Say how, once it is reaped.
            for (int i = 0; i < 50 && !child_.try_reap(); ++i) {
                asio::steady_timer t(ex_, std::chrono::milliseconds(10));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
            ended_ = child_.exit_description();
            co_return std::nullopt;
        }
        std::string line = in_.substr(0, n - 1);
        in_.erase(0, n);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        co_return line;
    }

    void write(std::string message) override {
        if (closed_) return;
        message += '\n';
        out_.push_back(std::move(message));
        if (!writing_) {
            writing_ = true;
            boost::asio::co_spawn(ex_, write_all(shared_from_this()), boost::asio::detached);
        }
    }

    boost::asio::awaitable<void> close() override {
        namespace asio = boost::asio;
        if (closed_) co_return;
        // What was queued (a cancel, an answer to the server) goes out first.
        const auto flush_end = ::libretto::detail::deadline_after(o_.close_timeout);
        while (writing_ && std::chrono::steady_clock::now() < flush_end) {
            asio::steady_timer t(ex_, std::chrono::milliseconds(5));
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        closed_ = true;
        child_.close_stdin();
        auto wait_exit = [&](std::chrono::milliseconds limit) -> asio::awaitable<bool> {
            const auto end = ::libretto::detail::deadline_after(limit);
            while (!child_.try_reap()) {
                if (std::chrono::steady_clock::now() >= end) co_return false;
                asio::steady_timer t(ex_, std::chrono::milliseconds(10));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
            co_return true;
        };
        if (!co_await wait_exit(o_.close_timeout)) {
            child_.signal(SIGTERM);
            if (!co_await wait_exit(o_.close_timeout)) child_.kill_now();
        }
        ended_ = child_.exit_description();
    }

    std::string describe_end() const override {
        return ended_.empty() ? "the server closed its output" : "the server " + ended_;
    }

    void abort() noexcept override {
        closed_ = true;
        child_.kill_now();
    }

    pid_t pid() const noexcept { return child_.pid(); }

private:
    static boost::asio::awaitable<void> write_all(std::shared_ptr<stdio_connection> self) {
        namespace asio = boost::asio;
        while (!self->out_.empty() && !self->closed_) {
            auto [ec, n] = co_await asio::async_write(self->child_.stdin_pipe(), asio::buffer(self->out_.front()),
                                                      asio::as_tuple(asio::use_awaitable));
            self->out_.pop_front();
            if (ec) { // the server is gone: the read side says how
                self->out_.clear();
                break;
            }
        }
        self->writing_ = false;
    }

    static boost::asio::awaitable<void> read_stderr(std::shared_ptr<stdio_connection> self) {
        namespace asio = boost::asio;
        std::string buf;
        for (;;) {
            auto [ec, n] = co_await asio::async_read_until(self->child_.stderr_pipe(), asio::dynamic_buffer(buf, 1 << 20),
                                                           '\n', asio::as_tuple(asio::use_awaitable));
            if (ec == asio::error::not_found) { // a line longer than 1 MiB: pass it on in pieces
                if (self->o_.on_stderr) self->o_.on_stderr(buf);
                buf.clear();
                continue;
            }
            if (ec) {
                if (!buf.empty() && self->o_.on_stderr) self->o_.on_stderr(buf);
                co_return;
            }
            if (self->o_.on_stderr) self->o_.on_stderr(std::string_view(buf).substr(0, n - 1));
            buf.erase(0, n);
        }
    }

    boost::asio::any_io_executor ex_;
    stdio_options o_;
    child_process child_;
    std::string in_;
    std::deque<std::string> out_;
    bool writing_ = false;
    bool closed_ = false;
    std::string ended_;
};

} // namespace libretto::mcp::detail

#endif
