// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_ECMA_NUMBER_HPP
#define LIBRETTO_DETAIL_ECMA_NUMBER_HPP

// A double written as ECMAScript writes it (Number.prototype.toString, which JSON.stringify
// and RFC 8785 use): the shortest digits that read back as the same double, without an
// exponent from 1e-6 up to 1e21 ("42", "69.8", "0.000001", "1e+21", "5e-324"). What models
// and JavaScript tools read; Boost.JSON writes "4.2E1".

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

namespace libretto::detail {

/// Appends ECMAScript's Number.prototype.toString(d) for a finite `d` (the callers decide
/// what NaN and infinities become).
inline void append_ecma_number(std::string& out, double d) {
    if (d == 0) { // +0 and -0
        out.push_back('0');
        return;
    }
    if (d < 0) {
        out.push_back('-');
        d = -d;
    }
    // The shortest digits that round-trip, as d.ddde±x; ECMAScript picks the same digits.
    char buf[40];
    auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
    const std::size_t e = sci.find('e');
    char digits[20];
    int k = 0;
    for (std::size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits[k++] = sci[i];
    int exp10 = 0;
    std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
    const int n = exp10 + 1; // the decimal point's position after the first n digits
    if (k <= n && n <= 21) {
        out.append(digits, static_cast<std::size_t>(k));
        out.append(static_cast<std::size_t>(n - k), '0');
    } else if (0 < n && n <= 21) {
        out.append(digits, static_cast<std::size_t>(n));
        out.push_back('.');
        out.append(digits + n, static_cast<std::size_t>(k - n));
    } else if (-6 < n && n <= 0) {
        out.append("0.");
        out.append(static_cast<std::size_t>(-n), '0');
        out.append(digits, static_cast<std::size_t>(k));
    } else {
        out.push_back(digits[0]);
        if (k > 1) {
            out.push_back('.');
            out.append(digits + 1, static_cast<std::size_t>(k - 1));
        }
        out.push_back('e');
        out.push_back(n - 1 >= 0 ? '+' : '-');
        auto x = std::to_chars(buf, buf + sizeof buf, n - 1 >= 0 ? n - 1 : 1 - n);
        out.append(buf, x.ptr);
    }
}

} // namespace libretto::detail

#endif
