// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_MODEL_TOOL_DECLARATION_HPP
#define LIBRETTO_MODEL_TOOL_DECLARATION_HPP

// What a model is told about a tool: the meeting point of the tool layer (which produces
// declarations) and the model layer (which sends them to a provider).

#include <boost/json/object.hpp>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

/// The tools of a request: a list of declarations whose copies share one immutable vector
/// until one of them is changed (copy on write). An agent sends the same declarations,
/// JSON schemas included, with every request; copying the request copies a pointer.
/// Every accessor is const, so reading never copies; push_back, reserve and edit() give the
/// list a vector of its own first (`list.edit()[0].description = ...` changes one entry).
class tool_list {
public:
    using value_type = tool_declaration;
    using size_type = std::size_t;
    using const_iterator = std::vector<tool_declaration>::const_iterator;
    using iterator = const_iterator;

    tool_list() = default;
    tool_list(std::initializer_list<tool_declaration> ts) : tool_list(std::vector<tool_declaration>(ts)) {}
    tool_list(std::vector<tool_declaration> ts)
        : p_(ts.empty() ? nullptr : std::make_shared<std::vector<tool_declaration>>(std::move(ts))) {}

    size_type size() const noexcept { return p_ ? p_->size() : 0; }
    bool empty() const noexcept { return size() == 0; }
    const_iterator begin() const noexcept { return vec().begin(); }
    const_iterator end() const noexcept { return vec().end(); }
    const tool_declaration& operator[](size_type i) const noexcept { return (*p_)[i]; }
    const tool_declaration& at(size_type i) const { return vec().at(i); }
    const tool_declaration& front() const noexcept { return p_->front(); }
    const tool_declaration& back() const noexcept { return p_->back(); }
    /// The declarations as a vector (shared: valid while this list is unchanged).
    const std::vector<tool_declaration>& vec() const noexcept { return p_ ? *p_ : empty_vector(); }
    /// True when `other` shares this list's vector (a copy not changed since).
    bool shares_with(const tool_list& other) const noexcept { return p_ && p_ == other.p_; }

    /// The list's own vector, to change at will (copied first if it is shared).
    std::vector<tool_declaration>& edit() {
        if (!p_) {
            p_ = std::make_shared<std::vector<tool_declaration>>();
        } else if (p_.use_count() > 1) {
            p_ = std::make_shared<std::vector<tool_declaration>>(*p_);
        }
        return *p_; // not shared: changing it changes this list only
    }
    void push_back(tool_declaration d) { edit().push_back(std::move(d)); }
    void reserve(size_type n) { edit().reserve(n); }
    void clear() noexcept { p_.reset(); }

    friend bool operator==(const tool_list& a, const tool_list& b) {
        return a.p_ == b.p_ || a.vec() == b.vec();
    }

private:
    static const std::vector<tool_declaration>& empty_vector() noexcept {
        static const std::vector<tool_declaration> none;
        return none;
    }

    std::shared_ptr<std::vector<tool_declaration>> p_; // never changed while shared
};

} // namespace libretto

#endif
