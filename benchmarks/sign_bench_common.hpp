// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The signing benchmarks, written once for any Ed25519 back end (sign_bench.cpp: OpenSSL,
// sign_sodium_bench.cpp: libsodium): events signed and verified per second on one thread,
// canonicalisation included, and a 100,000-event transcript verified end to end. Breakdowns
// (canonical payload alone, raw sign/verify of a payload of the same size) go to stderr.
#ifndef LIBRETTO_BENCHMARKS_SIGN_BENCH_COMMON_HPP
#define LIBRETTO_BENCHMARKS_SIGN_BENCH_COMMON_HPP

#include "event_mix.hpp"
#include "harness.hpp"

#include <libretto/session/session.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/transcript.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace libretto_bench {

struct sign_metrics {
    const char* sign;       ///< events signed per second
    const char* verify;     ///< events verified per second
    const char* transcript; ///< seconds to verify a 100,000-event transcript on one thread
    const char* parallel;   ///< the same on every hardware thread (transcript_options::threads = 0)
    const char* label;      ///< the back end, for the stderr breakdown
};

/// `n` events of the mix, chained and signed as the runner does.
template <class Signer>
std::vector<libretto::event> signed_transcript(std::size_t n, const Signer& signer) {
    libretto::session s;
    s.id = "session-42";
    std::vector<libretto::event> mix = make_mix(n);
    s.events.reserve(n);
    for (auto& e : mix) {
        libretto::chain_event(s, e);
        signer.sign_event(e);
        s.last_sequence = e.sequence;
        s.events.push_back(std::move(e));
    }
    return s.events.to_vector();
}

template <class Signer, class Verifier>
void bench_sign_with(reporter& r, const Signer& signer, const sign_metrics& m) {
    using namespace libretto;
    constexpr std::size_t n = 20'000;
    if (r.wants(m.sign)) {
        // Each run signs fresh copies, made outside the timed part.
        std::vector<std::vector<event>> inputs(3, make_mix(n));
        std::size_t run = 0;
        std::vector<event> evs;
        const double sec = best_seconds(3, [&] {
            evs = std::move(inputs[run++]);
            std::optional<std::string> prev;
            for (std::size_t i = 0; i < evs.size(); ++i) {
                event& e = evs[i];
                e.sequence = static_cast<std::int64_t>(i) + 1;
                e.prev_signature = prev;
                signer.sign_event(e);
                prev = e.signature;
            }
        });
        r.report(m.sign, static_cast<double>(n) / sec, "events/s");

        std::size_t bytes = 0;
        const double canon = best_seconds(3, [&] {
            bytes = 0;
            for (const auto& e : evs) bytes += signable_payload(e).size();
        });
        const std::string payload = signable_payload(evs[1]);
        const double raw = best_seconds(3, [&] {
            for (std::size_t i = 0; i < 2000; ++i) do_not_optimize(signer.key().sign(payload));
        });
        std::fprintf(stderr, "sign (%s): canonical payload %.2f us/event (%.0f bytes avg), raw Ed25519 sign %.2f us\n",
                     m.label, canon / n * 1e6, static_cast<double>(bytes) / n, raw / 2000 * 1e6);
    }
    if (r.wants(m.verify)) {
        const std::vector<event> evs = signed_transcript(n, signer);
        Verifier v;
        std::size_t bad = 0;
        const double sec = best_seconds(3, [&] {
            bad = 0;
            for (const auto& e : evs) bad += static_cast<bool>(verify_signature(e, v));
        });
        if (bad) std::fprintf(stderr, "verify (%s): %zu events failed\n", m.label, bad);
        r.report(m.verify, static_cast<double>(n) / sec, "events/s");
        const std::string payload = signable_payload(evs[1]);
        const auto sig = signer.key().sign(payload);
        const double raw = best_seconds(3, [&] {
            for (std::size_t i = 0; i < 2000; ++i) do_not_optimize(signer.key().verify(payload, sig));
        });
        std::fprintf(stderr, "verify (%s): raw Ed25519 verify %.2f us\n", m.label, raw / 2000 * 1e6);
    }
    if (r.wants(m.transcript) || r.wants(m.parallel)) {
        session s;
        s.id = "session-42";
        s.events = signed_transcript(100'000, signer);
        transcript_options o;
        o.trusted_dids = {std::string(signer.did())};
        Verifier v;
        transcript_report rep;
        for (const char* metric : {m.transcript, m.parallel}) {
            if (!r.wants(metric)) continue;
            o.threads = metric == m.transcript ? 1 : 0;
            const double sec = best_seconds(1, [&] { rep = verify_transcript(s, v, o); });
            if (!rep.ok) std::fprintf(stderr, "verify_transcript (%s): %s\n", m.label, rep.message.c_str());
            r.report(metric, sec, "s");
        }
    }
}

} // namespace libretto_bench

#endif
