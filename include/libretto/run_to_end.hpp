// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUN_TO_END_HPP
#define LIBRETTO_RUN_TO_END_HPP

// libretto: forwarding header, kept for one release: include <libretto/runner/run_to_end.hpp> instead.

#include <libretto/runner/run_to_end.hpp>

#endif
