// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_SERVICE_CALL_HPP
#define LIBRETTO_STORE_DETAIL_SERVICE_CALL_HPP

// How the type-erased services (any_session_index, any_artifact_service, ...) run a model's
// synchronous calls for their asynchronous operations: in the initiating call for a model
// that never blocks, on a worker strand for one that does (files, SQLite, PostgreSQL); the
// results complete the handler through a post to its associated executor. A moved-from
// handle is empty: its calls fail with asio::error::not_connected (see basic_service_handle).

#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/detail/post_completion.hpp>
#include <libretto/store/detail/post_result.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <exception>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace libretto::detail {

/// The worker of a blocking model: a one-thread pool of its own, or a strand on the given
/// executor. Held by the service handles only (never by an operation), so the pool is
/// joined by the last handle's destructor, on the caller's thread.
struct service_worker {
    explicit service_worker(boost::asio::any_io_executor blocking)
        : pool(blocking ? nullptr : std::make_unique<boost::asio::thread_pool>(1)),
          strand(blocking ? blocking : boost::asio::any_io_executor(pool->get_executor())) {}
    service_worker(const service_worker&) = delete;
    service_worker& operator=(const service_worker&) = delete;
    ~service_worker() {
        if (pool) pool->join(); // no work guard: returns once the operations are done
    }
    std::unique_ptr<boost::asio::thread_pool> pool;
    boost::asio::strand<boost::asio::any_io_executor> strand;
};

/// Runs work(*impl, d) (returning a tuple: error_code, results...) inline when `worker` is
/// null, else on its strand; the tuple completes `handler` through a post to its associated
/// executor (default `ex`), which is kept busy until then. An exception becomes the error.
template <class Impl, class Handler, class Work>
void run_service_call(std::shared_ptr<Impl> impl, service_worker* worker, const boost::asio::any_io_executor& ex,
                      Handler handler, diagnostics* d, Work work) {
    if (d) d->clear();
    auto guard = boost::asio::make_work_guard(boost::asio::get_associated_executor(handler, ex));
    auto body = [impl = std::move(impl), ex, d, guard = std::move(guard), handler = std::move(handler),
                 work = std::move(work)]() mutable {
        decltype(work(*impl, d)) results{};
        try {
            results = work(*impl, d);
        } catch (...) {
            // Never into the worker thread (it would end the process).
            results = {};
            std::get<0>(results) = exception_to_error(std::current_exception(), d);
        }
        std::apply([&](auto&... args) { post_result(std::move(handler), ex, std::move(args)...); }, results);
        guard.reset();
    };
    if (worker)
        boost::asio::post(worker->strand, std::move(body));
    else
        body();
}

/// Completes an operation of signature Sig (error_code first) of an empty handle with
/// not_connected and default values, through a post: to `ex` if any, else to the handler's
/// own executor (or the system executor), as an empty any_transport does.
template <class Sig>
struct empty_handle_completion;
template <class... Args>
struct empty_handle_completion<void(boost::system::error_code, Args...)> {
    template <class Handler>
    static void post(Handler handler, const boost::asio::any_io_executor& ex) {
        const boost::system::error_code ec(boost::asio::error::not_connected);
        post_completion(ex, std::move(handler), ec, std::decay_t<Args>{}...);
    }
};

/// What the type-erased service handles share: their executor, the model behind an
/// interface `Iface`, the worker of a blocking model, and how an operation starts: for a
/// work(model, diag) returning (error_code, results...), an operation of signature Sig.
/// A moved-from handle is empty: its calls fail with asio::error::not_connected (with
/// `empty_words` in the diagnostics), its executor is empty.
template <class Iface>
class basic_service_handle {
public:
    using executor_type = boost::asio::any_io_executor;
    /// The handle's executor; an empty one when moved from.
    executor_type get_executor() const { return impl_ ? ex_ : executor_type(); }

    /// True if a model is wrapped (false when moved from).
    explicit operator bool() const noexcept { return impl_ != nullptr; }

protected:
    basic_service_handle(const char* empty_words, executor_type ex, std::shared_ptr<Iface> impl, bool blocking,
                         executor_type blocking_executor)
        : ex_(std::move(ex)), impl_(std::move(impl)),
          worker_(blocking ? std::make_shared<service_worker>(std::move(blocking_executor)) : nullptr),
          empty_words_(empty_words) {}

    /// A synchronous call's result on an empty handle.
    boost::system::error_code empty_error(diagnostics* d) const {
        if (d) d->assign(empty_words_);
        return boost::asio::error::not_connected;
    }

    template <class Sig, class Token, class Work>
    auto start(diagnostics* d, Token&& token, Work work) {
        return initiate_with_diagnostics<Sig>(
            d, std::forward<Token>(token),
            [this](auto handler, diagnostics* d, Work work) {
                if (!impl_) { // moved from: never inside the initiating call, as any_transport
                    if (d) d->assign(empty_words_);
                    empty_handle_completion<Sig>::post(std::move(handler), executor_type());
                    return;
                }
                run_service_call(impl_, worker_.get(), ex_, std::move(handler), d, std::move(work));
            },
            std::move(work));
    }

    executor_type ex_;
    std::shared_ptr<Iface> impl_;
    std::shared_ptr<service_worker> worker_; ///< held by handles only: the last one joins the pool
    const char* empty_words_;                 ///< a literal: kept by a move
};

template <class Sig>
struct service_failure;
template <class... Args>
struct service_failure<void(boost::system::error_code, Args...)> {
    template <class Handler>
    static void complete(Handler handler, const boost::asio::any_io_executor& fallback, boost::system::error_code ec) {
        auto ex = boost::asio::get_associated_executor(handler, fallback);
        post_result(std::move(handler), ex, ec, std::decay_t<Args>{}...);
    }
};

/// Completes `handler` (of signature Sig: error_code first) with `ec` and default values,
/// through a post to its associated executor (default `fallback`).
template <class Sig, class Handler>
void complete_with_error(Handler handler, const boost::asio::any_io_executor& fallback, boost::system::error_code ec) {
    service_failure<Sig>::complete(std::move(handler), fallback, ec);
}

} // namespace libretto::detail

#endif
