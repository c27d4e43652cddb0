// silu_mul (ops.h) vectorized per SIMD target: out = g / (1 + exp(-g)) * up with exp_f32's vector
// form (exp-inl.h) and the same float add, divide and multiply, so the bits are silu_mul_plain's
// (ops.cpp). Blocks with a gate outside the plain range (|g| >= 88, NaN) go element by element.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/silu.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/exp-inl.h"
#include "kernels/exp.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void SiluMul(const float* gate, const float* up, size_t n, float* out) {
  size_t i = 0;
#if HWY_NATIVE_FMA
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto limit = hn::Set(df, exp_detail::kPlainLimit);
  const auto one = hn::Set(df, 1.0f);
  for (; i + lanes <= n; i += lanes) {
    const auto g = hn::LoadU(df, gate + i);
    if (!hn::AllTrue(df, hn::Lt(hn::Abs(g), limit))) {
      for (size_t j = i; j < i + lanes; ++j) out[j] = gate[j] / (1.0f + exp_f32(-gate[j])) * up[j];
      continue;
    }
    const auto e = exp_plain(dd, df, hn::Neg(g));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(df, up + i)), df, out + i);
  }
#endif
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + exp_f32(-gate[i])) * up[i];
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(SiluMul);

void silu_mul(const float* gate, const float* up, std::size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, n, out);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
