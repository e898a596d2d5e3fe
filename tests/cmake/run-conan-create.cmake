# cmake -P script behind the `conan_create` test: runs the recipe and its test_package with Conan 2
#   conan profile detect --exist-ok           (a default profile, only if there is none)
#   conan create <copy> --build=missing -s compiler.cppstd=20 -o "libretto/*:with_sqlite=True"
# on a copy of what the recipe exports (conanfile.py, include/, the build module, the license,
# test_package/) in <WORK_DIR>, so that test_package's build folder and CMakeUserPresets.json
# stay out of the source tree. The package is created with its default options plus SQLite, so
# test_package builds against libretto::openssl and libretto::sqlite and checks that postgres and
# sodium are refused.
# Without a `conan` executable on PATH (or with Conan 1) it prints "conan_create: SKIPPED: <why>"
# and succeeds; the test's SKIP_REGULAR_EXPRESSION turns that into a skipped test. (A -P script
# cannot choose its exit status before CMake 3.29's cmake_language(EXIT), so SKIP_RETURN_CODE
# is not an option with CMake 3.25.)
#   -DLIBRETTO_SOURCE_DIR=<source tree> -DWORK_DIR=<scratch>
cmake_minimum_required(VERSION 3.25)

foreach(var LIBRETTO_SOURCE_DIR WORK_DIR)
    if(NOT ${var})
        message(FATAL_ERROR "run-conan-create.cmake: -D${var}=... is required")
    endif()
endforeach()

find_program(conan NAMES conan NO_CACHE)
if(NOT conan)
    message("conan_create: SKIPPED: no `conan` executable on PATH (install Conan 2, e.g. "
            "`pip install conan`, to run `conan create` on conanfile.py and test_package/)")
    return()
endif()
execute_process(COMMAND "${conan}" --version OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT version MATCHES "^Conan version 2\\.")
    message("conan_create: SKIPPED: ${conan} is not Conan 2 (it says '${version}'); the recipe needs Conan >= 2.0")
    return()
endif()
message(STATUS "conan_create: ${version} (${conan})")

function(run_step what)
    string(REPLACE ";" " " pretty "${ARGN}")
    message(STATUS "conan_create: ${what}\n  $ ${pretty}")
    execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "conan_create: FAILED to ${what} (exit status: ${rc})")
    endif()
endfunction()

set(recipe "${WORK_DIR}/recipe")
file(REMOVE_RECURSE "${recipe}")
file(MAKE_DIRECTORY "${recipe}/cmake")
file(COPY "${LIBRETTO_SOURCE_DIR}/conanfile.py" "${LIBRETTO_SOURCE_DIR}/LICENSE_1_0.txt"
          "${LIBRETTO_SOURCE_DIR}/include" DESTINATION "${recipe}")
file(COPY "${LIBRETTO_SOURCE_DIR}/cmake/libretto-conan-components.cmake" DESTINATION "${recipe}/cmake")
file(COPY "${LIBRETTO_SOURCE_DIR}/test_package" DESTINATION "${recipe}" PATTERN "build" EXCLUDE
     PATTERN "CMakeUserPresets.json" EXCLUDE)

run_step("make sure a default profile exists" "${conan}" profile detect --exist-ok)
run_step("create the package and run test_package"
    "${conan}" create "${recipe}" --build=missing -s compiler.cppstd=20 -o "libretto/*:with_sqlite=True")
message(STATUS "conan_create: passed")
