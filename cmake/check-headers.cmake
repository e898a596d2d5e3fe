# cmake -P script behind the `header_rules` test: the layer rules of docs/architecture.md.
#
#   cmake -DINCLUDE_DIR=<dir holding libretto/> [-DMAX_LINES=600] -P cmake/check-headers.cmake
#
# For every header (.hpp, and the .ipp definitions of separate compilation) under
# <INCLUDE_DIR>/libretto it checks that
#   - each #include <libretto/...> names a header that exists and lies in a folder the
#     including folder may use (the table below, lowest layer first);
#   - the header has at most MAX_LINES lines;
#   - a forwarding header (a line "// libretto: forwarding header") includes one header only.
# All violations are printed, then the script fails if there was any.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED INCLUDE_DIR)
    message(FATAL_ERROR "check-headers.cmake: -DINCLUDE_DIR=<dir holding libretto/> is required")
endif()
if(NOT DEFINED MAX_LINES)
    set(MAX_LINES 600)
endif()

# The folder of a header path relative to libretto/ ("store/jsonl_store.hpp" -> store).
# The core layer is the top-level headers, detail/, event/ and session/ (the value types).
function(layer_of rel out)
    # libretto.hpp and the separate-compilation sources include every layer.
    if(rel MATCHES "^(libretto|src|src_openssl)\\.hpp$")
        set(${out} umbrella PARENT_SCOPE)
        return()
    endif()
    string(FIND "${rel}" "/" slash)
    if(slash EQUAL -1)
        set(${out} core PARENT_SCOPE)
        return()
    endif()
    string(SUBSTRING "${rel}" 0 ${slash} folder)
    if(folder MATCHES "^(detail|event|session)$")
        set(folder core)
    endif()
    set(${out} ${folder} PARENT_SCOPE)
endfunction()

# Which layers each layer may include (its own always).
set(allowed_core       core)
set(allowed_stream     core)
set(allowed_http       core)
set(allowed_model      core stream)
set(allowed_context    core stream store)
set(allowed_tool       core stream model context store)
set(allowed_provider   core stream http model)
set(allowed_store      core stream)
set(allowed_compaction core stream model)
set(allowed_sign       core)
set(allowed_agent      core stream model context tool store)
set(allowed_runner     core stream model context tool store compaction sign agent)
set(allowed_mcp        core stream http model context tool store)
set(allowed_umbrella   core stream http model context tool provider store compaction sign agent runner mcp)

file(REAL_PATH "${INCLUDE_DIR}/libretto" root)
file(GLOB_RECURSE headers RELATIVE "${root}" "${root}/*.hpp" "${root}/*.ipp")
list(SORT headers)
if(NOT headers)
    message(FATAL_ERROR "check-headers.cmake: no headers under ${root}")
endif()

set(problems "")
set(checked 0)
foreach(rel IN LISTS headers)
    math(EXPR checked "${checked} + 1")
    layer_of("${rel}" from)
    if(NOT DEFINED allowed_${from})
        list(APPEND problems "libretto/${rel}: folder '${from}' has no row in the layer table")
        continue()
    endif()
    file(READ "${root}/${rel}" text)
    string(REGEX MATCHALL "\n" newlines "${text}")
    list(LENGTH newlines n)
    string(REGEX MATCHALL "#include <libretto/[^>]+>" includes "${text}")
    string(FIND "${text}" "// libretto: forwarding header" forwarding)
    if(NOT forwarding EQUAL -1)
        list(LENGTH includes count)
        if(NOT count EQUAL 1)
            list(APPEND problems "libretto/${rel}: a forwarding header includes exactly one header (it has ${count})")
        endif()
    elseif(n GREATER MAX_LINES)
        list(APPEND problems "libretto/${rel}: ${n} lines, more than ${MAX_LINES}: split it along its seams (impl/ or detail/)")
    endif()
    foreach(inc IN LISTS includes)
        string(REGEX REPLACE "#include <libretto/([^>]+)>" "\\1" target "${inc}")
        if(NOT EXISTS "${root}/${target}")
            list(APPEND problems "libretto/${rel}: includes <libretto/${target}>, which does not exist")
            continue()
        endif()
        if(NOT forwarding EQUAL -1)
            continue()
        endif()
        layer_of("${target}" to)
        if(NOT to IN_LIST allowed_${from} AND NOT to STREQUAL from)
            string(REPLACE ";" ", " may "${allowed_${from}}")
            list(APPEND problems
                 "libretto/${rel}: includes <libretto/${target}> (layer '${to}'), but layer '${from}' may include only: ${from}, ${may}")
        endif()
    endforeach()
endforeach()

if(problems)
    list(LENGTH problems count)
    list(JOIN problems "\n  " text)
    message(FATAL_ERROR "header rules (docs/architecture.md): ${count} problem(s) in ${checked} headers:\n  ${text}")
endif()
message(STATUS "header rules: ${checked} headers follow the layer table and the ${MAX_LINES}-line limit")
