// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TESTS_FUZZ_SUPPORT_HPP
#define LIBRETTO_TESTS_FUZZ_SUPPORT_HPP

// What every harness of tests/fuzz/ shares: a property check that aborts (libFuzzer saves
// the input as a crash file), a reader of the input's leading control bytes, and a
// deterministic split of a byte string into chunks chosen by the input.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace fuzz {

/// Printable form of `s` (at most `limit` bytes), for failure messages.
inline std::string shown(std::string_view s, std::size_t limit = 400) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out.push_back(static_cast<char>(c));
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    if (s.size() > limit) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

[[noreturn]] inline void property_failed(const char* file, int line, const char* cond, const std::string& what) {
    std::fprintf(stderr, "\n==== fuzz property failed at %s:%d\n     check: %s\n     %s\n", file, line, cond, what.c_str());
    std::fflush(stderr);
    std::abort();
}

} // namespace fuzz

/// Aborts with `what` (a std::string expression, evaluated only on failure) unless `cond`.
#define FUZZ_CHECK(cond, what)                                                                                      \
    do {                                                                                                            \
        if (!(cond)) ::fuzz::property_failed(__FILE__, __LINE__, #cond, (what));                                    \
    } while (0)

namespace fuzz {

/// Takes control bytes from the front of the input; the rest is the payload.
class input {
public:
    input(const std::uint8_t* data, std::size_t size) : p_(reinterpret_cast<const char*>(data)), n_(size) {}

    /// The next byte, or 0 when none is left.
    std::uint8_t byte() {
        if (n_ == 0) return 0;
        --n_;
        return static_cast<std::uint8_t>(*p_++);
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | (byte() << 8)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(u16() | (static_cast<std::uint32_t>(u16()) << 16)); }
    /// The next `k` bytes (fewer if the input ends).
    std::string_view take(std::size_t k) {
        if (k > n_) k = n_;
        std::string_view s(p_, k);
        p_ += k;
        n_ -= k;
        return s;
    }
    std::string_view rest() { return take(n_); }
    bool empty() const noexcept { return n_ == 0; }
    std::size_t size() const noexcept { return n_; }

private:
    const char* p_;
    std::size_t n_;
};

/// A small deterministic generator (xorshift64*), seeded from the input.
class rng {
public:
    explicit rng(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {
        if (s_ == 0) s_ = 1;
    }
    std::uint64_t next() {
        s_ ^= s_ >> 12;
        s_ ^= s_ << 25;
        s_ ^= s_ >> 27;
        return s_ * 0x2545F4914F6CDD1Dull;
    }
    /// A value in [0, n) (n > 0).
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

private:
    std::uint64_t s_;
};

/// `s` cut into chunks of 0..max_chunk bytes (empty chunks included: a feed of nothing
/// must change nothing), the cut points drawn from `seed`.
inline std::vector<std::string> split(std::string_view s, std::uint64_t seed, std::size_t max_chunk) {
    rng r(seed);
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t k = r.below(max_chunk + 1);
        out.emplace_back(s.substr(i, k));
        i += k < s.size() - i ? k : s.size() - i;
    }
    return out;
}

/// `s` one byte at a time.
inline std::vector<std::string> bytewise(std::string_view s) {
    std::vector<std::string> out;
    out.reserve(s.size());
    for (char c : s) out.emplace_back(1, c);
    return out;
}

} // namespace fuzz

#endif
