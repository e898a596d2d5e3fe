// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_RUN_TO_END_HPP
#define LIBRETTO_RUNNER_RUN_TO_END_HPP

// Runs one turn to its end and returns what it produced, instead of the co_spawn + next()
// loop every caller would write (docs/runner.md, "Running a turn to its end"):
//
//   auto op = lb::async_run_to_end(runner, options, "Weather in Oslo?");   // any token
//   lb::turn_result r = co_await std::move(op);          // throws system_error on failure
//   std::cout << r.final_answer;
//
//   lb::turn_result r = lb::run_to_end(runner, options, "Weather in Oslo?");   // main()
//   if (!r.ok()) std::cerr << r.message() << '\n';
//
// The stored (non-partial) events, the final answer's text, and the failure (error_code and
// the words, in a libretto::diagnostics) come back in one turn_result, also when the turn
// failed midway: the events stored before the failure are in it. A time limit and Asio
// cancellation (a bound cancellation slot) cancel the turn; what was stored stays stored.

#include <libretto/agent/llm_types.hpp>
#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/detail/config.hpp>
#include <libretto/detail/deadline.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <concepts>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

/// How run_to_end runs a turn. Every member has a usable default.
struct run_to_end_options {
    // Constructors, so that it is not an aggregate (safe to build inside co_await on
    // g++ 12: docs/building.md, "g++ 12 and coroutines").
    run_to_end_options() = default;
    run_to_end_options(std::chrono::milliseconds time_limit, std::function<void(const event&)> on_event = {})
        : time_limit(time_limit), on_event(std::move(on_event)) {}

    /// The turn's time limit, from the start of the operation; zero (the default): none.
    /// When it passes the turn is cancelled (what was stored stays stored) and the
    /// operation completes with errc::limit_exceeded. A negative limit is refused
    /// (errc::invalid_argument, the turn never starts); milliseconds::max() waits as long
    /// as the clock can count.
    std::chrono::milliseconds time_limit{0};
    /// Called with every event as it arrives, partial ones included (to show text as the
    /// model writes it), on the turn's executor, before the event is kept. An exception it
    /// throws ends the turn like one from the turn itself (see turn_result::error).
    std::function<void(const event&)> on_event{};
};

/// What a turn produced.
struct turn_result {
    /// The stored (non-partial) events the turn yielded, in order (with their sequence):
    /// the model's calls and answers, tool responses, a compaction summary. On a failure,
    /// those stored before it.
    std::vector<event> events;
    /// The text of the last final response (event::is_final_response), empty if none.
    std::string final_answer;
    /// The failure, if the turn failed: the runner's or the store's (what next() throws),
    /// errc::limit_exceeded for the time limit, errc::cancelled for a cancellation, the
    /// code of the error event the agent ended with (a model that failed after its
    /// retries: errc::transient, context_overflow, auth_failed, ...; agent_error_code), or
    /// errc::unexpected_exception for an exception that is not a system_error (an agent's
    /// own, on_event's) with its what().
    boost::system::error_code error;
    /// The words that go with `error` ("libretto::runner: ...", the agent's error event).
    diagnostics diag;

    bool ok() const noexcept { return !error; }
    /// diag's message, or empty.
    const std::string& message() const noexcept { return diag.message(); }
    /// The last final response among `events`, or nullptr.
    const event* final_event() const noexcept {
        for (auto it = events.rbegin(); it != events.rend(); ++it)
            if (it->is_final_response()) return &*it;
        return nullptr;
    }
};

/// The completion signature of async_run_to_end.
using run_to_end_signature = void(boost::system::error_code, turn_result);

namespace detail {

/// The words of a system_error without the code's own message that its what() appends
/// (the message of an error_with_diagnostics as it is).
inline std::string system_error_words(const boost::system::system_error& e) {
    if (const auto* d = dynamic_cast<const error_with_diagnostics*>(&e)) return d->get_diagnostics().message();
    const std::string_view what = e.what();
    const std::string tail = e.code().what(); // what boost::system::system_error appends
    if (what == tail) return {};
    if (what.size() > tail.size() + 2 && what.ends_with(tail) &&
        what.substr(what.size() - tail.size() - 2, 2) == ": ")
        return std::string(what.substr(0, what.size() - tail.size() - 2));
    return std::string(what);
}

/// One run_to_end operation, shared by its coroutine, its timer and its cancellation
/// handler. Touched only on the turn's executor.
struct run_to_end_state {
    enum class stop { none, time_limit, cancelled };

    run_to_end_state(event_stream s, run_to_end_options o)
        : ex(s.get_executor()), stream(std::move(s)), options(std::move(o)) {}

    boost::asio::any_io_executor ex;
    event_stream stream;
    run_to_end_options options;
    turn_result result;
    std::optional<boost::asio::steady_timer> timer;
    stop stopped = stop::none;
    bool done = false;

    /// Cancels the turn (once, and not after it ended), remembering why.
    void stop_turn(stop why) {
        if (done || stopped != stop::none) return;
        stopped = why;
        stream.cancel();
    }

    void fail(boost::system::error_code ec, std::string words) {
        result.error = ec;
        result.diag.assign(std::move(words));
    }

    /// After the stream ended or failed: the final answer, and the failure the agent's
    /// last event reports, if the turn did not fail otherwise.
    void finish() {
        done = true;
        if (timer) timer->cancel();
        if (const event* f = result.final_event()) result.final_answer = f->text();
        if (result.error) return;
        for (auto it = result.events.rbegin(); it != result.events.rend(); ++it) {
            if (it->is_compaction()) continue; // stored after the agent's events
            if (it->tool_responses().empty() && it->error()) {
                boost::system::error_code ec = agent_error_code(*it);
                fail(ec ? ec : make_error_code(errc::model_error), *it->error());
            }
            break;
        }
    }
};

/// Takes every event of the turn; records how it ended. Never throws.
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> drain_turn(std::shared_ptr<run_to_end_state> st) {
    try {
        for (;;) {
            std::optional<event> ev = st->stream.try_next();
            if (!ev) {
                auto next = st->stream.next();
                ev = co_await std::move(next);
            }
            if (!ev) break;
            if (st->options.on_event) st->options.on_event(*ev);
            if (!ev->partial) st->result.events.push_back(std::move(*ev));
        }
    } catch (const boost::system::system_error& e) {
        using stop = run_to_end_state::stop;
        if (st->stopped == stop::time_limit && e.code() == errc::cancelled) {
            st->fail(make_error_code(errc::limit_exceeded),
                     "run_to_end: the turn's time limit (" + std::to_string(st->options.time_limit.count()) +
                         " ms) passed; the turn was cancelled");
        } else if (st->stopped == stop::cancelled && e.code() == errc::cancelled) {
            st->fail(make_error_code(errc::cancelled), "run_to_end: the turn was cancelled");
        } else {
            st->fail(e.code(), system_error_words(e));
        }
    } catch (...) {
        st->result.error = exception_to_error(std::current_exception(), &st->result.diag);
    }
    st->finish();
}

/// The composed operation: starts the timer and the drain, listens to the caller's
/// cancellation slot, completes with the result.
struct run_to_end_op {
    std::shared_ptr<run_to_end_state> st;

    template <class Self>
    void operator()(Self& self) {
        if (st->options.time_limit.count() < 0) {
            // Refused before the turn's first next(), so the turn never starts.
            st->fail(make_error_code(errc::invalid_argument),
                     "run_to_end: options.time_limit is negative (" + std::to_string(st->options.time_limit.count()) +
                         " ms); zero means no limit");
            boost::asio::any_io_executor ex = st->ex; // before `self` (and st with it) moves
            boost::asio::post(std::move(ex), boost::asio::append(std::move(self), std::exception_ptr()));
            return;
        }
        // Any kind of cancellation stops the turn: there is nothing to undo.
        self.reset_cancellation_state(boost::asio::enable_total_cancellation());
        boost::asio::cancellation_slot slot = self.get_cancellation_state().slot();
        if (slot.is_connected()) {
            slot.assign([s = st](boost::asio::cancellation_type_t) {
                // The signal may come from another thread: the turn is touched on its own.
                boost::asio::dispatch(s->ex, [s] { s->stop_turn(run_to_end_state::stop::cancelled); });
            });
        }
        if (st->options.time_limit.count() > 0) {
            // A deadline, saturated: milliseconds::max() would overflow the timer's nanoseconds.
            st->timer.emplace(st->ex, detail::deadline_after(st->options.time_limit));
            st->timer->async_wait([s = st](boost::system::error_code ec) {
                if (!ec) s->stop_turn(run_to_end_state::stop::time_limit);
            });
        }
        // The drain gets no cancellation slot of its own: the caller's cancels the turn
        // through stop_turn above, which says why. Moving `self` moves this object (st):
        // everything is taken from it first.
        boost::asio::any_io_executor ex = st->ex;
        boost::asio::awaitable<void> drain = drain_turn(st);
        boost::asio::co_spawn(std::move(ex), std::move(drain),
                              boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), std::move(self)));
    }

    template <class Self>
    void operator()(Self& self, std::exception_ptr) { // drain_turn never throws
        boost::system::error_code ec = st->result.error;
        turn_result r = std::move(st->result);
        st.reset(); // the turn's stream goes before the handler runs
        self.complete(ec, std::move(r));
    }
};

/// The io_context behind `ex`, if it is one's executor (tracked or not).
inline boost::asio::io_context* io_context_of(const boost::asio::any_io_executor& ex) {
    using plain = boost::asio::io_context::executor_type;
    using tracked = std::decay_t<decltype(boost::asio::prefer(std::declval<plain>(),
                                                              boost::asio::execution::outstanding_work.tracked))>;
    if (const auto* e = ex.target<plain>()) return &e->context();
    if (const auto* e = ex.target<tracked>()) return &e->context();
    return nullptr;
}

/// async_run_to_end with use_awaitable: a failure throws error_with_diagnostics, whose
/// what() has the words (the library's rule for use_awaitable, docs/errors.md).
template <class Executor>
boost::asio::awaitable<turn_result, Executor> run_to_end_throwing(std::shared_ptr<run_to_end_state> st) {
    auto token = boost::asio::as_tuple(boost::asio::use_awaitable_t<Executor>{});
    boost::asio::any_io_executor ex = st->ex;
    auto op = boost::asio::async_compose<decltype(token), run_to_end_signature>(run_to_end_op{std::move(st)}, token,
                                                                               std::move(ex));
    std::tuple<boost::system::error_code, turn_result> t = co_await std::move(op);
    throw_on_error(std::get<0>(t), std::get<1>(t).diag);
    co_return std::move(std::get<1>(t));
}

template <class R>
concept turn_runner = requires(R& r, run_options o, std::string text) {
    { r.run(std::move(o), std::move(text)) } -> std::same_as<event_stream>;
};

} // namespace detail

/// Takes every event of `turn` (a stream runner::run returned, or any agent's stream) until
/// it ends, and completes with what it produced: `void(error_code, turn_result)`, where the
/// error_code is the result's `error`. Runs on the stream's executor; the handler runs on
/// its associated executor, as usual. A bound cancellation slot (any cancellation type)
/// cancels the turn: errc::cancelled. `options.time_limit` likewise: errc::limit_exceeded.
///
/// Awaited with use_awaitable, a failure throws error_with_diagnostics (the words in its
/// what()); awaited with the default token (asio::deferred), system_error with the code.
/// Either way the result is lost: use as_tuple to keep both.
template <boost::asio::completion_token_for<run_to_end_signature> CompletionToken = default_completion_token_t>
auto async_run_to_end(event_stream turn, run_to_end_options options = {}, CompletionToken&& token = {}) {
    auto st = std::make_shared<detail::run_to_end_state>(std::move(turn), std::move(options));
    if constexpr (detail::is_throwing_awaitable_token<CompletionToken>) {
        using executor = typename detail::awaitable_token<std::decay_t<CompletionToken>>::executor_type;
        return detail::run_to_end_throwing<executor>(std::move(st));
    } else {
        boost::asio::any_io_executor ex = st->ex;
        return boost::asio::async_compose<CompletionToken, run_to_end_signature>(
            detail::run_to_end_op{std::move(st)}, token, std::move(ex)); // Asio 1.26 takes the token by lvalue
    }
}

/// async_run_to_end(turn, {}, token).
template <boost::asio::completion_token_for<run_to_end_signature> CompletionToken>
    requires(!std::is_same_v<std::decay_t<CompletionToken>, run_to_end_options>)
auto async_run_to_end(event_stream turn, CompletionToken&& token) {
    return async_run_to_end(std::move(turn), run_to_end_options{}, std::forward<CompletionToken>(token));
}

/// Starts a turn, `runner.run(std::move(run), std::move(text))`, and runs it to its end.
///
/// g++ 12: name the run_options before a co_await (docs/building.md); a braced temporary
/// in the co_await expression is destroyed twice.
template <detail::turn_runner Runner,
          boost::asio::completion_token_for<run_to_end_signature> CompletionToken = default_completion_token_t>
auto async_run_to_end(Runner& runner, run_options run, std::string text, run_to_end_options options = {},
                      CompletionToken&& token = {}) {
    return async_run_to_end(runner.run(std::move(run), std::move(text)), std::move(options),
                            std::forward<CompletionToken>(token));
}

/// async_run_to_end(runner, run, text, {}, token).
template <detail::turn_runner Runner, boost::asio::completion_token_for<run_to_end_signature> CompletionToken>
    requires(!std::is_same_v<std::decay_t<CompletionToken>, run_to_end_options>)
auto async_run_to_end(Runner& runner, run_options run, std::string text, CompletionToken&& token) {
    return async_run_to_end(runner.run(std::move(run), std::move(text)), run_to_end_options{},
                            std::forward<CompletionToken>(token));
}

/// Runs `turn` to its end and returns the result; for main() and tools, not for code that
/// runs inside an io_context. When the stream's executor is an io_context's, this runs
/// that io_context (restarting it if it had stopped) until the turn ends, then returns,
/// leaving other work queued on it; nothing else may run that io_context meanwhile. On
/// another executor (a thread_pool's) it waits for the turn, which something else runs.
/// Failures are in the result, not thrown.
template <class = void> // a template, as the coroutines it starts (detail/config.hpp)
turn_result run_to_end(event_stream turn, run_to_end_options options = {}) {
    boost::asio::io_context* io = detail::io_context_of(turn.get_executor());
    if (!io) {
        std::promise<turn_result> promise;
        std::future<turn_result> future = promise.get_future();
        async_run_to_end(std::move(turn), std::move(options),
                         [&promise](boost::system::error_code, turn_result r) { promise.set_value(std::move(r)); });
        return future.get();
    }
    std::optional<turn_result> out;
    async_run_to_end(std::move(turn), std::move(options),
                     [&out](boost::system::error_code, turn_result r) { out = std::move(r); });
    while (!out) {
        if (io->stopped()) io->restart();
        io->run_one();
    }
    return std::move(*out);
}

#ifdef LIBRETTO_SEPARATE_COMPILATION
// Compiled once, by <libretto/src.hpp> (runner/impl/run_to_end.ipp): with what it starts.
extern template turn_result run_to_end<void>(event_stream, run_to_end_options);
#endif

/// run_to_end(runner.run(std::move(run), std::move(text)), options).
template <detail::turn_runner Runner>
turn_result run_to_end(Runner& runner, run_options run, std::string text, run_to_end_options options = {}) {
    return run_to_end(runner.run(std::move(run), std::move(text)), std::move(options));
}

} // namespace libretto

#endif
