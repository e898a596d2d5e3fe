// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// store/conversation_key.hpp: the key shapes, built and taken apart, and what is refused.
#include <libretto/store/conversation_key.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

namespace lb = libretto;
using lb::conversation_kind;

namespace {

/// The message of the invalid_argument `f` throws, or "<no error>".
template <class F>
std::string refusal(F f) {
    try {
        f();
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::invalid_argument));
        std::string w = e.what(); // "<message>: invalid argument [libretto:1]"
        return w.substr(0, w.rfind(": invalid argument"));
    }
    return "<no error>";
}

} // namespace

BOOST_AUTO_TEST_SUITE(conversation_keys)

BOOST_AUTO_TEST_CASE(every_shape_built_and_taken_apart) {
    struct shape {
        std::string key;
        lb::conversation_parts parts;
    };
    const shape shapes[] = {
        {lb::direct_key("assistant"), {conversation_kind::direct, "assistant", "", "main"}},
        {lb::direct_key("assistant", "work"), {conversation_kind::direct, "assistant", "", "work"}},
        {lb::group_key("assistant", "telegram", "-100123"), {conversation_kind::group, "assistant", "telegram", "-100123"}},
        {lb::channel_key("assistant", "slack", "C024BE91L"), {conversation_kind::channel, "assistant", "slack", "C024BE91L"}},
        {lb::room_key("assistant", "matrix", "lobby"), {conversation_kind::room, "assistant", "matrix", "lobby"}},
        {lb::scheduled_job_key("nightly-backup"), {conversation_kind::scheduled_job, "", "", "nightly-backup"}},
        {lb::webhook_key("9f1c2e"), {conversation_kind::webhook, "", "", "9f1c2e"}},
    };
    const char* texts[] = {"agent:assistant:main",
                           "agent:assistant:work",
                           "agent:assistant:telegram:group:-100123",
                           "agent:assistant:slack:channel:C024BE91L",
                           "agent:assistant:matrix:room:lobby",
                           "cron:nightly-backup",
                           "hook:9f1c2e"};
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
        BOOST_TEST_CONTEXT(texts[i]) {
            BOOST_TEST(shapes[i].key == texts[i]);
            auto parsed = lb::parse_conversation_key(shapes[i].key);
            BOOST_TEST_REQUIRE(parsed.has_value());
            BOOST_TEST((*parsed == shapes[i].parts));
            BOOST_TEST(!lb::validate_id(shapes[i].key)); // a key is a valid id
        }
    }
    // UTF-8 parts are fine.
    BOOST_TEST(lb::room_key("assistant", "matrix", "k\xC3\xB8kken") == "agent:assistant:matrix:room:k\xC3\xB8kken");
}

BOOST_AUTO_TEST_CASE(bad_parts_are_named) {
    BOOST_TEST(refusal([] { lb::direct_key(""); }) == "conversation key: the agent id is empty");
    BOOST_TEST(refusal([] { lb::group_key("a", "tele:gram", "1"); }) == "conversation key: the channel contains ':', the key's separator");
    BOOST_TEST(refusal([] { lb::room_key("a", "m", "../etc"); }) == "conversation key: the room id '../etc' contains '..' (or is '.')");
    BOOST_TEST(refusal([] { lb::channel_key("a/b", "s", "c"); }) ==
               "conversation key: the agent id 'a/b' contains a path separator ('/' or '\\')");
    BOOST_TEST(refusal([] { lb::scheduled_job_key("j\\k"); }) ==
               "conversation key: the job id 'j\\k' contains a path separator ('/' or '\\')");
    BOOST_TEST(refusal([] { lb::webhook_key(std::string_view("a\nb", 3)); }) ==
               "conversation key: the hook id contains a control character (0x0a at offset 1)");
    BOOST_TEST(refusal([] { lb::direct_key("a", "\xff"); }) ==
               "conversation key: the main key is not valid UTF-8 (byte 0xff at offset 0)");
    BOOST_TEST(refusal([] { lb::direct_key(std::string(130, 'a')); }).find("conversation key: the agent id 'aaaa") == 0u);
    // Parts that fit one by one but not together.
    BOOST_TEST(refusal([] { lb::group_key(std::string(60, 'a'), "telegram", std::string(60, 'g')); }) ==
               "conversation key: 142 bytes, more than 128");
    BOOST_TEST(refusal([] { lb::direct_key("assistant"); }) == "<no error>");
}

BOOST_AUTO_TEST_CASE(what_is_not_a_key) {
    for (std::string_view bad : {"", "agent", "agent:a", "agent:a:b:c", "agent:a:c:topic:1", "cron", "cron:", "cron:a:b",
                                 "hook:", "user:x", "agent::main", "agent:a:main:", "agent:a/b:main"}) {
        BOOST_TEST_CONTEXT("'" << bad << "'") {
            std::string why;
            auto parsed = lb::parse_conversation_key(bad, &why);
            BOOST_TEST(!parsed.has_value());
            if (!parsed) BOOST_TEST((parsed.error() == lb::errc::invalid_argument));
            BOOST_TEST(!why.empty());
        }
    }
    std::string why;
    (void)lb::parse_conversation_key("agent:a:c:topic:1", &why);
    BOOST_TEST(why == "'topic' is not group, channel or room");
    (void)lb::parse_conversation_key("user:x", &why);
    BOOST_TEST(why.find("not one of the shapes") == 0u);
    (void)lb::parse_conversation_key(std::string(129, 'a'), &why);
    BOOST_TEST(why == "129 bytes, more than 128");
}

BOOST_AUTO_TEST_SUITE_END()
