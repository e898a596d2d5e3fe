// agent.hpp: the concept, agent_ref, any_agent, and the tree helpers.
#include <libretto/agent/agent.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace lb = libretto;

// A leaf that says its name once.
struct echo_agent {
    std::string name_;
    const std::string& name() const { return name_; }
    std::string_view description() const { return "says its name"; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
    lb::event_stream run(lb::invocation_context ctx) const {
        lb::event e = lb::event::make(lb::event_type::agent_message, name_, lb::content::from_text(name_));
        e.branch = ctx.branch();
        e.invocation_id = ctx.invocation_id();
        std::vector<lb::event> v;
        v.push_back(std::move(e));
        return lb::make_stream(ctx.get_executor(), std::move(v));
    }
};

// A parent with fixed children (no run logic needed here).
struct parent_agent {
    std::string name_;
    std::vector<lb::any_agent> children;
    std::string_view name() const { return name_; }
    std::string_view description() const { return ""; }
    std::vector<lb::agent_ref> sub_agents() const {
        std::vector<lb::agent_ref> v;
        for (const auto& c : children) v.push_back(c.ref());
        return v;
    }
    lb::event_stream run(lb::invocation_context ctx) const { return children.front().run(std::move(ctx)); }
};

static_assert(lb::agent<echo_agent>);
static_assert(lb::agent<parent_agent>);
static_assert(!lb::agent<int>);
struct no_run {
    std::string_view name() const { return ""; }
    std::string_view description() const { return ""; }
    std::vector<lb::agent_ref> sub_agents() const { return {}; }
};
static_assert(!lb::agent<no_run>);

std::vector<std::string> drain(asio::io_context& io, lb::event_stream s) {
    std::vector<std::string> out;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            for (;;) {
                auto next = s.next();
                auto e = co_await std::move(next);
                if (!e) break;
                out.push_back(e->author + ":" + e->text() + "@" + e->branch);
            }
        },
        [](std::exception_ptr p) {
            if (p) std::rethrow_exception(p);
        });
    io.run();
    io.restart();
    return out;
}

parent_agent make_tree() {
    parent_agent inner{"inner", {echo_agent{"c"}, echo_agent{"d"}}};
    return parent_agent{"root", {echo_agent{"a"}, lb::any_agent(std::move(inner)), echo_agent{"b"}}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(agent_concept)

BOOST_AUTO_TEST_CASE(agent_ref_views_and_runs_without_owning) {
    asio::io_context io;
    echo_agent a{"alpha"};
    lb::agent_ref r = a;
    BOOST_TEST(r.name() == "alpha");
    BOOST_TEST(r.description() == "says its name");
    BOOST_TEST(r.sub_agents().empty());
    BOOST_TEST(r.target<echo_agent>() == &a);
    BOOST_TEST(r.target<parent_agent>() == nullptr);
    lb::invocation_options o;
    o.executor = io.get_executor();
    o.branch = "root";
    auto got = drain(io, r.run(lb::invocation_context(std::move(o))));
    BOOST_TEST(got == (std::vector<std::string>{"alpha:alpha@root"}));
    a.name_ = "renamed"; // a view, not a copy
    BOOST_TEST(r.name() == "renamed");
}

BOOST_AUTO_TEST_CASE(any_agent_copies_share_one_agent) {
    lb::any_agent x = echo_agent{"x"};
    lb::any_agent y = x;
    BOOST_TEST(x.target<echo_agent>() == y.target<echo_agent>());
    BOOST_TEST((x.ref() == y.ref()));
    BOOST_TEST(y.name() == "x");
    lb::any_agent z = echo_agent{"x"};
    BOOST_TEST(!(z.ref() == x.ref()));
}

BOOST_AUTO_TEST_CASE(find_agent_searches_depth_first_including_the_root) {
    auto root = make_tree();
    lb::agent_ref r = root;
    BOOST_TEST(lb::find_agent(r, "root").has_value());
    auto d = lb::find_agent(r, "d");
    BOOST_REQUIRE(d);
    BOOST_TEST(d->name() == "d");
    BOOST_TEST(!lb::find_agent(r, "nobody").has_value());
    BOOST_TEST(!lb::find_agent(r, "").has_value());
}

BOOST_AUTO_TEST_CASE(make_agent_tree_mirrors_the_names) {
    auto root = make_tree();
    auto tree = lb::make_agent_tree(root);
    BOOST_TEST(tree.name == "root");
    BOOST_REQUIRE(tree.sub_agents.size() == 3u);
    BOOST_TEST(tree.sub_agents[1].name == "inner");
    BOOST_REQUIRE(tree.sub_agents[1].sub_agents.size() == 2u);
    BOOST_TEST(tree.sub_agents[1].sub_agents[1].name == "d");
    BOOST_TEST(tree.find("c") != nullptr);
}

BOOST_AUTO_TEST_CASE(duplicate_names_are_reported) {
    auto root = make_tree();
    BOOST_TEST(lb::duplicate_agent_names(root).empty());
    parent_agent dup{"root", {echo_agent{"a"}, echo_agent{"a"}, parent_agent{"p", {echo_agent{"root"}}}}};
    BOOST_TEST(lb::duplicate_agent_names(dup) == (std::vector<std::string>{"a", "root"}));
}

BOOST_AUTO_TEST_CASE(the_launcher_runs_agents_of_the_tree_by_name) {
    asio::io_context io;
    auto root = make_tree();
    lb::invocation_options o;
    o.executor = io.get_executor();
    o.agent_launcher = lb::agent_launcher_for(root);
    lb::invocation_context ctx(std::move(o));
    auto derived = ctx.derive("c");
    auto s = derived.launch_agent("c", derived); // shared by derived contexts
    BOOST_REQUIRE(s.has_value());
    BOOST_TEST(drain(io, std::move(*s)) == (std::vector<std::string>{"c:c@c"}));
    BOOST_TEST(!ctx.launch_agent("nobody", ctx).has_value());
    lb::invocation_context bare;
    BOOST_TEST(!bare.launch_agent("c", bare).has_value()); // no launcher set
}

// The defaulted move used to leave the source's ref_ viewing the agent now owned by the
// destination: after the destination died, a call on the source was a use-after-free.
// Now the source is empty, and every call on it is defined.
BOOST_AUTO_TEST_CASE(a_moved_from_any_agent_is_empty_even_after_the_destination_dies) {
    asio::io_context io;
    lb::any_agent a = echo_agent{"alpha"};
    BOOST_TEST(static_cast<bool>(a));
    {
        lb::any_agent b = std::move(a);
        BOOST_TEST(b.name() == "alpha");
        BOOST_TEST(static_cast<bool>(b.ref()));
        lb::invocation_options o;
        o.executor = io.get_executor();
        auto got = drain(io, b.run(lb::invocation_context(std::move(o))));
        BOOST_TEST(got == (std::vector<std::string>{"alpha:alpha@"}));
    } // the destination, and the agent, are gone
    lb::any_agent c = echo_agent{"gamma"};
    lb::any_agent d = echo_agent{"delta"};
    d = std::move(c); // move assignment too
    BOOST_TEST(d.name() == "gamma");
    for (const lb::any_agent* empty : {&a, &c}) {
        BOOST_TEST(!*empty);
        BOOST_TEST(!empty->ref());
        BOOST_TEST(empty->name() == "");
        BOOST_TEST(empty->description() == "");
        BOOST_TEST(empty->sub_agents().empty());
        BOOST_TEST(empty->target<echo_agent>() == nullptr);
        lb::invocation_options o;
        o.executor = io.get_executor();
        auto s = empty->run(lb::invocation_context(std::move(o)));
        bool failed = false;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                try {
                    auto next = s.next();
                    (void)co_await std::move(next);
                } catch (const boost::system::system_error& e) {
                    failed = true;
                    BOOST_TEST((e.code() == asio::error::not_connected), e.what());
                    BOOST_TEST(std::string(e.what()).find("any_agent: empty (moved-from)") != std::string::npos,
                               e.what());
                }
            },
            [](std::exception_ptr p) {
                if (p) std::rethrow_exception(p);
            });
        io.run();
        io.restart();
        BOOST_TEST(failed);
    }
    BOOST_TEST((a.ref() == c.ref())); // both empty
}

BOOST_AUTO_TEST_SUITE_END()
