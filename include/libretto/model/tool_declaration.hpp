// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_TOOL_DECLARATION_HPP
#define LIBRETTO_MODEL_TOOL_DECLARATION_HPP

// What a model is told about a tool: the meeting point of the tool layer (which produces
// declarations) and the model layer (which sends them to a provider).

#include <boost/json/object.hpp>

#include <string>

namespace libretto {

namespace json = boost::json;

/// A tool as the model sees it. `parameters` is a JSON Schema object (type "object"
/// with "properties" and "required"), the shape both OpenAI and Anthropic accept.
struct tool_declaration {
    std::string name{};
    std::string description{};
    json::object parameters{};
    /// The call pauses the invocation until its response arrives from outside (the
    /// runner resumes it); the model is told so in the description by the agent.
    bool long_running = false;

    friend bool operator==(const tool_declaration&, const tool_declaration&) = default;
};

} // namespace libretto

#endif
