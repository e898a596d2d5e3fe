// Conan test package: links what a consumer links and uses it.
//   always:                         an event through serialize_event / parse_event (Boost.JSON,
//                                   a compiled library: this fails to link without boost::json)
//   LIBRETTO_TEST_PACKAGE_WITH_SQLITE    an sqlite_store on a temporary file: create, append, read back
//   LIBRETTO_TEST_PACKAGE_WITH_OPENSSL   a fresh Ed25519 key signs an event; it verifies, a changed copy does not
//   LIBRETTO_TEST_PACKAGE_WITH_SODIUM    the same with libsodium
//   LIBRETTO_TEST_PACKAGE_WITH_POSTGRES  postgres_store compiles and libpq links (no server here)
// test_package/CMakeLists.txt defines each macro when its component is enabled. Exit status 0
// means every check passed; each failure prints one line.
#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/event/json.hpp>

#ifdef LIBRETTO_TEST_PACKAGE_WITH_SQLITE
#include <libretto/store/sqlite_store.hpp>

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#endif
#ifdef LIBRETTO_TEST_PACKAGE_WITH_OPENSSL
#include <libretto/sign/ed25519_openssl.hpp>
#endif
#ifdef LIBRETTO_TEST_PACKAGE_WITH_SODIUM
#include <libretto/sign/ed25519_sodium.hpp>
#endif
#ifdef LIBRETTO_TEST_PACKAGE_WITH_POSTGRES
#include <libretto/store/postgres_store.hpp>

#include <libpq-fe.h>
#endif

#include <boost/system/error_code.hpp>

#include <cstdio>
#include <string>
#include <string_view>

namespace lb = libretto;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "test_package: FAILED: %s\n", what);
        ++failures;
    }
}

lb::event hello_event() {
    lb::event e = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("hello"));
    e.sequence = 1;
    return e;
}

void check_json() {
    const lb::event e = hello_event();
    const std::string text = lb::serialize_event(e);
    auto back = lb::parse_event(text);
    check(back.has_value() && *back == e, "an event survives serialize_event/parse_event");
    auto bad = lb::parse_event("{\"id\":1}");
    check(!bad.has_value() && bad.error().path == "id", "parse_event names the bad field");
    boost::system::error_code ec = lb::errc::stale_session;
    check(std::string_view(ec.category().name()) == "libretto", "the libretto error category");
}

#ifdef LIBRETTO_TEST_PACKAGE_WITH_SQLITE
void check_sqlite() {
    const auto path = std::filesystem::temp_directory_path() / ("libretto-test-package-" + lb::event::new_id() + ".db");
    {
        boost::asio::io_context io;
        lb::sqlite_store_options o;
        o.path = path.string();
        lb::sqlite_store store{io.get_executor(), o};
        lb::session s;
        check(!store.create(lb::create_options{"test_package", "u1", "s1"}, s), "sqlite_store: create");
        std::int64_t sequence = 0;
        check(!store.append(s, hello_event(), sequence) && sequence == 1, "sqlite_store: append gets sequence 1");
        std::optional<lb::session> back;
        check(!store.get(lb::session_key{"test_package", "u1", "s1"}, lb::get_options{}, back), "sqlite_store: get");
        check(back && back->events.size() == 1 && back->events[0].text() == "hello",
              "sqlite_store: the stored event reads back");
    }
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(path.string() + suffix, ignored);
}
#endif

// Signer and verifier of one back end: the signature verifies, and not once the text changed.
template <class Key, class Signer, class Verifier>
void check_signing(const char* backend) {
    const Signer signer{Key::generate()};
    lb::event e = hello_event();
    signer.sign_event(e);
    Verifier verifier;
    const bool signed_ok = e.is_signed() && e.signer_did == std::string(signer.did()) && !lb::verify_signature(e, verifier);
    lb::event changed = e;
    changed.content = lb::content::from_text("hello!");
    const bool changed_fails = lb::verify_signature(changed, verifier) == lb::errc::bad_signature;
    if (!signed_ok) std::fprintf(stderr, "test_package: FAILED: %s: a signed event verifies\n", backend);
    if (!changed_fails) std::fprintf(stderr, "test_package: FAILED: %s: a changed event does not\n", backend);
    failures += !signed_ok + !changed_fails;
}

} // namespace

int main() {
    std::string checked = "json";
    check_json();
#ifdef LIBRETTO_TEST_PACKAGE_WITH_SQLITE
    check_sqlite();
    checked += " sqlite";
#endif
#ifdef LIBRETTO_TEST_PACKAGE_WITH_OPENSSL
    check_signing<lb::ed25519_key, lb::ed25519_signer, lb::ed25519_verifier>("openssl");
    checked += " openssl";
#endif
#ifdef LIBRETTO_TEST_PACKAGE_WITH_SODIUM
    check_signing<lb::sodium_ed25519_key, lb::sodium_ed25519_signer, lb::sodium_ed25519_verifier>("sodium");
    checked += " sodium";
#endif
#ifdef LIBRETTO_TEST_PACKAGE_WITH_POSTGRES
    check(PQlibVersion() > 0, "libpq links (PQlibVersion)");
    checked += " postgres";
#endif
    if (failures == 0) std::printf("libretto test_package: ok (%s)\n", checked.c_str());
    return failures == 0 ? 0 : 1;
}
