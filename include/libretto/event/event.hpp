// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_EVENT_HPP
#define LIBRETTO_EVENT_EVENT_HPP

#include <libretto/event/boxed_optional.hpp>
#include <libretto/event/event_actions.hpp>
#include <libretto/event/event_type.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/event/usage.hpp>

#include <boost/json/value.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/seed_seq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace libretto {

namespace detail {

/// Python truthiness of a JSON value: null, false, 0, "", [] and {} are false.
inline bool truthy(const json::value& v) noexcept {
    switch (v.kind()) {
    case json::kind::null: return false;
    case json::kind::bool_: return v.get_bool();
    case json::kind::int64: return v.get_int64() != 0;
    case json::kind::uint64: return v.get_uint64() != 0;
    case json::kind::double_: return v.get_double() != 0.0;
    case json::kind::string: return !v.get_string().empty();
    case json::kind::array: return !v.get_array().empty();
    case json::kind::object: return !v.get_object().empty();
    }
    return false;
}

/// A Mersenne Twister seeded with 256 bits from std::random_device (the OS).
/// The eight lower-case hex digits of `x`, most significant first, written to `out`: each
/// nibble spread to a byte of a 64-bit word, then all eight turned to ASCII at once.
inline void hex8(std::uint32_t x, char* out) noexcept {
    std::uint64_t v = x;
    v = ((v & 0xFFFF0000u) << 16) | (v & 0xFFFFu);
    v = ((v & 0x0000FF000000FF00u) << 8) | (v & 0x000000FF000000FFu);
    v = ((v & 0x00F000F000F000F0u) << 4) | (v & 0x000F000F000F000Fu);
    // Bytes over 9 get 'a' - '0' - 10 = 39 more.
    const std::uint64_t letters = ((v + 0x0606060606060606u) >> 4) & 0x0101010101010101u;
    v += 0x3030303030303030u + letters * 39;
    v = __builtin_bswap64(v); // the most significant digit at the lowest address
    std::memcpy(out, &v, 8);
}

inline boost::random::mt19937_64 os_seeded_mt19937_64() {
    std::random_device rd;
    std::uint32_t words[8];
    for (auto& w : words) w = rd();
    boost::random::seed_seq seq(std::begin(words), std::end(words));
    return boost::random::mt19937_64(seq);
}

/// Forks seen by this process's children: a pthread_atfork handler, installed by the first
/// id drawn, counts them in each child. A thread's id generator is a copy of its parent's
/// in a forked child; it reseeds when this count moved, so that a parent and its child never
/// draw the same ids (event ids, store instance names) from one state.
inline unsigned fork_count() noexcept {
    static std::atomic<unsigned> forks{0};
#if defined(__unix__) || defined(__APPLE__)
    static const bool hooked = [] {
        ::pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
        return true;
    }();
    (void)hooked;
#endif
    return forks.load(std::memory_order_relaxed);
}

inline bool metadata_flag(const json::object& md, std::string_view key) noexcept {
    auto it = md.find(key);
    return it != md.end() && truthy(it->value());
}

} // namespace detail

/// One entry of a session's append-only transcript.
///
/// An aggregate: construct with designated initialisers, or with `event::make`, which
/// also fills a fresh `id` and the current `timestamp`. `sequence` is 0 until a store
/// assigns the per-session order of truth (1, 2, 3, ...).
struct event {
    std::string id;
    std::int64_t sequence = 0;
    double timestamp = 0; ///< UTC seconds since the epoch
    std::string invocation_id;
    std::string session_id;
    std::string author;
    std::string branch; ///< dot-separated agent path, e.g. "pipeline.research.a"
    event_type type = event_type::agent_message;
    libretto::content content;
    event_actions actions;
    json::object metadata;
    bool partial = false; ///< a streaming chunk: yielded to callers, never stored
    boxed_optional<libretto::usage> usage;
    boxed_optional<std::string> signature;
    std::string signer_did;
    boxed_optional<std::string> prev_signature;

    // ---- construction helpers -------------------------------------------------------

    /// A random UUID (version 4) in its canonical 36-character text form. A Mersenne
    /// Twister per thread, seeded once from the OS: boost::uuids::random_generator makes
    /// a getrandom system call per id, ~5 % of a runner turn. Ids need uniqueness, not
    /// unpredictability. The 64-bit engine fills the 16 bytes in two draws (the 32-bit one
    /// combines two draws per 8 bytes through uniform_int's slow path).
    static std::string new_id() {
        // One generator per thread, seeded from the OS. Two 64-bit draws, and the digits
        // made eight at a time in a 64-bit word: Boost.Uuid's generator and to_string cost
        // ~4x as much, and every event takes an id.
        thread_local unsigned seeded_at = detail::fork_count();
        thread_local boost::random::mt19937_64 gen = detail::os_seeded_mt19937_64();
        if (const unsigned forks = detail::fork_count(); forks != seeded_at) { // a forked child
            seeded_at = forks;
            gen = detail::os_seeded_mt19937_64();
        }
        std::uint64_t hi = gen();
        std::uint64_t lo = gen();
        hi = (hi & ~std::uint64_t{0xF000}) | 0x4000;                         // version 4
        lo = (lo & ~(std::uint64_t{0xC0} << 56)) | (std::uint64_t{0x80} << 56); // variant 10
        char out[36]; // 8-4-4-4-12 hex digits, most significant first
        char d[8];
        detail::hex8(static_cast<std::uint32_t>(hi >> 32), out);
        out[8] = '-';
        detail::hex8(static_cast<std::uint32_t>(hi), d);
        std::memcpy(out + 9, d, 4);
        out[13] = '-';
        std::memcpy(out + 14, d + 4, 4);
        out[18] = '-';
        detail::hex8(static_cast<std::uint32_t>(lo >> 32), d);
        std::memcpy(out + 19, d, 4);
        out[23] = '-';
        std::memcpy(out + 24, d + 4, 4);
        detail::hex8(static_cast<std::uint32_t>(lo), out + 28);
        return std::string(out, sizeof out);
    }

    /// Seconds since the epoch, now.
    static double now() noexcept {
        using namespace std::chrono;
        return duration<double>(system_clock::now().time_since_epoch()).count();
    }

    /// An event of type `t` with a fresh id and the current time.
    static event make(event_type t, std::string author = {}, libretto::content c = {}) {
        event e;
        e.id = new_id();
        e.timestamp = now();
        e.type = t;
        e.author = std::move(author);
        e.content = std::move(c);
        return e;
    }

    // ---- convenience accessors (orxhestra semantics) -------------------------------

    /// Concatenation of every text part (thinking and data are not text).
    std::string text() const {
        std::string out;
        for (const auto& p : part_view<text_part>(content.parts)) out += p.text;
        return out;
    }

    /// Concatenation of every thinking part.
    std::string thinking() const {
        std::string out;
        for (const auto& p : part_view<thinking_part>(content.parts)) out += p.thinking;
        return out;
    }

    /// The first data part's object, or nullptr.
    const json::object* data() const noexcept {
        for (const auto& p : content.parts)
            if (auto d = std::get_if<data_part>(&p)) return &d->data;
        return nullptr;
    }

    /// Every tool-call request, in order.
    part_view<tool_call_part> tool_calls() const noexcept { return part_view<tool_call_part>(content.parts); }

    /// Every tool response, in order.
    part_view<tool_response_part> tool_responses() const noexcept {
        return part_view<tool_response_part>(content.parts);
    }

    bool has_tool_calls() const noexcept { return !tool_calls().empty(); }

    /// The tool name of the first tool call or tool response part, whichever comes first.
    std::optional<std::string_view> tool_name() const noexcept {
        for (const auto& p : content.parts) {
            if (auto c = std::get_if<tool_call_part>(&p)) return std::string_view(c->tool_name);
            if (auto r = std::get_if<tool_response_part>(&p)) return std::string_view(r->tool_name);
        }
        return std::nullopt;
    }

    /// The arguments of the first tool call, or nullptr.
    const json::object* tool_input() const noexcept {
        for (const auto& p : content.parts)
            if (auto c = std::get_if<tool_call_part>(&p)) return &c->args;
        return nullptr;
    }

    /// With tool responses: the first response's error (unset when it succeeded). Without:
    /// the text, if `metadata["error"]` is truthy.
    std::optional<std::string> error() const {
        if (auto rs = tool_responses(); !rs.empty()) return rs.front().error;
        if (detail::metadata_flag(metadata, "error")) return text();
        return std::nullopt;
    }

    /// True for an agent's final answer: a non-partial agent message without tool calls
    /// that is neither a ReAct step nor an error, and that has text or data (or asks to
    /// skip summarisation).
    bool is_final_response() const {
        if (partial) return false;
        if (type != event_type::agent_message) return false;
        if (has_tool_calls()) return false;
        if (detail::metadata_flag(metadata, "react_step") || detail::metadata_flag(metadata, "error")) return false;
        if (actions.skip_summarization.value_or(false)) return true;
        for (const auto& p : part_view<text_part>(content.parts))
            if (!p.text.empty()) return true;
        const json::object* d = data();
        return d != nullptr && !d->empty();
    }

    /// True if the event carries a compaction summary.
    bool is_compaction() const noexcept { return actions.compaction.has_value(); }

    /// True if the event carries a signature.
    bool is_signed() const noexcept { return signature.has_value() && !signature->empty(); }

    friend bool operator==(const event&, const event&) = default;
};

} // namespace libretto

#endif
