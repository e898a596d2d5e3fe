// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_LIBRETTO_HPP
#define LIBRETTO_LIBRETTO_HPP

// The umbrella header: everything libretto offers without optional dependencies.
// sqlite_store and postgres_store need their CMake components (libretto::sqlite,
// libretto::postgres); include <libretto/store/sqlite_store.hpp> or
// <libretto/store/postgres_store.hpp> yourself when you link them. Likewise the Ed25519
// signers: <libretto/sign/ed25519_openssl.hpp> needs libretto::openssl,
// <libretto/sign/ed25519_sodium.hpp> libretto::sodium.
//
// The model providers and the HTTP transport are left out too, because they pull in
// Boost.Beast and (for TLS) OpenSSL: include <libretto/provider/openai_model.hpp> or
// <libretto/provider/anthropic_model.hpp> with <libretto/http/beast_transport.hpp>, and
// <libretto/http/openssl_tls.hpp> for https (docs/first-project.md shows a whole program).

#include <libretto/error.hpp>
#include <libretto/json_error.hpp>
#include <libretto/json_stringify.hpp>

#include <libretto/event/branch.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/event_list.hpp>
#include <libretto/event/event_actions.hpp>
#include <libretto/event/event_type.hpp>
#include <libretto/event/filters.hpp>
#include <libretto/event/context_view_builder.hpp>
#include <libretto/event/rewinds.hpp>
#include <libretto/event/json.hpp>
#include <libretto/event/parts.hpp>
#include <libretto/event/usage.hpp>

#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/session_store.hpp>
#include <libretto/store/any_store.hpp>
#include <libretto/store/memory_store.hpp>
#include <libretto/store/never_blocking_store.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/store/conversation_key.hpp>
#include <libretto/store/session_index.hpp>
#include <libretto/store/any_session_index.hpp>
#include <libretto/store/memory_session_index.hpp>
#include <libretto/store/jsonl_session_index.hpp>
#include <libretto/store/session_index_rebuild.hpp>
#include <libretto/store/session_index_maintenance.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/store/any_artifact_service.hpp>
#include <libretto/store/memory_artifact_service.hpp>
#include <libretto/store/file_artifact_service.hpp>
#include <libretto/store/memory_service.hpp>
#include <libretto/store/any_memory_service.hpp>
#include <libretto/store/in_memory_memory_service.hpp>

#include <libretto/agent/agent.hpp>
#include <libretto/agent/agent_tool.hpp>
#include <libretto/agent/llm_agent.hpp>
#include <libretto/agent/llm_types.hpp>
#include <libretto/agent/loop_agent.hpp>
#include <libretto/agent/parallel_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/agent/transfer.hpp>
#include <libretto/context/callback_context.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/context/readonly_context.hpp>

#include <libretto/model/any_model.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/llm_response.hpp>
#include <libretto/model/model.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/model/tool_declaration.hpp>

#include <libretto/tool/any_tool.hpp>
#include <libretto/tool/arguments.hpp>
#include <libretto/tool/artifact_tools.hpp>
#include <libretto/tool/memory_tools.hpp>
#include <libretto/tool/function_tool.hpp>
#include <libretto/tool/run_tool_call.hpp>
#include <libretto/tool/tool.hpp>
#include <libretto/tool/tool_context.hpp>
#include <libretto/tool/tool_set.hpp>

#include <libretto/stream/event_stream.hpp>
#include <libretto/stream/merge.hpp>
#include <libretto/stream/stream_options.hpp>

#include <libretto/compaction/compaction_strategy.hpp>
#include <libretto/compaction/no_compaction.hpp>
#include <libretto/compaction/obligations.hpp>
#include <libretto/compaction/estimate.hpp>
#include <libretto/compaction/char_budget.hpp>
#include <libretto/compaction/sliding_window.hpp>
#include <libretto/compaction/token_budget.hpp>
#include <libretto/compaction/first_of.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/compaction/model_summarizer.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/compaction/summarizer_chain.hpp>
#include <libretto/compaction/any_strategy.hpp>
#include <libretto/compaction/any_summarizer.hpp>
#include <libretto/compaction/compactor.hpp>
#include <libretto/sign/any_signer.hpp>
#include <libretto/sign/canonical_json.hpp>
#include <libretto/sign/did_key.hpp>
#include <libretto/sign/ed25519_types.hpp>
#include <libretto/sign/no_signer.hpp>
#include <libretto/sign/per_agent_signer.hpp>
#include <libretto/sign/signable_payload.hpp>
#include <libretto/sign/signer.hpp>
#include <libretto/sign/transcript.hpp>
#include <libretto/sign/verifier.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/reset_policy.hpp>
#include <libretto/runner/fork.hpp>
#include <libretto/runner/rewind.hpp>

#endif
