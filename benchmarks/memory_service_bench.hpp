// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// The memory-service benchmark (issue 36; docs/memory.md), written once for every back end:
// memory_service_sqlite_bench.cpp (SQLite FTS5). It runs on a memory of 100,000 entries of
// one user of one app, plus 10,000 of ten other users, made untimed with memory_add (one
// call per session of 100 messages) and reopened, and times the synchronous core:
//
//   memory_search_100k_ms   memory_search of 2-3 words, limit 10, on sqlite_memory_service
//
// The messages are chat turns of 10-40 words drawn from a vocabulary of 3,000 words with
// Zipf's law (s = 1: the n-th most frequent word appears 1/n as often as the first), as
// words of natural language are: its first 100 are English function words ("the", "you",
// "is"), the rest made-up content words of 1-3 syllables; a capital first letter, commas
// and a closing '.' or '?'. A query names 2-3 content words (ranks 101-3,000, drawn
// uniformly: what a recall asks about, never "the"); each word is in ~0.3 % of the
// entries on average (~0.03 % at rank 3,000, ~3 % at rank 101).
//
// The figure is the median over every timed search (after an untimed warm-up); the mean,
// 90th and 99th percentiles, the maximum and the mean number of hits go to stderr.
#ifndef LIBRETTO_BENCHMARKS_MEMORY_SERVICE_BENCH_HPP
#define LIBRETTO_BENCHMARKS_MEMORY_SERVICE_BENCH_HPP

#include "harness.hpp"

#include <libretto/event/event.hpp>
#include <libretto/store/memory_service.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace memory_bench {

using namespace libretto;
using clock_type = std::chrono::steady_clock;

inline constexpr std::size_t entries = 100'000;      ///< the searched user's
inline constexpr std::size_t per_session = 100;      ///< messages per session (one memory_add each)
inline constexpr std::size_t other_users = 10;       ///< each with entries / 100 of their own
inline constexpr std::size_t vocabulary_size = 3'000;
inline constexpr std::size_t function_words = 100;   ///< the most frequent ranks
inline const std::string app = "bench";
inline const std::string user = "user-0";

using libretto_bench::scratch;

/// The vocabulary by rank: 100 English function words, then made-up words of 1-3 syllables
/// (distinct: a word's syllables spell its number in base 120).
inline std::vector<std::string> make_vocabulary() {
    static const char* const common[function_words] = {
        "the", "i", "you", "to", "a", "and", "it", "is", "of", "that", "in", "we", "for", "my", "me", "this",
        "on", "be", "have", "can", "with", "do", "not", "so", "what", "are", "just", "but", "your", "was",
        "at", "if", "about", "get", "like", "will", "there", "know", "no", "all", "can't", "how", "one", "would",
        "think", "out", "up", "or", "they", "from", "an", "as", "when", "yes", "some", "go", "did", "then",
        "want", "need", "our", "good", "could", "time", "more", "here", "should", "now", "see", "by", "make",
        "also", "has", "been", "really", "which", "them", "next", "tomorrow", "today", "let", "us", "any",
        "please", "thanks", "where", "why", "still", "maybe", "sure", "right", "back", "work", "day", "new",
        "week", "last", "first", "much", "over"};
    static const char* const onsets[] = {"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t",
                                         "v", "w", "z", "br", "st", "tr", "pl", "gr", "sh", "ch"};
    static const char* const vowels[] = {"a", "e", "i", "o", "u"};
    constexpr std::size_t syllables = std::size(onsets) * std::size(vowels); // 120
    std::vector<std::string> v(common, common + function_words);
    for (std::size_t n = 0; v.size() < vocabulary_size; ++n) {
        std::string w;
        std::size_t x = n;
        do {
            w += onsets[x % syllables / std::size(vowels)];
            w += vowels[x % std::size(vowels)];
            x /= syllables;
        } while (x > 0);
        if (n % 3 == 1) w += "n"; // closed syllables too
        v.push_back(std::move(w));
    }
    return v;
}

/// Draws ranks 0..n-1 with Zipf's law (s = 1).
class zipf {
public:
    explicit zipf(std::size_t n) : cdf_(n) {
        double sum = 0;
        for (std::size_t i = 0; i < n; ++i) cdf_[i] = sum += 1.0 / static_cast<double>(i + 1);
        for (auto& c : cdf_) c /= sum;
    }
    template <class Rng>
    std::size_t operator()(Rng& rng) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        return static_cast<std::size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin()) %
               cdf_.size();
    }

private:
    std::vector<double> cdf_;
};

/// One chat message of 10-40 words.
template <class Rng>
std::string make_message(Rng& rng, zipf& z, const std::vector<std::string>& vocabulary) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(10, 40)(rng);
    std::string m;
    for (std::size_t i = 0; i < n; ++i) {
        std::string w = vocabulary[z(rng)];
        if (i == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
        else m += (rng() % 9 == 0) ? ", " : " ";
        m += w;
    }
    m += (rng() % 4 == 0) ? "?" : ".";
    return m;
}

/// Throws with what the service said.
inline void check(boost::system::error_code ec, const char* doing, const diagnostics& said) {
    if (ec) throw std::runtime_error(std::string(doing) + ": " + ec.message() + " (" + said.message() + ")");
}

/// Adds `count` messages of `who` in sessions of 100 (user and assistant taking turns, a
/// second apart), one memory_add per session.
template <class Service>
void add_messages(Service& service, const std::string& who, std::size_t count, std::mt19937_64& rng, zipf& z,
                  const std::vector<std::string>& vocabulary) {
    diagnostics said;
    double t = 1.7e9;
    for (std::size_t s = 0; s * per_session < count; ++s) {
        std::vector<event> events;
        for (std::size_t i = 0; i < per_session && s * per_session + i < count; ++i) {
            const bool mine = i % 2 == 0;
            event e = event::make(mine ? event_type::user_message : event_type::agent_message,
                                  mine ? "user" : "assistant", content::from_text(make_message(rng, z, vocabulary)));
            e.timestamp = t += 1;
            events.push_back(std::move(e));
        }
        std::size_t added = 0;
        check(service.memory_add(app, who, "session-" + std::to_string(s), event_span(events), added, &said),
              "memory_add", said);
        if (added != events.size()) throw std::runtime_error("memory_add: entries not added");
    }
}

/// Fills a fresh memory: the searched user's 100,000 entries and the other users'.
template <class Service>
void fill(Service&& service) {
    const auto vocabulary = make_vocabulary();
    zipf z(vocabulary.size());
    std::mt19937_64 rng(1);
    add_messages(service, user, entries, rng, z, vocabulary);
    for (std::size_t u = 1; u <= other_users; ++u)
        add_messages(service, "user-" + std::to_string(u), entries / 100, rng, z, vocabulary);
}

/// memory_search_100k_*: `warmup` untimed then `samples` timed searches of 2-3
/// content words, limit 10.
template <class Service>
void bench_search(libretto_bench::reporter& r, const char* metric, Service& service, std::size_t warmup,
                  std::size_t samples) {
    const auto vocabulary = make_vocabulary();
    std::mt19937_64 rng(2);
    std::uniform_int_distribution<std::size_t> content(function_words, vocabulary.size() - 1);
    std::vector<memory_query> queries(warmup + samples);
    for (auto& q : queries) {
        q.app_name = app;
        q.user_id = user;
        q.limit = 10;
        const std::size_t words = 2 + rng() % 2;
        for (std::size_t i = 0; i < words; ++i) q.text += (i ? " " : "") + vocabulary[content(rng)];
    }
    diagnostics said;
    std::vector<memory_entry> out;
    std::vector<double> ms;
    ms.reserve(samples);
    std::size_t hits = 0, empty = 0;
    for (std::size_t i = 0; i < queries.size(); ++i) {
        const auto t0 = clock_type::now();
        const auto ec = service.memory_search(queries[i], out, &said);
        const auto t1 = clock_type::now();
        check(ec, "memory_search", said);
        if (i < warmup) continue;
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        hits += out.size();
        if (out.empty()) ++empty;
    }
    if (hits == 0) throw std::runtime_error("memory_search: nothing found");
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    auto at = [&](double q) {
        return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sorted.size())))];
    };
    double sum = 0;
    for (double x : ms) sum += x;
    std::fprintf(stderr,
                 "%s: %zu searches: median %.3f ms, mean %.3f, min %.3f, p90 %.3f, p99 %.3f, max %.3f; "
                 "%.2f entries back per search, %zu with none\n",
                 metric, ms.size(), at(0.5), sum / static_cast<double>(ms.size()), sorted.front(), at(0.9), at(0.99),
                 sorted.back(), static_cast<double>(hits) / static_cast<double>(ms.size()), empty);
    r.report(metric, at(0.5), "ms");
}

} // namespace memory_bench

#endif
