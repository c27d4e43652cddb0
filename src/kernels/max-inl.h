// The running maximum that skips NaN, shared by the Highway kernels that take a float maximum
// (softmax.cpp's max_element, argmax.cpp's max_not_nan). Included once per SIMD target
// (Highway's -inl.h convention).
#if defined(LS_KERNELS_MAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LS_KERNELS_MAX_INL_H_
#undef LS_KERNELS_MAX_INL_H_
#else
#define LS_KERNELS_MAX_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The largest of `init` and x[0, n), NaN skipped (v > m is false for a NaN v): each lane of two
// vectors keeps a running maximum (two chains, so the compares' latency overlaps), then the lanes
// and the tail. The maximum is one value whatever the order (of equal zeros either sign).
HWY_INLINE float max_skipping_nan(const float* x, size_t n, float init) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  auto m0 = hn::Set(df, init), m1 = m0;
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto a = hn::LoadU(df, x + i), b = hn::LoadU(df, x + i + lanes);
    m0 = hn::IfThenElse(hn::Gt(a, m0), a, m0);
    m1 = hn::IfThenElse(hn::Gt(b, m1), b, m1);
  }
  m0 = hn::IfThenElse(hn::Gt(m1, m0), m1, m0);
  HWY_ALIGN float l[hn::MaxLanes(df)];
  hn::Store(m0, df, l);
  float best = init;
  for (size_t j = 0; j < lanes; ++j) best = l[j] > best ? l[j] : best;
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LS_KERNELS_MAX_INL_H_
