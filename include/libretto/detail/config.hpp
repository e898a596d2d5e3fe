// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_DETAIL_CONFIG_HPP
#define LIBRETTO_DETAIL_CONFIG_HPP

// Header-only (the default) or separate compilation (docs/building.md, "Separate
// compilation"). With LIBRETTO_SEPARATE_COMPILATION defined, the functions marked
// LIBRETTO_DECL are only declared by the headers and defined once, in the source file that
// includes <libretto/src.hpp> (the CMake target libretto::compiled builds it); without it
// they are inline and each header includes its impl/*.ipp definitions.

// Coroutines in headers are templates (`template <class = void>` where nothing else makes
// them one), and so are the non-template functions that would call them: g++ 12 compiles a
// coroutine's body (its actor and destroy functions, and everything they instantiate) in every
// file where it is defined or instantiated, whether anything calls it or not; a template is
// instantiated only where it is used (docs/building.md, "Compile time").

#ifdef LIBRETTO_SEPARATE_COMPILATION
#define LIBRETTO_DECL
#else
#define LIBRETTO_HEADER_ONLY 1
#define LIBRETTO_DECL inline
#endif

#endif
