// Q6_K x Q8_K tiles with AVX-512BW and VNNI, for rows in groups of 8 and up to 8 tokens (chosen
// at run time where the VNNI Q8_0 tile is). Per row and half block (128 weights), the 64
// low-nibble bytes and the 32 high-bit bytes (broadcast to both halves, shifted per half) give
// two registers of 64 consecutive levels 0..63, matching 64 consecutive activation bytes: one
// maddubs and one vpdpwssd (madd with the four sub-blocks' scales and the add in one) per token
// and 64 weights, half the instructions of the AVX2 tile. The level offset -32 comes in through the
// activations' sub-block sums, as there. The exact integer sums then go through the transposing
// reduction of the row-group tiles and the float part runs on row lanes (lane r = row r's fma
// chain: tile_q6_k's operations), so the bits are the scalar reference's (dot_q6_k_scalar
// in quant/kquants_dot.cpp; quant_tests).
#include <cstring>

#include "kernels/x86/avx512_warnings.h"

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

// Scale index per int16 lane of a maddubs result (2 weights each, 8 lanes per sub-block of 16):
// sub-blocks 8h + 4p .. 8h + 4p + 3 for register p of half h.
struct ScalePicks {
  __m512i hp[2][2];
};
LS_AVX512VNNI inline ScalePicks scale_picks() {
  ScalePicks pick;
  for (int h = 0; h < 2; ++h)
    for (int p = 0; p < 2; ++p) {
      alignas(64) std::int16_t idx[32];
      for (int i = 0; i < 32; ++i) idx[i] = static_cast<std::int16_t>(8 * h + 4 * p + i / 8);
      pick.hp[h][p] = _mm512_load_si512(idx);
    }
  return pick;
}

// isum[t] = the 8 int32 lanes whose sum is row wb's block against token t's block b, the -32
// offset of every level included.
template <int T>
LS_AVX512VNNI __attribute__((always_inline)) inline void row_block(const std::uint8_t* wb,
                                                                   const ScalePicks& pick,
                                                                   const std::uint8_t* const* xrows,
                                                                   std::size_t b, __m256i* isum,
                                                                   std::size_t isum_stride) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  // Per half, the high bits of levels 0-31 sit in bits 0-1 of the qh bytes, of 32-63 in bits
  // 2-3, of 64-95 in bits 4-5, of 96-127 in bits 6-7: shifted to bits 4-5 by these counts.
  const __m512i up_lo = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i down_hi = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m256i sc16 = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + offsetof(BlockQ6_K, scales))));
  const __m512i sc = _mm512_castsi256_si512(sc16);
  __m512i acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m512i ql = _mm512_loadu_si512(wb + offsetof(BlockQ6_K, ql) + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(wb + offsetof(BlockQ6_K, qh) + 32 * h)));
    const __m512i q[2] = {_mm512_or_si512(_mm512_and_si512(ql, m4),
                                          _mm512_and_si512(_mm512_sllv_epi16(qh, up_lo), m30)),
                          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                          _mm512_and_si512(_mm512_srlv_epi16(qh, down_hi), m30))};
#pragma GCC unroll 2
    for (int p = 0; p < 2; ++p) {
      const __m512i s = _mm512_permutexvar_epi16(pick.hp[h][p], sc);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m512i y =
            _mm512_loadu_si512(xrows[t] + b * sizeof(BlockQ8_K) + 4 + 128 * h + 64 * p);
        acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(q[p], y), s);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    // The -32 offset of every level, through the activation block sums: 32 * sum sc_j bsum_j.
    const __m256i bs = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(xrows[t] + b * sizeof(BlockQ8_K) + 4 + 256));
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5);
    isum[t * isum_stride] = _mm256_sub_epi32(
        _mm256_add_epi32(_mm512_castsi512_si256(acc[t]), _mm512_extracti64x4_epi64(acc[t], 1)),
        offset);
  }
}

// Row r's block b at w + b * block_step + r * w_stride (the file's rows or a block-interleaved
// group, as in kquants_q4_q5_avx512.cpp).
template <int T>
LS_AVX512VNNI void rows8(const std::uint8_t* w, std::size_t w_stride, std::size_t block_step,
                         const std::uint8_t* const* xrows, std::size_t nb, float* out,
                         std::size_t out_stride) {
  const ScalePicks pick = scale_picks();
  __m256 a[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) a[t] = _mm256_setzero_ps();
  // One token over block-interleaved groups streams the matrix: prefetch ahead, a block at a time.
  const bool stream = T == 1 && block_step == 8 * w_stride;
  const std::size_t ahead = decode_ahead_bytes();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* w0 = w + b * block_step;
    if (stream) prefetch_ahead(w0, ahead, block_step);
    __m256i isum[T][8];
    if constexpr (T == 1) {
      // The 8 rows unrolled, as kquants_q4_q5_avx512.cpp's rows8 (L2-resident 64 x 4864 weights,
      // one thread, 8 alternating runs: 49.9-50.7 -> 56.9-57.5 GB/s).
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) row_block<T>(w0 + r * w_stride, pick, xrows, b, &isum[0][r], 8);
    } else {
      for (int r = 0; r < 8; ++r) row_block<T>(w0 + r * w_stride, pick, xrows, b, &isum[0][r], 8);
    }
    const __m256 dw = gather_f16x8(w0, w_stride, offsetof(BlockQ6_K, d));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      float dx;
      std::memcpy(&dx, xrows[t] + b * sizeof(BlockQ8_K), 4);
      a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8_i32(isum[t])),
                             _mm256_mul_ps(_mm256_set1_ps(dx), dw), a[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_rows8(a[t], out + t, out_stride);
}

template <int T>
LS_AVX512VNNI void rows8_file(const std::uint8_t* w, std::size_t w_stride,
                              const std::uint8_t* const* xrows, std::size_t nb, float* out,
                              std::size_t out_stride) {
  rows8<T>(w, w_stride, sizeof(BlockQ6_K), xrows, nb, out, out_stride);
}

}  // namespace

int dot_tile_q6_k_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  static constexpr RowGroupTile kTiles[8] = {rows8_file<1>, rows8_file<2>, rows8_file<3>,
                                             rows8_file<4>, rows8_file<5>, rows8_file<6>,
                                             rows8_file<7>, rows8_file<8>};
  return run_row_groups<8>(kTiles, w, w_stride, n_rows, xq, x_stride, n_tok, n / 256, out,
                           out_stride);
}

void group_q6_k_avx512(const std::uint8_t* group, const std::uint8_t* const* xrows, int n_tok,
                       std::size_t nb, float* out, std::size_t out_stride) {
  using Tile = void (*)(const std::uint8_t*, std::size_t, std::size_t, const std::uint8_t* const*,
                        std::size_t, float*, std::size_t);
  static constexpr Tile kTiles[8] = {rows8<1>, rows8<2>, rows8<3>, rows8<4>,
                                     rows8<5>, rows8<6>, rows8<7>, rows8<8>};
  kTiles[n_tok - 1](group, sizeof(BlockQ6_K), 8 * sizeof(BlockQ6_K), xrows, nb, out, out_stride);
}

}  // namespace ls::kernels::quant_detail
