// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_SQLITE_MEMORY_SERVICE_HPP
#define LIBRETTO_STORE_SQLITE_MEMORY_SERVICE_HPP

// sqlite_memory_service: the memory service (memory_service.hpp) in an SQLite database
// file, usually the file of the sqlite_store whose sessions it remembers (one file, one
// backup). Full-text search by SQLite's FTS5, ranked by bm25. Needs the libretto::sqlite
// CMake component and an SQLite built with FTS5 (the default of the amalgamation, Debian's
// and Conan Center's packages).
//
//   lb::sqlite_memory_service memory{{.path = "sessions.db"}};
//   lb::any_memory_service svc{io.get_executor(), std::move(memory)};
//
// Two tables: libretto_memory_fts, an FTS5 table holding each entry's text (tokenizer
// unicode61 without diacritics removal: words as written, any case), and libretto_memory,
// the entry's other columns under the same rowid, unique per (app, user, session, event):
// an event added twice is one entry. An add is one write transaction (BEGIN IMMEDIATE); an
// erase deletes from both tables in one.
//
// A search is one FTS5 query: the query's words (detail::memory_words), each an FTS5 string
// (so no user text is ever FTS5 syntax), joined by OR; only the rows of the query's app and
// user; best bm25 first (the score is -bm25: higher is better), the newest first among
// equals. bm25's statistics are the whole table's (every user's entries), so a score is
// comparable within one search only.
//
// Each instance has its own connection (WAL mode), used by one thread at a time (a mutex).
// A write waits up to busy_timeout for another connection's write lock, then errc::busy.
// The behaviour is in_memory_memory_service's; what only a file can do wrong: an entry
// whose metadata is not a JSON object is errc::corrupt_data naming its event; SQLite
// failures map as sqlite_store's do.

#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/detail/json_text.hpp>
#include <libretto/event/event.hpp>
#include <libretto/store/detail/memory_common.hpp>
#include <libretto/store/detail/sqlite_db.hpp>
#include <libretto/store/detail/sqlite_service.hpp>
#include <libretto/store/memory_service.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct sqlite_memory_service_options {
    /// The database file; created if missing. The file of a sqlite_store is the intended
    /// place. ":memory:": a private database per instance.
    std::string path{};
    /// How long a write waits for another connection's write lock before errc::busy.
    std::chrono::milliseconds busy_timeout{5000};
};

class sqlite_memory_service {
public:
    static constexpr bool blocking = true;

    /// Opens (creating if needed) the file and the tables. Throws error_with_diagnostics
    /// naming the file: errc::invalid_argument for an empty path, errc::corrupt_data for a
    /// file that is not an SQLite database, errc::busy if another connection held the write
    /// lock beyond busy_timeout, errc::io_error otherwise (an SQLite without FTS5 too).
    explicit sqlite_memory_service(sqlite_memory_service_options o) : s_(std::make_unique<state>()) {
        s_->path = std::move(o.path);
        std::string why;
        if (auto ec = open(o.busy_timeout, why))
            detail::sqlite::throw_open_error("sqlite_memory_service", s_->path, ec, why);
    }

    // Movable (any_memory_service holds it by value), not copyable: one connection each.
    sqlite_memory_service(sqlite_memory_service&&) noexcept = default;
    sqlite_memory_service& operator=(sqlite_memory_service&&) noexcept = default;

    /// The database file.
    const std::string& path() const noexcept { return s_->path; }

    boost::system::error_code memory_add(const std::string& app, const std::string& user, const std::string& session,
                                         event_span events, std::size_t& added, diagnostics* diag = nullptr) {
        added = 0;
        if (auto ec = detail::check_memory_ids(app, user, session, diag)) return ec;
        // The entries, checked, and their metadata's text first: nothing stored of a call
        // with an entry that cannot be, no JSON work under the write lock.
        std::vector<memory_entry> entries;
        if (auto ec = detail::memory_entries_of(events, session, entries, diag)) return ec;
        if (entries.empty()) return {};
        std::vector<std::string> metadata;
        for (const auto& m : entries) metadata.push_back(json::serialize(m.metadata));
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        // All or nothing: the transaction rolls back on every early return.
        detail::sqlite::transaction tx(s.begin_immediate, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK)
            return s.sql_error(rc, "add session '" + session + "': cannot begin", diag);
        std::size_t n = 0;
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const memory_entry& m = entries[i];
            std::int64_t rowid = 0;
            {
                // RETURNING yields the new row's id; an entry already there yields no row.
                detail::sqlite::resetter reset(s.insert_entry);
                s.insert_entry.bind(1, std::string_view(app))
                    .bind(2, std::string_view(user))
                    .bind(3, std::string_view(session))
                    .bind(4, std::string_view(m.event_id))
                    .bind(5, std::string_view(m.author))
                    .bind(6, m.timestamp)
                    .bind(7, std::string_view(metadata[i]));
                const int rc = s.insert_entry.step();
                if (rc == SQLITE_DONE) continue;
                if (rc != SQLITE_ROW) return s.sql_error(rc, "add session '" + session + "'", diag);
                rowid = s.insert_entry.int64(0);
            }
            if (int rc = s.insert_text.bind(1, rowid).bind(2, std::string_view(m.text)).run(); rc != SQLITE_OK)
                return s.sql_error(rc, "add session '" + session + "'", diag);
            ++n;
        }
        if (int rc = tx.commit(); rc != SQLITE_OK)
            return s.sql_error(rc, "add session '" + session + "': cannot commit", diag);
        added = n;
        return {};
    }

    boost::system::error_code memory_search(const memory_query& q, std::vector<memory_entry>& out,
                                            diagnostics* diag = nullptr) const {
        out.clear();
        if (auto ec = detail::check_memory_query(q, diag)) return ec;
        const std::string match = match_of(q.text);
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        auto& stmt = s.search;
        detail::sqlite::resetter reset(stmt);
        stmt.bind(1, std::string_view(match))
            .bind(2, std::string_view(q.app_name))
            .bind(3, std::string_view(q.user_id))
            .bind(4, static_cast<std::int64_t>(q.limit));
        int rc;
        while ((rc = stmt.step()) == SQLITE_ROW) {
            memory_entry m;
            m.session_id = std::string(stmt.text(0));
            m.event_id = std::string(stmt.text(1));
            m.author = std::string(stmt.text(2));
            m.timestamp = stmt.real(3);
            m.text = std::string(stmt.text(5));
            m.score = -stmt.real(6);
            if (auto ec = s.decode_metadata(stmt.text(4), q, m, diag)) {
                out.clear();
                return ec;
            }
            out.push_back(std::move(m));
        }
        if (rc != SQLITE_DONE) {
            out.clear();
            return s.sql_error(rc, "search user '" + q.user_id + "'", diag);
        }
        return {};
    }

    boost::system::error_code memory_erase_session(const std::string& app, const std::string& user,
                                                   const std::string& session, diagnostics* diag = nullptr) {
        if (auto ec = detail::check_memory_ids(app, user, session, diag)) return ec;
        std::lock_guard lock(s_->mutex);
        state& s = *s_;
        const std::string what = "erase session '" + session + "'";
        detail::sqlite::transaction tx(s.begin_immediate, s.commit, s.rollback);
        if (int rc = tx.begin(); rc != SQLITE_OK) return s.sql_error(rc, what + ": cannot begin", diag);
        // The texts first: their rowids are found through the entries.
        for (auto* stmt : {&s.erase_texts, &s.erase_entries}) {
            stmt->bind(1, std::string_view(app)).bind(2, std::string_view(user)).bind(3, std::string_view(session));
            if (int rc = stmt->run(); rc != SQLITE_OK) return s.sql_error(rc, what, diag);
        }
        if (int rc = tx.commit(); rc != SQLITE_OK) return s.sql_error(rc, what + ": cannot commit", diag);
        return {};
    }

private:
    // The FTS5 query of a text: its distinct words, each an FTS5 string ("..." with '"'
    // doubled: never an operator, a column filter or a prefix), joined by OR. A string that
    // the tokenizer splits (a word with non-ASCII punctuation) is a phrase of its parts; one
    // that it leaves without a token matches nothing.
    static std::string match_of(std::string_view text) {
        const auto words = detail::memory_words(text);
        std::string match;
        for (const auto& w : std::set<std::string>(words.begin(), words.end())) {
            if (!match.empty()) match += " OR ";
            match += '"';
            for (char c : w) {
                if (c == '"') match += '"';
                match += c;
            }
            match += '"';
        }
        return match;
    }

    // Everything behind one pointer: the class moves, the connection and its statements
    // stay where they are (a statement points at its connection).
    struct state {
        std::mutex mutex;
        std::string path;
        // Declared first, destroyed last: close_v2 after every statement is finalized.
        detail::sqlite::connection db;
        detail::sqlite::statement begin_immediate, commit, rollback;
        detail::sqlite::statement insert_entry, insert_text, search, erase_texts, erase_entries;

        boost::system::error_code sql_error(int rc, const std::string& what, diagnostics* diag) const {
            if (diag) diag->assign("sqlite_memory_service: '" + path + "': " + what + ": " + db.errmsg());
            return detail::sqlite::error_from(rc);
        }

        // An entry's metadata back to its object; corrupt_data naming the event when it
        // cannot be.
        boost::system::error_code decode_metadata(std::string_view text, const memory_query& q, memory_entry& m,
                                                  diagnostics* diag) const {
            auto corrupt = [&](const std::string& why) {
                if (diag)
                    diag->assign("sqlite_memory_service: '" + path + "': the entry of event '" + m.event_id +
                                 "' (app '" + q.app_name + "', user '" + q.user_id + "', session '" + m.session_id +
                                 "') has metadata that " + why);
                return boost::system::error_code(errc::corrupt_data);
            };
            json::error_code jec;
            std::string why;
            const json::value v = detail::parse_precise(text, jec, {}, &why);
            if (jec) return corrupt("is not valid JSON: " + (why.empty() ? jec.message() : why));
            if (!v.is_object()) return corrupt("is not a JSON object");
            m.metadata = v.get_object();
            return {};
        }
    };

    boost::system::error_code open(std::chrono::milliseconds busy_timeout, std::string& why) {
        state& s = *s_;
        if (auto ec = detail::sqlite::open_wal(s.db, s.path, busy_timeout, why)) return ec;
        // The entries' id is the FTS5 rowid of their text (an alias of the rowid: stable
        // across VACUUM). The unique key is also the index an erase finds a session by.
        if (auto ec = detail::sqlite::create_tables(
                s.db,
                "CREATE TABLE IF NOT EXISTS libretto_memory ("
                " id INTEGER PRIMARY KEY, app_name TEXT NOT NULL, user_id TEXT NOT NULL,"
                " session_id TEXT NOT NULL, event_id TEXT NOT NULL, author TEXT NOT NULL,"
                " timestamp REAL NOT NULL, metadata TEXT NOT NULL,"
                " UNIQUE (app_name, user_id, session_id, event_id));"
                "CREATE VIRTUAL TABLE IF NOT EXISTS libretto_memory_fts"
                " USING fts5(text, tokenize = 'unicode61 remove_diacritics 0');",
                "the memory tables", why))
            return ec;
        const std::string session = " WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3";
        return detail::sqlite::prepare_all(
            s.db,
            {
                {&s.begin_immediate, "BEGIN IMMEDIATE"},
                {&s.commit, "COMMIT"},
                {&s.rollback, "ROLLBACK"},
                {&s.insert_entry, "INSERT INTO libretto_memory (app_name, user_id, session_id, event_id, author,"
                                  " timestamp, metadata) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                                  " ON CONFLICT DO NOTHING RETURNING id"},
                {&s.insert_text, "INSERT INTO libretto_memory_fts (rowid, text) VALUES (?1, ?2)"},
                // The FTS5 table drives the join (MATCH), each match finds its entry by rowid.
                {&s.search, "SELECT m.session_id, m.event_id, m.author, m.timestamp, m.metadata, f.text,"
                            " bm25(libretto_memory_fts) FROM libretto_memory_fts AS f"
                            " JOIN libretto_memory AS m ON m.id = f.rowid"
                            " WHERE libretto_memory_fts MATCH ?1 AND m.app_name = ?2 AND m.user_id = ?3"
                            " ORDER BY bm25(libretto_memory_fts), m.timestamp DESC LIMIT ?4"},
                {&s.erase_texts, "DELETE FROM libretto_memory_fts WHERE rowid IN (SELECT id FROM libretto_memory" +
                                     session + ")"},
                {&s.erase_entries, "DELETE FROM libretto_memory" + session},
            },
            why);
    }

    std::unique_ptr<state> s_;
};

static_assert(memory_service<sqlite_memory_service>);

} // namespace libretto

#endif
