// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SRC_HPP
#define LIBRETTO_SRC_HPP

// Separate compilation (docs/building.md, "Separate compilation"): build a program with
// LIBRETTO_SEPARATE_COMPILATION defined everywhere and include this header in exactly one
// of its source files, which then holds the definitions the headers only declare. The CMake
// target libretto::compiled does both. The parts that need OpenSSL are in
// <libretto/src_openssl.hpp>.

#ifndef LIBRETTO_SEPARATE_COMPILATION
#error "<libretto/src.hpp> needs LIBRETTO_SEPARATE_COMPILATION defined (in every file of the program)"
#endif

#include <libretto/provider/impl/anthropic_model.ipp>
#include <libretto/provider/impl/openai_model.ipp>

#endif
