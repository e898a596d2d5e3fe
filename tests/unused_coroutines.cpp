// Includes headers and uses nothing of them. g++ 12 compiles every coroutine it sees defined
// or instantiated, used or not, so the library keeps its coroutines templates that only a use
// instantiates (docs/building.md, "Compile time"). Test unused_coroutines (g++ only) fails if
// this file's object holds a coroutine body (an `.actor` function): an `inline` coroutine in one
// of these headers, or a coroutine template named in an `inline` function's body.
#include <libretto/agent/parallel_agent.hpp>
#include <libretto/agent/sequential_agent.hpp>
#include <libretto/compaction/extractive_summarizer.hpp>
#include <libretto/context/invocation_context.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/stream/event_stream.hpp>
#include <libretto/tool/run_tool_call.hpp>
