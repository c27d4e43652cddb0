// The bandwidth probe's pass over given regions (bench reads the weights with it): every whole
// 32-bit word of every region read exactly once, whatever the threads, alignment and sizes,
// against a plain sum written here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/bandwidth.h"

namespace {

std::uint32_t plain_sum(std::span<const std::span<const std::uint8_t>> regions) {
  std::uint32_t sum = 0;
  for (const auto& r : regions)
    for (std::size_t i = 0; i + 4 <= r.size(); i += 4) {
      std::uint32_t w;
      std::memcpy(&w, r.data() + i, 4);
      sum += w;
    }
  return sum;
}

TEST(Bandwidth, ReadPassReadsEveryWholeWordOnce) {
  std::mt19937 rng(11);
  std::vector<std::uint8_t> bytes(3 << 20);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  // Unaligned starts, empty regions, sizes that are not whole words or vectors, and one region
  // long enough to be split between threads several times.
  const std::uint8_t* p = bytes.data();
  const std::vector<std::span<const std::uint8_t>> regions = {{p + 1, 3},
                                                              {p + 5, 0},
                                                              {p + 7, 1001},
                                                              {p + 4096, 64},
                                                              {p + 9999, 2 << 20},
                                                              {p + 3, 17},
                                                              {p + (2 << 20) + 12345, 77777}};
  const std::uint32_t want = plain_sum(regions);
  for (int threads : {1, 2, 3, 5}) {
    ls::ThreadPool pool(threads);
    const ls::kernels::ReadPass r = ls::kernels::read_pass(pool, regions);
    EXPECT_EQ(r.sum, want) << threads << " threads";
    EXPECT_GT(r.gb_per_s, 0.0);
  }
  ls::ThreadPool pool(2);
  EXPECT_EQ(ls::kernels::read_pass(pool, {}).sum, 0u);
}

}  // namespace
