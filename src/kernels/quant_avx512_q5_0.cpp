// Q5_0 x Q8_0 tiles with AVX-512 VNNI, for rows in groups of 8 and up to 4 tokens (chosen at run
// time with the VNNI Q8_0 tile). Per row and block the 32 levels q = nibble + 16 * high bit
// (0..31) are unpacked once into one 256-bit register (the high bits through a byte mask add),
// then one vpdpbusd per token leaves 8 partial sums of q * x. After the 8 rows, the transposing
// reduction gives each row's exact sum in its lane, minus 16 * sum(x) for the level offset:
// s_b = sum (q - 16) x. The float part is the accumulation model of quant_internal.h run on row
// lanes (block b into accumulator b % 8, fma(float(s_b), d_w * d_x, acc), then the fixed tree),
// so the bits are the scalar path's (quant_tests).
#include <cstring>

#include "kernels/quant.h"
#include "kernels/quant_internal.h"

// GCC 12's own 512-bit intrinsics start from an undefined register and trip -Wuninitialized
// inside its headers; nothing here reads an uninitialized value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define LS_AVX512VNNI_BW \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace ls::kernels::quant_detail {
namespace {

constexpr std::size_t kW = sizeof(BlockQ5_0), kX = sizeof(BlockQ8_0);

// The 32 levels 0..31 of one block, element e in byte e.
LS_AVX512VNNI_BW inline __m256i levels(const std::uint8_t* block) {
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 6));
  const __m256i nib = _mm256_and_si256(
      _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
      _mm256_set1_epi8(0x0F));
  std::uint32_t qh;
  std::memcpy(&qh, block + 2, 4);
  return _mm256_mask_add_epi8(nib, static_cast<__mmask32>(qh), nib, _mm256_set1_epi8(16));
}

template <int T>
LS_AVX512VNNI_BW void rows8(const std::uint8_t* w, std::size_t w_stride,
                            const std::uint8_t* const* xrows, std::size_t nb, float* out,
                            std::size_t out_stride) {
  const __m256i ones8 = _mm256_set1_epi8(1);
  __m256 acc[T][8];
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < 8; ++k) acc[t][k] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* w0 = w + b * kW;
    __m256i y[T], isum[T][8];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[t] = load256(xrows[t] + b * kX + 2);
    for (int r = 0; r < 8; ++r) {
      const __m256i q = levels(w0 + r * w_stride);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) isum[t][r] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, y[t]);
    }
    const __m256 dw = gather_f16x8(w0, w_stride, 0);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      // sum(x) through the same instruction: 1 * x over the block, reduced with the rows.
      const int xsum = hsum_i32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones8, y[t]));
      const __m256i s = _mm256_add_epi32(hsum8_i32(isum[t]), _mm256_set1_epi32(-16 * xsum));
      const __m256 dx = _mm256_set1_ps(_cvtsh_ss(f16_at(xrows[t] + b * kX)));
      __m256& lane = acc[t][b % 8];
      lane = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, dx), lane);
    }
  }
  for (int t = 0; t < T; ++t) {
    const __m256* a = acc[t];
    store_rows8(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                              _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]))),
                out + t, out_stride);
  }
}

}  // namespace

int dot_tile_q5_0_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                         const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                         float* out, std::size_t out_stride) {
  static constexpr RowGroupTile kTiles[4] = {rows8<1>, rows8<2>, rows8<3>, rows8<4>};
  return run_row_groups<4>(kTiles, w, w_stride, n_rows, xq, x_stride, n_tok, n / 32, out,
                           out_stride);
}

}  // namespace ls::kernels::quant_detail
