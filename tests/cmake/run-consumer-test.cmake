# cmake -P script behind the `consumer_from_install` test (see tests/CMakeLists.txt):
#   1. cmake --install <LIBRETTO_BUILD_DIR> --prefix <CONSUMER_PREFIX>
#   2. configure tests/consumer into <CONSUMER_BINARY_DIR> with CMAKE_PREFIX_PATH=<CONSUMER_PREFIX>,
#      the parent build's generator, compiler, flags and build type
#   3. build it, 4. run the consumer binary.
# Any failing step stops the script with a FATAL_ERROR that names the step.
cmake_minimum_required(VERSION 3.25)

foreach(var LIBRETTO_BUILD_DIR CONSUMER_SOURCE_DIR CONSUMER_PREFIX CONSUMER_BINARY_DIR
            CONSUMER_GENERATOR CONSUMER_CXX_COMPILER)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
        message(FATAL_ERROR "run-consumer-test.cmake: -D${var}=... is required")
    endif()
endforeach()

function(run_step what)
    string(REPLACE ";" " " pretty "${ARGN}")
    message(STATUS "consumer test: ${what}\n  $ ${pretty}")
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "consumer test: FAILED to ${what} (exit status: ${rc})")
    endif()
endfunction()

# Start from nothing, so a header removed from the tree cannot linger in the prefix.
file(REMOVE_RECURSE "${CONSUMER_PREFIX}" "${CONSUMER_BINARY_DIR}")

run_step("install the libretto build tree"
    "${CMAKE_COMMAND}" --install "${LIBRETTO_BUILD_DIR}" --prefix "${CONSUMER_PREFIX}")

set(configure_args
    -S "${CONSUMER_SOURCE_DIR}" -B "${CONSUMER_BINARY_DIR}"
    -G "${CONSUMER_GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}"
    "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}"
    "-DCMAKE_PREFIX_PATH=${CONSUMER_PREFIX}"
    "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON"
    "-DLIBRETTO_EXPECTED_PREFIX=${CONSUMER_PREFIX}")
if(CONSUMER_MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${CONSUMER_MAKE_PROGRAM}")
endif()
if(CONSUMER_BUILD_TYPE)
    list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONSUMER_BUILD_TYPE}")
endif()
run_step("configure the consumer project" "${CMAKE_COMMAND}" ${configure_args})

run_step("build the consumer project" "${CMAKE_COMMAND}" --build "${CONSUMER_BINARY_DIR}")

set(exe "${CONSUMER_BINARY_DIR}/libretto_consumer")
if(NOT EXISTS "${exe}")
    message(FATAL_ERROR "consumer test: FAILED: ${exe} was not built")
endif()
run_step("run the consumer binary" "${exe}")
message(STATUS "consumer test: passed")
