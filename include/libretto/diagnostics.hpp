// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DIAGNOSTICS_HPP
#define LIBRETTO_DIAGNOSTICS_HPP

// The one error model (docs/errors.md): every asynchronous operation completes with an
// error_code first; the words that say what was wrong (which field, which session, which
// file and line, what the server said) travel in a diagnostics object that belongs to that
// one operation. The caller passes it (as in Boost.MySQL) and reads it after the
// completion; nothing is kept in thread-local or per-object "last error" state, so
// operations that interleave on one thread (coroutines) never see each other's messages.

#include <libretto/error.hpp>

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace libretto {

/// What one operation said about its failure. Pass it to an operation by reference; it must
/// outlive the operation, and is written only by that operation, before its completion
/// handler runs. An operation clears it when it starts, so after a success it is empty.
class diagnostics {
public:
    diagnostics() = default;

    /// The reason in words ("jsonl_store: demo/u1/s1/events.jsonl line 7: ..."); empty when
    /// the operation succeeded or had nothing to add to its error_code.
    const std::string& message() const noexcept { return message_; }
    bool empty() const noexcept { return message_.empty(); }

    void clear() noexcept { message_.clear(); }

    /// For implementers of operations: replaces the message.
    void assign(std::string message) { message_ = std::move(message); }
    /// For implementers of operations: adds a cause after the message ("...: cause").
    void append(std::string_view cause) {
        if (cause.empty()) return;
        if (!message_.empty()) message_ += ": ";
        message_ += cause;
    }

    friend bool operator==(const diagnostics&, const diagnostics&) = default;

private:
    std::string message_;
};

/// The exception an awaitable form throws: a system_error with the operation's error_code,
/// whose what() is the diagnostics' message followed by the code's own, and the
/// diagnostics themselves.
class error_with_diagnostics : public boost::system::system_error {
public:
    error_with_diagnostics(boost::system::error_code ec, diagnostics d)
        : boost::system::system_error(d.empty() ? boost::system::system_error(ec) : boost::system::system_error(ec, d.message())),
          diag_(std::move(d)) {}

    const diagnostics& get_diagnostics() const noexcept { return diag_; }

private:
    diagnostics diag_;
};

/// Throws error_with_diagnostics if `ec` is a failure.
inline void throw_on_error(boost::system::error_code ec, const diagnostics& d) {
    if (ec) throw error_with_diagnostics(ec, d);
}

/// `ec`'s message, then the diagnostics' in parentheses when there is one: for logs.
inline std::string describe(boost::system::error_code ec, const diagnostics& d) {
    std::string out = ec.message();
    if (!d.empty()) {
        out += " (";
        out += d.message();
        out += ')';
    }
    return out;
}

} // namespace libretto

#endif
