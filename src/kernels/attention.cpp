// Attention of a group of query heads over one KV head (the formula is attend_group's in ops.h),
// vectorized per SIMD target with Highway and dispatched at run time. It gives the bits of
// attend_group_plain (ops.cpp, the reference loops) exactly: each score is dot-inl.h's dot_impl
// (the sum dot_f32 does; a vector of positions at a time, with the lane sums transposed), softmax
// is softmax.cpp's, and each output element adds a * v over positions in order with a separate
// multiply and add. This file is built with -ffp-contract=off so that the compiler never fuses
// those two into an FMA (that would round once instead of twice and change the bits).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/dot-inl.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Positions whose value rows are visited together: 16 rows of a 128-wide F32 head are 8 KiB,
// which stay in L1 while every query head of the group passes over them.
constexpr size_t kPosBlock = 16;

// out[0, V) += sum_j a[j] * v_j[0, V) over np rows, V vectors from offset i, in order of j.
template <int V, class DF, typename W>
HWY_INLINE void accumulate_values(DF df, const W* const* v, const float* a, size_t np, size_t i,
                                  float* HWY_RESTRICT o) {
  const size_t lanes = hn::Lanes(df);
  auto o0 = hn::LoadU(df, o + i);
  auto o1 = V > 1 ? hn::LoadU(df, o + i + lanes) : o0;
  auto o2 = V > 2 ? hn::LoadU(df, o + i + 2 * lanes) : o0;
  auto o3 = V > 3 ? hn::LoadU(df, o + i + 3 * lanes) : o0;
  for (size_t j = 0; j < np; ++j) {
    const auto aj = hn::Set(df, a[j]);
    o0 = hn::Add(o0, hn::Mul(aj, load_weights(df, v[j] + i)));
    if constexpr (V > 1) o1 = hn::Add(o1, hn::Mul(aj, load_weights(df, v[j] + i + lanes)));
    if constexpr (V > 2) o2 = hn::Add(o2, hn::Mul(aj, load_weights(df, v[j] + i + 2 * lanes)));
    if constexpr (V > 3) o3 = hn::Add(o3, hn::Mul(aj, load_weights(df, v[j] + i + 3 * lanes)));
  }
  hn::StoreU(o0, df, o + i);
  if constexpr (V > 1) hn::StoreU(o1, df, o + i + lanes);
  if constexpr (V > 2) hn::StoreU(o2, df, o + i + 2 * lanes);
  if constexpr (V > 3) hn::StoreU(o3, df, o + i + 3 * lanes);
}

template <typename W>
void attend_impl(const float* q, size_t group, const KvRows& k_rows, const KvRows& v_rows,
                 size_t n_ctx, size_t hd, float scale, float* scores, float* out) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  // Scores, one vector of positions at a time: score = (sum of dot lanes + tail) * scale.
  size_t p = 0;
  const W* k[hn::MaxLanes(df)];
  hn::Vec<decltype(df)> acc[hn::MaxLanes(df)];
  HWY_ALIGN float sums[hn::MaxLanes(df)];
  HWY_ALIGN float tails[hn::MaxLanes(df)];
  for (; p + lanes <= n_ctx; p += lanes) {
    for (size_t j = 0; j < lanes; ++j) k[j] = reinterpret_cast<const W*>(k_rows.row(p + j));
    for (size_t g = 0; g < group; ++g) {
      for (size_t j = 0; j < lanes; ++j) acc[j] = dot_lanes(k[j], q + g * hd, hd, tails[j]);
      sum_lanes_of_each(df, acc, sums);
      const auto score = hn::Add(hn::Load(df, sums), hn::Load(df, tails));
      hn::StoreU(hn::Mul(score, hn::Set(df, scale)), df, scores + g * n_ctx + p);
    }
  }
  for (; p < n_ctx; ++p) {
    const W* kp = reinterpret_cast<const W*>(k_rows.row(p));
    for (size_t g = 0; g < group; ++g) scores[g * n_ctx + p] = dot_impl(kp, q + g * hd, hd) * scale;
  }
  for (size_t g = 0; g < group; ++g) softmax({scores + g * n_ctx, n_ctx});
  std::fill(out, out + group * hd, 0.0f);

  const W* v[kPosBlock];
  for (size_t p0 = 0; p0 < n_ctx; p0 += kPosBlock) {
    const size_t np = std::min(kPosBlock, n_ctx - p0);
    for (size_t j = 0; j < np; ++j) v[j] = reinterpret_cast<const W*>(v_rows.row(p0 + j));
    for (size_t g = 0; g < group; ++g) {
      const float* a = scores + g * n_ctx + p0;
      float* o = out + g * hd;
      size_t i = 0;
      for (; i + 4 * lanes <= hd; i += 4 * lanes) accumulate_values<4>(df, v, a, np, i, o);
      for (; i + lanes <= hd; i += lanes) accumulate_values<1>(df, v, a, np, i, o);
      for (; i < hd; ++i) {
        float s = o[i];
        for (size_t j = 0; j < np; ++j) s += a[j] * to_f32(v[j][i]);
        o[i] = s;
      }
    }
  }
}

void AttendGroup(const float* q, size_t group, const KvRows& k_rows, const KvRows& v_rows,
                 DType cache_type, size_t n_ctx, size_t hd, float scale, float* scores,
                 float* out) {
  switch (cache_type) {
    case DType::F32:
      return attend_impl<float>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
    case DType::BF16:
      return attend_impl<hwy::bfloat16_t>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
    case DType::F16:
      return attend_impl<hwy::float16_t>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
    default:
      fail("attend_group: the KV cache type must be F32, F16 or BF16, got {}",
           dtype_name(cache_type));
  }
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(AttendGroup);

void attend_group(const float* q, std::size_t group, const KvRows& k, const KvRows& v,
                  DType cache_type, std::size_t n_ctx, std::size_t head_dim, float scale,
                  float* scratch, float* out) {
  HWY_DYNAMIC_DISPATCH(AttendGroup)
  (q, group, k, v, cache_type, n_ctx, head_dim, scale, scratch, out);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
