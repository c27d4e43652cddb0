// The pool covers every index exactly once, for any size and grain, and runs jobs repeatedly.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_pool.h"

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ls::ThreadPool pool(threads);
    for (std::size_t n : {0u, 1u, 2u, 7u, 16u, 17u, 1000u}) {
      for (std::size_t grain : {1u, 4u, 16u}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(
            n,
            [&](std::size_t b, std::size_t e) {
              for (std::size_t i = b; i < e; ++i) hits[i]++;
            },
            grain);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
      }
    }
  }
}

TEST(ThreadPool, PiecesStartOnMultiplesOfTheGrain) {
  ls::ThreadPool pool(2);
  for (std::size_t n : {5u, 64u, 1000u, 4864u}) {
    for (std::size_t grain : {4u, 8u, 32u}) {
      std::atomic<int> bad{0};
      pool.parallel_for(
          n,
          [&](std::size_t b, std::size_t e) {
            if (b % grain != 0 || (e % grain != 0 && e != n) || b >= e) ++bad;
          },
          grain);
      EXPECT_EQ(bad.load(), 0) << n << " " << grain;
    }
  }
}

// A thread that finishes its share takes the rest of a slow one's: here the caller's first piece
// blocks until the worker has taken a piece of the caller's own share.
TEST(ThreadPool, AFreeThreadTakesOverAnotherThreadsShare) {
  ls::ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  const std::size_t n = 1600;  // the caller's share is [0, 800), the worker's [800, 1600)
  std::atomic<bool> taken{false};
  std::vector<std::atomic<int>> hits(n);
  pool.parallel_for(n, [&](std::size_t b, std::size_t e) {
    if (std::this_thread::get_id() != caller && b < n / 2) taken = true;
    if (b == 0)  // the caller's first piece: wait (bounded) for the worker to take over
      for (int i = 0; i < 5000 && !taken; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (std::size_t i = b; i < e; ++i) hits[i]++;
  });
  EXPECT_TRUE(taken.load());
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
}

// Within a share the pieces get smaller towards its end, so that a thread that has run out of
// work waits for at most a small last piece of the other's.
TEST(ThreadPool, PiecesShrinkTowardsTheShareEnd) {
  ls::ThreadPool pool(2);
  const std::size_t n = 3600;  // shares [0, 1800) and [1800, 3600)
  std::mutex m;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  pool.parallel_for(n, [&](std::size_t b, std::size_t e) {
    std::lock_guard lock(m);
    pieces.emplace_back(b, e);
  });
  std::sort(pieces.begin(), pieces.end());
  ASSERT_EQ(pieces.size(), 16u);
  for (std::size_t share = 0; share < 2; ++share) {
    const auto* p = &pieces[8 * share];
    EXPECT_EQ(p[0].first, 1800 * share);
    EXPECT_EQ(p[7].second, 1800 * (share + 1));
    for (int k = 1; k < 8; ++k)
      EXPECT_LE(p[k].second - p[k].first, p[k - 1].second - p[k - 1].first);
    EXPECT_LE(p[7].second - p[7].first, 1800u / 30);  // the last piece: 1/36 of the share
  }
}

// The two-phase loop: every prologue unit runs exactly once, and no index of the loop starts
// before all of them are done, for any thread count, size and number of units.
TEST(ThreadPool, ThePrologueRunsEveryUnitOnceBeforeTheLoop) {
  for (int threads : {1, 2, 3}) {
    ls::ThreadPool pool(threads);
    for (std::size_t units : {0u, 1u, 2u, 5u, 64u}) {
      for (std::size_t n : {0u, 1u, 9u, 1000u}) {
        std::vector<std::atomic<int>> unit_hits(units), hits(n);
        std::atomic<std::size_t> done{0};
        std::atomic<int> early{0};
        pool.parallel_for(
            n,
            [&](std::size_t b, std::size_t e) {
              if (done.load() != units) ++early;
              for (std::size_t i = b; i < e; ++i) hits[i]++;
            },
            4, units,
            [&](std::size_t u) {
              std::this_thread::sleep_for(std::chrono::microseconds(u % 3 == 0 ? 200 : 0));
              unit_hits[u]++;
              ++done;
            });
        EXPECT_EQ(early.load(), 0) << threads << " " << units << " " << n;
        for (std::size_t u = 0; u < units; ++u) ASSERT_EQ(unit_hits[u].load(), 1) << u;
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
      }
    }
  }
}
