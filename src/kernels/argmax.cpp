// Greedy decoding's argmax in two vector passes (ops.h): the largest score that is not NaN, then
// the first index holding it. The maximum is max-inl.h's (softmax's too): a NaN never compares
// greater, so it is skipped, and the maximum is one value whatever the order, so both passes give
// the plain loops' answers exactly. One branchy loop over Qwen's 151,936 scores took 60-130 us a
// token on a Zen 5, 1-2% of a decode step.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/argmax.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>
#include <limits>

#include "kernels/max-inl.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float MaxNotNan(const float* x, size_t n) {
  return max_skipping_nan(x, n, -std::numeric_limits<float>::infinity());
}

size_t FirstEqual(const float* x, size_t n, float v) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  const auto vv = hn::Set(df, v);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const intptr_t k = hn::FindFirstTrue(df, hn::Eq(hn::LoadU(df, x + i), vv));
    if (k >= 0) return i + static_cast<size_t>(k);
  }
  for (; i < n; ++i)
    if (x[i] == v) return i;
  return n;
}

void CountSpecial(const float* x, size_t n, size_t* nan_or_inf, size_t* neg_inf) {
  const hn::ScalableTag<std::int32_t> di;
  const size_t lanes = hn::Lanes(di);
  const auto abs_mask = hn::Set(di, 0x7fffffff);
  const auto inf = hn::Set(di, 0x7f800000);
  const auto minus_inf = hn::Set(di, static_cast<std::int32_t>(0xff800000u));
  const auto* bits = reinterpret_cast<const std::int32_t*>(x);
  size_t bad = 0, minus = 0, i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(di, bits + i);
    bad += hn::CountTrue(di, hn::Or(hn::Gt(hn::And(v, abs_mask), inf), hn::Eq(v, inf)));
    minus += hn::CountTrue(di, hn::Eq(v, minus_inf));
  }
  for (; i < n; ++i) {
    const std::int32_t v = bits[i];
    bad += ((v & 0x7fffffff) > 0x7f800000 || v == 0x7f800000) ? 1 : 0;
    minus += v == static_cast<std::int32_t>(0xff800000u) ? 1 : 0;
  }
  *nan_or_inf = bad;
  *neg_inf = minus;
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(MaxNotNan);
HWY_EXPORT(FirstEqual);
HWY_EXPORT(CountSpecial);

void count_special(const float* x, std::size_t n, std::size_t* nan_or_inf, std::size_t* neg_inf) {
  HWY_DYNAMIC_DISPATCH(CountSpecial)(x, n, nan_or_inf, neg_inf);
}

float max_not_nan(const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(MaxNotNan)(x, n);
}

std::size_t first_equal(const float* x, std::size_t n, float v) {
  return HWY_DYNAMIC_DISPATCH(FirstEqual)(x, n, v);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
