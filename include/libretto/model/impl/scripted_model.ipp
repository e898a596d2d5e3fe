// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_IMPL_SCRIPTED_MODEL_IPP
#define LIBRETTO_MODEL_IMPL_SCRIPTED_MODEL_IPP

// scripted_model's generation: inline in a header-only build, compiled once with
// LIBRETTO_SEPARATE_COMPILATION.

#include <libretto/model/scripted_model.hpp>

#include <libretto/error.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace libretto {

LIBRETTO_DECL llm_stream scripted_model::generate(llm_request request) {
    scripted_reply reply;
    std::size_t number = 0;
    std::size_t scripted = 0;
    bool exhausted = false;
    std::optional<llm_request> seen; // what a computed reply is shown
    {
        std::lock_guard lock(state_->mutex);
        scripted = state_->script.size();
        if (state_->next < state_->script.size()) reply = std::move(state_->script[state_->next++]); // played once
        else exhausted = true;
        if (reply.compute_) seen = request;
        state_->record(std::move(request));
        number = state_->sent;
    }
    if (exhausted)
        return detail::stream_access::make_failed<llm_chunk>(
            ex_, std::make_exception_ptr(boost::system::system_error(
                     make_error_code(errc::model_error),
                     "scripted_model: script exhausted: request #" + std::to_string(number) + " but only " +
                         std::to_string(scripted) + (scripted == 1 ? " reply was" : " replies were") + " scripted")));
    // A computed reply sees the request as recorded; it may compute another computed one.
    // What the function throws is rethrown by the stream.
    try {
        for (std::size_t depth = 0; reply.compute_ && depth < scripted_reply::max_computed_depth; ++depth) {
            auto f = std::move(reply.compute_);
            reply = f(*seen);
        }
    } catch (...) {
        return detail::stream_access::make_failed<llm_chunk>(ex_, std::current_exception());
    }
    // A chain that never settles is a bug in the test, not an empty answer to play.
    if (reply.compute_)
        return detail::stream_access::make_failed<llm_chunk>(
            ex_, std::make_exception_ptr(boost::system::system_error(
                     make_error_code(errc::model_error),
                     "scripted_model: request #" + std::to_string(number) + ": computed replies nest deeper than " +
                         std::to_string(scripted_reply::max_computed_depth) + " (computed reply #" +
                         std::to_string(scripted_reply::max_computed_depth) + " returned another computed reply)")));
    std::vector<llm_chunk> chunks;
    {
        std::lock_guard lock(state_->mutex);
        chunks = chunks_of(reply, *name_, state_->call_counter);
    }
    return make_stream(ex_, std::move(chunks));
}

LIBRETTO_DECL std::vector<llm_chunk> scripted_model::chunks_of(scripted_reply& r, std::string_view default_version,
                                                               std::size_t& call_counter) {
    std::vector<llm_chunk> out;
    const std::string version = r.model_version_.empty() ? std::string(default_version) : r.model_version_;
    if (r.error_) {
        llm_response failed = llm_response::failure(r.error_, r.error_message_, r.retry_after_);
        failed.model_version = version;
        out.push_back(llm_chunk::last(std::move(failed)));
        return out;
    }
    // Room for every chunk, the usage tail and the final one, each built in place: an
    // llm_chunk is 480 bytes, and growing the vector or pushing a local would move it.
    // One chunk: the reply is ours (played once), its strings move.
    std::vector<std::string> thinking = r.chunks_ > 1 ? detail::split_utf8(r.thinking_, r.chunks_)
                                                       : detail::whole(std::move(r.thinking_));
    std::vector<std::string> text =
        r.chunks_ > 1 ? detail::split_utf8(r.text_, r.chunks_) : detail::whole(std::move(r.text_));
    out.reserve(thinking.size() + text.size() + r.calls_.size() * std::min<std::size_t>(r.chunks_, 8) + 2);
    for (auto& piece : thinking) out.emplace_back().thinking = std::move(piece);
    for (auto& piece : text) out.emplace_back().text = std::move(piece);
    for (std::size_t i = 0; i < r.calls_.size(); ++i) {
        const auto& sc = r.calls_[i];
        std::string id = sc.id.empty() ? "call_" + std::to_string(++call_counter) : sc.id;
        std::vector<std::string> pieces = detail::split_utf8(sc.arguments, r.chunks_);
        if (pieces.empty()) pieces.emplace_back();
        for (std::size_t k = 0; k < pieces.size(); ++k) {
            llm_chunk& c = out.emplace_back();
            tool_call_delta d;
            d.index = i;
            if (k == 0) {
                d.id = id;
                d.name = sc.name;
            }
            d.arguments = std::move(pieces[k]);
            c.tool_calls.push_back(std::move(d));
        }
    }
    llm_chunk& tail = out.emplace_back();
    tail.model_version = version;
    tail.usage = r.usage_;
    tail.finish = r.finish_;

    llm_response_accumulator acc;
    for (const auto& c : out) acc.add(c);
    llm_response final = std::move(acc).finish();
    out.emplace_back().final = std::move(final);
    return out;
}

} // namespace libretto

#endif
