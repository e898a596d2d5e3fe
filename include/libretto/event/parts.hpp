// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_EVENT_PARTS_HPP
#define LIBRETTO_EVENT_PARTS_HPP

#include <libretto/event/boxed_optional.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace libretto {

namespace json = boost::json;

/// Plain text from the user or the model.
struct text_part {
    std::string text;
    json::object metadata;
    friend bool operator==(const text_part&, const text_part&) = default;
};

/// Model reasoning ("extended thinking"); never sent back as answer text.
struct thinking_part {
    std::string thinking;
    json::object metadata;
    friend bool operator==(const thinking_part&, const thinking_part&) = default;
};

/// A structured JSON object (structured output, tool-produced data).
struct data_part {
    json::object data;
    json::object metadata;
    friend bool operator==(const data_part&, const data_part&) = default;
};

/// A file by reference (`uri`) or inline (`inline_bytes`, base64).
struct file_part {
    boxed_optional<std::string> uri;
    boxed_optional<std::string> inline_bytes;
    boxed_optional<std::string> mime_type;
    boxed_optional<std::string> name;
    json::object metadata;
    friend bool operator==(const file_part&, const file_part&) = default;
};

/// A model's request to run a tool.
struct tool_call_part {
    std::string tool_call_id;
    std::string tool_name;
    json::object args;
    json::object metadata;
    friend bool operator==(const tool_call_part&, const tool_call_part&) = default;
};

/// The outcome of a tool call: `result` on success, `error` when the tool failed.
struct tool_response_part {
    std::string tool_call_id;
    std::string tool_name;
    json::value result;               ///< any JSON; null when absent
    boxed_optional<std::string> error; ///< set when the call failed
    json::object metadata;
    friend bool operator==(const tool_response_part&, const tool_response_part&) = default;
};

using part = std::variant<text_part, thinking_part, data_part, file_part, tool_call_part, tool_response_part>;

/// The payload of an event: an optional role and an ordered list of parts.
struct content {
    boxed_optional<std::string> role;
    std::vector<part> parts;

    static content from_text(std::string text) {
        content c;
        c.parts.emplace_back(text_part{std::move(text), {}});
        return c;
    }
    static content from_thinking(std::string thinking) {
        content c;
        c.parts.emplace_back(thinking_part{std::move(thinking), {}});
        return c;
    }
    static content from_data(json::object data) {
        content c;
        c.parts.emplace_back(data_part{std::move(data), {}});
        return c;
    }

    bool empty() const noexcept { return parts.empty(); }
    friend bool operator==(const content&, const content&) = default;
};

/// A read-only, allocation-free view of the parts of one alternative `T`
/// (e.g. every tool_call_part of an event), in content order.
template <class T>
class part_view {
public:
    using base_iterator = std::vector<part>::const_iterator;

    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = const T*;
        using reference = const T&;

        iterator() = default;
        iterator(base_iterator it, base_iterator end) : it_(it), end_(end) { skip(); }
        reference operator*() const { return *std::get_if<T>(&*it_); }
        pointer operator->() const { return std::get_if<T>(&*it_); }
        iterator& operator++() {
            ++it_;
            skip();
            return *this;
        }
        iterator operator++(int) {
            auto t = *this;
            ++*this;
            return t;
        }
        friend bool operator==(const iterator& a, const iterator& b) { return a.it_ == b.it_; }

    private:
        void skip() {
            while (it_ != end_ && !std::holds_alternative<T>(*it_)) ++it_;
        }
        base_iterator it_{};
        base_iterator end_{};
    };

    explicit part_view(const std::vector<part>& parts) noexcept : parts_(&parts) {}
    iterator begin() const { return {parts_->begin(), parts_->end()}; }
    iterator end() const { return {parts_->end(), parts_->end()}; }
    bool empty() const { return begin() == end(); }
    std::size_t size() const { return static_cast<std::size_t>(std::distance(begin(), end())); }
    /// The first matching part; precondition: !empty().
    const T& front() const { return *begin(); }

private:
    const std::vector<part>* parts_;
};

} // namespace libretto

#endif
