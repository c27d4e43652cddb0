// Q4_K and Q5_K x Q8_K tiles with AVX-512BW and VNNI, for rows in groups of 8 and up to 8 tokens
// (chosen at run time where the VNNI Q8_0 tile is: avx512vnni CPUs, which all have avx512bw). Per
// row and block, each group of 32 weight bytes (sub-blocks 2g in the low nibbles, 2g + 1 in the
// high ones) is broadcast to both halves of a 512-bit register and shifted by 0 and 4, so one
// register holds 64 consecutive levels, matching 64 consecutive activation bytes (Q5_K: plus 16
// where bit 2g, or 2g + 1, of the qh bytes is set: one byte test and one masked add): one maddubs
// and one vpdpwssd (madd with the two sub-blocks' scales and the add in one) per token and 64
// weights, half the instructions of the AVX2 tile. The 8 rows' block headers are decoded together
// (headers8) and their exact integer sums reduced together (hsum8x16_i32, min_sums8); the sums
// then take the same lane-wise float part as tile_q4_k_rows8 (x86/kquants_avx2.cpp; Q5_K has Q4_K's
// accumulation model), so the bits are the scalar references' (dot_q4_k_scalar,
// dot_q5_k_scalar in quant/kquants_dot.cpp; quant_tests).
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/x86/avx512_warnings.h"

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

// The first 16 bytes of 8 rows' blocks (d, dmin and the 12 bytes of 6-bit scales and mins; rows
// w_stride apart), decoded at once: sm[r] = row r's [sc0..sc7, m0..m7] as k_scales_mins gives them,
// d / dmin = the rows' f16 d and dmin as floats. Four rows per 512-bit register, one per 128-bit
// lane [h, u0, u1, u2] (h = d | dmin << 16): k_scales_mins' formula on every lane at once, in place
// of 8 scalar decodes and two 8-row gathers (a third of the one-token Q4_K kernel's instructions).
struct Headers8 {
  __m512i sm4[2];  // rows 0-3 and 4-7, one per 128-bit lane
  __m128i sm[8];
  __m256 d, dmin;
};
LS_AVX512VNNI inline Headers8 headers8(const std::uint8_t* w0, std::size_t w_stride) {
  const __m512i k6 = _mm512_set1_epi32(0x3f3f3f3f), k4 = _mm512_set1_epi32(0x0f0f0f0f);
  const __m512i k30 = _mm512_set1_epi32(0x30303030);
  const __m512i shift = _mm512_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4);
  Headers8 out;
  __m512i v[2];
  for (int half = 0; half < 2; ++half) {
    const std::uint8_t* p = w0 + 4 * half * w_stride;
    __m512i h = _mm512_castsi128_si512(load128(p));
    h = _mm512_inserti32x4(h, load128(p + w_stride), 1);
    h = _mm512_inserti32x4(h, load128(p + 2 * w_stride), 2);
    h = _mm512_inserti32x4(h, load128(p + 3 * w_stride), 3);
    v[half] = h;
    // a = [u0, u2, u1, u2], b = [u0, u0, u1, u1] in every lane; the result's dwords 0 and 2 are
    // u0 & k6 and u1 & k6, dwords 1 and 3 ((u2 >> 0, 4) & k4) | ((u0, u1) >> 6 & 3) << 4.
    const __m512i a = _mm512_shuffle_epi32(h, static_cast<_MM_PERM_ENUM>(0xED));  // 3,2,3,1
    const __m512i b = _mm512_shuffle_epi32(h, static_cast<_MM_PERM_ENUM>(0xA5));  // 2,2,1,1
    const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi32(a, shift), k4),
                                       _mm512_and_si512(_mm512_srli_epi32(b, 2), k30));
    const __m512i sm = _mm512_mask_blend_epi32(0xAAAA, _mm512_and_si512(a, k6), hi);
    out.sm4[half] = sm;
    out.sm[4 * half] = _mm512_castsi512_si128(sm);
    out.sm[4 * half + 1] = _mm512_extracti32x4_epi32(sm, 1);
    out.sm[4 * half + 2] = _mm512_extracti32x4_epi32(sm, 2);
    out.sm[4 * half + 3] = _mm512_extracti32x4_epi32(sm, 3);
  }
  const __m512i first =  // dword 0 of each lane: h of rows 0 .. 7
      _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i h = _mm512_castsi512_si256(_mm512_permutex2var_epi32(v[0], first, v[1]));
  out.d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(h));
  out.dmin = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(_mm256_srli_epi32(h, 16)));
  return out;
}

// Lane r of the result = the sum of the 16 int32 lanes of v[r], for 8 rows: halves of rows r and
// r + 4 side by side and added, then quarters, then the two rows of each 128-bit lane (exact
// integers: any order gives the same sums).
LS_AVX512VNNI inline __m256i hsum8x16_i32(const __m512i* v) {
  __m512i u[4];
  for (int k = 0; k < 4; ++k)  // [r = k: 2 quarters | r = k + 4: 2 quarters]
    u[k] = _mm512_add_epi32(_mm512_shuffle_i64x2(v[k], v[k + 4], 0x44),
                            _mm512_shuffle_i64x2(v[k], v[k + 4], 0xEE));
  // [r0 | r4 | r2 | r6] and [r1 | r5 | r3 | r7], 4 partial sums each
  const __m512i w0 = _mm512_add_epi32(_mm512_shuffle_i64x2(u[0], u[2], 0x88),
                                      _mm512_shuffle_i64x2(u[0], u[2], 0xDD));
  const __m512i w1 = _mm512_add_epi32(_mm512_shuffle_i64x2(u[1], u[3], 0x88),
                                      _mm512_shuffle_i64x2(u[1], u[3], 0xDD));
  // Lane of (ra, rb): [ra, rb, ra, rb] partial pairs, then whole sums in dwords 0 and 1.
  __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi32(w0, w1), _mm512_unpackhi_epi32(w0, w1));
  x = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0x4E)));
  const __m512i order = _mm512_setr_epi32(0, 1, 8, 9, 4, 5, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, x));
}

// Lane r = sum_j min_j(row r) * (bsums[2j] + bsums[2j + 1]) for the 8 rows of head and one
// activation block's 16 bsums: the integer the file-layout kernels get from madd(bsums, mins)
// and an 8-lane sum per row.
LS_AVX512VNNI inline __m256i min_sums8(const Headers8& head, const std::uint8_t* bsums) {
  // bsums[2j] + bsums[2j + 1] as int16 (|sum| <= 4096), in every 128-bit lane.
  const __m256i pairs = _mm256_madd_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)), _mm256_set1_epi16(1));
  const __m128i p16 =
      _mm_packs_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
  const __m512i bp = _mm512_broadcast_i32x4(p16);
  __m512i s[2];
  for (int half = 0; half < 2; ++half) {  // each lane: its row's mins (bytes 8-15) as int16
    const __m512i mins = _mm512_unpackhi_epi8(head.sm4[half], _mm512_setzero_si512());
    __m512i p = _mm512_madd_epi16(mins, bp);
    p = _mm512_add_epi32(p, _mm512_shuffle_epi32(p, static_cast<_MM_PERM_ENUM>(0x4E)));
    s[half] = _mm512_add_epi32(p, _mm512_shuffle_epi32(p, static_cast<_MM_PERM_ENUM>(0xB1)));
  }
  const __m512i first = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutex2var_epi32(s[0], first, s[1]));
}

// The scales of sub-blocks 2g and 2g + 1 as int16 words, [scale 2g x 16 | scale 2g + 1 x 16]:
// an in-lane byte shuffle (vpshufb) of the row's scale bytes, broadcast to every 128-bit lane,
// with these controls (byte 2g or 2g + 1, then a zero: an index with the high bit set). It
// replaced a vpermw of the scales widened to words (AMD EPYC Zen 5, 0.5B shape, 2 threads,
// medians of 3 alternating runs: Q5_K decode 151 -> 164 tok/s; Q4_K unchanged).
struct ScalePicks {
  __m512i g[4];
};
LS_AVX512VNNI inline ScalePicks scale_picks() {
  ScalePicks p;
  for (int g = 0; g < 4; ++g)
    p.g[g] = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(0x8000 | (2 * g))),
                                _mm256_set1_epi16(static_cast<short>(0x8000 | (2 * g + 1))), 1);
  return p;
}

// isum[t] = the 16 int32 lanes whose sum is row wb's block against token t's block b: per group
// of 64 weights one maddubs and one vpdpwssd with the sub-blocks' scales (sm: the row's decoded
// scales, headers8).
template <bool kQ5, int T>
LS_AVX512VNNI __attribute__((always_inline)) inline void row_block(
    const std::uint8_t* wb, __m128i sm, const ScalePicks& pick, const std::uint8_t* const* xrows,
    std::size_t b, __m512i* isum, std::size_t isum_stride) {
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  const __m512i m4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
  const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  const __m512i sc = _mm512_broadcast_i32x4(sm);
  __m512i acc[T], qh;
  if constexpr (kQ5)  // the 32 high-bit bytes in both halves, for the four groups
    qh = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + offsetof(BlockQ5_K, qh))));
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m512i q2 = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + offsetof(Block, qs) + 32 * g)));
    __m512i q = _mm512_and_si512(_mm512_srlv_epi16(q2, shift), m4);
    if constexpr (kQ5) {  // element i of either half: bit 2g (low) or 2g + 1 (high) of qh[i]
      const __m512i bit =
          _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * g))),
                             _mm256_set1_epi8(static_cast<char>(1 << (2 * g + 1))), 1);
      q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(qh, bit), q, sixteen);
    }
    const __m512i s = _mm512_shuffle_epi8(sc, pick.g[g]);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512i y = _mm512_loadu_si512(xrows[t] + b * sizeof(BlockQ8_K) + 4 + 64 * g);
      acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(q, y), s);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) isum[t * isum_stride] = acc[t];
}

// Row r's block b at w + b * block_step + r * w_stride: the file's rows (block_step = the block's
// bytes, w_stride = the row's) or a block-interleaved group (the 8 rows' blocks b side by side:
// block_step = 8 blocks, w_stride = one), which decode reads as one stream.
template <bool kQ5, int T>
LS_AVX512VNNI void rows8(const std::uint8_t* w, std::size_t w_stride, std::size_t block_step,
                         const std::uint8_t* const* xrows, std::size_t nb, float* out,
                         std::size_t out_stride) {
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  static_assert(offsetof(Block, d) == 0 && offsetof(Block, dmin) == 2 &&
                offsetof(Block, scales) == 4);  // headers8's
  const ScalePicks pick = scale_picks();
  __m256 a[T], m[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) a[t] = m[t] = _mm256_setzero_ps();
  // One token over block-interleaved groups streams the matrix: prefetch ahead, a block at a time.
  const bool stream = T == 1 && block_step == 8 * w_stride;
  const std::size_t ahead = decode_ahead_bytes();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* w0 = w + b * block_step;
    if (stream) prefetch_ahead(w0, ahead, block_step);
    __m512i isum[T][8];
    const Headers8 head = headers8(w0, w_stride);
    if constexpr (T == 1) {
      // One token: the 8 rows unrolled keep their sums in registers (L2-resident 64 x 4864
      // weights, one thread, 4 alternating runs: Q4_K 36.7-38.0 -> 39.4-40.5 GB/s, Q5_K 36.2-37.2
      // -> 37.7-38.9). With several tokens the unrolled rows would spill the accumulators.
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r)
        row_block<kQ5, T>(w0 + r * w_stride, head.sm[r], pick, xrows, b, &isum[0][r], 8);
    } else {
      for (int r = 0; r < 8; ++r)
        row_block<kQ5, T>(w0 + r * w_stride, head.sm[r], pick, xrows, b, &isum[0][r], 8);
    }
    // k_rows8_block's float part, lane r = row r: the same operations on the same integers.
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const std::uint8_t* xb = xrows[t] + b * sizeof(BlockQ8_K);
      float dx;
      std::memcpy(&dx, xb, 4);
      const __m256 vdx = _mm256_set1_ps(dx);
      a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x16_i32(isum[t])), _mm256_mul_ps(vdx, head.d),
                             a[t]);
      m[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min_sums8(head, xb + 4 + 256)),
                             _mm256_mul_ps(vdx, head.dmin), m[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_rows8(_mm256_sub_ps(a[t], m[t]), out + t, out_stride);
}

template <bool kQ5, int T>
LS_AVX512VNNI void rows8_file(const std::uint8_t* w, std::size_t w_stride,
                              const std::uint8_t* const* xrows, std::size_t nb, float* out,
                              std::size_t out_stride) {
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  rows8<kQ5, T>(w, w_stride, sizeof(Block), xrows, nb, out, out_stride);
}

template <bool kQ5>
int file_rows(const std::uint8_t* w, std::size_t w_stride, int n_rows, const std::uint8_t* xq,
              std::size_t x_stride, int n_tok, std::size_t n, float* out, std::size_t out_stride) {
  static constexpr RowGroupTile kTiles[8] = {
      rows8_file<kQ5, 1>, rows8_file<kQ5, 2>, rows8_file<kQ5, 3>, rows8_file<kQ5, 4>,
      rows8_file<kQ5, 5>, rows8_file<kQ5, 6>, rows8_file<kQ5, 7>, rows8_file<kQ5, 8>};
  return run_row_groups<8>(kTiles, w, w_stride, n_rows, xq, x_stride, n_tok, n / 256, out,
                           out_stride);
}

}  // namespace

int dot_tile_q4_k_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  return file_rows<false>(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
}

int dot_tile_q5_k_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  return file_rows<true>(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
}

void group_q4_k_avx512(const std::uint8_t* group, const std::uint8_t* const* xrows, int n_tok,
                       std::size_t nb, float* out, std::size_t out_stride) {
  using Tile = void (*)(const std::uint8_t*, std::size_t, std::size_t, const std::uint8_t* const*,
                        std::size_t, float*, std::size_t);
  static constexpr Tile kTiles[8] = {rows8<false, 1>, rows8<false, 2>, rows8<false, 3>,
                                     rows8<false, 4>, rows8<false, 5>, rows8<false, 6>,
                                     rows8<false, 7>, rows8<false, 8>};
  kTiles[n_tok - 1](group, sizeof(BlockQ4_K), 8 * sizeof(BlockQ4_K), xrows, nb, out, out_stride);
}

void group_q5_k_avx512(const std::uint8_t* group, const std::uint8_t* const* xrows, int n_tok,
                       std::size_t nb, float* out, std::size_t out_stride) {
  using Tile = void (*)(const std::uint8_t*, std::size_t, std::size_t, const std::uint8_t* const*,
                        std::size_t, float*, std::size_t);
  static constexpr Tile kTiles[8] = {rows8<true, 1>, rows8<true, 2>, rows8<true, 3>,
                                     rows8<true, 4>, rows8<true, 5>, rows8<true, 6>,
                                     rows8<true, 7>, rows8<true, 8>};
  kTiles[n_tok - 1](group, sizeof(BlockQ5_K), 8 * sizeof(BlockQ5_K), xrows, nb, out, out_stride);
}

}  // namespace ls::kernels::quant_detail
