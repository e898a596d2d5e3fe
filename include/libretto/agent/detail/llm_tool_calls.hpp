// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_DETAIL_LLM_TOOL_CALLS_HPP
#define LIBRETTO_AGENT_DETAIL_LLM_TOOL_CALLS_HPP

// The tool phase of an llm_agent step, its parts that need no agent: one call with the
// agent's before_tool and after_tool callbacks (run_one_call, run_one_call_now), and the
// inbox that routes the events the calls push through ctx.emit into the agent's stream.
// `Options` is the agent's llm_agent_options (its tools and tool callbacks).

#include <libretto/agent/detail/llm_loop.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/event/event.hpp>
#include <libretto/tool/run_tool_call.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace libretto::detail {

/// Routes events pushed through ctx.emit while an llm_agent runs its tools into that
/// agent's stream. The invocation's event callback is shared by the whole tree, so the
/// agent installs one of these over it: events on the agent's branch (or below it) go to
/// the agent's inbox, others to the callback it replaced (a parallel sibling's), and
/// everything goes to the replaced callback once the agent's tools are done.
struct tool_inbox {
    tool_inbox(boost::asio::any_io_executor e, invocation_context c) : ex(std::move(e)), ctx(std::move(c)) {}
    boost::asio::any_io_executor ex;
    std::optional<boost::asio::steady_timer> wake; // only while calls run concurrently
    invocation_context ctx; // tools' contexts point here: it outlives a cancelled run
    std::vector<tool_context> contexts; // room reserved for every call first: never moves
    std::vector<event> events;          // pushed, not yet forwarded: [next_event, size)
    std::size_t next_event = 0;
    std::vector<std::optional<tool_response_part>> results;
    std::vector<std::exception_ptr> errors;
    std::unique_ptr<boost::asio::cancellation_signal[]> signals;
    std::size_t pending = 0;
    bool open = true;
    /// Set while a single call runs in the agent's own coroutine: the events the call
    /// pushes go straight to the agent's stream instead of the queue.
    std::function<void(event&&)> forward;

    void notify() {
        if (wake) wake->cancel();
    }
};

struct inbox_callback {
    std::weak_ptr<tool_inbox> inbox;
    std::string branch;
    event_callback previous;

    void operator()(event e) const {
        std::shared_ptr<tool_inbox> in = inbox.lock();
        const bool live = in && in->open;
        const bool mine = branch.empty() || e.branch == branch ||
                          (e.branch.size() > branch.size() && e.branch.starts_with(branch) &&
                           e.branch[branch.size()] == '.');
        if (live && (mine || !previous)) {
            if (in->forward) {
                in->forward(std::move(e));
                return;
            }
            in->events.push_back(std::move(e));
            in->notify();
        } else if (previous) {
            previous(std::move(e));
        }
    }
};


/// A call before its tool runs: the arguments the callbacks see (copied only for a
/// callback), and the response when the call is answered without the tool (a
/// before_tool veto, or its failure).
struct call_prep {
    bool after = false;
    json::object args;
    std::optional<tool_response_part> resp;
};

/// before_tool, which may change the arguments or answer instead of the tool.
template <class Options>
call_prep before_tool_call(const Options* o, tool_call_part& call, tool_context* tctx) {
    call_prep p;
    const bool known = o->tools.find(call.tool_name) != nullptr;
    const bool before = known && static_cast<bool>(o->before_tool);
    p.after = known && static_cast<bool>(o->after_tool);
    // Without a callback, the call's own arguments move to the tool.
    if (before || p.after) p.args = call.args;
    std::string failure;
    if (before) {
        try {
            std::optional<json::value> veto = o->before_tool(*tctx, p.args);
            if (veto) {
                tool_response_part r;
                r.tool_call_id = call.tool_call_id;
                r.tool_name = call.tool_name;
                r.result = std::move(*veto);
                p.resp = std::move(r);
            }
        } catch (const std::exception& e) {
            failure = std::string("before_tool callback failed: ") + e.what();
        }
    }
    if (!failure.empty()) p.resp = tool_error_response(call.tool_call_id, call.tool_name, std::move(failure));
    else if (!p.resp && before) call.args = p.args;
    return p;
}

/// after_tool on the response in `p`, then what becomes of a long-running call's.
template <class Options>
std::optional<tool_response_part> after_tool_call(const Options* o, const tool_call_part& call, bool long_running,
                                                  tool_context* tctx, call_prep& p) {
    std::optional<tool_response_part>& resp = p.resp;
    if (p.after) {
        try {
            std::optional<json::value> replaced = o->after_tool(*tctx, p.args, *resp);
            if (replaced) {
                resp->result = std::move(*replaced);
                resp->error.reset();
            }
        } catch (const std::exception& e) {
            resp = tool_error_response(call.tool_call_id, call.tool_name,
                                       std::string("after_tool callback failed: ") + e.what());
        }
    }
    if (long_running && !resp->error && resp->result.is_null()) return std::nullopt;
    // A long-running tool's non-null result is an interim status (its final answer
    // arrives later, through the runner's resume): marked, so that resume accepts the
    // final response and compaction keeps the call open (ADK #5602).
    if (long_running && !resp->error) resp->metadata["intermediate"] = true;
    return std::move(resp);
}

/// One call: the callbacks and run_tool_call. Never throws for the tool's failure.
template <class Options>
boost::asio::awaitable<std::optional<tool_response_part>>
run_one_call(const Options* o, tool_call_part call, bool long_running, tool_context* tctx) {
    call_prep p = before_tool_call(o, call, tctx);
    if (!p.resp) {
        json::value tool_args(std::move(call.args));
        auto op = libretto::run_tool_call(o->tools, call.tool_call_id, call.tool_name, std::move(tool_args), *tctx);
        tool_response_part r = co_await std::move(op);
        p.resp = std::move(r);
    }
    co_return after_tool_call(o, call, long_running, tctx, p);
}

/// run_one_call for the synchronous tool `t`, here: no coroutine frame.
template <class Options>
std::optional<tool_response_part> run_one_call_now(const Options* o, const any_tool& t, tool_call_part& call,
                                                   bool long_running, tool_context* tctx) {
    call_prep p = before_tool_call(o, call, tctx);
    if (!p.resp)
        p.resp = detail::run_tool_call_now(o->tools, t, call.tool_call_id, call.tool_name,
                                           json::value(std::move(call.args)), *tctx);
    return after_tool_call(o, call, long_running, tctx, p);
}

/// The one call to run of a step (the others are answered by the loop), if there is
/// exactly one.
inline std::optional<std::size_t> single_call(const std::vector<pending_call>& calls) {
    std::optional<std::size_t> only;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        if (calls[i].answer) continue;
        if (only) return std::nullopt;
        only = i;
    }
    return only;
}

} // namespace libretto::detail

#endif
