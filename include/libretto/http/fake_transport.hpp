// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_FAKE_TRANSPORT_HPP
#define LIBRETTO_HTTP_FAKE_TRANSPORT_HPP

// An in-memory http_transport for unit tests: it answers requests from a script, in order,
// delivers each body in the chunks given (one chunk, or what fits of it, per read), and
// records every request. No sockets, no threads; completions are posted to the executor.
//
//   fake_transport t{ex};
//   t.push(fake_response::chunked(200, sse_text, 7));   // the body in 7-byte reads
//   t.push({.status = 429, .headers = {{"retry-after", "2"}}, .chunks = {"{...}"}});
//   ... t.requests()[0].body ...

#include <libretto/async.hpp>
#include <libretto/error.hpp>
#include <libretto/http/detail/post_completion.hpp>
#include <libretto/http/transport.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto::http {

struct fake_response {
    unsigned status = 200;
    std::vector<http_header> headers;
    std::vector<std::string> chunks;             ///< the body, as successive reads return it
    boost::system::error_code error_after_body;  ///< reported by the read after the last chunk (a cut stream)
    boost::system::error_code request_error;     ///< fails async_request itself (a refused connection)

    /// `body` cut into reads of `chunk_size` bytes (the last may be shorter); 0 = one read.
    static fake_response chunked(unsigned status, std::string_view body, std::size_t chunk_size,
                                 std::vector<http_header> headers = {}) {
        fake_response r{.status = status, .headers = std::move(headers)};
        if (chunk_size == 0) chunk_size = body.size() ? body.size() : 1;
        for (std::size_t i = 0; i < body.size(); i += chunk_size) r.chunks.emplace_back(body.substr(i, chunk_size));
        return r;
    }

    /// A request that fails before any response (connection refused, timeout, ...).
    static fake_response failure(boost::system::error_code ec) {
        fake_response r;
        r.request_error = ec;
        return r;
    }
};

class fake_transport {
    using error_code = boost::system::error_code;

    struct shared_state {
        explicit shared_state(boost::asio::any_io_executor e) : ex(std::move(e)) {}
        boost::asio::any_io_executor ex;
        std::mutex mutex;
        std::deque<fake_response> script;
        std::vector<http_request> requests;
    };

public:
    class response {
    public:
        response() = default;

        unsigned status() const noexcept { return reply_.status; }

        std::string_view header(std::string_view name) const noexcept {
            for (const auto& h : reply_.headers)
                if (iequals(h.name, name)) return h.value;
            return {};
        }

        bool done() const noexcept { return done_; }

        template <boost::asio::completion_token_for<void(error_code, std::size_t)> CompletionToken =
                      default_completion_token_t>
        auto async_read_some(boost::asio::mutable_buffer buf, CompletionToken&& token = {}) {
            return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
                [this](auto handler, boost::asio::mutable_buffer b) {
                    std::size_t n = 0;
                    const error_code ec = read(b, n);
                    // A default-constructed response has no executor: the handler's own is used.
                    detail::post_completion(ex_, std::move(handler), ec, n);
                },
                token, buf);
        }

    private:
        friend class fake_transport;

        static bool iequals(std::string_view a, std::string_view b) noexcept {
            return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                       auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
                       return lower(x) == lower(y);
                   });
        }

        error_code read(boost::asio::mutable_buffer b, std::size_t& n) {
            n = 0;
            if (!ex_ || failed_) return boost::asio::error::not_connected;
            if (done_) return {};
            if (b.size() == 0) return make_error_code(errc::invalid_argument);
            while (chunk_ < reply_.chunks.size() && offset_ == reply_.chunks[chunk_].size()) {
                ++chunk_;
                offset_ = 0;
            }
            if (chunk_ == reply_.chunks.size()) {
                if (reply_.error_after_body) {
                    failed_ = true;
                    return reply_.error_after_body;
                }
                done_ = true;
                return {};
            }
            const std::string& c = reply_.chunks[chunk_];
            n = std::min(b.size(), c.size() - offset_);
            std::memcpy(b.data(), c.data() + offset_, n);
            offset_ += n;
            return {};
        }

        boost::asio::any_io_executor ex_;
        fake_response reply_;
        std::size_t chunk_ = 0;
        std::size_t offset_ = 0;
        bool done_ = false;
        bool failed_ = false;
    };

    using response_type = response;

    explicit fake_transport(boost::asio::any_io_executor ex) : state_(std::make_shared<shared_state>(std::move(ex))) {}

    boost::asio::any_io_executor get_executor() const noexcept { return state_->ex; }

    /// Appends a reply to the script (thread-safe).
    void push(fake_response r) {
        std::lock_guard lock(state_->mutex);
        state_->script.push_back(std::move(r));
    }

    /// Replies not used yet.
    std::size_t pending() const {
        std::lock_guard lock(state_->mutex);
        return state_->script.size();
    }

    /// Every request received so far, in order (a copy).
    std::vector<http_request> requests() const {
        std::lock_guard lock(state_->mutex);
        return state_->requests;
    }

    /// void(error_code, response). With the script empty: errc::not_found.
    template <boost::asio::completion_token_for<void(error_code, response)> CompletionToken =
                  default_completion_token_t>
    auto async_request(http_request request, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, response)>(
            [st = state_](auto handler, http_request req) {
                response res;
                res.ex_ = st->ex;
                error_code ec;
                {
                    std::lock_guard lock(st->mutex);
                    st->requests.push_back(std::move(req));
                    if (st->script.empty()) {
                        ec = make_error_code(errc::not_found); // the test scripted too few replies
                    } else {
                        res.reply_ = std::move(st->script.front());
                        st->script.pop_front();
                        ec = res.reply_.request_error;
                    }
                }
                if (ec) {
                    res = response{};
                    res.ex_ = st->ex;
                    res.failed_ = true;
                }
                detail::post_completion(st->ex, std::move(handler), ec, std::move(res));
            },
            token, std::move(request));
    }

private:
    std::shared_ptr<shared_state> state_;
};

static_assert(http_transport<fake_transport>);

} // namespace libretto::http

#endif
