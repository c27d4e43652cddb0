// The BF16 x BF16 dot (bf16_dot.h; its scalar definition: bf16_dot_scalar, bf16_dot.cpp) with
// vdpbf16ps, on CPUs with AVX512_BF16: each instruction does the definition's two fused
// multiply-adds (odd element, then even) in each of 16 lanes. A tile keeps up to 4 rows x 4 tokens
// of accumulators (16 of the 32 registers), so each weight and activation chunk is loaded once for
// 4 uses. The last, partial chunk is read with a masked load that zero-fills, the definition's
// padding.
#include <immintrin.h>

#include <vector>

#include "kernels/x86/bf16_dot_simd.h"

#include "kernels/x86/avx512_warnings.h"

#define LS_AVX512BF16 \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

namespace ls::kernels::bf16_detail {
namespace {

// sum_tree16 on the lanes of v.
LS_AVX512BF16 inline float sum_lanes(__m512 v) {
  const __m256 t8 = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
  const __m128 t4 = _mm_add_ps(_mm256_extractf128_ps(t8, 1), _mm256_castps256_ps128(t8));
  const __m128 t2 = _mm_add_ps(_mm_movehl_ps(t4, t4), t4);  // t4[0] + t4[2], t4[1] + t4[3]
  return _mm_cvtss_f32(_mm_add_ss(_mm_movehdup_ps(t2), t2));
}

// Elements [begin, end) of R rows x T tokens of n elements each. The accumulators start at zero
// (begin == 0) or from carry, and end in carry (end < n) or summed into out (end == n).
template <int R, int T>
LS_AVX512BF16 void tile(const std::uint16_t* w, std::size_t ws, const std::uint16_t* x,
                        std::size_t xs, std::size_t begin, std::size_t end, std::size_t n,
                        float* carry, float* out, std::size_t os) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      acc[r][t] = begin == 0 ? _mm512_setzero_ps() : _mm512_load_ps(carry + (r * T + t) * 16);
  std::size_t i = begin;
  for (; i + 32 <= end; i += 32) {
    __m512bh xv[T];
    for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_loadu_si512(x + t * xs + i);
    for (int r = 0; r < R; ++r) {
      const auto wv = (__m512bh)_mm512_loadu_si512(w + r * ws + i);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv, xv[t]);
    }
  }
  if (i < end) {  // the last, partial chunk (end == n)
    const auto m = static_cast<__mmask32>((1ull << (end - i)) - 1);
    __m512bh xv[T];
    for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_maskz_loadu_epi16(m, x + t * xs + i);
    for (int r = 0; r < R; ++r) {
      const auto wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w + r * ws + i);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv, xv[t]);
    }
  }
  if (end < n) {
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) _mm512_store_ps(carry + (r * T + t) * 16, acc[r][t]);
    return;
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) out[r * os + t] = sum_lanes(acc[r][t]);
}

using TileFn = void (*)(const std::uint16_t*, std::size_t, const std::uint16_t*, std::size_t,
                        std::size_t, std::size_t, std::size_t, float*, float*, std::size_t);

// Elements per block when rows are long: the block's activations for 16 tokens (32 KiB) stay in
// L1 while 4 rows at a time pass, instead of streaming a whole 4864-wide row set from L2.
constexpr std::size_t kBlock = 1024;
constexpr TileFn kTiles[4][4] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
    {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
};

}  // namespace

void tile_avx512bf16(const std::uint16_t* w, std::size_t w_stride, int n_rows,
                     const std::uint16_t* x, std::size_t x_stride, int n_tok, std::size_t n,
                     float* out, std::size_t out_stride) {
  if (n_tok == 1) {
    // Decode streams the matrix once, one row after another: one sequential stream per thread,
    // which the hardware prefetchers follow (as dot.cpp's float decode; 4 rows side by side with
    // software prefetching read 15-35% slower on an AMD EPYC Zen 4).
    for (int r = 0; r < n_rows; ++r)
      tile<1, 1>(w + static_cast<std::size_t>(r) * w_stride, w_stride, x, x_stride, 0, n, n,
                 nullptr, out + static_cast<std::size_t>(r) * out_stride, out_stride);
    return;
  }
  // Several tokens and long rows: blocks of elements, each tile's accumulators carried from one
  // block to the next (the same adds in the same order as one pass).
  const std::size_t block = n > 2 * kBlock ? kBlock : n;
  const int tok_tiles = (n_tok + 3) / 4;
  struct alignas(64) Lanes {
    float f[16];
  };
  thread_local std::vector<Lanes> carry;  // 16 accumulators per tile of 4 rows x 4 tokens
  if (block < n) carry.resize(static_cast<std::size_t>((n_rows + 3) / 4 * tok_tiles) * 16);
  for (std::size_t k0 = 0; k0 < n; k0 += block) {
    const std::size_t k1 = n - k0 < block ? n : k0 + block;
    for (int r0 = 0; r0 < n_rows; r0 += 4) {
      const int nr = n_rows - r0 < 4 ? n_rows - r0 : 4;
      const std::uint16_t* wr = w + static_cast<std::size_t>(r0) * w_stride;
      for (int t0 = 0; t0 < n_tok; t0 += 4) {
        const int nt = n_tok - t0 < 4 ? n_tok - t0 : 4;
        float* c = block < n ? carry[static_cast<std::size_t>(r0 / 4 * tok_tiles + t0 / 4) * 16].f
                             : nullptr;
        kTiles[nr - 1][nt - 1](wr, w_stride, x + static_cast<std::size_t>(t0) * x_stride, x_stride,
                               k0, k1, n, c, out + static_cast<std::size_t>(r0) * out_stride + t0,
                               out_stride);
      }
    }
  }
}

}  // namespace ls::kernels::bf16_detail
