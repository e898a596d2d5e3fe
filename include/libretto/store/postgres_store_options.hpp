// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_POSTGRES_STORE_OPTIONS_HPP
#define LIBRETTO_STORE_POSTGRES_STORE_OPTIONS_HPP

// The options of a postgres_store (postgres_store.hpp).

#include <chrono>
#include <cstddef>
#include <string>

namespace libretto {

struct postgres_store_options {
    /// A libpq connection string ("host=... dbname=...") or URI ("postgresql://..."); the
    /// usual PG* environment variables fill in what it leaves out.
    std::string conninfo{};
    /// The PostgreSQL schema (namespace) holding libretto's tables, created if missing:
    /// lower-case letters, digits and '_', not starting with a digit, at most 63 bytes.
    /// Different schemas keep different deployments apart in one database.
    std::string schema = "libretto";
    /// Most connections open at once (1..100); they are opened when needed.
    std::size_t pool_size = 4;
    std::chrono::milliseconds connect_timeout{10000};
    /// How long an operation waits for a free connection before errc::busy.
    std::chrono::milliseconds acquire_timeout{30000};
    /// Largest accepted event, as serialized JSON bytes; 0: no limit. An oversize event
    /// fails its append (or its whole batch) with errc::oversize and stores nothing.
    std::size_t max_event_bytes = 16 * 1024 * 1024;
};

} // namespace libretto

#endif
