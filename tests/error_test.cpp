// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#include <libretto/error.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

namespace sys = boost::system;
using libretto::errc;

namespace {
constexpr int first_errc = static_cast<int>(errc::invalid_argument);
constexpr int last_errc = static_cast<int>(errc::unexpected_exception);
} // namespace

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(is_error_code_enum_is_specialised) {
    static_assert(sys::is_error_code_enum<errc>::value);
    static_assert(!sys::is_error_condition_enum<errc>::value);
    // The implicit conversion is what makes `ec == errc::x` and `error_code ec = errc::x` work.
    static_assert(std::is_convertible_v<errc, sys::error_code>);
    sys::error_code ec = errc::busy;
    BOOST_TEST(ec.value() == static_cast<int>(errc::busy));
    BOOST_TEST(&ec.category() == &libretto::error_category());
}

BOOST_AUTO_TEST_CASE(enumerators_are_numbered_from_one) {
    // Zero is reserved for success, and the enumerators are contiguous.
    BOOST_TEST(first_errc == 1);
    BOOST_TEST(last_errc == 24);
    BOOST_TEST(static_cast<int>(errc::limit_exceeded) == 23);
    BOOST_TEST(static_cast<int>(errc::invalid_json) == 2);
    BOOST_TEST(static_cast<int>(errc::missing_field) == 3);
    BOOST_TEST(static_cast<int>(errc::stale_session) == 9);
    BOOST_TEST(static_cast<int>(errc::bad_signature) == 18);
    BOOST_TEST(static_cast<int>(errc::io_error) == 19);
    BOOST_TEST(static_cast<int>(errc::transient) == 20);
    BOOST_TEST(static_cast<int>(errc::bad_response) == 21);
    BOOST_TEST(static_cast<int>(errc::auth_failed) == 22);
}

BOOST_AUTO_TEST_CASE(category_name_is_libretto) {
    BOOST_TEST(std::strcmp(libretto::error_category().name(), "libretto") == 0);
    BOOST_TEST(libretto::make_error_code(errc::io_error).category().name() == std::string("libretto"));
}

BOOST_AUTO_TEST_CASE(category_is_a_singleton) {
    const auto& a = libretto::error_category();
    const auto& b = libretto::error_category();
    BOOST_TEST(&a == &b);
    BOOST_TEST((a == b));
    BOOST_TEST((a != sys::generic_category()));
    BOOST_TEST((a != sys::system_category()));
}

BOOST_AUTO_TEST_CASE(every_enumerator_has_a_distinct_non_empty_message) {
    std::set<std::string> seen;
    for (int v = first_errc; v <= last_errc; ++v) {
        BOOST_TEST_CONTEXT("errc value " << v) {
            const auto ec = libretto::make_error_code(static_cast<errc>(v));
            const std::string msg = ec.message();
            BOOST_TEST(!msg.empty());
            BOOST_TEST(msg != "unknown libretto error");
            BOOST_TEST(seen.insert(msg).second, "message \"" << msg << "\" is not distinct");
            // The buffer overload agrees with the std::string overload.
            char buf[8];
            BOOST_TEST(std::string(libretto::error_category().message(v, buf, sizeof buf)) == msg);
        }
    }
    BOOST_TEST(seen.size() == static_cast<std::size_t>(last_errc - first_errc + 1));
}

BOOST_AUTO_TEST_CASE(specific_messages) {
    BOOST_TEST(libretto::make_error_code(errc::invalid_json).message() == "invalid JSON");
    BOOST_TEST(libretto::make_error_code(errc::missing_field).message() == "required field is missing");
    BOOST_TEST(libretto::make_error_code(errc::wrong_type).message() == "field has the wrong type");
    BOOST_TEST(libretto::make_error_code(errc::io_error).message() == "I/O error");
    BOOST_TEST(libretto::make_error_code(errc::transient).message() == "temporary failure: retry later");
    BOOST_TEST(libretto::make_error_code(errc::bad_response).message() == "malformed model response");
    BOOST_TEST(libretto::make_error_code(errc::auth_failed).message() == "authentication failed");
    BOOST_TEST(libretto::make_error_code(errc::context_overflow).message() == "model context window exceeded");
    BOOST_TEST(libretto::make_error_code(errc::unexpected_exception).message() == "unexpected exception");
}

BOOST_AUTO_TEST_CASE(is_transient_accepts_retryable_failures_only) {
    BOOST_TEST(libretto::is_transient(errc::transient));
    // Transport timeouts and dropped connections, in the system and generic categories.
    BOOST_TEST(libretto::is_transient(sys::error_code(ETIMEDOUT, sys::system_category())));
    BOOST_TEST(libretto::is_transient(sys::error_code(ECONNRESET, sys::system_category())));
    BOOST_TEST(libretto::is_transient(sys::error_code(ECONNABORTED, sys::generic_category())));
    BOOST_TEST(libretto::is_transient(sys::error_code(EAGAIN, sys::system_category())));
    // Retrying these would fail the same way.
    BOOST_TEST(!libretto::is_transient(sys::error_code{}));
    BOOST_TEST(!libretto::is_transient(errc::context_overflow));
    BOOST_TEST(!libretto::is_transient(errc::auth_failed));
    BOOST_TEST(!libretto::is_transient(errc::bad_response));
    BOOST_TEST(!libretto::is_transient(errc::model_error));
    BOOST_TEST(!libretto::is_transient(errc::cancelled));
    BOOST_TEST(!libretto::is_transient(sys::error_code(ENOENT, sys::system_category())));
    // The same number in libretto's category is not a system timeout.
    BOOST_TEST(!libretto::is_transient(sys::error_code(ETIMEDOUT, libretto::error_category())));
}

BOOST_AUTO_TEST_CASE(out_of_range_values_have_a_fallback_message) {
    for (int v : {0, -1, last_errc + 1, 1000}) {
        BOOST_TEST_CONTEXT("value " << v) {
            BOOST_TEST(libretto::error_category().message(v) == "unknown libretto error");
        }
    }
}

BOOST_AUTO_TEST_CASE(make_error_code_builds_a_failing_code) {
    for (int v = first_errc; v <= last_errc; ++v) {
        BOOST_TEST_CONTEXT("errc value " << v) {
            const auto ec = libretto::make_error_code(static_cast<errc>(v));
            BOOST_TEST(ec.value() == v);
            BOOST_TEST(&ec.category() == &libretto::error_category());
            BOOST_TEST(ec.failed());
            BOOST_TEST(static_cast<bool>(ec));
        }
    }
    static_assert(noexcept(libretto::make_error_code(errc::busy)));
}

BOOST_AUTO_TEST_CASE(comparisons_with_error_code) {
    sys::error_code ec = libretto::make_error_code(errc::not_found);
    BOOST_TEST((ec == errc::not_found));
    BOOST_TEST((errc::not_found == ec));
    BOOST_TEST((ec != errc::already_exists));
    BOOST_TEST((ec == libretto::make_error_code(errc::not_found)));
    BOOST_TEST((ec != libretto::make_error_code(errc::busy)));

    // A default (success) code equals no libretto error.
    sys::error_code ok;
    BOOST_TEST(!ok.failed());
    for (int v = first_errc; v <= last_errc; ++v) BOOST_TEST((ok != static_cast<errc>(v)));

    // The same numeric value in another category is a different error.
    sys::error_code generic(static_cast<int>(errc::not_found), sys::generic_category());
    BOOST_TEST((generic != errc::not_found));
    sys::error_code system(static_cast<int>(errc::not_found), sys::system_category());
    BOOST_TEST((system != ec));

    // Assignment from the enum.
    ec = errc::cancelled;
    BOOST_TEST((ec == errc::cancelled));
    BOOST_TEST(ec.message() == "operation cancelled");
}

BOOST_AUTO_TEST_CASE(converts_to_std_error_code) {
    const sys::error_code ec = errc::tool_error;
    const std::error_code sec = ec;
    BOOST_TEST(sec.value() == static_cast<int>(errc::tool_error));
    BOOST_TEST(sec.message() == "tool error");
    BOOST_TEST(std::string(sec.category().name()) == "libretto");
    BOOST_TEST((sec == ec));
}

BOOST_AUTO_TEST_CASE(stream_insertion_writes_the_message) {
    std::ostringstream os;
    os << errc::stale_session;
    BOOST_TEST(os.str() == "session is stale: it was modified after it was loaded");
    for (int v = first_errc; v <= last_errc; ++v) {
        std::ostringstream one;
        one << static_cast<errc>(v);
        BOOST_TEST(one.str() == libretto::make_error_code(static_cast<errc>(v)).message());
    }
    std::ostringstream bad;
    bad << static_cast<errc>(0) << '|' << errc::io_error; // chains
    BOOST_TEST(bad.str() == "unknown libretto error|I/O error");
}

BOOST_AUTO_TEST_CASE(system_error_carries_the_code) {
    try {
        throw sys::system_error(libretto::make_error_code(errc::stale_session), "append");
    } catch (const sys::system_error& e) {
        BOOST_TEST((e.code() == errc::stale_session));
        const std::string what = e.what();
        BOOST_TEST(what.find("append") != std::string::npos);
        BOOST_TEST(what.find("session is stale") != std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
