// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_NEVER_BLOCKING_STORE_HPP
#define LIBRETTO_STORE_NEVER_BLOCKING_STORE_HPP

// The never_blocking_store concept: a session_store that also offers synchronous functions
// which never wait on I/O, so that the runner may call them on the turn's own thread
// (docs/runner.md, "Stores that never block"). memory_store is one.
//
// Valid expressions, for a store type S, `S st`, `const S cst`, `session s`,
// `std::shared_ptr<event> n`, `std::int64_t seq`, `std::optional<session> out`:
//
//   S::never_blocks                          a constant expression, true
//   cst.get(key, get_options, out)           -> error_code   out: the session, or nullopt
//   st.create(create_options, s)             -> error_code
//   st.append_shared(s, std::move(n), seq)   -> error_code   the store keeps node n itself

#include <libretto/session/session.hpp>
#include <libretto/store/session_store.hpp>

#include <boost/system/error_code.hpp>

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>

namespace libretto {

/// A store whose synchronous get, create and append_shared never block (memory_store, which
/// says so with its `never_blocks` constant): the turn calls them directly, with no
/// suspension, post or completion handler in between, and the turn's session holds each
/// stored node itself (no copy of the event for the session).
template <class Store>
concept never_blocking_store = requires(Store& st, const Store& cst, session& s, std::shared_ptr<event> n,
                                        std::int64_t& seq, std::optional<session>& out, const session_key& k,
                                        const get_options& go) {
    requires Store::never_blocks;
    { cst.get(k, go, out) } -> std::same_as<boost::system::error_code>;
    { st.create(create_options{}, s) } -> std::same_as<boost::system::error_code>;
    { st.append_shared(s, std::move(n), seq) } -> std::same_as<boost::system::error_code>;
};

} // namespace libretto

#endif
