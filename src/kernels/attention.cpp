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

// Asks for cache rows [p0, p1) (`bytes` each) ahead of use when p0 starts a new block of the
// paged cache: a block keeps 16 positions of one layer together, so the next block's rows lie
// where the hardware prefetchers do not look (within a block they follow on their own, and a
// prefetch of lines already in cache only costs load slots).
HWY_INLINE void prefetch_block(const KvRows& rows, size_t p0, size_t p1, size_t bytes) {
  if (p0 >= p1 || p0 % rows.block_rows != 0) return;
  const char* r = reinterpret_cast<const char*>(rows.row(p0));
  p1 = std::min(p1, p0 + rows.block_rows);
  for (size_t p = p0; p < p1; ++p, r += rows.row_bytes)
    for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(r + b);
}

// out[j] = rows.row(p + j) for j < n, one division per block of the cache rather than per row.
template <typename W>
HWY_INLINE void row_pointers(const KvRows& rows, size_t p, size_t n, const W** out) {
  for (size_t j = 0; j < n;) {
    const auto* r = rows.row(p + j);
    const size_t left_in_block = rows.block_rows - (p + j) % rows.block_rows;
    for (const size_t stop = std::min(n, j + left_in_block); j < stop; ++j, r += rows.row_bytes)
      out[j] = reinterpret_cast<const W*>(r);
  }
}

// For each of G heads g: o[g][i, i + V vectors) += sum_j a[g][j] * v_j[same] over np rows, in
// order of j. The G * V sums are independent chains of adds, interleaved so that the adds' latency
// overlaps (one head's 4 chains waited on it), and each value vector is loaded once for G heads.
template <int V, int G, class DF, typename W>
HWY_INLINE void accumulate_values(DF df, const W* const* v, const float* const* a, size_t np,
                                  size_t i, float* const* o) {
  const size_t lanes = hn::Lanes(df);
  hn::Vec<DF> acc[G][V];
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int u = 0; u < V; ++u) acc[g][u] = hn::LoadU(df, o[g] + i + u * lanes);
  for (size_t j = 0; j < np; ++j) {
    hn::Vec<DF> vj[V];
#pragma GCC unroll 4
    for (int u = 0; u < V; ++u) vj[u] = load_weights(df, v[j] + i + u * lanes);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const auto aj = hn::Set(df, a[g][j]);
#pragma GCC unroll 4
      for (int u = 0; u < V; ++u) acc[g][u] = hn::Add(acc[g][u], hn::Mul(aj, vj[u]));
    }
  }
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int u = 0; u < V; ++u) hn::StoreU(acc[g][u], df, o[g] + i + u * lanes);
}

// The value sums of heads [g0, g0 + G) for one block of positions, every vector of the head.
template <int G, class DF, typename W>
HWY_INLINE void accumulate_heads(DF df, const W* const* v, const float* const* a, size_t np,
                                 size_t hd, float* const* o) {
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + 4 * lanes <= hd; i += 4 * lanes) accumulate_values<4, G>(df, v, a, np, i, o);
  for (; i + lanes <= hd; i += lanes) accumulate_values<1, G>(df, v, a, np, i, o);
  for (; i < hd; ++i)
    for (int g = 0; g < G; ++g) {
      float s = o[g][i];
      for (size_t j = 0; j < np; ++j) s += a[g][j] * to_f32(v[j][i]);
      o[g][i] = s;
    }
}

// kHd: the head size when known at compile time (0: hd), so that the common sizes' dots and value
// sums unroll with the query vectors kept in registers (the same operations in the same order).
template <typename W, size_t kHd>
void attend_impl(const float* q, size_t group, const KvRows& k_rows, const KvRows& v_rows,
                 size_t n_ctx, size_t hd_arg, float scale, float* scores, float* out) {
  const size_t hd = kHd != 0 ? kHd : hd_arg;
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  // Scores, one vector of positions at a time: score = (sum of dot lanes + tail) * scale.
  size_t p = 0;
  const W* k[hn::MaxLanes(df)];
  hn::Vec<decltype(df)> acc[hn::MaxLanes(df)];
  HWY_ALIGN float sums[hn::MaxLanes(df)];
  HWY_ALIGN float tails[hn::MaxLanes(df)];
  for (; p + lanes <= n_ctx; p += lanes) {
    prefetch_block(k_rows, p + lanes, std::min(n_ctx, p + 2 * lanes), hd * sizeof(W));
    row_pointers(k_rows, p, lanes, k);
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
    prefetch_block(v_rows, p0 + kPosBlock, std::min(n_ctx, p0 + 2 * kPosBlock), hd * sizeof(W));
    row_pointers(v_rows, p0, np, v);
    for (size_t g0 = 0; g0 < group; g0 += 4) {  // up to 4 heads at a time
      const float* a[4];
      float* o[4];
      const size_t ng = std::min<size_t>(4, group - g0);
      for (size_t g = 0; g < ng; ++g) {
        a[g] = scores + (g0 + g) * n_ctx + p0;
        o[g] = out + (g0 + g) * hd;
      }
      if (ng == 4) accumulate_heads<4>(df, v, a, np, hd, o);
      if (ng == 3) accumulate_heads<3>(df, v, a, np, hd, o);
      if (ng == 2) accumulate_heads<2>(df, v, a, np, hd, o);
      if (ng == 1) accumulate_heads<1>(df, v, a, np, hd, o);
    }
  }
}

// Qwen2.5 and Qwen3 heads are 64 or 128 wide.
template <typename W>
void attend_sized(const float* q, size_t group, const KvRows& k_rows, const KvRows& v_rows,
                  size_t n_ctx, size_t hd, float scale, float* scores, float* out) {
  if (hd == 64) return attend_impl<W, 64>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
  if (hd == 128)
    return attend_impl<W, 128>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
  attend_impl<W, 0>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
}

void AttendGroup(const float* q, size_t group, const KvRows& k_rows, const KvRows& v_rows,
                 DType cache_type, size_t n_ctx, size_t hd, float scale, float* scores,
                 float* out) {
  switch (cache_type) {
    case DType::F32:
      return attend_sized<float>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
    case DType::BF16:
      return attend_sized<hwy::bfloat16_t>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
    case DType::F16:
      return attend_sized<hwy::float16_t>(q, group, k_rows, v_rows, n_ctx, hd, scale, scores, out);
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
