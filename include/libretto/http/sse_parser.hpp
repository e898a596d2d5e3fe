// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_SSE_PARSER_HPP
#define LIBRETTO_HTTP_SSE_PARSER_HPP

// A sans-io, incremental parser for text/event-stream (Server-Sent Events), following the
// WHATWG HTML "event stream interpretation" rules: lines end in CRLF, LF or CR (a CR at the
// end of one chunk and an LF at the start of the next are one line end); a leading UTF-8
// BOM is skipped; `event:`, `data:` (several lines joined with "\n"), `id:` and `retry:`
// fields; lines starting with ':' are comments; a field without a colon has an empty value;
// an empty line dispatches the event if it has data. Feed it any split of the bytes.
//
//   sse_parser p;
//   auto ec = p.feed(bytes, [&](const sse_event& e) { use(e.event, e.data); });
//
// The views in an sse_event are valid only during the callback. When an event lies inside
// one fed chunk and has one data line, `data` points into that chunk (no copy).

#include <libretto/error.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace libretto::http {

/// One dispatched event. `event` is "message" when the stream named none.
struct sse_event {
    std::string_view event; ///< the `event:` field, or "message"
    std::string_view data;  ///< the `data:` lines joined with "\n"
    std::string_view id;    ///< the last event id seen so far (it persists across events)

    /// True for OpenAI's end-of-stream sentinel, `data: [DONE]`.
    bool is_done() const noexcept { return data == "[DONE]"; }
};

struct sse_parser_options {
    /// Largest event (its pending line plus data so far, in bytes) the parser buffers; a
    /// larger one is errc::oversize. Bounds memory against a server that never ends a line.
    std::size_t max_event_size = 8 * 1024 * 1024;
    /// Reads an `error:` line as the data of an event named "error". Not SSE (the rules
    /// ignore unknown fields), but what llama.cpp's server wrote for an error in a stream
    /// before it moved to `data: {"error": ...}`; the provider models turn it on.
    bool error_field = false;
};

class sse_parser {
public:
    sse_parser() = default;
    explicit sse_parser(sse_parser_options options) : options_(options) {}

    /// Parses `bytes` and calls `on_event(const sse_event&)` for each event they complete.
    /// Returns errc::oversize (and fails every later call) when an event grows past
    /// max_event_size. An exception from `on_event` propagates; the parser is then unusable.
    template <class OnEvent>
        requires std::is_invocable_v<OnEvent&, const sse_event&>
    boost::system::error_code feed(std::string_view bytes, OnEvent&& on_event) {
        if (failed_) return make_error_code(errc::oversize);
        if (bom_pending_ && !strip_bom(bytes)) return {};
        const char* p = bytes.data();
        const char* const end = p + bytes.size();
        if (skip_lf_ && p != end) {
            skip_lf_ = false;
            if (*p == '\n') ++p;
        }
        // The next LF at or after p (`end`: none), kept while the lines before it end in CR:
        // searching again for every line rescanned the rest of the chunk, quadratic in a
        // CR-only stream.
        const char* lf = nullptr;
        while (p != end) {
            // The line ends at the first CR or LF; search for LF (the common end) first,
            // then for a CR before it.
            const std::size_t left = static_cast<std::size_t>(end - p);
            if (!lf || lf < p) {
                lf = static_cast<const char*>(std::memchr(p, '\n', left));
                if (!lf) lf = end;
            }
            const char* cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(lf - p)));
            const char* const eol = cr ? cr : lf;
            if (eol == end) {
                // An incomplete line: keep it for the next chunk.
                if (!append_partial(std::string_view(p, left))) return fail();
                break;
            }
            std::string_view line(p, static_cast<std::size_t>(eol - p));
            if (!line_.empty()) {
                if (!append_partial(line)) return fail();
                line = line_;
            }
            p = eol + 1;
            if (*eol == '\r') {
                if (p == end) skip_lf_ = true;
                else if (*p == '\n') ++p;
            }
            if (!process_line(line, on_event)) return fail();
            line_.clear();
        }
        // Anything still pointing into `bytes` must be copied before the caller's buffer goes.
        if (data_view_.data() != nullptr) {
            data_.assign(data_view_);
            data_view_ = {};
        }
        return {};
    }

    /// True when no event is half-received: no partial line, no undispatched field. At the
    /// end of a stream, false means it was cut inside an event (which the rules discard).
    bool idle() const noexcept {
        return line_.empty() && !has_data_ && !has_event_name_ && !bom_partial_;
    }

    /// The last `id:` seen ("" if none), for a reconnecting client's Last-Event-ID.
    std::string_view last_event_id() const noexcept { return id_; }

    /// The last valid `retry:` value (digits only) in milliseconds, if any; a larger value than
    /// std::chrono::milliseconds::max() reads as that.
    std::optional<std::uint64_t> retry_ms() const noexcept { return retry_; }

    /// True after feed returned errc::oversize.
    bool failed() const noexcept { return failed_; }

    /// Forgets everything, as for a new stream (options kept).
    void reset() noexcept {
        line_.clear();
        data_.clear();
        data_view_ = {};
        event_.clear();
        id_.clear();
        retry_.reset();
        has_data_ = has_event_name_ = skip_lf_ = failed_ = false;
        bom_pending_ = true;
        bom_partial_ = 0;
    }

private:
    static constexpr char bom_[3] = {'\xEF', '\xBB', '\xBF'};

    // Consumes the BOM (or the part of it at the start of `bytes`). Returns false when all
    // of `bytes` was a BOM prefix. A broken BOM prefix is replayed as ordinary bytes.
    bool strip_bom(std::string_view& bytes) {
        while (!bytes.empty() && bom_partial_ < 3) {
            if (bytes.front() != bom_[bom_partial_]) {
                bom_pending_ = false;
                if (bom_partial_ > 0) {
                    // The bytes taken so far were not a BOM: they start a line (no CR/LF in them).
                    line_.assign(bom_, bom_partial_);
                    bom_partial_ = 0;
                }
                return true;
            }
            ++bom_partial_;
            bytes.remove_prefix(1);
        }
        if (bom_partial_ == 3) {
            bom_pending_ = false;
            bom_partial_ = 0;
            return true;
        }
        return false;
    }

    bool append_partial(std::string_view s) {
        if (line_.size() + s.size() + pending_data_size() > options_.max_event_size) return false;
        line_.append(s);
        return true;
    }

    std::size_t pending_data_size() const noexcept { return data_view_.size() + data_.size(); }

    boost::system::error_code fail() {
        failed_ = true;
        line_.clear();
        data_.clear();
        data_view_ = {};
        return make_error_code(errc::oversize);
    }

    // Returns false when the event would exceed the size limit.
    template <class OnEvent>
    bool process_line(std::string_view line, OnEvent& on_event) {
        if (line.empty()) {
            dispatch(on_event);
            return true;
        }
        if (line.front() == ':') return true; // a comment (keep-alive pings)
        std::string_view field = line, value;
        if (const auto colon = line.find(':'); colon != std::string_view::npos) {
            field = line.substr(0, colon);
            value = line.substr(colon + 1);
            if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        }
        const bool error_line = options_.error_field && field == "error";
        if (field == "data" || error_line) {
            if (pending_data_size() + value.size() + 1 > options_.max_event_size) return false;
            if (error_line) {
                event_.assign("error");
                has_event_name_ = true;
            }
            if (!has_data_ && !line_.empty()) {
                data_.assign(value); // the line itself lives in line_, which is reused
            } else if (!has_data_) {
                data_view_ = value; // points into the caller's chunk: no copy yet
            } else {
                if (data_view_.data() != nullptr) {
                    data_.assign(data_view_);
                    data_view_ = {};
                }
                data_.push_back('\n');
                data_.append(value);
            }
            has_data_ = true;
        } else if (field == "event") {
            event_.assign(value);
            has_event_name_ = true;
        } else if (field == "id") {
            if (value.find('\0') == std::string_view::npos) id_.assign(value);
        } else if (field == "retry") {
            // Digits only, any number of them (leading zeros too: 19 or more digits were once
            // ignored); saturated at milliseconds::max(), so milliseconds(*retry_ms()) holds it.
            if (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos) {
                constexpr auto most = static_cast<std::uint64_t>(std::chrono::milliseconds::max().count());
                std::uint64_t v = 0;
                for (char c : value) {
                    const auto digit = static_cast<std::uint64_t>(c - '0');
                    v = v > (most - digit) / 10 ? most : v * 10 + digit;
                }
                retry_ = v;
            }
        }
        // Other fields are ignored, as the rules say.
        return true;
    }

    template <class OnEvent>
    void dispatch(OnEvent& on_event) {
        if (!has_data_) {
            // No data: nothing is dispatched, and the event name is forgotten.
            event_.clear();
            has_event_name_ = false;
            return;
        }
        const std::string_view data = data_view_.data() != nullptr ? data_view_ : std::string_view(data_);
        const sse_event e{has_event_name_ && !event_.empty() ? std::string_view(event_) : std::string_view("message"),
                          data, id_};
        // Reset before the call, so a throwing callback leaves a clean parser state.
        has_data_ = false;
        has_event_name_ = false;
        data_view_ = {};
        on_event(e);
        data_.clear();
        event_.clear();
    }

    sse_parser_options options_{};
    std::string line_;           // a line split across chunks
    std::string data_;           // data lines, when they cannot be a view
    std::string_view data_view_; // the single data line, inside the current chunk
    std::string event_;
    std::string id_;
    std::optional<std::uint64_t> retry_;
    bool has_data_ = false;
    bool has_event_name_ = false;
    bool skip_lf_ = false; // the last chunk ended in CR: an LF next is part of that line end
    bool failed_ = false;
    bool bom_pending_ = true;
    unsigned char bom_partial_ = 0;
};

} // namespace libretto::http

#endif
