// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_SUMMARIZER_CHAIN_HPP
#define LIBRETTO_COMPACTION_SUMMARIZER_CHAIN_HPP

// summarizer_chain<Primary, Fallback>: the primary summarizer (a model_summarizer by
// default), retried once, then the fallback (extractive_summarizer by default). The chain:
//
//   attempt 1 of the primary ── ok, non-blank text ─────────────────────► its summary
//      │ throws (model error, empty reply, quality check failed twice, any exception)
//      ▼   unless the error was auth_failed or context_overflow (a retry fails the same way)
//   attempt 2 of the primary ── ok ─────────────────────────────────────► its summary
//      │ fails
//      ▼
//   the fallback ───────────────────────────────────────────────────────► its summary,
//                                               fallback_reason says why, usage includes
//                                               what the failed attempts spent
//
// Cancellation is never swallowed: an errc::cancelled or operation_aborted error, or a
// cancelled coroutine, is rethrown at once. With the extractive fallback the chain never
// throws for anything else. Specified in docs/compaction.md, "Summarizers".

#include <libretto/compaction/detail/summary_text.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/compaction/model_summarizer.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/error.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace libretto {

struct summarizer_chain_options {
    /// How many times the primary is tried before the fallback (at least 1).
    std::size_t primary_attempts = 2;
};

namespace detail {

/// What a failed attempt left: its error, its message, the usage it spent.
struct summary_failure {
    boost::system::error_code code{};
    std::string message{};
    std::optional<usage> spent{};
    bool cancelled = false;
};

inline summary_failure classify_summary_failure(std::exception_ptr ep) {
    summary_failure f;
    try {
        std::rethrow_exception(ep);
    } catch (const summary_error& e) {
        f.code = e.code();
        f.message = e.what();
        f.spent = e.spent();
    } catch (const boost::system::system_error& e) {
        f.code = e.code();
        f.message = e.what();
    } catch (const std::exception& e) {
        f.message = e.what();
    } catch (...) {
        f.message = "unknown exception";
    }
    f.cancelled = f.code == make_error_code(errc::cancelled) || f.code == boost::asio::error::operation_aborted;
    return f;
}

} // namespace detail

template <class Primary = model_summarizer<>, class Fallback = extractive_summarizer>
    requires summarizer<Primary> && summarizer<Fallback>
class summarizer_chain {
public:
    explicit summarizer_chain(Primary primary, Fallback fallback = Fallback{}, summarizer_chain_options o = {})
        : primary_(std::move(primary)), fallback_(std::move(fallback)), o_(o) {}

    /// See the header comment. The operation holds a copy of *this.
    boost::asio::awaitable<summary> async_summarize(summary_request r) { return run(*this, std::move(r)); }

    Primary& primary() noexcept { return primary_; }
    Fallback& fallback() noexcept { return fallback_; }
    const summarizer_chain_options& options() const noexcept { return o_; }

private:
    static boost::asio::awaitable<summary> run(summarizer_chain self, summary_request r) {
        std::optional<usage> spent;
        std::string reasons;
        const std::size_t attempts = self.o_.primary_attempts == 0 ? 1 : self.o_.primary_attempts;
        for (std::size_t attempt = 1; attempt <= attempts; ++attempt) {
            std::exception_ptr failure;
            std::optional<summary> got;
            try {
                summary_request copy = r;
                boost::asio::awaitable<summary> op = self.primary_.async_summarize(std::move(copy));
                summary s = co_await std::move(op);
                got = std::move(s);
            } catch (...) {
                failure = std::current_exception();
            }
            // A failure (or a blank summary) after cancellation was requested is the
            // cancellation: no retry, no fallback. A summary that made it is kept.
            boost::asio::cancellation_state cs = co_await boost::asio::this_coro::cancellation_state;
            const bool blank = !failure && detail::summary_text::trim(got->text).empty();
            if (cs.cancelled() != boost::asio::cancellation_type::none && (failure || blank)) {
                if (failure) std::rethrow_exception(failure);
                throw boost::system::system_error(make_error_code(errc::cancelled));
            }
            detail::summary_failure f;
            if (failure) {
                f = detail::classify_summary_failure(failure);
                if (f.cancelled) std::rethrow_exception(failure);
            } else if (blank) {
                f.code = make_error_code(errc::bad_response);
                f.message = (got->produced_by.empty() ? std::string("the primary summarizer") : got->produced_by) +
                            ": empty summary";
                f.spent = got->usage;
            } else {
                add_usage(spent, got->usage);
                got->usage = std::move(spent);
                if (!reasons.empty()) got->fallback_reason = std::move(reasons); // succeeded on a retry
                co_return std::move(*got);
            }
            add_usage(spent, f.spent);
            if (!reasons.empty()) reasons += "; ";
            reasons += "attempt " + std::to_string(attempt) + ": " + f.message;
            if (f.code == make_error_code(errc::auth_failed) || f.code == make_error_code(errc::context_overflow))
                break; // the same request fails the same way
        }
        summary_request copy = r;
        boost::asio::awaitable<summary> op = self.fallback_.async_summarize(std::move(copy));
        summary s = co_await std::move(op);
        add_usage(spent, s.usage);
        s.usage = std::move(spent);
        s.fallback_reason = std::move(reasons);
        co_return s;
    }

    Primary primary_;
    Fallback fallback_;
    summarizer_chain_options o_;
};

/// The usual chain: `m` through a model_summarizer, retried once, then extractive.
template <class M>
    requires model<M>
summarizer_chain<model_summarizer<M>, extractive_summarizer>
make_fallback_summarizer(M m, model_summarizer_options mo = {}, extractive_summarizer_options eo = {}) {
    return summarizer_chain<model_summarizer<M>, extractive_summarizer>(model_summarizer<M>(std::move(m), std::move(mo)),
                                                                         extractive_summarizer(std::move(eo)));
}

static_assert(summarizer<summarizer_chain<>>);

} // namespace libretto

#endif
