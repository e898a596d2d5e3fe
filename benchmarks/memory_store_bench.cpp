// memory_store benchmarks.
#include "harness.hpp"

#include <libretto/store/memory_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include <sys/resource.h>

namespace {

namespace asio = boost::asio;
using namespace libretto;

constexpr int append_count = 200'000;

/// Minor page faults of this process so far (first touches of fresh memory).
long minor_faults() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/// The session every memory_append benchmark appends to.
create_options bench_session() {
    create_options o;
    o.app_name = "bench";
    o.user_id = "u";
    o.session_id = "s";
    return o;
}

/// The event appended: a typical agent reply (text + usage).
event reply_prototype() {
    event proto = event::make(event_type::agent_message, "assistant",
                              content::from_text("The order shipped on Tuesday; tracking number ZX-1192."));
    proto.usage = usage{1200, 40, "model-1"};
    return proto;
}

// Appends through the asynchronous API, one co_await per event, as a generic caller of the
// session_store concept does (the runner calls memory_store's append_shared directly:
// memory_append_direct_events_s below): a typical agent reply (text + usage) per event,
// into one session that grows to 200,000 events. The timed loop includes the caller's
// side: a copy of the prototype for each append, and the caller's session copy receiving
// every event (room reserved up front).
// Both touch fresh memory (~750 bytes per event): where page faults are slow (a virtualised
// host) they cost more than the store's work, and a benchmark run after another one in the same process
// reuses the memory that one freed (docs/stores.md, memory_store).
void memory_append(libretto_bench::reporter& r, const char* metric) {
    constexpr int n = append_count;
    asio::io_context io;
    memory_store store(io.get_executor());
    double seconds = 0;
    long faults = 0;
    auto run = [&]() -> asio::awaitable<void> {
        auto create = store.async_create(bench_session(), asio::use_awaitable); // named: g++ 12
        auto s = co_await std::move(create);
        s.events.reserve(n);
        const event proto = reply_prototype();
        const long f0 = minor_faults();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) {
            event e = proto;
            auto op = store.async_append(s, std::move(e), asio::use_awaitable);
            co_await std::move(op);
        }
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        faults = minor_faults() - f0;
        if (s.last_sequence != n) std::fprintf(stderr, "memory append: wrong count\n");
    };
    asio::co_spawn(io, run(), asio::detached);
    io.run();
    r.report(metric, n / seconds, "events/s");
    std::fprintf(stderr, "%s: %ld page faults in the timed loop (%.3f per event)\n", metric, faults,
                 static_cast<double>(faults) / n);
}

void bench_memory_append(libretto_bench::reporter& r) { memory_append(r, "memory_append_events_s"); }
LIBRETTO_BENCHMARK(bench_memory_append, "memory_append_events_s");

// memory_append_events_s in a process whose malloc backs its heap with transparent huge
// pages (glibc's tunable glibc.malloc.hugetlb=1: a setting of the process, which a server
// holding sessions in memory can choose; libretto does not set it). The code is the same;
// the kernel's page faults (~37,000 of 4 KiB in the plain run) mostly go.
void bench_memory_append_thp(libretto_bench::reporter& r) { memory_append(r, "memory_append_thp_events_s"); }
LIBRETTO_BENCHMARK_ENV(bench_memory_append_thp, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1", "memory_append_thp_events_s");

// The same events and caller's side through the path the runner takes with memory_store
// (memory_store::never_blocks): the event boxed once, append_shared called directly, no
// co_await, post or handler per event.
void bench_memory_append_direct(libretto_bench::reporter& r) {
    constexpr int n = append_count;
    asio::io_context io;
    memory_store store(io.get_executor());
    session s;
    if (store.create(bench_session(), s)) throw std::runtime_error("memory append direct: create failed");
    s.events.reserve(n);
    const event proto = reply_prototype();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        std::int64_t seq = 0;
        if (store.append_shared(s, std::make_shared<event>(proto), seq))
            throw std::runtime_error("memory append direct: append failed");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s.last_sequence != n) std::fprintf(stderr, "memory append direct: wrong count\n");
    r.report("memory_append_direct_events_s", n / seconds, "events/s");
}
LIBRETTO_BENCHMARK(bench_memory_append_direct, "memory_append_direct_events_s");

// The same 200,000 events and the same caller's side (a copy of the prototype per event,
// the caller's session copy growing), appended a turn at a time: async_append_batch with 8
// events, one co_await per batch.
void bench_memory_append_batch(libretto_bench::reporter& r) {
    constexpr int n = append_count;
    constexpr int batch = 8;
    asio::io_context io;
    memory_store store(io.get_executor());
    double seconds = 0;
    auto run = [&]() -> asio::awaitable<void> {
        auto create = store.async_create(bench_session(), asio::use_awaitable); // named: g++ 12
        auto s = co_await std::move(create);
        s.events.reserve(n);
        const event proto = reply_prototype();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; i += batch) {
            std::vector<event> events;
            events.reserve(batch);
            for (int k = 0; k < batch; ++k) events.push_back(proto);
            auto op = store.async_append_batch(s, std::move(events), asio::use_awaitable);
            co_await std::move(op);
        }
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s.last_sequence != n) std::fprintf(stderr, "memory append batch: wrong count\n");
    };
    asio::co_spawn(io, run(), asio::detached);
    io.run();
    r.report("memory_append_batch_events_s", n / seconds, "events/s");
}
LIBRETTO_BENCHMARK(bench_memory_append_batch, "memory_append_batch_events_s");

} // namespace
