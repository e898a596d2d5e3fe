// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_REPLY_SNIFFER_HPP
#define LIBRETTO_PROVIDER_DETAIL_REPLY_SNIFFER_HPP

// Which form a provider's 2xx reply has, read from its first bytes (sans-io): a stream of
// SSE events or one JSON body. Servers ignore `stream` (or the user turned it off), and some
// label either form with the other's content-type, so the bytes decide, not the header:
//
//   - after an optional UTF-8 BOM and white space, '{' or '[' starts a whole JSON body;
//   - a line that starts with ':' (an SSE comment) or with an SSE field name and a colon
//     (data, event, id, retry, and llama.cpp's error) starts a stream;
//   - anything else (an HTML page from a proxy, plain text, an empty body) is neither: the
//     caller reports errc::bad_response with problem(), never a transient failure.

#include <libretto/model/llm_response.hpp>
#include <libretto/provider/detail/text.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail {

class reply_sniffer {
public:
    /// The bytes held before the form is known (a body whose first 512 are undecided is neither).
    static constexpr std::size_t max_head = 512;

    /// reply_kind::unknown until enough bytes arrived, then streamed or whole.
    reply_kind form() const noexcept { return form_; }
    /// True when the bytes are neither form (or the body is empty): see problem().
    bool failed() const noexcept { return failed_; }

    /// Adds the next bytes of the body; `end`: the body is complete.
    void add(std::string_view bytes, bool end) {
        if (form_ != reply_kind::unknown || failed_) return;
        head_.append(bytes);
        decide(end);
    }

    /// More of a body that is neither form, for problem() to show (up to its 200 bytes).
    void keep(std::string_view bytes) {
        if (head_.size() < max_head) head_.append(bytes.substr(0, max_head - head_.size()));
    }
    /// True when problem() would show no more of the body given more bytes.
    bool enough_kept() const noexcept { return head_.size() >= max_head; }

    /// The bytes held so far, which belong to the body (call once the form is known). A
    /// whole body loses its BOM, which JSON parsers refuse (the SSE parser skips it itself).
    std::string take() {
        if (form_ == reply_kind::whole && head_.compare(0, 3, "\xEF\xBB\xBF") == 0) head_.erase(0, 3);
        return std::move(head_);
    }

    /// What was wrong, for errc::bad_response.
    std::string problem(std::string_view content_type) const {
        std::string ct = content_type.empty() ? std::string("no content-type") : "content-type " + std::string(content_type);
        std::string_view rest = start();
        if (rest.empty()) return "the reply body is empty (" + ct + "): expected an SSE stream or a JSON body";
        return "the reply is neither an SSE stream nor a JSON body (" + ct + "): " + bounded_utf8(rest, 200);
    }

private:
    std::string_view start() const noexcept {
        std::string_view s = head_;
        if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
        while (!s.empty() && is_http_space(s.front())) s.remove_prefix(1);
        return s;
    }

    void decide(bool end) {
        const std::string_view s = start();
        if (s.empty()) {
            failed_ = end || head_.size() > max_head;
            return;
        }
        if (s.front() == '{' || s.front() == '[') {
            form_ = reply_kind::whole;
            return;
        }
        if (s.front() == ':') {
            form_ = reply_kind::streamed;
            return;
        }
        static constexpr std::array<std::string_view, 5> fields = {"data", "event", "id", "retry", "error"};
        const std::size_t stop = s.find_first_of(":\r\n");
        const std::string_view name = s.substr(0, stop);
        if (stop != std::string_view::npos) {
            // "data:" starts a stream; "data\n" (a field without a value) too, as SSE reads it.
            for (std::string_view f : fields)
                if (name == f) {
                    form_ = reply_kind::streamed;
                    return;
                }
            failed_ = true;
            return;
        }
        bool prefix = false; // "da" may yet become "data:"
        for (std::string_view f : fields) prefix = prefix || f.substr(0, name.size()) == name;
        failed_ = end || !prefix || head_.size() > max_head;
    }

    std::string head_;
    reply_kind form_ = reply_kind::unknown;
    bool failed_ = false;
};

} // namespace libretto::detail

#endif
