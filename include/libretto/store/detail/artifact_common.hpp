// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_ARTIFACT_COMMON_HPP
#define LIBRETTO_STORE_DETAIL_ARTIFACT_COMMON_HPP

// What every artifact_service back end shares: the checks of a key with their messages,
// the scope a key names, the size limit, an info to and from JSON.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_read.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/json_error.hpp>
#include <libretto/store/artifact_service.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <string>
#include <string_view>

namespace libretto::detail {

/// errc::invalid_argument naming the bad part of `k`, or success.
inline boost::system::error_code check_artifact_key(const artifact_key& k, diagnostics* diag) {
    auto bad = [&](std::string what, const std::string& problem) {
        if (diag) diag->assign("artifact '" + k.name.substr(0, 80) + "': the " + what + " " + problem);
        return boost::system::error_code(errc::invalid_argument);
    };
    if (auto p = id_problem(k.app_name); !p.empty()) return bad("app id", p);
    if (auto p = id_problem(k.user_id); !p.empty()) return bad("user id", p);
    if (!k.user_scoped())
        if (auto p = id_problem(k.session_id); !p.empty()) return bad("session id", p);
    if (auto p = artifact_name_problem(k.name); !p.empty()) return bad("name", p);
    return {};
}

/// The session part of the key's scope: "" for a "user:" name.
inline std::string_view artifact_scope(const artifact_key& k) noexcept {
    return k.user_scoped() ? std::string_view{} : std::string_view(k.session_id);
}

/// errc::oversize for a save past `limit` (0: none), naming the artifact.
inline boost::system::error_code artifact_too_large(const artifact_key& k, std::uint64_t limit, diagnostics* diag) {
    if (diag)
        diag->assign("artifact '" + k.name + "' is larger than max_artifact_bytes (" + std::to_string(limit) +
                     " bytes): nothing saved");
    return errc::oversize;
}

/// errc::not_found for a version that does not exist.
inline boost::system::error_code no_such_version(const artifact_key& k, std::int64_t v, diagnostics* diag) {
    if (diag) diag->assign("artifact '" + k.name + "' has no version " + std::to_string(v));
    return errc::not_found;
}

/// What a save gets besides its bytes, checked: a MIME type of at most 255 bytes of UTF-8
/// without control characters (C0, DEL, C1: no header injection, no NUL that PostgreSQL's
/// C-string parameters would cut the type at), and metadata that every back end stores as
/// JSON and reads back (json_limits.hpp; the file service keeps it as a member of the
/// version's info, at level 2).
inline boost::system::error_code check_artifact_info(const artifact_key& k, std::string_view mime,
                                                     const json::object& metadata, diagnostics* diag) {
    auto bad_mime = [&](const std::string& why) {
        if (diag) diag->assign("artifact '" + k.name + "': the MIME type " + why + ": nothing saved");
        return boost::system::error_code(errc::invalid_argument);
    };
    if (mime.size() > 255) return bad_mime("is " + std::to_string(mime.size()) + " bytes long (at most 255)");
    if (auto f = find_invalid_utf8(mime)) return bad_mime(f->message().substr(f->message().find("is not")));
    for (std::size_t i = 0; i < mime.size(); ++i) {
        const auto c = static_cast<unsigned char>(mime[i]);
        // C1 controls (U+0080-U+009F) are 0xC2 0x80-0x9F in UTF-8.
        const bool c1 = c == 0xC2 && i + 1 < mime.size() && static_cast<unsigned char>(mime[i + 1]) < 0xA0;
        if (c < 0x20 || c == 0x7f || c1) {
            static constexpr char hex[] = "0123456789abcdef";
            const unsigned code = c1 ? static_cast<unsigned char>(mime[i + 1]) : c;
            return bad_mime(std::string("contains a control character (") + (c1 ? "U+00" : "0x") + hex[code >> 4] +
                            hex[code & 15] + " at offset " + std::to_string(i) + ")");
        }
    }
    if (auto f = check_json_object(metadata, 1)) {
        if (diag) diag->assign("artifact '" + k.name + "': metadata: " + f->message() + ": nothing saved");
        return errc::invalid_argument;
    }
    return {};
}

inline json::object artifact_info_to_json(const artifact_info& i) {
    json::object o;
    o["name"] = i.name;
    o["version"] = i.version;
    o["mime_type"] = i.mime_type;
    o["size"] = i.size;
    o["created_at"] = i.created_at;
    if (!i.metadata.empty()) o["metadata"] = i.metadata;
    return o;
}

inline bool read_artifact_info(const json::value& v, artifact_info& i, decode_error& err) {
    const json::object* o = as_object(v, err);
    if (!o) return false;
    std::int64_t size = 0;
    if (!(read_member(*o, "name", i.name, err, true) && read_member(*o, "version", i.version, err, true) &&
          read_member(*o, "mime_type", i.mime_type, err) && read_member(*o, "size", size, err, true) &&
          read_member(*o, "created_at", i.created_at, err) && read_member(*o, "metadata", i.metadata, err)))
        return false;
    if (size < 0) return fail(err, errc::invalid_argument, "a negative size") && false;
    i.size = static_cast<std::uint64_t>(size);
    return true;
}

/// Fills `buf` from the source (which may hand out less than asked); less than its size:
/// the source is at its end (it is not called again after returning 0).
inline std::size_t fill_chunk(artifact_source& in, std::string& buf) {
    std::size_t n = 0;
    while (n < buf.size()) {
        const std::size_t got = in(buf.data() + n, buf.size() - n);
        if (got == 0) break;
        n += std::min(got, buf.size() - n);
    }
    return n;
}

/// Reads `in` into `out`, chunk by chunk, up to `limit` bytes (0: none): false when it went
/// past the limit.
inline bool read_source(artifact_source& in, std::string& out, std::uint64_t limit) {
    char buf[16 * 1024];
    for (;;) {
        const std::size_t n = in(buf, sizeof buf);
        if (n == 0) return true;
        out.append(buf, n);
        if (limit != 0 && out.size() > limit) return false;
    }
}

} // namespace libretto::detail

#endif
