// mcp/: the JSON-RPC pieces by hand (sans-io), faults from small /bin/sh servers that a real
// server cannot make (garbage, a reply cut short, silence, an oversized line, a bad schema,
// a crash with a request pending, requests from the server), and the real servers from npm
// (@modelcontextprotocol/server-everything and server-filesystem over stdio), with an
// llm_agent calling their tools through the runner. The real-server cases are skipped,
// saying why, only when node, or npm and the packages, are missing (scripts/setup installs
// them into $LIBRETTO_NPM_CACHE, default <repo>/.cache/npm).
#include <libretto/mcp/client.hpp>
#include <libretto/mcp/detail/child_process.hpp>
#include <libretto/mcp/detail/rpc.hpp>
#include <libretto/mcp/mcp_toolset.hpp>
#include <libretto/http/fake_transport.hpp>

#include <libretto/agent/llm_agent.hpp>
#include <libretto/model/scripted_model.hpp>
#include <libretto/runner/run_to_end.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/memory_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;
namespace mcp = libretto::mcp;
namespace fs = std::filesystem;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;

template <class T>
T run(asio::io_context& io, asio::awaitable<T> coro) {
    std::optional<T> out;
    std::exception_ptr failure;
    bool done = false;
    // The client's reader keeps work outstanding: stop when the coroutine is done.
    asio::co_spawn(io, std::move(coro), [&](std::exception_ptr e, T r) {
        failure = e;
        if (!e) out.emplace(std::move(r));
        done = true;
        io.stop();
    });
    io.restart();
    while (!done) io.run_for(50ms);
    if (failure) std::rethrow_exception(failure);
    return std::move(*out);
}

/// Runs `io` until `pred()` holds (at most 10 s).
template <class Pred>
void wait_until(asio::io_context& io, Pred pred) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    io.restart();
    while (!pred() && std::chrono::steady_clock::now() < end) io.run_for(10ms);
}

/// What a failed operation said: its code and its words.
struct failure {
    boost::system::error_code code;
    std::string what;
};

template <class T>
failure fails(asio::io_context& io, asio::awaitable<T> coro) {
    try {
        run(io, std::move(coro));
    } catch (const boost::system::system_error& e) {
        return {e.code(), e.what()};
    }
    BOOST_ERROR("no failure");
    return {};
}

constexpr std::string_view init_reply =
    R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"0"}}})";

/// A server that is a /bin/sh script; `then` runs after it answered initialize and read
/// notifications/initialized (skip with answer_init = false).
mcp::stdio_options sh_server(std::string then, bool answer_init = true) {
    mcp::stdio_options o;
    o.command = "/bin/sh";
    std::string script = "read -r l; ";
    if (answer_init) script += "printf '%s\\n' '" + std::string(init_reply) + "'; read -r l; ";
    o.args = {"-c", script + then};
    o.close_timeout = 500ms;
    return o;
}

mcp::client_options quick(std::chrono::milliseconds timeout = 2000ms) {
    mcp::client_options o;
    o.request_timeout = timeout;
    return o;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct temp_dir {
    fs::path path;
    temp_dir() {
        path = fs::temp_directory_path() / ("libretto-mcp-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(mcp_rpc)

BOOST_AUTO_TEST_CASE(messages_the_client_writes) {
    BOOST_TEST(json::parse(mcp::detail::make_request(7, "tools/call", {{"name", "x"}})) ==
               json::parse(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}})"));
    BOOST_TEST(json::parse(mcp::detail::make_request(1, "ping", {})) == json::parse(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"));
    BOOST_TEST(json::parse(mcp::detail::make_cancelled(3, "timed out")) ==
               json::parse(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"timed out"}})"));
    auto init = mcp::detail::initialize_params(mcp::client_options{});
    BOOST_TEST(init.at("protocolVersion") == "2025-11-25");
    BOOST_TEST(init.at("capabilities").as_object().empty()); // nothing to answer server requests with
    mcp::client_options with;
    with.on_request = [](std::string_view, const json::object&) { return json::object{}; };
    BOOST_TEST(mcp::detail::initialize_params(with).at("capabilities").as_object().contains("sampling"));
    BOOST_TEST(mcp::detail::supported_version("2025-06-18"));
    BOOST_TEST(!mcp::detail::supported_version("2024-11-05"));
}

BOOST_AUTO_TEST_CASE(what_the_client_reads) {
    BOOST_TEST(!mcp::detail::parse_message("not json"));
    BOOST_TEST(!mcp::detail::parse_message("[1,2]"));
    BOOST_TEST(!mcp::detail::parse_message(R"({"id":1,"result":{}})")); // no "jsonrpc":"2.0"
    BOOST_TEST(mcp::detail::parse_message(R"({"jsonrpc":"2.0","id":1,"result":{}})").has_value());
    try {
        mcp::detail::take_result(json::parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: nope"}})").as_object(),
                                 "tools/call");
        BOOST_ERROR("no throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == lb::errc::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("tools/call: the server answered error -32602: Unknown tool: nope") != std::string::npos, e.what());
    }
    BOOST_CHECK_THROW(mcp::detail::take_result(json::parse(R"({"jsonrpc":"2.0","id":1})").as_object(), "x"), boost::system::system_error);
    std::vector<mcp::tool_info> tools;
    mcp::detail::read_tools(json::parse(R"({"tools":[{"name":"a","description":"A","inputSchema":{"type":"object"},
        "outputSchema":{"type":"object","required":["n"]}}]})").as_object(), tools);
    BOOST_TEST_REQUIRE(tools.size() == 1u);
    BOOST_TEST(tools[0].output_schema.has_value());
    auto bad = [](std::string_view page) {
        std::vector<mcp::tool_info> t;
        try {
            mcp::detail::read_tools(json::parse(page).as_object(), t);
        } catch (const boost::system::system_error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    BOOST_TEST(bad(R"({"tools":[{"name":"b","inputSchema":{"type":"string"}}]})").find("tool 'b' has no inputSchema of type") != std::string::npos);
    BOOST_TEST(bad(R"({"tools":[{"inputSchema":{"type":"object"}}]})").find("a tool has no name") != std::string::npos);
    BOOST_TEST(bad(R"({"nothing":1})").find("no 'tools' array") != std::string::npos);
    auto r = mcp::detail::read_call_result(
        json::parse(R"({"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":1},"isError":false})").as_object(), "t");
    BOOST_TEST(r.content.size() == 1u);
    BOOST_TEST(r.structured_content->at("n") == 1);
    BOOST_CHECK_THROW(mcp::detail::read_call_result(json::parse(R"({"content":"x"})").as_object(), "t"), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(requests_from_the_server) {
    std::function<json::object(std::string_view, const json::object&)> none;
    auto answer = [&](std::string_view method, auto handler) {
        return json::parse(mcp::detail::answer_server_request(json::value("s1"), method, {}, handler)).as_object();
    };
    BOOST_TEST(answer("sampling/createMessage", none).at("error").at("code") == -32601);
    BOOST_TEST(answer("ping", none).at("result").as_object().empty());
    std::function<json::object(std::string_view, const json::object&)> roots = [](std::string_view m, const json::object&) {
        if (m != "roots/list") throw boost::system::system_error(lb::errc::not_found);
        return json::object{{"roots", json::array{}}};
    };
    BOOST_TEST(answer("roots/list", roots).at("result").at("roots").as_array().empty());
    BOOST_TEST(answer("elicitation/create", roots).at("error").at("code") == -32601);
    BOOST_TEST(answer("roots/list", roots).at("id") == "s1");
}

BOOST_AUTO_TEST_CASE(results_become_what_the_model_reads) {
    lb::invocation_options io_opts;
    io_opts.invocation_id = "inv";
    io_opts.session_id = "s1";
    io_opts.agent_name = "assistant";
    lb::invocation_context inv(io_opts);
    lb::tool_context ctx(inv, "c1", "t");
    mcp::call_result r;
    r.content = json::parse(R"([{"type":"text","text":"line one"},{"type":"image","data":"iVBOR","mimeType":"image/png"},
        {"type":"resource_link","uri":"file:///x.txt","name":"x.txt"},{"type":"resource","resource":{"uri":"mem://a","text":"embedded"}}])").as_array();
    auto v = mcp::detail::convert_result(r, ctx, std::nullopt, "t");
    BOOST_TEST(v == "line one\n[image image/png attached]\n[resource file:///x.txt]\nembedded");
    auto parts = ctx.take_attachments();
    BOOST_TEST_REQUIRE(parts.size() == 2u);
    BOOST_TEST(std::get<lb::file_part>(parts[0]).inline_bytes.value_or("") == "iVBOR");
    BOOST_TEST(std::get<lb::file_part>(parts[1]).uri.value_or("") == "file:///x.txt");
    // Structured content wins, and is checked against the outputSchema.
    json::object schema = json::parse(R"({"type":"object","required":["n"],"properties":{"n":{"type":"number"}}})").as_object();
    r.structured_content = json::object{{"n", 3}};
    BOOST_TEST(mcp::detail::convert_result(r, ctx, schema, "t") == (json::object{{"n", 3}}));
    r.structured_content = json::object{{"n", "three"}};
    BOOST_CHECK_EXCEPTION(mcp::detail::convert_result(r, ctx, schema, "t"), lb::tool_error, [](const lb::tool_error& e) {
        return std::string(e.what()).find("member 'n' is string, the outputSchema says number") != std::string::npos;
    });
    r.structured_content.reset();
    BOOST_CHECK_THROW(mcp::detail::convert_result(r, ctx, schema, "t"), lb::tool_error);
    r.is_error = true;
    r.content = json::parse(R"([{"type":"text","text":"no such file"}])").as_array();
    BOOST_CHECK_EXCEPTION(mcp::detail::convert_result(r, ctx, std::nullopt, "t"), lb::tool_error,
                          [](const lb::tool_error& e) { return std::string(e.what()) == "no such file"; });
    // What no store could keep is the tool's error, named: 1e400 as the server wrote it (read
    // as inf), and strings that are not UTF-8.
    r.is_error = false;
    r.content = {};
    r.structured_content = mcp::detail::parse_message(R"({"jsonrpc":"2.0","v":{"big":1e400}})")->at("v").as_object();
    BOOST_CHECK_EXCEPTION(mcp::detail::convert_result(r, ctx, std::nullopt, "t"), lb::tool_error, [](const lb::tool_error& e) {
        return std::string(e.what()).find("the MCP tool 't' returned structuredContent no store can keep: number inf is "
                                          "not finite: JSON has no text for it in member \"big\"") != std::string::npos;
    });
    r.structured_content.reset();
    for (const char* field : {"mimeType", "data"}) {
        json::object block{{"type", "image"}, {"data", "iVBOR"}, {"mimeType", "image/png"}};
        block[field] = "\xff";
        r.content = json::array{block};
        BOOST_CHECK_EXCEPTION(mcp::detail::convert_result(r, ctx, std::nullopt, "t"), lb::tool_error, [&](const lb::tool_error& e) {
            return std::string(e.what()).find("returned a content block whose '" + std::string(field) + "' is not UTF-8") !=
                   std::string::npos;
        });
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mcp_faults)

BOOST_AUTO_TEST_CASE(garbage_from_the_server_is_a_clear_error) {
    asio::io_context io;
    mcp::stdio_options o;
    o.command = "/bin/sh";
    o.args = {"-c", "read -r l; echo 'Server starting... this is not JSON'; sleep 5"};
    o.close_timeout = 200ms;
    auto g = fails(io, mcp::connect_stdio(io.get_executor(), o, quick()));
    BOOST_TEST((g.code == lb::errc::bad_response), g.code.message());
    BOOST_TEST(g.what.find("not a JSON-RPC message: 'Server starting... this is not JSON'") != std::string::npos, g.what);
}

BOOST_AUTO_TEST_CASE(a_reply_cut_short_and_a_crash_fail_every_pending_request) {
    asio::io_context io;
    mcp::stdio_options cut;
    cut.command = "/bin/sh";
    cut.args = {"-c", R"(read -r l; printf '{"jsonrpc":"2.0","id":1,"res'; exit 3)"};
    auto f = fails(io, mcp::connect_stdio(io.get_executor(), cut, quick()));
    BOOST_TEST((f.code == lb::errc::io_error), f.code.message());
    BOOST_TEST(f.what.find("the server exited with status 3") != std::string::npos, f.what);

    // Initialized, then it crashes with two calls pending: both fail, and so does a later one.
    auto c = run(io, mcp::connect_stdio(io.get_executor(), sh_server("read -r a; read -r b; exit 7"), quick()));
    BOOST_TEST(c->server().name == "fake");
    BOOST_TEST(c->server().protocol_version == "2025-06-18");
    std::vector<failure> seen;
    auto call = [&]() -> asio::awaitable<void> {
        try {
            co_await c->call_tool("x", {});
        } catch (const boost::system::system_error& e) {
            seen.push_back({e.code(), e.what()});
        }
    };
    asio::co_spawn(io, call(), asio::detached);
    asio::co_spawn(io, call(), asio::detached);
    wait_until(io, [&] { return seen.size() == 2; });
    BOOST_TEST_REQUIRE(seen.size() == 2u);
    for (const auto& s : seen) {
        BOOST_TEST((s.code == lb::errc::io_error));
        BOOST_TEST(s.what.find("exited with status 7") != std::string::npos, s.what);
    }
    BOOST_TEST(!c->is_open());
    auto later = fails(io, c->call_tool("x", {}));
    BOOST_TEST(later.what.find("exited with status 7") != std::string::npos, later.what);
}

BOOST_AUTO_TEST_CASE(silence_times_out_and_the_server_hears_the_cancel) {
    asio::io_context io;
    temp_dir dir;
    const fs::path heard = dir.path / "heard.jsonl";
    auto c = run(io, mcp::connect_stdio(io.get_executor(), sh_server("cat > '" + heard.string() + "'"), quick(300ms)));
    const auto t0 = std::chrono::steady_clock::now();
    auto f = fails(io, c->call_tool("slow", {}));
    BOOST_TEST((f.code == asio::error::timed_out), f.code.message());
    BOOST_TEST(f.what.find("tools/call: no answer within 300 ms") != std::string::npos, f.what);
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5s));
    run(io, c->close());
    const std::string got = slurp(heard);
    BOOST_TEST(got.find(R"("method":"tools/call")") != std::string::npos, got);
    BOOST_TEST(got.find(R"("method":"notifications/cancelled","params":{"requestId":2,"reason":"timed out"})") != std::string::npos, got);
}

BOOST_AUTO_TEST_CASE(a_cancelled_call_is_cancelled_at_the_server_too) {
    asio::io_context io;
    temp_dir dir;
    const fs::path heard = dir.path / "heard.jsonl";
    auto c = run(io, mcp::connect_stdio(io.get_executor(), sh_server("cat > '" + heard.string() + "'"), quick(10s)));
    asio::cancellation_signal stop;
    std::optional<failure> got;
    asio::co_spawn(io, c->call_tool("slow", {}),
                   asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e, mcp::call_result) {
                       try {
                           if (e) std::rethrow_exception(e);
                       } catch (const boost::system::system_error& x) {
                           got = failure{x.code(), x.what()};
                       }
                   }));
    asio::steady_timer later(io, 100ms);
    later.async_wait([&](boost::system::error_code) { stop.emit(asio::cancellation_type::terminal); });
    wait_until(io, [&] { return got.has_value(); });
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST((got->code == lb::errc::cancelled), got->code.message());
    BOOST_TEST(c->is_open()); // the connection lives on
    run(io, c->close());
    const std::string text = slurp(heard);
    BOOST_TEST(text.find(R"("params":{"requestId":2,"reason":"cancelled by the client"})") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_server_that_exits_is_restarted_by_option) {
    // Answers initialize and one tools/call (with its pid), then exits: every life serves one call.
    const std::string script = R"(
while read -r l; do
  id=$(printf '%s' "$l" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$l" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"0"}}}\n' "$id" ;;
    *'"tools/call"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"life %s"}]}}\n' "$id" "$$"; exit 0 ;;
  esac
done)";
    mcp::stdio_options o;
    o.command = "/bin/sh";
    o.args = {"-c", script};
    o.close_timeout = 300ms;
    asio::io_context io;
    // Without the option: the second call fails, naming the exit.
    {
        auto c = run(io, mcp::connect_stdio(io.get_executor(), o, quick()));
        auto first = run(io, c->call_tool("t", {}));
        BOOST_TEST(first.content.at(0).at("text").as_string().starts_with("life "));
        wait_until(io, [&] { return !c->is_open(); });
        auto f = fails(io, c->call_tool("t", {}));
        BOOST_TEST(f.what.find("the server exited with status 0") != std::string::npos, f.what);
        BOOST_TEST(c->restarts() == 0u);
    }
    // With restarts = 2: two more lives, then the error again.
    o.restarts = 2;
    auto c = run(io, mcp::connect_stdio(io.get_executor(), o, quick()));
    std::vector<std::string> lives;
    for (int i = 0; i < 3; ++i) {
        auto r = run(io, c->call_tool("t", {}));
        lives.push_back(std::string(r.content.at(0).at("text").as_string()));
        wait_until(io, [&] { return !c->is_open(); });
    }
    BOOST_TEST(c->restarts() == 2u);
    BOOST_TEST(lives[0] != lives[1]); // another process each time
    BOOST_TEST(lives[1] != lives[2]);
    auto f = fails(io, c->call_tool("t", {}));
    BOOST_TEST((f.code == lb::errc::io_error), f.what);
}

BOOST_AUTO_TEST_CASE(tools_come_from_every_page_and_are_listed_again_after_a_change) {
    // Page one points at page two; the third tools/list is answered with a list_changed first.
    const std::string script = R"(
n=0
while read -r l; do
  id=$(printf '%s' "$l" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$l" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}}}}\n' "$id" ;;
    *'"cursor":"p2"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"b%s","inputSchema":{"type":"object"}}]}}\n' "$id" "$n" ;;
    *'"tools/list"'*) n=$((n+1)); printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"a%s","inputSchema":{"type":"object"}}],"nextCursor":"p2"}}\n' "$id" "$n"
                      [ "$n" = 1 ] && printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}' ;;
  esac
done)";
    mcp::stdio_options o;
    o.command = "/bin/sh";
    o.args = {"-c", script};
    o.close_timeout = 300ms;
    asio::io_context io;
    std::vector<std::string> notes;
    mcp::client_options co = quick();
    co.on_notification = [&](std::string_view m, const json::object&) { notes.emplace_back(m); };
    auto c = run(io, mcp::connect_stdio(io.get_executor(), o, co));
    auto names = [](const std::vector<mcp::tool_info>& t) {
        std::vector<std::string> out;
        for (const auto& i : t) out.push_back(i.name);
        return out;
    };
    BOOST_TEST(names(run(io, c->list_tools())) == (std::vector<std::string>{"a1", "b1"}));
    wait_until(io, [&] { return !notes.empty(); });
    BOOST_TEST_REQUIRE(notes.size() == 1u);
    BOOST_TEST(notes[0] == "notifications/tools/list_changed");
    BOOST_TEST(names(run(io, c->list_tools())) == (std::vector<std::string>{"a2", "b2"})); // listed again
    BOOST_TEST(names(run(io, c->list_tools())) == (std::vector<std::string>{"a2", "b2"})); // cached
    run(io, c->close());
}

/// A stdio server that lists `tools` (a JSON array's text) on one page, or on endless pages
/// that all send the cursor "again" when `loop`; a tools/call answers "called <name>".
mcp::stdio_options tools_server(const std::string& tools, bool loop = false) {
    const std::string cursor = loop ? R"(,"nextCursor":"again")" : "";
    mcp::stdio_options o;
    o.command = "/bin/sh";
    o.args = {"-c", R"sh(
while read -r l; do
  id=$(printf '%s' "$l" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$l" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{}}}}\n' "$id" ;;
    *'"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":%s%s}}\n' "$id" ')sh" + tools + "' '" + cursor + R"sh(' ;;
    *'"prompts/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"prompts":[]%s}}\n' "$id" ')sh" + cursor + R"sh(' ;;
    *'"tools/call"'*) name=$(printf '%s' "$l" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p')
                      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"called %s"}]}}\n' "$id" "$name" ;;
  esac
done)sh"};
    o.close_timeout = 300ms;
    return o;
}

BOOST_AUTO_TEST_CASE(a_cursor_sent_twice_is_an_error_not_a_listing_cut_short) {
    asio::io_context io;
    auto c = run(io, mcp::connect_stdio(io.get_executor(),
                                        tools_server(R"([{"name":"t","inputSchema":{"type":"object"}}])", true), quick()));
    auto f = fails(io, c->list_tools());
    BOOST_TEST((f.code == lb::errc::bad_response), f.code.message());
    BOOST_TEST(f.what.find("tools/list: the server sent the cursor 'again' twice") != std::string::npos, f.what);
    auto [ec, prompts] = run(io, c->async_list_prompts(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST((ec == lb::errc::bad_response), ec.message());
    BOOST_TEST(prompts.empty());
    run(io, c->close());
}

BOOST_AUTO_TEST_CASE(server_tool_names_become_names_a_model_accepts) {
    asio::io_context io;
    const std::string long_name(100, 'x');
    auto c = run(io, mcp::connect_stdio(io.get_executor(),
                                        tools_server(R"([{"name":"files.read","inputSchema":{"type":"object"}},)"
                                                     R"({"name":"a/b c","inputSchema":{"type":"object"}},)"
                                                     R"({"name":")" + long_name + R"(","inputSchema":{"type":"object"}},)"
                                                     R"({"name":"ok-name_1","inputSchema":{"type":"object"}}])"),
                                        quick()));
    lb::tool_set tools = run(io, mcp::make_toolset(c, mcp::toolset_options("s_")));
    std::vector<std::string> names;
    for (const auto& t : tools) names.push_back(t.name());
    BOOST_TEST_REQUIRE(names.size() == 4u);
    BOOST_TEST(names[0] == "s_files_read");
    BOOST_TEST(names[1] == "s_a_b_c");
    BOOST_TEST(names[2].size() == 64u);
    BOOST_TEST(names[2].starts_with("s_" + std::string(53, 'x') + "_"));
    BOOST_TEST(names[3] == "s_ok-name_1");
    for (const auto& n : names) BOOST_TEST(lb::is_valid_tool_name(n), n);
    // The same names on every run: a hash of the name, not of the moment.
    BOOST_TEST(mcp::detail::model_tool_name("s_", long_name) == names[2]);
    BOOST_TEST(mcp::detail::model_tool_name("s_", long_name + "y") != names[2]);
    BOOST_TEST(mcp::detail::model_tool_name("", "") == "");
    // A call made under the model's name reaches the server's.
    lb::scripted_model model(io.get_executor(), {lb::scripted_reply::tool_call("s_files_read", {}),
                                                 lb::scripted_reply::text("done")});
    using agent = lb::llm_agent<lb::scripted_model>;
    agent a(lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model, .tools = tools, .retry = {.max_attempts = 1}});
    lb::memory_store store(io.get_executor());
    lb::runner<agent, lb::memory_store> runner(a, store);
    auto r = lb::run_to_end(runner, lb::run_options("app", "u1", "s1"), "read");
    BOOST_TEST_REQUIRE(r.ok(), r.message());
    std::vector<lb::json::value> results;
    for (const auto& e : r.events)
        for (const auto& t : e.tool_responses()) results.push_back(t.result);
    BOOST_TEST_REQUIRE(results.size() == 1u);
    BOOST_TEST(results[0] == "called files.read");
    run(io, c->close());
}

BOOST_AUTO_TEST_CASE(a_toolset_that_cannot_be_named_is_refused_saying_why) {
    asio::io_context io;
    auto ok = run(io, mcp::connect_stdio(io.get_executor(),
                                         tools_server(R"([{"name":"echo","inputSchema":{"type":"object"}}])"), quick()));
    auto typo = fails(io, mcp::make_toolset(ok, mcp::toolset_options("", {"echo", "ecko", "list"})));
    BOOST_TEST((typo.code == lb::errc::invalid_argument), typo.code.message());
    BOOST_TEST(typo.what.find("allow names 'ecko', 'list', which the server does not list") != std::string::npos, typo.what);
    for (std::string prefix : {std::string("fs."), std::string("a b_"), std::string(33, 'p')}) {
        auto bad = fails(io, mcp::make_toolset(ok, mcp::toolset_options(prefix)));
        BOOST_TEST((bad.code == lb::errc::invalid_argument), prefix);
        BOOST_TEST(bad.what.find("toolset_options::prefix") != std::string::npos, bad.what);
    }
    BOOST_TEST(run(io, mcp::make_toolset(ok, mcp::toolset_options(std::string(32, 'p')))).size() == 1u);
    run(io, ok->close());
    auto clash = run(io, mcp::connect_stdio(io.get_executor(),
                                            tools_server(R"([{"name":"a.b","inputSchema":{"type":"object"}},)"
                                                         R"({"name":"a_b","inputSchema":{"type":"object"}}])"),
                                            quick()));
    auto both = fails(io, mcp::make_toolset(clash));
    BOOST_TEST((both.code == lb::errc::bad_response), both.code.message());
    BOOST_TEST(both.what.find("the tools 'a.b' and 'a_b' would both be 'a_b' for the model") != std::string::npos, both.what);
    // Allowing one of the two leaves nothing to clash.
    BOOST_TEST(run(io, mcp::make_toolset(clash, mcp::toolset_options("", {"a.b"}))).size() == 1u);
    run(io, clash->close());
    auto twice = run(io, mcp::connect_stdio(io.get_executor(),
                                            tools_server(R"([{"name":"x","inputSchema":{"type":"object"}},)"
                                                         R"({"name":"x","inputSchema":{"type":"object"}}])"),
                                            quick()));
    auto dup = fails(io, mcp::make_toolset(twice));
    BOOST_TEST(dup.what.find("the server lists the tool 'x' twice") != std::string::npos, dup.what);
    run(io, twice->close());
}

BOOST_AUTO_TEST_CASE(http_sends_the_headers_and_a_lost_session_ends_the_connection) {
    // A scripted HTTP exchange (fake_transport): what the client sends is recorded.
    namespace http = lb::http;
    asio::io_context io;
    http::fake_transport t(io.get_executor());
    t.push(http::fake_response::chunked(
        200, R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"f","version":"0"}}})", 0,
        {{"content-type", "application/json"}, {"mcp-session-id", "S-1"}}));
    t.push(http::fake_response{.status = 202});
    t.push(http::fake_response::chunked(
        200, "event: message\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", 7,
        {{"content-type", "text/event-stream"}}));
    t.push(http::fake_response{.status = 404});
    t.push(http::fake_response{.status = 200}); // the DELETE
    mcp::http_options ho("http://mcp.example/mcp");
    ho.headers = {{"authorization", "Bearer T-123"}};
    ho.transport = t;
    ho.open_stream = false;
    auto c = run(io, mcp::connect_http(io.get_executor(), ho, quick()));
    auto ok = run(io, c->call_tool("t", {}));
    BOOST_TEST(ok.content.at(0).at("text") == "ok");
    auto f = fails(io, c->call_tool("t", {}));
    BOOST_TEST((f.code == lb::errc::io_error), f.what);
    BOOST_TEST(f.what.find("the server ended the session (HTTP 404)") != std::string::npos, f.what);
    run(io, c->close());
    auto header = [](const http::http_request& r, std::string_view name) {
        for (const auto& h : r.headers)
            if (h.name == name) return h.value;
        return std::string("(none)");
    };
    const auto sent = t.requests();
    BOOST_TEST_REQUIRE(sent.size() == 5u);
    BOOST_TEST(sent[0].method == "POST");
    BOOST_TEST(header(sent[0], "authorization") == "Bearer T-123");
    BOOST_TEST(header(sent[0], "mcp-session-id") == "(none)");
    BOOST_TEST(header(sent[0], "accept") == "application/json, text/event-stream");
    for (std::size_t i = 1; i < 5; ++i) {
        BOOST_TEST(header(sent[i], "mcp-session-id") == "S-1");
        BOOST_TEST(header(sent[i], "mcp-protocol-version") == "2025-06-18");
        BOOST_TEST(header(sent[i], "authorization") == "Bearer T-123");
    }
    BOOST_TEST(json::parse(sent[1].body).at("method") == "notifications/initialized");
    BOOST_TEST(sent[4].method == "DELETE");
}

BOOST_AUTO_TEST_CASE(http_answers_cut_short_and_a_peers_retry_are_bounded) {
    namespace http = lb::http;
    asio::io_context io;
    http::fake_transport t(io.get_executor());
    t.push(http::fake_response::chunked(
        200, R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"f","version":"0"}}})", 0,
        {{"content-type", "application/json"}}));
    t.push(http::fake_response{.status = 202});
    // A JSON answer cut short: that request fails at once, naming why; the connection lives.
    auto cut = http::fake_response::chunked(200, R"({"jsonrpc":"2.0","id":2,"res)", 0, {{"content-type", "application/json"}});
    cut.error_after_body = asio::error::connection_reset;
    t.push(std::move(cut));
    // An event stream cut before its answer, asking for a retry of 317 years (ms past what a
    // timer holds): the resume comes after max_reconnect_delay and finds the answer.
    auto stream = http::fake_response::chunked(200, "id: e1\nretry: 9999999999999\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n", 0,
                                               {{"content-type", "text/event-stream"}});
    stream.error_after_body = asio::error::connection_reset;
    t.push(std::move(stream));
    t.push(http::fake_response::chunked(
        200, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", 0,
        {{"content-type", "text/event-stream"}}));
    mcp::http_options ho("http://mcp.example/mcp");
    ho.transport = t;
    ho.open_stream = false;
    ho.max_reconnect_delay = 50ms;
    auto c = run(io, mcp::connect_http(io.get_executor(), ho, quick(5000ms)));
    const auto before = std::chrono::steady_clock::now();
    auto f = fails(io, c->call_tool("t", {}));
    BOOST_TEST(f.what.find("reading the answer from http://mcp.example/mcp failed") != std::string::npos, f.what);
    BOOST_TEST((std::chrono::steady_clock::now() - before < 2s)); // not the request timeout
    BOOST_TEST(c->is_open());
    auto resumed = run(io, c->call_tool("t", {}));
    BOOST_TEST(resumed.content.at(0).at("text") == "resumed");
    BOOST_TEST((std::chrono::steady_clock::now() - before < 2s));
    run(io, c->close());
    const auto sent = t.requests();
    std::string methods;
    for (const auto& r : sent) methods += r.method + " ";
    BOOST_TEST_REQUIRE(sent.size() == 5u, methods); // no session: no DELETE
    BOOST_TEST(sent[4].method == "GET"); // the resume
    bool resumed_from_e1 = false;
    for (const auto& h : sent[4].headers) resumed_from_e1 = resumed_from_e1 || (h.name == "last-event-id" && h.value == "e1");
    BOOST_TEST(resumed_from_e1);
}

BOOST_AUTO_TEST_CASE(an_oversized_message_ends_the_connection) {
    asio::io_context io;
    mcp::client_options o = quick();
    o.max_message_bytes = 1000;
    auto c = run(io, mcp::connect_stdio(io.get_executor(),
                                        sh_server(R"(read -r l; printf '{"jsonrpc":"2.0","id":2,"result":{"pad":"%05000d"}}\n' 0; sleep 5)"), o));
    auto f = fails(io, c->call_tool("big", {}));
    BOOST_TEST((f.code == lb::errc::oversize), f.code.message());
    BOOST_TEST(f.what.find("longer than 1000 bytes") != std::string::npos, f.what);
}

BOOST_AUTO_TEST_CASE(a_tool_with_an_invalid_schema_is_refused) {
    asio::io_context io;
    auto c = run(io, mcp::connect_stdio(
                         io.get_executor(),
                         sh_server(R"(read -r l; printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"odd","inputSchema":{"type":"array"}}]}}'; sleep 5)"),
                         quick()));
    auto f = fails(io, c->list_tools());
    BOOST_TEST((f.code == lb::errc::bad_response), f.code.message());
    BOOST_TEST(f.what.find("tool 'odd' has no inputSchema of type \"object\"") != std::string::npos, f.what);
}

BOOST_AUTO_TEST_CASE(an_unknown_protocol_version_and_a_missing_command_are_refused) {
    asio::io_context io;
    mcp::stdio_options o;
    o.command = "/bin/sh";
    o.args = {"-c", R"(read -r l; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1999-01-01","capabilities":{}}}'; sleep 5)"};
    o.close_timeout = 200ms;
    auto f = fails(io, mcp::connect_stdio(io.get_executor(), o, quick()));
    BOOST_TEST((f.code == lb::errc::bad_response));
    BOOST_TEST(f.what.find("'1999-01-01', which this client does not speak") != std::string::npos, f.what);
    mcp::stdio_options none;
    none.command = "libretto-no-such-server";
    auto g = fails(io, mcp::connect_stdio(io.get_executor(), none, quick()));
    BOOST_TEST(g.what.find("cannot start 'libretto-no-such-server'") != std::string::npos, g.what);
    mcp::stdio_options empty;
    auto h = fails(io, mcp::connect_stdio(io.get_executor(), empty, quick()));
    BOOST_TEST((h.code == lb::errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(the_server_starts_with_the_environment_and_directory_asked_for) {
    asio::io_context io;
    temp_dir dir;
    mcp::stdio_options o;
    o.command = "/bin/sh";
    o.args = {"-c", R"sh(read -r l; printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"%s","version":"%s"},"instructions":"%s"}}\n' "$LIBRETTO_GREETING" "$(pwd)" "${HOME:-no home}"; read -r l; read -r l)sh"};
    o.env = {{"LIBRETTO_GREETING", "hello = there"}};
    o.inherit_environment = false;
    o.working_directory = dir.path.string();
    o.close_timeout = 300ms;
    auto c = run(io, mcp::connect_stdio(io.get_executor(), o, quick()));
    BOOST_TEST(c->server().name == "hello = there");
    BOOST_TEST(fs::equivalent(fs::path(c->server().version), dir.path), c->server().version);
    BOOST_TEST(c->server().instructions == "no home"); // nothing inherited
    run(io, c->close());

    // What would start the wrong thing, or fail in a way that blames the command: refused first.
    std::ofstream(dir.path / "a-file") << "x";
    const std::vector<std::pair<std::function<void(mcp::stdio_options&)>, std::string>> bad = {
        {[](auto& b) { b.env = {{"A=B", "c"}}; }, "stdio_options.env: 'A=B' is not a variable name and value"},
        {[](auto& b) { b.env = {{"", "c"}}; }, "stdio_options.env: '' is not a variable name and value"},
        {[](auto& b) { b.env = {{"A", std::string("x\0y", 3)}}; }, "stdio_options.env: 'A'"},
        {[](auto& b) { b.args.push_back(std::string("a\0b", 3)); }, "stdio_options.args: 'a...' holds a NUL byte"},
        {[&](auto& b) { b.working_directory = (dir.path / "missing").string(); },
         "stdio_options.working_directory '" + (dir.path / "missing").string() + "': No such file or directory"},
        {[&](auto& b) { b.working_directory = (dir.path / "a-file").string(); }, "' is not a directory"},
    };
    for (const auto& [set, why] : bad) {
        mcp::stdio_options b = o;
        set(b);
        auto f = fails(io, mcp::connect_stdio(io.get_executor(), b, quick()));
        BOOST_TEST(f.what.find(why) != std::string::npos, f.what);
        BOOST_TEST(f.what.find("cannot start") == std::string::npos, f.what);
    }
}

BOOST_AUTO_TEST_CASE(the_server_asks_and_gets_an_answer_or_method_not_found) {
    asio::io_context io;
    temp_dir dir;
    const fs::path heard = dir.path / "heard.jsonl";
    const std::string ask =
        R"(printf '%s\n' '{"jsonrpc":"2.0","id":"q1","method":"roots/list"}' '{"jsonrpc":"2.0","id":"q2","method":"sampling/createMessage","params":{}}' '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asked"}}'; cat > ')" +
        heard.string() + "'";
    mcp::client_options o = quick();
    o.on_request = [](std::string_view m, const json::object&) -> json::object {
        if (m == "roots/list") return {{"roots", json::array{json::object{{"uri", "file:///w"}}}}};
        throw boost::system::system_error(lb::errc::not_found);
    };
    std::vector<std::string> notes;
    o.on_notification = [&](std::string_view m, const json::object&) { notes.emplace_back(m); };
    auto c = run(io, mcp::connect_stdio(io.get_executor(), sh_server(ask), o));
    wait_until(io, [&] { return !notes.empty(); });
    BOOST_TEST_REQUIRE(notes.size() == 1u);
    BOOST_TEST(notes[0] == "notifications/message");
    run(io, c->close()); // the answers are flushed before stdin closes
    const std::string got = slurp(heard);
    BOOST_TEST(got.find(R"({"jsonrpc":"2.0","id":"q1","result":{"roots":[{"uri":"file:///w"}]}})") != std::string::npos, got);
    BOOST_TEST(got.find(R"("id":"q2","error":{"code":-32601)") != std::string::npos, got);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the real servers from npm -------------------------------------------------------------

namespace {

std::string env_or(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}


struct servers {
    std::string node;
    std::string everything; ///< server-everything's dist/index.js
    std::string filesystem; ///< server-filesystem's dist/index.js
    std::string missing;    ///< why the real-server cases are skipped
    std::string broken;     ///< npm is here but the packages are not: the cases fail with this
};

const servers& installed() {
    static const servers s = [] {
        servers s;
        s.node = mcp::find_executable("node");
        std::vector<fs::path> caches;
        if (auto c = env_or("LIBRETTO_NPM_CACHE"); !c.empty()) caches.emplace_back(c);
        const fs::path source = env_or("LIBRETTO_SOURCE_DIR").empty() ? fs::path(__FILE__).parent_path().parent_path()
                                                                        : fs::path(env_or("LIBRETTO_SOURCE_DIR"));
        caches.push_back(source / ".cache" / "npm");
        for (const auto& c : caches) {
            const fs::path base = c / "node_modules" / "@modelcontextprotocol";
            if (fs::exists(base / "server-everything" / "dist" / "index.js") &&
                fs::exists(base / "server-filesystem" / "dist" / "index.js")) {
                s.everything = (base / "server-everything" / "dist" / "index.js").string();
                s.filesystem = (base / "server-filesystem" / "dist" / "index.js").string();
                break;
            }
        }
        if (s.node.empty()) s.missing = "node is not on PATH";
        else if (s.everything.empty() && mcp::find_executable("npm").empty()) s.missing = "npm is not on PATH and the MCP servers are not installed";
        else if (s.everything.empty()) s.broken = "the MCP servers are not installed: scripts/setup installs them with npm";
        return s;
    }();
    return s;
}

boost::test_tools::assertion_result servers_available(utf::test_unit_id) {
    if (installed().missing.empty()) return true;
    static bool said = false;
    if (!said) {
        std::cerr << "mcp: SKIPPED, the real-server cases: " << installed().missing << "\n";
        said = true;
    }
    boost::test_tools::assertion_result r(false);
    r.message() << installed().missing;
    return r;
}

mcp::stdio_options everything(std::vector<std::string>* log = nullptr) {
    BOOST_TEST_REQUIRE(installed().broken.empty(), installed().broken);
    mcp::stdio_options o;
    o.command = installed().node;
    o.args = {installed().everything, "stdio"};
    if (log) o.on_stderr = [log](std::string_view line) { log->emplace_back(line); };
    return o;
}

using agent_type = lb::llm_agent<lb::scripted_model>;

} // namespace

BOOST_AUTO_TEST_SUITE(mcp_servers, *utf::precondition(servers_available))

BOOST_AUTO_TEST_CASE(server_everything_over_stdio) {
    asio::io_context io;
    std::vector<std::string> log;
    auto c = run(io, mcp::connect_stdio(io.get_executor(), everything(&log)));
    BOOST_TEST(c->server().name == "mcp-servers/everything");
    BOOST_TEST(mcp::detail::supported_version(c->server().protocol_version));
    BOOST_TEST(c->server().capabilities.contains("tools"));
    auto tools = run(io, c->list_tools());
    auto find = [&](std::string_view n) {
        for (const auto& t : tools)
            if (t.name == n) return &t;
        return static_cast<const mcp::tool_info*>(nullptr);
    };
    BOOST_TEST_REQUIRE(find("echo") != nullptr);
    BOOST_TEST(find("echo")->input_schema.at("required").as_array().front() == "message");
    BOOST_TEST_REQUIRE(find("get-structured-content") != nullptr);
    BOOST_TEST(find("get-structured-content")->output_schema.has_value());

    auto echo = run(io, c->call_tool("echo", {{"message", "hello from C++"}}));
    BOOST_TEST(!echo.is_error);
    BOOST_TEST_REQUIRE(echo.content.size() == 1u);
    BOOST_TEST(echo.content[0].at("text") == "Echo: hello from C++");
    auto sum = run(io, c->call_tool("get-sum", {{"a", 2}, {"b", 40}}));
    BOOST_TEST(sum.content[0].at("text").as_string().find("42") != std::string::npos);
    auto image = run(io, c->call_tool("get-tiny-image", {}));
    bool has_image = false;
    for (const auto& b : image.content) has_image = has_image || b.at("type") == "image";
    BOOST_TEST(has_image);
    // A call the server refuses: an unknown tool (an error result or a JSON-RPC error).
    bool refused = false;
    try {
        auto nope = run(io, c->call_tool("no-such-tool", {}));
        refused = nope.is_error;
    } catch (const boost::system::system_error&) {
        refused = true;
    }
    BOOST_TEST(refused);
    // Resources and prompts, as plain calls.
    auto resources = run(io, c->list_all("resources/list", "resources"));
    BOOST_TEST_REQUIRE(!resources.empty());
    const std::string uri(resources.at(0).at("uri").as_string());
    auto contents = run(io, c->read_resource(uri));
    BOOST_TEST_REQUIRE(contents.size() == 1u);
    BOOST_TEST(contents.at(0).at("uri").as_string() == uri);
    auto templates = run(io, c->list_all("resources/templates/list", "resourceTemplates"));
    BOOST_TEST(!templates.empty());
    auto prompts = run(io, c->list_all("prompts/list", "prompts"));
    BOOST_TEST(!prompts.empty());
    auto prompt = run(io, c->request("prompts/get", {{"name", "args-prompt"}, {"arguments", {{"city", "Oslo"}}}}));
    BOOST_TEST(json::serialize(prompt.at("messages")).find("Oslo") != std::string::npos, json::serialize(prompt));
    json::object pong = run(io, c->request("ping", {}));
    BOOST_TEST(pong.empty());
    run(io, c->close());
    BOOST_TEST(!c->is_open());
    auto after = fails(io, c->call_tool("echo", {{"message", "x"}}));
    BOOST_TEST(after.what.find("the client closed the connection") != std::string::npos, after.what);
}

BOOST_AUTO_TEST_CASE(server_filesystem_lists_a_directory) {
    BOOST_TEST_REQUIRE(installed().broken.empty(), installed().broken);
    asio::io_context io;
    temp_dir dir;
    std::ofstream(dir.path / "notes.txt") << "remember the milk\n";
    mcp::stdio_options o;
    o.command = installed().node;
    o.args = {installed().filesystem, dir.path.string()};
    auto c = run(io, mcp::connect_stdio(io.get_executor(), o));
    auto listing = run(io, c->call_tool("list_directory", {{"path", dir.path.string()}}));
    BOOST_TEST(!listing.is_error);
    BOOST_TEST(listing.content[0].at("text").as_string().find("[FILE] notes.txt") != std::string::npos);
    auto outside = run(io, c->call_tool("read_text_file", {{"path", "/etc/passwd"}}));
    BOOST_TEST(outside.is_error); // outside the allowed directory
    run(io, c->close());
}

BOOST_AUTO_TEST_CASE(an_llm_agent_calls_server_tools_through_the_runner) {
    asio::io_context io;
    auto c = run(io, mcp::connect_stdio(io.get_executor(), everything()));
    mcp::toolset_options to;
    to.prefix = "ev_";
    to.allow = {"echo", "get-tiny-image", "get-structured-content"};
    lb::tool_set tools = run(io, mcp::make_toolset(c, to));
    BOOST_TEST(tools.size() == 3u);
    lb::scripted_model model(io.get_executor(),
                             {lb::scripted_reply::tool_call("ev_echo", {{"message", "ping"}}),
                              lb::scripted_reply::tool_call("ev_get-tiny-image", {}),
                              lb::scripted_reply::tool_call("ev_get-structured-content", {{"location", "New York"}}),
                              lb::scripted_reply::text("done")});
    agent_type agent(lb::llm_agent_options<lb::scripted_model>{.name = "assistant", .model = model, .tools = tools, .retry = {.max_attempts = 1}});
    lb::memory_store store(io.get_executor());
    lb::runner<agent_type, lb::memory_store> runner(agent, store);
    auto r = lb::run_to_end(runner, lb::run_options("app", "u1", "s1"), "use the tools");
    BOOST_TEST_REQUIRE(r.ok(), r.message());
    std::vector<const lb::tool_response_part*> responses;
    const lb::event* image_event = nullptr;
    for (const auto& e : r.events)
        for (const auto& t : e.tool_responses()) {
            responses.push_back(&t);
            if (t.tool_name == "ev_get-tiny-image") image_event = &e;
        }
    BOOST_TEST_REQUIRE(responses.size() == 3u);
    BOOST_TEST(responses[0]->result == "Echo: ping");
    BOOST_TEST(!responses[0]->error);
    BOOST_TEST_REQUIRE(image_event != nullptr);
    bool attached = false;
    for (const auto& p : image_event->content.parts)
        if (const auto* f = std::get_if<lb::file_part>(&p)) attached = f->mime_type.value_or("") == "image/png" && f->inline_bytes;
    BOOST_TEST(attached);
    BOOST_TEST(responses[2]->result.is_object(), lb::json::serialize(responses[2]->result)); // structuredContent
    run(io, c->close());
}


namespace {

/// A loopback port nothing listens on right now (the kernel's pick for port 0).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

/// server-everything in Streamable HTTP mode on a free port, stopped (SIGTERM, then SIGKILL)
/// when this goes away.
struct http_everything {
    asio::io_context& io;
    mcp::detail::child_process proc;
    int port = free_port();
    explicit http_everything(asio::io_context& io) : io(io), proc(io.get_executor()) {
        mcp::detail::spawn_spec s{installed().node, {installed().everything, "streamableHttp"}, {{"PORT", std::to_string(port)}}, true, {}};
        std::string what;
        BOOST_TEST_REQUIRE(!proc.start(s, what), what);
        // Ready when it says so on stderr.
        std::string err;
        bool ready = false;
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            for (;;) {
                auto [ec, n] = co_await asio::async_read_until(proc.stderr_pipe(), asio::dynamic_buffer(err), '\n', asio::as_tuple(asio::use_awaitable));
                if (ec) co_return;
                if (err.find("listening on port") != std::string::npos) {
                    ready = true;
                    co_return;
                }
            }
        }, asio::detached);
        wait_until(io, [&] { return ready; });
        BOOST_TEST_REQUIRE(ready, "server-everything (streamableHttp) did not start: " << err);
    }
    ~http_everything() {
        proc.signal(SIGTERM);
        for (int i = 0; i < 100 && !proc.try_reap(); ++i) ::usleep(10'000);
        proc.kill_now();
    }
    std::string url(std::string path = "/mcp") const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

} // namespace

BOOST_AUTO_TEST_CASE(server_everything_over_streamable_http) {
    asio::io_context io;
    http_everything server(io);
    mcp::client_options co;
    std::vector<json::object> progress;
    co.on_progress = [&](const json::object& p) { progress.push_back(p); };
    mcp::http_options ho(server.url());
    auto c = run(io, mcp::connect_http(io.get_executor(), ho, co));
    BOOST_TEST(c->server().name == "mcp-servers/everything");
    auto tools = run(io, c->list_tools());
    BOOST_TEST(tools.size() >= 10u);
    auto echo = run(io, c->call_tool("echo", {{"message", "over HTTP"}}));
    BOOST_TEST(echo.content.at(0).at("text") == "Echo: over HTTP");
    // Progress comes in the call's own event stream, before the result.
    auto slow = run(io, c->request("tools/call", {{"name", "trigger-long-running-operation"},
                                                  {"arguments", {{"duration", 1}, {"steps", 2}}},
                                                  {"_meta", {{"progressToken", "p1"}}}}));
    BOOST_TEST(!slow.contains("isError"));
    BOOST_TEST(progress.size() == 2u);
    if (!progress.empty()) BOOST_TEST(progress.front().at("progressToken") == "p1");
    // Concurrent calls on the one session.
    std::vector<std::string> answers;
    for (int i = 0; i < 3; ++i)
        asio::co_spawn(io, [&, i]() -> asio::awaitable<void> {
            json::object args; // named: g++ 12 mis-compiles a braced json::object in a coroutine lambda
            args["message"] = std::to_string(i);
            auto r = co_await c->call_tool("echo", std::move(args));
            answers.push_back(std::string(r.content.at(0).at("text").as_string()));
        }, asio::detached);
    wait_until(io, [&] { return answers.size() == 3; });
    BOOST_TEST(answers.size() == 3u);
    run(io, c->close()); // DELETE: the session is gone at the server
    BOOST_TEST(!c->is_open());
}

BOOST_AUTO_TEST_CASE(http_failures_are_clear_errors) {
    asio::io_context io;
    http_everything server(io);
    mcp::http_options wrong(server.url("/not-mcp"));
    auto f = fails(io, mcp::connect_http(io.get_executor(), wrong, quick()));
    BOOST_TEST(f.what.find("initialize: the server answered error -32000: HTTP 404 from " + server.url("/not-mcp")) != std::string::npos, f.what);
    mcp::http_options closed("http://127.0.0.1:" + std::to_string(free_port()) + "/mcp");
    auto g = fails(io, mcp::connect_http(io.get_executor(), closed, quick()));
    BOOST_TEST(g.what.find("the HTTP request to http://127.0.0.1:") != std::string::npos, g.what);
    mcp::http_options bad("ftp://example.com/mcp");
    auto h = fails(io, mcp::connect_http(io.get_executor(), bad, quick()));
    BOOST_TEST((h.code == lb::errc::invalid_argument));
}

BOOST_AUTO_TEST_SUITE_END()
