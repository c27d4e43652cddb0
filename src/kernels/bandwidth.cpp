// The read loop is a Highway kernel (dispatched like the others) summing 8 vectors per
// iteration into 4 accumulators; the sum is returned so the compiler cannot drop the loads.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/bandwidth.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/bandwidth.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float ReadSum(const float* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 8 * N <= n; i += 8 * N) {
    a0 = hn::Add(a0, hn::Add(hn::Load(d, p + i), hn::Load(d, p + i + 4 * N)));
    a1 = hn::Add(a1, hn::Add(hn::Load(d, p + i + N), hn::Load(d, p + i + 5 * N)));
    a2 = hn::Add(a2, hn::Add(hn::Load(d, p + i + 2 * N), hn::Load(d, p + i + 6 * N)));
    a3 = hn::Add(a3, hn::Add(hn::Load(d, p + i + 3 * N), hn::Load(d, p + i + 7 * N)));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "core/huge_page_buffer.h"

namespace ls::kernels {

HWY_EXPORT(ReadSum);

BandwidthResult measure_read_bandwidth(ThreadPool& pool, std::size_t bytes, int passes) {
  const std::size_t n = bytes / sizeof(float);
  // On huge pages, as the weights the decode reads (model/repack.h): the same TLB cost.
  HugePageBuffer mem(n * sizeof(float));
  auto* data = reinterpret_cast<float*>(mem.data());
  // Touch every page (in parallel, so each thread's pages are local to it).
  pool.parallel_for(
      n, [&](std::size_t b, std::size_t e) { std::memset(data + b, 0, (e - b) * sizeof(float)); },
      4096);
  BandwidthResult r;
  r.bytes = n * sizeof(float);
  r.passes = passes;
  std::atomic<float> sink{0};
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(
        n,
        [&](std::size_t b, std::size_t e) {
          const float s = HWY_DYNAMIC_DISPATCH(ReadSum)(data + b, e - b);
          sink.store(sink.load() + s);
        },
        4096);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.gb_per_s = std::max(r.gb_per_s, static_cast<double>(r.bytes) / secs / 1e9);
  }
  if (sink.load() != 0.0f) r.gb_per_s = -1;  // impossible: the buffer is zero
  return r;
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
