// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_CONTEXT_READONLY_CONTEXT_HPP
#define LIBRETTO_CONTEXT_READONLY_CONTEXT_HPP

#include <libretto/context/invocation_context.hpp>

namespace libretto {

/// What instruction providers and planners see: identity and a read-only state.
/// A cheap reference wrapper; the invocation_context must outlive it.
class readonly_context {
public:
    explicit readonly_context(const invocation_context& ctx) noexcept : ctx_(&ctx) {}

    const std::string& invocation_id() const noexcept { return ctx_->invocation_id(); }
    const std::string& session_id() const noexcept { return ctx_->session_id(); }
    const std::string& user_id() const noexcept { return ctx_->user_id(); }
    const std::string& app_name() const noexcept { return ctx_->app_name(); }
    const std::string& agent_name() const noexcept { return ctx_->agent_name(); }
    const std::string& branch() const noexcept { return ctx_->branch(); }
    const std::optional<std::string>& input_content() const noexcept { return ctx_->input_content(); }

    /// The state, read-only.
    const libretto::state& state() const noexcept { return ctx_->state(); }

    /// The underlying context, read-only.
    const invocation_context& context() const noexcept { return *ctx_; }

private:
    const invocation_context* ctx_;
};

} // namespace libretto

#endif
