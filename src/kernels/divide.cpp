// divide_to_float (ops.h): out[i] = float(double(x[i]) / t), 4 or 8 divisions at a time. A
// vector division rounds each lane as the scalar one does (IEEE 754), so the bits are the plain
// loop's. A multiplication by 1/t was tried first: with t = 0.8 (1/t = 1.25) a quarter of the
// products fall exactly half-way between two floats, where only the division's own rounding
// decides, so nearly every vector had to divide anyway.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/divide.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DivideToFloat(const float* x, size_t n, double t, float* out) {
  size_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto vt = hn::Set(dd, t);
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::DemoteTo(df, hn::Div(hn::PromoteTo(dd, hn::LoadU(df, x + i)), vt)), df, out + i);
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
