// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_ANY_SUMMARIZER_HPP
#define LIBRETTO_COMPACTION_ANY_SUMMARIZER_HPP

// any_summarizer: a summarizer chosen at run time (model-backed in production, extractive
// in a test build), for compactor<any_strategy, any_summarizer>:
//
//   lb::any_summarizer s = cfg.summary_model ? lb::any_summarizer{lb::make_fallback_summarizer(m)}
//                                            : lb::any_summarizer{lb::extractive_summarizer{}};
//
// Copies share the held summarizer's state only as far as the summarizer's own copies do
// (each any_summarizer copy holds a copy of it). An empty any_summarizer is extractive.

#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/compaction/summarizer.hpp>

#include <boost/asio/awaitable.hpp>

#include <concepts>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace libretto {

class any_summarizer {
public:
    /// extractive_summarizer{}, made when first needed: a default member initializer that
    /// made it here would compile its coroutine into every file that includes the header
    /// (g++ 12; detail/config.hpp).
    any_summarizer() = default;

    template <class S>
        requires(!std::same_as<std::remove_cvref_t<S>, any_summarizer> && summarizer<std::remove_cvref_t<S>>)
    any_summarizer(S&& s) // NOLINT(google-explicit-constructor)
        : impl_(std::make_unique<model<std::remove_cvref_t<S>>>(std::forward<S>(s))) {}

    any_summarizer(const any_summarizer& o) : impl_(o.impl_ ? o.impl_->clone() : nullptr) {}
    any_summarizer(any_summarizer&&) noexcept = default;
    any_summarizer& operator=(const any_summarizer& o) {
        if (this != &o) impl_ = o.impl_ ? o.impl_->clone() : nullptr;
        return *this;
    }
    any_summarizer& operator=(any_summarizer&&) noexcept = default;

    /// See the summarizer concept. The operation holds its own copy of the summarizer.
    /// (A template, Default dependent: g++ 12 compiles the coroutines it names only where used;
    /// detail/config.hpp.)
    template <class Default = extractive_summarizer>
    boost::asio::awaitable<summary> async_summarize(summary_request r) {
        // Its own copy: the operation may outlive *this. A moved-from one is extractive.
        std::unique_ptr<concept_> own = impl_ ? impl_->clone() : std::make_unique<model<Default>>(Default{});
        boost::asio::awaitable<summary> op = own->summarize(std::move(r));
        summary s = co_await std::move(op);
        co_return s;
    }

    /// The held summarizer if it is an S, else nullptr.
    template <class S>
    S* target() noexcept {
        if constexpr (std::is_same_v<S, extractive_summarizer>)
            if (!impl_) impl_.reset(new (std::nothrow) model<S>(S{})); // the default, made now
        auto* m = dynamic_cast<model<S>*>(impl_.get());
        return m ? &m->s : nullptr;
    }

private:
    struct concept_ {
        virtual ~concept_() = default;
        virtual std::unique_ptr<concept_> clone() const = 0;
        virtual boost::asio::awaitable<summary> summarize(summary_request r) = 0;
    };
    template <class S>
    struct model final : concept_ {
        explicit model(S x) : s(std::move(x)) {}
        std::unique_ptr<concept_> clone() const override { return std::make_unique<model>(s); }
        boost::asio::awaitable<summary> summarize(summary_request r) override { return s.async_summarize(std::move(r)); }
        S s;
    };
    std::unique_ptr<concept_> impl_; // null: extractive_summarizer{} (default-constructed, moved from)
};

static_assert(summarizer<any_summarizer>);

} // namespace libretto

#endif
