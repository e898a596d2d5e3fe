# cmake -P script behind the `conan_components_module` test: checks, without Conan, what
# cmake/libretto-conan-components.cmake (the Conan package's build module) does with
# find_package(libretto COMPONENTS ...). Each case configures tests/cmake/conan-components/probe
# against a stand-in of the config file CMakeDeps generates (../conan-components/package), with
# some components "enabled", and checks the exit status and the output.
#   -DLIBRETTO_SOURCE_DIR=<source tree> -DWORK_DIR=<scratch> -DGENERATOR=<generator> [-DMAKE_PROGRAM=...]
cmake_minimum_required(VERSION 3.25)

foreach(var LIBRETTO_SOURCE_DIR WORK_DIR GENERATOR)
    if(NOT ${var})
        message(FATAL_ERROR "run-conan-components-test.cmake: -D${var}=... is required")
    endif()
endforeach()

set(here "${CMAKE_CURRENT_LIST_DIR}/conan-components")
set(failures 0)
set(case_number 0)

# check_case(<enabled components> <find_package arguments> PASS|FAIL <regex>... [SECOND <args>])
function(check_case enabled args expect)
    math(EXPR n "${case_number} + 1")
    set(case_number ${n} PARENT_SCOPE)
    cmake_parse_arguments(PARSE_ARGV 3 arg "" "SECOND" "")
    set(dir "${WORK_DIR}/case-${n}")
    file(REMOVE_RECURSE "${dir}")
    set(command "${CMAKE_COMMAND}" -S "${here}/probe" -B "${dir}" -G "${GENERATOR}"
        "-Dlibretto_DIR=${here}/package"
        "-DLIBRETTO_CONAN_COMPONENTS_MODULE=${LIBRETTO_SOURCE_DIR}/cmake/libretto-conan-components.cmake"
        "-DFAKE_CONAN_ENABLED=${enabled}" "-DPROBE_ARGS=${args}" "-DPROBE_ARGS2=${arg_SECOND}")
    if(MAKE_PROGRAM)
        list(APPEND command "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
    endif()
    execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    set(all "${out}${err}")
    set(what "case ${n}: enabled '${enabled}', find_package(libretto ${args})")
    if(arg_SECOND)
        string(APPEND what ", then find_package(libretto ${arg_SECOND})")
    endif()
    set(ok TRUE)
    if(expect STREQUAL "PASS" AND NOT rc EQUAL 0)
        set(ok FALSE)
        set(why "configure failed (exit status ${rc}), expected it to pass")
    elseif(expect STREQUAL "FAIL" AND rc EQUAL 0)
        set(ok FALSE)
        set(why "configure passed, expected it to fail")
    endif()
    if(ok)
        foreach(pattern IN LISTS arg_UNPARSED_ARGUMENTS)
            if(NOT all MATCHES "${pattern}")
                set(ok FALSE)
                set(why "the output does not match '${pattern}'")
                break()
            endif()
        endforeach()
    endif()
    if(ok)
        message(STATUS "ok: ${what}")
    else()
        message(STATUS "FAILED: ${what}: ${why}\n--- output ---\n${all}--------------")
        math(EXPR f "${failures} + 1")
        set(failures ${f} PARENT_SCOPE)
    endif()
endfunction()

# Nothing requested: found, and each component's _FOUND says whether its target exists.
check_case("" "REQUIRED" PASS
    "libretto_FOUND=1 openssl=FALSE sqlite=FALSE postgres=FALSE sodium=FALSE")
check_case("openssl" "REQUIRED COMPONENTS openssl" PASS
    "libretto_FOUND=1 openssl=TRUE sqlite=FALSE")
check_case("openssl sqlite" "REQUIRED COMPONENTS openssl sqlite" PASS
    "openssl=TRUE sqlite=TRUE postgres=FALSE sodium=FALSE")
check_case("openssl sqlite postgres sodium" "REQUIRED COMPONENTS sodium postgres" PASS
    "openssl=TRUE sqlite=TRUE postgres=TRUE sodium=TRUE")
# A disabled component, required: the configure fails and names the option to turn on.
check_case("openssl" "REQUIRED COMPONENTS sqlite" FAIL
    "libretto::sqlite is not enabled in this Conan graph: add -o \"libretto/\\*:with_sqlite=True\"")
check_case("" "REQUIRED COMPONENTS openssl" FAIL
    "libretto::openssl is not enabled in this Conan graph: add -o \"libretto/\\*:with_openssl=True\"")
# Two missing: both named.
check_case("sqlite" "REQUIRED COMPONENTS postgres sqlite sodium" FAIL
    "libretto::postgres is not enabled" "libretto::sodium is not enabled")
# An unknown component, even with every option on.
check_case("openssl sqlite postgres sodium" "REQUIRED COMPONENTS ssl" FAIL
    "'ssl' is not a libretto component \\(there are: openssl, sqlite, postgres, sodium\\)")
# The component name is the part after libretto::, not the target.
check_case("sqlite" "REQUIRED COMPONENTS libretto::sqlite" FAIL
    "'libretto::sqlite' is not a libretto component")
# Optional components never fail the search; their _FOUND tells.
check_case("" "REQUIRED OPTIONAL_COMPONENTS sqlite" PASS
    "libretto_FOUND=1 openssl=FALSE sqlite=FALSE")
check_case("openssl" "REQUIRED COMPONENTS openssl OPTIONAL_COMPONENTS postgres" PASS
    "openssl=TRUE sqlite=FALSE postgres=FALSE")
# Not REQUIRED: not found, no error, and a later search without the component finds it again.
check_case("openssl" "QUIET COMPONENTS postgres" PASS
    "find_package\\(libretto QUIET COMPONENTS postgres\\): libretto_FOUND=0 "
    "find_package\\(libretto REQUIRED\\): libretto_FOUND=1 openssl=TRUE"
    SECOND "REQUIRED")

if(failures GREATER 0)
    message(FATAL_ERROR "conan_components_module: ${failures} of ${case_number} cases failed")
endif()
message(STATUS "conan_components_module: all ${case_number} cases passed")
