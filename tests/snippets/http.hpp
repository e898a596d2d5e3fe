// Prelude "http" (docs/http.md): a coroutine body with an executor `ex`, an API `key`, a
// request `body` and a `handle(event, data)` for each server-sent event.
#include "support.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

void handle(std::string_view event, std::string_view data);

asio::awaitable<void> snippet(asio::any_io_executor ex, std::string key, std::string body) {
    {
// @snippet
    }
    co_return;
}
