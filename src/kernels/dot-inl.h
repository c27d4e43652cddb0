// The per-target body of a float dot product, shared by every Highway kernel that must give the
// same bits as dot_f32/dot_bf16/dot_f16 (dot.cpp) and attention (attention.cpp). Included once
// per SIMD target (Highway's -inl.h convention: the guard toggles with HWY_TARGET_TOGGLE).
// Four independent accumulators hide FMA latency; the sum order depends only on n and the width.
#if defined(LS_KERNELS_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LS_KERNELS_DOT_INL_H_
#undef LS_KERNELS_DOT_INL_H_
#else
#define LS_KERNELS_DOT_INL_H_
#endif

#include <hwy/highway.h>

#include "core/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Loads N lanes of weights as float32, whatever their storage type (widening is exact).
template <class DF>
HWY_INLINE hn::Vec<DF> load_weights(DF df, const float* w) {
  return hn::LoadU(df, w);
}
template <class DF>
HWY_INLINE hn::Vec<DF> load_weights(DF df, const hwy::bfloat16_t* w) {
  const hn::Rebind<hwy::bfloat16_t, DF> dbf;
  return hn::PromoteTo(df, hn::LoadU(dbf, w));
}
template <class DF>
HWY_INLINE hn::Vec<DF> load_weights(DF df, const hwy::float16_t* w) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, w));
}

HWY_INLINE float to_f32(float v) {
  return v;
}
HWY_INLINE float to_f32(hwy::bfloat16_t v) {
  return ls::bf16_to_f32(v.bits);
}
HWY_INLINE float to_f32(hwy::float16_t v) {
  return ls::f16_to_f32(v.bits);
}

// The dot product before its final sum over lanes: the lanes' partial sums and the scalar sum of
// the tail elements (those past the last whole vector). dot_impl adds them up.
template <typename W>
HWY_INLINE hn::Vec<hn::ScalableTag<float>> dot_lanes(const W* HWY_RESTRICT w,
                                                     const float* HWY_RESTRICT x, size_t n,
                                                     float& tail) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  auto s0 = hn::Zero(df), s1 = hn::Zero(df), s2 = hn::Zero(df), s3 = hn::Zero(df);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    s0 = hn::MulAdd(load_weights(df, w + i), hn::LoadU(df, x + i), s0);
    s1 = hn::MulAdd(load_weights(df, w + i + lanes), hn::LoadU(df, x + i + lanes), s1);
    s2 = hn::MulAdd(load_weights(df, w + i + 2 * lanes), hn::LoadU(df, x + i + 2 * lanes), s2);
    s3 = hn::MulAdd(load_weights(df, w + i + 3 * lanes), hn::LoadU(df, x + i + 3 * lanes), s3);
  }
  for (; i + lanes <= n; i += lanes) {
    s0 = hn::MulAdd(load_weights(df, w + i), hn::LoadU(df, x + i), s0);
  }
  tail = 0.0f;
  for (; i < n; ++i) {
    tail += to_f32(w[i]) * x[i];
  }
  return hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
}

template <typename W>
HWY_INLINE float dot_impl(const W* HWY_RESTRICT w, const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> df;
  float tail;
  const auto s = dot_lanes(w, x, n, tail);
  return hn::GetLane(hn::SumOfLanes(df, s)) + tail;
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LS_KERNELS_DOT_INL_H_
