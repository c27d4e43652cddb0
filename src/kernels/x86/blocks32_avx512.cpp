// Q5_0, Q5_1 and Q4_1 x Q8_0 tiles with AVX-512 VNNI, for rows in groups of 8 and up to 4 tokens
// (chosen at run time with the VNNI Q8_0 tile). Per row and block the 32 unsigned levels q
// (Q5_0/Q5_1: nibble + 16 * high bit, 0..31; Q4_1: the nibble) are unpacked once into one 256-bit
// register (the high bits through a byte mask add), then one vpdpbusd per token leaves 8 partial
// sums of q * x. After the 8 rows, the transposing reduction gives each row's exact sum in its
// lane; Q5_0 subtracts 16 * sum(x) for its level offset: s_b = sum (q - 16) x. The float part is
// the levels accumulation model of quant/detail.h run on row lanes (block b into accumulator b % 8,
// fma(float(s_b), d_w * d_x, acc), then for Q5_1/Q4_1 fma(float(sum x), m_w * d_x, acc), then
// the fixed tree), so the bits are the scalar references' (dot_q5_0_scalar etc.,
// quant/blocks32_dot.cpp; quant_tests). Two and four tokens go in pairs, one per 512-bit register
// (the levels broadcast to both halves): half the vpdpbusd and reductions.
#include <cstddef>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

#include "kernels/x86/avx512_warnings.h"

namespace ls::kernels::quant_detail {
namespace {

constexpr std::size_t kX = sizeof(BlockQ8_0);

// Where a format keeps its parts: block bytes, the packed nibbles, the 32 high bits (Q5_*), the
// f16 minimum (Q5_1, Q4_1), and the level offset (value = d * (q - kOffset) [+ m]).
struct Q5_0Layout {
  static constexpr std::size_t kB = sizeof(BlockQ5_0), kQs = offsetof(BlockQ5_0, qs);
  static constexpr std::size_t kQh = offsetof(BlockQ5_0, qh);
  static constexpr bool kHigh = true, kMin = false;
  static constexpr int kOffset = 16;
};
struct Q5_1Layout {
  static constexpr std::size_t kB = sizeof(BlockQ5_1), kQs = offsetof(BlockQ5_1, qs);
  static constexpr std::size_t kQh = offsetof(BlockQ5_1, qh), kM = offsetof(BlockQ5_1, m);
  static constexpr bool kHigh = true, kMin = true;
  static constexpr int kOffset = 0;
};
struct Q4_1Layout {
  static constexpr std::size_t kB = sizeof(BlockQ4_1), kQs = offsetof(BlockQ4_1, qs), kQh = 0;
  static constexpr std::size_t kM = offsetof(BlockQ4_1, m);
  static constexpr bool kHigh = false, kMin = true;
  static constexpr int kOffset = 0;
};

// The 32 unsigned levels of one block, element e in byte e.
template <class F>
LS_AVX512VNNI inline __m256i levels(const std::uint8_t* block) {
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + F::kQs));
  const __m256i nib = _mm256_and_si256(
      _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
      _mm256_set1_epi8(0x0F));
  if constexpr (!F::kHigh) return nib;
  std::uint32_t qh;
  std::memcpy(&qh, block + F::kQh, 4);
  return _mm256_mask_add_epi8(nib, static_cast<__mmask32>(qh), nib, _mm256_set1_epi8(16));
}

template <class F, int T>
LS_AVX512VNNI void rows8(const std::uint8_t* w, std::size_t w_stride,
                         const std::uint8_t* const* xrows, std::size_t nb, float* out,
                         std::size_t out_stride) {
  const __m256i ones8 = _mm256_set1_epi8(1);
  __m256 acc[T][8];
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < 8; ++k) acc[t][k] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* w0 = w + b * F::kB;
    __m256i y[T], isum[T][8];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[t] = load256(xrows[t] + b * kX + 2);
    for (int r = 0; r < 8; ++r) {
      const __m256i q = levels<F>(w0 + r * w_stride);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) isum[t][r] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, y[t]);
    }
    const __m256 dw = gather_f16x8(w0, w_stride, 0);
    __m256 mw = dw;  // the minimums (Q5_1, Q4_1), once for all tokens
    if constexpr (F::kMin) mw = gather_f16x8(w0, w_stride, F::kM);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      // sum(x) through the same instruction: 1 * x over the block, reduced with the rows.
      const int xsum = hsum_i32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones8, y[t]));
      const __m256i s = _mm256_add_epi32(hsum8_i32(isum[t]), _mm256_set1_epi32(-F::kOffset * xsum));
      const __m256 dx = _mm256_set1_ps(_cvtsh_ss(f16_at(xrows[t] + b * kX)));
      __m256& lane = acc[t][b % 8];
      lane = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, dx), lane);
      if constexpr (F::kMin)
        lane =
            _mm256_fmadd_ps(_mm256_set1_ps(static_cast<float>(xsum)), _mm256_mul_ps(mw, dx), lane);
    }
  }
  for (int t = 0; t < T; ++t) {
    const __m256* a = acc[t];
    store_rows8(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                              _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]))),
                out + t, out_stride);
  }
}

// [lo | hi] and the high half, with AVX512F only (the 32x8 forms need AVX512DQ).
LS_AVX512VNNI inline __m512 concat_ps(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}
LS_AVX512VNNI inline __m256 high_ps(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// The 8 rows x 2 tokens of 512-bit partial sums v[r] (token A in the low 256 bits, B in the
// high) -> [A's 8 row sums | B's 8 row sums]. Integer adds: any order gives the same sums.
LS_AVX512VNNI inline __m512i hsum8x2_i32(const __m512i* v) {
  __m512i a[4], b[2];
  for (int k = 0; k < 4; ++k)  // per 128-bit lane: [r0 02, r1 02, r0 13, r1 13] (r = 2k, 2k+1)
    a[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
                            _mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 2; ++k)  // per 128-bit lane: that lane's sums of rows 4k .. 4k + 3
    b[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(a[2 * k], a[2 * k + 1]),
                            _mm512_unpackhi_epi64(a[2 * k], a[2 * k + 1]));
  for (int k = 0; k < 2; ++k)  // add the two 128-bit lanes of each token: 0+1, 2+3
    b[k] = _mm512_add_epi32(b[k], _mm512_shuffle_i32x4(b[k], b[k], 0xB1));
  return _mm512_mask_blend_epi32(0xF0F0, b[0], b[1]);  // [A 0-3, A 4-7, B 0-3, B 4-7]
}

// rows8 for P pairs of tokens (2P tokens), two tokens per 512-bit register: one vpdpbusd per row
// and pair, one reduction per pair. The float part is rows8's lane for lane (dw twice, each
// token's scale over its 8 lanes), so the bits are the same.
template <class F, int P>
LS_AVX512VNNI void rows8_pairs(const std::uint8_t* w, std::size_t w_stride,
                               const std::uint8_t* const* xrows, std::size_t nb, float* out,
                               std::size_t out_stride) {
  const __m512i ones8 = _mm512_set1_epi8(1);
  __m512 acc[P][8];
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < 8; ++k) acc[p][k] = _mm512_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* w0 = w + b * F::kB;
    __m512i y[P], isum[P][8];
    for (int p = 0; p < P; ++p)
      y[p] = _mm512_inserti64x4(_mm512_castsi256_si512(load256(xrows[2 * p] + b * kX + 2)),
                                load256(xrows[2 * p + 1] + b * kX + 2), 1);
    for (int r = 0; r < 8; ++r) {
      const __m256i q = levels<F>(w0 + r * w_stride);
      const __m512i q2 = _mm512_inserti64x4(_mm512_castsi256_si512(q), q, 1);
      for (int p = 0; p < P; ++p)
        isum[p][r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q2, y[p]);
    }
    const __m256 dw1 = gather_f16x8(w0, w_stride, 0);
    const __m512 dw = concat_ps(dw1, dw1);
    __m512 mw = dw;
    if constexpr (F::kMin) {
      const __m256 mw1 = gather_f16x8(w0, w_stride, F::kM);
      mw = concat_ps(mw1, mw1);
    }
    for (int p = 0; p < P; ++p) {
      // sum(x) of each token, in all the lanes of its half.
      __m512i xs = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones8, y[p]);
      xs = _mm512_add_epi32(xs, _mm512_shuffle_epi32(xs, _MM_PERM_CDAB));
      xs = _mm512_add_epi32(xs, _mm512_shuffle_epi32(xs, _MM_PERM_BADC));
      xs = _mm512_add_epi32(xs, _mm512_shuffle_i32x4(xs, xs, 0xB1));
      __m512i s = hsum8x2_i32(isum[p]);
      static_assert(F::kOffset == 0 || F::kOffset == 16);
      if constexpr (F::kOffset == 16) s = _mm512_sub_epi32(s, _mm512_slli_epi32(xs, 4));
      const __m512 dx = concat_ps(_mm256_set1_ps(_cvtsh_ss(f16_at(xrows[2 * p] + b * kX))),
                                  _mm256_set1_ps(_cvtsh_ss(f16_at(xrows[2 * p + 1] + b * kX))));
      __m512& lane = acc[p][b % 8];
      lane = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, dx), lane);
      if constexpr (F::kMin)
        lane = _mm512_fmadd_ps(_mm512_cvtepi32_ps(xs), _mm512_mul_ps(mw, dx), lane);
    }
  }
  for (int p = 0; p < P; ++p) {
    const __m512* a = acc[p];
    const __m512 sum =
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                      _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
    store_rows8(_mm512_castps512_ps256(sum), out + 2 * p, out_stride);
    store_rows8(high_ps(sum), out + 2 * p + 1, out_stride);
  }
}

// Groups of 8 rows for n_tok tokens, up to 4 at a time: one and three tokens one per 256-bit
// vector, two and four in pairs.
template <class Layout>
int rows8_tokens(const std::uint8_t* w, std::size_t w_stride, int n_rows, const std::uint8_t* xq,
                 std::size_t x_stride, int n_tok, std::size_t n, float* out,
                 std::size_t out_stride) {
  static constexpr RowGroupTile kTiles[4] = {rows8<Layout, 1>, rows8_pairs<Layout, 1>,
                                             rows8<Layout, 3>, rows8_pairs<Layout, 2>};
  return run_row_groups<4>(kTiles, w, w_stride, n_rows, xq, x_stride, n_tok, n / 32, out,
                           out_stride);
}

}  // namespace

int dot_tile_q4_1_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  return rows8_tokens<Q4_1Layout>(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
}

int dot_tile_q5_0_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  return rows8_tokens<Q5_0Layout>(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
}

int dot_tile_q5_1_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  return rows8_tokens<Q5_1Layout>(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
}

}  // namespace ls::kernels::quant_detail
