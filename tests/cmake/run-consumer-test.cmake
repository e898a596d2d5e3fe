# cmake -P script behind the consumer tests (see the "Consumer" section of tests/CMakeLists.txt):
#   CONSUMER_MODE=install (default): cmake --install <LIBRETTO_BUILD_DIR> --prefix <CONSUMER_PREFIX>,
#       then the consumer is configured with CMAKE_PREFIX_PATH=<CONSUMER_PREFIX> (find_package)
#   CONSUMER_MODE=add_subdirectory | FetchContent: the consumer gets -DLIBRETTO_SOURCE_DIR=<the
#       working tree> and -DLIBRETTO_HOW=<mode> (tests/consumer_source/)
# then: configure <CONSUMER_SOURCE_DIR> into <CONSUMER_BINARY_DIR> with the parent build's
# generator, compiler, flags and build type, build it, run <CONSUMER_EXECUTABLE> (default
# libretto_consumer), through <CONSUMER_RUN_WITH> (a command prefix) when given.
# With CONSUMER_EXTRACT_FROM=<page.md> and CONSUMER_EXTRACT_FILES=<names>, the consumer's files
# are first written from the page's `<!-- file: NAME -->` blocks into CONSUMER_SOURCE_DIR
# (tests/cmake/extract-doc-files.py, with CONSUMER_PYTHON).
# CONSUMER_CONFIGURE_ARGS: more arguments for the consumer's configure (e.g. -DX=ON).
# Lists (CONSUMER_EXTRACT_FILES, CONSUMER_RUN_WITH, CONSUMER_CONFIGURE_ARGS) are separated by "|",
# which survives add_test.
# Any failing step stops the script with a FATAL_ERROR that names the step.
cmake_minimum_required(VERSION 3.25)

if(NOT CONSUMER_MODE)
    set(CONSUMER_MODE install)
endif()
set(required CONSUMER_SOURCE_DIR CONSUMER_BINARY_DIR CONSUMER_GENERATOR CONSUMER_CXX_COMPILER)
if(CONSUMER_MODE STREQUAL "install")
    list(APPEND required LIBRETTO_BUILD_DIR CONSUMER_PREFIX)
elseif(CONSUMER_MODE STREQUAL "add_subdirectory" OR CONSUMER_MODE STREQUAL "FetchContent")
    list(APPEND required LIBRETTO_SOURCE_DIR)
else()
    message(FATAL_ERROR "run-consumer-test.cmake: CONSUMER_MODE must be install, add_subdirectory or "
                        "FetchContent, not '${CONSUMER_MODE}'")
endif()
if(CONSUMER_EXTRACT_FROM)
    list(APPEND required CONSUMER_EXTRACT_FILES CONSUMER_PYTHON)
endif()
foreach(var IN LISTS required)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
        message(FATAL_ERROR "run-consumer-test.cmake: -D${var}=... is required")
    endif()
endforeach()
if(NOT CONSUMER_EXECUTABLE)
    set(CONSUMER_EXECUTABLE libretto_consumer)
endif()
string(REPLACE "|" ";" CONSUMER_EXTRACT_FILES "${CONSUMER_EXTRACT_FILES}")
string(REPLACE "|" ";" CONSUMER_RUN_WITH "${CONSUMER_RUN_WITH}")
string(REPLACE "|" ";" CONSUMER_CONFIGURE_ARGS "${CONSUMER_CONFIGURE_ARGS}")

function(run_step what)
    string(REPLACE ";" " " pretty "${ARGN}")
    message(STATUS "consumer test: ${what}\n  $ ${pretty}")
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "consumer test: FAILED to ${what} (exit status: ${rc})")
    endif()
endfunction()

# Start from nothing, so a header removed from the tree cannot linger in the prefix, and a
# consumer built before cannot hide a configure failure.
file(REMOVE_RECURSE "${CONSUMER_BINARY_DIR}")

if(CONSUMER_EXTRACT_FROM)
    run_step("write the files of ${CONSUMER_EXTRACT_FROM}"
        "${CONSUMER_PYTHON}" "${CMAKE_CURRENT_LIST_DIR}/extract-doc-files.py"
        "${CONSUMER_EXTRACT_FROM}" "${CONSUMER_SOURCE_DIR}" ${CONSUMER_EXTRACT_FILES})
endif()

set(configure_args
    -S "${CONSUMER_SOURCE_DIR}" -B "${CONSUMER_BINARY_DIR}"
    -G "${CONSUMER_GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}"
    "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}"
    "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON")
if(CONSUMER_MODE STREQUAL "install")
    file(REMOVE_RECURSE "${CONSUMER_PREFIX}")
    run_step("install the libretto build tree"
        "${CMAKE_COMMAND}" --install "${LIBRETTO_BUILD_DIR}" --prefix "${CONSUMER_PREFIX}")
    list(APPEND configure_args
        "-DCMAKE_PREFIX_PATH=${CONSUMER_PREFIX}"
        "-DLIBRETTO_EXPECTED_PREFIX=${CONSUMER_PREFIX}")
else()
    list(APPEND configure_args
        "-DLIBRETTO_SOURCE_DIR=${LIBRETTO_SOURCE_DIR}"
        "-DLIBRETTO_HOW=${CONSUMER_MODE}")
endif()
if(CONSUMER_MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${CONSUMER_MAKE_PROGRAM}")
endif()
if(CONSUMER_BUILD_TYPE)
    list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONSUMER_BUILD_TYPE}")
endif()
list(APPEND configure_args ${CONSUMER_CONFIGURE_ARGS})
run_step("configure the consumer project" "${CMAKE_COMMAND}" ${configure_args})

run_step("build the consumer project" "${CMAKE_COMMAND}" --build "${CONSUMER_BINARY_DIR}")

set(exe "${CONSUMER_BINARY_DIR}/${CONSUMER_EXECUTABLE}")
if(NOT EXISTS "${exe}")
    message(FATAL_ERROR "consumer test: FAILED: ${exe} was not built")
endif()
run_step("run the consumer binary" ${CONSUMER_RUN_WITH} "${exe}")
message(STATUS "consumer test: passed")
