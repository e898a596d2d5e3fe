# A stand-in for the libretto-config.cmake that Conan's CMakeDeps generates, in the order it
# works: the targets of the enabled components first (CMakeDeps' libretto-Targets.cmake), then
# the recipe's cmake_build_modules. FAKE_CONAN_ENABLED (space-separated) plays the options:
# "openssl sqlite" is -o "libretto/*:with_openssl=True" -o "libretto/*:with_sqlite=True".
foreach(target libretto::libretto libretto::all)
    if(NOT TARGET ${target})
        add_library(${target} INTERFACE IMPORTED)
    endif()
endforeach()
separate_arguments(_fake_enabled UNIX_COMMAND "${FAKE_CONAN_ENABLED}")
foreach(_fake_component IN LISTS _fake_enabled)
    if(NOT TARGET libretto::${_fake_component})
        add_library(libretto::${_fake_component} INTERFACE IMPORTED)
        set_property(TARGET libretto::${_fake_component} PROPERTY INTERFACE_LINK_LIBRARIES libretto::libretto)
    endif()
endforeach()

include("${LIBRETTO_CONAN_COMPONENTS_MODULE}")
