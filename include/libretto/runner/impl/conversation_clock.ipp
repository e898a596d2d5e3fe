// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_IMPL_CONVERSATION_CLOCK_IPP
#define LIBRETTO_RUNNER_IMPL_CONVERSATION_CLOCK_IPP

// The time zone is a POSIX TZ string, read with Boost.DateTime's posix_time_zone, which
// writes offsets with the opposite sign (UTC+1 is "+1" to Boost, "-1" to POSIX): the string
// is translated first.

#include <libretto/runner/detail/conversation_clock.hpp>

#include <libretto/error.hpp>
#include <libretto/runner/detail/turn_state.hpp>

#include <boost/date_time/local_time/local_time.hpp>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>

namespace libretto::detail {

struct conversation_zone {
    boost::local_time::time_zone_ptr tz;
};

LIBRETTO_DECL std::string boost_tz_from_posix(std::string_view tz, std::string& why) {
    std::size_t i = 0;
    auto name = [&](const char* what) -> bool {
        if (i < tz.size() && tz[i] == '<') {
            const auto close = tz.find('>', i);
            if (close == std::string_view::npos) return why = std::string("the ") + what + " name's '<' has no '>'", false;
            i = close + 1;
            return true;
        }
        const std::size_t start = i;
        while (i < tz.size() && std::isalpha(static_cast<unsigned char>(tz[i]))) ++i;
        if (i - start < 3) return why = std::string("the ") + what + " name needs 3 or more letters", false;
        return true;
    };
    // [+-]hh[:mm[:ss]] as seconds west of UTC (POSIX's sign).
    auto offset = [&](long& seconds) -> bool {
        int sign = 1;
        if (i < tz.size() && (tz[i] == '+' || tz[i] == '-')) sign = tz[i++] == '-' ? -1 : 1;
        long parts[3] = {0, 0, 0};
        for (int p = 0; p < 3; ++p) {
            if (p > 0) {
                if (i >= tz.size() || tz[i] != ':') break;
                ++i;
            }
            const std::size_t start = i;
            while (i < tz.size() && std::isdigit(static_cast<unsigned char>(tz[i])) && i - start < 2)
                parts[p] = parts[p] * 10 + (tz[i++] - '0');
            if (i == start) return why = "an offset needs hours", false;
        }
        if (parts[0] > 24 || parts[1] > 59 || parts[2] > 59) return why = "an offset is out of range", false;
        seconds = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
        return true;
    };
    auto format = [](long east) {
        std::string s = east < 0 ? "-" : "+";
        east = std::labs(east);
        char buf[16];
        std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", east / 3600, east / 60 % 60, east % 60);
        return s + buf;
    };
    long std_west = 0;
    if (!name("standard time") || !offset(std_west)) return {};
    std::string out = "STD" + format(-std_west);
    if (i < tz.size() && tz[i] != ',') {
        if (!name("daylight time")) return {};
        out += "DST";
        if (i < tz.size() && tz[i] != ',') {
            long dst_west = 0;
            if (!offset(dst_west)) return {};
            out += format(std_west - dst_west); // Boost: the daylight shift, not the offset
        }
        if (i < tz.size() && tz[i] != ',') return why = "unexpected '" + std::string(tz.substr(i)) + "'", std::string();
        out += tz.substr(i);
    } else if (i < tz.size()) {
        return why = "rules (after ',') without a daylight time name", std::string();
    }
    return out;
}

LIBRETTO_DECL double conversation_clock::last_boundary(double now) const {
    namespace lt = boost::local_time;
    namespace pt = boost::posix_time;
    const pt::ptime epoch(boost::gregorian::date(1970, 1, 1));
    const pt::ptime utc = epoch + pt::microseconds(static_cast<std::int64_t>(std::floor(now * 1e6)));
    const boost::gregorian::date today = lt::local_date_time(utc, zone->tz).local_time().date();
    const int hour = *policy.daily_at_hour;
    auto at = [&](boost::gregorian::date d) -> double {
        pt::ptime when;
        try {
            when = lt::local_date_time(d, pt::hours(hour), zone->tz, lt::local_date_time::EXCEPTION_ON_ERROR).utc_time();
        } catch (const lt::ambiguous_result&) { // the hour happens twice: the first time
            when = lt::local_date_time(d, pt::hours(hour), zone->tz, true).utc_time();
        } catch (const lt::time_label_invalid&) { // skipped by the clock change: when it ends
            when = lt::local_date_time(d, pt::hours(hour + 1), zone->tz, lt::local_date_time::NOT_DATE_TIME_ON_ERROR).utc_time();
        }
        return static_cast<double>((when - epoch).total_microseconds()) / 1e6;
    };
    const double t = at(today);
    return t <= now ? t : at(today - boost::gregorian::days(1));
}

LIBRETTO_DECL std::string conversation_clock::stale_reason(const conversation_entry& e, double now) const {
    // Whichever expires first: the earlier of the two moments.
    std::optional<double> daily, idle;
    if (policy.daily_at_hour) {
        const double boundary = last_boundary(now);
        if (e.started_at < boundary) daily = boundary;
    }
    if (policy.idle) {
        const double last = e.last_interaction_at != 0 ? e.last_interaction_at : e.started_at;
        const double expiry = last + std::chrono::duration<double>(*policy.idle).count();
        if (expiry <= now) idle = expiry;
    }
    if (daily && (!idle || *daily <= *idle)) return "daily";
    if (idle) return "idle";
    return {};
}

LIBRETTO_DECL std::shared_ptr<const conversation_clock> make_conversation_clock(const reset_policy& p) {
    if (!p.daily_at_hour && !p.idle) return nullptr;
    if (p.daily_at_hour && (*p.daily_at_hour < 0 || *p.daily_at_hour > 23))
        throw_turn_error(errc::invalid_argument, "reset_policy.daily_at_hour is " + std::to_string(*p.daily_at_hour) +
                                                     " (0 to 23)");
    if (p.idle && p.idle->count() <= 0)
        throw_turn_error(errc::invalid_argument, "reset_policy.idle must be at least one minute");
    auto clock = std::make_shared<conversation_clock>();
    clock->policy = p;
    std::string why;
    const std::string boost_tz = boost_tz_from_posix(p.time_zone, why);
    if (boost_tz.empty())
        throw_turn_error(errc::invalid_argument, "reset_policy.time_zone '" + p.time_zone +
                                                     "' is not a POSIX TZ string (" + why +
                                                     "; e.g. \"UTC0\", \"CET-1CEST,M3.5.0,M10.5.0/3\")");
    try {
        clock->zone = std::make_shared<const conversation_zone>(
            conversation_zone{boost::local_time::time_zone_ptr(new boost::local_time::posix_time_zone(boost_tz))});
    } catch (const std::exception& e) {
        throw_turn_error(errc::invalid_argument,
                         "reset_policy.time_zone '" + p.time_zone + "' has rules that cannot be read (" + e.what() + ")");
    }
    return clock;
}

} // namespace libretto::detail

#endif
