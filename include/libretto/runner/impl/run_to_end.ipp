// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_IMPL_RUN_TO_END_IPP
#define LIBRETTO_RUNNER_IMPL_RUN_TO_END_IPP

// run_to_end over a turn's stream, compiled once with LIBRETTO_SEPARATE_COMPILATION: the
// composed operation and the coroutines it starts stay out of the program's other files.

#include <libretto/runner/run_to_end.hpp>

namespace libretto {

template turn_result run_to_end<void>(event_stream, run_to_end_options);

} // namespace libretto

#endif
