// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_SESSION_STATE_HPP
#define LIBRETTO_SESSION_STATE_HPP

// Session state and its scopes. A key's prefix decides where it lives:
//   "app:k"   shared by every session of the app
//   "user:k"  shared by every session of that user in the app
//   "temp:k"  this invocation only, never persisted
//   "k"       this session
// A null value in a delta deletes the key.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace libretto {

namespace json = boost::json;

enum class state_scope { session, app, user, temp };

inline constexpr std::string_view app_prefix = "app:";
inline constexpr std::string_view user_prefix = "user:";
inline constexpr std::string_view temp_prefix = "temp:";

/// The scope a key belongs to, from its prefix.
constexpr state_scope scope_of(std::string_view key) noexcept {
    if (key.starts_with(app_prefix)) return state_scope::app;
    if (key.starts_with(user_prefix)) return state_scope::user;
    if (key.starts_with(temp_prefix)) return state_scope::temp;
    return state_scope::session;
}

/// Why `key` cannot name a state value, or "" if it can: an empty key, or a scope prefix
/// with no name after it ("app:" would be stored as the app's empty key).
inline std::string state_key_problem(std::string_view key) {
    if (key.empty()) return "a state key is empty";
    for (std::string_view prefix : {app_prefix, user_prefix, temp_prefix})
        if (key == prefix) return "state key '" + std::string(key) + "' names a scope but no key";
    return {};
}

/// The key without its scope prefix ("app:x" -> "x"; "x" -> "x").
constexpr std::string_view unprefixed(std::string_view key) noexcept {
    switch (scope_of(key)) {
    case state_scope::app: return key.substr(app_prefix.size());
    case state_scope::user: return key.substr(user_prefix.size());
    case state_scope::temp: return key.substr(temp_prefix.size());
    case state_scope::session: break;
    }
    return key;
}

/// A delta split by scope. Keys keep their prefixes, so each part can be applied to a
/// merged state view directly; stores strip them where they keep scopes apart.
struct scoped_delta {
    json::object app;
    json::object user;
    json::object session;
    json::object temp;
};

inline scoped_delta split_delta(const json::object& delta) {
    scoped_delta out;
    for (const auto& kv : delta) {
        switch (scope_of(kv.key())) {
        case state_scope::app: out.app.emplace(kv.key(), kv.value()); break;
        case state_scope::user: out.user.emplace(kv.key(), kv.value()); break;
        case state_scope::temp: out.temp.emplace(kv.key(), kv.value()); break;
        case state_scope::session: out.session.emplace(kv.key(), kv.value()); break;
        }
    }
    return out;
}

/// The delta without its temp: keys: what may be persisted.
inline json::object without_temp(const json::object& delta) {
    json::object out;
    for (const auto& kv : delta)
        if (scope_of(kv.key()) != state_scope::temp) out.emplace(kv.key(), kv.value());
    return out;
}

/// Applies `delta` to `target`: each key is set, and a null value erases the key.
inline void apply_delta(json::object& target, const json::object& delta) {
    for (const auto& kv : delta) {
        if (kv.value().is_null())
            target.erase(kv.key());
        else
            target[kv.key()] = kv.value();
    }
}

/// A key-value state (a JSON object) with scope-aware helpers. Values are never null:
/// setting null erases.
class state {
public:
    state() = default;
    explicit state(json::object initial) : values_(std::move(initial)) {
        // Null values mean "absent"; normalise so find() and size() agree.
        for (auto it = values_.begin(); it != values_.end();)
            it = it->value().is_null() ? values_.erase(it) : std::next(it);
    }

    /// The value of `key`, or nullptr.
    const json::value* find(std::string_view key) const noexcept { return values_.if_contains(key); }
    bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

    /// Sets `key`; a null value erases it.
    void set(std::string_view key, json::value v) {
        if (v.is_null())
            values_.erase(key);
        else
            values_[key] = std::move(v);
    }
    void erase(std::string_view key) { values_.erase(key); }

    /// Applies a delta (null erases).
    void apply(const json::object& delta) { apply_delta(values_, delta); }

    /// Removes every temp: key (the end of an invocation).
    void clear_temp() {
        for (auto it = values_.begin(); it != values_.end();)
            it = scope_of(it->key()) == state_scope::temp ? values_.erase(it) : std::next(it);
    }

    const json::object& values() const noexcept { return values_; }
    std::size_t size() const noexcept { return values_.size(); }
    bool empty() const noexcept { return values_.empty(); }
    auto begin() const noexcept { return values_.begin(); }
    auto end() const noexcept { return values_.end(); }

private:
    json::object values_;
};

} // namespace libretto

#endif
