// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_ANY_SIGNER_HPP
#define LIBRETTO_SIGN_ANY_SIGNER_HPP

// any_signer: any `signer`, chosen at run time (from a config file, per agent). Copies share
// the wrapped signer, which must therefore be usable from const (as the concept asks). An
// empty any_signer signs nothing.

#include <libretto/event/event.hpp>
#include <libretto/sign/signer.hpp>

#include <concepts>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

namespace libretto {

class any_signer {
public:
    /// Signs nothing (did() is "").
    any_signer() = default;

    template <class S>
        requires(!std::same_as<std::remove_cvref_t<S>, any_signer> && signer<std::remove_cvref_t<S>>)
    any_signer(S&& s) // NOLINT(google-explicit-constructor): a signer is an any_signer
        : impl_(std::make_shared<const model<std::remove_cvref_t<S>>>(std::forward<S>(s))) {}

    std::string_view did() const noexcept { return impl_ ? impl_->did() : std::string_view{}; }
    void sign_event(event& e) const {
        if (impl_) impl_->sign_event(e);
    }

    /// True if a signer is wrapped.
    explicit operator bool() const noexcept { return impl_ != nullptr; }

private:
    struct concept_t {
        virtual ~concept_t() = default;
        virtual std::string_view did() const noexcept = 0;
        virtual void sign_event(event& e) const = 0;
    };
    template <class S>
    struct model final : concept_t {
        template <class T>
        explicit model(T&& t) : s(std::forward<T>(t)) {}
        std::string_view did() const noexcept override { return s.did(); }
        void sign_event(event& e) const override { s.sign_event(e); }
        S s;
    };
    std::shared_ptr<const concept_t> impl_;
};

static_assert(signer<any_signer>);

} // namespace libretto

#endif
