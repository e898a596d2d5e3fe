// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// Signing benchmarks on the OpenSSL back end (sign/ed25519_openssl.hpp); the metrics without
// a back-end suffix are libsodium's (sign_sodium_bench.cpp). See sign_bench_common.hpp.
#include "sign_bench_common.hpp"

#include <libretto/sign/ed25519_openssl.hpp>

namespace {

void bench_sign_openssl(libretto_bench::reporter& r) {
    const libretto::ed25519_signer signer(libretto::ed25519_key::generate());
    libretto_bench::bench_sign_with<libretto::ed25519_signer, libretto::ed25519_verifier>(
        r, signer, {"sign_events_openssl_s", "verify_events_openssl_s", "verify_transcript_100k_openssl_s",
                    "verify_transcript_100k_openssl_parallel_s", "OpenSSL"});
}
LIBRETTO_BENCHMARK(bench_sign_openssl, "sign_events_openssl_s", "verify_events_openssl_s",
                   "verify_transcript_100k_openssl_s", "verify_transcript_100k_openssl_parallel_s");

} // namespace
