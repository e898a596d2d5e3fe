// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_IMPL_RUNNER_IPP
#define LIBRETTO_RUNNER_IMPL_RUNNER_IPP

// The turns of the runners most programs have (no compaction, no signer; a jsonl_store, a
// memory_store or an any_store) and of the runner whose policies are all chosen at run time
// (any_store, any_strategy, any_signer), for LIBRETTO_SEPARATE_COMPILATION only:
// <libretto/src.hpp> instantiates them once per program (header-only builds instantiate
// start_turn where used).

#include <libretto/runner/runner.hpp>
#include <libretto/compaction/any_strategy.hpp>
#include <libretto/sign/any_signer.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include <memory>
#include <utility>

namespace libretto::detail {

#define LIBRETTO_RUNNER_COMPILED_TURN(Core)                                                                      \
    event_stream start_compiled_turn(const std::shared_ptr<Core>& core, run_options& options, content&& c,       \
                                     bool resume) {                                                              \
        return start_turn<event>(core, options, std::move(c), resume);                                           \
    }                                                                                                            \
    shared_event_stream start_compiled_shared_turn(const std::shared_ptr<Core>& core, run_options& options,      \
                                                   content&& c, bool resume) {                                   \
        return start_turn<event_list::pointer_type>(core, options, std::move(c), resume);                        \
    }
LIBRETTO_RUNNER_COMPILED_TURN(plain_runner_core<jsonl_store>)
LIBRETTO_RUNNER_COMPILED_TURN(plain_runner_core<memory_store>)
LIBRETTO_RUNNER_COMPILED_TURN(plain_runner_core<any_store>)
LIBRETTO_RUNNER_COMPILED_TURN(any_runner_core)
#undef LIBRETTO_RUNNER_COMPILED_TURN

} // namespace libretto::detail

#endif
