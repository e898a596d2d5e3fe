// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_ERROR_HPP
#define LIBRETTO_ERROR_HPP

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <type_traits>

namespace libretto {

/// Error conditions reported by libretto. Zero is never used: a value-initialised
/// error_code means success.
enum class errc {
    invalid_argument = 1, ///< a caller-supplied value is malformed (bad id, bad option)
    invalid_json,         ///< text is not JSON, or JSON of the wrong shape
    missing_field,        ///< a required field is absent
    wrong_type,           ///< a field has the wrong JSON type
    unknown_enum_value,   ///< an enum field holds a name we do not know
    oversize,             ///< an input exceeds a configured size limit
    not_found,            ///< the named session / agent / key does not exist
    already_exists,       ///< create with an id that is taken
    stale_session,        ///< append against a session loaded at an older sequence
    busy,                 ///< a lock could not be taken in time
    corrupt_data,         ///< stored bytes fail to decode or verify
    cancelled,            ///< the operation was cancelled
    stream_closed,        ///< next() after the end of an event stream
    model_error,          ///< a model returned an error or garbage
    context_overflow,     ///< the request exceeded the model's context window
    tool_error,           ///< a tool failed
    transfer_loop,        ///< agent transfers exceeded the hop limit
    bad_signature,        ///< a signature or chain link does not verify
    io_error,             ///< a read or write on storage failed
    transient,            ///< a temporary failure worth retrying (rate limit, overload, timeout)
    bad_response,         ///< a model's reply is malformed (not JSON, bad tool-call arguments)
    auth_failed,          ///< credentials were missing or rejected (HTTP 401/403)
    limit_exceeded,       ///< a configured per-invocation limit was reached (max_llm_calls)
    unexpected_exception, ///< an agent, tool, callback or model threw something that is not a system_error
};

namespace detail {

class error_category_impl final : public boost::system::error_category {
public:
    error_category_impl() noexcept : boost::system::error_category(0x6c6962726574746fULL) {}

    const char* name() const noexcept override { return "libretto"; }

    std::string message(int ev) const override { return message(ev, nullptr, 0); }

    const char* message(int ev, char*, std::size_t) const noexcept override {
        switch (static_cast<errc>(ev)) {
        case errc::invalid_argument: return "invalid argument";
        case errc::invalid_json: return "invalid JSON";
        case errc::missing_field: return "required field is missing";
        case errc::wrong_type: return "field has the wrong type";
        case errc::unknown_enum_value: return "unknown enumeration value";
        case errc::oversize: return "input exceeds the size limit";
        case errc::not_found: return "not found";
        case errc::already_exists: return "already exists";
        case errc::stale_session: return "session is stale: it was modified after it was loaded";
        case errc::busy: return "resource is busy";
        case errc::corrupt_data: return "stored data is corrupt";
        case errc::cancelled: return "operation cancelled";
        case errc::stream_closed: return "event stream is closed";
        case errc::model_error: return "model error";
        case errc::context_overflow: return "model context window exceeded";
        case errc::tool_error: return "tool error";
        case errc::transfer_loop: return "agent transfer loop";
        case errc::bad_signature: return "signature does not verify";
        case errc::io_error: return "I/O error";
        case errc::transient: return "temporary failure: retry later";
        case errc::bad_response: return "malformed model response";
        case errc::auth_failed: return "authentication failed";
        case errc::limit_exceeded: return "limit exceeded";
        case errc::unexpected_exception: return "unexpected exception";
        }
        return "unknown libretto error";
    }
};

} // namespace detail

/// The category of every libretto::errc.
inline const boost::system::error_category& error_category() noexcept {
    static const detail::error_category_impl cat;
    return cat;
}

inline boost::system::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// True for failures worth retrying after a pause: errc::transient (a provider's 429, 5xx,
/// overload or timeout, as the model reports it) and the transport's own timeouts and
/// dropped connections (generic timed_out, connection_reset, connection_aborted,
/// resource_unavailable_try_again, from any category that maps to them, e.g. Asio's).
/// Everything else — context_overflow, auth_failed, bad_response, cancelled — is not:
/// retrying the same request would fail the same way.
inline bool is_transient(const boost::system::error_code& ec) noexcept {
    if (!ec) return false;
    if (ec == make_error_code(errc::transient)) return true;
    namespace se = boost::system::errc;
    return ec == se::timed_out || ec == se::connection_reset || ec == se::connection_aborted ||
           ec == se::resource_unavailable_try_again;
}

/// Writes the code's message ("session is stale: ..."), for logs and test diagnostics.
template <class Ostream>
    requires requires(Ostream& os, const char* s) { os << s; }
Ostream& operator<<(Ostream& os, errc e) {
    os << error_category().message(static_cast<int>(e), nullptr, 0);
    return os;
}

} // namespace libretto

template <>
struct boost::system::is_error_code_enum<libretto::errc> : std::true_type {};

#endif
