// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_STORE_DETAIL_JSONL_WRITE_HPP
#define LIBRETTO_STORE_DETAIL_JSONL_WRITE_HPP

// jsonl_store's write path: create, delete, append (on the pool, or inline on the caller's
// thread when the lock is held and no fsync is due), flush, and taking back a failed append.
// Apart from the engine so that what an acknowledged write means is read in one place.

#include <libretto/store/detail/jsonl_engine.hpp>

#include <libretto/event/json.hpp>
#include <libretto/session/state.hpp>
#include <libretto/store/detail/jsonl_file.hpp>
#include <libretto/store/detail/jsonl_format.hpp>
#include <libretto/store/detail/store_logic.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include <fcntl.h>
#include <sys/stat.h>

namespace libretto::detail::jsonl {

inline error_code engine::create(diagnostics* d, create_options o, session& out) {
    if (auto ec = detail::validate_key(o.app_name, o.user_id, o.session_id.empty() ? "-" : o.session_id))
        return bad_key(d, ec, detail::key_problem(o.app_name, o.user_id, o.session_id.empty() ? "-" : o.session_id));
    if (auto why = detail::state_problem(o.state); !why.empty()) return bad_key(d, errc::invalid_argument, why);
    if (o.session_id.empty()) o.session_id = event::new_id();
    const session_key k{o.app_name, o.user_id, o.session_id};
    auto routed = detail::route_delta(o.state);
    const fs::path sdir = session_dir(k);
    if (auto ec = make_dirs(d, sdir.parent_path())) return ec;
    if (::mkdir(sdir.c_str(), 0755) != 0) {
        if (errno != EEXIST) return io_fail(d, errno_code(), sdir, "mkdir");
        std::error_code fec;
        if (fs::exists(sdir / "transcript.jsonl", fec)) return errc::already_exists;
        // A directory without a transcript: an interrupted create, or one in progress
        // (its creator holds the lock).
    }
    std::shared_ptr<open_session> sp;
    std::unique_lock<std::mutex> lk;
    lock_entry(k, sp, lk);
    // Whatever this instance had open under this key is gone: start afresh.
    sp->data.reset();
    sp->lock.close();
    sp->cp = {};
    sp->unsynced = false;
    lock_holder h;
    auto ec = sp->lock.acquire(sdir / "lock", lock_opt, nonce, &h, [this, p = sp.get()] { release_idle_leases(p); });
    if (ec == errc::busy) return errc::already_exists; // its creator holds it
    if (ec == errc::not_found) return io_fail(d, errno_code(ENOENT), sdir, "session directory vanished");
    if (ec) return io_fail(d, ec, sdir / "lock", "lock");
    ec = create_locked(d, k, routed, sp, out);
    after_write(sp, false);
    if (ec) {
        if (!sp->data) sp->lock.release();
        return ec;
    }
    lk.unlock();
    return {};
}

inline error_code engine::create_locked(diagnostics* d, const session_key& k,
                                        const detail::routed_delta& routed,
                                        const std::shared_ptr<open_session>& sp, session& out) {
    const fs::path sdir = sp->dir;
    error_code ec;
    std::error_code fec;
    if (fs::exists(sdir / "transcript.jsonl", fec)) return errc::already_exists;
    header h_;
    h_.app_name = k.app_name;
    h_.user_id = k.user_id;
    h_.session_id = k.session_id;
    h_.file_id = event::new_id();
    h_.created = unix_now();
    for (const auto& kv : routed.session)
        if (!kv.value().is_null()) h_.state[kv.key()] = kv.value();
    const std::string line = header_line(h_);
    const fs::path tp = sdir / "transcript.jsonl";
    // A failure once the transcript is in place takes it back: without its transcript the
    // session does not exist, so an error means "not created" and a retry creates it.
    auto unmake = [&] {
        std::error_code rfec;
        fs::remove(tp, rfec);
        if (durable()) (void)fsync_dir(sdir);
    };
    bool renamed = false;
    if (auto e = write_file_atomic(tp, line, durable(), nonce, &renamed)) {
        if (renamed) unmake(); // only the directory's fsync failed
        return io_fail(d, e, tp, "create transcript");
    }
    if (durable())
        if (auto e = fsync_dir(sdir.parent_path())) {
            unmake();
            return io_fail(d, e, sdir.parent_path(), "fsync");
        }
    if (auto e = write_shared_scopes(d, k, routed)) {
        unmake();
        return e;
    }
    // Install the open session.
    auto f = std::make_shared<file>(file::open(tp, O_RDWR | O_APPEND, ec));
    if (ec) return io_fail(d, ec, tp, "open");
    struct stat st;
    if (::fstat(f->get(), &st) != 0) return io_fail(d, errno_code(), tp, "fstat");
    sp->data = std::move(f);
    sp->dev = st.st_dev;
    sp->ino = st.st_ino;
    checkpoint cp;
    cp.file_id = h_.file_id;
    cp.header_end = cp.covered = line.size();
    cp.created = cp.last_update = h_.created;
    cp.state = h_.state;
    sp->cp = std::move(cp);
    sp->checkpointed = 0;
    index_entry ie{k.user_id, k.session_id, static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                   mtime_ns(st), h_.created, h_.created, 0};
    json::object app_state, user_state;
    if (auto e = read_shared(d, app_dir(k.app_name) / "state.json", app_state)) return e;
    if (auto e = read_shared(d, user_dir(k.app_name, k.user_id) / "state.json", user_state)) return e;
    out = make_session(k, sp->cp, app_state, user_state);
    index_update(k.app_name, &ie, nullptr);
    return {};
}

inline error_code engine::remove(diagnostics* d, const session_key& k,
                                 std::optional<std::chrono::milliseconds> timeout) {
    if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
    const fs::path sdir = session_dir(k);
    std::shared_ptr<open_session> sp;
    std::unique_lock<std::mutex> lk;
    lock_entry(k, sp, lk);
    std::error_code fec;
    if (!fs::exists(sdir, fec)) {
        forget(sp);
        return {};
    }
    if (!sp->lock.held()) {
        auto ec = take_lock(d, *sp, timeout);
        if (ec == errc::not_found) {
            forget(sp);
            return {};
        }
        if (ec) return ec;
    }
    const fs::path trash = root / ".trash";
    fs::create_directories(trash, fec);
    const fs::path dst = trash / event::new_id();
    if (::rename(sdir.c_str(), dst.c_str()) != 0) {
        auto e = errno_code();
        if (e != boost::system::errc::no_such_file_or_directory) {
            after_write(sp, false);
            return io_fail(d, e, sdir, "rename to trash");
        }
    }
    if (durable()) fsync_dir(sdir.parent_path());
    forget(sp);
    lk.unlock();
    fs::remove_all(dst, fec);
    index_update(k.app_name, nullptr, &k);
    return {};
}

/// A partial event is not stored (sequence 0).
inline error_code engine::append(diagnostics* d, session& caller, event e, std::int64_t& seq) {
    return append(d, caller, std::make_shared<event>(std::move(e)), seq);
}

/// append(), with the event in the node the caller's session keeps on success.
inline error_code engine::append(diagnostics* d, session& caller, std::shared_ptr<event> node,
                                 std::int64_t& seq) {
    seq = 0;
    if (node->partial) return {};
    const session_key k{caller.app_name, caller.user_id, caller.id};
    if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
    std::shared_ptr<open_session> sp;
    std::unique_lock<std::mutex> lk;
    if (auto ec = enter(d, k, true, sp, lk)) return ec;
    if (!sp) return errc::not_found;
    auto ec = append_locked(d, *sp, caller, node, seq);
    after_write(sp, false);
    return ec;
}

/// The fast path: true if it ran (result in ec/seq), false to go through the pool.
/// `node` is left alone when it returns false.
inline bool engine::try_append_inline(diagnostics* d, session& caller, std::shared_ptr<event>& node,
                                      std::int64_t& seq, error_code& ec) {
    if (!opt.inline_appends || opt.durability == durability::per_event) return false;
    const event& e = *node;
    if (e.partial) {
        seq = 0;
        ec = {};
        return true;
    }
    for (const auto& kv : e.actions.state_delta) {
        const auto sc = scope_of(kv.key());
        if (sc == state_scope::app || sc == state_scope::user) return false; // shared files: fsync
    }
    // No id check here: only sessions opened with valid ids are in `sessions`, and a key
    // not found takes the slow path, which checks and reports it.
    std::shared_ptr<open_session> sp;
    {
        std::lock_guard g(mu);
        auto it = sessions.find(std::tie(caller.app_name, caller.user_id, caller.id));
        if (it == sessions.end()) return false;
        sp = it->second;
        sp->touch = ++touch_;
    }
    std::unique_lock l(sp->mu, std::try_to_lock);
    if (!l || sp->closed || !sp->data || !sp->lock.held()) return false;
    ec = append_locked(d, *sp, caller, node, seq);
    after_write(sp, true);
    return true;
}

inline error_code engine::flush(diagnostics* d, const session_key& k) {
    if (auto ec = detail::validate_key(k)) return bad_key(d, ec, detail::key_problem(k));
    if (auto sp = lookup(k, false)) {
        std::unique_lock l(sp->mu);
        if (!sp->closed && sp->data) {
            if (sp->unsynced) {
                if (auto ec = fdatasync_fd(sp->data->get())) return io_fail(d, ec, sp->transcript, "fdatasync");
                sp->unsynced = false;
            }
            checkpoint_if_worth_it(*sp);
            return {};
        }
    }
    error_code ec;
    const fs::path tp = session_dir(k) / "transcript.jsonl";
    file f = file::open(tp, O_RDONLY, ec);
    if (ec == boost::system::errc::no_such_file_or_directory) return errc::not_found;
    if (ec) return io_fail(d, ec, tp, "open");
    if (auto e = fdatasync_fd(f.get())) return io_fail(d, e, tp, "fdatasync");
    return {};
}

/// Under s.mu and the writer lock, caught up.
/// On success the caller's session keeps `node` (the event as stored).
inline error_code engine::append_locked(diagnostics* d, open_session& s, session& caller,
                                        std::shared_ptr<event>& node, std::int64_t& seq) {
    event& e = *node;
    detail::routed_delta routed;
    if (auto ec = detail::prepare_append(caller, e, s.cp.last_sequence, routed))
        return bad_key(d, ec, detail::append_refusal(caller, e, s.cp.last_sequence));
    // The line is built in a buffer of this thread, reused from append to append: the
    // body, then (in place of its closing brace) the checksum member and '\n'.
    thread_local std::string line;
    line.clear();
    if (auto f = detail::append_event_json(line, e)) {
        // Refused before anything is written: a strict JSON reader would reject the line.
        if (line.capacity() > (1u << 20)) std::string().swap(line);
        return fail(d, errc::invalid_argument, s.transcript, 0, 0, detail::event_name(e) + ": " + f->message());
    }
    if (opt.max_event_bytes && line.size() > opt.max_event_bytes) {
        const std::size_t size = line.size();
        if (line.capacity() > (1u << 20)) std::string().swap(line); // keep no huge buffer
        return fail(d, errc::oversize, s.transcript, 0, 0,
                    detail::event_name(e) + " is " + std::to_string(size) +
                        " bytes as a line, over max_event_bytes (" + std::to_string(opt.max_event_bytes) + ")");
    }
    const frame_suffix suffix(line);
    line.pop_back();
    line.append(suffix.view());
    const std::uint64_t len = line.size();
    const std::uint64_t off = s.cp.covered;
    const error_code wec = write_all(s.data->get(), line);
    if (line.capacity() > (1u << 20)) std::string().swap(line);
    if (wec) {
        take_back(s, off);
        return io_fail(d, wec, s.transcript, "write (the event was not stored)");
    }
    // per_event: acknowledged only once on disk. A failed sync takes the line back, so a
    // failure never leaves behind an event the caller was told is not stored.
    if (opt.durability == durability::per_event) {
        if (auto ec = fdatasync_fd(s.data->get())) {
            take_back(s, off);
            return io_fail(d, ec, s.transcript, "fdatasync (the event was taken back: not stored)");
        }
    } else {
        s.unsynced = true;
    }
    // The shared scopes, after the line (the transcript is the record: a crash between
    // the two leaves the event stored without its shared keys). A failure takes the
    // line back, so io_error still means "not stored".
    if (auto ec = write_shared_scopes(d, s.key, routed)) {
        take_back(s, off);
        append_detail(d, "the event was taken back: not stored");
        return ec;
    }
    const auto& c = e.actions.compaction; // checked by prepare_append
    const detail::compaction_entry entry{e.sequence, c ? c->first_sequence : 0, c ? c->last_sequence : 0};
    s.cp.add(e.sequence, e.timestamp, e.id, c ? c->first_sequence : 0, c ? &entry : nullptr, off, len);
    apply_delta(s.cp.state, routed.session);
    seq = e.sequence;
    detail::commit_append(caller, event_list::pointer_type(std::move(node)), routed);
    return {};
}

/// Takes back what a failed append wrote from `off` on, so the file ends with the last
/// stored event again (O_APPEND: the next line would otherwise follow the bad one, at an
/// offset the checkpoint does not know). If even the truncate fails, the session is
/// loaded from its file at its next use, as after a crash: a torn line is moved aside,
/// a whole one counts as stored.
inline void engine::take_back(open_session& s, std::uint64_t off) noexcept {
    if (::ftruncate(s.data->get(), static_cast<off_t>(off)) != 0) s.data.reset();
}

/// Creates the directories from the root down to `dir`; with durability, fsyncs the
/// parent of each one created.
inline error_code engine::make_dirs(diagnostics* d, const fs::path& dir) {
    std::error_code fec;
    if (fs::is_directory(dir, fec)) return {};
    const fs::path rel = dir.lexically_relative(root);
    fs::path cur = root;
    fs::create_directories(root, fec);
    for (const auto& part : rel) {
        const fs::path parent = cur;
        cur /= part;
        if (::mkdir(cur.c_str(), 0755) == 0) {
            if (durable())
                if (auto ec = fsync_dir(parent)) return io_fail(d, ec, parent, "fsync");
        } else if (errno != EEXIST) {
            return io_fail(d, errno_code(), cur, "mkdir");
        }
    }
    return {};
}

} // namespace libretto::detail::jsonl

#endif
