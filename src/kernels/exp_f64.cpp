// exp_bounds_f64 (exp_f64.h): the polynomial of exp_f64_plain on double lanes, compiled per SIMD
// target and dispatched at run time. Lanes outside [kExpF64Min, 0] compute exp(0) (no lane
// overflows the exponent) and take their fixed bounds after it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/exp_f64.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/exp_f64.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_HAVE_FLOAT64
template <class DD>
HWY_INLINE hn::Vec<DD> exp_lanes(DD dd, hn::Vec<DD> x) {
  using namespace exp_f64_detail;
  const hn::RebindToUnsigned<DD> du;
  auto kd = hn::MulAdd(x, hn::Set(dd, kInvLn2), hn::Set(dd, kShift));
  const auto ki = hn::BitCast(du, kd);
  kd = hn::Sub(kd, hn::Set(dd, kShift));
  auto r = hn::NegMulAdd(kd, hn::Set(dd, kLn2Hi), x);
  r = hn::NegMulAdd(kd, hn::Set(dd, kLn2Lo), r);
  auto p = hn::Set(dd, kInvFact[0]);
  for (int j = 1; j < 12; ++j) p = hn::MulAdd(p, r, hn::Set(dd, kInvFact[j]));
  p = hn::MulAdd(p, r, hn::Set(dd, 1.0));
  p = hn::MulAdd(p, r, hn::Set(dd, 1.0));
  // 2^k: k's low bits shifted into the exponent field, added to the bits of 1.0.
  const auto scale =
      hn::BitCast(dd, hn::Add(hn::ShiftLeft<52>(ki), hn::Set(du, 0x3ff0000000000000ull)));
  return hn::Mul(p, scale);
}
#endif

// One element of ExpBoundsF64, the scalar way (tails and targets without double lanes).
HWY_INLINE void bounds_one(double d, double* lo, double* hi) {
  if (std::isnan(d)) {
    *lo = *hi = d;
  } else if (d == -std::numeric_limits<double>::infinity()) {
    *lo = *hi = 0.0;
  } else if (d < kExpF64Min) {
    *lo = 0.0, *hi = 0x1p-1000;
  } else if (d > 0.0) {
    *lo = 0.0, *hi = std::numeric_limits<double>::infinity();
  } else {
    const double w = exp_f64_plain(d);
    *lo = w - w * kExpBoundsMargin, *hi = w + w * kExpBoundsMargin;
  }
}

void ExpBoundsF64(const float* x, size_t n, float shift, double* lo, double* hi) {
  size_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto vshift = hn::Set(dd, static_cast<double>(shift));
  const auto min = hn::Set(dd, kExpF64Min);
  const auto zero = hn::Zero(dd);
  const auto margin = hn::Set(dd, kExpBoundsMargin);
  const auto tiny = hn::Set(dd, 0x1p-1000);
  const auto inf = hn::Set(dd, std::numeric_limits<double>::infinity());
  const auto neg_inf = hn::Neg(inf);
  for (; i + lanes <= n; i += lanes) {
    const auto d = hn::Sub(hn::PromoteTo(dd, hn::LoadU(df, x + i)), vshift);
    const auto in_range = hn::And(hn::Ge(d, min), hn::Le(d, zero));  // false for NaN too
    const auto w = exp_lanes(dd, hn::IfThenElse(in_range, d, zero));
    const auto e = hn::Mul(w, margin);
    // Outside: NaN for NaN, [0, 0] for -inf, [0, 2^-1000] below kExpF64Min, [0, inf] above 0.
    const auto nan = hn::IsNaN(d);
    const auto out_lo = hn::IfThenElse(nan, d, zero);
    const auto out_hi = hn::IfThenElse(
        nan, d,
        hn::IfThenElse(hn::Eq(d, neg_inf), zero, hn::IfThenElse(hn::Gt(d, zero), inf, tiny)));
    hn::StoreU(hn::IfThenElse(in_range, hn::Sub(w, e), out_lo), dd, lo + i);
    if (hi != nullptr) hn::StoreU(hn::IfThenElse(in_range, hn::Add(w, e), out_hi), dd, hi + i);
  }
#endif
  for (; i < n; ++i) {
    double upper = 0;
    bounds_one(static_cast<double>(x[i]) - static_cast<double>(shift), lo + i, &upper);
    if (hi != nullptr) hi[i] = upper;
  }
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

double exp_f64_plain(double x) {
  using namespace exp_f64_detail;
  double kd = std::fma(x, kInvLn2, kShift);
  const auto ki = std::bit_cast<std::uint64_t>(kd);
  kd -= kShift;
  double r = std::fma(-kd, kLn2Hi, x);
  r = std::fma(-kd, kLn2Lo, r);
  double p = kInvFact[0];
  for (int j = 1; j < 12; ++j) p = std::fma(p, r, kInvFact[j]);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  return p * std::bit_cast<double>((ki << 52) + 0x3ff0000000000000ull);
}

HWY_EXPORT(ExpBoundsF64);

void exp_bounds_f64(const float* x, std::size_t n, float shift, double* lo, double* hi) {
  HWY_DYNAMIC_DISPATCH(ExpBoundsF64)(x, n, shift, lo, hi);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
