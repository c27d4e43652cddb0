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

// Accumulators whose lane sums sum_lanes_of_each takes in one go with a transposed tree: one per
// lane on the targets it has one for (0: elsewhere it is the plain loop over SumOfLanes).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kSumsAtOnce = 16;
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
constexpr int kSumsAtOnce = 8;
#else
constexpr int kSumsAtOnce = 0;
#endif

// out[j] = GetLane(SumOfLanes(acc[j])) for j < Lanes(df): the sums dot_impl takes, for a whole
// vector of dots at once. SumOfLanes adds lane i to lane i + L/2, then the same on the halves,
// down to one lane; here each level does that for several dots in one vector add (after
// shuffles that move the lanes side by side), so every sum is the same tree of the same adds.
template <class DF>
HWY_INLINE void sum_lanes_of_each(DF df, const hn::Vec<DF>* acc, float* HWY_RESTRICT out) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3  // kSumsAtOnce 16
  __m512 s1[8], s2[4], s3[2];
  for (int k = 0; k < 8; ++k) {  // lane j + lane j + 8: [dot 2k | dot 2k + 1], 8 lanes each
    const __m512 a = acc[2 * k].raw, b = acc[2 * k + 1].raw;
    s1[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0xEE), _mm512_shuffle_f32x4(a, b, 0x44));
  }
  for (int k = 0; k < 4; ++k) {  // j + j + 4: quarter m holds dot 4k + m, 4 lanes
    const __m512 a = s1[2 * k], b = s1[2 * k + 1];
    s2[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0xDD), _mm512_shuffle_f32x4(a, b, 0x88));
  }
  for (int k = 0; k < 2; ++k) {  // j + j + 2: quarter m holds dots 8k + m, 8k + 4 + m, 2 each
    const __m512d a = _mm512_castps_pd(s2[2 * k]), b = _mm512_castps_pd(s2[2 * k + 1]);
    s3[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpackhi_pd(a, b)),
                          _mm512_castpd_ps(_mm512_unpacklo_pd(a, b)));
  }
  // The last level: lane 4m + c holds dot 4c + m.
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(3, 1, 3, 1)),
                                 _mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(2, 0, 2, 0)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(order, r));
  (void)df;
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2  // kSumsAtOnce 8
  __m256 s1[4], s2[2];
  for (int k = 0; k < 4; ++k) {  // lane j + lane j + 4: [dot 2k | dot 2k + 1], 4 lanes each
    const __m256 a = acc[2 * k].raw, b = acc[2 * k + 1].raw;
    s1[k] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x31), _mm256_permute2f128_ps(a, b, 0x20));
  }
  for (int k = 0; k < 2; ++k) {  // j + j + 2: half h holds dots 4k + h, 4k + 2 + h, 2 lanes each
    const __m256d a = _mm256_castps_pd(s1[2 * k]), b = _mm256_castps_pd(s1[2 * k + 1]);
    s2[k] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpackhi_pd(a, b)),
                          _mm256_castpd_ps(_mm256_unpacklo_pd(a, b)));
  }
  // The last level: lanes hold dots 0, 2, 4, 6, 1, 3, 5, 7.
  const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 1, 3, 1)),
                                 _mm256_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(2, 0, 2, 0)));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(r, order));
  (void)df;
#else
  for (size_t j = 0; j < hn::Lanes(df); ++j) out[j] = hn::GetLane(hn::SumOfLanes(df, acc[j]));
#endif
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LS_KERNELS_DOT_INL_H_
