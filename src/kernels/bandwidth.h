// A memory read-bandwidth probe: the machine's own limit, against which decode speed is
// reported (decode reads every weight once per token, so bandwidth / weight bytes is its
// ceiling). Wide SIMD loads with several independent accumulators, each thread streaming its
// own slice. read_pass streams given memory as one sequence (`bench` reads the weights
// themselves, in decode's order); measure_read_bandwidth a buffer of its own, much larger than
// the caches (on huge pages, as the weights are), best of several passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/thread_pool.h"

namespace ls::kernels {

struct BandwidthResult {
  double gb_per_s = 0;    // 1e9 bytes per second, best pass
  std::size_t bytes = 0;  // buffer size
  int passes = 0;
};

struct ReadPass {
  double gb_per_s = 0;    // 1e9 bytes per second
  std::uint32_t sum = 0;  // of every whole 32-bit word read (little-endian, wrapping): the proof
                          // that each was read once
};
// One pass over `regions` in order, as one sequence split over the threads in one loop (many
// short loops would measure the pool's hand-overs too). A region's last 1-3 bytes past its whole
// words are not read; regions need no alignment.
ReadPass read_pass(ThreadPool& pool, std::span<const std::span<const std::uint8_t>> regions);

BandwidthResult measure_read_bandwidth(ThreadPool& pool, std::size_t bytes = std::size_t{1} << 30,
                                       int passes = 5);

}  // namespace ls::kernels
