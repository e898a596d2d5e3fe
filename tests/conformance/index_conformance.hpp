// The session-index conformance suite: the same cases against every session_index model.
//
// A backend test file defines a fixture type F with
//   using index_type = ...;
//   static constexpr bool persistent = ...;  // entries outlive the index object
//   index_type open();                        // an index on the fixture's data (call twice:
//                                             // two instances on the same data)
// and instantiates the suite with LIBRETTO_INDEX_CONFORMANCE(F).
#ifndef LIBRETTO_TESTS_INDEX_CONFORMANCE_HPP
#define LIBRETTO_TESTS_INDEX_CONFORMANCE_HPP

#include <libretto/store/any_session_index.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace index_conformance {

namespace lb = libretto;
using boost::system::error_code;

inline lb::conversation_entry entry(std::string key, std::string session, double updated = 100) {
    lb::conversation_entry e;
    e.app_name = "app";
    e.key = std::move(key);
    e.user_id = "u1";
    e.session_id = std::move(session);
    e.started_at = updated - 50;
    e.last_interaction_at = updated - 1;
    e.updated_at = updated;
    return e;
}

/// Every field set to something other than its default.
inline lb::conversation_entry full_entry() {
    lb::conversation_entry e = entry("agent:main:telegram:group:-100", "s-1", 1.7e9 + 0.25);
    e.last_sequence = 41;
    e.input_tokens = 1000;
    e.output_tokens = 200;
    e.total_tokens = 1200;
    e.context_tokens = 900;
    e.compaction_count = 2;
    e.memory_flush_at = 1.7e9 - 10;
    e.memory_flush_compaction_count = 1;
    e.chat_type = "group";
    e.labels = {"vip", "support"};
    e.overrides = {"gpt-5-mini", "high", "deny"};
    e.metadata["subject"] = "Ops \"team\" \xc3\xa9";
    e.metadata["n"] = 3;
    e.previous.push_back({"s-0", 1.6e9, 1.65e9, "daily"});
    e.parent_session_id = "s-parent";
    return e;
}

template <class I>
std::optional<lb::conversation_entry> get(I& ix, const std::string& key, const std::string& app = "app") {
    std::optional<lb::conversation_entry> out;
    lb::diagnostics d;
    const error_code ec = ix.index_get(app, key, out, &d);
    BOOST_TEST_REQUIRE(!ec, d.message());
    return out;
}

template <class I>
std::vector<lb::conversation_entry> list(I& ix, const lb::conversation_query& q) {
    std::vector<lb::conversation_entry> out;
    lb::diagnostics d;
    const error_code ec = ix.index_list(q, out, &d);
    BOOST_TEST_REQUIRE(!ec, d.message());
    return out;
}

inline std::vector<std::string> keys(const std::vector<lb::conversation_entry>& v) {
    std::vector<std::string> k;
    for (const auto& e : v) k.push_back(e.key);
    return k;
}

inline lb::conversation_query query() {
    lb::conversation_query q;
    q.app_name = "app";
    return q;
}

/// An entry or patch whose metadata or texts no back end could store and read back is
/// refused, naming what is wrong, and nothing changes; the deepest metadata allowed reads back.
template <class F>
void case_json_no_back_end_could_read_back_is_refused() {
    F f;
    auto ix = f.open();
    lb::diagnostics d;
    BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s"), &d), d.message());
    auto nested = [](std::size_t arrays) {
        lb::json::value v = 1;
        for (std::size_t i = 0; i < arrays; ++i) v = lb::json::array{std::move(v)};
        return v;
    };
    auto refused = [&](const lb::conversation_entry& e, const std::string& why) {
        BOOST_TEST((ix.index_put(e, &d) == lb::errc::invalid_argument), why);
        BOOST_TEST(d.message().find(why) != std::string::npos, d.message());
        BOOST_TEST(d.message().find("'" + e.key + "'") != std::string::npos, d.message());
    };
    lb::conversation_entry e = entry("k2", "s");
    e.metadata["score"] = std::numeric_limits<double>::quiet_NaN();
    refused(e, "metadata: number NaN is not finite");
    e.metadata = {{"a", lb::json::array{1, -std::numeric_limits<double>::infinity()}}};
    refused(e, "metadata: number -inf is not finite: JSON has no text for it in member \"a\"");
    e.metadata = {{"deep", nested(253)}}; // the metadata object is at level 4 of a snapshot
    refused(e, "metadata: arrays and objects nest deeper than max_json_depth");
    e.metadata = {{"name", "caf\xc3"}};
    refused(e, "metadata: string is not valid UTF-8 (byte 0xc3 at offset 3)");
    e.metadata = {};
    e.labels = {"ok", "\xff"};
    refused(e, "a label: string is not valid UTF-8");
    e.labels = {};
    e.overrides.model = "gpt\x80";
    refused(e, "overrides.model: string is not valid UTF-8");
    e.overrides.model = "";
    e.chat_type = "\xe2\x82";
    refused(e, "chat_type: string is not valid UTF-8");
    e.chat_type = "";
    e.previous.push_back({"s-0", 1, 2, "\xc0\xaf"});
    refused(e, "previous.reason: string is not valid UTF-8");

    lb::conversation_entry out;
    lb::conversation_patch p;
    p.add_input_tokens = 7;
    p.metadata["t"] = std::numeric_limits<double>::infinity();
    BOOST_TEST(ix.index_patch("app", "k", p, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("metadata: number inf is not finite") != std::string::npos, d.message());
    p.metadata = {};
    p.labels = std::vector<std::string>{"\xff"};
    BOOST_TEST(ix.index_patch("app", "k", p, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("a label") != std::string::npos, d.message());
    p.labels.reset();
    p.new_session_id = "s2";
    p.reset_reason = "\xff";
    BOOST_TEST(ix.index_patch("app", "k", p, out, &d) == lb::errc::invalid_argument);
    BOOST_TEST(d.message().find("reset_reason") != std::string::npos, d.message());
    BOOST_TEST(!get(ix, "k2"));
    auto g = get(ix, "k");
    BOOST_TEST_REQUIRE(g.has_value());
    BOOST_TEST((*g == entry("k", "s")));

    // The limits themselves are stored and read back, by a second instance where the data persists.
    lb::conversation_entry edge = entry("k3", "s");
    edge.metadata = {{"deep", nested(252)}, {"text", "caf\xc3\xa9"}, {"big", 1.7976931348623157e308}};
    BOOST_TEST_REQUIRE(!ix.index_put(edge, &d), d.message());
    lb::conversation_patch deeper;
    deeper.metadata["also"] = nested(252);
    BOOST_TEST_REQUIRE(!ix.index_patch("app", "k3", deeper, out, &d), d.message());
    edge.metadata["also"] = nested(252);
    if constexpr (F::persistent) {
        auto again = f.open();
        auto h = get(again, "k3");
        BOOST_TEST_REQUIRE(h.has_value());
        BOOST_TEST((h->metadata == edge.metadata));
    } else {
        auto h = get(ix, "k3");
        BOOST_TEST_REQUIRE(h.has_value());
        BOOST_TEST((h->metadata == edge.metadata));
    }
}

} // namespace index_conformance

#define LIBRETTO_INDEX_CONFORMANCE_CASES(F)                                                                       \
    BOOST_AUTO_TEST_CASE(put_then_get_returns_every_field) {                                                     \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto ix = f.open();                                                                                      \
        BOOST_TEST(!get(ix, "agent:main:telegram:group:-100"));                                                  \
        const lb::conversation_entry e = full_entry();                                                           \
        lb::diagnostics d;                                                                                       \
        BOOST_TEST_REQUIRE(!ix.index_put(e, &d), d.message());                                                   \
        auto g = get(ix, e.key);                                                                                 \
        BOOST_TEST_REQUIRE(g.has_value());                                                                       \
        BOOST_TEST((*g == e));                                                                                   \
        BOOST_TEST(!get(ix, e.key, "other-app")); /* apps are separate */                                        \
        /* A put replaces the whole entry. */                                                                    \
        lb::conversation_entry small = entry(e.key, "s-2");                                                      \
        BOOST_TEST_REQUIRE(!ix.index_put(small, &d), d.message());                                               \
        g = get(ix, e.key);                                                                                      \
        BOOST_TEST_REQUIRE(g.has_value());                                                                       \
        BOOST_TEST((*g == small));                                                                               \
        BOOST_TEST(g->labels.empty());                                                                           \
        if constexpr (F::persistent) {                                                                           \
            auto again = f.open();                                                                               \
            auto h = get(again, e.key);                                                                          \
            BOOST_TEST_REQUIRE(h.has_value());                                                                   \
            BOOST_TEST((*h == small));                                                                           \
        }                                                                                                        \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(patch_sets_adds_and_merges_one_entry) {                                                 \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto ix = f.open();                                                                                      \
        lb::diagnostics d;                                                                                       \
        BOOST_TEST_REQUIRE(!ix.index_put(full_entry(), &d), d.message());                                        \
        BOOST_TEST_REQUIRE(!ix.index_put(entry("other", "o-1"), &d), d.message());                               \
        const std::string key = full_entry().key;                                                                \
        lb::conversation_patch p;                                                                                \
        p.if_session_id = "s-1";                                                                                 \
        p.updated_at = 1.8e9;                                                                                    \
        p.last_interaction_at = 1.8e9 - 1;                                                                       \
        p.last_sequence = 45;                                                                                    \
        p.add_input_tokens = 50;                                                                                 \
        p.add_output_tokens = 7;                                                                                 \
        p.add_compactions = 1;                                                                                   \
        p.context_tokens = 950;                                                                                  \
        p.memory_flush_at = 1.8e9 - 2;                                                                           \
        p.labels = std::vector<std::string>{"vip"};                                                              \
        p.metadata["subject"] = nullptr; /* removed */                                                           \
        p.metadata["topic"] = "billing";                                                                         \
        p.drop_previous = {"s-0", "never-archived"};                                                             \
        lb::conversation_entry out;                                                                              \
        BOOST_TEST_REQUIRE(!ix.index_patch("app", key, p, out, &d), d.message());                                \
        BOOST_TEST(out.input_tokens == 1050);                                                                    \
        BOOST_TEST(out.output_tokens == 207);                                                                    \
        BOOST_TEST(out.total_tokens == 1257);                                                                    \
        BOOST_TEST(out.context_tokens == 950);                                                                   \
        BOOST_TEST(out.compaction_count == 3);                                                                   \
        BOOST_TEST(out.memory_flush_at == 1.8e9 - 2);                                                            \
        BOOST_TEST(out.memory_flush_compaction_count == 3);                                                      \
        BOOST_TEST(out.last_sequence == 45);                                                                     \
        BOOST_TEST(out.labels == std::vector<std::string>{"vip"});                                               \
        BOOST_TEST(!out.metadata.contains("subject"));                                                           \
        BOOST_TEST(out.metadata.at("topic") == "billing");                                                       \
        BOOST_TEST(out.metadata.at("n") == 3);                                                                   \
        BOOST_TEST(out.previous.empty());                                                                        \
        BOOST_TEST(out.chat_type == "group"); /* untouched fields stay */                                        \
        BOOST_TEST(out.overrides.model == "gpt-5-mini");                                                         \
        auto g = get(ix, key);                                                                                   \
        BOOST_TEST_REQUIRE(g.has_value());                                                                       \
        BOOST_TEST((*g == out));                                                                                 \
        auto other = get(ix, "other");                                                                           \
        BOOST_TEST_REQUIRE(other.has_value());                                                                   \
        BOOST_TEST((*other == entry("other", "o-1"))); /* the other entry is untouched */                        \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(a_new_session_archives_the_old_one_and_restarts_the_counters) {                         \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto ix = f.open();                                                                                      \
        lb::diagnostics d;                                                                                       \
        BOOST_TEST_REQUIRE(!ix.index_put(full_entry(), &d), d.message());                                        \
        const std::string key = full_entry().key;                                                                \
        lb::conversation_patch reset;                                                                            \
        reset.new_session_id = "s-2";                                                                            \
        reset.reset_reason = "idle";                                                                             \
        reset.updated_at = 1.9e9;                                                                                \
        lb::conversation_entry out;                                                                              \
        BOOST_TEST_REQUIRE(!ix.index_patch("app", key, reset, out, &d), d.message());                            \
        BOOST_TEST(out.session_id == "s-2");                                                                     \
        BOOST_TEST(out.started_at == 1.9e9);                                                                     \
        BOOST_TEST(out.input_tokens == 0);                                                                       \
        BOOST_TEST(out.total_tokens == 0);                                                                       \
        BOOST_TEST(out.compaction_count == 0);                                                                   \
        BOOST_TEST(out.memory_flush_at == 0);                                                                    \
        BOOST_TEST(out.last_sequence == 0);                                                                      \
        BOOST_TEST(out.labels.size() == 2u); /* the conversation's settings stay */                             \
        BOOST_TEST(out.overrides.thinking_level == "high");                                                      \
        BOOST_TEST_REQUIRE(out.previous.size() == 2u);                                                           \
        BOOST_TEST(out.previous[1].session_id == "s-1");                                                         \
        BOOST_TEST(out.previous[1].started_at == full_entry().started_at);                                       \
        BOOST_TEST(out.previous[1].ended_at == 1.9e9);                                                           \
        BOOST_TEST(out.previous[1].reason == "idle");                                                            \
        /* A turn of the old session patching after the reset: refused, nothing changes. */                     \
        lb::conversation_patch late;                                                                             \
        late.if_session_id = "s-1";                                                                              \
        late.add_input_tokens = 99;                                                                              \
        lb::conversation_entry ignored;                                                                          \
        BOOST_TEST(ix.index_patch("app", key, late, ignored, &d) == lb::errc::stale_session);                    \
        BOOST_TEST(d.message().find("'s-2'") != std::string::npos, d.message());                                 \
        BOOST_TEST(d.message().find("'s-1'") != std::string::npos, d.message());                                 \
        auto g = get(ix, key);                                                                                   \
        BOOST_TEST_REQUIRE(g.has_value());                                                                       \
        BOOST_TEST((*g == out));                                                                                 \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(refusals_name_what_is_wrong_and_change_nothing) {                                       \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto ix = f.open();                                                                                      \
        lb::diagnostics d;                                                                                       \
        BOOST_TEST_REQUIRE(!ix.index_put(entry("k", "s"), &d), d.message());                                     \
        lb::conversation_patch p;                                                                                \
        p.add_input_tokens = 1;                                                                                  \
        lb::conversation_entry out;                                                                              \
        BOOST_TEST(ix.index_patch("app", "missing", p, out, &d) == lb::errc::not_found);                         \
        BOOST_TEST(d.message().find("'missing'") != std::string::npos, d.message());                             \
        std::optional<lb::conversation_entry> found;                                                             \
        for (std::string bad : {std::string("a/b"), std::string("a\\b"), std::string("x\ny"), std::string(), \
                                std::string(".."), std::string(129, 'k'), std::string("\xff")}) {                \
            BOOST_TEST(ix.index_get("app", bad, found, &d) == lb::errc::invalid_argument);                       \
            BOOST_TEST(d.message().find("conversation key") != std::string::npos, d.message());                  \
            BOOST_TEST(ix.index_patch("app", bad, p, out, &d) == lb::errc::invalid_argument);                    \
            BOOST_TEST(ix.index_erase("app", bad, &d) == lb::errc::invalid_argument);                            \
            BOOST_TEST(ix.index_put(entry(bad, "s"), &d) == lb::errc::invalid_argument);                         \
        }                                                                                                        \
        BOOST_TEST(ix.index_get("a/pp", "k", found, &d) == lb::errc::invalid_argument);                          \
        BOOST_TEST(d.message().find("app id") != std::string::npos, d.message());                                \
        lb::conversation_entry bad_session = entry("k2", "s/1");                                                 \
        BOOST_TEST(ix.index_put(bad_session, &d) == lb::errc::invalid_argument);                                 \
        BOOST_TEST(d.message().find("session id") != std::string::npos, d.message());                            \
        lb::conversation_patch bad_reset;                                                                        \
        bad_reset.new_session_id = "../x";                                                                       \
        bad_reset.add_input_tokens = 5;                                                                          \
        BOOST_TEST(ix.index_patch("app", "k", bad_reset, out, &d) == lb::errc::invalid_argument);                \
        lb::conversation_entry nan_time = entry("k3", "s");                                                      \
        nan_time.updated_at = std::numeric_limits<double>::quiet_NaN();                                          \
        BOOST_TEST(ix.index_put(nan_time, &d) == lb::errc::invalid_argument);                                    \
        BOOST_TEST(d.message().find("updated_at is not a finite number") != std::string::npos, d.message());     \
        nan_time.updated_at = 1;                                                                                 \
        nan_time.started_at = std::numeric_limits<double>::infinity();                                           \
        BOOST_TEST(ix.index_put(nan_time, &d) == lb::errc::invalid_argument);                                    \
        lb::conversation_patch inf_patch;                                                                        \
        inf_patch.last_interaction_at = -std::numeric_limits<double>::infinity();                                \
        BOOST_TEST(ix.index_patch("app", "k", inf_patch, out, &d) == lb::errc::invalid_argument);                \
        BOOST_TEST(!get(ix, "k3"));                                                                              \
        lb::conversation_query q = query();                                                                      \
        q.app_name = "";                                                                                         \
        std::vector<lb::conversation_entry> listed;                                                              \
        BOOST_TEST(ix.index_list(q, listed, &d) == lb::errc::invalid_argument);                                  \
        auto g = get(ix, "k");                                                                                   \
        BOOST_TEST_REQUIRE(g.has_value());                                                                       \
        BOOST_TEST((*g == entry("k", "s")));                                                                     \
        BOOST_TEST(!get(ix, "k2"));                                                                              \
        BOOST_TEST(keys(list(ix, query())) == std::vector<std::string>{"k"});                                   \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(json_no_back_end_could_read_back_is_refused) {                                          \
        ::index_conformance::case_json_no_back_end_could_read_back_is_refused<F>();                               \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(list_filters_and_orders_newest_first) {                                                 \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto ix = f.open();                                                                                      \
        lb::diagnostics d;                                                                                       \
        auto put = [&](lb::conversation_entry e) { BOOST_TEST_REQUIRE(!ix.index_put(e, &d), d.message()); };    \
        lb::conversation_entry a = entry("agent:a:main", "s1", 300);                                            \
        a.chat_type = "direct";                                                                                  \
        a.labels = {"vip"};                                                                                      \
        lb::conversation_entry b = entry("agent:a:slack:channel:c1", "s2", 100);                                \
        b.chat_type = "channel";                                                                                 \
        b.labels = {"vip", "eng"};                                                                               \
        b.last_interaction_at = 10;                                                                              \
        lb::conversation_entry c = entry("cron:nightly", "s3", 200);                                            \
        c.chat_type = "scheduled_job";                                                                           \
        c.user_id = "u2";                                                                                        \
        lb::conversation_entry other_app = entry("agent:a:main", "s4", 400);                                    \
        other_app.app_name = "app2";                                                                             \
        put(a);                                                                                                  \
        put(b);                                                                                                  \
        put(c);                                                                                                  \
        put(other_app);                                                                                          \
        using v = std::vector<std::string>;                                                                      \
        BOOST_TEST(keys(list(ix, query())) == (v{"agent:a:main", "cron:nightly", "agent:a:slack:channel:c1"}));  \
        auto q = query();                                                                                        \
        q.labels = {"vip"};                                                                                      \
        BOOST_TEST(keys(list(ix, q)) == (v{"agent:a:main", "agent:a:slack:channel:c1"}));                         \
        q.labels = {"vip", "eng"};                                                                               \
        BOOST_TEST(keys(list(ix, q)) == (v{"agent:a:slack:channel:c1"}));                                         \
        q = query();                                                                                             \
        q.chat_type = "scheduled_job";                                                                           \
        BOOST_TEST(keys(list(ix, q)) == (v{"cron:nightly"}));                                                     \
        q = query();                                                                                             \
        q.user_id = "u2";                                                                                        \
        BOOST_TEST(keys(list(ix, q)) == (v{"cron:nightly"}));                                                     \
        q = query();                                                                                             \
        q.key_prefix = "agent:a:";                                                                               \
        BOOST_TEST(keys(list(ix, q)) == (v{"agent:a:main", "agent:a:slack:channel:c1"}));                         \
        q = query();                                                                                             \
        q.inactive_since = 50; /* idle since before 50 */                                                       \
        BOOST_TEST(keys(list(ix, q)) == (v{"agent:a:slack:channel:c1"}));                                         \
        q = query();                                                                                             \
        q.active_since = 199;                                                                                    \
        BOOST_TEST(keys(list(ix, q)) == (v{"agent:a:main", "cron:nightly"}));                                     \
        /* A NaN time listed nothing, silently: refused, naming the member. */                                 \
        for (int which = 0; which < 2; ++which) {                                                                \
            q = query();                                                                                         \
            (which ? q.inactive_since : q.active_since) = std::numeric_limits<double>::quiet_NaN();              \
            std::vector<lb::conversation_entry> none;                                                            \
            lb::diagnostics nd;                                                                                  \
            BOOST_TEST((ix.index_list(q, none, &nd) == lb::errc::invalid_argument));                             \
            BOOST_TEST(nd.message().find(which ? "inactive_since is NaN" : "active_since is NaN") !=              \
                           std::string::npos, nd.message());                                                      \
        }                                                                                                        \
        q = query();                                                                                             \
        q.parent_session_id = "s1";                                                                              \
        BOOST_TEST(list(ix, q).empty());                                                                         \
        q = query();                                                                                             \
        q.limit = 2;                                                                                             \
        BOOST_TEST(keys(list(ix, q)) == (v{"agent:a:main", "cron:nightly"}));                                     \
        q = query();                                                                                             \
        q.app_name = "app3";                                                                                     \
        BOOST_TEST(list(ix, q).empty());                                                                         \
        /* Erase: gone from get and list; erasing again is no error. */                                         \
        BOOST_TEST_REQUIRE(!ix.index_erase("app", "cron:nightly", &d), d.message());                             \
        BOOST_TEST(!get(ix, "cron:nightly"));                                                                    \
        BOOST_TEST(!ix.index_erase("app", "cron:nightly", &d));                                                  \
        BOOST_TEST(keys(list(ix, query())) == (v{"agent:a:main", "agent:a:slack:channel:c1"}));                  \
        BOOST_TEST(get(ix, "agent:a:main", "app2").has_value());                                                 \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(replace_swaps_every_entry_of_one_app) {                                                 \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto ix = f.open();                                                                                      \
        lb::diagnostics d;                                                                                       \
        BOOST_TEST_REQUIRE(!ix.index_put(entry("old-1", "s1"), &d), d.message());                                \
        BOOST_TEST_REQUIRE(!ix.index_put(entry("kept", "s2"), &d), d.message());                                 \
        lb::conversation_entry elsewhere = entry("old-1", "s3");                                                 \
        elsewhere.app_name = "app2";                                                                             \
        BOOST_TEST_REQUIRE(!ix.index_put(elsewhere, &d), d.message());                                           \
        std::vector<lb::conversation_entry> rebuilt{entry("kept", "s2b", 50), full_entry()};                    \
        BOOST_TEST_REQUIRE(!ix.index_replace("app", rebuilt, &d), d.message());                                  \
        BOOST_TEST(!get(ix, "old-1"));                                                                           \
        auto kept = get(ix, "kept");                                                                             \
        BOOST_TEST_REQUIRE(kept.has_value());                                                                    \
        BOOST_TEST(kept->session_id == "s2b");                                                                   \
        auto full = get(ix, full_entry().key);                                                                   \
        BOOST_TEST_REQUIRE(full.has_value());                                                                    \
        BOOST_TEST((*full == full_entry()));                                                                     \
        BOOST_TEST(get(ix, "old-1", "app2").has_value()); /* another app is untouched */                        \
        /* A bad entry (or one of another app): refused, nothing replaced. */                                   \
        std::vector<lb::conversation_entry> bad{entry("fine", "s"), entry("bad", "s/x")};                       \
        BOOST_TEST(ix.index_replace("app", bad, &d) == lb::errc::invalid_argument);                              \
        std::vector<lb::conversation_entry> foreign{elsewhere};                                                  \
        BOOST_TEST(ix.index_replace("app", foreign, &d) == lb::errc::invalid_argument);                          \
        BOOST_TEST(d.message().find("of app 'app2'") != std::string::npos, d.message());                         \
        BOOST_TEST(keys(list(ix, query())).size() == 2u);                                                        \
        BOOST_TEST(!get(ix, "fine"));                                                                            \
        if constexpr (F::persistent) {                                                                           \
            auto again = f.open();                                                                               \
            BOOST_TEST(keys(list(again, query())).size() == 2u);                                                 \
        }                                                                                                        \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(patches_from_two_instances_both_land) {                                                 \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        auto one = f.open();                                                                                     \
        auto two = f.open();                                                                                     \
        lb::diagnostics d;                                                                                       \
        BOOST_TEST_REQUIRE(!one.index_put(entry("k", "s"), &d), d.message());                                    \
        constexpr int n = 50;                                                                                    \
        /* Boost.Test is not thread-safe: each thread keeps its first failure. */                              \
        auto worker = [&](auto& ix, bool input, std::string& failed) {                                           \
            for (int i = 0; i < n && failed.empty(); ++i) {                                                      \
                lb::conversation_patch p;                                                                        \
                (input ? p.add_input_tokens : p.add_output_tokens) = 1;                                          \
                lb::conversation_entry out;                                                                      \
                lb::diagnostics wd;                                                                              \
                if (auto ec = ix.index_patch("app", "k", p, out, &wd)) failed = ec.message() + ": " + wd.message(); \
            }                                                                                                    \
        };                                                                                                       \
        std::string failed_one, failed_two;                                                                      \
        std::thread t([&] { worker(two, false, failed_two); });                                                  \
        worker(one, true, failed_one);                                                                           \
        t.join();                                                                                                \
        BOOST_TEST(failed_one == "");                                                                            \
        BOOST_TEST(failed_two == "");                                                                            \
        auto g = get(one, "k");                                                                                  \
        BOOST_TEST_REQUIRE(g.has_value());                                                                       \
        BOOST_TEST(g->input_tokens == n);                                                                        \
        BOOST_TEST(g->output_tokens == n);                                                                       \
        BOOST_TEST(g->total_tokens == 2 * n);                                                                    \
    }                                                                                                            \
                                                                                                                 \
    BOOST_AUTO_TEST_CASE(any_session_index_runs_it_asynchronously) {                                             \
        using namespace index_conformance;                                                                       \
        F f;                                                                                                     \
        boost::asio::io_context io;                                                                              \
        lb::any_session_index ix(io.get_executor(), f.open());                                                   \
        std::exception_ptr failure;                                                                              \
        boost::asio::co_spawn(                                                                                   \
            io,                                                                                                  \
            [&]() -> boost::asio::awaitable<void> {                                                              \
                namespace asio = boost::asio;                                                                    \
                lb::conversation_entry e = full_entry();                                                         \
                auto put = ix.async_put(e, asio::use_awaitable);                                                 \
                co_await std::move(put);                                                                         \
                auto get_op = ix.async_get("app", e.key, asio::use_awaitable);                                   \
                std::optional<lb::conversation_entry> g = co_await std::move(get_op);                            \
                BOOST_TEST_REQUIRE(g.has_value());                                                               \
                BOOST_TEST((*g == e));                                                                           \
                lb::conversation_patch p;                                                                        \
                p.add_output_tokens = 5;                                                                         \
                auto patch_op = ix.async_patch("app", e.key, p, asio::use_awaitable);                            \
                lb::conversation_entry out = co_await std::move(patch_op);                                       \
                BOOST_TEST(out.output_tokens == 205);                                                            \
                lb::conversation_query q = query();                                                              \
                auto list_op = ix.async_list(q, asio::use_awaitable);                                            \
                std::vector<lb::conversation_entry> all = co_await std::move(list_op);                           \
                BOOST_TEST(all.size() == 1u);                                                                    \
                /* A refusal: the tuple's code, and the words in the caller's diagnostics. */                   \
                lb::diagnostics d;                                                                               \
                auto missing = ix.async_patch("app", "nope", p, d, asio::as_tuple(asio::use_awaitable));         \
                auto [ec, ignored] = co_await std::move(missing);                                                \
                BOOST_TEST(ec == lb::errc::not_found);                                                           \
                BOOST_TEST(d.message().find("'nope'") != std::string::npos, d.message());                        \
                /* use_awaitable throws error_with_diagnostics carrying them. */                                \
                std::string thrown;                                                                              \
                try {                                                                                            \
                    auto bad = ix.async_get("app", "a/b", asio::use_awaitable);                                  \
                    co_await std::move(bad);                                                                     \
                } catch (const lb::error_with_diagnostics& x) {                                                  \
                    thrown = x.get_diagnostics().message();                                                      \
                }                                                                                                \
                BOOST_TEST(thrown.find("conversation key") != std::string::npos, thrown);                        \
                auto erase = ix.async_erase("app", e.key, asio::use_awaitable);                                  \
                co_await std::move(erase);                                                                       \
                auto gone_op = ix.async_get("app", e.key, asio::use_awaitable);                                  \
                std::optional<lb::conversation_entry> gone = co_await std::move(gone_op);                        \
                BOOST_TEST(!gone.has_value());                                                                   \
            },                                                                                                   \
            [&](std::exception_ptr e) { failure = e; });                                                         \
        io.run();                                                                                                \
        if (failure) std::rethrow_exception(failure);                                                            \
    }

/// The suite `session_index_conformance` for fixture F.
#define LIBRETTO_INDEX_CONFORMANCE(F)                                                                             \
    BOOST_AUTO_TEST_SUITE(session_index_conformance)                                                             \
    namespace lb = libretto;                                                                                     \
    LIBRETTO_INDEX_CONFORMANCE_CASES(F)                                                                          \
    BOOST_AUTO_TEST_SUITE_END()

#endif
