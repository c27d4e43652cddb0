// The read loop is a Highway kernel (dispatched like the others) summing 8 vectors per
// iteration into 4 accumulators; the sum is returned so the compiler cannot drop the loads.
// Integer adds: any bytes (weights too) are read at the same speed, where float adds could meet
// denormals.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/bandwidth.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstring>

#include "kernels/bandwidth.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

uint32_t ReadSum(const uint32_t* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 8 * N <= n; i += 8 * N) {
    a0 = hn::Add(a0, hn::Add(hn::LoadU(d, p + i), hn::LoadU(d, p + i + 4 * N)));
    a1 = hn::Add(a1, hn::Add(hn::LoadU(d, p + i + N), hn::LoadU(d, p + i + 5 * N)));
    a2 = hn::Add(a2, hn::Add(hn::LoadU(d, p + i + 2 * N), hn::LoadU(d, p + i + 6 * N)));
    a3 = hn::Add(a3, hn::Add(hn::LoadU(d, p + i + 3 * N), hn::LoadU(d, p + i + 7 * N)));
  }
  // The lanes summed here as unsigned (wrapping) words: GCC's _mm512_reduce_add_epi32, under
  // Highway's SumOfLanes, adds them as signed ints, an overflow UBSan reports.
  HWY_ALIGN uint32_t lane[hn::MaxLanes(d)];
  hn::Store(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), d, lane);
  uint32_t sum = 0;
  for (size_t j = 0; j < N; ++j) sum += lane[j];
  for (; i < n; ++i) {  // (regions need not be 4-byte aligned)
    uint32_t v;
    std::memcpy(&v, p + i, sizeof v);
    sum += v;
  }
  return sum;
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "core/huge_page_buffer.h"

namespace ls::kernels {

HWY_EXPORT(ReadSum);

ReadPass read_pass(ThreadPool& pool, std::span<const std::span<const std::uint8_t>> regions) {
  // The regions as one sequence of 32-bit words, split over the threads in one loop: the
  // machine's rate, not that of many short loops.
  std::vector<std::size_t> starts{0};  // starts[i]: region i's first word in the sequence
  for (const auto& r : regions) starts.push_back(starts.back() + r.size() / sizeof(std::uint32_t));
  std::atomic<std::uint32_t> sink{0};  // keeps the loads
  const auto t0 = std::chrono::steady_clock::now();
  pool.parallel_for(
      starts.back(),
      [&](std::size_t b, std::size_t e) {
        std::size_t i = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), b) -
                                                 starts.begin() - 1);
        std::uint32_t sum = 0;
        for (; b < e; ++i) {
          const std::size_t end = std::min(e, starts[i + 1]);
          const auto* words = reinterpret_cast<const std::uint32_t*>(regions[i].data());
          sum += HWY_DYNAMIC_DISPATCH(ReadSum)(words + (b - starts[i]), end - b);
          b = end;
        }
        sink.fetch_add(sum, std::memory_order_relaxed);
      },
      4096);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double bytes = static_cast<double>(starts.back() * sizeof(std::uint32_t));
  return {secs > 0 ? bytes / secs / 1e9 : 0.0, sink.load()};
}

BandwidthResult measure_read_bandwidth(ThreadPool& pool, std::size_t bytes, int passes) {
  // On huge pages, as the weights the decode reads (model/repack.h): the same TLB cost.
  HugePageBuffer mem(bytes);
  // Touch every page (in parallel, so each thread's pages are local to it).
  pool.parallel_for(
      bytes, [&](std::size_t b, std::size_t e) { std::memset(mem.data() + b, 0, e - b); },
      std::size_t{1} << 16);
  BandwidthResult r;
  r.bytes = bytes;
  r.passes = passes;
  const std::span<const std::uint8_t> all(mem.data(), bytes);
  for (int p = 0; p < passes; ++p)
    r.gb_per_s = std::max(r.gb_per_s, read_pass(pool, {&all, 1}).gb_per_s);
  return r;
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
