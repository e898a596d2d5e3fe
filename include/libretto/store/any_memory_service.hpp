// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_ANY_MEMORY_SERVICE_HPP
#define LIBRETTO_STORE_ANY_MEMORY_SERVICE_HPP

// any_memory_service: any memory_service model behind one type, with the asynchronous
// operations (any completion token; default libretto::default_completion_token_t):
//
//   async_add(app, user, session, std::vector<event>[, diag])  -> void(error_code, std::size_t added)
//   async_add_session(const session&[, diag])                   -> void(error_code, std::size_t added)
//   async_search(memory_query[, diag])                          -> void(error_code, std::vector<memory_entry>)
//   async_erase_session(app, user, session[, diag])             -> void(error_code)
//
// A blocking model runs on a worker strand (a one-thread pool the service owns, or a strand
// on the given executor). Copies share the model. A moved-from service is empty (operator
// bool is false): every call fails with asio::error::not_connected and "any_memory_service:
// empty (moved-from)" in the diagnostics, never inside the initiating call; get_executor()
// is empty.

#include <libretto/async.hpp>
#include <libretto/detail/async_op.hpp>
#include <libretto/diagnostics.hpp>
#include <libretto/session/session.hpp>
#include <libretto/store/detail/service_call.hpp>
#include <libretto/store/memory_service.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <concepts>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

namespace detail {

struct memory_iface {
    virtual ~memory_iface() = default;
    virtual boost::system::error_code add(const std::string& app, const std::string& user, const std::string& session,
                                          event_span events, std::size_t& added, diagnostics* d) = 0;
    virtual boost::system::error_code search(const memory_query& q, std::vector<memory_entry>& out, diagnostics* d) = 0;
    virtual boost::system::error_code erase(const std::string& app, const std::string& user, const std::string& session,
                                            diagnostics* d) = 0;
};

template <class S>
struct memory_model final : memory_iface {
    explicit memory_model(S s) : service(std::move(s)) {}
    boost::system::error_code add(const std::string& app, const std::string& user, const std::string& session,
                                  event_span events, std::size_t& added, diagnostics* d) override {
        return service.memory_add(app, user, session, events, added, d);
    }
    boost::system::error_code search(const memory_query& q, std::vector<memory_entry>& out, diagnostics* d) override {
        return service.memory_search(q, out, d);
    }
    boost::system::error_code erase(const std::string& app, const std::string& user, const std::string& session,
                                    diagnostics* d) override {
        return service.memory_erase_session(app, user, session, d);
    }
    S service;
};

} // namespace detail

class any_memory_service : public detail::basic_service_handle<detail::memory_iface> {
public:
    template <memory_service S>
        requires(!std::same_as<std::decay_t<S>, any_memory_service>)
    any_memory_service(executor_type ex, S service, executor_type blocking_executor = {})
        : basic_service_handle("any_memory_service: empty (moved-from)", std::move(ex), std::make_shared<detail::memory_model<S>>(std::move(service)), S::blocking,
                               std::move(blocking_executor)) {}

    // ---- synchronous: blocks for a blocking model.
    boost::system::error_code add(const std::string& app, const std::string& user, const std::string& session,
                                  event_span events, std::size_t& added, diagnostics* d = nullptr) {
        return impl_ ? impl_->add(app, user, session, events, added, d) : empty_error(d);
    }
    boost::system::error_code search(const memory_query& q, std::vector<memory_entry>& out, diagnostics* d = nullptr) {
        return impl_ ? impl_->search(q, out, d) : empty_error(d);
    }
    boost::system::error_code erase_session(const std::string& app, const std::string& user, const std::string& session,
                                            diagnostics* d = nullptr) {
        return impl_ ? impl_->erase(app, user, session, d) : empty_error(d);
    }

    // ---- asynchronous
    template <boost::asio::completion_token_for<memory_add_signature> Token = default_completion_token_t>
    auto async_add(std::string app, std::string user, std::string session, std::vector<event> events, diagnostics& d,
                   Token&& token = {}) {
        return add_op(&d, std::move(app), std::move(user), std::move(session), std::move(events), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_add_signature> Token = default_completion_token_t>
    auto async_add(std::string app, std::string user, std::string session, std::vector<event> events, Token&& token = {}) {
        return add_op(nullptr, std::move(app), std::move(user), std::move(session), std::move(events),
                      std::forward<Token>(token));
    }
    /// Adds every event of `s` (a copy is taken: the session may change meanwhile).
    template <boost::asio::completion_token_for<memory_add_signature> Token = default_completion_token_t>
    auto async_add_session(const session& s, diagnostics& d, Token&& token = {}) {
        return add_op(&d, s.app_name, s.user_id, s.id, std::vector<event>(s.events.begin(), s.events.end()),
                      std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_add_signature> Token = default_completion_token_t>
    auto async_add_session(const session& s, Token&& token = {}) {
        return add_op(nullptr, s.app_name, s.user_id, s.id, std::vector<event>(s.events.begin(), s.events.end()),
                      std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_search_signature> Token = default_completion_token_t>
    auto async_search(memory_query q, diagnostics& d, Token&& token = {}) {
        return search_op(&d, std::move(q), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_search_signature> Token = default_completion_token_t>
    auto async_search(memory_query q, Token&& token = {}) {
        return search_op(nullptr, std::move(q), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_erase_signature> Token = default_completion_token_t>
    auto async_erase_session(std::string app, std::string user, std::string session, diagnostics& d, Token&& token = {}) {
        return erase_op(&d, std::move(app), std::move(user), std::move(session), std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<memory_erase_signature> Token = default_completion_token_t>
    auto async_erase_session(std::string app, std::string user, std::string session, Token&& token = {}) {
        return erase_op(nullptr, std::move(app), std::move(user), std::move(session), std::forward<Token>(token));
    }

private:
    template <class Token>
    auto add_op(diagnostics* d, std::string app, std::string user, std::string session, std::vector<event> events,
                Token&& token) {
        return start<memory_add_signature>(d, std::forward<Token>(token),
                                           [app = std::move(app), user = std::move(user), session = std::move(session),
                                            events = std::move(events)](detail::memory_iface& s, diagnostics* d) {
                                               std::size_t added = 0;
                                               auto ec = s.add(app, user, session, event_span(events), added, d);
                                               return std::make_tuple(ec, added);
                                           });
    }
    template <class Token>
    auto search_op(diagnostics* d, memory_query q, Token&& token) {
        return start<memory_search_signature>(d, std::forward<Token>(token),
                                              [q = std::move(q)](detail::memory_iface& s, diagnostics* d) {
                                                  std::vector<memory_entry> out;
                                                  auto ec = s.search(q, out, d);
                                                  return std::make_tuple(ec, std::move(out));
                                              });
    }
    template <class Token>
    auto erase_op(diagnostics* d, std::string app, std::string user, std::string session, Token&& token) {
        return start<memory_erase_signature>(d, std::forward<Token>(token),
                                             [app = std::move(app), user = std::move(user),
                                              session = std::move(session)](detail::memory_iface& s, diagnostics* d) {
                                                 return std::make_tuple(s.erase(app, user, session, d));
                                             });
    }
};

} // namespace libretto

#endif
