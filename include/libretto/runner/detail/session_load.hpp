// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_DETAIL_SESSION_LOAD_HPP
#define LIBRETTO_RUNNER_DETAIL_SESSION_LOAD_HPP

// Step 2 of a runner turn: the session, from the runner's cache brought up to date, else
// from the store (what the context view needs: turn_load_options), else created. The steps
// are one sans-io machine (session_load) with two drivers: plain calls for a store that
// never blocks, a coroutine for the others.

#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/error.hpp>
#include <libretto/event/compaction_check.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/event/rewinds.hpp>
#include <libretto/runner/detail/session_cache.hpp>
#include <libretto/runner/detail/turn_state.hpp>
#include <libretto/runner/detail/turn_store.hpp>
#include <libretto/session/session.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace libretto::detail {

/// A failed get or create of the turn's session: throws naming it, the error and what the
/// store said in the call's diagnostics.
[[noreturn]] inline void throw_store_failure(boost::system::error_code ec, std::string_view doing, const session_key& k,
                                             const diagnostics& said) {
    throw_turn_error(ec, std::string(doing) + " " + session_name(k) + " failed: " + ec.message() +
                             store_said_suffix(said.message()));
}

/// What a turn's session is created with when the store has none.
inline create_options turn_create_options(const turn_state& t) {
    create_options co;
    co.app_name = t.key.app_name;
    co.user_id = t.key.user_id;
    co.session_id = t.key.session_id;
    return co;
}

/// The loaded session becomes the turn's.
inline void adopt_turn_session(turn_state& t, std::optional<session>& loaded) {
    t.sess = std::make_shared<session>(std::move(*loaded));
    loaded.reset();
    // Room for a typical turn's events (a user message and a few steps): growing from the
    // loaded size would move every loaded event at each doubling. Not more: with many
    // turns in flight each spare slot costs an event's size per session (memory_store's
    // get reserves the same).
    if (auto& evs = t.sess->events; evs.capacity() < evs.size() + 8) evs.reserve(evs.size() + 8 + evs.size() / 2);
    t.scratch.id = t.sess->id;
    t.scratch.app_name = t.sess->app_name;
    t.scratch.user_id = t.sess->user_id;
}

/// Tells runner_options::on_ignored_compaction (if set) of each compaction event in the
/// turn's session that check_compaction refuses: the context ignores it, and the caller
/// hears of it rather than of a history silently shortened.
template <class Core>
void report_ignored_compactions(const Core& core, const turn_state& t) {
    if (!core.on_ignored_compaction) return;
    for (const event& e : t.sess->events)
        if (e.actions.compaction)
            if (auto bad = check_compaction(e)) core.on_ignored_compaction(t.key, ignored_compaction{&e, std::move(bad.message)});
}

/// What a turn loads: what a context view of the session needs (get_options::context_only:
/// the shown summaries and the events after the newest covered range, never the covered
/// events), with the newest compaction's range too for a strategy that plans from it.
template <class Compaction>
get_options turn_load_options(const Compaction& c) {
    get_options go;
    go.context_only = true;
    go.with_newest_range = plans_from_newest_range(c);
    return go;
}

/// True when a rewind among `events` (what a context load returned) undoes events the load
/// left out: its invocation starts before them, or it undid a summary whose range the load
/// skipped. The turn then reads the session whole (docs/sessions.md, "Rewind").
inline bool rewinds_need_whole_session(event_span events) {
    for (const auto& r : undone_ranges(events)) {
        if (r.first == r.last) return true; // the rewound invocation is not among them
        for (std::size_t i = r.first; i < r.last; ++i)
            if (events[i].is_compaction()) return true;
    }
    return false;
}

/// The decisions of a turn's session load, apart from its store calls (sans-io), so that
/// both drivers (load_turn_session_now, load_turn_session) take the same steps. While
/// wants_get(), the driver gets request() into target() and calls after_get(); when that
/// returns true, the store has no such session: the driver creates it and calls
/// after_create(). Then result() holds the turn's session.
class session_load {
public:
    /// A session this runner ran before is only brought up to date: the get asks for its
    /// last event again and what other writers appended (refresh_cached_session).
    template <class Core>
    session_load(Core& core, const std::string& cache_key) : loaded_(core.cache.take(cache_key)) {
        if (loaded_) {
            refreshing_ = true;
            request_.from_sequence = loaded_->last_sequence;
        } else {
            request_ = turn_load_options(core.compaction);
        }
    }

    bool wants_get() const noexcept { return refreshing_ || !loaded_; }
    const get_options& request() const noexcept { return request_; }
    std::optional<session>& target() noexcept { return refreshing_ ? fresh_ : loaded_; }

    /// After a get into target(). True when the session must be created; throws when it
    /// must exist (resume, or a second pass after a create that lost a race).
    template <class Compaction>
    bool after_get(const Compaction& c, const turn_state& t, bool resume) {
        if (refreshing_) {
            refreshing_ = false;
            // Anything unexpected (the session deleted or re-created, a gap): load it again.
            if (!fresh_ || !refresh_cached_session(*loaded_, std::move(*fresh_), plans_from_newest_range(c))) {
                loaded_.reset();
                request_ = turn_load_options(c);
            } else {
                check_rewinds();
            }
            fresh_.reset();
            return false;
        }
        if (loaded_) {
            check_rewinds();
            return false;
        }
        if (created_elsewhere_) throw_turn_error(errc::not_found, session_name(t.key) + " vanished while it was created");
        if (resume) throw_turn_error(errc::not_found, "resume: " + session_name(t.key) + " does not exist");
        return true;
    }

    /// After a create: the session, or (errc::already_exists: another process created it
    /// between our get and our create) one more get, or a throw.
    void after_create(const turn_state& t, boost::system::error_code ec, session&& created) {
        if (!ec) loaded_.emplace(std::move(created));
        else if (ec == errc::already_exists) created_elsewhere_ = true;
        else throw_store_failure(ec, "creating", t.key, t.diag);
    }

    std::optional<session>& result() noexcept { return loaded_; }

private:
    void check_rewinds() {
        if (whole_ || !rewinds_need_whole_session(loaded_->events)) return;
        whole_ = true;
        loaded_.reset();
        request_ = get_options{};
    }

    std::optional<session> loaded_;
    std::optional<session> fresh_; ///< what the refreshing get returned
    get_options request_;
    bool refreshing_ = false;
    bool created_elsewhere_ = false;
    bool whole_ = false; ///< the session is being read whole (rewinds_need_whole_session)
};

/// The load with a never-blocking store: its calls complete at once, so plain calls (no
/// coroutine frame).
template <class Core>
void load_turn_session_now(Core& core, turn_state& t, const std::string& cache_key, bool resume) {
    session_load load(core, cache_key);
    while (load.wants_get()) {
        if (auto ec = core.store->get(t.key, load.request(), load.target(), &t.diag))
            throw_store_failure(ec, "loading", t.key, t.diag);
        if (!load.after_get(core.compaction, t, resume)) continue;
        session created;
        const boost::system::error_code ec = core.store->create(turn_create_options(t), created, &t.diag);
        load.after_create(t, ec, std::move(created));
    }
    adopt_turn_session(t, load.result());
    report_ignored_compactions(core, t);
}

/// The load with any other store: a coroutine of its own, so that the turn's frame does
/// not keep its locals.
template <class Core>
boost::asio::awaitable<void> load_turn_session(Core& core, turn_state& t, const std::string& cache_key, bool resume) {
    session_load load(core, cache_key);
    while (load.wants_get()) {
        {
            session_key k = t.key;
            get_options go = load.request();
            boost::system::error_code ec;
            auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
            auto op = core.store->async_get(std::move(k), std::move(go), t.diag, std::move(token));
            load.target() = co_await std::move(op);
            if (ec) throw_store_failure(ec, "loading", t.key, t.diag);
        }
        if (!load.after_get(core.compaction, t, resume)) continue;
        boost::system::error_code ec;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
        auto op = core.store->async_create(turn_create_options(t), t.diag, std::move(token));
        session created = co_await std::move(op);
        load.after_create(t, ec, std::move(created));
    }
    adopt_turn_session(t, load.result());
    report_ignored_compactions(core, t);
}

/// Step 2 of a turn: load_turn_session_now when the store never blocks (nothing to
/// await), else load_turn_session's awaitable, for the caller to co_await.
template <class Core>
std::optional<boost::asio::awaitable<void>> load_or_wait(Core& core, turn_state& t, const std::string& cache_key,
                                                         bool resume) {
    if constexpr (never_blocking_store<typename Core::store_type>) {
        load_turn_session_now(core, t, cache_key, resume);
        return std::nullopt;
    } else {
        return load_turn_session(core, t, cache_key, resume);
    }
}

} // namespace libretto::detail

#endif
