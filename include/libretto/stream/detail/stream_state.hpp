// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STREAM_DETAIL_STREAM_STATE_HPP
#define LIBRETTO_STREAM_DETAIL_STREAM_STATE_HPP

// Shared state of one basic_event_stream: the buffer, the parked consumer / producers,
// the terminal state and the producer's cancellation signal. Everything that can be
// suspended (the producer, next(), emit()) holds a shared_ptr to it, so no party can
// outlive it: destroying the stream while the producer is suspended is safe by construction.
// Not thread-safe: the consumer, the producer and cancel()/the destructor must run on
// the stream's executor (a single-threaded io_context or a strand).

#include <libretto/error.hpp>
#include <libretto/stream/detail/ring_buffer.hpp>
#include <libretto/stream/stream_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace libretto::detail {

[[noreturn]] inline void throw_stream_error(errc e) {
    throw boost::system::system_error(make_error_code(e));
}

inline bool is_terminal_or_partial(boost::asio::cancellation_type_t t) noexcept {
    using ct = boost::asio::cancellation_type;
    return (t & (ct::terminal | ct::partial)) != ct::none;
}

/// Hand-overs and producer starts run inline (resume_consumer, the first next()) on the
/// current thread's stack, one inside the other when a consumer goes on to start or feed
/// another stream (a loop_agent's iterations, each a new stream). Past this depth they are
/// posted instead, so the stack stays bounded however long a run goes without waiting.
inline constexpr int max_inline_depth = 32;

inline int& inline_depth() noexcept {
    thread_local int depth = 0;
    return depth;
}

struct inline_scope {
    inline_scope() noexcept { ++inline_depth(); }
    ~inline_scope() { --inline_depth(); }
    inline_scope(const inline_scope&) = delete;
    inline_scope& operator=(const inline_scope&) = delete;
};

enum class stream_phase {
    open,      ///< producer not started or running
    ended,     ///< producer returned; buffered items still to deliver, then nullopt
    failed,    ///< producer threw; buffered items still to deliver, then the exception
    closed,    ///< the end (nullopt or exception) has been delivered
    cancelled, ///< cancel(), destructor, or the consumer was cancelled through its slot
};

/// A parked completion handler. Wraps any_completion_handler because its move
/// assignment in Asio 1.26 recurses forever (it re-wraps `other` as an lvalue); only its
/// move constructor and swap are used here.
class waiter {
public:
    using handler_type = boost::asio::any_completion_handler<void(boost::system::error_code)>;

    waiter() = default;
    explicit waiter(handler_type&& h) noexcept : h_(std::move(h)) {}
    waiter(waiter&& other) noexcept : h_(std::move(other.h_)) {}
    waiter& operator=(waiter&& other) noexcept {
        handler_type tmp(std::move(other.h_));
        h_.swap(tmp);
        return *this;
    }

    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

    /// Moves the handler out, leaving this empty.
    handler_type take() noexcept { return handler_type(std::move(h_)); }

private:
    handler_type h_;
};

template <class T>
class stream_state : public std::enable_shared_from_this<stream_state<T>> {
public:
    using executor_type = boost::asio::any_io_executor;
    using handler_type = boost::asio::any_completion_handler<void(boost::system::error_code)>;

    /// A consumer that takes each item inside the producer's emit() (stream_access::
    /// run_inline: the runner running its root agent's producer in its own coroutine). What
    /// accept() returns is what that emit() must wait for (e.g. another stream's
    /// emit_or_wait of the item), or nothing when the item is done with.
    /// An exception from accept() is the consumer's failure: run_inline rethrows it, and the
    /// producer sees errc::cancelled, as when a consumer cancels.
    struct sink {
        virtual std::optional<boost::asio::awaitable<void>> accept(T&& item) = 0;

    protected:
        ~sink() = default;
    };

    stream_state(executor_type ex, std::size_t capacity)
        // The ring allocates one slot at the first emit and grows only when the producer
        // runs ahead of the consumer (a second slot holds the next emit's item while the
        // first is handed over), so the capacity costs nothing until it is used: with
        // 10,000 turns in flight each unused slot is 6 MB of events.
        : ex_(std::move(ex)), capacity_(capacity), buffer_(1) {}

    stream_state(const stream_state&) = delete;
    stream_state& operator=(const stream_state&) = delete;

    const executor_type& get_executor() const noexcept { return ex_; }
    stream_phase phase() const noexcept { return phase_; }
    bool has_items() const noexcept { return !buffer_.empty(); }
    bool consumer_waiting() const noexcept { return static_cast<bool>(consumer_); }

    // ---- producer side ------------------------------------------------------------

    /// The unstarted producer. Kept as an awaitable so that starting is just co_spawn.
    void set_body(boost::asio::awaitable<void> body) { body_.emplace(std::move(body)); }

    bool can_emit() const noexcept { return phase_ == stream_phase::open; }
    /// True while a sink takes the items (run_inline): each is consumed when emit() returns.
    bool has_sink() const noexcept { return sink_ != nullptr; }
    /// The producer runs inside its consumer's coroutine (run_inline), not spawned.
    bool runs_inline() const noexcept { return runs_inline_; }
    void check_emit() const {
        if (phase_ == stream_phase::cancelled) throw_stream_error(errc::cancelled);
        if (phase_ != stream_phase::open) throw_stream_error(errc::stream_closed);
    }

    /// Enqueues an item, wakes a parked consumer, returns the item's sequence number.
    std::uint64_t push(T&& item) {
        buffer_.push_back(std::move(item));
        const std::uint64_t seq = pushed_++;
        if (consumer_) {
            in_push_ = true;
            struct pushing { // reset even if the resumed consumer's completion throws
                bool& flag;
                ~pushing() { flag = false; }
            } scope{in_push_};
            resume_consumer();
        }
        return seq;
    }

    /// A consumer that push() resumed inline cancelled the stream (it took the item it
    /// wanted and dropped the stream): the producer's cancellation signal is held back
    /// until emit_signalled() sends it, inside the emit's awaitable. Sent at once, it
    /// would make Asio throw at the producer's `co_await` of that very emit, although the
    /// item was delivered: an exception for every model call whose consumer stops at the
    /// final chunk.
    bool signal_held() const noexcept { return signal_held_; }
    void send_held_signal() {
        if (!std::exchange(signal_held_, false)) return;
        if (producer_active_) producer_cancel_.emit(boost::asio::cancellation_type::terminal);
    }

    /// emit() with a sink: the sink takes the item now. A failure of the sink cancels the
    /// stream (the producer's awaitable throws errc::cancelled) and is kept for run_inline.
    std::optional<boost::asio::awaitable<void>> sink_emit(T&& item) {
        try {
            return sink_->accept(std::move(item));
        } catch (...) {
            sink_error_ = std::current_exception();
            cancel();
            return refused();
        }
    }
    static boost::asio::awaitable<void> refused_body(std::shared_ptr<stream_state> st);
    boost::asio::awaitable<void> refused() { return refused_body(this->shared_from_this()); }

    /// run_inline: takes the unstarted producer for the caller to co_await itself, with
    /// `k` taking every item. Empty if the producer was started already.
    std::optional<boost::asio::awaitable<void>> take_body_inline(sink& k) {
        if (!body_ || phase_ != stream_phase::open) return std::nullopt;
        std::optional<boost::asio::awaitable<void>> body = std::move(body_);
        body_.reset();
        sink_ = &k;
        runs_inline_ = true;
        return body;
    }
    /// The end of run_inline (also when its frame is destroyed): no sink from now on.
    void drop_sink() noexcept { sink_ = nullptr; }
    std::exception_ptr take_sink_error() noexcept { return std::exchange(sink_error_, nullptr); }

    /// Back-pressure rule: an emit() may return once its item is among the first
    /// `capacity` items the consumer has not taken yet (for capacity 0: once taken).
    /// (Written without popped_ + capacity_, which wraps for a capacity near SIZE_MAX.)
    bool has_room_for(std::uint64_t seq) const noexcept { return seq < popped_ || seq - popped_ < capacity_; }

    /// The consumer has taken item `seq` (cancel() drops the others without counting them).
    bool taken(std::uint64_t seq) const noexcept { return seq < popped_; }

    void producer_started() noexcept { producer_active_ = true; }

    /// A stream over items known up front (make_stream): all of them buffered at once, and
    /// the stream ended. No producer: nothing is spawned, next() never waits.
    void preload(std::vector<T>&& items) {
        pushed_ = items.size();
        buffer_.adopt(std::move(items));
        phase_ = stream_phase::ended;
    }

    /// The producer body returned (ep == nullptr) or threw. `from_body`: called by the
    /// producer's coroutine itself, which may resume a consumer on ex_ inline (as push()).
    void producer_done(std::exception_ptr ep, bool from_body = false) {
        producer_active_ = false;
        if (phase_ != stream_phase::open) return; // cancelled: nobody wants the outcome
        phase_ = ep ? stream_phase::failed : stream_phase::ended;
        error_ = std::move(ep);
        // Stray emitters (copies of the writer used after the producer returned).
        fail_producers(errc::stream_closed);
        if (consumer_) {
            if (from_body) resume_consumer();
            else complete(consumer_, {});
        }
    }

    // ---- consumer side ------------------------------------------------------------

    /// The first item, taken: its slot, to move from at once (ring_buffer::take_front).
    /// Producers are woken by post, so nothing reuses the slot before the caller has moved.
    T& take() {
        T& slot = buffer_.take_front();
        ++popped_;
        wake_producers();
        return slot;
    }

    /// Lazy start: the producer is spawned by the first next(). Returns false if it had
    /// already been started. co_spawn may run the producer inline (dispatch), so the
    /// caller must re-examine the state afterwards.
    bool start() {
        if (!body_) return false;
        boost::asio::awaitable<void> body = std::move(*body_);
        body_.reset();
        auto self = this->shared_from_this();
        boost::asio::co_spawn(ex_, std::move(body),
            boost::asio::bind_cancellation_slot(producer_cancel_.slot(), spawn_done{std::move(self)}));
        return true;
    }

    /// next() reached the end: reports it once, then the stream is closed.
    void mark_closed() noexcept { phase_ = stream_phase::closed; }
    std::exception_ptr take_error() noexcept { return std::exchange(error_, nullptr); }

    /// Idempotent. Drops buffered items, fails the pending next() and emit()s with
    /// errc::cancelled and cancels a running producer through its cancellation slot.
    void cancel() {
        if (phase_ == stream_phase::cancelled) return;
        phase_ = stream_phase::cancelled;
        error_ = nullptr;
        // Destroyed at scope exit, after the state is consistent (it may own other streams).
        std::optional<boost::asio::awaitable<void>> unstarted = std::move(body_);
        body_.reset();
        buffer_.clear();
        if (consumer_) complete(consumer_, make_error_code(errc::cancelled));
        fail_producers(errc::cancelled);
        // Only signal a producer that is inside its body: a co_spawn'd thread that is
        // cancelled before it runs, or after its body returned, can make Asio 1.26's
        // co_spawn entry point throw out of io_context::run().
        if (!producer_active_) return;
        if (in_push_) signal_held_ = true; // the producer is on the stack, inside emit()
        else producer_cancel_.emit(boost::asio::cancellation_type::terminal);
    }

    // ---- parking --------------------------------------------------------------------

    bool unstarted() const noexcept { return body_.has_value(); }

    /// Parks the consumer; with `start_producer`, then spawns the unstarted producer, so
    /// that its first items find the consumer parked and hand over inline (push()) instead
    /// of filling the buffer and making the producer wait for room.
    template <class Token>
    auto async_wait_consumer(Token&& token, bool start_producer = false) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            initiate_consumer_wait{this, start_producer}, token);
    }

    template <class Token>
    auto async_wait_producer(std::uint64_t seq, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            initiate_producer_wait{this, seq}, token);
    }

private:
    struct producer_waiter {
        std::uint64_t seq;
        waiter handler;
    };

    // Slot handlers keep a weak_ptr: the slot may outlive the wait if a handler is
    // destroyed without being invoked (io_context shutdown).
    struct consumer_cancellation {
        explicit consumer_cancellation(std::weak_ptr<stream_state> s) : state(std::move(s)) {}
        void operator()(boost::asio::cancellation_type_t type) {
            if (!is_terminal_or_partial(type)) return;
            // Cancelling a pending next() finishes the whole stream (documented).
            if (auto st = state.lock()) st->cancel();
        }
        std::weak_ptr<stream_state> state;
    };

    struct producer_cancellation {
        producer_cancellation(std::weak_ptr<stream_state> s, std::uint64_t q)
            : state(std::move(s)), seq(q) {}
        void operator()(boost::asio::cancellation_type_t type) {
            if (!is_terminal_or_partial(type)) return;
            if (auto st = state.lock()) st->fail_producer(seq, errc::cancelled);
        }
        std::weak_ptr<stream_state> state;
        std::uint64_t seq;
    };

    /// start(), one pass through the event loop later (see max_inline_depth).
    struct deferred_start {
        std::shared_ptr<stream_state> self;
        void operator()() const {
            if (self->phase_ == stream_phase::open) self->start();
        }
    };

    struct initiate_consumer_wait {
        stream_state* self;
        bool start_producer;
        template <class Handler>
        void operator()(Handler&& handler) const {
            // A consumer on the stream's own executor is resumed inline by push() (see
            // resume_consumer); asked before wrapping, as any_completion_handler does not
            // pass its associated executor on in Asio 1.26.
            const bool same_executor = boost::asio::get_associated_executor(handler, self->ex_) == self->ex_;
            // Wrap first: any_completion_handler installs its own cancellation state in
            // the handler's slot, so our cancellation handler goes on *its* slot.
            handler_type h(std::forward<Handler>(handler));
            auto slot = h.get_cancellation_slot();
            if (slot.is_connected())
                slot.template emplace<consumer_cancellation>(self->weak_from_this());
            self->consumer_ = waiter(std::move(h));
            self->consumer_inline_ = same_executor;
            // The consumer's coroutine has suspended: the producer may resume it from here.
            if (start_producer) {
                if (inline_depth() >= max_inline_depth) {
                    boost::asio::post(self->ex_, deferred_start{self->shared_from_this()});
                } else {
                    inline_scope nested;
                    self->start();
                }
            }
        }
    };

    struct initiate_producer_wait {
        stream_state* self;
        std::uint64_t seq;
        template <class Handler>
        void operator()(Handler&& handler) const {
            handler_type h(std::forward<Handler>(handler));
            auto slot = h.get_cancellation_slot();
            if (slot.is_connected())
                slot.template emplace<producer_cancellation>(self->weak_from_this(), seq);
            producer_waiter w{seq, waiter(std::move(h))};
            self->producers_.push_back(std::move(w));
        }
    };

    /// co_spawn completion of the producer thread. It owns a reference to the state so
    /// that the cancellation signal (which hosts the thread's cancellation state) outlives
    /// the thread; the reference is released one post later, after Asio has finished
    /// unwinding the thread.
    struct spawn_done {
        std::shared_ptr<stream_state> state;
        struct release {
            std::shared_ptr<stream_state> state;
            void operator()() noexcept { state.reset(); }
        };
        void operator()(std::exception_ptr ep) {
            // Only non-null if the body never ran (run_producer catches everything).
            if (state->phase_ == stream_phase::open) state->producer_done(ep);
            executor_type ex = state->ex_;
            boost::asio::post(ex, release{std::move(state)});
        }
    };

    /// A consumer parked in next() on the stream's executor, woken by a new item, runs at
    /// once, inside the producer's emit() (before emit() returns its awaitable): it takes
    /// the item, and usually parks again, before the producer goes on. That is a
    /// rendezvous with no post and no queued handler per item, and the producer never
    /// waits for room because the consumer has already taken the item. emit() holds the
    /// state through its writer, so a consumer that drops or cancels the stream meanwhile
    /// leaves it valid. Only the item hand-over does this: every other wake-up (the end,
    /// cancellation, a producer waiting for room) is posted.
    void resume_consumer() {
        if (!consumer_inline_ || inline_depth() >= max_inline_depth) {
            complete(consumer_, {});
            return;
        }
        handler_type h = consumer_.take();
        inline_scope nested;
        std::move(h)(boost::system::error_code{});
    }

    /// Posted, never invoked inline: the caller may be inside a cancellation slot,
    /// inside emit() or inside next().
    void complete(waiter& w, boost::system::error_code ec) {
        handler_type h = w.take();
        boost::asio::post(ex_, boost::asio::append(std::move(h), ec));
    }

    void wake_producers() {
        if (producers_.empty()) return;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < producers_.size(); ++i) {
            if (has_room_for(producers_[i].seq)) complete(producers_[i].handler, {});
            else if (kept != i) producers_[kept++] = std::move(producers_[i]);
            else ++kept;
        }
        producers_.resize(kept);
    }

    void fail_producers(errc e) {
        std::vector<producer_waiter> all = std::move(producers_);
        producers_.clear();
        for (auto& w : all) complete(w.handler, make_error_code(e));
    }

    void fail_producer(std::uint64_t seq, errc e) {
        for (std::size_t i = 0; i < producers_.size(); ++i) {
            if (producers_[i].seq == seq) {
                complete(producers_[i].handler, make_error_code(e));
                producers_.erase(producers_.begin() + static_cast<std::ptrdiff_t>(i));
                return;
            }
        }
    }

    executor_type ex_;
    std::size_t capacity_;
    ring_buffer<T> buffer_;
    std::uint64_t pushed_ = 0;
    std::uint64_t popped_ = 0;
    stream_phase phase_ = stream_phase::open;
    std::exception_ptr error_;
    std::optional<boost::asio::awaitable<void>> body_;
    bool producer_active_ = false;
    boost::asio::cancellation_signal producer_cancel_;
    waiter consumer_;
    bool consumer_inline_ = false; ///< consumer_ runs on ex_: push() may resume it inline
    std::vector<producer_waiter> producers_;
    sink* sink_ = nullptr;
    std::exception_ptr sink_error_;
    bool runs_inline_ = false;
    bool in_push_ = false;     ///< push() is resuming the consumer inline
    bool signal_held_ = false; ///< see signal_held()
};

/// The body of next(). A free coroutine holding the state by shared_ptr, so moving or
/// destroying the stream object while a next() is pending is harmless.
template <class T>
boost::asio::awaitable<std::optional<T>> next_impl(std::shared_ptr<stream_state<T>> st) {
    if (!st) throw_stream_error(errc::stream_closed); // moved-from stream
    for (;;) {
        // Fast path: no suspension, no allocation beyond the (recycled) coroutine frame.
        // The item moves from its slot straight into the result: a by-value pop() would be
        // a temporary that g++ keeps in the frame (up to 400 bytes of event per next()).
        if (st->has_items() && st->phase() != stream_phase::cancelled) co_return std::move(st->take());
        switch (st->phase()) {
        case stream_phase::cancelled: throw_stream_error(errc::cancelled);
        case stream_phase::closed: throw_stream_error(errc::stream_closed);
        case stream_phase::ended: st->mark_closed(); co_return std::nullopt;
        case stream_phase::failed: {
            st->mark_closed();
            std::exception_ptr ep = st->take_error();
            std::rethrow_exception(ep);
        }
        case stream_phase::open: break;
        }
        if (st->consumer_waiting()) throw_stream_error(errc::busy); // one next() at a time
        try {
            // Lazy start: the first next() spawns the producer once it is parked. A deferred
            // operation is awaited in place; use_awaitable would make a coroutine frame for
            // every wait. The error code (cancel()) is not needed: the phase says it.
            auto wait = st->async_wait_consumer(boost::asio::as_tuple(boost::asio::deferred), st->unstarted());
            co_await std::move(wait);
        } catch (const boost::system::system_error& e) {
            // Asio refuses to suspend a coroutine that is already cancelled
            // (throw_if_cancelled): that is a cancelled next() as well.
            if (e.code() != boost::asio::error::operation_aborted) throw;
            st->cancel();
        }
        // Woken: an item, the end, or cancellation (the phase tells which). Loop.
    }
}

/// The waiting part of stream_writer::emit(): the item (already queued as `seq`) must be
/// among the first `capacity` the consumer has not taken. A coroutine without the item, so
/// a producer held back by a slow consumer keeps no copy of it in a frame.
template <class T>
boost::asio::awaitable<void> emit_wait(std::shared_ptr<stream_state<T>> st, std::uint64_t seq) {
    if (st->has_room_for(seq)) co_return; // the consumer took items since the call
    auto wait = st->async_wait_producer(seq, boost::asio::as_tuple(boost::asio::deferred)); // awaited in place
    auto [ec] = co_await std::move(wait);
    if (ec) throw boost::system::system_error(ec);
    // An item the consumer took was delivered: a consumer that stops after the last item
    // it wanted (and drops the stream) must not cost its producer an exception, which is
    // the most expensive thing a turn would do. The producer's next emit throws.
    if (st->phase() == stream_phase::cancelled && !st->taken(seq)) throw_stream_error(errc::cancelled);
}

/// An emit during which the consumer cancelled the stream (signal_held()): once the
/// producer awaits it (Asio has let the `co_await` through), the producer is sent its
/// cancellation, so that its next `co_await` fails as after any cancel(). The emit itself
/// completes if its item was taken, and throws errc::cancelled if it was dropped.
template <class T>
boost::asio::awaitable<void> emit_signalled(std::shared_ptr<stream_state<T>> st, std::uint64_t seq) {
    st->send_held_signal();
    if (!st->taken(seq)) throw_stream_error(errc::cancelled);
    co_return;
}

/// An emit that cannot enqueue: throws (cancelled, or closed) when awaited.
template <class T>
boost::asio::awaitable<void> emit_refused(std::shared_ptr<stream_state<T>> st) {
    st->check_emit();
    co_return;
}

template <class T>
boost::asio::awaitable<void> stream_state<T>::refused_body(std::shared_ptr<stream_state> st) {
    return emit_refused<T>(std::move(st));
}

/// stream_writer::emit_or_wait(): queues the item at once (waking a waiting consumer).
/// Returns nothing when the emit is complete (the item is within the capacity), else the
/// awaitable that waits for room (back-pressure) or reports why the item was refused.
/// With a sink (run_inline) the sink takes the item instead, and says what to wait for.
/// No coroutine frame is made for an emit that has nothing to wait for.
template <class T>
std::optional<boost::asio::awaitable<void>> emit_or_wait(const std::shared_ptr<stream_state<T>>& st, T&& item) {
    if (!st->can_emit()) return emit_refused<T>(st);
    if (st->has_sink()) return st->sink_emit(std::move(item));
    const std::uint64_t seq = st->push(std::move(item));
    if (st->signal_held()) [[unlikely]] {
        // With nothing to await, the producer goes on synchronously: send the signal now
        // (its next co_await fails; a producer that returns next costs no exception).
        if (st->taken(seq)) {
            st->send_held_signal();
            return std::nullopt;
        }
        return emit_signalled<T>(st, seq);
    }
    // Room now is room when awaited: the consumer only ever takes items.
    if (st->has_room_for(seq)) return std::nullopt;
    return emit_wait<T>(st, seq);
}

/// The awaitable of an emit that has nothing left to wait for.
template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
boost::asio::awaitable<void> emit_done() { co_return; }

/// stream_writer::emit(): emit_or_wait, always as an awaitable.
template <class T>
boost::asio::awaitable<void> emit_item(const std::shared_ptr<stream_state<T>>& st, T&& item) {
    if (st->can_emit() && !st->has_sink()) {
        const std::uint64_t seq = st->push(std::move(item));
        // The consumer cancelled inside the hand-over: the signal goes out once the
        // producer awaits this emit (emit_signalled), not before.
        if (st->signal_held()) [[unlikely]] return emit_signalled<T>(st, seq);
        if (st->has_room_for(seq)) return emit_done();
        return emit_wait<T>(st, seq);
    }
    std::optional<boost::asio::awaitable<void>> wait = emit_or_wait<T>(st, std::move(item));
    if (wait) return std::move(*wait);
    return emit_done();
}

} // namespace libretto::detail

#endif
