// Conan test package: the installed headers compile and the error category links and works.
#include <libretto/error.hpp>

#include <cstdio>
#include <string_view>

int main() {
    boost::system::error_code ec = libretto::errc::stale_session;
    if (!ec || std::string_view(ec.category().name()) != "libretto") {
        std::fprintf(stderr, "test_package: unexpected error_code %s\n", ec.to_string().c_str());
        return 1;
    }
    std::printf("libretto test_package: %s\n", ec.message().c_str());
    return 0;
}
