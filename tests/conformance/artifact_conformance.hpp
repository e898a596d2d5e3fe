// The artifact-service conformance suite: the same cases against every artifact_service model.
//
// A backend test file defines a fixture type F with
//   using service_type = ...;
//   static constexpr bool persistent = ...;  // artifacts outlive the service object
//   service_type open();                      // a service on the fixture's data (call twice:
//                                             // two instances on the same data)
//   (optional) service_type open_limited(std::uint64_t max_artifact_bytes);
// and instantiates the suite with LIBRETTO_ARTIFACT_CONFORMANCE(F).
#ifndef LIBRETTO_TESTS_ARTIFACT_CONFORMANCE_HPP
#define LIBRETTO_TESTS_ARTIFACT_CONFORMANCE_HPP

#include <libretto/store/any_artifact_service.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/event/event.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace artifact_conformance {

namespace lb = libretto;
using boost::system::error_code;

inline lb::artifact_key key(std::string name, std::string session = "s1") { return {"app", "u1", std::move(session), std::move(name)}; }

/// A source over `data`, `piece` bytes at a time at most.
inline lb::artifact_source source(const std::string& data, std::size_t piece = 1 << 20) {
    return [&data, piece, at = std::size_t(0)](char* buf, std::size_t n) mutable {
        const std::size_t k = std::min({n, piece, data.size() - at});
        std::memcpy(buf, data.data() + at, k);
        at += k;
        return k;
    };
}

template <class S>
lb::artifact_info save(S& s, const lb::artifact_key& k, const std::string& data, std::string mime = "text/plain",
                       lb::json::object md = {}) {
    auto in = source(data);
    lb::artifact_info info;
    lb::diagnostics d;
    const error_code ec = s.artifact_save(k, in, mime, md, info, &d);
    BOOST_TEST_REQUIRE(!ec, d.message());
    return info;
}

struct loaded {
    std::optional<lb::artifact_info> info;
    std::string data;
    std::size_t chunks = 0;
};

template <class S>
loaded load(S& s, const lb::artifact_key& k, std::optional<std::int64_t> version = {}) {
    loaded out;
    lb::artifact_sink sink = [&](std::string_view c) {
        out.data.append(c);
        ++out.chunks;
    };
    lb::diagnostics d;
    const error_code ec = s.artifact_load(k, version, sink, out.info, &d);
    BOOST_TEST_REQUIRE(!ec, d.message());
    return out;
}

template <class S>
std::vector<std::string> names(S& s, std::string session = "s1") {
    std::vector<std::string> out;
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.artifact_list("app", "u1", session, out, &d), d.message());
    return out;
}

template <class S>
std::vector<lb::artifact_info> versions(S& s, const lb::artifact_key& k) {
    std::vector<lb::artifact_info> out;
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!s.artifact_versions(k, out, &d), d.message());
    return out;
}

template <class F>
void case_save_and_load_versions() {
    F f;
    auto s = f.open();
    BOOST_TEST(!load(s, key("report.md")).info); // nothing yet: no error
    lb::json::object md{{"title", "Q3 report"}, {"pages", 3}};
    const double before = lb::event::now();
    lb::artifact_info v0 = save(s, key("report.md"), "# Q3\nfirst draft\n", "text/markdown", md);
    BOOST_TEST(v0.version == 0);
    BOOST_TEST(v0.name == "report.md");
    BOOST_TEST(v0.size == 17u);
    BOOST_TEST(v0.mime_type == "text/markdown");
    BOOST_TEST(v0.created_at >= before - 1);
    BOOST_TEST(v0.metadata == md);
    lb::artifact_info v1 = save(s, key("report.md"), "# Q3\nfinal\n", "text/markdown");
    BOOST_TEST(v1.version == 1);
    auto latest = load(s, key("report.md"));
    BOOST_TEST_REQUIRE(latest.info.has_value());
    BOOST_TEST(latest.info->version == 1);
    BOOST_TEST(latest.data == "# Q3\nfinal\n");
    auto first = load(s, key("report.md"), 0);
    BOOST_TEST_REQUIRE(first.info.has_value());
    BOOST_TEST((*first.info == v0));
    BOOST_TEST(first.data == "# Q3\nfirst draft\n");
    auto all = versions(s, key("report.md"));
    BOOST_REQUIRE_EQUAL(all.size(), 2u);
    BOOST_TEST((all[0] == v0));
    BOOST_TEST((all[1] == v1));
    // Another session's name of the same spelling is another artifact.
    BOOST_TEST(!load(s, key("report.md", "s2")).info);
    BOOST_TEST(save(s, key("report.md", "s2"), "other").version == 0);
    // Empty and binary content.
    BOOST_TEST(save(s, key("empty.bin"), "").size == 0u);
    auto empty = load(s, key("empty.bin"));
    BOOST_TEST_REQUIRE(empty.info.has_value());
    BOOST_TEST(empty.data.empty());
    std::string binary;
    for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
    save(s, key("all-bytes.bin"), binary, "application/octet-stream");
    BOOST_TEST(load(s, key("all-bytes.bin")).data == binary);
    if constexpr (F::persistent) {
        auto again = f.open();
        BOOST_TEST(load(again, key("report.md"), 0).data == "# Q3\nfirst draft\n");
        BOOST_TEST(versions(again, key("report.md")).size() == 2u);
    }
}

template <class F>
void case_user_scope_and_listing() {
    F f;
    auto s = f.open();
    save(s, key("notes.txt", "s1"), "session one");
    save(s, key("plan.txt", "s2"), "session two");
    save(s, key("user:profile.json", "s1"), "{\"tz\": \"CET\"}", "application/json");
    // The user's artifact is the same from every session.
    auto from_s2 = load(s, key("user:profile.json", "s2"));
    BOOST_TEST_REQUIRE(from_s2.info.has_value());
    BOOST_TEST(from_s2.data == "{\"tz\": \"CET\"}");
    BOOST_TEST(save(s, key("user:profile.json", "s2"), "{}").version == 1);
    BOOST_TEST((names(s, "s1") == std::vector<std::string>{"notes.txt", "user:profile.json"}));
    BOOST_TEST((names(s, "s2") == std::vector<std::string>{"plan.txt", "user:profile.json"}));
    BOOST_TEST((names(s, "s3") == std::vector<std::string>{"user:profile.json"}));
    // Another user sees none of them.
    std::vector<std::string> other;
    BOOST_TEST_REQUIRE(!s.artifact_list("app", "u2", "s1", other, nullptr));
    BOOST_TEST(other.empty());
    // Delete: every version; the name leaves the list; deleting again is no error.
    BOOST_TEST_REQUIRE(!s.artifact_delete(key("user:profile.json", "s9"), nullptr));
    BOOST_TEST(!load(s, key("user:profile.json")).info);
    BOOST_TEST(versions(s, key("user:profile.json")).empty());
    BOOST_TEST((names(s, "s1") == std::vector<std::string>{"notes.txt"}));
    BOOST_TEST(!s.artifact_delete(key("user:profile.json"), nullptr));
    // Saved again after a delete: it starts over at version 0.
    BOOST_TEST(save(s, key("user:profile.json"), "new").version == 0);
}

template <class F>
void case_refusals_name_what_is_wrong_and_change_nothing() {
    F f;
    auto s = f.open();
    save(s, key("kept.txt"), "kept");
    lb::diagnostics d;
    lb::artifact_info info;
    std::optional<lb::artifact_info> found;
    lb::artifact_sink sink = [](std::string_view) {};
    for (std::string bad : {std::string("../etc/passwd"), std::string("a/b"), std::string("a\\b"), std::string("x\ny"),
                            std::string(), std::string(".."), std::string(256, 'n'), std::string("\xff"),
                            std::string("user:")}) {
        std::string data = "x";
        auto in = source(data);
        BOOST_TEST((s.artifact_save(key(bad), in, "text/plain", {}, info, &d) == lb::errc::invalid_argument), bad);
        BOOST_TEST(d.message().find("name") != std::string::npos, d.message());
        BOOST_TEST(s.artifact_load(key(bad), std::nullopt, sink, found, &d) == lb::errc::invalid_argument);
        std::vector<lb::artifact_info> vs;
        BOOST_TEST(s.artifact_versions(key(bad), vs, &d) == lb::errc::invalid_argument);
        BOOST_TEST(s.artifact_delete(key(bad), &d) == lb::errc::invalid_argument);
    }
    // A long but valid name (255 bytes).
    BOOST_TEST(save(s, key(std::string(255, 'n')), "long name").version == 0);
    // Bad ids.
    std::string data = "x";
    auto in = source(data);
    BOOST_TEST(s.artifact_save(lb::artifact_key("app", "u/1", "s1", "a.txt"), in, "text/plain", {}, info, &d) ==
               lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("user id") != std::string::npos, d.message());
    BOOST_TEST(s.artifact_save(lb::artifact_key("app", "u1", "", "a.txt"), in, "text/plain", {}, info, &d) ==
               lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("session id") != std::string::npos, d.message());
    // A user-scoped name needs no session.
    BOOST_TEST(!s.artifact_save(lb::artifact_key("app", "u1", "", "user:a.txt"), in, "text/plain", {}, info, &d), d.message());
    std::vector<std::string> listed;
    BOOST_TEST(s.artifact_list("app", "u1", "../s", listed, &d) == lb::errc::invalid_argument);
    // A bad MIME type.
    auto in2 = source(data);
    BOOST_TEST(s.artifact_save(key("m.txt"), in2, "text/plain\r\nX-Evil: 1", {}, info, &d) == lb::errc::invalid_argument);
    // NUL (a C string would end there: PostgreSQL stored "text/plain"), every other control
    // character (C0, DEL, C1) and bytes that are not UTF-8: refused, naming the MIME type.
    for (std::string mime : {std::string("text/plain\0x", 12), std::string("text/plain\x01"), std::string("text/\tplain"),
                             std::string("text/plain\x7f"), std::string("text/\xc2\x85plain"), std::string("text/\xff")}) {
        auto in_mime = source(data);
        BOOST_TEST((s.artifact_save(key("m.txt"), in_mime, mime, {}, info, &d) == lb::errc::invalid_argument), d.message());
        BOOST_TEST(d.message().find("MIME type") != std::string::npos, d.message());
    }
    // Other UTF-8 is a MIME type's text (a parameter may quote it).
    auto in_utf8 = source(data);
    BOOST_TEST(!s.artifact_save(key("utf8.txt"), in_utf8, "text/plain; title=\"caf\xc3\xa9\"", {}, info, &d), d.message());
    // Metadata no back end could read back: refused before anything is stored, naming the member.
    auto nested = [](std::size_t arrays) {
        lb::json::value v = 1;
        for (std::size_t i = 0; i < arrays; ++i) v = lb::json::array{std::move(v)};
        return v;
    };
    const std::vector<std::pair<lb::json::object, std::string>> bad_metadata = {
        {{{"score", std::numeric_limits<double>::quiet_NaN()}}, "NaN is not finite"},
        {{{"a", lb::json::object{{"b", std::numeric_limits<double>::infinity()}}}}, "number inf is not finite: JSON has no text for it in member \"b\""},
        {{{"note", "caf\xc3"}}, "not valid UTF-8"},
        {{{"deep", nested(255)}}, "nest deeper"},
    };
    for (const auto& [metadata, why] : bad_metadata) {
        auto in3 = source(data);
        BOOST_TEST((s.artifact_save(key("m.txt"), in3, "text/plain", metadata, info, &d) == lb::errc::invalid_argument),
                   why);
        BOOST_TEST(d.message().find("metadata") != std::string::npos, d.message());
        BOOST_TEST(d.message().find(why) != std::string::npos, d.message());
    }
    // The deepest metadata allowed (the version's info holds it at level 2) is stored and reads back.
    const lb::json::object deepest{{"deep", nested(254)}};
    auto in4 = source(data);
    BOOST_REQUIRE_MESSAGE(!s.artifact_save(key("deep.txt"), in4, "text/plain", deepest, info, &d), d.message());
    BOOST_TEST(load(s, key("deep.txt")).info->metadata == deepest);
    // A version that does not exist.
    BOOST_TEST(s.artifact_load(key("kept.txt"), 7, sink, found, &d) == lb::errc::not_found);
    BOOST_TEST(d.message().find("no version 7") != std::string::npos, d.message());
    BOOST_TEST(s.artifact_load(key("kept.txt"), -1, sink, found, &d) == lb::errc::not_found);
    BOOST_TEST(s.artifact_load(key("never.txt"), 0, sink, found, &d) == lb::errc::not_found);
    // A source that throws: nothing saved.
    lb::artifact_source failing = [n = 0](char* buf, std::size_t k) mutable -> std::size_t {
        if (n++ > 2) throw std::runtime_error("the upload broke");
        std::memset(buf, 'z', std::min<std::size_t>(k, 1000));
        return std::min<std::size_t>(k, 1000);
    };
    BOOST_CHECK_THROW((void)s.artifact_save(key("kept.txt"), failing, "text/plain", {}, info, &d), std::runtime_error);
    // Nothing above changed what was there.
    BOOST_TEST(versions(s, key("kept.txt")).size() == 1u);
    BOOST_TEST(load(s, key("kept.txt")).data == "kept");
    BOOST_TEST(!load(s, key("m.txt")).info);
}

template <class F>
void case_large_artifacts_stream_in_chunks_and_the_limit_holds() {
    F f;
    std::string big(3 * lb::artifact_chunk_bytes + 12345, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
    {
        auto s = f.open();
        auto in = source(big, 7777); // the source hands out odd pieces
        lb::artifact_info info;
        lb::diagnostics d;
        BOOST_TEST_REQUIRE(!s.artifact_save(key("big.bin"), in, "application/octet-stream", {}, info, &d), d.message());
        BOOST_TEST(info.size == big.size());
        auto back = load(s, key("big.bin"));
        BOOST_TEST(back.data.size() == big.size());
        BOOST_TEST((back.data == big));
    }
    if constexpr (requires { f.open_limited(std::uint64_t{}); }) {
        auto limited = f.open_limited(1000);
        std::string ok(1000, 'a'), over(1001, 'b');
        BOOST_TEST(save(limited, key("fits.bin"), ok).size == 1000u);
        auto in = source(over);
        lb::artifact_info info;
        lb::diagnostics d;
        BOOST_TEST(limited.artifact_save(key("fits.bin"), in, "text/plain", {}, info, &d) == lb::errc::oversize);
        BOOST_TEST(d.message().find("max_artifact_bytes") != std::string::npos, d.message());
        BOOST_TEST(versions(limited, key("fits.bin")).size() == 1u);
        BOOST_TEST(load(limited, key("fits.bin")).data == ok);
    }
}

template <class F>
void case_any_artifact_service_runs_it_asynchronously() {
    F f;
    boost::asio::io_context io;
    lb::any_artifact_service svc(io.get_executor(), f.open());
    std::exception_ptr failure;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
            namespace asio = boost::asio;
            auto save_op = svc.async_save(key("chart.svg"), "<svg/>", "image/svg+xml", {{"w", 10}}, asio::use_awaitable);
            lb::artifact_info v0 = co_await std::move(save_op);
            BOOST_TEST(v0.version == 0);
            auto load_op = svc.async_load(key("chart.svg"), std::nullopt, asio::use_awaitable);
            std::optional<lb::artifact> a = co_await std::move(load_op);
            BOOST_TEST_REQUIRE(a.has_value());
            BOOST_TEST(a->data == "<svg/>");
            BOOST_TEST(a->info.mime_type == "image/svg+xml");
            auto list_op = svc.async_list("app", "u1", "s1", asio::use_awaitable);
            std::vector<std::string> listed = co_await std::move(list_op);
            BOOST_TEST((listed == std::vector<std::string>{"chart.svg"}));
            auto versions_op = svc.async_versions(key("chart.svg"), asio::use_awaitable);
            std::vector<lb::artifact_info> vs = co_await std::move(versions_op); // named: g++ 12
            BOOST_TEST(vs.size() == 1u);
            lb::diagnostics d;
            auto missing = svc.async_load(key("chart.svg"), 3, d, asio::as_tuple(asio::use_awaitable));
            auto [ec, none] = co_await std::move(missing);
            BOOST_TEST(ec == lb::errc::not_found);
            BOOST_TEST(!none.has_value());
            BOOST_TEST(d.message().find("no version 3") != std::string::npos, d.message());
            std::string thrown;
            try {
                auto bad = svc.async_save(key("../x"), "x", "text/plain", {}, asio::use_awaitable);
                co_await std::move(bad);
            } catch (const lb::error_with_diagnostics& x) {
                thrown = x.get_diagnostics().message();
            }
            BOOST_TEST(thrown.find("name") != std::string::npos, thrown);
            auto del = svc.async_delete(key("chart.svg"), asio::use_awaitable);
            co_await std::move(del);
            auto gone_op = svc.async_load(key("chart.svg"), std::nullopt, asio::use_awaitable);
            std::optional<lb::artifact> gone = co_await std::move(gone_op);
            BOOST_TEST(!gone.has_value());
        },
        [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
}

} // namespace artifact_conformance

/// The suite `artifact_conformance` for fixture F.
#define LIBRETTO_ARTIFACT_CONFORMANCE(F)                                                                          \
    BOOST_AUTO_TEST_SUITE(artifact_conformance)                                                                 \
    BOOST_AUTO_TEST_CASE(save_and_load_versions) { ::artifact_conformance::case_save_and_load_versions<F>(); }  \
    BOOST_AUTO_TEST_CASE(user_scope_and_listing) { ::artifact_conformance::case_user_scope_and_listing<F>(); }  \
    BOOST_AUTO_TEST_CASE(refusals_name_what_is_wrong_and_change_nothing) {                                      \
        ::artifact_conformance::case_refusals_name_what_is_wrong_and_change_nothing<F>();                        \
    }                                                                                                           \
    BOOST_AUTO_TEST_CASE(large_artifacts_stream_in_chunks_and_the_limit_holds) {                                \
        ::artifact_conformance::case_large_artifacts_stream_in_chunks_and_the_limit_holds<F>();                  \
    }                                                                                                           \
    BOOST_AUTO_TEST_CASE(any_artifact_service_runs_it_asynchronously) {                                         \
        ::artifact_conformance::case_any_artifact_service_runs_it_asynchronously<F>();                           \
    }                                                                                                           \
    BOOST_AUTO_TEST_SUITE_END()

#endif
