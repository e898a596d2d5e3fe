// Prelude "coro": the body of a coroutine (asio::awaitable<void>), for fragments of a program.
// The names the doc pages' fragments use without declaring them exist here as parameters; a
// block may declare the same names again (it is compiled in a nested scope).
#include "support.hpp"

namespace lb = libretto;
namespace lh = libretto::http;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

struct weather_args {
    std::string city;
};
BOOST_DESCRIBE_STRUCT(weather_args, (), (city))
asio::awaitable<json::value> get_weather(weather_args args, lb::tool_context& ctx);

struct app_config {
    std::string kind;          // "window" or "budget"
    bool summary_model = false;
};

void handle(const lb::llm_response& response);

asio::awaitable<void> snippet(
    asio::io_context& io, asio::any_io_executor ex,
    // sessions and stores
    lb::any_store& store, lb::session& session, lb::session& s, std::shared_ptr<lb::session> session_ptr,
    lb::session_key key, lb::session_key key_of_session, lb::create_options opts,
    lb::event ev, lb::event reply, lb::event_compaction c, std::vector<lb::event> turn_events, lb::event_span range,
    std::int64_t last_stored,
    // models and agents
    lb::scripted_model& model, lb::scripted_model& cheap_model, lb::scripted_model& m,
    lb::llm_request request, lb::llm_request req2, std::vector<lb::message> messages,
    lb::tool_declaration weather_declaration, std::optional<std::string> prev_summary,
    lb::llm_agent<>& agent, lb::llm_agent<>& assistant, lb::llm_agent<>& summarizer,
    lb::llm_agent<>& researcher_a, lb::llm_agent<>& researcher_b, lb::llm_agent<>& critic,
    lb::llm_agent<>& editor, lb::sequential_agent<lb::llm_agent<>, lb::llm_agent<>>& pipeline,
    lb::invocation_context& ctx, lb::runner<lb::llm_agent<>, lb::memory_store>& runner,
    // a provider's codec: the SSE events of a response (name, data), its status and headers
    lb::stream_writer<lb::llm_chunk> out, std::vector<std::pair<std::string, std::string>> events,
    int status, std::string retry_after_header, std::string retry_after_ms_header,
    // compaction, signing
    lb::sliding_window my_compaction, lb::ed25519_signer& my_signer, lb::ed25519_signer& signer,
    lb::ed25519_key host_key, lb::ed25519_key researcher_key, lb::ed25519_key writer_key,
    app_config cfg) {
    {
// @snippet
    }
    co_return;
}
