// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_MEMORY_SESSION_INDEX_HPP
#define LIBRETTO_STORE_MEMORY_SESSION_INDEX_HPP

// memory_session_index: the session index in memory, beside a memory_store (tests, tools,
// programs that keep nothing). Copies share their entries; every call is thread-safe and
// O(1) but list (O(entries)).

#include <libretto/store/detail/index_entry.hpp>
#include <libretto/store/session_index.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace libretto {

class memory_session_index {
public:
    static constexpr bool blocking = false;

    memory_session_index() : data_(std::make_shared<data>()) {}

    boost::system::error_code index_get(const std::string& app, const std::string& key,
                                        std::optional<conversation_entry>& out, diagnostics* diag = nullptr) const {
        out.reset();
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        if (auto it = data_->entries.find(slot(app, key)); it != data_->entries.end()) out = it->second;
        return {};
    }

    boost::system::error_code index_put(const conversation_entry& e, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_entry(e, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        data_->entries.insert_or_assign(slot(e.app_name, e.key), e);
        return {};
    }

    boost::system::error_code index_patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                          conversation_entry& out, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        auto it = data_->entries.find(slot(app, key));
        if (it == data_->entries.end()) return detail::not_in_index(app, key, diag);
        conversation_entry changed = it->second; // all or nothing
        if (auto ec = detail::apply_patch(changed, p, diag)) return ec;
        it->second = changed;
        out = std::move(changed);
        return {};
    }

    boost::system::error_code index_list(const conversation_query& q, std::vector<conversation_entry>& out,
                                         diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_query(q, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        for (const auto& [k, e] : data_->entries)
            if (detail::matches(e, q)) out.push_back(e);
        detail::order_and_limit(out, q);
        return {};
    }

    boost::system::error_code index_erase(const std::string& app, const std::string& key, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_index_args(app, key, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        data_->entries.erase(slot(app, key));
        return {};
    }

    boost::system::error_code index_replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                            diagnostics* diag = nullptr) {
        if (auto ec = detail::check_replace(app, entries, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        std::erase_if(data_->entries, [&](const auto& kv) { return kv.second.app_name == app; });
        for (const auto& e : entries) data_->entries.insert_or_assign(slot(app, e.key), e);
        return {};
    }

private:
    // Ids have no control characters, so "\x1f" cannot occur in either part.
    static std::string slot(const std::string& app, const std::string& key) { return app + '\x1f' + key; }

    struct data {
        mutable std::mutex mutex;
        std::unordered_map<std::string, conversation_entry> entries;
    };
    std::shared_ptr<data> data_;
};

static_assert(session_index<memory_session_index>);

} // namespace libretto

#endif
