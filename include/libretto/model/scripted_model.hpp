// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_SCRIPTED_MODEL_HPP
#define LIBRETTO_MODEL_SCRIPTED_MODEL_HPP

// scripted_model: a model that plays back canned replies, for tests and examples. It
// records every request it is sent. Copies share the script and the record, so a test
// keeps one copy and hands another to the agent.
//
//   lb::scripted_model model{ex, {
//       lb::scripted_reply::tool_call("get_weather", {{"city", "Oslo"}}),
//       lb::scripted_reply::text("It is 21 °C in Oslo.").in_chunks(3),
//   }};
//   ... run the agent ...
//   BOOST_TEST(model.requests().size() == 2);
//   BOOST_TEST(model.last_request().messages.back().role == lb::message_role::tool);

#include <libretto/detail/config.hpp>
#include <libretto/error.hpp>
#include <libretto/model/model.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace libretto {

class scripted_model;

/// One canned reply. Build it with a factory and refine it with the chainable setters:
///
///   scripted_reply::text("Hello").with_thinking("greet them").in_chunks(2).with_usage(12, 3)
///   scripted_reply::tool_call("search", {{"q", "Oslo"}}).with_text("Let me look.")
///   scripted_reply::context_overflow()
///   scripted_reply::computed([](const llm_request& r) { return scripted_reply::text(...); })
class scripted_reply {
public:
    // ---- factories -------------------------------------------------------------------

    /// A text answer.
    static scripted_reply text(std::string t) {
        scripted_reply r;
        r.text_ = std::move(t);
        return r;
    }
    /// A request to run one tool (more with with_tool_call).
    static scripted_reply tool_call(std::string name, json::object args = {}, std::string id = {}) {
        scripted_reply r;
        return std::move(r.with_tool_call(std::move(name), std::move(args), std::move(id)));
    }
    /// A tool call whose arguments are the given text as is (e.g. invalid JSON).
    static scripted_reply raw_tool_call(std::string name, std::string arguments, std::string id = {}) {
        scripted_reply r;
        r.calls_.push_back(call{std::move(id), std::move(name), std::move(arguments)});
        return r;
    }
    /// Only thinking, no answer.
    static scripted_reply thinking(std::string t) {
        scripted_reply r;
        r.thinking_ = std::move(t);
        return r;
    }
    /// A failed generation with this code.
    static scripted_reply error(boost::system::error_code ec, std::string message = {},
                                std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
        scripted_reply r;
        r.error_ = ec;
        r.error_message_ = message.empty() ? ec.message() : std::move(message);
        r.retry_after_ = retry_after;
        return r;
    }
    static scripted_reply context_overflow(std::string message = "prompt is too long for the context window") {
        return error(make_error_code(errc::context_overflow), std::move(message));
    }
    static scripted_reply transient(std::string message = "rate limited (429)",
                                    std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
        return error(make_error_code(errc::transient), std::move(message), retry_after);
    }
    static scripted_reply bad_response(std::string message = "the reply is not valid JSON") {
        return error(make_error_code(errc::bad_response), std::move(message));
    }
    static scripted_reply auth_failed(std::string message = "invalid API key (401)") {
        return error(make_error_code(errc::auth_failed), std::move(message));
    }
    /// The most computed replies one request goes through (a computed reply may return
    /// another): the stream of a longer chain fails with errc::model_error.
    static constexpr std::size_t max_computed_depth = 16;

    /// A reply computed from the request when it arrives (after it has been recorded).
    static scripted_reply computed(std::function<scripted_reply(const llm_request&)> f) {
        scripted_reply r;
        r.compute_ = std::move(f);
        return r;
    }

    // ---- setters ---------------------------------------------------------------------

    scripted_reply& with_text(std::string t) {
        text_ = std::move(t);
        return *this;
    }
    scripted_reply& with_thinking(std::string t) {
        thinking_ = std::move(t);
        return *this;
    }
    scripted_reply& with_tool_call(std::string name, json::object args = {}, std::string id = {}) {
        calls_.push_back(call{std::move(id), std::move(name), json::serialize(args)});
        return *this;
    }
    /// Streams the text, the thinking and each call's arguments in `n` pieces each
    /// (split on UTF-8 character boundaries; fewer when the text is shorter). Default 1.
    scripted_reply& in_chunks(std::size_t n) {
        chunks_ = std::max<std::size_t>(n, 1);
        return *this;
    }
    scripted_reply& with_usage(std::int64_t input_tokens, std::int64_t output_tokens) {
        usage_ = libretto::usage{input_tokens, output_tokens, {}};
        return *this;
    }
    scripted_reply& with_finish(finish_reason f) {
        finish_ = f;
        return *this;
    }
    scripted_reply& with_model_version(std::string v) {
        model_version_ = std::move(v);
        return *this;
    }

private:
    friend class scripted_model;

    struct call {
        std::string id{};        ///< empty: "call_<n>", the model's n-th generated id (from 1)
        std::string name{};
        std::string arguments{}; ///< the raw JSON text, streamed in fragments
    };

    std::string text_{};
    std::string thinking_{};
    std::vector<call> calls_{};
    std::size_t chunks_ = 1;
    std::optional<libretto::usage> usage_{};
    std::optional<finish_reason> finish_{};
    std::string model_version_{};
    boost::system::error_code error_{};
    std::string error_message_{};
    std::optional<std::chrono::milliseconds> retry_after_{};
    std::function<scripted_reply(const llm_request&)> compute_{};
};

namespace detail {

/// `s` in at most `n` pieces of about equal size, cut on UTF-8 character boundaries.
inline std::vector<std::string> split_utf8(const std::string& s, std::size_t n) {
    std::vector<std::string> out;
    if (s.empty()) return out;
    n = std::max<std::size_t>(n, 1);
    const std::size_t step = std::max<std::size_t>((s.size() + n - 1) / n, 1);
    std::size_t pos = 0;
    while (pos < s.size()) {
        std::size_t end = std::min(pos + step, s.size());
        while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
        out.push_back(s.substr(pos, end - pos));
        pos = end;
    }
    return out;
}

/// `s` as the one piece of a reply in one chunk (none if empty, as split_utf8).
inline std::vector<std::string> whole(std::string&& s) {
    std::vector<std::string> out;
    if (!s.empty()) out.push_back(std::move(s));
    return out;
}

struct scripted_state {
    std::mutex mutex;
    std::vector<scripted_reply> script;
    std::size_t next = 0;
    std::size_t call_counter = 0;
    std::deque<llm_request> requests; ///< the newest `keep` requests
    std::size_t sent = 0;             ///< requests sent in all
    std::size_t keep = SIZE_MAX;

    /// Records `request` as number `sent`, dropping the oldest past `keep`.
    void record(llm_request request) {
        ++sent;
        if (keep == 0) return;
        if (requests.size() == keep) requests.pop_front();
        requests.push_back(std::move(request));
    }
    /// The 0-based index into `requests` of request number i (0-based), or npos.
    std::size_t slot_of(std::size_t i) const {
        const std::size_t first = sent - requests.size();
        return i >= first && i < sent ? i - first : std::string::npos;
    }
};

} // namespace detail

/// A model that plays back a script of canned replies, in order, one per generate().
/// Copies share the script, the position in it and the record of requests. Thread-safe.
///
/// Each reply is streamed as: thinking deltas, text deltas, tool-call fragments (index i,
/// id and name on the first fragment), a chunk with the model version, usage and finish
/// reason, then the final chunk built by llm_response_accumulator from those deltas. An
/// error reply is the final chunk alone, carrying the error. A generate() past the end of
/// the script still records the request, then its stream throws system_error
/// (errc::model_error): "scripted_model: script exhausted: request #3 but only 2 replies
/// were scripted".
class scripted_model {
public:
    using executor_type = boost::asio::any_io_executor;

    explicit scripted_model(executor_type ex, std::vector<scripted_reply> script = {},
                            std::string name = "scripted")
        : ex_(std::move(ex)), name_(std::make_shared<const std::string>(std::move(name))),
          state_(std::make_shared<detail::scripted_state>()) {
        state_->script = std::move(script);
    }

    // ---- the model concept -------------------------------------------------------------

    /// Records `request`, takes the next reply and streams it. Never throws itself.
    LIBRETTO_DECL llm_stream generate(llm_request request);

    std::string_view name() const noexcept { return *name_; }
    executor_type get_executor() const { return ex_; }

    // ---- the script --------------------------------------------------------------------

    /// Appends a reply to the script.
    scripted_model& then(scripted_reply r) {
        std::lock_guard lock(state_->mutex);
        state_->script.push_back(std::move(r));
        return *this;
    }
    /// How many replies were scripted in all.
    std::size_t scripted() const {
        std::lock_guard lock(state_->mutex);
        return state_->script.size();
    }
    /// How many scripted replies are not used yet.
    std::size_t remaining() const {
        std::lock_guard lock(state_->mutex);
        return state_->script.size() - std::min(state_->next, state_->script.size());
    }

    // ---- the record --------------------------------------------------------------------

    /// Keeps only the newest `n` requests from now on (0: none; the default keeps all):
    /// a model serving a long run (an example, a benchmark) then holds bounded memory.
    /// request_count() still counts every request sent.
    scripted_model& keep_requests(std::size_t n) {
        std::lock_guard lock(state_->mutex);
        state_->keep = n;
        while (state_->requests.size() > n) state_->requests.pop_front();
        return *this;
    }

    /// The requests kept (every request sent, unless keep_requests() bounds them), oldest
    /// first (a copy).
    std::vector<llm_request> requests() const {
        std::lock_guard lock(state_->mutex);
        return {state_->requests.begin(), state_->requests.end()};
    }
    /// How many requests were sent.
    std::size_t request_count() const {
        std::lock_guard lock(state_->mutex);
        return state_->sent;
    }
    /// The i-th request sent (0-based); throws system_error (errc::not_found) naming the
    /// count, or saying that it is no longer kept.
    llm_request request_at(std::size_t i) const {
        std::lock_guard lock(state_->mutex);
        const std::size_t slot = state_->slot_of(i);
        if (slot != std::string::npos) return state_->requests[slot];
        if (i < state_->sent)
            throw boost::system::system_error(make_error_code(errc::not_found),
                                              "scripted_model: request #" + std::to_string(i + 1) +
                                                  " is no longer kept (keep_requests(" +
                                                  std::to_string(state_->keep) + "))");
        throw boost::system::system_error(make_error_code(errc::not_found),
                                          "scripted_model: request #" + std::to_string(i + 1) + " asked for, " +
                                              std::to_string(state_->sent) + " were sent");
    }
    /// The newest request; throws system_error (errc::not_found) if none was sent, or if
    /// keep_requests(0) keeps none.
    llm_request last_request() const {
        std::lock_guard lock(state_->mutex);
        if (state_->sent == 0)
            throw boost::system::system_error(make_error_code(errc::not_found),
                                              "scripted_model: no request was sent yet");
        if (state_->requests.empty())
            throw boost::system::system_error(make_error_code(errc::not_found),
                                              "scripted_model: " + std::to_string(state_->sent) +
                                                  " requests were sent, none is kept (keep_requests(0))");
        return state_->requests.back();
    }

private:
    /// The chunks of one reply, ending with the final one.
    LIBRETTO_DECL static std::vector<llm_chunk> chunks_of(scripted_reply& r, std::string_view default_version,
                                                        std::size_t& call_counter);

    executor_type ex_;
    std::shared_ptr<const std::string> name_;
    std::shared_ptr<detail::scripted_state> state_;
};

static_assert(model<scripted_model>);

} // namespace libretto

#ifdef LIBRETTO_HEADER_ONLY
#include <libretto/model/impl/scripted_model.ipp>
#endif

#endif
