// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_IMPL_RUNNER_IPP
#define LIBRETTO_RUNNER_IMPL_RUNNER_IPP

// The turns of the runners most programs have (no compaction, no signer; a jsonl_store, a
// memory_store or an any_store), for LIBRETTO_SEPARATE_COMPILATION only: <libretto/src.hpp>
// instantiates them once per program (header-only builds instantiate start_turn where used).

#include <libretto/runner/runner.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/memory_store.hpp>

#include <memory>
#include <utility>

namespace libretto::detail {

#define LIBRETTO_RUNNER_COMPILED_TURN(Store)                                                                     \
    event_stream start_compiled_turn(const std::shared_ptr<plain_runner_core<Store>>& core,       \
                                                   run_options& options, content&& c, bool resume) {            \
        return start_turn<event>(core, options, std::move(c), resume);                                           \
    }                                                                                                            \
    shared_event_stream start_compiled_shared_turn(                                               \
        const std::shared_ptr<plain_runner_core<Store>>& core, run_options& options, content&& c, bool resume) { \
        return start_turn<event_list::pointer_type>(core, options, std::move(c), resume);                        \
    }
LIBRETTO_RUNNER_COMPILED_TURN(jsonl_store)
LIBRETTO_RUNNER_COMPILED_TURN(memory_store)
LIBRETTO_RUNNER_COMPILED_TURN(any_store)
#undef LIBRETTO_RUNNER_COMPILED_TURN

} // namespace libretto::detail

#endif
