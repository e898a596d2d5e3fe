// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_TOKEN_ARCHETYPE_HPP
#define LIBRETTO_DETAIL_TOKEN_ARCHETYPE_HPP

// The completion token the asynchronous concepts check their models with (session_store
// and its refinements, http_transport, http_response): it stands for "any completion
// token". An operation started with it returns archetype_result<Sig>, Sig being the
// completion signature the operation passed to async_initiate, so a concept can check the
// signature exactly. Nothing is started: the initiation is never invoked.
//
// Why not use_awaitable: a model's operations return `auto`, so checking one with
// use_awaitable deduces its return type, which instantiates the coroutine the operation
// makes for that token; g++ 12 then compiles that coroutine into every file that includes
// the model's header, used or not (docs/building.md, "Compile time").

#include <boost/asio/async_result.hpp>

namespace libretto::detail {

/// Stands for any completion token in a concept's requirements.
struct token_archetype {};

/// What an operation started with token_archetype returns.
template <class... Signatures>
struct archetype_result {};

} // namespace libretto::detail

template <class... Signatures>
struct boost::asio::async_result<libretto::detail::token_archetype, Signatures...> {
    template <class Initiation, class RawToken, class... Args>
    static libretto::detail::archetype_result<Signatures...> initiate(Initiation&&, RawToken&&, Args&&...) {
        return {};
    }
};

#endif
