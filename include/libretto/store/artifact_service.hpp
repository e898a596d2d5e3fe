// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_ARTIFACT_SERVICE_HPP
#define LIBRETTO_STORE_ARTIFACT_SERVICE_HPP

// The artifact_service concept: named, versioned blobs (files an agent writes or reads: a
// report, an image, a CSV) beside the sessions, on the same storage. docs/artifacts.md.
//
// An artifact is named within a session, or within the user when its name begins with
// "user:" (ADK's convention: the same file in every session of that user). Each save makes
// a new version, numbered from 0 per name. A version has a MIME type, a size, a creation
// time and free metadata.
//
// A model of artifact_service is the synchronous core of one back end
// (memory_artifact_service, file_artifact_service, sqlite_artifact_service,
// postgres_artifact_service). Every call returns an error_code and writes, on failure,
// what was wrong to *diag when given. Blobs go in and out in chunks:
//
//   s.artifact_save(key, artifact_source& in, mime_type, metadata, artifact_info& out, diag)
//        reads `in` to its end; out: the new version. errc::oversize past max_artifact_bytes
//        (nothing saved)
//   s.artifact_load(key, std::optional<std::int64_t> version, artifact_sink& out,
//                   std::optional<artifact_info>& info, diag)
//        the latest (or the given) version, chunk by chunk into `out`; info nullopt: none
//   s.artifact_list(app, user, session, std::vector<std::string>& names, diag)
//        the session's names and the user's ("user:..."), sorted
//   s.artifact_versions(key, std::vector<artifact_info>& out, diag)    oldest first
//   s.artifact_delete(key, diag)                                       every version; absent: no error
//   S::blocking                                                        true: calls wait for files or servers
//
// any_artifact_service (any_artifact_service.hpp) erases the type, adds whole-blob
// convenience (a string in, a string out) and the asynchronous operations.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// Where an artifact lives. A name beginning with "user:" is the user's (session_id is
/// then ignored); any other name is the session's.
struct artifact_key {
    std::string app_name{};
    std::string user_id{};
    std::string session_id{};
    std::string name{};

    artifact_key() = default;
    artifact_key(std::string app, std::string user, std::string session, std::string name)
        : app_name(std::move(app)), user_id(std::move(user)), session_id(std::move(session)), name(std::move(name)) {}

    /// True for a "user:" name.
    bool user_scoped() const noexcept { return std::string_view(name).starts_with("user:"); }
};

/// One version of an artifact, without its bytes.
struct artifact_info {
    std::string name{};
    std::int64_t version = 0;
    std::string mime_type{};
    std::uint64_t size = 0;
    double created_at = 0; ///< seconds since the Unix epoch
    json::object metadata{};
    friend bool operator==(const artifact_info&, const artifact_info&) = default;
};

/// One version of an artifact with its bytes.
struct artifact {
    artifact_info info{};
    std::string data{};
};

/// Where a save reads from: fills up to `n` bytes at `buf`, returns how many (0: the end).
/// Throwing aborts the save (nothing saved).
using artifact_source = std::function<std::size_t(char* buf, std::size_t n)>;
/// Where a load writes to: each chunk in order.
using artifact_sink = std::function<void(std::string_view chunk)>;

/// The chunk size back ends read and write with.
inline constexpr std::size_t artifact_chunk_bytes = 256 * 1024;

/// Longest artifact name, in bytes (the "user:" prefix included).
inline constexpr std::size_t max_artifact_name_length = 255;

/// Why `name` cannot name an artifact ("" if it can): validate_id's rules (UTF-8, no '/',
/// '\\', '..' or control characters: a name becomes a file name) with up to 255 bytes, and
/// something after a "user:" prefix.
inline std::string artifact_name_problem(std::string_view name) {
    if (name == "user:") return "has nothing after 'user:'";
    return detail::name_problem(name, max_artifact_name_length);
}

namespace detail {
/// The metadata key of the empty version a rewind saves for an artifact that did not exist
/// before the rewound invocation (runner/rewind.hpp).
inline constexpr std::string_view absent_artifact_key = "libretto:absent";
} // namespace detail

/// True for the empty version a rewind saves for an artifact that did not exist before the
/// rewound invocation: callback_context's and the artifact tools' loads report it missing.
inline bool is_absent_artifact(const artifact_info& info) noexcept {
    const auto* v = info.metadata.if_contains(detail::absent_artifact_key);
    return v && v->is_bool() && v->get_bool();
}

/// The artifact completion signatures (any_artifact_service).
using artifact_save_signature = void(boost::system::error_code, artifact_info);
using artifact_load_signature = void(boost::system::error_code, std::optional<artifact>);
using artifact_load_to_signature = void(boost::system::error_code, std::optional<artifact_info>);
using artifact_list_signature = void(boost::system::error_code, std::vector<std::string>);
using artifact_versions_signature = void(boost::system::error_code, std::vector<artifact_info>);
using artifact_delete_signature = void(boost::system::error_code);

/// The models of artifact_service (see the top of this header).
template <class S>
concept artifact_service = requires(S& s, const artifact_key& key, artifact_source& in, artifact_sink& out,
                                    const json::object& metadata, artifact_info& info,
                                    std::optional<artifact_info>& found, std::optional<std::int64_t> version,
                                    std::vector<std::string>& names, std::vector<artifact_info>& infos,
                                    const std::string& id, diagnostics* diag) {
    { S::blocking } -> std::convertible_to<bool>;
    { s.artifact_save(key, in, std::string_view{}, metadata, info, diag) } -> std::same_as<boost::system::error_code>;
    { s.artifact_load(key, version, out, found, diag) } -> std::same_as<boost::system::error_code>;
    { s.artifact_list(id, id, id, names, diag) } -> std::same_as<boost::system::error_code>;
    { s.artifact_versions(key, infos, diag) } -> std::same_as<boost::system::error_code>;
    { s.artifact_delete(key, diag) } -> std::same_as<boost::system::error_code>;
};

} // namespace libretto

#endif
