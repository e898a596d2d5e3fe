// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_IMPL_JSONL_STORE_IPP
#define LIBRETTO_STORE_IMPL_JSONL_STORE_IPP

// jsonl_store's functions that are not templates, with the engine they use: inline in a
// header-only build, compiled once by <libretto/src.hpp> with LIBRETTO_SEPARATE_COMPILATION.

#include <libretto/detail/deadline.hpp>
#include <libretto/store/detail/jsonl_engine.hpp>
#include <libretto/store/jsonl_store.hpp>

#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace libretto {

struct jsonl_store::pool_owner {
    boost::asio::thread_pool pool;
    explicit pool_owner(std::size_t n) : pool(n) {}
    ~pool_owner() { pool.join(); } // finish queued operations and lock-linger timers
};

LIBRETTO_DECL jsonl_store::jsonl_store(executor_type ex, jsonl_store_options o) : ex_(std::move(ex)) {
    for (auto [name, d] : {std::pair{"lock_timeout", o.lock_timeout}, {"lock_linger", o.lock_linger},
                           {"stale_lock_age", o.stale_lock_age}})
        if (auto why = detail::negative_duration_problem(name, d); !why.empty())
            throw boost::system::system_error(make_error_code(errc::invalid_argument), "jsonl_store: " + why);
    boost::asio::any_io_executor blocking;
    if (o.blocking_executor) {
        blocking = *o.blocking_executor;
    } else {
        pool_ = std::make_shared<pool_owner>(std::max<std::size_t>(o.threads, 1));
        blocking = pool_->pool.get_executor();
    }
    impl_ = std::make_shared<detail::jsonl::engine>(std::move(o), std::move(blocking));
}

LIBRETTO_DECL const jsonl_store_options& jsonl_store::options() const { return impl_->opt; }

LIBRETTO_DECL boost::system::error_code jsonl_store::create(create_options o, session& out, diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->create(diag, std::move(o), out);
}

LIBRETTO_DECL boost::system::error_code jsonl_store::get(const session_key& k, const get_options& o,
                                                  std::optional<session>& out, diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->get(diag, k, o, out);
}

LIBRETTO_DECL boost::system::error_code jsonl_store::list(const list_options& o, list_page& out, diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->list(diag, o, out);
}

LIBRETTO_DECL boost::system::error_code jsonl_store::remove(const session_key& k, diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->remove(diag, k);
}

LIBRETTO_DECL boost::system::error_code jsonl_store::append(session& s, event e, std::int64_t& sequence,
                                                     diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->append(diag, s, std::move(e), sequence);
}

LIBRETTO_DECL boost::system::error_code jsonl_store::flush(const session_key& k, diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->flush(diag, k);
}

LIBRETTO_DECL boost::system::error_code jsonl_store::maintain(const jsonl_maintenance_options& o,
                                                       jsonl_maintenance_report& r, diagnostics* diag) {
    if (diag) diag->clear();
    return impl_->maintain(diag, o, r);
}

LIBRETTO_DECL std::vector<jsonl_recovery> jsonl_store::recoveries() const { return impl_->recoveries(); }
LIBRETTO_DECL jsonl_read_stats jsonl_store::last_read_stats() const { return impl_->last_read_stats(); }

// ---- the engine's operations, for the templates in impl/jsonl_store.hpp ----------------

LIBRETTO_DECL const boost::asio::any_io_executor& jsonl_store::blocking_executor(const engine& e) noexcept {
    return e.blocking;
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_create(engine& e, diagnostics* d, create_options o,
                                                                   session& out) {
    return e.create(d, std::move(o), out);
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_get(engine& e, diagnostics* d, const session_key& k,
                                                                const get_options& o, std::optional<session>& out) {
    return e.get(d, k, o, out);
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_list(engine& e, diagnostics* d, const list_options& o,
                                                                 list_page& out) {
    return e.list(d, o, out);
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_remove(engine& e, diagnostics* d, const session_key& k) {
    return e.remove(d, k);
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_flush(engine& e, diagnostics* d, const session_key& k) {
    return e.flush(d, k);
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_maintain(engine& e, diagnostics* d,
                                                                     const jsonl_maintenance_options& o,
                                                                     jsonl_maintenance_report& r) {
    return e.maintain(d, o, r);
}
LIBRETTO_DECL boost::system::error_code jsonl_store::engine_append(engine& e, diagnostics* d, session& s,
                                                                   std::shared_ptr<event> node, std::int64_t& seq) {
    return e.append(d, s, std::move(node), seq);
}
LIBRETTO_DECL bool jsonl_store::engine_try_append_inline(engine& e, diagnostics* d, session& s,
                                                         std::shared_ptr<event>& node, std::int64_t& seq,
                                                         boost::system::error_code& ec) {
    return e.try_append_inline(d, s, node, seq, ec);
}

} // namespace libretto

#endif
