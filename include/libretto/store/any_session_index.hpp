// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_ANY_SESSION_INDEX_HPP
#define LIBRETTO_STORE_ANY_SESSION_INDEX_HPP

// any_session_index: any session_index model behind one type, with the asynchronous
// operations (any completion token; default libretto::default_completion_token_t):
//
//   async_get(app, key[, diag])          -> void(error_code, std::optional<conversation_entry>)
//   async_put(entry[, diag])             -> void(error_code)
//   async_patch(app, key, patch[, diag]) -> void(error_code, conversation_entry)
//   async_list(query[, diag])            -> void(error_code, std::vector<conversation_entry>)
//   async_erase(app, key[, diag])        -> void(error_code)
//   async_replace(app, entries[, diag])  -> void(error_code)
//
// A blocking model (files, SQLite, PostgreSQL) runs on a worker strand (a one-thread pool
// the index owns, or a strand on the given blocking executor), so the caller's thread never
// waits; a memory model runs in the initiating call. Completions go through the handler's
// associated executor (default: the index's). Copies share the model. A moved-from index
// is empty (operator bool is false): every call fails with asio::error::not_connected and
// "any_session_index: empty (moved-from)" in the diagnostics, never inside the initiating
// call; get_executor() is empty.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/store/detail/service_call.hpp>
#include <libretto/store/session_index.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <concepts>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

namespace detail {

struct index_iface {
    virtual ~index_iface() = default;
    virtual boost::system::error_code get(const std::string& app, const std::string& key,
                                          std::optional<conversation_entry>& out, diagnostics* d) = 0;
    virtual boost::system::error_code put(const conversation_entry& e, diagnostics* d) = 0;
    virtual boost::system::error_code patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                            conversation_entry& out, diagnostics* d) = 0;
    virtual boost::system::error_code list(const conversation_query& q, std::vector<conversation_entry>& out,
                                           diagnostics* d) = 0;
    virtual boost::system::error_code erase(const std::string& app, const std::string& key, diagnostics* d) = 0;
    virtual boost::system::error_code replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                              diagnostics* d) = 0;
};

template <class S>
struct index_model final : index_iface {
    explicit index_model(S s) : index(std::move(s)) {}
    boost::system::error_code get(const std::string& app, const std::string& key,
                                  std::optional<conversation_entry>& out, diagnostics* d) override {
        return index.index_get(app, key, out, d);
    }
    boost::system::error_code put(const conversation_entry& e, diagnostics* d) override { return index.index_put(e, d); }
    boost::system::error_code patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                    conversation_entry& out, diagnostics* d) override {
        return index.index_patch(app, key, p, out, d);
    }
    boost::system::error_code list(const conversation_query& q, std::vector<conversation_entry>& out,
                                   diagnostics* d) override {
        return index.index_list(q, out, d);
    }
    boost::system::error_code erase(const std::string& app, const std::string& key, diagnostics* d) override {
        return index.index_erase(app, key, d);
    }
    boost::system::error_code replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                      diagnostics* d) override {
        return index.index_replace(app, entries, d);
    }
    S index;
};

} // namespace detail

using index_get_signature = void(boost::system::error_code, std::optional<conversation_entry>);
using index_put_signature = void(boost::system::error_code);
using index_patch_signature = void(boost::system::error_code, conversation_entry);
using index_list_signature = void(boost::system::error_code, std::vector<conversation_entry>);

class any_session_index : public detail::basic_service_handle<detail::index_iface> {
public:
    /// Wraps `index`. `blocking_executor`: where a blocking model's calls run (through a
    /// strand); empty: a one-thread pool of the index's own.
    template <session_index S>
        requires(!std::same_as<std::decay_t<S>, any_session_index>)
    any_session_index(executor_type ex, S index, executor_type blocking_executor = {})
        : basic_service_handle("any_session_index: empty (moved-from)", std::move(ex), std::make_shared<detail::index_model<S>>(std::move(index)), S::blocking,
                               std::move(blocking_executor)) {}

    // ---- synchronous: blocks for a blocking model; safe to mix with the async operations.
    boost::system::error_code get(const std::string& app, const std::string& key, std::optional<conversation_entry>& out,
                                  diagnostics* d = nullptr) {
        return impl_ ? impl_->get(app, key, out, d) : empty_error(d);
    }
    boost::system::error_code put(const conversation_entry& e, diagnostics* d = nullptr) {
        return impl_ ? impl_->put(e, d) : empty_error(d);
    }
    boost::system::error_code patch(const std::string& app, const std::string& key, const conversation_patch& p,
                                    conversation_entry& out, diagnostics* d = nullptr) {
        return impl_ ? impl_->patch(app, key, p, out, d) : empty_error(d);
    }
    boost::system::error_code list(const conversation_query& q, std::vector<conversation_entry>& out,
                                   diagnostics* d = nullptr) {
        return impl_ ? impl_->list(q, out, d) : empty_error(d);
    }
    boost::system::error_code erase(const std::string& app, const std::string& key, diagnostics* d = nullptr) {
        return impl_ ? impl_->erase(app, key, d) : empty_error(d);
    }
    boost::system::error_code replace(const std::string& app, const std::vector<conversation_entry>& entries,
                                      diagnostics* d = nullptr) {
        return impl_ ? impl_->replace(app, entries, d) : empty_error(d);
    }

    // ---- asynchronous
    template <boost::asio::completion_token_for<index_get_signature> Token = default_completion_token_t>
    auto async_get(std::string app, std::string key, diagnostics& d, Token&& token = {}) {
        return get_op(&d, std::move(app), std::move(key), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_get_signature> Token = default_completion_token_t>
    auto async_get(std::string app, std::string key, Token&& token = {}) {
        return get_op(nullptr, std::move(app), std::move(key), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_put_signature> Token = default_completion_token_t>
    auto async_put(conversation_entry e, diagnostics& d, Token&& token = {}) {
        return put_op(&d, std::move(e), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_put_signature> Token = default_completion_token_t>
    auto async_put(conversation_entry e, Token&& token = {}) {
        return put_op(nullptr, std::move(e), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_patch_signature> Token = default_completion_token_t>
    auto async_patch(std::string app, std::string key, conversation_patch p, diagnostics& d, Token&& token = {}) {
        return patch_op(&d, std::move(app), std::move(key), std::move(p), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_patch_signature> Token = default_completion_token_t>
    auto async_patch(std::string app, std::string key, conversation_patch p, Token&& token = {}) {
        return patch_op(nullptr, std::move(app), std::move(key), std::move(p), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_list_signature> Token = default_completion_token_t>
    auto async_list(conversation_query q, diagnostics& d, Token&& token = {}) {
        return list_op(&d, std::move(q), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_list_signature> Token = default_completion_token_t>
    auto async_list(conversation_query q, Token&& token = {}) {
        return list_op(nullptr, std::move(q), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_put_signature> Token = default_completion_token_t>
    auto async_erase(std::string app, std::string key, diagnostics& d, Token&& token = {}) {
        return erase_op(&d, std::move(app), std::move(key), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_put_signature> Token = default_completion_token_t>
    auto async_erase(std::string app, std::string key, Token&& token = {}) {
        return erase_op(nullptr, std::move(app), std::move(key), std::forward<Token>(token));
    }

    template <boost::asio::completion_token_for<index_put_signature> Token = default_completion_token_t>
    auto async_replace(std::string app, std::vector<conversation_entry> entries, diagnostics& d, Token&& token = {}) {
        return replace_op(&d, std::move(app), std::move(entries), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<index_put_signature> Token = default_completion_token_t>
    auto async_replace(std::string app, std::vector<conversation_entry> entries, Token&& token = {}) {
        return replace_op(nullptr, std::move(app), std::move(entries), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto get_op(diagnostics* d, std::string app, std::string key, Token&& token) {
        return start<index_get_signature>(d, std::forward<Token>(token),
                                          [app = std::move(app), key = std::move(key)](detail::index_iface& i, diagnostics* d) {
                                              std::optional<conversation_entry> out;
                                              auto ec = i.get(app, key, out, d);
                                              return std::make_tuple(ec, std::move(out));
                                          });
    }
    template <class Token>
    auto put_op(diagnostics* d, conversation_entry e, Token&& token) {
        return start<index_put_signature>(d, std::forward<Token>(token),
                                          [e = std::move(e)](detail::index_iface& i, diagnostics* d) {
                                              return std::make_tuple(i.put(e, d));
                                          });
    }
    template <class Token>
    auto patch_op(diagnostics* d, std::string app, std::string key, conversation_patch p, Token&& token) {
        return start<index_patch_signature>(
            d, std::forward<Token>(token),
            [app = std::move(app), key = std::move(key), p = std::move(p)](detail::index_iface& i, diagnostics* d) {
                conversation_entry out;
                auto ec = i.patch(app, key, p, out, d);
                return std::make_tuple(ec, std::move(out));
            });
    }
    template <class Token>
    auto list_op(diagnostics* d, conversation_query q, Token&& token) {
        return start<index_list_signature>(d, std::forward<Token>(token),
                                           [q = std::move(q)](detail::index_iface& i, diagnostics* d) {
                                               std::vector<conversation_entry> out;
                                               auto ec = i.list(q, out, d);
                                               return std::make_tuple(ec, std::move(out));
                                           });
    }
    template <class Token>
    auto erase_op(diagnostics* d, std::string app, std::string key, Token&& token) {
        return start<index_put_signature>(d, std::forward<Token>(token),
                                          [app = std::move(app), key = std::move(key)](detail::index_iface& i, diagnostics* d) {
                                              return std::make_tuple(i.erase(app, key, d));
                                          });
    }
    template <class Token>
    auto replace_op(diagnostics* d, std::string app, std::vector<conversation_entry> entries, Token&& token) {
        return start<index_put_signature>(
            d, std::forward<Token>(token),
            [app = std::move(app), entries = std::move(entries)](detail::index_iface& i, diagnostics* d) {
                return std::make_tuple(i.replace(app, entries, d));
            });
    }
};

} // namespace libretto

#endif
