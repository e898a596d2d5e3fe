// Prelude "stream" (docs/event_stream.md): a coroutine body with a stream `s` of `T` and an
// event producer's writer `out`.
#include "support.hpp"

namespace lb = libretto;
namespace asio = boost::asio;

using T = std::string;

asio::awaitable<void> snippet(lb::basic_event_stream<T>& s, lb::stream_writer<lb::event> out) {
    {
// @snippet
    }
    co_return;
}
