// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_PG_OPERATIONS_HPP
#define LIBRETTO_STORE_DETAIL_PG_OPERATIONS_HPP

// postgres_store's operations as coroutines on the pool's strand: each is one statement (a
// server-side function running one transaction), completing with (error_code, results...).

#include <libretto/event/json.hpp>
#include <libretto/store/detail/pg_pool.hpp>
#include <libretto/store/detail/store_batch.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace libretto::detail::pg {

// ---- operations ------------------------------------------------------------------------

template <class = void> // a template: g++ 12 compiles a coroutine only where used (detail/config.hpp)
inline awaitable<std::tuple<error_code>> open_op(pool_ptr p, diagnostics* d) {
    std::string detail;
    std::unique_ptr<detail::pg::connection> c;
    bool reused = false;
    auto ec = co_await acquire(p, c, reused, detail);
    if (ec) co_return failed(d, ec, detail);
    p->release(std::move(c));
    co_return error_code{};
}

template <class = void>
inline awaitable<std::tuple<error_code, session>> create_op(pool_ptr p, diagnostics* d, create_options o) {
    if (auto ec = validate_id(o.app_name)) co_return std::tuple{failed(d, ec, "app name " + id_problem(o.app_name)), session{}};
    if (auto ec = validate_id(o.user_id)) co_return std::tuple{failed(d, ec, "user id " + id_problem(o.user_id)), session{}};
    if (o.session_id.empty()) o.session_id = event::new_id();
    if (auto ec = validate_id(o.session_id)) co_return std::tuple{failed(d, ec, "session id " + id_problem(o.session_id)), session{}};
    if (auto why = detail::state_problem(o.state); !why.empty())
        co_return std::tuple{failed(d, errc::invalid_argument, why), session{}};
    auto routed = detail::route_delta(o.state);
    json::object own;
    for (const auto& kv : routed.session)
        if (!kv.value().is_null()) own[kv.key()] = kv.value();
    const double now = event::now();
    detail::pg::params q;
    q.add(o.app_name).add(o.user_id).add(o.session_id).add(now);
    add_keys_values(q, own);
    add_keys_values(q, routed.app);
    add_keys_values(q, routed.user);
    q.add(json::serialize(own)); // the initial state (get_options::with_initial_state)

    std::vector<detail::pg::result_ptr> res;
    std::string detail;
    auto ec = co_await run(p, p->sql.create, &q, res, detail, false);
    if (ec) co_return std::tuple{failed(d, ec, "create " + o.app_name + "/" + o.user_id + "/" + o.session_id + ": " + detail), session{}};
    json::object app, user;
    const PGresult* r = res.back().get();
    for (int i = 0, n = PQntuples(r); i < n; ++i) {
        json::value v;
        if (parse_json(detail::pg::cell(r, i, 2), v))
            co_return std::tuple{failed(d, errc::corrupt_data, "shared state key '" + std::string(detail::pg::cell(r, i, 1)) +
                                                                   "' holds invalid JSON"),
                                 session{}};
        (detail::pg::cell(r, i, 0) == "2" ? app : user)[detail::pg::cell(r, i, 1)] = std::move(v);
    }
    session out;
    out.id = std::move(o.session_id);
    out.app_name = std::move(o.app_name);
    out.user_id = std::move(o.user_id);
    out.state = detail::merged_state(own, &app, &user);
    out.last_update_time = now;
    out.last_sequence = 0;
    co_return std::tuple{error_code{}, std::move(out)};
}

template <class = void>
inline awaitable<std::tuple<error_code, std::optional<session>>> get_op(pool_ptr p, diagnostics* d, session_key k, get_options o) {
    using result_t = std::tuple<error_code, std::optional<session>>;
    if (auto ec = detail::validate_key(k)) co_return result_t{failed(d, ec, detail::key_problem(k)), std::nullopt};
    if (auto why = detail::get_options_problem(o); !why.empty())
        co_return result_t{failed(d, errc::invalid_argument, why), std::nullopt};
    const bool want_events = !(o.num_recent_events && *o.num_recent_events == 0);
    detail::pg::params q;
    q.add(k.app_name).add(k.user_id).add(k.session_id);
    q.add(o.from_sequence.value_or(std::numeric_limits<std::int64_t>::min()));
    if (o.from_timestamp) q.add(*o.from_timestamp);
    else q.add_null();
    if (o.num_recent_events)
        q.add(static_cast<std::int64_t>(
            std::min<std::size_t>(*o.num_recent_events, std::numeric_limits<std::int64_t>::max())));
    else q.add_null();
    q.add(o.context_only).add(want_events).add(o.with_newest_range).add(o.with_initial_state);

    std::vector<detail::pg::result_ptr> res;
    std::string detail;
    auto ec = co_await run(p, p->sql.get, &q, res, detail, true);
    if (ec) co_return result_t{failed(d, ec, "get " + name_of(k) + ": " + detail), std::nullopt};
    const PGresult* r = res.back().get();
    session s;
    bool found = false;
    json::object own, app, user;
    for (int i = 0, n = PQntuples(r); i < n; ++i) {
        const auto kind = detail::pg::cell(r, i, 0);
        if (kind == "0") {
            found = detail::pg::parse_number(detail::pg::cell(r, i, 3), s.last_update_time) &&
                    detail::pg::parse_number(detail::pg::cell(r, i, 4), s.last_sequence);
            if (!found)
                co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": unreadable session row"),
                                   std::nullopt};
            // NULL (not asked for, or a session created before schema version 4): empty.
            if (o.with_initial_state && !PQgetisnull(r, i, 2)) {
                json::value v;
                if (parse_json(detail::pg::cell(r, i, 2), v) || !v.is_object())
                    co_return result_t{failed(d, errc::corrupt_data,
                                              "session " + name_of(k) + ": the initial state is not a JSON object"),
                                       std::nullopt};
                s.initial_state = std::move(v.get_object());
            }
        } else if (kind == "4") {
            std::int64_t seq = 0;
            detail::pg::parse_number(detail::pg::cell(r, i, 4), seq);
            auto e = parse_event(detail::pg::cell(r, i, 2));
            if (!e)
                co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                                     std::to_string(seq) +
                                                                     " is corrupt: " + e.error().message()),
                                   std::nullopt};
            if (e->sequence != seq)
                co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": event at sequence " +
                                                                     std::to_string(seq) + " says it has sequence " +
                                                                     std::to_string(e->sequence)),
                                   std::nullopt};
            s.events.push_back(std::move(*e));
        } else {
            json::value v;
            if (parse_json(detail::pg::cell(r, i, 2), v))
                co_return result_t{failed(d, errc::corrupt_data, "session " + name_of(k) + ": state key '" +
                                                                     std::string(detail::pg::cell(r, i, 1)) +
                                                                     "' holds invalid JSON"),
                                   std::nullopt};
            (kind == "1" ? own : kind == "2" ? app : user)[detail::pg::cell(r, i, 1)] = std::move(v);
        }
    }
    if (!found) co_return result_t{error_code{}, std::nullopt};
    s.events.sort([](const event& a, const event& b) { return a.sequence < b.sequence; });
    s.id = std::move(k.session_id);
    s.app_name = std::move(k.app_name);
    s.user_id = std::move(k.user_id);
    s.state = detail::merged_state(own, &app, &user);
    co_return result_t{error_code{}, std::move(s)};
}

template <class = void>
inline awaitable<std::tuple<error_code, list_page>> list_op(pool_ptr p, diagnostics* d, list_options o) {
    using result_t = std::tuple<error_code, list_page>;
    if (auto ec = validate_id(o.app_name)) co_return result_t{failed(d, ec, "app name " + id_problem(o.app_name)), list_page{}};
    if (o.user_id)
        if (auto ec = validate_id(*o.user_id)) co_return result_t{failed(d, ec, "user id " + id_problem(*o.user_id)), list_page{}};
    if (o.page_size == 0 || o.page_size > 1000)
        co_return result_t{failed(d, errc::invalid_argument, "page_size must be 1..1000"), list_page{}};
    detail::page_cursor cursor{std::numeric_limits<double>::infinity(), {}};
    if (!o.page_token.empty()) {
        auto c = detail::parse_page_token(o.page_token);
        if (!c) co_return result_t{failed(d, c.error(), "invalid page token"), list_page{}};
        cursor = std::move(*c);
    }
    detail::pg::params q;
    q.add(o.app_name).add(cursor.last_update).add(cursor.id).add(static_cast<std::int64_t>(o.page_size) + 1);
    if (o.user_id) q.add(*o.user_id);
    else q.add_null();
    q.add(cursor.user);

    std::vector<detail::pg::result_ptr> res;
    std::string detail;
    auto ec = co_await run(p, p->sql.list, &q, res, detail, true);
    if (ec) co_return result_t{failed(d, ec, "list '" + o.app_name + "': " + detail), list_page{}};
    const PGresult* r = res.back().get();
    struct row {
        std::string user, id;
        double last_update = 0;
        std::int64_t last_sequence = 0;
        json::object own;
    };
    std::vector<row> rows;
    std::map<std::pair<std::string, std::string>, json::object> own;
    json::object app;
    std::map<std::string, json::object, std::less<>> users;
    for (int i = 0, n = PQntuples(r); i < n; ++i) {
        const auto kind = detail::pg::cell(r, i, 0);
        if (kind == "0") {
            row w;
            w.user = detail::pg::cell(r, i, 1);
            w.id = detail::pg::cell(r, i, 2);
            if (!detail::pg::parse_number(detail::pg::cell(r, i, 5), w.last_update) ||
                !detail::pg::parse_number(detail::pg::cell(r, i, 6), w.last_sequence))
                co_return result_t{failed(d, errc::corrupt_data, "list '" + o.app_name + "': unreadable session row"),
                                   list_page{}};
            rows.push_back(std::move(w));
            continue;
        }
        json::value v;
        if (parse_json(detail::pg::cell(r, i, 4), v))
            co_return result_t{failed(d, errc::corrupt_data, "list '" + o.app_name + "': state key '" +
                                                                 std::string(detail::pg::cell(r, i, 3)) +
                                                                 "' holds invalid JSON"),
                               list_page{}};
        const std::string key(detail::pg::cell(r, i, 3));
        if (kind == "1")
            own[{std::string(detail::pg::cell(r, i, 1)), std::string(detail::pg::cell(r, i, 2))}][key] = std::move(v);
        else if (kind == "2") app[key] = std::move(v);
        else users[std::string(detail::pg::cell(r, i, 1))][key] = std::move(v);
    }
    std::sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
        return detail::list_before(a.last_update, a.user, a.id, b.last_update, b.user, b.id);
    });
    list_page page;
    const std::size_t n = std::min(rows.size(), o.page_size);
    for (std::size_t i = 0; i < n; ++i) {
        auto& w = rows[i];
        session s;
        auto it = own.find({w.user, w.id});
        auto u = users.find(w.user);
        static const json::object none;
        s.state = detail::merged_state(it != own.end() ? it->second : none, &app, u != users.end() ? &u->second : &none);
        s.id = w.id;
        s.app_name = o.app_name;
        s.user_id = w.user;
        s.last_update_time = w.last_update;
        s.last_sequence = w.last_sequence;
        page.sessions.push_back(std::move(s));
    }
    if (rows.size() > n)
        page.next_page_token = detail::make_page_token(rows[n - 1].last_update, rows[n - 1].user, rows[n - 1].id);
    co_return result_t{error_code{}, std::move(page)};
}

template <class = void>
inline awaitable<std::tuple<error_code>> delete_op(pool_ptr p, diagnostics* d, session_key k) {
    if (auto ec = detail::validate_key(k)) co_return failed(d, ec, detail::key_problem(k));
    detail::pg::params q;
    q.add(k.app_name).add(k.user_id).add(k.session_id);
    std::vector<detail::pg::result_ptr> res;
    std::string detail;
    auto ec = co_await run(p, p->sql.remove, &q, res, detail, true);
    if (ec) co_return failed(d, ec, "delete " + name_of(k) + ": " + detail);
    co_return error_code{};
}

template <class = void>
inline awaitable<std::tuple<error_code, detail::append_result>> append_op(pool_ptr p, diagnostics* d, detail::append_target t,
                                                                          std::vector<event> events) {
    using result_t = std::tuple<error_code, detail::append_result>;
    detail::prepared_batch batch;
    std::string detail;
    if (auto ec = detail::prepare_batch(t, std::move(events), p->max_event_bytes, batch, detail))
        co_return result_t{failed(d, ec, "append to " + name_of(t.key) + ": " + detail), detail::append_result{}};
    if (batch.rows.empty()) co_return result_t{error_code{}, detail::append_result{}};

    detail::pg::params q;
    q.add(t.key.app_name).add(t.key.user_id).add(t.key.session_id).add(t.last_sequence);
    q.add(batch.last_update).add(batch.compaction_first);
    const auto& evs = batch.result.events;
    {
        std::string seqs = "{", ts = "{";
        char buf[32];
        for (std::size_t i = 0; i < evs.size(); ++i) {
            if (i) {
                seqs += ',';
                ts += ',';
            }
            seqs += std::to_string(evs[i].sequence);
            auto r = std::to_chars(buf, buf + sizeof buf, evs[i].timestamp);
            ts.append(buf, r.ptr);
        }
        q.add(seqs + "}").add(ts + "}");
    }
    q.add_array(batch.rows, [](const std::string& row, std::string_view& out) {
        out = row;
        return true;
    });
    add_keys_values(q, batch.session);
    add_keys_values(q, batch.app);
    add_keys_values(q, batch.user);
    {
        std::string seqs = "{", firsts = "{", lasts = "{";
        for (const auto& c : batch.compactions) {
            if (seqs.size() > 1) {
                seqs += ',';
                firsts += ',';
                lasts += ',';
            }
            seqs += std::to_string(c.sequence);
            firsts += std::to_string(c.first);
            lasts += std::to_string(c.last);
        }
        q.add(seqs + "}").add(firsts + "}").add(lasts + "}");
    }

    std::vector<detail::pg::result_ptr> res;
    auto ec = co_await run(p, p->sql.append, &q, res, detail, false);
    if (ec) co_return result_t{failed(d, ec, "append to " + name_of(t.key) + ": " + detail), detail::append_result{}};
    detail::append_result out = std::move(batch.result);
    out.last_sequence = batch.last_sequence;
    co_return result_t{error_code{}, std::move(out)};
}

} // namespace libretto::detail::pg

#endif
