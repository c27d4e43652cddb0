// divide_to_float (ops.h): out[i] = float(double(x[i]) / t) with the division's bits, by a
// multiplication checked lane by lane. m = x * (1/t) is within 2^-51 of the quotient (two
// roundings), as is the rounded quotient itself; when every double within 2^-50 of m rounds to
// the same float, that float is the division's. Lanes where it does not (a quotient close to
// half-way between two floats; NaN; near float's overflow) divide; infinities stay infinite. The
// temperature stage runs this over the whole vocabulary every step (a double division a score was
// ~0.7 ns on AMD EPYC Zen 4).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/divide.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DivideToFloat(const float* x, size_t n, double t, float* out) {
  const double inv = 1.0 / t;
  size_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto vinv = hn::Set(dd, inv);
  const auto margin = hn::Set(dd, 0x1p-50);
  for (; i + lanes <= n; i += lanes) {
    const auto m = hn::Mul(hn::PromoteTo(dd, hn::LoadU(df, x + i)), vinv);
    // Removed tokens (-inf) stay -inf, as the division leaves them; every other lane must be
    // decided, and far from float's overflow (where a conversion may saturate).
    const auto inf = hn::IsInf(m);
    const auto finite_m = hn::IfThenZeroElse(inf, m);
    const auto e = hn::Abs(hn::Mul(finite_m, margin));
    // The two ends as floats, compared (and kept) as doubles: masks stay in one lane type.
    const auto lo = hn::PromoteTo(dd, hn::DemoteTo(df, hn::Sub(finite_m, e)));
    const auto hi = hn::PromoteTo(dd, hn::DemoteTo(df, hn::Add(finite_m, e)));
    const auto decided = hn::And(hn::Eq(lo, hi), hn::Lt(hn::Abs(finite_m), hn::Set(dd, 1e38)));
    if (hn::AllTrue(dd, hn::Or(inf, decided))) {  // NaN lanes: false
      hn::StoreU(hn::DemoteTo(df, hn::IfThenElse(inf, m, lo)), df, out + i);
      continue;
    }
    for (size_t j = i; j < i + lanes; ++j)
      out[j] = static_cast<float>(static_cast<double>(x[j]) / t);
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(x[i]) / t);
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(DivideToFloat);

void divide_to_float(const float* x, std::size_t n, double t, float* out) {
  HWY_DYNAMIC_DISPATCH(DivideToFloat)(x, n, t, out);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
