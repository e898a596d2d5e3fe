// libretto_soak: the soak program (docs/reliability.md, "Soak"). Not a unit test and never in
// ctest: scripts/soak builds it in the release preset and runs it for a set time per store.
//
//   libretto_soak --store jsonl|sqlite|postgres [--seconds 60] [--sessions 3000]
//                 [--concurrency 256] [--restart-every 15] [--model-ms 20] [--dir DIR]
//                 [--conninfo STR] [--seed N]
//
// Thousands of sessions take turns on one runner (one io_context thread): an llm_agent on a
// model that answers after a random delay with text, a tool call, a model error, a transient
// error (retried) or a context overflow (the runner compacts, the agent retries); char_budget
// compacts after turns; every event is signed (Ed25519) and chained. Some turns are cancelled
// by a timer (waiting on the model, a tool, the store) and some just after their n-th append
// started. Every --restart-every seconds the runner and the store are dropped and new ones
// opened on the same directory or database while the old ones finish their turns (half of
// those are cancelled). A store wrapper records every append the store acknowledged (its
// sequence, id and signature). At the end fresh store objects load every session whole:
// every acknowledged event must be there once, unchanged, and every transcript must verify.
//
// stdout: `metric value unit` lines, `soak_<store>_<what>`; progress and findings on stderr.
// Exit status 1 when an acknowledged event is lost, an event is duplicated or a transcript
// does not verify; 2 for bad arguments or a store that cannot be opened.
#include "harness.hpp"

#include <libretto/agent/llm_agent.hpp>
#include <libretto/compaction/char_budget.hpp>
#include <libretto/runner/runner.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/sign/ed25519_openssl.hpp>
#include <libretto/sign/transcript.hpp>
#include <libretto/tool/function_tool.hpp>
#ifdef LIBRETTO_SOAK_SODIUM
#include <libretto/sign/ed25519_sodium.hpp>
#endif
#ifdef LIBRETTO_SOAK_SQLITE
#include <libretto/store/sqlite_store.hpp>
#endif
#ifdef LIBRETTO_SOAK_POSTGRES
#include <libretto/store/postgres_store.hpp>
#endif

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace soak_tools {
struct lookup_args {
    int n;
};
BOOST_DESCRIBE_STRUCT(lookup_args, (), (n))
inline int lookup(lookup_args a) { return a.n * 7; }
} // namespace soak_tools

namespace soak {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace lb = libretto;
using clock_type = std::chrono::steady_clock;

struct options {
    std::string store;
    double seconds = 60;
    std::size_t sessions = 3000;
    std::size_t concurrency = 256;
    double restart_every = 15; // seconds; 0: never
    int model_ms = 20;         // the model answers after 0..model_ms ms
    std::size_t cached_sessions = lb::runner_options{}.cached_sessions; // the runner's default
    fs::path dir;              // jsonl, sqlite: where the data goes (a fresh directory)
    std::string conninfo;      // postgres
    std::uint64_t seed = 0;
    bool tamper = false;       // make up two acknowledgements before the check (it must fail)
};

/// What the store acknowledged for one event: its sequence and a digest of its id and
/// signature (the signature covers everything else in the event).
struct ack {
    std::int64_t sequence;
    std::uint64_t digest;
};

inline std::uint64_t fnv1a(std::uint64_t h, std::string_view s) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

inline std::uint64_t event_digest(std::string_view id, std::string_view signature) {
    return fnv1a(fnv1a(1469598103934665603ull, id) ^ 0x9e3779b97f4a7c15ull, signature);
}

/// One turn's controls: its cancellation signal (bound to the turn's consumer), the timer
/// that may fire it, and the append after which it is fired, if any.
struct turn_ctl {
    explicit turn_ctl(asio::any_io_executor ex) : timer(std::move(ex)) {}
    asio::cancellation_signal sig;
    asio::steady_timer timer;
    int cancel_at_append = 0; // 1-based; 0: not by append
    int appends = 0;
    int generation = 0;
    bool done = false;
    bool compaction_stored = false; // the turn's latest append was a compaction event
    bool cancelled = false;         // the turn ended cancelled
};

struct session_rec {
    std::vector<ack> acks;
    std::shared_ptr<turn_ctl> active; // the turn in progress (or the last one)
    std::shared_ptr<turn_ctl> previous; // the turn before it
};

struct counters {
    std::uint64_t turns = 0, turns_ok = 0, turns_cancelled = 0, turns_failed = 0, stale_after_restart = 0;
    std::uint64_t model_calls = 0, model_errors = 0, overflows = 0, transients = 0, tool_calls = 0;
    std::uint64_t yielded = 0, yielded_unacknowledged = 0;
    std::uint64_t acked = 0, compactions = 0, overflow_compactions = 0, restarts = 0;
    std::uint64_t cancels_by_timer = 0, cancels_at_append = 0, cancels_at_restart = 0;
};

/// Everything the turns share: the random source, the acknowledgements, the counters.
struct world {
    explicit world(options o) : opt(std::move(o)), rng(opt.seed), sessions(opt.sessions) {}

    options opt;
    std::string app = "soak";
    std::mt19937_64 rng;
    std::vector<session_rec> sessions;
    counters c;
    std::uint64_t call_ids = 0;
    std::mutex ack_mutex; // acknowledgements arrive on the io thread; the lock is a guard
    struct failure_kind {
        std::uint64_t count = 0;
        std::string example; // the first one's words
    };
    std::map<std::string, failure_kind> failures; // failed turns, by error code

    void failed(const std::string& code, const std::string& what) {
        ++c.turns_failed;
        failure_kind& f = failures[code];
        if (f.count++ == 0) f.example = what.substr(0, 400);
    }

    int percent() { return static_cast<int>(rng() % 100); }
    std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; }

    static std::string session_id(std::size_t i) { return "s" + std::to_string(i); }
    static std::string user_id(std::size_t i) { return "u" + std::to_string(i % 64); }
    std::optional<std::size_t> index_of(std::string_view session_id) const {
        if (session_id.size() < 2 || session_id[0] != 's') return std::nullopt;
        std::size_t i = 0;
        for (char ch : session_id.substr(1)) {
            if (ch < '0' || ch > '9') return std::nullopt;
            i = i * 10 + static_cast<std::size_t>(ch - '0');
        }
        if (i >= sessions.size()) return std::nullopt;
        return i;
    }

    /// An append of session `i` was started: cancel its turn now if this is the append it
    /// was to be cancelled at (posted: the turn is suspended on the append meanwhile).
    /// Counts overflow compactions too: a compaction event that is not the turn's last (the
    /// one after a turn is) was made on a context overflow.
    void append_started(std::size_t i, bool compaction, asio::any_io_executor ex) {
        std::shared_ptr<turn_ctl> ctl = sessions[i].active;
        if (!ctl || ctl->done) return;
        if (ctl->compaction_stored) ++c.overflow_compactions;
        ctl->compaction_stored = compaction;
        if (++ctl->appends != ctl->cancel_at_append) return;
        ++c.cancels_at_append;
        asio::post(ex, [ctl] {
            if (!ctl->done) ctl->sig.emit(asio::cancellation_type::terminal);
        });
    }

    /// The turn yielded a stored event: the store must have acknowledged it (the caller
    /// takes a yielded event, with its sequence, for stored).
    void yielded(std::size_t i, const lb::event& e) {
        ++c.yielded;
        const std::uint64_t d = event_digest(e.id, e.signature.value_or(""));
        const std::lock_guard<std::mutex> lock(ack_mutex);
        const auto& acks = sessions[i].acks;
        for (auto it = acks.rbegin(); it != acks.rend(); ++it)
            if (it->sequence == e.sequence && it->digest == d) return;
        ++c.yielded_unacknowledged;
        if (c.yielded_unacknowledged <= 20)
            std::fprintf(stderr, "soak: FINDING: %s: the turn yielded event %s (sequence %lld), which the store did not acknowledge\n",
                         session_id(i).c_str(), e.id.c_str(), static_cast<long long>(e.sequence));
    }

    void acknowledged(std::size_t i, std::uint64_t digest, bool compaction, std::int64_t seq) {
        const std::lock_guard<std::mutex> lock(ack_mutex);
        sessions[i].acks.push_back(ack{seq, digest});
        ++c.acked;
        if (compaction) ++c.compactions;
    }
};

// ---- the store wrapper: records what the store acknowledged ----------------------------------

struct append_note {
    std::size_t session = 0;
    std::uint64_t digest = 0;
    bool compaction = false;
};

/// The inner store's completion handler for an append: records a success, then completes
/// the runner's operation. Its executor, allocator and cancellation slot are the runner's.
template <class Handler>
struct recording_handler {
    Handler handler;
    world* w;
    append_note note;

    void operator()(boost::system::error_code ec, std::int64_t seq) {
        if (!ec) w->acknowledged(note.session, note.digest, note.compaction, seq);
        std::move(handler)(ec, seq);
    }
};

template <class Store>
struct append_initiation {
    Store* inner;
    world* w;
    template <class Handler>
    void operator()(Handler&& h, lb::session* s, lb::event e, lb::diagnostics* d, append_note note) const {
        recording_handler<std::decay_t<Handler>> rh{std::forward<Handler>(h), w, note};
        inner->async_append(*s, std::move(e), *d, std::move(rh));
    }
};

/// A session_store that forwards to `Store` and records each acknowledged append (and
/// starts the append-time cancellations).
template <class Store>
class recording_store {
public:
    using executor_type = typename Store::executor_type;

    recording_store(Store& inner, world& w) : inner_(&inner), w_(&w) {}

    executor_type get_executor() const { return inner_->get_executor(); }

    template <class Token>
    auto async_create(lb::create_options o, lb::diagnostics& d, Token&& token) {
        return inner_->async_create(std::move(o), d, std::forward<Token>(token));
    }
    template <class Token>
    auto async_get(lb::session_key k, lb::get_options o, lb::diagnostics& d, Token&& token) {
        return inner_->async_get(std::move(k), std::move(o), d, std::forward<Token>(token));
    }
    template <class Token>
    auto async_list(lb::list_options o, lb::diagnostics& d, Token&& token) {
        return inner_->async_list(std::move(o), d, std::forward<Token>(token));
    }
    template <class Token>
    auto async_delete(lb::session_key k, lb::diagnostics& d, Token&& token) {
        return inner_->async_delete(std::move(k), d, std::forward<Token>(token));
    }
    template <class Token>
        requires lb::flushable_session_store<Store>
    auto async_flush(lb::session_key k, lb::diagnostics& d, Token&& token) {
        return inner_->async_flush(std::move(k), d, std::forward<Token>(token));
    }
    template <class Token>
    auto async_append(lb::session& s, lb::event e, lb::diagnostics& d, Token&& token) {
        append_note note;
        const auto i = w_->index_of(s.id);
        if (i) {
            note.session = *i;
            note.digest = event_digest(e.id, e.signature.value_or(""));
            note.compaction = e.is_compaction();
            w_->append_started(*i, note.compaction, inner_->get_executor());
        } else {
            std::fprintf(stderr, "soak: an append to an unknown session '%s'\n", s.id.c_str());
            std::abort();
        }
        return asio::async_initiate<Token, lb::append_signature>(append_initiation<Store>{inner_, w_}, token, &s,
                                                                 std::move(e), &d, note);
    }

private:
    Store* inner_;
    world* w_;
};

// ---- the model -------------------------------------------------------------------------------

asio::awaitable<void> reply_after(std::chrono::microseconds delay, std::vector<lb::llm_chunk> chunks, lb::llm_writer out) {
    asio::steady_timer t(out.get_executor(), delay);
    auto wait = t.async_wait(asio::use_awaitable); // named: g++ 12
    co_await std::move(wait);
    for (auto& c : chunks) {
        auto emit = out.emit(std::move(c));
        co_await std::move(emit);
    }
}

struct delayed_reply {
    std::chrono::microseconds delay;
    std::vector<lb::llm_chunk> chunks;
    asio::awaitable<void> operator()(lb::llm_writer out) { return reply_after(delay, std::move(chunks), std::move(out)); }
};

const std::string& filler() {
    static const std::string text = [] {
        std::string s;
        const char* words[] = {"order", "shipped", "tracking", "warehouse", "Oslo", "Bergen", "invoice", "refund",
                               "customer", "delivery", "parcel", "Tuesday", "confirmed", "address", "label"};
        std::mt19937 r(7);
        while (s.size() < 4096) {
            s += words[r() % 15];
            s += ' ';
        }
        return s;
    }();
    return text;
}

/// A model of many moods, each reply after a random delay (a cancellable timer, as a reply
/// from the network would be): text (in pieces: partial events), a tool call, a model
/// error, a transient error, a context overflow.
struct soak_model {
    asio::any_io_executor ex;
    world* w;

    std::string_view name() const { return "soak-model"; }
    asio::any_io_executor get_executor() const { return ex; }

    lb::llm_stream generate(lb::llm_request req) {
        ++w->c.model_calls;
        // Tool results since the newest user message: at most 3 tool steps per turn.
        std::size_t tool_results = 0;
        for (auto it = req.messages.rbegin(); it != req.messages.rend() && it->role != lb::message_role::user; ++it)
            if (it->role == lb::message_role::tool) ++tool_results;
        std::vector<lb::llm_chunk> chunks;
        const int roll = w->percent();
        if (roll < 6) {
            ++w->c.overflows;
            chunks.push_back(lb::llm_chunk::last(lb::llm_response::failure(
                lb::make_error_code(lb::errc::context_overflow), "prompt is too long: 210000 tokens > 200000 maximum")));
        } else if (roll < 10) {
            ++w->c.model_errors;
            chunks.push_back(lb::llm_chunk::last(
                lb::llm_response::failure(lb::make_error_code(lb::errc::model_error), "upstream returned 500")));
        } else if (roll < 12) {
            ++w->c.transients;
            chunks.push_back(lb::llm_chunk::last(
                lb::llm_response::failure(lb::make_error_code(lb::errc::transient), "rate limited (429)")));
        } else if (roll < 40 && tool_results < 3) {
            ++w->c.tool_calls;
            lb::llm_chunk c;
            lb::tool_call_delta d;
            d.index = 0;
            d.id = "call_" + std::to_string(++w->call_ids);
            d.name = "lookup";
            d.arguments = "{\"n\":" + std::to_string(w->below(1000)) + "}";
            c.tool_calls.push_back(std::move(d));
            c.usage = lb::usage{1200, 20, "soak-model"};
            lb::llm_response_accumulator acc;
            acc.add(c);
            chunks.push_back(std::move(c));
            chunks.push_back(lb::llm_chunk::last(std::move(acc).finish()));
        } else {
            const std::string& f = filler();
            const std::size_t len = 80 + w->below(700), at = w->below(f.size() - len);
            const std::string text = "Order #" + std::to_string(w->below(100000)) + ": " + f.substr(at, len);
            const std::size_t pieces = 1 + w->below(3);
            lb::llm_response_accumulator acc;
            for (std::size_t k = 0; k < pieces; ++k) {
                lb::llm_chunk c;
                c.text = text.substr(k * text.size() / pieces, (k + 1) * text.size() / pieces - k * text.size() / pieces);
                if (k + 1 == pieces) c.usage = lb::usage{1500, static_cast<std::int64_t>(text.size() / 4), "soak-model"};
                acc.add(c);
                chunks.push_back(std::move(c));
            }
            chunks.push_back(lb::llm_chunk::last(std::move(acc).finish()));
        }
        const auto delay = std::chrono::microseconds(w->below(static_cast<std::size_t>(w->opt.model_ms) * 1000 + 1));
        lb::stream_options so;
        so.capacity = 1;
        return lb::llm_stream(ex, delayed_reply{delay, std::move(chunks)}, so);
    }
};
static_assert(lb::model<soak_model>);

using agent_type = lb::llm_agent<soak_model>;

inline lb::ed25519_key soak_key() {
    lb::ed25519_seed seed{};
    for (std::size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<std::uint8_t>(i * 7 + 3);
    return lb::ed25519_key::from_seed(seed);
}

// ---- the stores --------------------------------------------------------------------------------

struct jsonl_kind {
    using store_type = lb::jsonl_store;
    static constexpr const char* name = "jsonl";
    static asio::awaitable<std::unique_ptr<store_type>> open(asio::any_io_executor ex, const options& o) {
        lb::jsonl_store_options jo;
        jo.directory = o.dir / "jsonl";
        jo.durability = lb::durability::per_turn;
        co_return std::make_unique<store_type>(ex, std::move(jo));
    }
};

#ifdef LIBRETTO_SOAK_SQLITE
struct sqlite_kind {
    using store_type = lb::sqlite_store;
    static constexpr const char* name = "sqlite";
    static asio::awaitable<std::unique_ptr<store_type>> open(asio::any_io_executor ex, const options& o) {
        lb::sqlite_store_options so;
        so.path = (o.dir / "soak.db").string();
        auto op = store_type::async_open(ex, std::move(so), asio::use_awaitable);
        std::optional<store_type> s = co_await std::move(op);
        co_return std::make_unique<store_type>(std::move(*s));
    }
};
#endif

#ifdef LIBRETTO_SOAK_POSTGRES
struct postgres_kind {
    using store_type = lb::postgres_store;
    static constexpr const char* name = "postgres";
    static asio::awaitable<std::unique_ptr<store_type>> open(asio::any_io_executor ex, const options& o) {
        lb::postgres_store_options po;
        po.conninfo = o.conninfo;
        po.schema = "soak_" + std::to_string(o.seed % 1000000007ull);
        po.pool_size = 8;
        auto s = std::make_unique<store_type>(ex, std::move(po));
        auto op = s->async_open(asio::use_awaitable);
        co_await std::move(op);
        co_return s;
    }
};
#endif

// ---- the run -----------------------------------------------------------------------------------

struct verdict {
    std::uint64_t sessions = 0, events = 0, lost = 0, duplicates = 0, unverified = 0, unacknowledged = 0;
    double seconds = 0;
    std::size_t recoveries = 0;
};

template <class Kind>
class soak_run {
    using store_type = typename Kind::store_type;
    using rec_store = recording_store<store_type>;
    using runner_type = lb::runner<agent_type, rec_store, lb::char_budget, lb::ed25519_signer>;

    static lb::runner_options runner_options_of(const options& o) {
        lb::runner_options ro;
        ro.cached_sessions = o.cached_sessions;
        return ro;
    }

    /// A store and a runner on it; a restart retires it (it finishes its turns) and opens
    /// the next.
    struct generation {
        generation(int n, std::unique_ptr<store_type> s, world& w, const agent_type& a, const lb::ed25519_signer& sg)
            : number(n), store(std::move(s)), rec(*store, w),
              runner(a, rec, runner_options_of(w.opt), lb::char_budget{.threshold_chars = 8000, .retention_chars = 2000}, sg) {}
        int number;
        std::unique_ptr<store_type> store;
        rec_store rec;
        runner_type runner;
        std::size_t in_flight = 0;
        std::optional<clock_type::time_point> idle_since{};
    };

public:
    soak_run(world& w, asio::io_context& io, const agent_type& agent, const lb::ed25519_signer& signer)
        : w_(w), io_(io), agent_(agent), signer_(signer) {
        idle_.reserve(w.sessions.size());
        for (std::size_t i = w.sessions.size(); i-- > 0;) idle_.push_back(i);
    }

    /// The timed phase: turns until the deadline, then every turn drained and every store
    /// closed.
    asio::awaitable<void> run() {
        auto ex = io_.get_executor();
        {
            auto op = open_generation();
            current_ = co_await std::move(op);
        }
        const auto start = clock_type::now();
        const auto deadline = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(w_.opt.seconds));
        const auto restart_every = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(w_.opt.restart_every));
        auto next_restart = start + restart_every;
        auto next_progress = start + std::chrono::seconds(10);
        for (std::size_t i = 0; i < w_.opt.concurrency; ++i) launch();
        asio::steady_timer tick(ex);
        for (;;) {
            tick.expires_after(std::chrono::milliseconds(50));
            auto wait = tick.async_wait(asio::use_awaitable);
            co_await std::move(wait);
            const auto now = clock_type::now();
            if (!stopping_ && now >= deadline) stopping_ = true;
            if (!stopping_ && w_.opt.restart_every > 0 && now >= next_restart) {
                auto op = open_generation();
                std::shared_ptr<generation> next = co_await std::move(op);
                restart_to(std::move(next));
                next_restart = clock_type::now() + restart_every;
            }
            reap(now);
            if (stopping_ && in_flight_ == 0 && current_) retired_.push_back(std::move(current_));
            if (stopping_ && in_flight_ == 0 && retired_.empty()) break;
            if (now >= next_progress) {
                next_progress += std::chrono::seconds(10);
                std::fprintf(stderr, "soak %s: %.0f s, %llu turns (%llu cancelled, %llu failed), %llu events, %zu in flight, %zu retired stores\n",
                             Kind::name, std::chrono::duration<double>(now - start).count(),
                             static_cast<unsigned long long>(w_.c.turns), static_cast<unsigned long long>(w_.c.turns_cancelled),
                             static_cast<unsigned long long>(w_.c.turns_failed), static_cast<unsigned long long>(w_.c.acked),
                             in_flight_, retired_.size());
            }
        }
        run_seconds_ = std::chrono::duration<double>(std::min(clock_type::now(), deadline) - start).count();
    }

    double run_seconds() const { return run_seconds_; }

    /// The check: fresh store objects load every session whole.
    static asio::awaitable<void> verify(world& w, std::string did, verdict* out) {
        auto ex = co_await asio::this_coro::executor;
        const auto t0 = clock_type::now();
        std::unique_ptr<store_type> store;
        {
            auto op = Kind::open(ex, w.opt);
            store = co_await std::move(op);
        }
        // Signed with OpenSSL, checked with libsodium when it is there: another implementation,
        // and twice as fast (docs/signing.md).
#ifdef LIBRETTO_SOAK_SODIUM
        lb::sodium_ed25519_verifier verifier;
#else
        lb::ed25519_verifier verifier;
#endif
        lb::transcript_options to;
        to.trusted_dids.push_back(did);
        to.threads = 2;
        int reported = 0;
        auto report = [&](const std::string& what) {
            if (++reported <= 20) std::fprintf(stderr, "soak %s: FINDING: %s\n", Kind::name, what.c_str());
        };
        for (std::size_t i = 0; i < w.sessions.size(); ++i) {
            session_rec& rec = w.sessions[i];
            lb::session_key key(w.app, world::user_id(i), world::session_id(i));
            lb::get_options whole;
            lb::diagnostics diag;
            auto token = asio::as_tuple(asio::use_awaitable);
            auto op = store->async_get(std::move(key), whole, diag, std::move(token));
            auto [ec, loaded] = co_await std::move(op);
            if (ec) {
                report(world::session_id(i) + ": the load failed: " + ec.message() + " (" + diag.message() + ")");
                ++out->unverified;
                out->lost += rec.acks.size();
                continue;
            }
            if (!loaded) {
                if (!rec.acks.empty()) {
                    report(world::session_id(i) + ": missing, with " + std::to_string(rec.acks.size()) + " acknowledged events");
                    out->lost += rec.acks.size();
                }
                continue;
            }
            ++out->sessions;
            const lb::session& s = *loaded;
            out->events += s.events.size();
            if (lb::transcript_report r = lb::verify_transcript(s, verifier, to); !r) {
                ++out->unverified;
                report(world::session_id(i) + ": the transcript does not verify: " + std::string(lb::to_string(r.reason)) + ": " + r.message);
            }
            // Each id and each sequence once.
            std::unordered_set<std::string_view> ids;
            std::unordered_set<std::int64_t> seqs;
            std::map<std::int64_t, std::uint64_t> by_seq;
            for (const lb::event& e : s.events) {
                const bool new_id = ids.insert(e.id).second, new_seq = seqs.insert(e.sequence).second;
                if (!new_id || !new_seq) {
                    ++out->duplicates;
                    report(world::session_id(i) + ": event " + e.id + " (sequence " + std::to_string(e.sequence) + ") repeats " +
                           (new_id ? "a sequence" : "an id"));
                    continue;
                }
                by_seq.emplace(e.sequence, event_digest(e.id, e.signature.value_or("")));
            }
            // Every acknowledged event, unchanged.
            std::size_t matched = 0;
            for (const ack& a : rec.acks) {
                auto it = by_seq.find(a.sequence);
                if (it == by_seq.end() || it->second != a.digest) {
                    ++out->lost;
                    report(world::session_id(i) + ": acknowledged event at sequence " + std::to_string(a.sequence) +
                           (it == by_seq.end() ? " is missing" : " was replaced by another event"));
                } else {
                    ++matched;
                }
            }
            if (by_seq.size() > matched) out->unacknowledged += by_seq.size() - matched;
        }
        if constexpr (requires { store->recoveries(); }) out->recoveries = store->recoveries().size();
        store.reset();
        out->seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    }

private:
    asio::awaitable<std::shared_ptr<generation>> open_generation() {
        auto op = Kind::open(io_.get_executor(), w_.opt);
        std::unique_ptr<store_type> s = co_await std::move(op);
        co_return std::make_shared<generation>(++generations_, std::move(s), w_, agent_, signer_);
    }

    /// A restart: new turns go to `next`; the current generation finishes its turns, half
    /// of them cancelled, and is closed once idle.
    void restart_to(std::shared_ptr<generation> next) {
        ++w_.c.restarts;
        const int old = current_->number;
        for (auto& rec : w_.sessions) {
            std::shared_ptr<turn_ctl> ctl = rec.active;
            if (ctl && !ctl->done && ctl->generation == old && w_.percent() < 50) {
                ++w_.c.cancels_at_restart;
                asio::post(io_.get_executor(), [ctl] {
                    if (!ctl->done) ctl->sig.emit(asio::cancellation_type::terminal);
                });
            }
        }
        retired_.push_back(std::move(current_));
        current_ = std::move(next);
    }

    /// Closes retired generations with no turn left: none of ours in flight, no session
    /// locked in the runner (a cancelled turn finishes its store calls and its flush after
    /// its consumer saw the cancellation), and quiet for half a second (an agent's stream
    /// ends after its turn).
    void reap(clock_type::time_point now) {
        for (auto it = retired_.begin(); it != retired_.end();) {
            generation& g = **it;
            if (g.in_flight != 0 || g.runner.active_sessions() != 0) {
                g.idle_since.reset();
                ++it;
            } else if (!g.idle_since) {
                g.idle_since = now;
                ++it;
            } else if (now - *g.idle_since >= std::chrono::milliseconds(500)) {
                it = retired_.erase(it);
            } else {
                ++it;
            }
        }
    }

    void launch() {
        if (stopping_ || idle_.empty() || !current_) return;
        const std::size_t j = w_.below(idle_.size());
        const std::size_t idx = idle_[j];
        idle_[j] = idle_.back();
        idle_.pop_back();
        auto ctl = std::make_shared<turn_ctl>(io_.get_executor());
        ctl->generation = current_->number;
        const int roll = w_.percent();
        if (roll < 4) {
            const auto after = std::chrono::microseconds(w_.below(static_cast<std::size_t>(w_.opt.model_ms) * 3000 + 1));
            ctl->timer.expires_after(after);
            ctl->timer.async_wait([ctl, c = &w_.c](boost::system::error_code ec) {
                if (ec || ctl->done) return;
                ++c->cancels_by_timer;
                ctl->sig.emit(asio::cancellation_type::terminal);
            });
        } else if (roll < 7) {
            ctl->cancel_at_append = 1 + static_cast<int>(w_.below(4));
        }
        w_.sessions[idx].previous = std::move(w_.sessions[idx].active);
        w_.sessions[idx].active = ctl;
        std::shared_ptr<generation> gen = current_;
        ++gen->in_flight;
        ++in_flight_;
        auto slot = ctl->sig.slot();
        asio::co_spawn(io_, drive_turn(&w_, gen, idx, ctl),
                       asio::bind_cancellation_slot(slot, [this, gen, idx, ctl](std::exception_ptr) {
                           ctl->done = true;
                           ctl->timer.cancel();
                           --gen->in_flight;
                           --in_flight_;
                           ++w_.c.turns;
                           idle_.push_back(idx);
                           launch();
                       }));
    }

    static asio::awaitable<void> drive_turn(world* w, std::shared_ptr<generation> gen, std::size_t idx,
                                            std::shared_ptr<turn_ctl> ctl) {
        try {
            lb::run_options o(w->app, world::user_id(idx), world::session_id(idx));
            o.stream_capacity = 2;
            const std::string& f = filler();
            const std::size_t len = 20 + w->below(200), at = w->below(f.size() - len);
            auto turn = gen->runner.run_shared(std::move(o), "Where is my " + f.substr(at, len) + "?");
            for (;;) {
                auto next = turn.next();
                std::optional<lb::event_list::pointer_type> ev = co_await std::move(next);
                if (!ev) break;
                if (!(*ev)->partial) w->yielded(idx, **ev);
            }
            ++w->c.turns_ok;
        } catch (const boost::system::system_error& e) {
            const std::shared_ptr<turn_ctl>& prev = w->sessions[idx].previous;
            if (e.code() == lb::errc::cancelled || e.code() == asio::error::operation_aborted) {
                ++w->c.turns_cancelled;
                ctl->cancelled = true;
            } else if (e.code() == lb::errc::stale_session && prev && prev->cancelled && prev->generation < ctl->generation) {
                // The session's previous turn ran on a runner a restart retired and was
                // cancelled: it may still have been finishing an append (which completes)
                // when this turn, on the new runner, loaded the session. Two runners share
                // no session lock; the store refused the later append.
                ++w->c.turns_failed;
                ++w->c.stale_after_restart;
            } else {
                w->failed(e.code().message(), e.what());
            }
        } catch (const std::exception& e) {
            w->failed("exception", e.what());
        }
    }

    world& w_;
    asio::io_context& io_;
    const agent_type& agent_;
    const lb::ed25519_signer& signer_;
    std::shared_ptr<generation> current_;
    std::vector<std::shared_ptr<generation>> retired_;
    std::vector<std::size_t> idle_;
    std::size_t in_flight_ = 0;
    int generations_ = 0;
    bool stopping_ = false;
    double run_seconds_ = 0;
};

double peak_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0; // KiB on Linux
}

template <class Kind>
int run_store(options opt) {
    world w(std::move(opt));
    asio::io_context io(1);
    const lb::ed25519_signer signer(soak_key());
    lb::retry_options retry;
    retry.max_attempts = 3;
    retry.initial_delay = std::chrono::milliseconds(5);
    retry.max_delay = std::chrono::milliseconds(20);
    lb::stream_options agent_stream;
    agent_stream.capacity = 1;
    agent_type agent{lb::llm_agent_options<soak_model>{
        .name = "assistant",
        .model = soak_model{io.get_executor(), &w},
        .tools = lb::tools(lb::function_tool("lookup", "Looks a number up", soak_tools::lookup)),
        .retry = retry,
        .stream = agent_stream,
    }};
    std::exception_ptr failure;
    double run_seconds = 0;
    {
        soak_run<Kind> run(w, io, agent, signer);
        asio::co_spawn(io, run.run(), [&](std::exception_ptr e) { failure = e; });
        io.run(); // until every turn, agent stream and retired store is done
        run_seconds = run.run_seconds();
    }
    for (auto& rec : w.sessions) { // their timers belong to `io`
        rec.active.reset();
        rec.previous.reset();
    }
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "soak %s: the run failed: %s\n", Kind::name, e.what());
        }
        return 2;
    }
    std::fprintf(stderr, "soak %s: peak RSS %.1f MB after the timed phase\n", Kind::name, peak_mb());
    for (const auto& [code, f] : w.failures)
        std::fprintf(stderr, "soak %s: %llu failed turns: %s; the first: %s\n", Kind::name,
                     static_cast<unsigned long long>(f.count), code.c_str(), f.example.c_str());

    if (w.opt.tamper) {
        // The check's own check: an acknowledgement of an event never stored, and one whose
        // event differs from the stored one. Both must be counted as lost.
        for (auto& rec : w.sessions)
            if (rec.acks.size() >= 2) {
                rec.acks.push_back(ack{rec.acks.back().sequence + 1000, 1});
                rec.acks.front().digest ^= 1;
                std::fprintf(stderr, "soak %s: --tamper: two made-up acknowledgements (expect 2 lost events)\n", Kind::name);
                break;
            }
    }
    verdict v;
    {
        asio::io_context check_io(1);
        std::exception_ptr verify_failure;
        asio::co_spawn(check_io, soak_run<Kind>::verify(w, std::string(signer.did()), &v), [&](std::exception_ptr e) { verify_failure = e; });
        check_io.run();
        if (verify_failure) {
            try {
                std::rethrow_exception(verify_failure);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "soak %s: the check failed: %s\n", Kind::name, e.what());
            }
            return 2;
        }
    }
    std::fprintf(stderr, "soak %s: %llu stored events yielded to the turns' callers, %llu of them not acknowledged\n", Kind::name,
                 static_cast<unsigned long long>(w.c.yielded), static_cast<unsigned long long>(w.c.yielded_unacknowledged));
    if (v.recoveries) std::fprintf(stderr, "soak %s: the fresh store recovered %zu torn tails\n", Kind::name, v.recoveries);
    std::fprintf(stderr,
                 "soak %s: %llu model calls (%llu tool calls, %llu model errors, %llu transient, %llu overflows); cancelled "
                 "%llu by timer, %llu at an append, %llu at a restart\n",
                 Kind::name, static_cast<unsigned long long>(w.c.model_calls), static_cast<unsigned long long>(w.c.tool_calls),
                 static_cast<unsigned long long>(w.c.model_errors), static_cast<unsigned long long>(w.c.transients),
                 static_cast<unsigned long long>(w.c.overflows), static_cast<unsigned long long>(w.c.cancels_by_timer),
                 static_cast<unsigned long long>(w.c.cancels_at_append), static_cast<unsigned long long>(w.c.cancels_at_restart));

    libretto_bench::reporter r;
    const std::string p = std::string("soak_") + Kind::name + "_";
    auto put = [&](const char* what, double value, const char* unit) { r.report(p + what, value, unit); };
    put("turns", static_cast<double>(w.c.turns), "turns");
    put("turns_s", static_cast<double>(w.c.turns) / std::max(run_seconds, 1e-9), "turns/s");
    put("cancelled_turns", static_cast<double>(w.c.turns_cancelled), "turns");
    put("failed_turns", static_cast<double>(w.c.turns_failed), "turns");
    put("stale_after_restart", static_cast<double>(w.c.stale_after_restart), "turns");
    put("model_errors", static_cast<double>(w.c.model_errors), "replies");
    put("overflows", static_cast<double>(w.c.overflows), "replies");
    put("compactions", static_cast<double>(w.c.compactions), "events");
    put("overflow_compactions", static_cast<double>(w.c.overflow_compactions), "events");
    put("restarts", static_cast<double>(w.c.restarts), "restarts");
    put("sessions", static_cast<double>(v.sessions), "sessions");
    put("events", static_cast<double>(w.c.acked), "events");
    put("lost_events", static_cast<double>(v.lost + w.c.yielded_unacknowledged), "events");
    put("duplicate_events", static_cast<double>(v.duplicates), "events");
    put("unverified_sessions", static_cast<double>(v.unverified), "sessions");
    put("unacknowledged_events", static_cast<double>(v.unacknowledged), "events");
    put("verify_s", v.seconds, "s");
    put("peak_mb", peak_mb(), "MB");
    return v.lost || w.c.yielded_unacknowledged || v.duplicates || v.unverified ? 1 : 0;
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "libretto_soak: %s\n"
                 "usage: libretto_soak --store jsonl|sqlite|postgres [--seconds 60] [--sessions 3000] [--concurrency 256]\n"
                 "                     [--restart-every 15] [--model-ms 20] [--cached-sessions 256] [--dir DIR]\n"
                 "                     [--conninfo STR] [--seed N]\n"
                 "  --dir: a directory for the jsonl and sqlite data (must not hold an earlier run's)\n"
                 "  --conninfo: the libpq connection string for postgres (a schema soak_<seed> is created)\n"
                 "  --tamper 1: make up two acknowledgements before the check, which must then fail\n",
                 why);
    return 2;
}

} // namespace soak

int main(int argc, char** argv) {
    using namespace soak;
    options o;
    o.seed = std::random_device{}();
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (i + 1 >= argc) return usage(("missing the value of " + std::string(a)).c_str());
        const char* v = argv[++i];
        try {
            if (a == "--store") o.store = v;
            else if (a == "--seconds") o.seconds = std::stod(v);
            else if (a == "--sessions") o.sessions = std::stoul(v);
            else if (a == "--concurrency") o.concurrency = std::stoul(v);
            else if (a == "--restart-every") o.restart_every = std::stod(v);
            else if (a == "--model-ms") o.model_ms = std::stoi(v);
            else if (a == "--cached-sessions") o.cached_sessions = std::stoul(v);
            else if (a == "--dir") o.dir = v;
            else if (a == "--conninfo") o.conninfo = v;
            else if (a == "--seed") o.seed = std::stoull(v);
            else if (a == "--tamper") o.tamper = std::string_view(v) == "1";
            else return usage(("unknown option " + std::string(a)).c_str());
        } catch (const std::exception&) {
            return usage(("bad value '" + std::string(v) + "' for " + std::string(a)).c_str());
        }
    }
    if (o.sessions == 0 || o.concurrency == 0 || o.seconds <= 0 || o.model_ms < 0)
        return usage("--sessions, --concurrency and --seconds must be positive");
    if (o.store != "postgres") {
        if (o.dir.empty()) return usage("--dir is required for jsonl and sqlite");
        std::error_code ec;
        if (fs::exists(o.dir) && !fs::is_empty(o.dir, ec)) return usage("--dir must be empty or missing (a fresh run)");
        fs::create_directories(o.dir, ec);
        if (ec) return usage(("cannot create --dir: " + ec.message()).c_str());
    } else if (o.conninfo.empty()) {
        return usage("--conninfo is required for postgres");
    }
    std::fprintf(stderr, "soak %s: seed %llu, %zu sessions, %zu at once, %.0f s, a restart every %.0f s\n", o.store.c_str(),
                 static_cast<unsigned long long>(o.seed), o.sessions, o.concurrency, o.seconds, o.restart_every);
    try {
        if (o.store == "jsonl") return run_store<jsonl_kind>(std::move(o));
#ifdef LIBRETTO_SOAK_SQLITE
        if (o.store == "sqlite") return run_store<sqlite_kind>(std::move(o));
#endif
#ifdef LIBRETTO_SOAK_POSTGRES
        if (o.store == "postgres") return run_store<postgres_kind>(std::move(o));
#endif
    } catch (const std::exception& e) {
        std::fprintf(stderr, "libretto_soak: %s\n", e.what());
        return 2;
    }
    return usage(("unknown or unavailable store '" + o.store + "'").c_str());
}
