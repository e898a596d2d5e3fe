# libretto-conan-components.cmake: the Conan package's check of
#   find_package(libretto CONFIG REQUIRED COMPONENTS sqlite)
#
# Conan's CMakeDeps includes this file (the recipe's cmake_build_modules) from the
# libretto-config.cmake it generates, after it created the targets of the enabled components
# (libretto::openssl only with -o "libretto/*:with_openssl=True", and so on). CMakeDeps does not
# check the requested components itself, so without this file a disabled component "was found"
# and its target was missing at link time. Like libretto's own package config (check_required_
# components), it sets libretto_<component>_FOUND for every component and, when a required one
# is missing or unknown, libretto_FOUND to FALSE with a message naming the option to turn on.
# Option values are not written here: the targets say which components the graph enabled, so the
# one packaged file serves every option set (the recipe's package_id ignores the options).
#
# tests/cmake/run-conan-components-test.cmake tests it without Conan.

set(_libretto_components openssl sqlite postgres sodium)
foreach(_libretto_component IN LISTS _libretto_components)
    if(TARGET libretto::${_libretto_component})
        set(libretto_${_libretto_component}_FOUND TRUE)
    else()
        set(libretto_${_libretto_component}_FOUND FALSE)
    endif()
endforeach()

set(_libretto_refused "")
foreach(_libretto_component IN LISTS libretto_FIND_COMPONENTS)
    if(NOT _libretto_component IN_LIST _libretto_components)
        set(libretto_${_libretto_component}_FOUND FALSE)
        if(libretto_FIND_REQUIRED_${_libretto_component})
            string(REPLACE ";" ", " _libretto_known "${_libretto_components}")
            string(APPEND _libretto_refused "\n  '${_libretto_component}' is not a libretto component "
                                            "(there are: ${_libretto_known})")
        endif()
    elseif(NOT libretto_${_libretto_component}_FOUND AND libretto_FIND_REQUIRED_${_libretto_component})
        string(APPEND _libretto_refused "\n  libretto::${_libretto_component} is not enabled in this "
                                        "Conan graph: add -o \"libretto/*:with_${_libretto_component}=True\"")
    endif()
endforeach()

if(_libretto_refused)
    set(libretto_FOUND FALSE)
    set(libretto_NOT_FOUND_MESSAGE "requested components are missing:${_libretto_refused}")
endif()

unset(_libretto_component)
unset(_libretto_known)
unset(_libretto_components)
unset(_libretto_refused)

# libretto::compiled (separate compilation, docs/building.md): built in the consumer's tree
# from the packaged sources, as libretto's own package config does; after the components, so
# that it includes the OpenSSL part when libretto::openssl is enabled.
include("${CMAKE_CURRENT_LIST_DIR}/libretto-compiled.cmake")
libretto_add_compiled_library("${CMAKE_CURRENT_LIST_DIR}/../../include") # the module is in lib/cmake/
