// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_IN_MEMORY_MEMORY_SERVICE_HPP
#define LIBRETTO_STORE_IN_MEMORY_MEMORY_SERVICE_HPP

// in_memory_memory_service: the memory service in memory (tests, small programs). A search
// ranks an entry by how many of the query's words it contains (each word once), the newest
// first among equals; entries with none are not returned. Words are detail::memory_words:
// split at ASCII punctuation and at common Unicode spaces and punctuation (U+00A0, ’, «»,
// U+3000, ...), lower case for ASCII, Latin-1, Latin Extended-A, basic Greek and Cyrillic;
// other letters as written (docs/memory.md compares the back ends). Copies share their
// entries; every call is thread-safe.

#include <libretto/store/detail/memory_common.hpp>
#include <libretto/store/memory_service.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace libretto {

class in_memory_memory_service {
public:
    static constexpr bool blocking = false;

    in_memory_memory_service() : data_(std::make_shared<data>()) {}

    boost::system::error_code memory_add(const std::string& app, const std::string& user, const std::string& session,
                                         event_span events, std::size_t& added, diagnostics* diag = nullptr) {
        added = 0;
        if (auto ec = detail::check_memory_ids(app, user, session, diag)) return ec;
        // Every entry checked, and its words found, before any is stored.
        std::vector<memory_entry> entries;
        if (auto ec = detail::memory_entries_of(events, session, entries, diag)) return ec;
        if (entries.empty()) return {};
        std::vector<std::set<std::string>> words;
        for (const auto& m : entries) {
            auto w = detail::memory_words(m.text);
            words.emplace_back(w.begin(), w.end());
        }
        std::lock_guard lock(data_->mutex);
        auto& mine = data_->users[{app, user}];
        for (std::size_t i = 0; i < entries.size(); ++i) {
            if (!mine.seen.insert({session, entries[i].event_id}).second) continue;
            mine.entries.push_back({std::move(entries[i]), std::move(words[i])});
            ++added;
        }
        return {};
    }

    boost::system::error_code memory_search(const memory_query& q, std::vector<memory_entry>& out,
                                            diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_memory_query(q, diag)) return ec;
        const auto qw = detail::memory_words(q.text);
        const std::set<std::string> wanted(qw.begin(), qw.end());
        std::lock_guard lock(data_->mutex);
        auto it = data_->users.find({q.app_name, q.user_id});
        if (it == data_->users.end()) return {};
        for (const auto& s : it->second.entries) {
            std::size_t hits = 0;
            for (const auto& w : wanted) hits += s.words.count(w);
            if (hits == 0) continue;
            out.push_back(s.entry);
            out.back().score = static_cast<double>(hits);
        }
        std::stable_sort(out.begin(), out.end(), [](const memory_entry& a, const memory_entry& b) {
            if (a.score != b.score) return a.score > b.score;
            return a.timestamp > b.timestamp;
        });
        if (out.size() > q.limit) out.resize(q.limit);
        return {};
    }

    boost::system::error_code memory_erase_session(const std::string& app, const std::string& user,
                                                   const std::string& session, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_memory_ids(app, user, session, diag)) return ec;
        std::lock_guard lock(data_->mutex);
        auto it = data_->users.find({app, user});
        if (it == data_->users.end()) return {};
        std::erase_if(it->second.entries, [&](const stored& s) { return s.entry.session_id == session; });
        std::erase_if(it->second.seen, [&](const auto& k) { return k.first == session; });
        return {};
    }

private:
    struct stored {
        memory_entry entry;
        std::set<std::string> words;
    };
    struct user_memory {
        std::vector<stored> entries;
        std::set<std::pair<std::string, std::string>> seen; // (session, event id)
    };
    struct data {
        mutable std::mutex mutex;
        std::map<std::pair<std::string, std::string>, user_memory> users; // (app, user)
    };
    std::shared_ptr<data> data_;
};

static_assert(memory_service<in_memory_memory_service>);

} // namespace libretto

#endif
