// The vector form of exp_f32 (exp.h) shared by the Highway kernels that must give its bits
// (softmax.cpp, silu.cpp). Included once per SIMD target (Highway's -inl.h convention).
#if defined(LS_KERNELS_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LS_KERNELS_EXP_INL_H_
#undef LS_KERNELS_EXP_INL_H_
#else
#define LS_KERNELS_EXP_INL_H_
#endif

#include <hwy/highway.h>

#include "kernels/exp.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_NATIVE_FMA
// exp_f32 of Lanes(dd) floats in the plain range, step for step (MulAdd/MulSub are fused here).
template <class DD, class DF>
HWY_INLINE hn::Vec<DF> exp_plain(DD dd, DF df, hn::Vec<DF> x) {
  using namespace exp_detail;
  const hn::RebindToUnsigned<DD> du;
  const hn::RebindToSigned<DD> di;
  const auto xd = hn::PromoteTo(dd, x);
  const auto inv_ln2n = hn::Set(dd, kInvLn2N);
  const auto shift = hn::Set(dd, kShift);
  auto kd = hn::MulAdd(inv_ln2n, xd, shift);
  const auto ki = hn::BitCast(du, kd);
  kd = hn::Sub(kd, shift);
  const auto r = hn::MulSub(inv_ln2n, xd, kd);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // The 32-entry table in four registers and two two-table permutes, blended on bit 4 of the
  // index: the same entries as the gather below, without the gather (AMD EPYC Zen 5: silu_mul of
  // 4,864 values 3.2-4.3 -> 2.0-2.5 us, run serially before each decode step's ffn_down).
  (void)di;
  const __m512i idx = ki.raw;  // permutex2var reads the low 4 bits; bit 4 picks the pair
  const auto* t = reinterpret_cast<const __m512i*>(kTable);
  const __m512i lo =
      _mm512_permutex2var_epi64(_mm512_loadu_si512(t), idx, _mm512_loadu_si512(t + 1));
  const __m512i hi =
      _mm512_permutex2var_epi64(_mm512_loadu_si512(t + 2), idx, _mm512_loadu_si512(t + 3));
  const __mmask8 upper = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
  const hn::Vec<decltype(du)> table{_mm512_mask_blend_epi64(upper, lo, hi)};
#else
  const auto index = hn::BitCast(di, hn::And(ki, hn::Set(du, 31)));
  const auto table = hn::GatherIndex(du, kTable, index);
#endif
  const auto s = hn::BitCast(dd, hn::Add(table, hn::ShiftLeft<47>(ki)));
  const auto z = hn::MulAdd(r, hn::Set(dd, kC0), hn::Set(dd, kC1));
  const auto r2 = hn::Mul(r, r);
  auto y = hn::MulAdd(r, hn::Set(dd, kC2), hn::Set(dd, 1.0));
  y = hn::MulAdd(z, r2, y);
  return hn::DemoteTo(df, hn::Mul(y, s));
}
#endif

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LS_KERNELS_EXP_INL_H_
