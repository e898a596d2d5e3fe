// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_FILE_ARTIFACT_SERVICE_HPP
#define LIBRETTO_STORE_FILE_ARTIFACT_SERVICE_HPP

// file_artifact_service: artifacts as files in a directory tree, usually the jsonl_store's
// directory (beside apps/, never inside a session's folder):
//
//   <directory>/artifacts/<app>/<user>/user/<name>/             "user:" names
//   <directory>/artifacts/<app>/<user>/sessions/<session>/<name>/
//       <version>.bin    the bytes
//       <version>.json   the version's info (name, version, MIME type, size, time, metadata)
//       lock             flock: one saver of the name at a time, across processes
//
// A save streams the source into a temp file (chunk by chunk, never the whole blob in
// memory), fsyncs it and renames it to <version>.bin, then writes <version>.json the same way
// and fsyncs the directory: the .json is the commit, so a crash leaves either a whole
// version or none (a .bin without its .json is not a version, and the next save of the name
// replaces it). The next version is one more than the newest .json. A load streams the
// .bin to the sink in artifact_chunk_bytes pieces.

#include <libretto/event/event.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/store/detail/artifact_common.hpp>
#include <libretto/store/detail/jsonl_file.hpp>

#include <boost/json/serialize.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace libretto {

struct file_artifact_service_options {
    /// The root directory (the jsonl_store's, usually); created if missing.
    std::filesystem::path directory = "sessions";
    /// Largest artifact, in bytes; 0: no limit. A larger save is errc::oversize.
    std::uint64_t max_artifact_bytes = 0;
    /// fsync of each version and of its directory before the save completes.
    bool durable = true;
    /// How long a save waits for another saver of the same name before errc::busy.
    std::chrono::milliseconds lock_timeout{10'000};
};

class file_artifact_service {
public:
    static constexpr bool blocking = true;

    explicit file_artifact_service(file_artifact_service_options o) : o_(std::move(o)) {}

    boost::system::error_code artifact_save(const artifact_key& k, artifact_source& in, std::string_view mime_type,
                                            const json::object& metadata, artifact_info& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        if (auto ec = detail::check_artifact_info(k, mime_type, metadata, diag)) return ec;
        const auto dir = name_dir(k);
        if (auto ec = make_directories(k, dir, diag)) return ec;
        detail::jsonl::scoped_flock lock;
        if (auto ec = lock.lock(dir / "lock", o_.lock_timeout)) {
            if (ec == errc::busy) {
                if (diag) diag->assign("artifact '" + k.name + "': another saver held its lock for longer than lock_timeout");
                return ec;
            }
            return io_failure(k, dir / "lock", ec.message(), diag);
        }
        std::vector<std::int64_t> have;
        if (auto ec = scan_versions(dir, have)) return io_failure(k, dir, ec.message(), diag);
        artifact_info info;
        info.name = k.name;
        info.version = have.empty() ? 0 : have.back() + 1;
        info.mime_type = std::string(mime_type);
        info.metadata = metadata;
        info.created_at = event::now();

        // The bytes: streamed into a temp file, then renamed into place.
        const auto bin = dir / (std::to_string(info.version) + ".bin");
        const auto tmp = dir / (".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(info.version));
        boost::system::error_code ec;
        {
            detail::jsonl::file f = detail::jsonl::file::open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, ec);
            if (ec) return io_failure(k, tmp, ec.message(), diag);
            struct remove_on_failure {
                std::filesystem::path p;
                bool keep = false;
                ~remove_on_failure() {
                    if (!keep) ::unlink(p.c_str());
                }
            } cleanup{tmp};
            std::string buf(artifact_chunk_bytes, '\0');
            for (;;) {
                const std::size_t n = in(buf.data(), buf.size()); // may throw: cleanup removes the temp file
                if (n == 0) break;
                info.size += n;
                if (o_.max_artifact_bytes != 0 && info.size > o_.max_artifact_bytes)
                    return detail::artifact_too_large(k, o_.max_artifact_bytes, diag);
                if ((ec = detail::jsonl::write_all(f.get(), std::string_view(buf.data(), n))))
                    return io_failure(k, tmp, ec.message(), diag);
            }
            if (o_.durable && (ec = detail::jsonl::fsync_fd(f.get()))) return io_failure(k, tmp, ec.message(), diag);
            f.close();
            if (::rename(tmp.c_str(), bin.c_str()) != 0) return io_failure(k, bin, std::strerror(errno), diag);
            cleanup.keep = true;
        }
        // The info: the commit.
        const auto meta = dir / (std::to_string(info.version) + ".json");
        if ((ec = detail::jsonl::write_file_atomic(meta, json::serialize(detail::artifact_info_to_json(info)), o_.durable,
                                                    "artifact"))) {
            ::unlink(bin.c_str());
            return io_failure(k, meta, ec.message(), diag);
        }
        out = std::move(info);
        return {};
    }

    boost::system::error_code artifact_load(const artifact_key& k, std::optional<std::int64_t> version, artifact_sink& out,
                                            std::optional<artifact_info>& info, diagnostics* diag = nullptr) const {
        info.reset();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        const auto dir = name_dir(k);
        std::int64_t v = 0;
        if (version) {
            v = *version;
            if (v < 0 || !std::filesystem::exists(dir / (std::to_string(v) + ".json"))) return detail::no_such_version(k, v, diag);
        } else {
            std::vector<std::int64_t> have;
            if (auto ec = scan_versions(dir, have)) return io_failure(k, dir, ec.message(), diag);
            if (have.empty()) return {};
            v = have.back();
        }
        artifact_info i;
        if (auto ec = read_info(k, dir, v, i, diag)) return ec;
        boost::system::error_code ec;
        const auto bin = dir / (std::to_string(v) + ".bin");
        detail::jsonl::file f = detail::jsonl::file::open(bin, O_RDONLY | O_CLOEXEC, ec);
        if (ec) return io_failure(k, bin, ec.message(), diag);
        std::string buf;
        std::uint64_t at = 0;
        while (at < i.size) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(artifact_chunk_bytes, i.size - at));
            if ((ec = detail::jsonl::pread_all(f.get(), at, n, buf))) return io_failure(k, bin, ec.message(), diag);
            if (buf.size() != n) {
                if (diag) diag->assign("artifact '" + k.name + "' version " + std::to_string(v) + ": " + bin.string() +
                                       " is shorter than its info says (" + std::to_string(i.size) + " bytes)");
                return errc::corrupt_data;
            }
            out(buf);
            at += n;
        }
        info = std::move(i);
        return {};
    }

    boost::system::error_code artifact_list(const std::string& app, const std::string& user, const std::string& session,
                                            std::vector<std::string>& names, diagnostics* diag = nullptr) const {
        names.clear();
        if (auto ec = detail::check_artifact_key(artifact_key(app, user, session, "x"), diag)) return ec;
        std::set<std::string> found;
        for (const auto& base : {user_dir(app, user) / "user", user_dir(app, user) / "sessions" / session}) {
            std::error_code fec;
            for (std::filesystem::directory_iterator it(base, fec), end; !fec && it != end; it.increment(fec)) {
                std::vector<std::int64_t> have;
                if (!scan_versions(it->path(), have) && !have.empty()) found.insert(it->path().filename().string());
            }
        }
        names.assign(found.begin(), found.end());
        return {};
    }

    boost::system::error_code artifact_versions(const artifact_key& k, std::vector<artifact_info>& out,
                                                diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        const auto dir = name_dir(k);
        std::vector<std::int64_t> have;
        if (auto ec = scan_versions(dir, have)) return io_failure(k, dir, ec.message(), diag);
        for (std::int64_t v : have) {
            artifact_info i;
            if (auto ec = read_info(k, dir, v, i, diag)) return ec;
            out.push_back(std::move(i));
        }
        return {};
    }

    boost::system::error_code artifact_delete(const artifact_key& k, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        const auto dir = name_dir(k);
        if (!std::filesystem::exists(dir)) return {};
        detail::jsonl::scoped_flock lock;
        if (auto ec = lock.lock(dir / "lock", o_.lock_timeout)) return io_failure(k, dir / "lock", ec.message(), diag);
        // The infos first (a version without its info is no version), then the rest.
        std::vector<std::int64_t> have;
        (void)scan_versions(dir, have);
        for (auto it = have.rbegin(); it != have.rend(); ++it) ::unlink((dir / (std::to_string(*it) + ".json")).c_str());
        std::error_code fec;
        std::filesystem::remove_all(dir, fec);
        if (fec) return io_failure(k, dir, fec.message(), diag);
        return {};
    }

private:
    std::filesystem::path user_dir(const std::string& app, const std::string& user) const {
        return o_.directory / "artifacts" / app / user;
    }
    std::filesystem::path name_dir(const artifact_key& k) const {
        return k.user_scoped() ? user_dir(k.app_name, k.user_id) / "user" / k.name
                               : user_dir(k.app_name, k.user_id) / "sessions" / k.session_id / k.name;
    }

    // Creates `dir` and its missing parents; when durable, fsyncs the parent of each one
    // created, so a first save's directories survive a crash as its files do.
    boost::system::error_code make_directories(const artifact_key& k, const std::filesystem::path& dir,
                                               diagnostics* diag) const {
        std::vector<std::filesystem::path> missing;
        for (auto p = dir; !p.empty() && !std::filesystem::exists(p); p = p.parent_path()) {
            missing.push_back(p);
            if (p == p.parent_path()) break;
        }
        std::error_code fec;
        std::filesystem::create_directories(dir, fec);
        if (fec) return io_failure(k, dir, fec.message(), diag);
        if (o_.durable)
            for (auto it = missing.rbegin(); it != missing.rend(); ++it)
                if (auto ec = detail::jsonl::fsync_dir(it->parent_path().empty() ? "." : it->parent_path()))
                    return io_failure(k, it->parent_path(), ec.message(), diag);
        return {};
    }

    static boost::system::error_code io_failure(const artifact_key& k, const std::filesystem::path& p,
                                                const std::string& why, diagnostics* diag) {
        if (diag) diag->assign("artifact '" + k.name + "': " + p.string() + ": " + why);
        return errc::io_error;
    }

    // The committed versions (those with a <n>.json), in order; a missing directory has none.
    static boost::system::error_code scan_versions(const std::filesystem::path& dir, std::vector<std::int64_t>& out) {
        out.clear();
        std::error_code fec;
        std::filesystem::directory_iterator it(dir, fec);
        if (fec) return fec == std::errc::no_such_file_or_directory ? boost::system::error_code{}
                                                                    : boost::system::error_code(fec.value(), boost::system::generic_category());
        for (std::filesystem::directory_iterator end; it != end; it.increment(fec)) {
            if (fec) return boost::system::error_code(fec.value(), boost::system::generic_category());
            const std::string f = it->path().filename().string();
            if (!f.ends_with(".json")) continue;
            std::int64_t v = 0;
            auto r = std::from_chars(f.data(), f.data() + f.size() - 5, v);
            if (r.ec == std::errc{} && r.ptr == f.data() + f.size() - 5 && v >= 0) out.push_back(v);
        }
        std::sort(out.begin(), out.end());
        return {};
    }

    static boost::system::error_code read_info(const artifact_key& k, const std::filesystem::path& dir, std::int64_t v,
                                               artifact_info& i, diagnostics* diag) {
        const auto meta = dir / (std::to_string(v) + ".json");
        std::string text;
        if (auto ec = detail::jsonl::read_file(meta, text)) return io_failure(k, meta, ec.message(), diag);
        boost::system::error_code pec;
        json::value jv = detail::parse_precise(text, pec, {}); // exact doubles: created_at round-trips
        decode_error err;
        if (pec || !detail::read_artifact_info(jv, i, err) || i.version != v) {
            if (diag)
                diag->assign("artifact '" + k.name + "' version " + std::to_string(v) + ": " + meta.string() + " cannot be read (" +
                             (pec ? pec.message() : err.code ? err.message() : "it names another version") + ")");
            return errc::corrupt_data;
        }
        return {};
    }

    file_artifact_service_options o_;
};

static_assert(artifact_service<file_artifact_service>);

} // namespace libretto

#endif
