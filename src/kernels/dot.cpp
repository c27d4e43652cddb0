// Highway implementations of the dot products, compiled once per SIMD target and dispatched at
// run time. Four independent accumulators hide FMA latency; the tail is handled by a masked
// load of zeros, so the summation order depends only on n and the vector width.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dot.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "core/dtype.h"
#include "kernels/dot.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Loads N lanes of weights as float32, whatever their storage type.
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

template <typename W>
HWY_INLINE float dot_impl(const W* HWY_RESTRICT w, const float* HWY_RESTRICT x, size_t n) {
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
  float tail = 0.0f;
  for (; i < n; ++i) {
    float wi;
    if constexpr (std::is_same_v<W, float>) {
      wi = w[i];
    } else if constexpr (std::is_same_v<W, hwy::bfloat16_t>) {
      wi = ls::bf16_to_f32(w[i].bits);
    } else {
      wi = ls::f16_to_f32(w[i].bits);
    }
    tail += wi * x[i];
  }
  s0 = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
  return hn::GetLane(hn::SumOfLanes(df, s0)) + tail;
}

float DotF32(const float* w, const float* x, size_t n) {
  return dot_impl(w, x, n);
}
float DotBF16(const uint16_t* w, const float* x, size_t n) {
  return dot_impl(reinterpret_cast<const hwy::bfloat16_t*>(w), x, n);
}
float DotF16(const uint16_t* w, const float* x, size_t n) {
  return dot_impl(reinterpret_cast<const hwy::float16_t*>(w), x, n);
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(DotF32);
HWY_EXPORT(DotBF16);
HWY_EXPORT(DotF16);

float dot_f32(const float* w, const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotF32)(w, x, n);
}
float dot_bf16(const std::uint16_t* w, const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotBF16)(w, x, n);
}
float dot_f16(const std::uint16_t* w, const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotF16)(w, x, n);
}

double dot_f32_ref(const float* w, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(w[i]) * x[i];
  return s;
}
double dot_bf16_ref(const std::uint16_t* w, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(ls::bf16_to_f32(w[i])) * x[i];
  return s;
}
double dot_f16_ref(const std::uint16_t* w, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(ls::f16_to_f32(w[i])) * x[i];
  return s;
}

const char* simd_target_name() {
  // Highway orders targets best-first by bit value: the lowest supported, compiled bit wins.
  const std::int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(targets & -targets);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
