// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
// detail::event_slab: the blocks a bulk load carves event nodes from. A block freed too
// early shows as a use-after-free under ASan, one never freed as a leak (LeakSanitizer).
#include <libretto/event/detail/event_slab.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace libretto;
using libretto::detail::event_slab;
using libretto::detail::slab_block;

BOOST_AUTO_TEST_SUITE(event_slab_tests)

BOOST_AUTO_TEST_CASE(nodes_come_from_one_block_until_it_is_full) {
    event_slab slab;
    std::shared_ptr<event> a = slab.make();
    const slab_block* b = slab.current();
    BOOST_REQUIRE(b != nullptr);
    std::shared_ptr<event> c = slab.make();
    BOOST_TEST(b->owns(a.get()));
    BOOST_TEST(b->owns(c.get()));
    BOOST_TEST(b->live() == 3u); // two nodes and the filler
    // The nodes are ordinary events.
    a->content = content::from_text("first");
    c->sequence = 7;
    BOOST_TEST(a->text() == "first");
    BOOST_TEST(c->sequence == 7);
    BOOST_TEST(c->text().empty());
    a.reset();
    BOOST_TEST(b->live() == 2u);
}

BOOST_AUTO_TEST_CASE(a_full_block_gives_way_to_a_new_one) {
    event_slab slab;
    std::vector<std::shared_ptr<event>> nodes;
    std::set<const slab_block*> blocks;
    // More nodes than one 2 MiB block holds.
    const std::size_t n = 2 * slab_block::block_bytes / sizeof(event) + 10;
    for (std::size_t i = 0; i < n; ++i) {
        nodes.push_back(slab.make());
        nodes.back()->sequence = static_cast<std::int64_t>(i);
        blocks.insert(slab.current());
        BOOST_REQUIRE(slab.current()->owns(nodes.back().get()));
        BOOST_REQUIRE(slab.current()->used() <= slab_block::block_bytes);
    }
    BOOST_TEST(blocks.size() >= 3u);
    for (std::size_t i = 0; i < n; ++i) BOOST_REQUIRE(nodes[i]->sequence == static_cast<std::int64_t>(i));
    // No two nodes overlap.
    std::vector<const event*> ptrs;
    for (const auto& p : nodes) ptrs.push_back(p.get());
    std::sort(ptrs.begin(), ptrs.end());
    for (std::size_t i = 1; i < ptrs.size(); ++i)
        BOOST_REQUIRE(reinterpret_cast<const char*>(ptrs[i]) - reinterpret_cast<const char*>(ptrs[i - 1]) >=
                      static_cast<std::ptrdiff_t>(sizeof(event)));
}

// Blocks outlive their filler while nodes live, and are freed with the last one, whatever
// the order and the thread that drops it.
BOOST_AUTO_TEST_CASE(blocks_live_as_long_as_their_nodes_on_any_thread) {
    event_list list;
    {
        event_slab slab;
        for (int i = 0; i < 12'000; ++i) {
            std::shared_ptr<event> e = slab.make();
            e->content = content::from_text("event " + std::to_string(i) + std::string(40, 'x'));
            list.push_back(event_list::pointer_type(std::move(e)));
        }
    } // the filler lets go: only the nodes hold the blocks now
    BOOST_TEST(list[11'999].text().starts_with("event 11999"));
    std::vector<event_list> parts(4);
    std::mt19937 rng(42);
    for (std::size_t i = 0; i < list.size(); ++i) parts[rng() % 4].push_back(list.shared(i));
    // A copy of one event survives everything else.
    event_list survivor;
    survivor.push_back(list.shared(5'000));
    list.clear();
    std::vector<std::thread> threads;
    for (auto& p : parts)
        threads.emplace_back([&p] {
            std::size_t chars = 0;
            for (const auto& e : p) chars += e.text().size();
            BOOST_CHECK(chars > 0);
            p.clear();
        });
    for (auto& t : threads) t.join();
    BOOST_TEST(survivor[0].text().starts_with("event 5000"));
    // Copy-on-write works on a slab node like on any other.
    event_list other = survivor;
    other.modify(0).sequence = 3;
    BOOST_TEST(survivor[0].sequence == 0);
}

BOOST_AUTO_TEST_CASE(an_allocation_too_large_for_the_block_goes_to_the_heap) {
    event_slab slab;
    (void)slab.make();
    slab_block* b = const_cast<slab_block*>(slab.current());
    detail::slab_allocator<char> alloc(b);
    char* big = alloc.allocate(slab_block::block_bytes); // cannot fit
    BOOST_TEST(!b->owns(big));
    big[0] = 'x';
    big[slab_block::block_bytes - 1] = 'y';
    alloc.deallocate(big, slab_block::block_bytes);
    char* small = alloc.allocate(100);
    BOOST_TEST(b->owns(small));
    const std::size_t before = b->live();
    alloc.deallocate(small, 100);
    BOOST_TEST(b->live() == before - 1);
    // A default allocator (no block) is plain operator new.
    detail::slab_allocator<int> none;
    int* p = none.allocate(4);
    p[3] = 1;
    none.deallocate(p, 4);
    BOOST_TEST((detail::slab_allocator<int>(b) == detail::slab_allocator<char>(b)));
    BOOST_TEST(!(none == detail::slab_allocator<char>(b)));
}

BOOST_AUTO_TEST_CASE(slabs_move) {
    event_slab a;
    auto e = a.make();
    const slab_block* b = a.current();
    event_slab c(std::move(a));
    BOOST_TEST(c.current() == b);
    BOOST_TEST(a.current() == nullptr); // NOLINT: testing the moved-from state
    event_slab d;
    (void)d.make();
    d = std::move(c);
    BOOST_TEST(d.current() == b);
    d.reset();
    BOOST_TEST(d.current() == nullptr);
    BOOST_TEST(b->live() == 1u); // e only
}

BOOST_AUTO_TEST_SUITE_END()
