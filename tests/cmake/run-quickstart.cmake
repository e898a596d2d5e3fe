# cmake -P script behind the example_quickstart* tests: runs a quickstart build with the
# scripted model in a fresh sessions folder and checks what it printed.
#
#   cmake -DEXE=<quickstart binary> -DSESSIONS=<folder, emptied first> -P run-quickstart.cmake
foreach(var EXE SESSIONS)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "run-quickstart.cmake: -D${var}=... is required")
    endif()
endforeach()
file(REMOVE_RECURSE "${SESSIONS}")
execute_process(
    COMMAND ${CMAKE_COMMAND} -E env LIBRETTO_MODEL=scripted "LIBRETTO_SESSIONS=${SESSIONS}" "${EXE}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run-quickstart.cmake: ${EXE} exited with ${rc}")
endif()
# Both turns' tool calls and answers, the stored session and its state, the model's five calls.
foreach(expected
        "get_weather -> {\"city\":\"Oslo\",\"temp_c\":21,\"sky\":\"clear\"}"
        "call to_fahrenheit{\"celsius\":21}"
        "to_fahrenheit -> 69.8]"
        "Bergen: 17 °C and clear"
        "session 'weather': 10 events stored"
        "state: {\"last_city\":\"Bergen\"}"
        "model calls: 5")
    string(FIND "${out}" "${expected}" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "run-quickstart.cmake: the output lacks \"${expected}\"")
    endif()
endforeach()
