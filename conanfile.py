# Conan 2 recipe for libretto, a header-only library with optional back ends.
# See docs/building.md ("Conan"). On a freshly detected profile (gnu17 by default):
#   conan create . --build=missing -s compiler.cppstd=20 -o "libretto/*:with_sqlite=True"
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
    # homepage: the project; url: where this recipe lives (the same repository; Conan Center
    # would name conan-center-index). No public address is recorded in the tree yet: replace
    # both when the repository is published.
    homepage = "https://github.com/libretto-cpp/libretto"
    url = "https://github.com/libretto-cpp/libretto"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    # Each option adds one CMake component (libretto::<name>) and its dependency. Defaults as
    # Conan Center sets them for optional back ends (cpp-httplib, poco): off, so that the
    # default graph stays small, except OpenSSL, which most users need (https to hosted model
    # APIs, Ed25519 signing) and which Boost.Beast's TLS already expects.
    options = {
        "with_openssl": [True, False],    # libretto::openssl: https_transport, ed25519_openssl
        "with_sqlite": [True, False],     # libretto::sqlite: sqlite_store
        "with_postgres": [True, False],   # libretto::postgres: postgres_store
        "with_sodium": [True, False],     # libretto::sodium: ed25519_sodium
    }
    default_options = {
        "with_openssl": True,
        "with_sqlite": False,
        "with_postgres": False,
        "with_sodium": False,
    }
    exports_sources = ("include/*", "cmake/libretto-conan-components.cmake", "cmake/libretto-compiled.cmake",
                       "LICENSE_1_0.txt")
    no_copy_source = True

    # Where package() puts the build module that checks find_package(... COMPONENTS ...).
    _components_module = os.path.join("lib", "cmake", "libretto-conan-components.cmake")

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        # Boost.JSON is a compiled library, so Boost must not be header_only (its default).
        # The public headers include every dependency's headers: transitive_headers.
        self.requires("boost/[>=1.81.0 <2]", transitive_headers=True)
        if self.options.with_openssl:
            self.requires("openssl/[>=3 <4]", transitive_headers=True)
        if self.options.with_sqlite:
            # sqlite_store needs SQLite's JSON functions (3.38); Conan Center's oldest is newer.
            self.requires("sqlite3/[>=3.45.0 <4]", transitive_headers=True)
        if self.options.with_postgres:
            self.requires("libpq/[>=15.4 <18]", transitive_headers=True)
        if self.options.with_sodium:
            self.requires("libsodium/[>=1.0.18 <2]", transitive_headers=True)

    def package_id(self):
        # One package for every configuration and every option set: the packaged files are the
        # same headers and the same build module whatever the options say (the module looks at
        # the targets CMakeDeps created, it holds no option values). The options still decide
        # the requirements and the components in package_info(), which run with the consumer's
        # option values; only the package id ignores them, as in Conan Center's header-only
        # recipes with options (cpp-httplib: self.info.clear() with with_openssl/with_zlib).
        self.info.clear()

    def validate(self):
        # Unconditional: Conan 2 raises when compiler.cppstd is missing and refuses gnu17, the
        # value `conan profile detect` writes for g++ 11-13 and clang 16, so a detected profile
        # gets a clear message instead of a compile error in the consumer.
        check_min_cppstd(self, 20)

    def build(self):
        pass

    def package(self):
        copy(self, "LICENSE_1_0.txt", src=self.source_folder,
             dst=os.path.join(self.package_folder, "licenses"))
        for pattern in ("*.hpp", "*.ipp"):
            copy(self, pattern, src=os.path.join(self.source_folder, "include"),
                 dst=os.path.join(self.package_folder, "include"))
        # The components check, and libretto::compiled (separate compilation), which it creates.
        for module in ("libretto-conan-components.cmake", "libretto-compiled.cmake"):
            copy(self, module, src=os.path.join(self.source_folder, "cmake"),
                 dst=os.path.join(self.package_folder, os.path.dirname(self._components_module)))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "libretto")
        # The root target links every enabled component. It cannot be libretto::libretto,
        # which is the core component's name (as in libretto's own CMake package, where
        # libretto::libretto is the core only); libretto::all exists only under Conan.
        self.cpp_info.set_property("cmake_target_name", "libretto::all")
        # CMakeDeps does not check find_package(libretto COMPONENTS ...) (its
        # check_components_exist is off by default, set by the consumer, and looks for a target
        # named like the component): this module makes a missing or disabled component fail.
        self.cpp_info.set_property("cmake_build_modules", [self._components_module])

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "libretto::libretto")
        core.requires = ["boost::headers", "boost::json"]
        core.bindirs = []
        core.libdirs = []

        optional = {
            "openssl": ("with_openssl", ["openssl::ssl", "openssl::crypto"]),
            "sqlite": ("with_sqlite", ["sqlite3::sqlite3"]),
            "postgres": ("with_postgres", ["libpq::libpq"]),
            "sodium": ("with_sodium", ["libsodium::libsodium"]),
        }
        for name, (option, requires) in optional.items():
            if not self.options.get_safe(option):
                continue
            component = self.cpp_info.components[name]
            component.set_property("cmake_target_name", f"libretto::{name}")
            component.requires = ["core"] + requires
            component.bindirs = []
            component.libdirs = []
            component.includedirs = []  # the core component carries include/
