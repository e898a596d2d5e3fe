// Uses libretto through an installed package (find_package(libretto), libretto::libretto).
// Exit status 0 means every check passed; each failure prints one line to stderr.
#include <libretto/libretto.hpp>

#include <boost/system/error_code.hpp>

#include <cstdio>
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

} // namespace

int main() {
    check_error_codes();
    check_events();
    if (failures == 0)
        std::puts("consumer: ok");
    return failures == 0 ? 0 : 1;
}
