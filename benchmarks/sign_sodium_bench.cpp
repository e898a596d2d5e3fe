// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Signing benchmarks on the libsodium back end (sign/ed25519_sodium.hpp), the fastest one:
// sign_events_s, verify_events_s, verify_transcript_100k_s. See sign_bench_common.hpp.
#include "sign_bench_common.hpp"

#include <libretto/sign/ed25519_sodium.hpp>

namespace {

void bench_sign_sodium(libretto_bench::reporter& r) {
    const libretto::sodium_ed25519_signer signer(libretto::sodium_ed25519_key::generate());
    libretto_bench::bench_sign_with<libretto::sodium_ed25519_signer, libretto::sodium_ed25519_verifier>(
        r, signer, {"sign_events_s", "verify_events_s", "verify_transcript_100k_s", "verify_transcript_100k_parallel_s", "libsodium"});
}
LIBRETTO_BENCHMARK(bench_sign_sodium, "sign_events_s", "verify_events_s", "verify_transcript_100k_s",
                   "verify_transcript_100k_parallel_s");

} // namespace
