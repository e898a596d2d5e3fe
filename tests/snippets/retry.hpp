// Prelude "retry" (docs/providers.md): the body of a model's coroutine that returns the
// response, with `one_attempt()` (one HTTP exchange) and `sleep_for(pause)`.
#include "support.hpp"

namespace lb = libretto;
namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<lb::llm_response> one_attempt();
asio::awaitable<void> sleep_for(std::chrono::milliseconds pause);

asio::awaitable<lb::llm_response> snippet() {
// @snippet
}
