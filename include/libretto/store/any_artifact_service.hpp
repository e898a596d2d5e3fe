// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_ANY_ARTIFACT_SERVICE_HPP
#define LIBRETTO_STORE_ANY_ARTIFACT_SERVICE_HPP

// any_artifact_service: any artifact_service model behind one type, with whole-blob calls
// (a string in, a string out) beside the chunked ones, and the asynchronous operations (any
// completion token; default libretto::default_completion_token_t):
//
//   async_save(key, std::string data, mime_type, metadata[, diag])    -> void(error_code, artifact_info)
//   async_save_from(key, artifact_source, mime_type, metadata[, diag]) -> void(error_code, artifact_info)
//   async_load(key, std::optional<std::int64_t> version[, diag])       -> void(error_code, std::optional<artifact>)
//   async_load_to(key, version, artifact_sink[, diag])                -> void(error_code, std::optional<artifact_info>)
//   async_list(app, user, session[, diag])                             -> void(error_code, std::vector<std::string>)
//   async_versions(key[, diag])                                        -> void(error_code, std::vector<artifact_info>)
//   async_delete(key[, diag])                                          -> void(error_code)
//
// A blocking model runs on a worker strand (a one-thread pool the service owns, or a strand
// on the given executor); the source and sink of the chunked calls run there too. Copies
// share the model. A moved-from service is empty (operator bool is false): every call fails
// with asio::error::not_connected and "any_artifact_service: empty (moved-from)" in the
// diagnostics, never inside the initiating call; get_executor() is empty.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/store/artifact_service.hpp>
#include <libretto/store/detail/service_call.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <algorithm>
#include <concepts>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

namespace detail {

struct artifact_iface {
    virtual ~artifact_iface() = default;
    virtual boost::system::error_code save(const artifact_key& k, artifact_source& in, std::string_view mime,
                                           const json::object& md, artifact_info& out, diagnostics* d) = 0;
    virtual boost::system::error_code load(const artifact_key& k, std::optional<std::int64_t> v, artifact_sink& out,
                                           std::optional<artifact_info>& info, diagnostics* d) = 0;
    virtual boost::system::error_code list(const std::string& app, const std::string& user, const std::string& session,
                                           std::vector<std::string>& names, diagnostics* d) = 0;
    virtual boost::system::error_code versions(const artifact_key& k, std::vector<artifact_info>& out, diagnostics* d) = 0;
    virtual boost::system::error_code remove(const artifact_key& k, diagnostics* d) = 0;
};

template <class S>
struct artifact_model final : artifact_iface {
    explicit artifact_model(S s) : service(std::move(s)) {}
    boost::system::error_code save(const artifact_key& k, artifact_source& in, std::string_view mime,
                                   const json::object& md, artifact_info& out, diagnostics* d) override {
        return service.artifact_save(k, in, mime, md, out, d);
    }
    boost::system::error_code load(const artifact_key& k, std::optional<std::int64_t> v, artifact_sink& out,
                                   std::optional<artifact_info>& info, diagnostics* d) override {
        return service.artifact_load(k, v, out, info, d);
    }
    boost::system::error_code list(const std::string& app, const std::string& user, const std::string& session,
                                   std::vector<std::string>& names, diagnostics* d) override {
        return service.artifact_list(app, user, session, names, d);
    }
    boost::system::error_code versions(const artifact_key& k, std::vector<artifact_info>& out, diagnostics* d) override {
        return service.artifact_versions(k, out, d);
    }
    boost::system::error_code remove(const artifact_key& k, diagnostics* d) override { return service.artifact_delete(k, d); }
    S service;
};

/// A source over bytes held in memory.
inline artifact_source source_of(std::string_view data) {
    return [data](char* buf, std::size_t n) mutable {
        const std::size_t k = std::min(n, data.size());
        std::memcpy(buf, data.data(), k);
        data.remove_prefix(k);
        return k;
    };
}

} // namespace detail

class any_artifact_service : public detail::basic_service_handle<detail::artifact_iface> {
public:
    /// Wraps `service`. `blocking_executor`: where a blocking model's calls run (through a
    /// strand); empty: a one-thread pool of the service's own.
    template <artifact_service S>
        requires(!std::same_as<std::decay_t<S>, any_artifact_service>)
    any_artifact_service(executor_type ex, S service, executor_type blocking_executor = {})
        : basic_service_handle("any_artifact_service: empty (moved-from)", std::move(ex), std::make_shared<detail::artifact_model<S>>(std::move(service)), S::blocking,
                               std::move(blocking_executor)) {}

    // ---- synchronous: blocks for a blocking model; safe to mix with the async operations.
    boost::system::error_code save(const artifact_key& k, std::string_view data, std::string_view mime_type,
                                   const json::object& metadata, artifact_info& out, diagnostics* d = nullptr) {
        artifact_source in = detail::source_of(data);
        return impl_ ? impl_->save(k, in, mime_type, metadata, out, d) : empty_error(d);
    }
    boost::system::error_code save_from(const artifact_key& k, artifact_source& in, std::string_view mime_type,
                                        const json::object& metadata, artifact_info& out, diagnostics* d = nullptr) {
        return impl_ ? impl_->save(k, in, mime_type, metadata, out, d) : empty_error(d);
    }
    boost::system::error_code load(const artifact_key& k, std::optional<std::int64_t> version,
                                   std::optional<artifact>& out, diagnostics* d = nullptr) {
        return impl_ ? load_whole(*impl_, k, version, out, d) : empty_error(d);
    }
    boost::system::error_code load_to(const artifact_key& k, std::optional<std::int64_t> version, artifact_sink& out,
                                      std::optional<artifact_info>& info, diagnostics* d = nullptr) {
        return impl_ ? impl_->load(k, version, out, info, d) : empty_error(d);
    }
    boost::system::error_code list(const std::string& app, const std::string& user, const std::string& session,
                                   std::vector<std::string>& names, diagnostics* d = nullptr) {
        return impl_ ? impl_->list(app, user, session, names, d) : empty_error(d);
    }
    boost::system::error_code versions(const artifact_key& k, std::vector<artifact_info>& out, diagnostics* d = nullptr) {
        return impl_ ? impl_->versions(k, out, d) : empty_error(d);
    }
    boost::system::error_code remove(const artifact_key& k, diagnostics* d = nullptr) {
        return impl_ ? impl_->remove(k, d) : empty_error(d);
    }

    // ---- asynchronous
    template <boost::asio::completion_token_for<artifact_save_signature> Token = default_completion_token_t>
    auto async_save(artifact_key k, std::string data, std::string mime_type, json::object metadata, diagnostics& d,
                    Token&& token = {}) {
        return save_op(&d, std::move(k), std::move(data), std::move(mime_type), std::move(metadata), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_save_signature> Token = default_completion_token_t>
    auto async_save(artifact_key k, std::string data, std::string mime_type, json::object metadata = {}, Token&& token = {}) {
        return save_op(nullptr, std::move(k), std::move(data), std::move(mime_type), std::move(metadata),
                       std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_save_signature> Token = default_completion_token_t>
    auto async_save_from(artifact_key k, artifact_source in, std::string mime_type, json::object metadata, diagnostics& d,
                         Token&& token = {}) {
        return start<artifact_save_signature>(
            &d, std::forward<Token>(token),
            [k = std::move(k), in = std::move(in), mime = std::move(mime_type),
             md = std::move(metadata)](detail::artifact_iface& s, diagnostics* d) mutable {
                artifact_info out;
                auto ec = s.save(k, in, mime, md, out, d);
                return std::make_tuple(ec, std::move(out));
            });
    }
    template <boost::asio::completion_token_for<artifact_load_signature> Token = default_completion_token_t>
    auto async_load(artifact_key k, std::optional<std::int64_t> version, diagnostics& d, Token&& token = {}) {
        return load_op(&d, std::move(k), version, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_load_signature> Token = default_completion_token_t>
    auto async_load(artifact_key k, std::optional<std::int64_t> version = {}, Token&& token = {}) {
        return load_op(nullptr, std::move(k), version, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_load_to_signature> Token = default_completion_token_t>
    auto async_load_to(artifact_key k, std::optional<std::int64_t> version, artifact_sink out, diagnostics& d,
                       Token&& token = {}) {
        return start<artifact_load_to_signature>(
            &d, std::forward<Token>(token),
            [k = std::move(k), version, out = std::move(out)](detail::artifact_iface& s, diagnostics* d) mutable {
                std::optional<artifact_info> info;
                auto ec = s.load(k, version, out, info, d);
                return std::make_tuple(ec, std::move(info));
            });
    }
    template <boost::asio::completion_token_for<artifact_list_signature> Token = default_completion_token_t>
    auto async_list(std::string app, std::string user, std::string session, diagnostics& d, Token&& token = {}) {
        return list_op(&d, std::move(app), std::move(user), std::move(session), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_list_signature> Token = default_completion_token_t>
    auto async_list(std::string app, std::string user, std::string session, Token&& token = {}) {
        return list_op(nullptr, std::move(app), std::move(user), std::move(session), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_versions_signature> Token = default_completion_token_t>
    auto async_versions(artifact_key k, diagnostics& d, Token&& token = {}) {
        return versions_op(&d, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_versions_signature> Token = default_completion_token_t>
    auto async_versions(artifact_key k, Token&& token = {}) {
        return versions_op(nullptr, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_delete_signature> Token = default_completion_token_t>
    auto async_delete(artifact_key k, diagnostics& d, Token&& token = {}) {
        return delete_op(&d, std::move(k), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<artifact_delete_signature> Token = default_completion_token_t>
    auto async_delete(artifact_key k, Token&& token = {}) {
        return delete_op(nullptr, std::move(k), std::forward<Token>(token));
    }

private:
    static boost::system::error_code load_whole(detail::artifact_iface& s, const artifact_key& k,
                                                std::optional<std::int64_t> version, std::optional<artifact>& out,
                                                diagnostics* d) {
        out.reset();
        std::string bytes;
        artifact_sink sink = [&](std::string_view chunk) { bytes.append(chunk); };
        std::optional<artifact_info> info;
        auto ec = s.load(k, version, sink, info, d);
        if (!ec && info) out.emplace(artifact{std::move(*info), std::move(bytes)});
        return ec;
    }

    template <class Token>
    auto save_op(diagnostics* d, artifact_key k, std::string data, std::string mime, json::object md, Token&& token) {
        return start<artifact_save_signature>(
            d, std::forward<Token>(token),
            [k = std::move(k), data = std::move(data), mime = std::move(mime),
             md = std::move(md)](detail::artifact_iface& s, diagnostics* d) {
                artifact_info out;
                artifact_source in = detail::source_of(data);
                auto ec = s.save(k, in, mime, md, out, d);
                return std::make_tuple(ec, std::move(out));
            });
    }
    template <class Token>
    auto load_op(diagnostics* d, artifact_key k, std::optional<std::int64_t> version, Token&& token) {
        return start<artifact_load_signature>(d, std::forward<Token>(token),
                                              [k = std::move(k), version](detail::artifact_iface& s, diagnostics* d) {
                                                  std::optional<artifact> out;
                                                  auto ec = load_whole(s, k, version, out, d);
                                                  return std::make_tuple(ec, std::move(out));
                                              });
    }
    template <class Token>
    auto list_op(diagnostics* d, std::string app, std::string user, std::string session, Token&& token) {
        return start<artifact_list_signature>(
            d, std::forward<Token>(token),
            [app = std::move(app), user = std::move(user), session = std::move(session)](detail::artifact_iface& s,
                                                                                        diagnostics* d) {
                std::vector<std::string> names;
                auto ec = s.list(app, user, session, names, d);
                return std::make_tuple(ec, std::move(names));
            });
    }
    template <class Token>
    auto versions_op(diagnostics* d, artifact_key k, Token&& token) {
        return start<artifact_versions_signature>(d, std::forward<Token>(token),
                                                  [k = std::move(k)](detail::artifact_iface& s, diagnostics* d) {
                                                      std::vector<artifact_info> out;
                                                      auto ec = s.versions(k, out, d);
                                                      return std::make_tuple(ec, std::move(out));
                                                  });
    }
    template <class Token>
    auto delete_op(diagnostics* d, artifact_key k, Token&& token) {
        return start<artifact_delete_signature>(d, std::forward<Token>(token),
                                                [k = std::move(k)](detail::artifact_iface& s, diagnostics* d) {
                                                    return std::make_tuple(s.remove(k, d));
                                                });
    }
};

} // namespace libretto

#endif
