// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_HTTP_DETAIL_CHECK_OPTIONS_HPP
#define LIBRETTO_HTTP_DETAIL_CHECK_OPTIONS_HPP

// beast_transport's constructor check of its options: a negative timeout once read as "no
// limit" (the transport armed no timer) and a negative max_idle_time as "never reuse", both
// silently, so they are refused by name.

#include <libretto/detail/deadline.hpp>
#include <libretto/error.hpp>
#include <libretto/http/beast_transport_options.hpp>

#include <boost/system/system_error.hpp>

#include <chrono>
#include <utility>

namespace libretto::http::detail {

/// `o`, or system_error (errc::invalid_argument) naming its first negative duration.
inline beast_transport_options checked(beast_transport_options o) {
    const http_timeouts& t = o.timeouts;
    for (auto [name, d] : {std::pair{"timeouts.connect", t.connect},
                           {"timeouts.first_byte", t.first_byte},
                           {"timeouts.idle", t.idle},
                           {"timeouts.total", t.total},
                           {"max_idle_time", o.max_idle_time}})
        if (auto why = ::libretto::detail::negative_duration_problem(name, d); !why.empty())
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              "beast_transport_options: " + why);
    return o;
}

} // namespace libretto::http::detail

#endif
