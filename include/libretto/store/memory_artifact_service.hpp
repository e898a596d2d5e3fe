// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_MEMORY_ARTIFACT_SERVICE_HPP
#define LIBRETTO_STORE_MEMORY_ARTIFACT_SERVICE_HPP

// memory_artifact_service: artifacts in memory, beside a memory_store (tests, tools).
// Copies share their artifacts; every call is thread-safe. A load copies the version's bytes
// to the sink in one chunk (they are in memory already).

#include <libretto/event/event.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/store/detail/artifact_common.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace libretto {

struct memory_artifact_service_options {
    /// Largest artifact, in bytes; 0: no limit. A larger save is errc::oversize.
    std::uint64_t max_artifact_bytes = 0;
};

class memory_artifact_service {
public:
    static constexpr bool blocking = false;

    explicit memory_artifact_service(memory_artifact_service_options o = {})
        : data_(std::make_shared<data>()), options_(o) {}

    boost::system::error_code artifact_save(const artifact_key& k, artifact_source& in, std::string_view mime_type,
                                            const json::object& metadata, artifact_info& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        if (auto ec = detail::check_artifact_info(k, mime_type, metadata, diag)) return ec;
        version v;
        if (!detail::read_source(in, v.bytes, options_.max_artifact_bytes))
            return detail::artifact_too_large(k, options_.max_artifact_bytes, diag);
        v.info.name = k.name;
        v.info.mime_type = std::string(mime_type);
        v.info.size = v.bytes.size();
        v.info.created_at = event::now();
        v.info.metadata = metadata;
        std::lock_guard lock(data_->mutex);
        auto& versions = data_->artifacts[slot(k)];
        v.info.version = static_cast<std::int64_t>(versions.size());
        out = v.info;
        versions.push_back(std::make_shared<const version>(std::move(v)));
        return {};
    }

    boost::system::error_code artifact_load(const artifact_key& k, std::optional<std::int64_t> ver, artifact_sink& out,
                                            std::optional<artifact_info>& info, diagnostics* diag = nullptr) const {
        info.reset();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::shared_ptr<const version> v;
        {
            std::lock_guard lock(data_->mutex);
            auto it = data_->artifacts.find(slot(k));
            if (it == data_->artifacts.end() || it->second.empty()) return ver ? detail::no_such_version(k, *ver, diag) : boost::system::error_code{};
            if (!ver) v = it->second.back();
            else if (*ver >= 0 && *ver < static_cast<std::int64_t>(it->second.size())) v = it->second[static_cast<std::size_t>(*ver)];
            else return detail::no_such_version(k, *ver, diag);
        }
        // Outside the lock: the sink may take its time (or call back into the service).
        if (!v->bytes.empty()) out(v->bytes);
        info = v->info;
        return {};
    }

    boost::system::error_code artifact_list(const std::string& app, const std::string& user, const std::string& session,
                                            std::vector<std::string>& names, diagnostics* diag = nullptr) const {
        names.clear();
        if (auto ec = detail::check_artifact_key(artifact_key(app, user, session, "x"), diag)) return ec;
        std::set<std::string> found;
        std::lock_guard lock(data_->mutex);
        for (const auto& scope : {std::string(), session}) {
            const auto prefix = std::make_tuple(app, user, scope);
            for (auto it = data_->artifacts.lower_bound(std::make_tuple(app, user, scope, std::string()));
                 it != data_->artifacts.end() && std::make_tuple(std::get<0>(it->first), std::get<1>(it->first), std::get<2>(it->first)) == prefix;
                 ++it)
                if (!it->second.empty()) found.insert(std::get<3>(it->first));
        }
        names.assign(found.begin(), found.end());
        return {};
    }

    boost::system::error_code artifact_versions(const artifact_key& k, std::vector<artifact_info>& out,
                                                diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        if (auto it = data_->artifacts.find(slot(k)); it != data_->artifacts.end())
            for (const auto& v : it->second) out.push_back(v->info);
        return {};
    }

    boost::system::error_code artifact_delete(const artifact_key& k, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_artifact_key(k, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        data_->artifacts.erase(slot(k));
        return {};
    }

private:
    struct version {
        artifact_info info;
        std::string bytes;
    };
    using key_tuple = std::tuple<std::string, std::string, std::string, std::string>; // app, user, scope, name
    static key_tuple slot(const artifact_key& k) {
        return {k.app_name, k.user_id, std::string(detail::artifact_scope(k)), k.name};
    }
    struct data {
        mutable std::mutex mutex;
        std::map<key_tuple, std::vector<std::shared_ptr<const version>>> artifacts;
    };
    std::shared_ptr<data> data_;
    memory_artifact_service_options options_;
};

static_assert(artifact_service<memory_artifact_service>);

} // namespace libretto

#endif
