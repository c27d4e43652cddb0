// The pool covers every index exactly once, for any size and grain, and runs jobs repeatedly.
#include <gtest/gtest.h>

#include <atomic>
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
