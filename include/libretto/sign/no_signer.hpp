// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_NO_SIGNER_HPP
#define LIBRETTO_SIGN_NO_SIGNER_HPP

// The signer that signs nothing: the runner's default. The concept is in signer.hpp.

#include <libretto/event/event.hpp>
#include <libretto/sign/signer.hpp>

#include <string_view>

namespace libretto {

/// Signs nothing; the runner skips the chaining step for it, so it costs nothing.
struct no_signer {
    std::string_view did() const noexcept { return {}; }
    void sign_event(event&) const noexcept {}
};

static_assert(signer<no_signer>);
static_assert(!is_signing<no_signer>);

} // namespace libretto

#endif
