// What a store acknowledges, it reads back (docs/reliability.md): the conformance cases for
// json_limits.hpp's rules and the property over random events. Included by
// store_conformance.hpp; every store runs them.
#ifndef LIBRETTO_TESTS_CONFORMANCE_READBACK_CASES_HPP
#define LIBRETTO_TESTS_CONFORMANCE_READBACK_CASES_HPP

#include <libretto/event/json.hpp>
#include <libretto/event/json_limits.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace conformance {

/// `n` nested arrays around "x".
inline lb::json::value nested(std::size_t n) {
    lb::json::value v = "x";
    for (std::size_t i = 0; i < n; ++i) {
        lb::json::array a;
        a.push_back(std::move(v));
        v = std::move(a);
    }
    return v;
}

/// Random events for the read-back property: deep, wide, unicode, large, odd numbers, and
/// now and then something no JSON text can hold (a number that is not finite, a string
/// that is not UTF-8, nesting past max_json_depth), which every store must refuse.
class event_generator {
public:
    explicit event_generator(unsigned seed) : rng_(seed) {}

    /// An event; `storable` says whether json_limits.hpp allows it.
    lb::event next(bool& storable) {
        storable = true;
        bad_ = one_in(5) ? pick(4) + 1 : 0; // 0: none; else which fault to plant
        planted_ = false;
        lb::event e;
        e.id = lb::event::new_id();
        e.type = one_in(3) ? lb::event_type::tool_response : lb::event_type::agent_message;
        e.author = text(12);
        e.timestamp = 1700000000.0 + pick(1000000) / 1024.0;
        const int parts = pick(4);
        for (int i = 0; i < parts; ++i) e.content.parts.push_back(part());
        if (one_in(2)) e.metadata = object(2, 6);
        if (one_in(3)) e.actions.state_delta["k" + std::to_string(pick(5))] = value(3);
        if (one_in(6)) e.actions.state_delta["app:shared" + std::to_string(pick(3))] = value(3);
        if (one_in(8)) e.content.parts.push_back(lb::text_part{std::string(150000 + pick(50000), 'L'), {}});
        if (bad_ && !planted_) plant(e.metadata, 1);
        storable = bad_ == 0;
        return e;
    }

private:
    std::mt19937 rng_;
    int bad_ = 0;
    bool planted_ = false;

    int pick(int n) { return static_cast<int>(rng_() % static_cast<unsigned>(n)); }
    bool one_in(int n) { return pick(n) == 0; }

    std::string text(int max_len) {
        static const char* const pieces[] = {"a", "Z", " ", "\"", "\\", "\n", "\t", std::string_view("\0", 1).data(),
                                             "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x8e\xb5", "\xef\xbf\xbf",
                                             "\xe2\x80\xa8", "/", "<", "{"};
        std::string s;
        for (int n = pick(max_len + 1); n > 0; --n) {
            const int i = pick(static_cast<int>(std::size(pieces)));
            if (i == 7) s.push_back('\0');
            else s += pieces[i];
        }
        return s;
    }

    double odd_number() {
        static const double odd[] = {0.1, -0.0, 5e-324, std::numeric_limits<double>::max(),
                                     std::numeric_limits<double>::lowest(), 1e-7, 123456789.125, 2.2250738585072014e-308,
                                     9007199254740993.0, 1e21, 1e-310};
        if (one_in(2)) return odd[pick(static_cast<int>(std::size(odd)))];
        // A random bit pattern that is a finite double.
        double d;
        do {
            const std::uint64_t bits = (static_cast<std::uint64_t>(rng_()) << 32) | rng_();
            std::memcpy(&d, &bits, sizeof d);
        } while (!std::isfinite(d));
        return d;
    }

    lb::json::value scalar() {
        switch (pick(8)) {
        case 0: return nullptr;
        case 1: return one_in(2);
        case 2: return static_cast<std::int64_t>(pick(2000000)) - 1000000;
        case 3: return one_in(2) ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
        case 4: return std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(pick(10));
        case 5: return odd_number();
        default: return lb::json::string(text(20));
        }
    }

    lb::json::value value(int depth) {
        if (depth <= 0 || one_in(3)) return scalar();
        if (one_in(2)) {
            lb::json::array a;
            for (int n = pick(5); n > 0; --n) a.push_back(value(depth - 1));
            return a;
        }
        return object(depth - 1, 5);
    }

    lb::json::object object(int depth, int width) {
        lb::json::object o;
        if (one_in(10)) { // sometimes wide, of scalars (wide and deep would be megabytes)
            for (int i = 200 + pick(300); i > 0; --i) o[text(8) + std::to_string(i)] = scalar();
            return o;
        }
        for (int i = pick(width + 1); i > 0; --i) o[text(8) + std::to_string(i)] = value(depth);
        return o;
    }

    /// Plants the chosen fault into `o`, an object at nesting level `level` + 1.
    void plant(lb::json::object& o, std::size_t level) {
        planted_ = true;
        switch (bad_) {
        case 1: o["bad"] = one_in(2) ? std::numeric_limits<double>::infinity() : std::nan(""); break;
        case 2: o["bad"] = lb::json::string("ok\xff" + text(3)); break;
        case 3: o["bad"] = nested(lb::max_json_depth - level); break; // one level too deep
        default: o["b\xc3"] = 1; break; // a key that is not UTF-8
        }
    }

    lb::part part() {
        switch (pick(5)) {
        case 0: return lb::text_part{text(40), {}};
        case 1: return lb::thinking_part{text(40), {}};
        case 2: {
            lb::data_part d{object(4, 6), {}};
            if (bad_ && !planted_ && one_in(2)) plant(d.data, 4);
            return d;
        }
        case 3: {
            // As deep as a tool call's arguments may nest (event, content, parts, part, args).
            lb::json::object args = object(3, 4);
            if (one_in(4)) args["deep"] = nested(lb::max_json_depth - 6);
            if (bad_ && !planted_ && one_in(2)) plant(args, 4);
            return lb::tool_call_part{"call_" + std::to_string(pick(100)), "tool" + std::to_string(pick(5)),
                                      std::move(args), {}};
        }
        default: {
            lb::tool_response_part r{"call_" + std::to_string(pick(100)), "tool", value(4), {}, {}};
            if (one_in(4)) r.error = text(10);
            return r;
        }
        }
    }
};

/// Events and initial state that no JSON text holds are refused by every store, and nothing
/// changes; the deepest values the rules allow are stored and read back, also through the
/// shared app: state and the session header (which once had a lower limit than events).
template <class Fixture>
void unreadable_values_are_refused_case(Fixture& fx) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        auto s = co_await create(st, "limits", "u1", "s1");
        co_await append_text(st, s, "first");

        std::vector<lb::event> bad;
        {
            auto e = text_event("inf");
            e.metadata["t"] = std::numeric_limits<double>::infinity();
            bad.push_back(e);
        }
        {
            auto e = text_event("nan result");
            e.type = lb::event_type::tool_response;
            e.content.parts.push_back(lb::tool_response_part{"c1", "probe", lb::json::array{1, std::nan("")}, {}, {}});
            bad.push_back(e);
        }
        {
            auto e = text_event("too deep");
            e.metadata["deep"] = nested(lb::max_json_depth - 1); // metadata is level 2
            bad.push_back(e);
        }
        {
            auto e = text_event("too deep app value");
            e.actions.state_delta["app:deep"] = nested(lb::max_json_depth - 2); // state_delta is level 3
            bad.push_back(e);
        }
        bad.push_back(text_event("not UTF-8 \xff"));
        for (auto& e : bad) {
            BOOST_TEST_CONTEXT("event " << (e.content.parts.empty() ? "" : std::get<lb::text_part>(e.content.parts[0]).text.substr(0, 20))) {
                lb::diagnostics d;
                BOOST_TEST(co_await append_ec(st, s, e, d) == lb::errc::invalid_argument);
                BOOST_TEST(!d.message().empty());
                BOOST_TEST(s.last_sequence == 1);
                BOOST_TEST(s.events.size() == 1u);
            }
        }
        // The deepest allowed, in an event and in shared state.
        auto deep = text_event("deepest");
        deep.metadata["deep"] = nested(lb::max_json_depth - 2);
        deep.actions.state_delta["app:deep"] = nested(lb::max_json_depth - 3);
        deep.actions.state_delta["user:deep"] = nested(lb::max_json_depth - 3);
        BOOST_TEST(co_await append_ec(st, s, deep) == error_code{});
        BOOST_TEST(s.last_sequence == 2);

        // Initial state: refused when it cannot be stored, nothing created.
        lb::json::object inf_state;
        inf_state["x"] = -std::numeric_limits<double>::infinity();
        lb::diagnostics d;
        lb::create_options o2 = create_opts("limits", "u1", "s2", inf_state);
        BOOST_TEST(co_await create_ec(st, std::move(o2), d) == lb::errc::invalid_argument);
        BOOST_TEST(d.message().find("initial state") != std::string::npos, d.message());
        lb::json::object deep_state;
        deep_state["x"] = nested(lb::max_json_depth - 1); // the header's state is level 2
        lb::create_options o3 = create_opts("limits", "u1", "s3", deep_state);
        BOOST_TEST(co_await create_ec(st, std::move(o3)) == lb::errc::invalid_argument);
        auto none2 = co_await get(st, "limits", "u1", "s2");
        auto none3 = co_await get(st, "limits", "u1", "s3");
        BOOST_TEST(!none2.has_value());
        BOOST_TEST(!none3.has_value());
        deep_state["x"] = nested(lb::max_json_depth - 2);
        lb::create_options o4 = create_opts("limits", "u1", "s4", deep_state);
        BOOST_TEST(co_await create_ec(st, std::move(o4)) == error_code{});

        // A fresh store reads all of it back: events, the shared state, the deep header.
        auto st2 = fx.open(ex);
        auto g = co_await get(st2, s);
        BOOST_REQUIRE(g.has_value());
        BOOST_REQUIRE_EQUAL(g->events.size(), 2u);
        BOOST_TEST((g->events[0] == s.events[0]));
        BOOST_TEST((g->events[1] == s.events[1]));
        BOOST_TEST(g->state.at("app:deep") == nested(lb::max_json_depth - 3));
        BOOST_TEST(g->state.at("user:deep") == nested(lb::max_json_depth - 3));
        auto s4 = co_await get(st2, "limits", "u1", "s4");
        BOOST_REQUIRE(s4.has_value());
        BOOST_TEST(s4->state.at("x") == nested(lb::max_json_depth - 2));
        BOOST_TEST(s4->state.at("app:deep") == nested(lb::max_json_depth - 3));
        // Another session of the app is created and read with the deep app: value in it.
        auto other = co_await create(st2, "limits", "u2", "s5");
        BOOST_TEST(other.state.at("app:deep") == nested(lb::max_json_depth - 3));
        BOOST_TEST(co_await append_text_ec(st2, *g, "after") == error_code{});
        BOOST_TEST(g->last_sequence == 3);
    });
}

/// The property: whatever append accepts loads back equal from a fresh store; whatever it
/// refuses leaves the store as it was. Random events (event_generator), three sessions.
template <class Fixture>
void acknowledged_is_readable_case(Fixture& fx, unsigned seed, int events) {
    run([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto st = fx.open(ex);
        event_generator gen(seed);
        std::vector<lb::session> sessions;
        for (int i = 0; i < 3; ++i) sessions.push_back(co_await create(st, "prop", "u" + std::to_string(i % 2)));
        std::vector<std::vector<lb::event>> acknowledged(sessions.size());
        int refused = 0, accepted = 0;
        for (int i = 0; i < events; ++i) {
            const std::size_t k = static_cast<std::size_t>(i) % sessions.size();
            lb::session& s = sessions[k];
            bool storable = true;
            lb::event e = gen.next(storable);
            const std::int64_t before = s.last_sequence;
            lb::diagnostics d;
            const error_code ec = co_await append_ec(st, s, e, d);
            BOOST_TEST_CONTEXT("seed " << seed << " event " << i) {
                BOOST_TEST(!ec == storable, ec.message() << ": " << d.message());
                if (!ec) {
                    ++accepted;
                    BOOST_TEST(s.last_sequence == before + 1);
                    acknowledged[k].push_back(s.events.back());
                } else {
                    ++refused;
                    BOOST_TEST((ec == lb::errc::invalid_argument), ec.message());
                    BOOST_TEST(!d.message().empty());
                    BOOST_TEST(s.last_sequence == before);
                    // Nothing changed: a fresh store sees what it saw before.
                    auto fresh = fx.open(ex);
                    auto g = co_await get(fresh, s);
                    BOOST_REQUIRE(g.has_value());
                    BOOST_TEST(g->last_sequence == before);
                    BOOST_TEST(g->events.size() == acknowledged[k].size());
                }
            }
        }
        BOOST_TEST(accepted > events / 2);
        BOOST_TEST(refused > 0);
        auto fresh = fx.open(ex);
        for (std::size_t k = 0; k < sessions.size(); ++k) {
            auto g = co_await get(fresh, sessions[k]);
            BOOST_REQUIRE(g.has_value());
            BOOST_REQUIRE_EQUAL(g->events.size(), acknowledged[k].size());
            for (std::size_t i = 0; i < acknowledged[k].size(); ++i)
                BOOST_TEST((g->events[i] == acknowledged[k][i]),
                           "session " << k << " event " << i << ": read " << lb::serialize_event(g->events[i]).substr(0, 2000)
                                      << "\nstored " << lb::serialize_event(acknowledged[k][i]).substr(0, 2000));
            // Session keys only: app: and user: keys are shared, and other sessions changed them since.
            for (const auto& kv : sessions[k].state) {
                if (kv.key().starts_with("app:") || kv.key().starts_with("user:")) continue;
                BOOST_TEST(g->state.contains(kv.key()), "session " << k << " key " << kv.key());
                if (g->state.contains(kv.key())) BOOST_TEST(g->state.at(kv.key()) == kv.value());
            }
        }
    });
}

} // namespace conformance

#endif
