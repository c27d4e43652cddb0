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
  const auto index = hn::BitCast(di, hn::And(ki, hn::Set(du, 31)));
  const auto table = hn::GatherIndex(du, kTable, index);
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
