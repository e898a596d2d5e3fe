// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_IMPL_LLM_AGENT_TOOLS_HPP
#define LIBRETTO_AGENT_IMPL_LLM_AGENT_TOOLS_HPP

// The tool phase of an llm_agent step (llm_agent_run's members): the calls a model
// response asks for, run here when there is one synchronous call, else one at a time in
// this coroutine or concurrently, with the events they push forwarded as they arrive.

#include <libretto/agent/impl/llm_agent.hpp>

#include <libretto/agent/detail/llm_loop.hpp>
#include <libretto/agent/detail/llm_tool_calls.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/detail/dependent_token.hpp>
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/tool/tool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace libretto::detail {

template <class Model>
llm_action llm_agent_run<Model>::take_tool_results(tool_inbox& inbox) {
    event_actions tool_actions;
    std::vector<part> attachments;
    for (auto& tc : inbox.contexts) {
        tool_actions.merge(tc.take_actions());
        for (auto& p : tc.take_attachments()) attachments.push_back(std::move(p));
    }
    std::vector<std::optional<tool_response_part>> results = std::move(inbox.results);
    return loop_.on_tool_results(std::move(results), std::move(tool_actions), std::move(attachments));
}

template <class Model>
std::shared_ptr<tool_inbox> llm_agent_run<Model>::open_inbox(const std::vector<pending_call>& calls,
                                                             event_callback& previous) {
    auto inbox = std::make_shared<tool_inbox>(out_.get_executor(), ctx_);
    const std::size_t n = calls.size();
    inbox->results.resize(n);
    inbox->errors.resize(n);
    previous = ctx_.event_callback();
    ctx_.set_event_callback(inbox_callback{inbox, ctx_.branch(), previous});
    inbox->contexts.reserve(n); // the calls get pointers into it
    for (std::size_t i = 0; i < n; ++i) inbox->contexts.emplace_back(inbox->ctx, calls[i].call);
    return inbox;
}

template <class Model>
bool llm_agent_run<Model>::run_tools_now(llm_action& a) {
    const std::optional<std::size_t> only = single_call(a.calls);
    if (!only) return false;
    const any_tool* t = o_.tools.find(a.calls[*only].call.tool_name);
    if (!t || !t->synchronous()) return false;
    event_callback previous;
    std::shared_ptr<tool_inbox> inbox = open_inbox(a.calls, previous);
    pending_call& call = a.calls[*only];
    start_single(*inbox);
    std::exception_ptr failure;
    try {
        inbox->results[*only] = run_one_call_now(&o_, *t, call.call, call.long_running, &inbox->contexts[*only]);
    } catch (...) {
        failure = std::current_exception();
    }
    end_single(inbox, previous);
    if (failure) std::rethrow_exception(failure);
    a = take_tool_results(*inbox);
    return true;
}

template <class Model>
boost::asio::awaitable<std::shared_ptr<tool_inbox>> llm_agent_run<Model>::run_tools(std::vector<pending_call> calls) {
    auto ex = out_.get_executor();
    event_callback previous;
    std::shared_ptr<tool_inbox> inbox = open_inbox(calls, previous);
    const std::size_t n = calls.size();
    std::size_t to_run = 0, only = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!calls[i].answer) {
            ++to_run;
            only = i;
        }
    }
    if (to_run == 1) {
        co_await run_single(inbox, calls[only], only, std::move(previous));
        co_return inbox;
    }
    inbox->signals.reset(new boost::asio::cancellation_signal[n]);
    inbox->wake.emplace(ex);
    inbox->wake->expires_at(boost::asio::steady_timer::time_point::max());

    for (std::size_t i = 0; i < n; ++i) {
        if (calls[i].answer) continue;
        ++inbox->pending;
        auto op = run_one_call(&o_, std::move(calls[i].call), calls[i].long_running, &inbox->contexts[i]);
        boost::asio::co_spawn(
            ex, std::move(op),
            boost::asio::bind_cancellation_slot(
                inbox->signals[i].slot(),
                [inbox, i](std::exception_ptr ep, std::optional<tool_response_part> r) {
                    if (ep) inbox->errors[i] = ep;
                    else inbox->results[i] = std::move(r);
                    --inbox->pending;
                    inbox->notify();
                }));
    }

    std::exception_ptr failure;
    while (inbox->pending > 0 || inbox->next_event < inbox->events.size()) {
        while (inbox->next_event < inbox->events.size() && !failure) {
            event e = std::move(inbox->events[inbox->next_event++]);
            if (inbox->next_event == inbox->events.size()) {
                inbox->events.clear();
                inbox->next_event = 0;
            }
            try {
                if (auto wait = emit_one(std::move(e))) co_await std::move(*wait);
            } catch (...) {
                failure = std::current_exception();
            }
        }
        if (failure || inbox->pending == 0) break;
        inbox->wake->expires_at(boost::asio::steady_timer::time_point::max());
        auto wait = inbox->wake->async_wait(dependent_as_tuple_awaitable<Model>());
        std::tuple<boost::system::error_code> waited = co_await std::move(wait);
        (void)waited;
        boost::asio::cancellation_state cs = co_await boost::asio::this_coro::cancellation_state;
        if (cs.cancelled() != boost::asio::cancellation_type::none) {
            failure = std::make_exception_ptr(boost::system::system_error(make_error_code(errc::cancelled)));
        }
    }

    inbox->open = false;
    if (auto* mine = ctx_.event_callback().template target<inbox_callback>();
        mine && mine->inbox.lock() == inbox)
        ctx_.set_event_callback(previous);
    if (failure) {
        for (std::size_t i = 0; i < n; ++i) inbox->signals[i].emit(boost::asio::cancellation_type::terminal);
        std::rethrow_exception(failure);
    }
    // A call that failed other than by the tool (a bug, an exception from a callback
    // that is not a std::exception) fails the run.
    for (auto& ep : inbox->errors)
        if (ep) std::rethrow_exception(ep);
    co_return inbox;
}

template <class Model>
boost::asio::awaitable<void> llm_agent_run<Model>::run_single(std::shared_ptr<tool_inbox> inbox, pending_call& call,
                                                              std::size_t i, event_callback previous) {
    start_single(*inbox);
    std::exception_ptr failure;
    try {
        auto op = run_one_call(&o_, std::move(call.call), call.long_running, &inbox->contexts[i]);
        std::optional<tool_response_part> r = co_await std::move(op);
        inbox->results[i] = std::move(r);
    } catch (...) {
        failure = std::current_exception();
    }
    end_single(inbox, previous);
    if (failure) std::rethrow_exception(failure);
}

template <class Model>
void llm_agent_run<Model>::start_single(tool_inbox& inbox) {
    inbox.forward = [this](event&& e) {
        std::optional<boost::asio::awaitable<void>> room = emit_one(std::move(e));
        (void)room; // not awaited: see run_single
    };
}

template <class Model>
void llm_agent_run<Model>::end_single(const std::shared_ptr<tool_inbox>& inbox, event_callback& previous) {
    inbox->forward = nullptr;
    inbox->open = false;
    if (auto* mine = ctx_.event_callback().template target<inbox_callback>(); mine && mine->inbox.lock() == inbox)
        ctx_.set_event_callback(std::move(previous));
}

} // namespace libretto::detail

#endif
