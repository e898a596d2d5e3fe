# Conan 2 test package: builds test_package.cpp against the libretto package and runs it.
# The options the package was created with reach CMake as LIBRETTO_WITH_<COMPONENT> (ON/OFF), so
# test_package links the enabled components, exercises them and checks that find_package refuses
# the disabled ones.
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class LibrettoTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        CMakeDeps(self).generate()
        toolchain = CMakeToolchain(self)
        options = self.dependencies["libretto"].options
        for component in ("openssl", "sqlite", "postgres", "sodium"):
            enabled = bool(options.get_safe(f"with_{component}"))
            toolchain.cache_variables[f"LIBRETTO_WITH_{component.upper()}"] = "ON" if enabled else "OFF"
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
