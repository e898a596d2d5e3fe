# Conan 2 recipe for libretto, a header-only library. See docs/building.md ("Conan").
#   conan create . --build=missing        (builds and runs test_package/)
import os

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy
from conan.tools.layout import basic_layout

required_conan_version = ">=2.0"


class LibrettoConan(ConanFile):
    name = "libretto"
    version = "0.1.0"
    license = "BSL-1.0"
    description = "Header-only C++20 agent runtime built on Boost.Asio and Boost.JSON"
    topics = ("asio", "coroutines", "llm", "agents", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "CMakeLists.txt", "cmake/*", "LICENSE_1_0.txt"
    no_copy_source = True

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        # Boost.JSON is a compiled library, so Boost must not be header-only here.
        self.requires("boost/1.81.0", transitive_headers=True)
        self.requires("openssl/[>=3 <4]", transitive_headers=True)

    def package_id(self):
        self.info.clear()

    def validate(self):
        if self.settings.get_safe("compiler.cppstd"):
            check_min_cppstd(self, 20)

    def build(self):
        pass

    def package(self):
        copy(self, "LICENSE_1_0.txt", src=self.source_folder,
             dst=os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", src=os.path.join(self.source_folder, "include"),
             dst=os.path.join(self.package_folder, "include"))
        copy(self, "*.ipp", src=os.path.join(self.source_folder, "include"),
             dst=os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "libretto")
        self.cpp_info.set_property("cmake_target_name", "libretto::libretto")
        self.cpp_info.requires = ["boost::headers", "boost::json", "openssl::crypto", "openssl::ssl"]
