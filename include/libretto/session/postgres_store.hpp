// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_POSTGRES_STORE_HPP
#define LIBRETTO_SESSION_POSTGRES_STORE_HPP

// libretto: forwarding header, kept for one release: include <libretto/store/postgres_store.hpp> instead.

#include <libretto/store/postgres_store.hpp>

#endif
