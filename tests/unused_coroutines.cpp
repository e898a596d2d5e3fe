// Includes headers and uses nothing of them. g++ 12 compiles every coroutine it sees defined
// or instantiated, used or not, so the library keeps its coroutines templates that only a use
// instantiates, and starts operations in templates with tokens that depend on the template
// (docs/building.md, "Compile time"). Test unused_coroutines (g++ only) fails if this file's
// object holds a coroutine body (an `.actor` function): an `inline` coroutine in one of these
// headers; a coroutine template named in an `inline` function's body, or by a non-dependent
// call in a template; or a model's concept check that deduced what an operation started
// with use_awaitable returns (the concepts check with detail::token_archetype instead).
#include <libretto/libretto.hpp>

#include <libretto/agent/llm_agent.hpp>
#include <libretto/agent/loop_agent.hpp>
#include <libretto/agent/parallel_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/compaction/any_summarizer.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/http/any_transport.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/fake_transport.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/fork.hpp>
#include <libretto/runner/rewind.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/session_index_maintenance.hpp>
#include <libretto/store/session_index_rebuild.hpp>
#include <libretto/stream/event_stream.hpp>
#include <libretto/tool/artifact_tools.hpp>
#include <libretto/tool/memory_tools.hpp>
#include <libretto/tool/run_tool_call.hpp>

#ifdef LIBRETTO_TEST_SQLITE
#include <libretto/store/sqlite_artifact_service.hpp>
#include <libretto/store/sqlite_memory_service.hpp>
#include <libretto/store/sqlite_session_index.hpp>
#include <libretto/store/sqlite_store.hpp>
#endif
#ifdef LIBRETTO_TEST_POSTGRES
#include <libretto/store/postgres_artifact_service.hpp>
#include <libretto/store/postgres_memory_service.hpp>
#include <libretto/store/postgres_session_index.hpp>
#include <libretto/store/postgres_store.hpp>
#endif
