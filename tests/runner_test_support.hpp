// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Driving runner turns and reading sessions back in tests: what runner_test,
// runner_compaction, runner_session_cache and the signing tests share.
#ifndef LIBRETTO_TESTS_RUNNER_TEST_SUPPORT_HPP
#define LIBRETTO_TESTS_RUNNER_TEST_SUPPORT_HPP

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/session/session.hpp>
#include <libretto/store/session_store.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace runner_support {

namespace asio = boost::asio;
namespace lb = libretto;

/// What a turn yielded, and how it ended.
struct turn_outcome {
    std::vector<lb::event> events;
    std::exception_ptr error;

    /// The failure's error code; errc::tool_error stands for "not a system_error".
    boost::system::error_code code() const {
        if (!error) return {};
        try {
            std::rethrow_exception(error);
        } catch (const boost::system::system_error& e) {
            return e.code();
        } catch (...) {
            return make_error_code(lb::errc::tool_error);
        }
    }
    std::string what() const {
        if (!error) return {};
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            return e.what();
        } catch (...) {
            return "(not a std::exception)";
        }
    }
    /// Each event's text, partial ones marked with a leading '~'.
    std::vector<std::string> texts() const {
        std::vector<std::string> out;
        for (const auto& e : events) out.push_back((e.partial ? "~" : "") + e.text());
        return out;
    }
    std::vector<const lb::event*> compactions() const {
        std::vector<const lb::event*> v;
        for (const auto& e : events)
            if (e.is_compaction()) v.push_back(&e);
        return v;
    }
    const lb::event* final_answer() const {
        for (auto it = events.rbegin(); it != events.rend(); ++it)
            if (it->is_final_response()) return &*it;
        return nullptr;
    }
};

/// Takes every item of `s` into `items`; the failure, if any, into `error`.
template <class T>
asio::awaitable<void> drain_into(lb::basic_event_stream<T> s, std::vector<T>* items, std::exception_ptr* error) {
    try {
        for (;;) {
            auto next = s.next();
            std::optional<T> e = co_await std::move(next);
            if (!e) break;
            items->push_back(std::move(*e));
        }
    } catch (...) {
        *error = std::current_exception();
    }
}

inline asio::awaitable<void> drain(lb::event_stream s, turn_outcome* out) {
    return drain_into(std::move(s), &out->events, &out->error);
}

/// Runs the turn to its end on `io` (which must have nothing else to do).
inline turn_outcome run_turn(asio::io_context& io, lb::event_stream s) {
    turn_outcome o;
    asio::co_spawn(io, drain(std::move(s), &o), asio::detached);
    io.run();
    io.restart();
    return o;
}

/// What a run_shared/resume_shared turn yielded: the nodes themselves.
struct shared_outcome {
    std::vector<std::shared_ptr<const lb::event>> nodes;
    std::exception_ptr error;

    /// The same turn as a turn_outcome (copies of the events), to compare with run().
    turn_outcome copies() const {
        turn_outcome o;
        for (const auto& n : nodes) o.events.push_back(*n);
        o.error = error;
        return o;
    }
};

/// run_turn for a shared_event_stream.
inline shared_outcome run_turn(asio::io_context& io, lb::shared_event_stream s) {
    shared_outcome o;
    asio::co_spawn(io, drain_into(std::move(s), &o.nodes, &o.error), asio::detached);
    io.run();
    io.restart();
    return o;
}

template <class Store>
asio::awaitable<void> load_into(Store* st, lb::session_key k, lb::get_options go, std::optional<lb::session>* out) {
    auto op = st->async_get(std::move(k), std::move(go), asio::use_awaitable);
    *out = co_await std::move(op);
}

/// Reads session app/u1/`session` back from the store (nullopt if it does not exist).
template <class Store>
std::optional<lb::session> load_session(asio::io_context& io, Store& st, std::string session = "s1",
                                        lb::get_options go = {}) {
    std::optional<lb::session> out;
    asio::co_spawn(io, load_into(&st, lb::session_key{"app", "u1", std::move(session)}, std::move(go), &out),
                   asio::detached);
    io.run();
    io.restart();
    return out;
}

/// A turn of session app/u1/`session`.
inline lb::run_options run_opts(std::string session = "s1") {
    lb::run_options o;
    o.app = "app";
    o.user = "u1";
    o.session = std::move(session);
    return o;
}

} // namespace runner_support

#endif
