// Uses libretto through an installed package (find_package(libretto), libretto::libretto), and
// once more through libretto::compiled (separate compilation: the provider's generation is then
// defined in the compiled library, not in this file).
// Exit status 0 means every check passed; each failure prints one line to stderr.
#include <libretto/libretto.hpp>
#ifndef LIBRETTO_CONSUMER_NO_PROVIDER
#include <libretto/http/fake_transport.hpp>
#include <libretto/provider/openai_model.hpp>
#endif

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <boost/system/error_code.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>
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

// The event model, its JSON form and the context view, through the umbrella header only.
void check_events() {
    namespace lb = libretto;
    std::vector<lb::event> events;
    for (int i = 1; i <= 3; ++i) {
        lb::event e = lb::event::make(lb::event_type::user_message, "user", lb::content::from_text("m" + std::to_string(i)));
        e.sequence = i;
        events.push_back(e);
    }
    lb::event summary = lb::event::make(lb::event_type::agent_message, "agent");
    summary.sequence = 4;
    summary.actions.compaction = lb::event_compaction{1, 2, 0, 0, "first two", 2};
    events.push_back(summary);

    auto back = lb::parse_event(lb::serialize_event(events[0]));
    check(back.has_value() && *back == events[0], "an event survives serialize_event/parse_event");
    auto bad = lb::parse_event("{\"id\":1}");
    check(!bad.has_value() && bad.error().path == "id", "a bad event names its field");

    auto view = lb::make_context_view(events);
    check(view.size() == 2, "the context view shows the summary and the newest message");
    check(view.size() == 2 && view[1].text() == "m3", "the newest message is last");
}

#ifndef LIBRETTO_CONSUMER_NO_PROVIDER
// An openai_model over a scripted transport: one streamed answer, decoded.
void check_provider() {
    namespace lb = libretto;
    boost::asio::io_context io;
    lb::http::fake_transport http(io.get_executor());
    http.push(lb::http::fake_response::chunked(
        200,
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n",
        7));
    lb::openai_model model{http, lb::openai_options{.api_key = "sk-test", .model = "gpt-test"}};
    lb::llm_request request;
    request.messages.push_back(lb::message::user("hi"));
    std::string text;
    std::optional<lb::llm_response> final;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
            lb::llm_stream s = model.generate(std::move(request));
            while (std::optional<lb::llm_chunk> c = co_await s.next()) {
                if (c->final) final = std::move(*c->final);
                else text += c->text;
            }
        },
        boost::asio::detached);
    io.run();
    check(text == "Hello", "openai_model streams the scripted text");
    check(final.has_value() && final->ok(), "openai_model ends with a successful final response");
    check(http.requests().size() == 1 && http.requests()[0].url == "https://api.openai.com/v1/chat/completions",
          "openai_model sends one request to the chat completions URL");
}
#endif

} // namespace

int main() {
    check_error_codes();
    check_events();
#ifndef LIBRETTO_CONSUMER_NO_PROVIDER
    check_provider();
#endif
    if (failures == 0)
        std::puts("consumer: ok");
    return failures == 0 ? 0 : 1;
}
