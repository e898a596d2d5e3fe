// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The rules of json_limits.hpp: finite numbers, max_json_depth, each key once, UTF-8 —
// the same when an event is written (serialize_event_checked, event_fault) and read
// (parse_event, parse_precise).
#include <libretto/event/detail/event_check.hpp>
#include <libretto/event/json.hpp>
#include <libretto/event/json_limits.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>

namespace json = boost::json;
using namespace libretto;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const double nan_value = std::nan("");

event minimal_event() {
    event e;
    e.id = "e1";
    return e;
}

/// `n` nested arrays around 1: nest(0) is 1, nest(2) is [[1]].
json::value nest(std::size_t n) {
    json::value v = 1;
    for (std::size_t i = 0; i < n; ++i) {
        json::array a;
        a.push_back(std::move(v));
        v = std::move(a);
    }
    return v;
}

std::string nest_text(std::size_t n) { return std::string(n, '[') + "1" + std::string(n, ']'); }

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

/// serialize_event_checked's refusal of `e`: its message (the test fails if it is accepted).
std::string refusal(const event& e) {
    std::string out, why;
    const auto ec = serialize_event_checked(e, out, why);
    BOOST_TEST((ec == errc::invalid_argument));
    BOOST_TEST(out.empty());
    return why;
}

/// The text of `e` read back by parse_event (the test fails if it does not read back equal).
void reads_back_equal(const event& e) {
    std::string out, why;
    const auto ec = serialize_event_checked(e, out, why);
    BOOST_TEST_REQUIRE(!ec, why);
    auto r = parse_event(out);
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST((*r == e));
    BOOST_TEST(!detail::event_fault(e).has_value());
}

std::string read_error(std::string_view text) {
    auto r = parse_event(text);
    BOOST_TEST_REQUIRE(r.has_error(), "accepted: " << text.substr(0, 80));
    BOOST_TEST((r.error().code == errc::invalid_json));
    return r.error().message();
}

} // namespace

BOOST_AUTO_TEST_SUITE(json_limits)

BOOST_AUTO_TEST_CASE(a_number_out_of_the_range_of_a_double_is_refused_on_read) {
    // Boost.JSON reads these as inf; serialize would then write `Infinity`.
    for (std::string_view n : {"1e400", "-1e400", "1e309", "999999999e300"}) {
        const std::string text = R"({"id":"e1","type":"agent_message","metadata":{"k":)" + std::string(n) + "}}";
        const std::string m = read_error(text);
        BOOST_TEST(contains(m, "number " + std::string(n) + " is out of the range of a double"), m);
    }
    BOOST_TEST(contains(read_error(R"({"id":"e1","type":"agent_message","timestamp":1e999})"), "1e999"));
    // In a tool result, an array element.
    BOOST_TEST(contains(read_error(R"({"id":"e1","type":"tool_response","content":{"parts":[{"type":"tool_response",)"
                                   R"("tool_call_id":"c","tool_name":"t","result":[1,2e400]}]}})"),
                        "2e400"));
    // The extremes that are doubles read back exactly; a tiny number underflows to a double, not an error.
    auto r = parse_event(R"({"id":"e1","type":"agent_message","metadata":{"max":1.7976931348623157e308,"min":-1.7976931348623157e308,"tiny":5e-324,"under":1e-400}})");
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(r->metadata.at("max").as_double() == std::numeric_limits<double>::max());
    BOOST_TEST(r->metadata.at("min").as_double() == -std::numeric_limits<double>::max());
    BOOST_TEST(r->metadata.at("tiny").as_double() == std::numeric_limits<double>::denorm_min());
    BOOST_TEST(r->metadata.at("under").as_double() == 0.0);
    reads_back_equal(*r);
}

BOOST_AUTO_TEST_CASE(a_number_that_is_not_finite_is_refused_on_write) {
    {
        event e = minimal_event();
        e.metadata["temperature"] = inf;
        const std::string why = refusal(e);
        BOOST_TEST(why == "number inf is not finite: JSON has no text for it in member \"temperature\"");
        // The unchecked writer writes null there: valid JSON, which a strict reader takes.
        const std::string text = serialize_event(e);
        BOOST_TEST(contains(text, "\"temperature\":null"), text);
        json::error_code ec;
        (void)json::parse(text, ec);
        BOOST_TEST(!ec);
    }
    {
        event e = minimal_event();
        e.type = event_type::tool_response;
        e.content.parts.emplace_back(tool_response_part{"c1", "probe", json::array{1, -inf}, {}, {}});
        BOOST_TEST(refusal(e) == "number -inf is not finite: JSON has no text for it in member \"result\"");
    }
    {
        event e = minimal_event();
        e.content.parts.emplace_back(data_part{json::object{{"x", json::object{{"y", nan_value}}}}, {}});
        BOOST_TEST(refusal(e) == "number NaN is not finite: JSON has no text for it in member \"y\"");
    }
    {
        event e = minimal_event();
        e.timestamp = inf;
        BOOST_TEST(refusal(e) == "number inf is not finite: JSON has no text for it in member \"timestamp\"");
    }
    {
        event e = minimal_event();
        e.actions.compaction = event_compaction{1, 2, 0, nan_value, "s", 2};
        BOOST_TEST(refusal(e) == "number NaN is not finite: JSON has no text for it in member \"end_timestamp\"");
    }
    {
        // The largest finite numbers are fine.
        event e = minimal_event();
        e.metadata["max"] = std::numeric_limits<double>::max();
        e.metadata["lowest"] = std::numeric_limits<double>::lowest();
        e.metadata["denorm"] = std::numeric_limits<double>::denorm_min();
        e.metadata["i"] = std::numeric_limits<std::int64_t>::min();
        e.metadata["u"] = std::numeric_limits<std::uint64_t>::max();
        reads_back_equal(e);
    }
}

BOOST_AUTO_TEST_CASE(the_depth_limit_is_the_same_on_write_and_read) {
    BOOST_TEST(max_json_depth == 256u);
    BOOST_TEST(detail::stored_parse_options().max_depth == max_json_depth);
    // Event metadata is at level 2 (the event is level 1): 254 arrays inside it reach 256.
    {
        event e = minimal_event();
        e.metadata["deep"] = nest(254);
        reads_back_equal(e);
        e.metadata["deep"] = nest(255);
        BOOST_TEST(refusal(e) == "arrays and objects nest deeper than max_json_depth (256) in member \"deep\"");
        BOOST_TEST(serialize_event(e).size() < 1000u); // cut short, not written out in full
    }
    // A tool call's arguments are at level 5 (event, content, parts, part, args).
    {
        event e = minimal_event();
        e.content.parts.emplace_back(tool_call_part{"c1", "t", json::object{{"a", nest(251)}}, {}});
        reads_back_equal(e);
        e.content.parts[0] = tool_call_part{"c1", "t", json::object{{"a", nest(252)}}, {}};
        BOOST_TEST(contains(refusal(e), "max_json_depth (256) in member \"a\""));
    }
    // A state delta is at level 3 (event, actions, state_delta).
    {
        event e = minimal_event();
        e.actions.state_delta["app:deep"] = nest(253);
        reads_back_equal(e);
        e.actions.state_delta["app:deep"] = nest(254);
        BOOST_TEST(contains(refusal(e), "in member \"app:deep\""));
    }
    // The reader stops at the same level.
    const std::string head = R"({"id":"e1","type":"agent_message","metadata":{"deep":)";
    BOOST_TEST(parse_event(head + nest_text(254) + "}}").has_value());
    BOOST_TEST(read_error(head + nest_text(255) + "}}") ==
               "<document>: invalid JSON (arrays and objects nest deeper than max_json_depth (256))");
    // A hostile depth far past the limit costs nothing more than the limit.
    BOOST_TEST(contains(read_error(head + nest_text(100000) + "}}"), "max_json_depth"));
    // Values built deeper than the limit are refused without recursing through them.
    event e = minimal_event();
    e.metadata["very"] = nest(5000);
    BOOST_TEST(contains(refusal(e), "max_json_depth"));
}

BOOST_AUTO_TEST_CASE(a_key_repeated_in_one_object_is_refused_on_read) {
    BOOST_TEST(read_error(R"({"id":"e1","type":"agent_message","id":"e2"})") ==
               "<document>: invalid JSON (the key \"id\" appears twice in one object)");
    BOOST_TEST(contains(read_error(R"({"id":"e1","type":"agent_message","metadata":{"a":1,"b":2,"a":3}})"),
                        "the key \"a\" appears twice"));
    BOOST_TEST(contains(read_error(R"({"id":"e1","type":"agent_message","metadata":{"l":[{"x":1},{"y":2,"y":2}]}})"),
                        "the key \"y\" appears twice"));
    // Escapes are decoded before keys are compared: "\u0061" is "a".
    BOOST_TEST(contains(read_error(R"({"id":"e1","type":"agent_message","metadata":{"a":1,"\u0061":2}})"),
                        "the key \"a\" appears twice"));
    // The same key in two objects, and keys that share a prefix, are fine.
    auto r = parse_event(R"({"id":"e1","type":"agent_message","metadata":{"a":{"x":1},"b":{"x":2},"ab":3,"a ":4}})");
    BOOST_TEST_REQUIRE(r.has_value(), r.error().message());
    BOOST_TEST(r->metadata.size() == 4u);
    // parse_precise reports it to every stored-document reader the same way.
    json::error_code ec;
    std::string why;
    const json::value v = detail::parse_precise(R"({"s":{"k":1,"k":1}})", ec, {}, &why);
    BOOST_TEST(!!ec);
    BOOST_TEST(v.is_null());
    BOOST_TEST(why == "the key \"k\" appears twice in one object");
}

BOOST_AUTO_TEST_CASE(parse_precise_names_what_was_wrong) {
    json::error_code ec;
    std::string why;
    (void)detail::parse_precise("{\"a\":1e400}", ec, {}, &why);
    BOOST_TEST(why == "number 1e400 is out of the range of a double");
    (void)detail::parse_precise(nest_text(257), ec, {}, &why);
    BOOST_TEST(why == "arrays and objects nest deeper than max_json_depth (256)");
    const json::value ok = detail::parse_precise(nest_text(256), ec, {}, &why);
    BOOST_TEST(!ec);
    BOOST_TEST(ok == nest(256));
    (void)detail::parse_precise("{\"a\":1} x", ec, {}, &why);
    BOOST_TEST(!!ec);
    BOOST_TEST(!why.empty());
    // A long number is cut in the message.
    (void)detail::parse_precise("[" + std::string(100, '9') + "e400]", ec, {}, &why);
    BOOST_TEST(why == "number " + std::string(40, '9') + "... is out of the range of a double");
}

BOOST_AUTO_TEST_CASE(event_fault_finds_what_the_writer_refuses) {
    // Random events with a fault (or none) in a random place: the checker memory_store uses
    // and the writer the text stores use report the same fault, or both none.
    std::mt19937 rng(31);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto bad_value = [&](int kind) -> json::value {
        switch (kind) {
        case 0: return inf;
        case 1: return nan_value;
        case 2: return json::string("ok\xff");
        case 3: return nest(300);
        default: return json::string("fine");
        }
    };
    int faults = 0;
    for (int i = 0; i < 3000; ++i) {
        event e = minimal_event();
        const int kind = pick(6); // 4, 5: no fault
        const int where = pick(10);
        json::value v = bad_value(kind);
        switch (where) {
        case 0: e.metadata["m"] = v; break;
        case 1: e.content.parts.emplace_back(tool_call_part{"c", "t", json::object{{"a", v}}, {}}); break;
        case 2: e.content.parts.emplace_back(tool_response_part{"c", "t", json::array{1, v}, {}, {}}); break;
        case 3: e.content.parts.emplace_back(data_part{json::object{{"d", json::object{{"x", v}}}}, {}}); break;
        case 4: e.actions.state_delta["k"] = v; break;
        case 5: e.content.parts.emplace_back(text_part{"t", json::object{{"md", v}}}); break;
        case 6:
            if (kind == 2) e.author = "a\xc3";
            else if (kind < 2) e.timestamp = v.as_double();
            break;
        case 7:
            if (kind == 2) e.content.parts.emplace_back(text_part{"caf\xc3\xa9\xed\xa0\x80", {}});
            break;
        case 8: e.actions.artifact_delta[kind == 2 ? "n\xff" : "n"] = 1; break;
        default:
            if (kind < 2) e.actions.compaction = event_compaction{1, 1, v.as_double(), 0, "s", 1};
            else if (kind == 2) e.signer_did = "did:\x80";
        }
        if (pick(2)) e.content.parts.emplace_back(text_part{"after", {}}); // faults come first
        std::string out;
        const auto w = detail::append_event_json(out, e);
        const auto c = detail::event_fault(e);
        BOOST_TEST_CONTEXT("event " << i << " kind " << kind << " where " << where) {
            BOOST_TEST_REQUIRE(w.has_value() == c.has_value());
            if (w) {
                ++faults;
                BOOST_TEST((w->what == c->what));
                BOOST_TEST(w->key == c->key);
                BOOST_TEST(w->offset == c->offset);
                BOOST_TEST(w->message() == c->message());
            } else {
                reads_back_equal(e);
            }
        }
    }
    BOOST_TEST(faults > 1000); // the generator does make faults
}

BOOST_AUTO_TEST_SUITE_END()
