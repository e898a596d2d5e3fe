// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_JSON_ERROR_HPP
#define LIBRETTO_JSON_ERROR_HPP

#include <libretto/error.hpp>

#include <boost/assert/source_location.hpp>
#include <boost/system/result.hpp>
#include <boost/throw_exception.hpp>

#include <string>

namespace libretto {

/// Why a JSON document could not be decoded: the error code, the path of the offending
/// field ("content.parts[2].tool_call_id"; empty for the document itself) and a detail.
struct decode_error {
    boost::system::error_code code;
    std::string path;
    std::string detail;

    /// "content.parts[2].tool_call_id: field has the wrong type (expected string, got number)".
    std::string message() const {
        std::string m = path.empty() ? std::string("<document>") : path;
        m += ": ";
        m += code.message();
        if (!detail.empty()) {
            m += " (";
            m += detail;
            m += ')';
        }
        return m;
    }
};

/// The result of a non-throwing decode: a value, or a decode_error.
template <class T>
using decode_result = boost::system::result<T, decode_error>;

/// Called by decode_result::value() on error: throws system_error carrying the code and
/// the full message with the field path.
[[noreturn]] inline void throw_exception_from_error(const decode_error& e, const boost::source_location& loc) {
    // system_error appends the code's own message; give it the path and the detail.
    std::string what = e.path.empty() ? std::string("<document>") : e.path;
    if (!e.detail.empty()) what += " (" + e.detail + ")";
    boost::throw_exception(boost::system::system_error(e.code, what), loc);
}

} // namespace libretto

#endif
