// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_SUMMARIZER_HPP
#define LIBRETTO_COMPACTION_SUMMARIZER_HPP

// The summarizer concept: what a compaction strategy asks for when it has chosen the
// events to replace. Valid expressions, for a summarizer `s` (an lvalue S) and a
// summary_request `r`:
//
//   S(s)                          copyable: strategies and runners hold summarizers by value
//   s.async_summarize(std::move(r)) -> asio::awaitable<summary>
//
// The operation may outlive `s` (the shipped summarizers copy themselves into the
// coroutine) but not the events `r` points at. Failures throw boost::system::system_error
// (summary_error when usage was spent). Specified in docs/compaction.md, "Summarizers".
//
// Also here: summary_request, summary, summary_error, critical_identifiers(),
// latest_user_request(), names_request() (the quality check's "does the summary name the
// latest request"), and async_summarize(ex, s, r, token) for completion tokens.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/summary_identifiers.hpp>
#include <libretto/compaction/detail/summary_text.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/usage.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// What to summarise. The spans are views: the events must outlive the operation.
struct summary_request {
    /// The events the summary replaces, oldest first.
    event_span events{};
    /// The summary these events follow, when the new one is to subsume it (update mode).
    std::optional<std::string> previous_summary{};
    /// Split turn: the start of the current turn (after `events`), whose end is kept raw.
    /// Summarised as its own "Turn context (split turn)" section.
    event_span turn_prefix{};
    /// Strings that must appear verbatim in the summary (e.g. critical_identifiers(events)).
    std::vector<std::string> identifiers{};
};

/// A summary and what it cost.
struct summary {
    std::string text;
    /// Tokens the summarizer's own model calls used (all of them, failed attempts included);
    /// empty when no model was called. The runner excludes it from its token triggers.
    std::optional<libretto::usage> usage{};
    /// Who wrote it: "extractive", "model:<model name>".
    std::string produced_by{};
    /// Set by summarizer_chain when it fell back: why each earlier attempt failed.
    std::string fallback_reason{};
};

/// The text of every summarizer for a request with no events and no turn prefix: the
/// previous summary when there is one, else this.
inline constexpr std::string_view empty_history_text = "No prior history.";

/// A summarizer failure that may have spent tokens: `spent()` is the usage of the model
/// calls made before it failed (so a fallback can still report them).
class summary_error : public boost::system::system_error {
public:
    summary_error(boost::system::error_code ec, const std::string& what, std::optional<usage> spent = std::nullopt)
        : boost::system::system_error(ec, what), spent_(std::move(spent)) {}
    const std::optional<usage>& spent() const noexcept { return spent_; }

private:
    std::optional<usage> spent_;
};

/// Adds `more` to `total` (tokens summed; the first non-empty model version kept).
inline void add_usage(std::optional<usage>& total, const std::optional<usage>& more) {
    if (!more) return;
    if (!total) {
        total = *more;
        return;
    }
    total->input_tokens = detail::saturating_add(total->input_tokens, more->input_tokens);
    total->output_tokens = detail::saturating_add(total->output_tokens, more->output_tokens);
    if (total->model_version.empty()) total->model_version = more->model_version;
}

template <class S>
concept summarizer = std::copy_constructible<S> && requires(S& s, summary_request r) {
    { s.async_summarize(std::move(r)) } -> std::same_as<boost::asio::awaitable<summary>>;
};

// ---- critical identifiers ------------------------------------------------------------

/// Bounds of critical_identifiers().
struct identifier_options {
    std::size_t max_count = 16;    ///< the most recently introduced ones are kept
    std::size_t max_length = 120;  ///< longer tokens are not identifiers (base64, blobs)
    std::size_t scan_limit = 8192; ///< bytes of each text / string value scanned
};

namespace detail {

inline void collect_identifiers(summary_ids::collector& c, event_span events) {
    for (const event& e : events) {
        if (e.partial || e.type == event_type::agent_start || e.type == event_type::agent_end) continue;
        for (const part& p : e.content.parts) {
            if (const auto* t = std::get_if<text_part>(&p)) c.scan_text(t->text);
            else if (const auto* d = std::get_if<data_part>(&p)) {
                for (const auto& kv : d->data) c.scan_json(kv.value(), kv.key());
            } else if (const auto* f = std::get_if<file_part>(&p)) {
                if (f->name) c.add_verbatim(*f->name);
                if (f->uri) c.add_verbatim(*f->uri);
            } else if (const auto* call = std::get_if<tool_call_part>(&p)) {
                c.add_verbatim(call->tool_name);
                for (const auto& kv : call->args) c.scan_json(kv.value(), kv.key());
            } else if (const auto* r = std::get_if<tool_response_part>(&p)) {
                c.scan_json(r->result);
                if (r->error) c.scan_text(*r->error);
            }
        }
        if (e.content.parts.empty() && e.actions.compaction) c.scan_text(e.actions.compaction->summary);
    }
}

} // namespace detail

/// Identifiers worth keeping verbatim in a summary of `events`, deterministic: tool names,
/// URLs, e-mail addresses, paths, file names, ids and numbers of five or more characters
/// found in texts, data, tool arguments and tool results (strings and numbers under
/// id-like keys — "id", "order_id", "orderId", "invoice_number" — kept whole), file names
/// and URIs. Thinking is not scanned; tool-call ids are not identifiers. In order of first
/// appearance, no duplicates, at most `o.max_count` (the newest ones).
inline std::vector<std::string> critical_identifiers(event_span events, const identifier_options& o = {}) {
    detail::summary_ids::collector c(o.max_length, o.scan_limit);
    detail::collect_identifiers(c, events);
    return std::move(c).take(o.max_count);
}

/// The identifiers found in free text (e.g. a previous summary), by the same rules.
inline std::vector<std::string> text_identifiers(std::string_view text, const identifier_options& o = {}) {
    detail::summary_ids::collector c(o.max_length, o.scan_limit);
    c.scan_text(text);
    return std::move(c).take(o.max_count);
}

// ---- the latest user request and the quality check -----------------------------------

/// The text of the newest user message with non-blank text in `r.events` then
/// `r.turn_prefix` (compaction summaries are not requests); empty when there is none.
inline std::string latest_user_request(const summary_request& r) {
    auto scan = [](event_span evs) -> std::optional<std::string> {
        for (auto it = evs.rbegin(); it != evs.rend(); ++it) {
            if (it->partial || it->type != event_type::user_message || it->is_compaction()) continue;
            std::string t = it->text();
            if (!detail::summary_text::trim(t).empty()) return t;
        }
        return std::nullopt;
    };
    if (auto t = scan(r.turn_prefix)) return std::move(*t);
    if (auto t = scan(r.events)) return std::move(*t);
    return {};
}

/// True if the summary `text` names `request`. With both normalised (ASCII lower case, runs
/// of anything but letters, digits and non-ASCII bytes folded to one space): the first 40
/// bytes of the request (cut at a character boundary) occur in the summary, or at least
/// half (rounded up) of the request's significant words do (distinct words of 3+ bytes
/// that are not English stop words, the first 16; a word matches when equal, or when one
/// is a prefix of the other and the shorter has 4+ bytes). A request without significant
/// words ("ok", "yes") is always named.
inline bool names_request(std::string_view text, std::string_view request) {
    namespace st = detail::summary_text;
    std::string req = st::normalized(request);
    if (req.empty()) return true;
    std::string sum = st::normalized(text);
    std::string_view head = std::string_view(req).substr(0, st::utf8_cut(req, 40));
    if (sum.find(head) != std::string::npos) return true;
    std::vector<std::string> sig = st::significant_words(request);
    if (sig.empty()) return true;
    std::vector<std::string> sum_words = st::words(text);
    std::size_t found = 0;
    for (const auto& w : sig)
        if (std::any_of(sum_words.begin(), sum_words.end(), [&](const std::string& s) { return st::word_matches(s, w); }))
            ++found;
    return found >= (sig.size() + 1) / 2;
}

/// The identifiers of `required` that the summary `text` does not contain verbatim.
inline std::vector<std::string> missing_identifiers(std::string_view text,
                                                    const std::vector<std::string>& required) {
    std::vector<std::string> out;
    for (const auto& id : required)
        if (!id.empty() && text.find(id) == std::string_view::npos) out.push_back(id);
    return out;
}

// ---- completion tokens ---------------------------------------------------------------

namespace detail {
template <class S>
boost::asio::awaitable<summary> summarize_owned(S s, summary_request r) {
    boost::asio::awaitable<summary> op = s.async_summarize(std::move(r));
    summary out = co_await std::move(op);
    co_return out;
}
} // namespace detail

/// The completion signature of async_summarize.
using summarize_signature = void(boost::system::error_code, summary);

namespace detail {
template <class Executor, class S, class Token>
auto start_summarize(Executor ex, S s, summary_request r, diagnostics* d, Token&& token) {
    return initiate_with_diagnostics<summarize_signature>(
        d, std::forward<Token>(token),
        [](auto handler, diagnostics* d, Executor ex, S s, summary_request r) {
            spawn_with_error_code<summary>(std::move(handler), d, ex, summarize_owned(std::move(s), std::move(r)),
                                           [](const summary&, diagnostics*) { return boost::system::error_code(); });
        },
        std::move(ex), std::move(s), std::move(r));
}
} // namespace detail

/// s.async_summarize(r) as an Asio operation with any completion token (default:
/// libretto::default_completion_token_t), run on `ex`; completes with (error_code, summary).
/// `s` is copied into the operation; the events `r` points at must outlive it. A summarizer
/// that throws fails the operation with the exception's code, its words in `diag`
/// (docs/errors.md); with use_awaitable the error is thrown as error_with_diagnostics.
template <class Executor, class S,
          boost::asio::completion_token_for<summarize_signature> CompletionToken = default_completion_token_t>
    requires summarizer<S>
auto async_summarize(Executor ex, S s, summary_request r, diagnostics& diag, CompletionToken&& token = {}) {
    return detail::start_summarize(std::move(ex), std::move(s), std::move(r), &diag,
                                   std::forward<CompletionToken>(token));
}
template <class Executor, class S,
          boost::asio::completion_token_for<summarize_signature> CompletionToken = default_completion_token_t>
    requires summarizer<S>
auto async_summarize(Executor ex, S s, summary_request r, CompletionToken&& token = {}) {
    return detail::start_summarize(std::move(ex), std::move(s), std::move(r), nullptr,
                                   std::forward<CompletionToken>(token));
}

} // namespace libretto

#endif
