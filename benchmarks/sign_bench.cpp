// Signing benchmarks (Ed25519 on OpenSSL, one thread): events signed and verified per
// second, canonicalisation included, and a 100,000-event transcript verified end to end.
// Breakdowns (canonical payload alone, raw OpenSSL sign/verify of a payload of the same
// size) go to stderr.
#include "event_mix.hpp"
#include "harness.hpp"

#include <libretto/sign/ed25519_openssl.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/transcript.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace libretto;
using libretto_bench::best_seconds;
using libretto_bench::make_mix;

/// `n` events of the mix, chained and signed as the runner does.
std::vector<event> signed_transcript(std::size_t n, const ed25519_signer& signer) {
    session s;
    s.id = "session-42";
    std::vector<event> mix = make_mix(n);
    s.events.reserve(n);
    for (auto& e : mix) {
        chain_event(s, e);
        signer.sign_event(e);
        s.last_sequence = e.sequence;
        s.events.push_back(std::move(e));
    }
    return std::move(s.events);
}

void bench_sign(libretto_bench::reporter& r) {
    const ed25519_signer signer(ed25519_key::generate());
    constexpr std::size_t n = 20'000;
    if (r.wants("sign_events_s")) {
        const std::vector<event> base = make_mix(n);
        std::vector<event> evs;
        const double sec = best_seconds(3, [&] {
            evs = base; // not timed apart: a copy is ~1 % of a signature
            std::optional<std::string> prev;
            for (std::size_t i = 0; i < evs.size(); ++i) {
                event& e = evs[i];
                e.sequence = static_cast<std::int64_t>(i) + 1;
                e.prev_signature = prev;
                signer.sign_event(e);
                prev = e.signature;
            }
        });
        r.report("sign_events_s", static_cast<double>(n) / sec, "events/s");

        // Where the time goes.
        std::size_t bytes = 0;
        const double canon = best_seconds(3, [&] {
            bytes = 0;
            for (const auto& e : evs) bytes += signable_payload(e).size();
        });
        const std::string payload = signable_payload(evs[1]);
        const double raw = best_seconds(3, [&] {
            for (std::size_t i = 0; i < 2000; ++i) libretto_bench::do_not_optimize(signer.key().sign(payload));
        });
        std::fprintf(stderr, "sign: canonical payload %.2f us/event (%.0f bytes avg), raw Ed25519 sign %.2f us\n",
                     canon / n * 1e6, static_cast<double>(bytes) / n, raw / 2000 * 1e6);
    }
    if (r.wants("verify_events_s")) {
        const std::vector<event> evs = signed_transcript(n, signer);
        ed25519_verifier v;
        std::size_t bad = 0;
        const double sec = best_seconds(3, [&] {
            bad = 0;
            for (const auto& e : evs) bad += static_cast<bool>(verify_signature(e, v));
        });
        if (bad) std::fprintf(stderr, "verify: %zu events failed\n", bad);
        r.report("verify_events_s", static_cast<double>(n) / sec, "events/s");
        const std::string payload = signable_payload(evs[1]);
        const auto sig = signer.key().sign(payload);
        const double raw = best_seconds(3, [&] {
            for (std::size_t i = 0; i < 2000; ++i) libretto_bench::do_not_optimize(signer.key().verify(payload, sig));
        });
        std::fprintf(stderr, "verify: raw Ed25519 verify %.2f us\n", raw / 2000 * 1e6);
    }
}
LIBRETTO_BENCHMARK(bench_sign, "sign_events_s", "verify_events_s");

void bench_verify_transcript(libretto_bench::reporter& r) {
    const ed25519_signer signer(ed25519_key::generate());
    session s;
    s.id = "session-42";
    s.events = signed_transcript(100'000, signer);
    transcript_options o;
    o.trusted_dids = {std::string(signer.did())};
    transcript_report rep;
    const double sec = best_seconds(1, [&] { rep = verify_transcript(s, o); });
    if (!rep.ok) std::fprintf(stderr, "verify_transcript: %s\n", rep.message.c_str());
    r.report("verify_transcript_100k_s", sec, "s");
}
LIBRETTO_BENCHMARK(bench_verify_transcript, "verify_transcript_100k_s");

} // namespace
