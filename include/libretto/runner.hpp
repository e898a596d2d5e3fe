// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_RUNNER_HPP
#define LIBRETTO_RUNNER_HPP

// libretto: forwarding header, kept for one release: include <libretto/runner/runner.hpp> instead.

#include <libretto/runner/runner.hpp>

#endif
