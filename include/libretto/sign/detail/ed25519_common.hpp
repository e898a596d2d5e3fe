// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_DETAIL_ED25519_COMMON_HPP
#define LIBRETTO_SIGN_DETAIL_ED25519_COMMON_HPP

// What the Ed25519 back ends (ed25519_openssl.hpp, ed25519_sodium.hpp) share: the raw
// types, the base64url text of a signature, errors, the public keys both refuse, and the
// key-file helpers. Both back ends write and read exactly the same bytes, so their
// signatures are interchangeable.

#include <libretto/detail/base64.hpp>
#include <libretto/sign/did_key.hpp> // ed25519_public_key
#include <libretto/sign/ed25519_types.hpp>
#include <libretto/error.hpp>

#include <boost/system/system_error.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

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

/// Decodes base64url into exactly out.size() bytes, unpadded or with exactly the padding
/// RFC 4648 gives that length ("==" for a signature's 88 characters); false if the text has
/// another length or padding, a character outside the alphabet, or stray bits after the last
/// byte, so one value has one unpadded and one padded text.
inline bool base64url_decode(std::string_view in, std::span<std::uint8_t> out) noexcept {
    const std::size_t unpadded = (out.size() * 4 + 2) / 3;
    const std::size_t padded = (out.size() + 2) / 3 * 4;
    if (in.size() == padded && padded != unpadded) {
        if (in.substr(unpadded).find_first_not_of('=') != std::string_view::npos) return false;
        in = in.substr(0, unpadded);
    }
    if (in.size() != unpadded) return false;
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

/// True if `pub` is no signer's key though it decodes: a point of small order (for which a
/// signature verifies without any secret: with the identity, R = B and S = 1 verify every
/// payload) or an encoding of y that is not below p = 2^255 - 19. libsodium refuses these
/// (ge25519_has_small_order, ge25519_is_canonical); OpenSSL's EVP verification does not, so
/// both back ends ask this first and give the same answer. Data, not arithmetic: the y of
/// every small-order point, compared with the sign bit (x's parity) cleared, so an entry
/// covers both points with that y, or the point with x = 0 and its non-canonical encoding
/// with the sign bit set.
inline bool ed25519_weak_public_key(const ed25519_public_key& pub) noexcept {
    static constexpr std::uint8_t small_order_y[][32] = {
        // y = 0: the two points of order 4
        {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
         0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
        // y = 1: the identity (order 1)
        {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
         0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
        // the two y of the four points of order 8
        {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
         0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
        {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
         0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
        // y = p - 1: the point of order 2
        {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
        // y = p and p + 1: 0 and 1 again, as libsodium lists them (y >= p is refused below too)
        {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
        {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
    };
    for (const auto& y : small_order_y) {
        bool same = (pub[31] & 0x7f) == y[31];
        for (std::size_t i = 0; i < 31 && same; ++i) same = pub[i] == y[i];
        if (same) return true;
    }
    // y >= p (little-endian, sign bit cleared): 0x7f, then 30 bytes of 0xff, then >= 0xed.
    if ((pub[31] & 0x7f) != 0x7f || pub[0] < 0xed) return false;
    for (std::size_t i = 1; i < 31; ++i)
        if (pub[i] != 0xff) return false;
    return true;
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

/// Replaces `path` with `data`, readable by the owner only (0600). A crash, a full disk or a
/// failed write leaves the old file or the new one, never a torn key: the bytes go to a new
/// temporary file next to `path` (created 0600 and exclusively, so never someone else's),
/// which is synced and renamed over `path`; then the directory is synced, so the rename
/// lasts. A symbolic link at `path` is replaced, not followed. Throws system_error(io_error)
/// naming the path and the step that failed; the temporary file is removed.
inline void write_private_file(const std::filesystem::path& path, std::string_view data) {
    static std::atomic<unsigned> counter{0};
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
    const std::filesystem::path tmp = dir / (path.filename().string() + ".tmp-" + std::to_string(::getpid()) +
                                             "-" + std::to_string(counter++));
    auto fail = [&](const std::string& step, int err) {
        ed25519_fail(errc::io_error, step + ": " + std::generic_category().message(err));
    };
    const std::string target = "'" + path.string() + "'";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) fail("cannot create " + target + " (its temporary file '" + tmp.string() + "')", errno);
    struct cleanup { // until the rename: close and remove the temporary file
        int fd;
        const std::filesystem::path& tmp;
        bool armed = true;
        ~cleanup() {
            if (!armed) return;
            if (fd >= 0) ::close(fd);
            ::unlink(tmp.c_str());
        }
    } guard{fd, tmp};
    // The umask may have narrowed the mode further, to one the owner cannot read.
    if (::fchmod(fd, 0600) != 0) fail("cannot set mode 0600 on " + target + "'s temporary file", errno);
    for (std::size_t done = 0; done < data.size();) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("cannot write " + target, n < 0 ? errno : EIO);
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) fail("cannot write " + target + " (fsync)", errno);
    guard.fd = -1;
    if (::close(fd) != 0) fail("cannot write " + target + " (close)", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot replace " + target, errno);
    guard.armed = false;
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) fail("wrote " + target + " but cannot open its directory to sync it", errno);
    const int synced = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    // EINVAL: a file system that cannot sync a directory; there is nothing more to do.
    if (synced != 0 && err != EINVAL) fail("wrote " + target + " but cannot sync its directory", err);
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
