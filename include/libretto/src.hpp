// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SRC_HPP
#define LIBRETTO_SRC_HPP

// Separate compilation (docs/building.md, "Separate compilation"): build a program with
// LIBRETTO_SEPARATE_COMPILATION defined everywhere and include this header in exactly one
// of its source files, which then holds the definitions the headers only declare. The CMake
// target libretto::compiled does both (it compiles each impl/*.ipp listed here in a file of its
// own, in parallel). The parts that need OpenSSL are in
// <libretto/src_openssl.hpp>.

#ifndef LIBRETTO_SEPARATE_COMPILATION
#error "<libretto/src.hpp> needs LIBRETTO_SEPARATE_COMPILATION defined (in every file of the program)"
#endif

#include <libretto/agent/impl/llm_agent.ipp>
#include <libretto/event/impl/json_text.ipp>
#include <libretto/mcp/impl/client.ipp>
#include <libretto/mcp/impl/mcp_toolset.ipp>
#include <libretto/model/impl/llm_response.ipp>
#include <libretto/model/impl/scripted_model.ipp>
#include <libretto/provider/impl/anthropic_model.ipp>
#include <libretto/provider/impl/openai_model.ipp>
#include <libretto/runner/impl/conversation_clock.ipp>
#include <libretto/runner/impl/run_to_end.ipp>
#include <libretto/runner/impl/runner.ipp>
#include <libretto/store/impl/jsonl_store.ipp>

#endif
