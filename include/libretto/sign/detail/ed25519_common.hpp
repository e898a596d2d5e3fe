// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_DETAIL_ED25519_COMMON_HPP
#define LIBRETTO_SIGN_DETAIL_ED25519_COMMON_HPP

// What the Ed25519 back ends (ed25519_openssl.hpp, ed25519_sodium.hpp) share: the raw
// types, the base64url text of a signature, errors, and the key-file helpers. Both back
// ends write and read exactly the same bytes, so their signatures are interchangeable.

#include <libretto/detail/base64.hpp>
#include <libretto/sign/ed25519_types.hpp>
#include <libretto/error.hpp>

#include <boost/system/system_error.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace libretto {

namespace detail {

[[noreturn]] inline void ed25519_fail(errc code, const std::string& what) {
    throw boost::system::system_error(make_error_code(code), "ed25519: " + what);
}

/// Appends `bytes` as unpadded base64url (RFC 4648 §5).
inline void base64url_append(std::string& out, std::span<const std::uint8_t> bytes) {
    append_base64(out, bytes, true, false);
}

/// Decodes base64url (padded or not) into exactly out.size() bytes; false if the text has
/// another length, a character outside the alphabet, or stray bits after the last byte.
inline bool base64url_decode(std::string_view in, std::span<std::uint8_t> out) noexcept {
    while (!in.empty() && in.back() == '=') in.remove_suffix(1);
    if (in.size() != (out.size() * 4 + 2) / 3) return false;
    std::uint32_t acc = 0;
    int bits = 0;
    std::size_t k = 0;
    for (char c : in) {
        int v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '-') v = 62;
        else if (c == '_') v = 63;
        else return false;
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (k == out.size()) return false;
            out[k++] = static_cast<std::uint8_t>((acc >> bits) & 0xff);
        }
    }
    return k == out.size() && (acc & ((1u << bits) - 1)) == 0; // no stray bits: one text per value
}

/// The first `limit` bytes of `path`; errc::not_found if it cannot be opened.
inline std::string read_key_file(const std::filesystem::path& path, std::size_t limit) {
    std::ifstream in(path, std::ios::binary);
    if (!in) ed25519_fail(errc::not_found, "cannot open '" + path.string() + "'");
    std::string data;
    data.resize(limit);
    in.read(data.data(), static_cast<std::streamsize>(limit));
    data.resize(static_cast<std::size_t>(in.gcount()));
    return data;
}

/// Writes a secret to `path` with mode 0600 (also when the file existed with a wider mode).
inline void write_private_file(const std::filesystem::path& path, std::string_view data) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) ed25519_fail(errc::io_error, "cannot create '" + path.string() + "'");
    ::fchmod(fd, 0600);
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n <= 0) {
            ::close(fd);
            ed25519_fail(errc::io_error, "cannot write '" + path.string() + "'");
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) ed25519_fail(errc::io_error, "cannot write '" + path.string() + "'");
}

/// A 32-byte seed file's contents; errc::invalid_argument naming the size otherwise.
inline ed25519_seed read_seed_file(const std::filesystem::path& path) {
    const std::string bytes = read_key_file(path, 33);
    if (bytes.size() != 32)
        ed25519_fail(errc::invalid_argument, "'" + path.string() + "' holds " + std::to_string(bytes.size()) +
                                                 (bytes.size() > 32 ? "+" : "") + " bytes, not a 32-byte Ed25519 seed");
    ed25519_seed s;
    for (std::size_t i = 0; i < 32; ++i) s[i] = static_cast<std::uint8_t>(bytes[i]);
    return s;
}

} // namespace detail
} // namespace libretto

#endif
