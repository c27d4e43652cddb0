// The pool covers every index exactly once, for any size and grain, and runs jobs repeatedly.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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
  const std::size_t n = 1600;  // 16 pieces of 100: the caller's share is [0, 800)
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
