// exp_shifted_f64 (exp_f64.h): the polynomial of exp_f64_plain on double lanes, compiled per SIMD
// target and dispatched at run time. Inputs are clamped to [kExpF64Min, 0] before the formula so
// that no lane overflows the exponent; -inf lanes are set to 0 after it.
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
  const auto scale = hn::BitCast(dd, hn::Add(hn::ShiftLeft<52>(ki), hn::Set(du, 0x3ff0000000000000ull)));
  return hn::Mul(p, scale);
}
#endif

void ExpShiftedF64(const float* x, size_t n, float shift, double* out) {
  size_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto vshift = hn::Set(dd, static_cast<double>(shift));
  const auto lo = hn::Set(dd, kExpF64Min);
  const auto zero = hn::Zero(dd);
  const auto neg_inf = hn::Set(dd, -std::numeric_limits<double>::infinity());
  for (; i + lanes <= n; i += lanes) {
    const auto d = hn::Sub(hn::PromoteTo(dd, hn::LoadU(df, x + i)), vshift);
    const auto e = exp_lanes(dd, hn::Min(hn::Max(d, lo), zero));
    hn::StoreU(hn::IfThenZeroElse(hn::Eq(d, neg_inf), e), dd, out + i);
  }
#endif
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(shift);
    out[i] = d == -std::numeric_limits<double>::infinity()
                 ? 0.0
                 : exp_f64_plain(std::fmin(std::fmax(d, kExpF64Min), 0.0));
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

HWY_EXPORT(ExpShiftedF64);

void exp_shifted_f64(const float* x, std::size_t n, float shift, double* out) {
  HWY_DYNAMIC_DISPATCH(ExpShiftedF64)(x, n, shift, out);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
