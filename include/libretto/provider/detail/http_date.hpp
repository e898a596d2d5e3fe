// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_HTTP_DATE_HPP
#define LIBRETTO_PROVIDER_DETAIL_HTTP_DATE_HPP

// HTTP-date (RFC 9110 §5.6.7): a recipient must accept all three formats,
//   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
//   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"
//   asctime      "Sun Nov  6 08:49:37 1994"

#include <libretto/provider/detail/text.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace libretto::detail {

class http_date_reader {
public:
    explicit http_date_reader(std::string_view s) noexcept : s_(s) {}

    bool at_end() const noexcept { return pos_ >= s_.size(); }
    void skip_spaces() noexcept {
        while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
    }
    bool expect(char c) noexcept {
        if (pos_ < s_.size() && s_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    /// Between `min` and `max` digits.
    bool number(int min, int max, int& out) noexcept {
        int n = 0;
        out = 0;
        while (n < max && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
            out = out * 10 + (s_[pos_] - '0');
            ++pos_;
            ++n;
        }
        return n >= min;
    }
    bool month(unsigned& out) noexcept {
        static constexpr std::string_view names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
        if (s_.size() - pos_ < 3) return false;
        std::string_view m = s_.substr(pos_, 3);
        for (unsigned i = 0; i < 12; ++i)
            if (iequals(m, names[i])) {
                out = i + 1;
                pos_ += 3;
                return true;
            }
        return false;
    }
    /// A day name: letters only (checked loosely: the date itself carries the meaning).
    bool day_name() noexcept {
        std::size_t start = pos_;
        while (pos_ < s_.size() && ((s_[pos_] >= 'a' && s_[pos_] <= 'z') || (s_[pos_] >= 'A' && s_[pos_] <= 'Z')))
            ++pos_;
        return pos_ - start >= 3;
    }
    bool word(std::string_view w) noexcept {
        if (s_.size() - pos_ < w.size() || !iequals(s_.substr(pos_, w.size()), w)) return false;
        pos_ += w.size();
        return true;
    }
    bool time_of_day(int& h, int& m, int& sec) noexcept {
        return number(2, 2, h) && expect(':') && number(2, 2, m) && expect(':') && number(2, 2, sec) && h < 24 &&
               m < 60 && sec <= 60;
    }

private:
    std::string_view s_;
    std::size_t pos_ = 0;
};

inline std::optional<std::chrono::sys_seconds> make_http_time(int year, unsigned month, int day, int h, int m,
                                                               int s) noexcept {
    using namespace std::chrono;
    year_month_day ymd{std::chrono::year{year}, std::chrono::month{month}, std::chrono::day{static_cast<unsigned>(day)}};
    if (!ymd.ok()) return std::nullopt;
    return sys_days{ymd} + hours{h} + minutes{m} + seconds{s};
}

/// The time an HTTP-date names, or nullopt if `text` is none of the three formats.
inline std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text) noexcept {
    text = trim(text);
    http_date_reader r(text);
    if (!r.day_name()) return std::nullopt;
    int day = 0, year = 0, h = 0, m = 0, s = 0;
    unsigned month = 0;
    if (r.expect(',')) {
        r.skip_spaces();
        if (!r.number(1, 2, day)) return std::nullopt;
        if (r.expect('-')) { // RFC 850: 06-Nov-94
            if (!r.month(month) || !r.expect('-') || !r.number(2, 2, year)) return std::nullopt;
            // Two-digit years (RFC 9110 asks for "within 50 years"; a fixed pivot is enough
            // for a header that names seconds from now).
            year += year < 70 ? 2000 : 1900;
        } else { // IMF-fixdate: 06 Nov 1994
            r.skip_spaces();
            if (!r.month(month)) return std::nullopt;
            r.skip_spaces();
            if (!r.number(4, 4, year)) return std::nullopt;
        }
        r.skip_spaces();
        if (!r.time_of_day(h, m, s)) return std::nullopt;
        r.skip_spaces();
        if (!r.word("GMT") && !r.word("UTC")) return std::nullopt;
    } else { // asctime: Nov  6 08:49:37 1994
        r.skip_spaces();
        if (!r.month(month)) return std::nullopt;
        r.skip_spaces();
        if (!r.number(1, 2, day)) return std::nullopt;
        r.skip_spaces();
        if (!r.time_of_day(h, m, s)) return std::nullopt;
        r.skip_spaces();
        if (!r.number(4, 4, year)) return std::nullopt;
    }
    r.skip_spaces();
    if (!r.at_end()) return std::nullopt;
    return make_http_time(year, month, day, h, m, s);
}

} // namespace libretto::detail

#endif
