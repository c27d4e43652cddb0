// softmax (ops.h) with the exponentials computed 4 or 8 at a time: exp_f32's steps (exp.h) on
// double lanes, compiled per SIMD target and dispatched at run time. The bits are those of
// softmax_plain (ops.cpp): the same exp, then the same double-precision partial sums. Blocks
// with an input outside the plain range (|x - max| >= 88, NaN) take exp_f32 element by element.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/softmax.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/exp-inl.h"
#include "kernels/exp.h"
#include "kernels/max-inl.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// *std::max_element(x, x + n), NaN rule included: the first element if it is NaN, else the
// largest of the others, NaN skipped.
float max_element(const float* x, size_t n) {
  if (std::isnan(x[0])) return x[0];
  return max_skipping_nan(x + 1, n - 1, x[0]);
}

// softmax_sum_parts over x: part j sums elements j, j + 8, j + 16, ... in order; a vector lane
// holds one part (two vectors of 4 doubles on AVX2), so each lane's chain of adds is the plain
// loop's part[j] chain.
double sum_parts(const float* x, size_t n) {
  double part[kSoftmaxParts] = {};
  size_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(dd);
  const bool two = 2 * lanes == kSoftmaxParts;  // AVX2: parts 0-3 in s0, 4-7 in s1
  if (lanes == kSoftmaxParts || two) {
    const hn::Rebind<float, decltype(dd)> df;
    auto s0 = hn::Zero(dd), s1 = s0;
    for (; i + kSoftmaxParts <= n; i += kSoftmaxParts) {
      s0 = hn::Add(s0, hn::PromoteTo(dd, hn::LoadU(df, x + i)));
      if (two) s1 = hn::Add(s1, hn::PromoteTo(dd, hn::LoadU(df, x + i + lanes)));
    }
    hn::StoreU(s0, dd, part);
    if (two) hn::StoreU(s1, dd, part + lanes);
  }
#endif
  for (; i < n; ++i) part[i % kSoftmaxParts] += x[i];
  return softmax_sum_parts(part);
}

void Softmax(float* x, size_t n) {
  if (n == 0) return;
  const float mx = max_element(x, n);
  if (mx == -std::numeric_limits<float>::infinity()) {  // nothing allowed: uniform would lie
    std::fill(x, x + n, 0.0f);
    return;
  }
  size_t i = 0;
#if HWY_NATIVE_FMA
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto vmx = hn::Set(df, mx);
  const auto limit = hn::Set(df, exp_detail::kPlainLimit);
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::Sub(hn::LoadU(df, x + i), vmx);
    if (hn::AllTrue(df, hn::Lt(hn::Abs(v), limit))) {
      hn::StoreU(exp_plain(dd, df, v), df, x + i);
    } else {
      for (size_t j = i; j < i + lanes; ++j) x[j] = exp_f32(x[j] - mx);
    }
  }
#endif
  for (; i < n; ++i) x[i] = exp_f32(x[i] - mx);
  const auto inv = static_cast<float>(1.0 / sum_parts(x, n));
  for (size_t j = 0; j < n; ++j) x[j] *= inv;
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(Softmax);

void softmax(std::span<float> x) {
  HWY_DYNAMIC_DISPATCH(Softmax)(x.data(), x.size());
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
