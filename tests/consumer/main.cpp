// Uses libretto through an installed package (find_package(libretto), libretto::libretto).
// Exit status 0 means every check passed; each failure prints one line to stderr.
#include <libretto/error.hpp>

#include <boost/system/error_code.hpp>

#include <cstdio>
#include <string_view>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "consumer: FAILED: %s\n", what);
        ++failures;
    }
}

void check_error_codes() {
    boost::system::error_code ec = libretto::errc::stale_session;
    check(static_cast<bool>(ec), "errc::stale_session converts to a failing error_code");
    check(std::string_view(ec.category().name()) == "libretto", "error category is named \"libretto\"");
    check(ec.value() == static_cast<int>(libretto::errc::stale_session), "error_code keeps the value");
    check(!ec.message().empty(), "error_code has a message");
}

// ---------------------------------------------------------------------------------------------
// Event model: add a check_events() here that builds and inspects a few events through the
// public headers only (no detail/), and call it from main() below.
// ---------------------------------------------------------------------------------------------

} // namespace

int main() {
    check_error_codes();
    // check_events();
    if (failures == 0)
        std::puts("consumer: ok");
    return failures == 0 ? 0 : 1;
}
