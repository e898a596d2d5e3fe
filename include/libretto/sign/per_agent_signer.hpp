// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SIGN_PER_AGENT_SIGNER_HPP
#define LIBRETTO_SIGN_PER_AGENT_SIGNER_HPP

// per_agent_signer: each agent signs with its own key (its own DID). It picks the signer by
// the event's author; events of other authors (the user's messages, compaction summaries,
// agents without a key of their own) are signed by the fallback. A model of `signer`, so a
// runner takes it like any other:
//
//   lb::per_agent_signer signers{lb::ed25519_signer{runner_key}};
//   signers.add("researcher", lb::ed25519_signer{researcher_key})
//          .add("writer", lb::ed25519_signer{writer_key});
//   lb::runner runner{pipeline, store, lb::no_compaction{}, signers};
//
// Every signature still chains to the previous event's, whoever signed it, so the session
// keeps one chain.

#include <libretto/event/event.hpp>
#include <libretto/sign/any_signer.hpp>
#include <libretto/sign/signer.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace libretto {

class per_agent_signer {
public:
    /// `fallback` signs the events of authors without a signer of their own (empty: they
    /// stay unsigned).
    explicit per_agent_signer(any_signer fallback = {}) : fallback_(std::move(fallback)) {}

    /// Events authored by `agent` are signed by `s` (replacing a signer added before).
    per_agent_signer& add(std::string agent, any_signer s) {
        signers_.insert_or_assign(std::move(agent), std::move(s));
        return *this;
    }

    /// The signer for events by `author`: its own, or the fallback.
    const any_signer& signer_for(std::string_view author) const {
        auto it = signers_.find(author);
        return it != signers_.end() ? it->second : fallback_;
    }

    /// The fallback's DID.
    std::string_view did() const noexcept { return fallback_.did(); }

    void sign_event(event& e) const { signer_for(e.author).sign_event(e); }

private:
    any_signer fallback_;
    std::map<std::string, any_signer, std::less<>> signers_;
};

static_assert(signer<per_agent_signer>);

} // namespace libretto

#endif
