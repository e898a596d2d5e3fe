// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_ANY_STORE_HPP
#define LIBRETTO_SESSION_ANY_STORE_HPP

// libretto: forwarding header, kept for one release: include <libretto/store/any_store.hpp> instead.

#include <libretto/store/any_store.hpp>

#endif
