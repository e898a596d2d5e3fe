// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_AGENT_IMPL_LLM_AGENT_IPP
#define LIBRETTO_AGENT_IMPL_LLM_AGENT_IPP

// The run of llm_agent<any_model>, for LIBRETTO_SEPARATE_COMPILATION only: <libretto/src.hpp>
// instantiates its coroutines once per program (header-only builds, where used).

#include <libretto/agent/llm_agent.hpp>

#include <utility>

namespace libretto::detail {

event_stream run_llm_agent(const llm_agent<any_model>& agent, invocation_context ctx) {
    return start_llm_agent(agent, std::move(ctx));
}

} // namespace libretto::detail

#endif
