// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SQLITE_OPERATIONS_HPP
#define LIBRETTO_STORE_DETAIL_SQLITE_OPERATIONS_HPP

// The bodies of sqlite_core's store operations (create, get, list, remove, append), out of
// line as Beast's impl/ headers are, so that sqlite_core.hpp shows the class at a glance.

#include <libretto/store/detail/sqlite_core.hpp>

namespace libretto::detail {

inline sqlite_core::result sqlite_core::create_impl(create_options o, session& out) {
    if (auto ec = validate_id(o.app_name)) return {ec, "app name " + id_problem(o.app_name)};
    if (auto ec = validate_id(o.user_id)) return {ec, "user id " + id_problem(o.user_id)};
    if (o.session_id.empty()) o.session_id = event::new_id();
    if (auto ec = validate_id(o.session_id)) return {ec, "session id " + id_problem(o.session_id)};
    if (auto why = state_problem(o.state); !why.empty()) return {errc::invalid_argument, why};
    const session_key k{std::move(o.app_name), std::move(o.user_id), std::move(o.session_id)};
    auto routed = route_delta(o.state);
    json::object own;
    for (const auto& kv : routed.session)
        if (!kv.value().is_null()) own[kv.key()] = kv.value();
    const std::string state_text = json::serialize(own);
    const double now = event::now();

    std::lock_guard lock(mutex_);
    sqlite::transaction tx(begin_immediate_, commit_, rollback_);
    if (auto r = begin(tx); r.ec) return r;
    // The primary key decides: no read-then-insert race between connections.
    int rc = bind_key(insert_session_, k).bind(4, state_text).bind(5, now).run();
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
        return {errc::already_exists, "session " + name_of(k) + " already exists"};
    if (rc != SQLITE_OK) return sql_error(rc, "cannot insert session " + name_of(k));
    if (auto r = write_shared(k, routed.app, routed.user); r.ec) return r;
    json::object app, user;
    if (auto r = load_app_state(k.app_name, app); r.ec) return r;
    if (auto r = load_user_state(k.app_name, k.user_id, user); r.ec) return r;
    if (auto r = commit(tx); r.ec) return r;

    out = session{};
    out.id = k.session_id;
    out.app_name = k.app_name;
    out.user_id = k.user_id;
    out.state = merged_state(own, &app, &user);
    out.last_update_time = now;
    out.last_sequence = 0;
    return {};
}

inline sqlite_core::result sqlite_core::get_impl(const session_key& k, const get_options& o, std::optional<session>& out) {
    out.reset();
    if (auto ec = validate_key(k)) return {ec, key_problem(k)};
    if (auto why = get_options_problem(o); !why.empty()) return {errc::invalid_argument, why};
    std::lock_guard lock(mutex_);
    // One read transaction: the session row, shared state and events are one snapshot.
    sqlite::transaction tx(begin_, commit_, rollback_);
    if (auto r = begin(tx); r.ec) return r;
    json::object own;
    session s;
    {
        sqlite::resetter reset(select_session_);
        int rc = bind_key(select_session_, k).bind(4, std::int64_t{o.with_initial_state}).step();
        if (rc == SQLITE_DONE) return {};
        if (rc != SQLITE_ROW) return sql_error(rc, "cannot read session " + name_of(k));
        if (auto r = parse_state(select_session_.text(0), own, name_of(k)); r.ec) return r;
        s.last_update_time = select_session_.real(1);
        s.last_sequence = select_session_.int64(2);
        // NULL: a session created before schema version 4, none recorded (empty).
        if (o.with_initial_state && !select_session_.is_null(3))
            if (auto r = parse_state(select_session_.text(3), s.initial_state, name_of(k) + " (initial state)"); r.ec)
                return r;
    }
    json::object app, user;
    if (auto r = load_app_state(k.app_name, app); r.ec) return r;
    if (auto r = load_user_state(k.app_name, k.user_id, user); r.ec) return r;
    shown_compactions shown;
    if (o.context_only && !(o.num_recent_events && *o.num_recent_events == 0)) {
        sqlite::resetter reset(select_compactions_);
        bind_key(select_compactions_, k);
        int rc;
        while ((rc = select_compactions_.step()) == SQLITE_ROW)
            shown.add(compaction_entry{select_compactions_.int64(0), select_compactions_.int64(1),
                                       select_compactions_.int64(2)});
        if (rc != SQLITE_DONE) return sql_error(rc, "cannot read the compactions of session " + name_of(k));
    }
    if (!shown.empty()) {
        // context_only: the ranges the shown compactions leave out, each an index range.
        const auto ranges = clip_ranges(shown.load_ranges(o.with_newest_range), o.from_sequence.value_or(1));
        for (const auto& r : ranges) {
            if (r.first > s.last_sequence) break;
            sqlite::resetter reset(select_range_);
            bind_key(select_range_, k).bind(4, r.first).bind(5, std::min(r.last, s.last_sequence));
            int rc;
            while ((rc = select_range_.step()) == SQLITE_ROW) {
                const std::int64_t seq = select_range_.int64(0);
                auto e = parse_event(select_range_.text(1));
                if (!e)
                    return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                    std::to_string(seq) + " is corrupt: " + e.error().message()};
                if (e->sequence != seq)
                    return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                    std::to_string(seq) + " says it has sequence " +
                                                    std::to_string(e->sequence)};
                if (o.from_timestamp && e->timestamp < *o.from_timestamp) continue;
                s.events.push_back(std::move(*e));
            }
            if (rc != SQLITE_DONE) return sql_error(rc, "cannot read the events of session " + name_of(k));
        }
        if (o.num_recent_events && s.events.size() > *o.num_recent_events)
            s.events.erase(s.events.begin(),
                           s.events.begin() + static_cast<std::ptrdiff_t>(s.events.size() - *o.num_recent_events));
    } else if (!(o.num_recent_events && *o.num_recent_events == 0)) {
        std::int64_t from = o.from_sequence.value_or(std::numeric_limits<std::int64_t>::min());
        std::int64_t limit = -1;
        if (o.num_recent_events)
            limit = static_cast<std::int64_t>(
                std::min<std::size_t>(*o.num_recent_events, std::numeric_limits<std::int64_t>::max()));
        sqlite::resetter reset(select_events_);
        bind_key(select_events_, k).bind(4, from).bind(6, limit);
        if (o.from_timestamp) select_events_.bind(5, *o.from_timestamp);
        else select_events_.bind_null(5);
        int rc;
        while ((rc = select_events_.step()) == SQLITE_ROW) {
            const std::int64_t seq = select_events_.int64(0);
            auto e = parse_event(select_events_.text(1));
            if (!e)
                return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " + std::to_string(seq) +
                                                " is corrupt: " + e.error().message()};
            if (e->sequence != seq)
                return {errc::corrupt_data, "session " + name_of(k) + ": event at sequence " + std::to_string(seq) +
                                                " says it has sequence " + std::to_string(e->sequence)};
            s.events.push_back(std::move(*e));
        }
        if (rc != SQLITE_DONE) return sql_error(rc, "cannot read the events of session " + name_of(k));
        s.events.reverse();
    }
    if (auto r = commit(tx); r.ec) return r;
    s.id = k.session_id;
    s.app_name = k.app_name;
    s.user_id = k.user_id;
    s.state = merged_state(own, &app, &user);
    out = std::move(s);
    return {};
}

inline sqlite_core::result sqlite_core::list_impl(const list_options& o, list_page& out) {
    out = {};
    if (auto ec = validate_id(o.app_name)) return {ec, "app name " + id_problem(o.app_name)};
    if (o.user_id)
        if (auto ec = validate_id(*o.user_id)) return {ec, "user id " + id_problem(*o.user_id)};
    if (o.page_size == 0 || o.page_size > 1000) return {errc::invalid_argument, "page_size must be 1..1000"};
    page_cursor cursor{std::numeric_limits<double>::infinity(), {}};
    if (!o.page_token.empty()) {
        auto c = parse_page_token(o.page_token);
        if (!c) return {c.error(), "invalid page token"};
        cursor = std::move(*c);
    }
    std::lock_guard lock(mutex_);
    sqlite::transaction tx(begin_, commit_, rollback_);
    if (auto r = begin(tx); r.ec) return r;
    struct row {
        std::string user, id, state;
        double last_update;
        std::int64_t last_sequence;
    };
    std::vector<row> rows;
    {
        auto& q = o.user_id ? list_user_ : list_app_;
        sqlite::resetter reset(q);
        q.bind(1, o.app_name).bind(2, cursor.last_update).bind(3, cursor.id);
        q.bind(4, static_cast<std::int64_t>(o.page_size) + 1);
        if (o.user_id) q.bind(5, *o.user_id);
        q.bind(6, cursor.user);
        int rc;
        while ((rc = q.step()) == SQLITE_ROW)
            rows.push_back({std::string(q.text(0)), std::string(q.text(1)), std::string(q.text(2)), q.real(3),
                            q.int64(4)});
        if (rc != SQLITE_DONE) return sql_error(rc, "cannot list the sessions of '" + o.app_name + "'");
    }
    const std::size_t n = std::min(rows.size(), o.page_size);
    json::object app;
    std::map<std::string, json::object, std::less<>> users;
    if (n > 0)
        if (auto r = load_app_state(o.app_name, app); r.ec) return r;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& w = rows[i];
        auto it = users.find(w.user);
        if (it == users.end()) {
            it = users.emplace(w.user, json::object{}).first;
            if (auto r = load_user_state(o.app_name, w.user, it->second); r.ec) return r;
        }
        const session_key k{o.app_name, w.user, w.id};
        json::object own;
        if (auto r = parse_state(w.state, own, name_of(k)); r.ec) return r;
        session s;
        s.id = w.id;
        s.app_name = o.app_name;
        s.user_id = w.user;
        s.state = merged_state(own, &app, &it->second);
        s.last_update_time = w.last_update;
        s.last_sequence = w.last_sequence;
        out.sessions.push_back(std::move(s));
    }
    if (auto r = commit(tx); r.ec) return r;
    if (rows.size() > n) out.next_page_token = make_page_token(rows[n - 1].last_update, rows[n - 1].user, rows[n - 1].id);
    return {};
}

inline sqlite_core::result sqlite_core::remove_impl(const session_key& k) {
    if (auto ec = validate_key(k)) return {ec, key_problem(k)};
    std::lock_guard lock(mutex_);
    // One statement is one transaction; ON DELETE CASCADE removes the events with it.
    int rc = bind_key(delete_session_, k).run();
    if ((rc & 0xff) == SQLITE_BUSY)
        return {errc::busy, "the database stayed locked by another connection beyond busy_timeout"};
    if (rc != SQLITE_OK) return sql_error(rc, "cannot delete session " + name_of(k));
    return {};
}

inline sqlite_core::result sqlite_core::append_impl(const append_target& t, prepared_batch batch, append_result& out) {
    out = {};
    if (batch.rows.empty()) return {};
    const auto& rows = batch.rows;
    const auto& session_delta = batch.session;
    out = std::move(batch.result);

    std::lock_guard lock(mutex_);
    sqlite::transaction tx(begin_immediate_, commit_, rollback_);
    if (auto r = begin(tx); r.ec) {
        out = {};
        return r;
    }
    auto fail = [&](result r) {
        out = {};
        return r;
    };
    // The optimistic concurrency check, under the write lock.
    std::optional<std::string> new_state;
    {
        auto& q = session_delta.empty() ? select_revision_ : select_revision_state_;
        sqlite::resetter reset(q);
        int rc = bind_key(q, t.key).step();
        if (rc == SQLITE_DONE) return fail({errc::not_found, "session " + name_of(t.key) + " does not exist"});
        if (rc != SQLITE_ROW) return fail(sql_error(rc, "cannot read session " + name_of(t.key)));
        const std::int64_t stored = q.int64(0);
        if (stored != t.last_sequence)
            return fail({errc::stale_session, "session " + name_of(t.key) + " is at sequence " +
                                                  std::to_string(stored) + ", the caller's copy at " +
                                                  std::to_string(t.last_sequence)});
        if (!session_delta.empty()) {
            json::object own;
            if (auto r = parse_state(q.text(1), own, name_of(t.key)); r.ec) return fail(r);
            apply_delta(own, session_delta);
            new_state = json::serialize(own);
        }
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const event& e = out.events[i];
        int rc = bind_key(insert_event_, t.key).bind(4, e.sequence).bind(5, e.timestamp).bind(6, rows[i]).run();
        if (rc != SQLITE_OK)
            return fail(sql_error(rc, "cannot insert event " + std::to_string(e.sequence) + " of session " +
                                          name_of(t.key)));
        if (const auto& c = e.actions.compaction) { // checked by prepare_batch
            rc = bind_key(prune_compactions_, t.key).bind(4, c->first_sequence).bind(5, c->last_sequence).run();
            if (rc == SQLITE_OK)
                rc = bind_key(insert_compaction_, t.key)
                         .bind(4, e.sequence)
                         .bind(5, c->first_sequence)
                         .bind(6, c->last_sequence)
                         .run();
            if (rc != SQLITE_OK)
                return fail(sql_error(rc, "cannot record the compaction of event " + std::to_string(e.sequence) +
                                              " of session " + name_of(t.key)));
        }
    }
    if (auto r = write_shared(t.key, batch.app, batch.user); r.ec) return fail(r);
    bind_key(update_session_, t.key).bind(4, batch.last_sequence).bind(5, batch.last_update).bind(6, batch.compaction_first);
    if (new_state) update_session_.bind(7, *new_state);
    else update_session_.bind_null(7);
    if (int rc = update_session_.run(); rc != SQLITE_OK)
        return fail(sql_error(rc, "cannot update session " + name_of(t.key)));
    if (auto r = commit(tx); r.ec) return fail(r);
    out.last_sequence = batch.last_sequence;
    return {};
}

} // namespace libretto::detail

#endif
