// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_MEMORY_STORE_HPP
#define LIBRETTO_STORE_MEMORY_STORE_HPP

// memory_store: sessions in this process's memory. For tests, examples and short-lived
// programs; everything is lost when the last copy of the store goes away. Copies of a
// memory_store share one set of sessions; it is safe to use from several threads.

#include <libretto/async.hpp>
#include <libretto/detail/string_map.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/event/detail/event_check.hpp>
#include <libretto/store/detail/await_inline.hpp>
#include <libretto/store/detail/event_chunks.hpp>
#include <libretto/store/detail/post_result.hpp>
#include <libretto/store/detail/store_op.hpp>
#include <libretto/store/detail/store_logic.hpp>
#include <libretto/store/never_blocking_store.hpp> // and session_store.hpp

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

struct memory_store_options {
    /// Largest accepted event, as serialized JSON bytes; 0: no limit. Oversize appends
    /// fail with errc::oversize and store nothing.
    std::size_t max_event_bytes = 0;
};

class memory_store {
public:
    using executor_type = boost::asio::any_io_executor;

    explicit memory_store(executor_type ex, memory_store_options o = {})
        : ex_(std::move(ex)), data_(std::make_shared<data>()) {
        data_->options = o;
    }

    executor_type get_executor() const { return ex_; }

    // ---- synchronous core (no I/O: these are what the async operations post) ----------

    /// The synchronous functions below never block on I/O (a mutex held for a look-up and
    /// a copy at most): an event-loop thread may call them directly. The runner does, for
    /// the session load and its appends (docs/runner.md, "Stores that never block").
    static constexpr bool never_blocks = true;

    boost::system::error_code create(create_options o, session& out, diagnostics* d = nullptr) {
        if (d) d->clear();
        if (o.session_id.empty()) o.session_id = event::new_id();
        if (auto ec = detail::validate_key(o.app_name, o.user_id, o.session_id))
            return fail(d, ec, "create: " + detail::key_problem(o.app_name, o.user_id, o.session_id));
        if (auto why = detail::state_problem(o.state); !why.empty())
            return fail(d, errc::invalid_argument, "create: " + why);
        auto routed = detail::route_delta(o.state);
        std::lock_guard lock(data_->mutex);
        data_->last.s = nullptr;
        auto& users = data_->apps[o.app_name];
        auto& sessions = users.sessions[o.user_id];
        if (sessions.contains(o.session_id))
            return fail(d, errc::already_exists,
                        "create: session " + name_of(o.app_name, o.user_id, o.session_id) + " exists already");
        stored s;
        s.created = s.last_update = event::now();
        for (auto& kv : routed.session)
            if (!kv.value().is_null()) s.state[kv.key()] = kv.value();
        s.initial = s.state;
        apply_delta(users.app_state, routed.app);
        apply_delta(users.user_state[o.user_id], routed.user);
        out = make_session(o.app_name, o.user_id, o.session_id, s, users);
        sessions.emplace(o.session_id, std::move(s));
        return {};
    }

    boost::system::error_code get(const session_key& k, const get_options& o, std::optional<session>& out,
                                  diagnostics* d = nullptr) const {
        if (d) d->clear();
        out.reset();
        if (auto ec = detail::validate_key(k)) return fail(d, ec, "get: " + detail::key_problem(k));
        if (auto why = detail::get_options_problem(o); !why.empty()) return fail(d, errc::invalid_argument, "get: " + why);
        std::lock_guard lock(data_->mutex);
        const stored* s = find(k);
        if (!s) return {};
        const auto& users = data_->apps.find(k.app_name)->second;
        out = make_session(k.app_name, k.user_id, k.session_id, *s, users);
        // Room for a turn's appends: the caller (a runner) adds its events to this copy.
        detail::select_events(s->events, o, s->shown, out->events, get_spare_events);
        if (o.with_initial_state) out->initial_state = s->initial;
        return {};
    }

    boost::system::error_code list(const list_options& o, list_page& out, diagnostics* d = nullptr) const {
        if (d) d->clear();
        out = {};
        if (auto ec = validate_id(o.app_name)) return fail(d, ec, "list: app name " + id_problem(o.app_name));
        if (o.user_id)
            if (auto ec = validate_id(*o.user_id)) return fail(d, ec, "list: user id " + id_problem(*o.user_id));
        if (o.page_size == 0 || o.page_size > 1000)
            return fail(d, errc::invalid_argument, "list: page_size " + std::to_string(o.page_size) + " is not in 1..1000");
        std::optional<detail::page_cursor> cursor;
        if (!o.page_token.empty()) {
            auto c = detail::parse_page_token(o.page_token);
            if (!c) return fail(d, c.error(), "list: the page token is not one a list of this app returned");
            cursor = std::move(*c);
        }
        std::lock_guard lock(data_->mutex);
        auto app = data_->apps.find(o.app_name);
        if (app == data_->apps.end()) return {};
        struct row {
            double t;
            const std::string* user;
            const std::string* id;
            const stored* s;
        };
        std::vector<row> rows;
        for (const auto& [user, sessions] : app->second.sessions) {
            if (o.user_id && user != *o.user_id) continue;
            for (const auto& [id, s] : sessions) {
                if (cursor && !detail::after_cursor(*cursor, s.last_update, user, id)) continue;
                rows.push_back({s.last_update, &user, &id, &s});
            }
        }
        std::sort(rows.begin(), rows.end(),
                  [](const row& a, const row& b) { return detail::list_before(a.t, *a.user, *a.id, b.t, *b.user, *b.id); });
        const std::size_t n = std::min(rows.size(), o.page_size);
        for (std::size_t i = 0; i < n; ++i)
            out.sessions.push_back(make_session(o.app_name, *rows[i].user, *rows[i].id, *rows[i].s, app->second));
        if (rows.size() > n) out.next_page_token = detail::make_page_token(rows[n - 1].t, *rows[n - 1].user, *rows[n - 1].id);
        return {};
    }

    boost::system::error_code remove(const session_key& k, diagnostics* d = nullptr) {
        if (d) d->clear();
        if (auto ec = detail::validate_key(k)) return fail(d, ec, "delete: " + detail::key_problem(k));
        std::lock_guard lock(data_->mutex);
        data_->last.s = nullptr;
        auto app = data_->apps.find(k.app_name);
        if (app == data_->apps.end()) return {};
        auto user = app->second.sessions.find(k.user_id);
        if (user == app->second.sessions.end()) return {};
        user->second.erase(k.session_id);
        return {};
    }

    boost::system::error_code append(session& sess, event e, std::int64_t& sequence, diagnostics* d = nullptr) {
        if (d) d->clear();
        return append_event(sess, std::make_shared<event>(std::move(e)), sequence, d);
    }

    /// append() for an event already boxed in `node`, which the caller may share: on
    /// success the node has its sequence and session id, its delta has lost its temp: keys,
    /// and the store and `sess` hold the node itself, with no copy. On failure (stale,
    /// oversize, missing session, a null node) the node is left unchanged.
    boost::system::error_code append_shared(session& sess, std::shared_ptr<event> node, std::int64_t& sequence,
                                            diagnostics* d = nullptr) {
        if (d) d->clear();
        sequence = 0;
        if (!node) return fail(d, errc::invalid_argument, "append: a null event node");
        return append_event(sess, std::move(node), sequence, d);
    }

    /// Appends the events at once: all stored, or none (stale, oversize, missing session, an
    /// event naming another session). Partial events are skipped. `sequence` is that of the
    /// last stored event (0 if none was stored). One lock and one look-up for the batch.
    boost::system::error_code append_batch(session& sess, std::vector<event> events, std::int64_t& sequence,
                                           diagnostics* d = nullptr) {
        if (d) d->clear();
        return append_events(sess, events, sequence, d);
    }

    // ---- asynchronous operations (the session_store concept) --------------------------

    // A memory store has every result at once. For a coroutine caller (use_awaitable, or
    // as_tuple of it) co_await runs the operation and resumes without suspending: nothing
    // is posted. Any other token completes through a post to the store's executor, never
    // inside the initiating call. Each operation has a form that takes the caller's
    // diagnostics, which names what was wrong when it fails (docs/errors.md).

    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, diagnostics& diag, Token&& token = {}) {
        return start_create(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<create_signature> Token = default_completion_token_t>
    auto async_create(create_options o, Token&& token = {}) {
        return start_create(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o, diagnostics& diag, Token&& token = {}) {
        return start_get(&diag, std::move(k), std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<get_signature> Token = default_completion_token_t>
    auto async_get(session_key k, get_options o = {}, Token&& token = {}) {
        return start_get(nullptr, std::move(k), std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, diagnostics& diag, Token&& token = {}) {
        return start_list(&diag, std::move(o), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<list_signature> Token = default_completion_token_t>
    auto async_list(list_options o, Token&& token = {}) {
        return start_list(nullptr, std::move(o), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, diagnostics& diag, Token&& token = {}) {
        return start_delete(&diag, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<delete_signature> Token = default_completion_token_t>
    auto async_delete(session_key k, Token&& token = {}) {
        return start_delete(nullptr, std::move(k), std::forward<Token>(token));
    }

    // Boxed once, in the node the store and the caller's session then share: completion
    // tokens move their arguments around, and an event's moves are not cheap. Taken by
    // reference, not by value: the event moves once, into the node.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, event&& e, diagnostics& diag, Token&& token = {}) {
        return append_node(&diag, sess, std::make_shared<event>(std::move(e)), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, event&& e, Token&& token = {}) {
        return append_node(nullptr, sess, std::make_shared<event>(std::move(e)), std::forward<Token>(token));
    }
    /// async_append of a copy of `e`.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, const event& e, diagnostics& diag, Token&& token = {}) {
        return append_node(&diag, sess, std::make_shared<event>(e), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append(session& sess, const event& e, Token&& token = {}) {
        return append_node(nullptr, sess, std::make_shared<event>(e), std::forward<Token>(token));
    }

    /// async_append_shared appends when the operation starts (see there).
    static constexpr bool appends_in_initiation = true;

    /// async_append for an event already boxed in `node`, which the caller may share (a
    /// runner puts it in the turn's session first). memory_store appends when the operation
    /// starts, on the caller's thread (in the initiating call; for use_awaitable, at the
    /// co_await): by then the node has its sequence and session id, its delta has lost its
    /// temp: keys, and on success the store and `sess` hold the node itself, with no copy.
    /// On failure the node is left unchanged.
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_shared(session& sess, std::shared_ptr<event> node, diagnostics& diag, Token&& token = {}) {
        return append_node(&diag, sess, std::move(node), std::forward<Token>(token), true);
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_shared(session& sess, std::shared_ptr<event> node, Token&& token = {}) {
        return append_node(nullptr, sess, std::move(node), std::forward<Token>(token), true);
    }

    /// Appends a turn's events at once, all or nothing (see append_batch). Completes with
    /// the sequence of the last stored event (0 if none was stored).
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& sess, std::vector<event> events, diagnostics& diag, Token&& token = {}) {
        return start_batch(&diag, sess, std::move(events), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<append_signature> Token = default_completion_token_t>
    auto async_append_batch(session& sess, std::vector<event> events, Token&& token = {}) {
        return start_batch(nullptr, sess, std::move(events), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto start_create(diagnostics* d, create_options o, Token&& token) {
        return complete<create_signature>(d, std::forward<Token>(token), [this, o = std::move(o)](diagnostics* d) mutable {
            session out;
            auto ec = create(std::move(o), out, d);
            return std::make_tuple(ec, std::move(out));
        });
    }
    template <class Token>
    auto start_get(diagnostics* d, session_key k, get_options o, Token&& token) {
        return complete<get_signature>(d, std::forward<Token>(token),
                                       [this, k = std::move(k), o = std::move(o)](diagnostics* d) {
                                           std::optional<session> out;
                                           auto ec = get(k, o, out, d);
                                           return std::make_tuple(ec, std::move(out));
                                       });
    }
    template <class Token>
    auto start_list(diagnostics* d, list_options o, Token&& token) {
        return complete<list_signature>(d, std::forward<Token>(token), [this, o = std::move(o)](diagnostics* d) {
            list_page out;
            auto ec = list(o, out, d);
            return std::make_tuple(ec, std::move(out));
        });
    }
    template <class Token>
    auto start_delete(diagnostics* d, session_key k, Token&& token) {
        return complete<delete_signature>(d, std::forward<Token>(token),
                                          [this, k = std::move(k)](diagnostics* d) { return std::make_tuple(remove(k, d)); });
    }
    template <class Token>
    auto start_batch(diagnostics* d, session& sess, std::vector<event> events, Token&& token) {
        return complete<append_signature>(d, std::forward<Token>(token),
                                          [this, sess = &sess, events = std::move(events)](diagnostics* d) mutable {
                                              std::int64_t seq = 0;
                                              auto ec = append_events(*sess, events, seq, d);
                                              return std::make_tuple(ec, seq);
                                          });
    }
    /// `shared`: the caller keeps `node` (append_shared's null check).
    template <class Token>
    auto append_node(diagnostics* d, session& sess, std::shared_ptr<event> node, Token&& token, bool shared = false) {
        return complete<append_signature>(d, std::forward<Token>(token),
                                          [this, sess = &sess, node = std::move(node), shared](diagnostics* d) mutable {
                                              std::int64_t seq = 0;
                                              auto ec = shared ? append_shared(*sess, std::move(node), seq, d)
                                                               : append_event(*sess, std::move(node), seq, d);
                                              return std::make_tuple(ec, seq);
                                          });
    }

    /// Runs `fn(diagnostics*)` (which returns the completion's arguments as a tuple) when the
    /// operation starts: inline for an awaitable token, else completing through a post.
    template <class Sig, class Token, class Fn>
    auto complete(diagnostics* d, Token&& token, Fn fn) {
        if constexpr (detail::is_awaitable_token<Token>) {
            return detail::await_inline<Token>(d, std::move(fn));
        } else {
            return boost::asio::async_initiate<Token, Sig>(
                [ex = ex_](auto handler, diagnostics* d, Fn fn) {
                    if (d) d->clear();
                    std::apply([&](auto&&... r) { detail::post_result(std::move(handler), ex, std::move(r)...); },
                               fn(d));
                },
                token, d, std::move(fn));
        }
    }

    /// Events `get` reserves room for beyond those it returns (a typical turn's appends;
    /// each spare slot costs an event's size while the copy lives).
    static constexpr std::size_t get_spare_events = 8;

    struct stored {
        json::object state;   // session scope
        json::object initial; // session scope as created (get_options::with_initial_state)
        detail::event_chunks events;
        double created = 0;
        double last_update = 0;
        std::int64_t last_sequence = 0;
        detail::shown_compactions shown; // what a context_only get reads
    };
    // Hashed by id, looked up by string_view: every append finds its session, and a tree
    // of thousands of sessions costs ~10 string compares per look-up. list() sorts anyway.
    template <class T>
    using by_id = detail::string_map<T>;
    struct app_data {
        json::object app_state;
        by_id<json::object> user_state;
        by_id<by_id<stored>> sessions;
    };
    /// The session the latest look-up found. A turn's appends come one after the other for
    /// one session: three string compares instead of three hashed look-ups. create() and
    /// remove() clear it (an insert may move a session, an erase frees it).
    struct found_session {
        std::string app_name, user_id, session_id;
        stored* s = nullptr;
    };
    struct data {
        std::mutex mutex;
        memory_store_options options;
        std::map<std::string, app_data, std::less<>> apps;
        found_session last;
    };

    /// Writes `detail` to the caller's diagnostics (if any) and returns `ec`.
    static boost::system::error_code fail(diagnostics* d, boost::system::error_code ec, std::string_view detail) {
        return detail::note_failure(d, ec, "memory_store", detail);
    }
    static std::string name_of(std::string_view app, std::string_view user, std::string_view id) {
        std::string n(app);
        n += '/';
        n += user;
        n += '/';
        n += id;
        return n;
    }
    static boost::system::error_code stale(diagnostics* d, const session& sess, std::int64_t stored) {
        return fail(d, errc::stale_session, "append: session " + name_of(sess.app_name, sess.user_id, sess.id) +
                                             " is at sequence " + std::to_string(stored) + ", the caller's copy at " +
                                             std::to_string(sess.last_sequence));
    }
    /// Why prepare_append refused `e` for `sess` (the store's session is at `stored`).
    static boost::system::error_code refused(diagnostics* d, boost::system::error_code ec, const session& sess,
                                             const event& e, std::int64_t stored, std::int64_t appended_before = 0) {
        if (ec == errc::stale_session) return stale(d, sess, stored);
        return fail(d, ec, "append: " + detail::append_refusal(sess, e, stored, appended_before));
    }
    boost::system::error_code too_big(diagnostics* d, const event& e, std::size_t bytes) const {
        return fail(d, errc::oversize, "append: " + detail::event_name(e) + " is " + std::to_string(bytes) +
                                        " bytes of JSON, over max_event_bytes (" +
                                        std::to_string(data_->options.max_event_bytes) + ")");
    }

    /// Refuses what the text stores refuse (json_limits.hpp): the same on every store.
    static boost::system::error_code unstorable(diagnostics* d, const event& e, const detail::json_fault& f) {
        return fail(d, errc::invalid_argument, "append: " + detail::event_name(e) + ": " + f.message());
    }

    static std::size_t serialized_size(const event& e);

    /// append(): on success the store and the caller's session share the node `ep`.
    boost::system::error_code append_event(session& sess, std::shared_ptr<event> ep, std::int64_t& sequence,
                                           diagnostics* d) {
        sequence = 0;
        event& e = *ep;
        if (e.partial) return {}; // streaming chunks are never stored
        if (auto f = detail::event_fault(e)) return unstorable(d, e, *f);
        if (data_->options.max_event_bytes)
            if (const std::size_t n = serialized_size(e); n > data_->options.max_event_bytes) return too_big(d, e, n);
        std::lock_guard lock(data_->mutex);
        // The key as views of `sess` (its ids do not change here): no copies per append.
        stored* s = find(sess.app_name, sess.user_id, sess.id);
        if (!s) return missing(d, sess);
        detail::routed_delta routed;
        if (auto ec = detail::prepare_append(sess, e, s->last_sequence, routed))
            return refused(d, ec, sess, e, s->last_sequence);
        if (!routed.app.empty() || !routed.user.empty()) {
            auto& users = data_->apps.find(sess.app_name)->second;
            apply_delta(users.app_state, routed.app);
            apply_delta(users.user_state[sess.user_id], routed.user);
        }
        apply_delta(s->state, routed.session);
        s->last_sequence = e.sequence;
        s->last_update = e.timestamp;
        if (e.actions.compaction) s->shown.add(e);
        sequence = e.sequence;
        event_list::pointer_type stored = std::move(ep); // immutable from here on
        s->events.push_back(stored);
        detail::commit_append(sess, std::move(stored), routed);
        // Shared scopes changed elsewhere show up at the next get; the caller sees its own.
        return {};
    }

    /// append_batch(): the events are taken from `events` (moved into the caller's session).
    boost::system::error_code append_events(session& sess, std::vector<event>& events, std::int64_t& sequence,
                                            diagnostics* d) {
        sequence = 0;
        std::erase_if(events, [](const event& e) { return e.partial; }); // never stored
        for (const auto& e : events) {
            if (!e.session_id.empty() && e.session_id != sess.id)
                return refused(d, errc::invalid_argument, sess, e, sess.last_sequence);
            if (auto f = detail::event_fault(e)) return unstorable(d, e, *f);
            if (data_->options.max_event_bytes)
                if (const std::size_t n = serialized_size(e); n > data_->options.max_event_bytes) return too_big(d, e, n);
        }
        std::vector<detail::routed_delta> routed(events.size());
        std::lock_guard lock(data_->mutex);
        stored* s = find(sess.app_name, sess.user_id, sess.id);
        if (!s) return missing(d, sess);
        if (sess.last_sequence != s->last_sequence) return stale(d, sess, s->last_sequence);
        // Nothing can fail from here on: prepare every event, then store them all.
        for (std::size_t i = 0; i < events.size(); ++i) {
            const auto before = static_cast<std::int64_t>(i); // a compaction may cover them
            if (auto ec = detail::prepare_append(sess, events[i], sess.last_sequence, routed[i], before))
                return refused(d, ec, sess, events[i], sess.last_sequence, before);
            events[i].sequence = s->last_sequence + 1 + static_cast<std::int64_t>(i);
        }
        app_data* users = nullptr;
        for (std::size_t i = 0; i < events.size(); ++i) {
            event& e = events[i];
            const detail::routed_delta& r = routed[i];
            if (!r.app.empty() || !r.user.empty()) {
                if (!users) users = &data_->apps.find(sess.app_name)->second;
                apply_delta(users->app_state, r.app);
                apply_delta(users->user_state[sess.user_id], r.user);
            }
            apply_delta(s->state, r.session);
            s->last_sequence = e.sequence;
            s->last_update = e.timestamp;
            if (e.actions.compaction) s->shown.add(e);
        }
        if (!events.empty()) sequence = events.back().sequence;
        if (sess.events.capacity() < sess.events.size() + events.size())
            sess.events.reserve(sess.events.size() + events.size() + sess.events.size() / 2);
        for (std::size_t i = 0; i < events.size(); ++i) {
            event_list::pointer_type stored = make_shared_event(std::move(events[i]));
            s->events.push_back(stored);
            detail::commit_append(sess, std::move(stored), routed[i]);
        }
        return {};
    }

    /// Why an append found no session for `sess`: an id no session can have
    /// (invalid_argument), or none by that key (not_found). Only ids that were stored are
    /// found, and they were checked then, so a found key needs no check per append.
    static boost::system::error_code missing(diagnostics* d, const session& sess) {
        if (auto ec = detail::validate_key(sess.app_name, sess.user_id, sess.id))
            return fail(d, ec, "append: " + detail::key_problem(sess.app_name, sess.user_id, sess.id));
        return fail(d, errc::not_found,
                    "append: session " + name_of(sess.app_name, sess.user_id, sess.id) + " does not exist");
    }

    /// Under the mutex.
    const stored* find(std::string_view app_name, std::string_view user_id, std::string_view session_id) const {
        found_session& last = data_->last;
        if (last.s && last.session_id == session_id && last.user_id == user_id && last.app_name == app_name)
            return last.s;
        auto app = data_->apps.find(app_name);
        if (app == data_->apps.end()) return nullptr;
        auto user = app->second.sessions.find(user_id);
        if (user == app->second.sessions.end()) return nullptr;
        auto s = user->second.find(session_id);
        if (s == user->second.end()) return nullptr;
        last.app_name = app_name;
        last.user_id = user_id;
        last.session_id = session_id;
        last.s = &s->second;
        return last.s;
    }
    stored* find(std::string_view app_name, std::string_view user_id, std::string_view session_id) {
        return const_cast<stored*>(std::as_const(*this).find(app_name, user_id, session_id));
    }
    const stored* find(const session_key& k) const { return find(k.app_name, k.user_id, k.session_id); }
    stored* find(const session_key& k) { return find(k.app_name, k.user_id, k.session_id); }

    static session make_session(const std::string& app, const std::string& user, const std::string& id,
                                const stored& s, const app_data& a) {
        session out;
        out.id = id;
        out.app_name = app;
        out.user_id = user;
        auto us = a.user_state.find(user);
        out.state = detail::merged_state(s.state, &a.app_state, us == a.user_state.end() ? nullptr : &us->second);
        out.last_update_time = s.last_update;
        out.last_sequence = s.last_sequence;
        return out;
    }

    executor_type ex_;
    std::shared_ptr<data> data_;
};

} // namespace libretto

#include <libretto/event/json.hpp>

inline std::size_t libretto::memory_store::serialized_size(const event& e) { return serialize_event(e).size(); }

static_assert(libretto::batch_session_store<libretto::memory_store>); // a session_store too
static_assert(libretto::never_blocking_store<libretto::memory_store>);

#endif
