// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_TOOL_TOOL_SET_HPP
#define LIBRETTO_TOOL_TOOL_SET_HPP

#include <libretto/error.hpp>
#include <libretto/tool/any_tool.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libretto {

/// The tools an agent offers, in the order they are declared to the model, looked up by
/// name. Names are unique and valid (is_valid_tool_name); adding a tool that breaks
/// either rule throws system_error(errc::invalid_argument) and leaves the set unchanged.
class tool_set {
public:
    using value_type = any_tool;
    using const_iterator = std::vector<any_tool>::const_iterator;

    tool_set() = default;
    tool_set(std::initializer_list<any_tool> ts) : tool_set(std::vector<any_tool>(ts)) {}
    explicit tool_set(std::vector<any_tool> ts) {
        tools_.reserve(ts.size());
        by_name_.reserve(ts.size());
        for (auto& t : ts) add(std::move(t));
    }

    /// Appends `t`. Throws system_error(errc::invalid_argument) if its name is taken or
    /// not a valid tool name.
    void add(any_tool t) {
        const std::string& n = t.name();
        if (!is_valid_tool_name(n))
            throw boost::system::system_error(
                make_error_code(errc::invalid_argument),
                "invalid tool name '" + n + "' (1 to 64 characters from A-Z a-z 0-9 _ -)");
        auto pos = lower_bound(n);
        if (pos != by_name_.end() && tools_[*pos].name() == n)
            throw boost::system::system_error(make_error_code(errc::invalid_argument), "duplicate tool name '" + n + "'");
        auto offset = pos - by_name_.begin();
        tools_.push_back(std::move(t));
        try {
            by_name_.insert(by_name_.begin() + offset, tools_.size() - 1);
        } catch (...) {
            tools_.pop_back();
            throw;
        }
    }

    /// The tool called `name`, or nullptr.
    const any_tool* find(std::string_view name) const noexcept {
        auto pos = lower_bound(name);
        if (pos != by_name_.end() && tools_[*pos].name() == name) return &tools_[*pos];
        return nullptr;
    }
    bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }

    std::size_t size() const noexcept { return tools_.size(); }
    bool empty() const noexcept { return tools_.empty(); }
    const_iterator begin() const noexcept { return tools_.begin(); }
    const_iterator end() const noexcept { return tools_.end(); }
    const any_tool& operator[](std::size_t i) const noexcept { return tools_[i]; }

    /// What the model is told, in declaration order.
    std::vector<tool_declaration> declarations() const {
        std::vector<tool_declaration> out;
        out.reserve(tools_.size());
        for (const auto& t : tools_) out.push_back(t.declaration());
        return out;
    }

    /// The tool names, in declaration order.
    std::vector<std::string_view> names() const {
        std::vector<std::string_view> out;
        out.reserve(tools_.size());
        for (const auto& t : tools_) out.emplace_back(t.name());
        return out;
    }

private:
    std::vector<std::size_t>::const_iterator lower_bound(std::string_view name) const noexcept {
        return std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                [this](std::size_t i, std::string_view n) { return tools_[i].name() < n; });
    }

    std::vector<any_tool> tools_;
    std::vector<std::size_t> by_name_; ///< indices into tools_, sorted by name
};

/// A tool_set of `ts`, in this order: `tools(function_tool(...), my_tool{}, ...)`.
/// Throws system_error(errc::invalid_argument) on a duplicate or invalid name.
template <class... T>
    requires(tool<std::remove_cvref_t<T>> && ...)
tool_set tools(T&&... ts) {
    std::vector<any_tool> v;
    v.reserve(sizeof...(T));
    (v.emplace_back(std::forward<T>(ts)), ...);
    return tool_set(std::move(v));
}

} // namespace libretto

#endif
