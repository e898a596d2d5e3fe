// Prelude "ns": namespace scope, with the aliases every doc page uses (lb, asio, json, lh) and
// the chrono literals. For blocks of declarations: structs, functions, globals.
#include "support.hpp"

namespace lb = libretto;
namespace lh = libretto::http;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

// @snippet
