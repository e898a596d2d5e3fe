// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STREAM_EVENT_STREAM_HPP
#define LIBRETTO_STREAM_EVENT_STREAM_HPP

// basic_event_stream<T>: libretto's async generator. A producer coroutine emits items
// into a bounded buffer; the consumer pulls them with `co_await stream.next()`.
// Semantics are specified in docs/event_stream.md.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/stream/detail/stream_state.hpp>
#include <libretto/stream/stream_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/this_coro.hpp>

#include <concepts>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

template <class T>
class basic_event_stream;

namespace detail {
struct stream_access;
}

/// The producer's handle on its stream. Cheap to copy; every copy emits into the same
/// stream. Keeps the stream's state alive.
template <class T>
class stream_writer {
public:
    using value_type = T;
    using executor_type = boost::asio::any_io_executor;

    /// Enqueues `item` when called (waking a waiting consumer). The awaitable completes at
    /// once while the buffer has room; otherwise it suspends until the consumer has taken
    /// enough items (back-pressure).
    /// The awaitable throws boost::system::system_error with errc::cancelled if the
    /// consumer cancelled or destroyed the stream (also if this emit is cancelled through
    /// its own cancellation slot; the item then stays queued), and errc::stream_closed if
    /// the producer has already returned; the item is then not queued.
    ///
    /// Takes the item by reference, not by value: in `co_await out.emit(std::move(e))` a
    /// by-value parameter would be a temporary of the caller's full expression, which spans
    /// the suspension, so every such call would keep a copy of T in the caller's coroutine
    /// frame (an event is up to 400 bytes) for the caller's whole life. Nor does the awaitable
    /// keep the item: a producer held back by a slow consumer holds no copy of it.
    boost::asio::awaitable<void> emit(T&& item) const { return detail::emit_item<T>(state_, std::move(item)); }
    boost::asio::awaitable<void> emit(const T& item) const { return detail::emit_item<T>(state_, T(item)); }

    /// emit() for hot loops: the same hand-over, but the awaitable is returned only when
    /// there is something to wait for (no room in the buffer, a refusal to report, or what
    /// a runner consuming inside emit() must wait for); nothing when the emit is complete.
    /// An asio awaitable is always a coroutine frame, so
    /// `if (auto w = out.emit_or_wait(std::move(e))) co_await std::move(*w);` saves one
    /// allocation per item over `co_await out.emit(std::move(e))`, with the same
    /// back-pressure and errors. Which to pick: emit() by default; emit_or_wait() in a
    /// producer whose per-item cost matters (many items per run, many runs in flight).
    std::optional<boost::asio::awaitable<void>> emit_or_wait(T&& item) const {
        return detail::emit_or_wait<T>(state_, std::move(item));
    }

    executor_type get_executor() const { return state_->get_executor(); }

    /// True when the consumer takes each item inside emit() (a runner running this producer
    /// in its own coroutine, docs/runner.md): once emit() has returned its awaitable, the
    /// item has been consumed (for the runner: stored). False for an ordinary consumer,
    /// which may take the item later.
    bool consumed_on_emit() const noexcept { return state_->has_sink(); }

private:
    friend struct detail::stream_access;
    explicit stream_writer(std::shared_ptr<detail::stream_state<T>> st) : state_(std::move(st)) {}

    std::shared_ptr<detail::stream_state<T>> state_;
};

namespace detail {

struct stream_access {
    template <class T>
    static stream_writer<T> make_writer(std::shared_ptr<stream_state<T>> st) {
        return stream_writer<T>(std::move(st));
    }
    template <class T>
    static basic_event_stream<T> make_ready(boost::asio::any_io_executor ex, std::vector<T> items) {
        auto st = std::make_shared<stream_state<T>>(std::move(ex), 0);
        st->preload(std::move(items));
        return basic_event_stream<T>(std::move(st));
    }
    /// A stream whose first next() rethrows `ep` (no producer coroutine: a model's error
    /// known when generate() is called).
    template <class T>
    static basic_event_stream<T> make_failed(boost::asio::any_io_executor ex, std::exception_ptr ep) {
        auto st = std::make_shared<stream_state<T>>(std::move(ex), 0);
        st->producer_done(std::move(ep)); // as if a producer had thrown before emitting
        return basic_event_stream<T>(std::move(st));
    }

    /// try_next() without moving the item out: its slot, taken from the stream, or nullptr
    /// when try_next() would give nothing. The caller moves from it at once, before
    /// anything else runs on the stream's executor (a later push, or a cancel(), reuses or
    /// destroys the slot). For a consumer that takes an item apart (llm_agent's call_model
    /// moves a chunk's parts out): a move of the whole item fewer.
    template <class T>
    static T* try_take(basic_event_stream<T>& s) {
        auto& st = s.state_;
        if (!st || st->consumer_waiting() || !st->has_items() || st->phase() == stream_phase::cancelled)
            return nullptr;
        return &st->take();
    }

    /// True if run_inline can run `s` on `ex`: a producer not started yet, on that executor.
    template <class T>
    static bool can_run_inline(const basic_event_stream<T>& s, const boost::asio::any_io_executor& ex) {
        return s.state_ && s.state_->unstarted() && s.state_->phase() == stream_phase::open &&
               s.state_->get_executor() == ex;
    }

    /// The unstarted producer of a stream, taken to run in its consumer's own coroutine
    /// (start_inline). The consumer co_awaits body(), then calls finish(). Destroying it
    /// (also with its coroutine frame, mid-run) detaches the sink; destroying it before
    /// body() was awaited cancels the stream.
    template <class T>
    class inline_run {
    public:
        inline_run(std::shared_ptr<stream_state<T>> st, boost::asio::awaitable<void> body) noexcept
            : st_(std::move(st)), body_(std::move(body)) {}
        inline_run(inline_run&& other) noexcept : st_(std::move(other.st_)), body_(std::move(other.body_)) {}
        inline_run& operator=(inline_run&&) = delete;
        ~inline_run() {
            if (!st_) return;
            st_->drop_sink();
            // Never awaited: the stream has no producer left to run; its consumer gets
            // errc::cancelled rather than waiting for ever.
            if (body_.valid()) st_->cancel();
        }

        /// The producer's body, to co_await once.
        boost::asio::awaitable<void>& body() noexcept { return body_; }

        /// After body() completed: rethrows the sink's failure, else the producer's. The
        /// stream has ended afterwards (next() throws errc::stream_closed).
        void finish() {
            st_->drop_sink();
            if (std::exception_ptr ep = st_->take_sink_error()) std::rethrow_exception(ep);
            if (st_->phase() == stream_phase::failed) {
                st_->mark_closed();
                std::exception_ptr ep = st_->take_error();
                std::rethrow_exception(ep);
            }
            if (st_->phase() == stream_phase::ended) st_->mark_closed();
        }

    private:
        std::shared_ptr<stream_state<T>> st_;
        boost::asio::awaitable<void> body_;
    };

    /// Takes the unstarted producer of `s` to run in the calling coroutine (no spawn, no
    /// buffer, no next() per item): `k` takes each item inside the producer's emit(). A
    /// plain function, so that the caller awaits the body in its own frame (run_inline is
    /// the same as a coroutine). Throws errc::busy when the producer was started already.
    /// Precondition: can_run_inline(s, the caller's executor).
    template <class T>
    static inline_run<T> start_inline(basic_event_stream<T>& s, typename stream_state<T>::sink& k) {
        std::shared_ptr<stream_state<T>> st = s.state_;
        std::optional<boost::asio::awaitable<void>> body = st->take_body_inline(k);
        if (!body) throw_stream_error(errc::busy);
        return inline_run<T>(std::move(st), std::move(*body));
    }

    /// start_inline, the body awaited, then finish(): completes when the producer returns;
    /// rethrows the sink's failure, else the producer's. The stream has ended afterwards.
    template <class T>
    static boost::asio::awaitable<void> run_inline(basic_event_stream<T>& s, typename stream_state<T>::sink& k) {
        inline_run<T> run = start_inline(s, k);
        co_await std::move(run.body());
        run.finish();
    }
};

template <class P, class T>
concept stream_producer =
    std::move_constructible<std::decay_t<P>> &&
    std::invocable<std::decay_t<P>&, stream_writer<T>> &&
    std::convertible_to<std::invoke_result_t<std::decay_t<P>&, stream_writer<T>>,
                        boost::asio::awaitable<void>>;

/// Runs the user's producer. Created (suspended) by the stream's constructor and only
/// spawned by the first next(); holds the state weakly until then so an unstarted stream
/// is not kept alive by its own producer.
template <class T, class Producer>
boost::asio::awaitable<void> run_producer(std::weak_ptr<stream_state<T>> weak, Producer producer) {
    std::shared_ptr<stream_state<T>> st = weak.lock();
    if (!st || st->phase() != stream_phase::open) co_return; // cancelled before it ran

    // Marks the producer finished even if this frame is destroyed without completing
    // (io_context shutdown), so a parked consumer is released instead of leaked.
    struct done_guard {
        stream_state<T>* st;
        bool reported = false;
        ~done_guard() {
            if (!reported) {
                try {
                    st->producer_done(std::make_exception_ptr(
                        boost::system::system_error(make_error_code(errc::cancelled))));
                } catch (...) {
                }
            }
        }
    } guard{st.get()};

    st->producer_started();
    std::exception_ptr ep;
    try {
        stream_writer<T> writer = stream_access::make_writer<T>(st);
        // `producer` lives in this frame for the whole call: a lambda coroutine's
        // captures stay valid.
        boost::asio::awaitable<void> body = std::invoke(producer, std::move(writer));
        co_await std::move(body);
    } catch (...) {
        ep = std::current_exception();
    }
    guard.reported = true;
    st->producer_done(std::move(ep), true);
    // If we were cancelled, leave the thread's cancellation state clean: Asio 1.26's
    // co_spawn entry point may co_await once more after we return. Not when run inline:
    // the thread, and its cancellation state, are the consumer's.
    if (!st->runs_inline()) co_await boost::asio::this_coro::reset_cancellation_state();
}

} // namespace detail

/// An async generator of T: see docs/event_stream.md.
///
/// Thread-safety: not thread-safe. Consume it, cancel it and destroy it on its
/// executor (a single-threaded io_context or a strand); the producer runs there too.
template <class T>
class basic_event_stream {
public:
    using value_type = T;
    using executor_type = boost::asio::any_io_executor;

    /// `producer` is any callable `awaitable<void>(stream_writer<T>)`, taken by value.
    /// Lazy: it is spawned on `ex` by the first next().
    template <class Producer>
        requires detail::stream_producer<Producer, T>
    basic_event_stream(executor_type ex, Producer producer, stream_options options = {})
        : state_(std::make_shared<detail::stream_state<T>>(std::move(ex), options.capacity)) {
        state_->set_body(detail::run_producer<T, std::decay_t<Producer>>(
            std::weak_ptr<detail::stream_state<T>>(state_), std::move(producer)));
    }

    basic_event_stream(const basic_event_stream&) = delete;
    basic_event_stream& operator=(const basic_event_stream&) = delete;

    /// The moved-from stream behaves as closed: next() throws errc::stream_closed.
    basic_event_stream(basic_event_stream&& other) noexcept = default;

    /// Cancels the stream this one held, then takes over `other`'s.
    basic_event_stream& operator=(basic_event_stream&& other) noexcept {
        if (this != &other) {
            reset();
            state_ = std::move(other.state_);
        }
        return *this;
    }

    /// Cancels a running producer (as cancel()). Safe whatever the producer is
    /// suspended on: it holds the shared state and finishes on its own.
    ~basic_event_stream() { reset(); }

    /// The next item; std::nullopt once, at the end. See docs/event_stream.md for the
    /// exact behaviour after the end, after an error and after cancellation.
    boost::asio::awaitable<std::optional<T>> next() { return detail::next_impl<T>(state_); }

    /// The next item if one is buffered now (the producer ran ahead, or a make_stream
    /// stream), moved out of its slot; otherwise std::nullopt at once. Never suspends, never
    /// starts the producer and never reports the end or an error: when it gives nothing,
    /// `co_await next()` waits for the next item, the end or the failure as usual. No
    /// coroutine frame, so a consumer draining ready items calls it first:
    ///
    ///     std::optional<T> item = s.try_next();
    ///     if (!item) item = co_await s.next();
    ///
    /// std::nullopt also on a moved-from or cancelled stream and while a next() is pending.
    std::optional<T> try_next() {
        if (!state_ || state_->consumer_waiting() || !state_->has_items() ||
            state_->phase() == detail::stream_phase::cancelled)
            return std::nullopt;
        return std::optional<T>(std::move(state_->take()));
    }

    /// The completion signature of async_next.
    using next_signature = void(boost::system::error_code, std::optional<T>);

    /// next() as an Asio operation with any completion token (default:
    /// libretto::default_completion_token_t): completes with (error_code, item), std::nullopt
    /// at the end. A failure next() would throw becomes its code, and its words go to `diag`
    /// (docs/errors.md): a system_error keeps its code, another exception is
    /// errc::unexpected_exception. With use_awaitable the error is thrown as
    /// error_with_diagnostics. Cancellation through the token's bound slot cancels the wait
    /// (errc::cancelled, as cancel()).
    template <boost::asio::completion_token_for<next_signature> CompletionToken = default_completion_token_t>
    auto async_next(diagnostics& diag, CompletionToken&& token = {}) {
        return start_next(&diag, std::forward<CompletionToken>(token));
    }
    template <boost::asio::completion_token_for<next_signature> CompletionToken = default_completion_token_t>
    auto async_next(CompletionToken&& token = {}) {
        return start_next(nullptr, std::forward<CompletionToken>(token));
    }

    /// Cancels the producer and drops buffered items; a pending next() and every later
    /// next() throw errc::cancelled. Idempotent.
    void cancel() {
        if (state_) state_->cancel();
    }

    /// Precondition: not moved-from.
    executor_type get_executor() const { return state_->get_executor(); }

private:
    template <class CompletionToken>
    auto start_next(diagnostics* d, CompletionToken&& token) {
        return detail::initiate_with_diagnostics<next_signature>(
            d, std::forward<CompletionToken>(token), [this](auto handler, diagnostics* d) {
                if (!state_) { // moved-from: closed, as next() says; there is no executor of ours
                    if (d) d->assign("event_stream: next on a moved-from stream");
                    auto ex = boost::asio::get_associated_executor(handler);
                    boost::asio::post(ex, boost::asio::append(std::move(handler), make_error_code(errc::stream_closed),
                                                              std::optional<T>()));
                    return;
                }
                detail::spawn_with_error_code<std::optional<T>>(
                    std::move(handler), d, get_executor(), next(),
                    [](const std::optional<T>&, diagnostics*) { return boost::system::error_code(); });
            });
    }

    friend struct detail::stream_access;
    explicit basic_event_stream(std::shared_ptr<detail::stream_state<T>> st) noexcept : state_(std::move(st)) {}

    void reset() noexcept {
        if (state_) {
            state_->cancel();
            state_.reset();
        }
    }

    std::shared_ptr<detail::stream_state<T>> state_;
};

/// A stream over ready items (scripted replies, replays, tests). The items are buffered
/// when the stream is made and the stream has ended: there is no producer, so nothing is
/// spawned, next() never suspends, and `options` (a producer's back-pressure) changes
/// nothing. Cancelling or destroying the stream drops the items not taken.
template <class T>
basic_event_stream<T> make_stream(boost::asio::any_io_executor ex, std::vector<T> items,
                                  [[maybe_unused]] stream_options options = {}) {
    return detail::stream_access::make_ready<T>(std::move(ex), std::move(items));
}

/// The stream every agent returns: libretto events.
using event_stream = basic_event_stream<event>;
using event_writer = stream_writer<event>;

/// Immutable events shared with their holders (a session, a store) rather than copied:
/// what runner::run_shared yields.
using shared_event_stream = basic_event_stream<std::shared_ptr<const event>>;
using shared_event_writer = stream_writer<std::shared_ptr<const event>>;

} // namespace libretto

#endif
