// AVX2 tiles of the k-quants (Q2_K .. Q6_K) against Q8_K activations, following their
// accumulation model in quant/detail.h exactly (same bits as the scalar references,
// dot_q4_k_scalar etc. in quant/kquants_dot.cpp): per block, the levels of 32 weights at a time
// go through maddubs with the activations and madd with their sub-block scales (exact int32), the
// level offsets and minimums through the activations' block sums, then one fma per block and
// token in block order.
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

// ---- Q4_K x Q8_K ------------------------------------------------------------------------------

// One Q4_K block of one row against T tokens: acc[t] = 8 int32 partials of the block's exact
// sum over sub-blocks j of scale_j * sum q * x; *mins = the row's mins as int16 (m0 m0 m1 m1 ..).
template <int T>
LS_AVX2 inline void q4_k_block(const std::uint8_t* wb, const std::uint8_t* const* xrows,
                               std::size_t b, __m256i* acc, __m256i* mins) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m128i sm = k_scales_mins(wb + offsetof(BlockQ4_K, scales));
  const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
  *mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int g = 0; g < 4; ++g) {
    const __m256i q = load256(wb + offsetof(BlockQ4_K, qs) + 32 * g);
    const __m256i lo = _mm256_and_si256(q, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    const __m256i s0 =
        _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * 2 * g)));
    const __m256i s1 = _mm256_shuffle_epi8(
        sc16, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * g + 1))));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const std::uint8_t* y = xrows[t] + b * sizeof(BlockQ8_K) + 4 + 64 * g;
      const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(y)), s0);
      const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(y + 32)), s1);
      acc[t] = _mm256_add_epi32(acc[t], _mm256_add_epi32(p0, p1));
    }
  }
}

template <int T>
LS_AVX2 void tile_q4_k(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                       const std::uint8_t* const* xrows, std::size_t nb, float* out,
                       std::size_t out_stride) {
  for (int r = 0; r < n_rows; ++r) {
    float a[T] = {}, m[T] = {};
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* wb = w + r * w_stride + b * sizeof(BlockQ4_K);
      __m256i acc[T], mins;
      q4_k_block<T>(wb, xrows, b, acc, &mins);
      std::uint16_t d16, dmin16;
      std::memcpy(&d16, wb + offsetof(BlockQ4_K, d), 2);
      std::memcpy(&dmin16, wb + offsetof(BlockQ4_K, dmin), 2);
      const float dw = _cvtsh_ss(d16), dminw = _cvtsh_ss(dmin16);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const std::uint8_t* xb = xrows[t] + b * sizeof(BlockQ8_K);
        float dx;
        std::memcpy(&dx, xb, 4);
        const int msum = hsum_i32(_mm256_madd_epi16(load256(xb + 4 + 256), mins));
        a[t] = std::fma(static_cast<float>(hsum_i32(acc[t])), dx * dw, a[t]);
        m[t] = std::fma(static_cast<float>(msum), dx * dminw, m[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = a[t] - m[t];
  }
}

// Rows in groups of 8: each row's block sums stay vectors until the group is done, then one
// transposing reduction (hsum8_i32) gives the 8 rows' exact integer sums in the 8 lanes, and the
// float part runs on those lanes (lane r = row r's fma chain, the same operations as above).
// Integer sums are exact in any order, so the bits are tile_q4_k's; the reductions, the most
// costly part of the per-row tile, cost an eighth.
template <int T>
LS_AVX2 void tile_q4_k_rows8(const std::uint8_t* w, std::size_t w_stride,
                             const std::uint8_t* const* xrows, std::size_t nb, float* out,
                             std::size_t out_stride) {
  __m256 a[T], m[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) a[t] = m[t] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* w0 = w + b * sizeof(BlockQ4_K);
    __m256i isum[T][8], msum[T][8];
    for (int r = 0; r < 8; ++r) {
      __m256i acc[T], mins;
      q4_k_block<T>(w0 + r * w_stride, xrows, b, acc, &mins);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        isum[t][r] = acc[t];
        msum[t][r] = _mm256_madd_epi16(load256(xrows[t] + b * sizeof(BlockQ8_K) + 4 + 256), mins);
      }
    }
    k_rows8_block<T>(w0, w_stride, xrows, b, isum, msum, a, m);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_rows8(_mm256_sub_ps(a[t], m[t]), out + t, out_stride);
}

template <int T>
LS_AVX2 void tile_q4_k_grouped(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                               const std::uint8_t* const* xrows, std::size_t nb, float* out,
                               std::size_t out_stride) {
  // Decode reads the rows one after another: one stream, which the hardware prefetchers follow.
  // 8 rows side by side (8 streams a row apart, even with the next group prefetched) read 1.6-2x
  // slower from memory (bench_quant Q4_K 27986 x 4864 on a Zen 4: 6.4-6.7 against 10.2-11.4
  // GB/s; the 1.5B q4_k_m file with LS_QUANT_SIMD=avx2: decode 10.7-12.2 -> 25.2-26.5 tok/s).
  if (T == 1) return tile_q4_k<T>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  int r = 0;
  for (; r + 8 <= n_rows; r += 8)
    tile_q4_k_rows8<T>(w + r * w_stride, w_stride, xrows, nb, out + r * out_stride, out_stride);
  if (r < n_rows)
    tile_q4_k<T>(w + r * w_stride, w_stride, n_rows - r, xrows, nb, out + r * out_stride,
                 out_stride);
}

// ---- Q6_K x Q8_K ------------------------------------------------------------------------------

template <int T>
LS_AVX2 void tile_q6_k(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                       const std::uint8_t* const* xrows, std::size_t nb, float* out,
                       std::size_t out_stride) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  // pshufb patterns picking scales (2k, 2k+1), eight copies each, for k = 0..7.
  __m128i pick[8];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k)
    pick[k] = _mm_set_epi64x(0x0101010101010101LL * (2 * k + 1), 0x0101010101010101LL * (2 * k));
  for (int r = 0; r < n_rows; ++r) {
    float a[T] = {};
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* wb = w + r * w_stride + b * sizeof(BlockQ6_K);
      const __m128i sc8 = load128(wb + offsetof(BlockQ6_K, scales));
      __m256i acc[T];
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        // The -32 offset of every level, through the activation block sums: 32 * sum sc_j bsum_j.
        const __m256i bs = load256(xrows[t] + b * sizeof(BlockQ8_K) + 4 + 256);
        acc[t] = _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), bs), 5);
        acc[t] = _mm256_sub_epi32(_mm256_setzero_si256(), acc[t]);
      }
#pragma GCC unroll 8
      for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = load256(wb + 64 * h), ql1 = load256(wb + 64 * h + 32);
        const __m256i qh = load256(wb + 128 + 32 * h);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                               _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
        q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                               _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                               _mm256_and_si256(qh, m30));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
#pragma GCC unroll 8
        for (int k = 0; k < 4; ++k) {
          const __m256i s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick[4 * h + k]));
#pragma GCC unroll 8
          for (int t = 0; t < T; ++t) {
            const __m256i y = load256(xrows[t] + b * sizeof(BlockQ8_K) + 4 + 128 * h + 32 * k);
            acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[k], y), s));
          }
        }
      }
      std::uint16_t d16;
      std::memcpy(&d16, wb + offsetof(BlockQ6_K, d), 2);
      const float dw = _cvtsh_ss(d16);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        float dx;
        std::memcpy(&dx, xrows[t] + b * sizeof(BlockQ8_K), 4);
        a[t] = std::fma(static_cast<float>(hsum_i32(acc[t])), dx * dw, a[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = a[t];
  }
}

// ---- Q5_K, Q3_K, Q2_K x Q8_K ------------------------------------------------------------------

constexpr std::size_t kQs = offsetof(BlockQ8_K, qs), kBsums = offsetof(BlockQ8_K, bsums);

LS_AVX2 inline float f16_float(const std::uint8_t* p) {
  return _cvtsh_ss(f16_at(p));
}

LS_AVX2 inline float act_scale(const std::uint8_t* xb) {
  float d;
  std::memcpy(&d, xb, 4);
  return d;
}

// pshufb patterns picking scales (2k, 2k+1) of 16 bytes, eight copies each, k = 0..7.
LS_AVX2 inline __m128i pick_pair(int k) {
  return _mm_set_epi64x(0x0101010101010101LL * (2 * k + 1), 0x0101010101010101LL * (2 * k));
}

// ---- Q5_K: Q4_K's scales and nibbles plus a fifth bit per weight --------------------------------

template <int T>
LS_AVX2 void tile_q5_k(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                       const std::uint8_t* const* xrows, std::size_t nb, float* out,
                       std::size_t out_stride) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m16 = _mm256_set1_epi8(0x10);
  for (int r = 0; r < n_rows; ++r) {
    float a[T] = {}, m[T] = {};
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* wb = w + r * w_stride + b * sizeof(BlockQ5_K);
      // The 12 packed bytes as words [sc0-3, sc4-7, m0-3, m4-7] (see q4_k_scale_min).
      const __m128i sm = k_scales_mins(wb + offsetof(BlockQ5_K, scales));
      const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));  // m0 m0 m1 m1 ..
      __m256i hbits = load256(wb + offsetof(BlockQ5_K, qh));
      __m256i acc[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        // Sub-blocks 2g (low nibbles, bit 2g of qh) and 2g + 1 (high nibbles, bit 2g + 1).
        const __m256i q = load256(wb + offsetof(BlockQ5_K, qs) + 32 * g);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hbits, 4), m16));
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hbits, 3), m16));
        hbits = _mm256_srli_epi16(hbits, 2);
        const __m256i s0 = _mm256_shuffle_epi8(
            sc16, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * 2 * g)));
        const __m256i s1 = _mm256_shuffle_epi8(
            sc16, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * g + 1))));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const std::uint8_t* y = xrows[t] + b * sizeof(BlockQ8_K) + kQs + 64 * g;
          const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(y)), s0);
          const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(y + 32)), s1);
          acc[t] = _mm256_add_epi32(acc[t], _mm256_add_epi32(p0, p1));
        }
      }
      const float dw = f16_float(wb), dminw = f16_float(wb + 2);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const std::uint8_t* xb = xrows[t] + b * sizeof(BlockQ8_K);
        const float dx = act_scale(xb);
        const int msum = hsum_i32(_mm256_madd_epi16(load256(xb + kBsums), mins));
        a[t] = std::fma(static_cast<float>(hsum_i32(acc[t])), dx * dw, a[t]);
        m[t] = std::fma(static_cast<float>(msum), dx * dminw, m[t]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = a[t] - m[t];
  }
}

// ---- Q3_K and Q2_K: 2-bit levels, 16 sub-blocks of 16
// ---------------------------------------------

// The 16 sub-block scales of a Q3_K block, minus 32, as int8: 32-bit words of the 12 bytes give
// scales 4k..4k+3 at once (low nibbles from bytes 0..7, the top 2 bits from bytes 8..11).
LS_AVX2 inline __m128i q3_k_scales(const std::uint8_t* s) {
  std::uint32_t u[3];
  std::memcpy(u, s, 12);
  constexpr std::uint32_t k4 = 0x0f0f0f0f, k2 = 0x03030303;
  const __m128i v = _mm_set_epi32(static_cast<int>(((u[1] >> 4) & k4) | (((u[2] >> 6) & k2) << 4)),
                                  static_cast<int>(((u[0] >> 4) & k4) | (((u[2] >> 4) & k2) << 4)),
                                  static_cast<int>((u[1] & k4) | (((u[2] >> 2) & k2) << 4)),
                                  static_cast<int>((u[0] & k4) | ((u[2] & k2) << 4)));
  return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

template <bool kQ3, int T>
LS_AVX2 void tile_2bit(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                       const std::uint8_t* const* xrows, std::size_t nb, float* out,
                       std::size_t out_stride) {
  constexpr std::size_t B = kQ3 ? sizeof(BlockQ3_K) : sizeof(BlockQ2_K);
  constexpr std::size_t kQsAt = kQ3 ? offsetof(BlockQ3_K, qs) : offsetof(BlockQ2_K, qs);
  constexpr std::size_t kDAt = kQ3 ? offsetof(BlockQ3_K, d) : offsetof(BlockQ2_K, d);
  const __m256i m3 = _mm256_set1_epi8(3), m4bit = _mm256_set1_epi8(4);
  __m128i pick[8];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) pick[k] = pick_pair(k);
  for (int r = 0; r < n_rows; ++r) {
    float a[T] = {}, m[T] = {};
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* wb = w + r * w_stride + b * B;
      __m128i sc8, min8 = _mm_setzero_si128();
      if constexpr (kQ3) {
        sc8 = q3_k_scales(wb + offsetof(BlockQ3_K, scales));
      } else {
        const __m128i s = load128(wb + offsetof(BlockQ2_K, scales));
        sc8 = _mm_and_si128(s, _mm_set1_epi8(0x0F));
        min8 = _mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0F));
      }
      __m256i acc[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        acc[t] = _mm256_setzero_si256();
        if constexpr (kQ3) {  // the -4 of every level: -4 * sum_k scale_k * bsum_k
          const __m256i bs = load256(xrows[t] + b * sizeof(BlockQ8_K) + kBsums);
          acc[t] = _mm256_sub_epi32(
              acc[t], _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), bs), 2));
        }
      }
      __m256i hm = kQ3 ? load256(wb + offsetof(BlockQ3_K, hmask)) : _mm256_setzero_si256();
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i qs = load256(wb + kQsAt + 32 * h);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          // Elements 128h + 32j + l: bits 2j of qs byte l, (Q3_K) bit 4h + j of hmask byte l.
          __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3);
          if constexpr (kQ3) {
            q = _mm256_or_si256(q, _mm256_and_si256(_mm256_slli_epi16(hm, 2), m4bit));
            hm = _mm256_srli_epi16(hm, 1);
          }
          const __m256i s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick[4 * h + j]));
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            const __m256i y = load256(xrows[t] + b * sizeof(BlockQ8_K) + kQs + 128 * h + 32 * j);
            acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), s));
          }
        }
      }
      const float dw = f16_float(wb + kDAt);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const std::uint8_t* xb = xrows[t] + b * sizeof(BlockQ8_K);
        const float dx = act_scale(xb);
        a[t] = std::fma(static_cast<float>(hsum_i32(acc[t])), dx * dw, a[t]);
        if constexpr (!kQ3) {
          const __m256i mins = _mm256_cvtepu8_epi16(min8);
          const int msum = hsum_i32(_mm256_madd_epi16(load256(xb + kBsums), mins));
          m[t] = std::fma(static_cast<float>(msum), dx * f16_float(wb + kDAt + 2), m[t]);
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = kQ3 ? a[t] : a[t] - m[t];
  }
}

}  // namespace

LS_AVX2 void tile_q2_k_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile_2bit<false, 1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile_2bit<false, 2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile_2bit<false, 3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile_2bit<false, 4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

LS_AVX2 void tile_q3_k_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile_2bit<true, 1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile_2bit<true, 2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile_2bit<true, 3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile_2bit<true, 4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

LS_AVX2 void tile_q4_k_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile_q4_k_grouped<1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile_q4_k_grouped<2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile_q4_k_grouped<3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile_q4_k_grouped<4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

LS_AVX2 void tile_q5_k_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile_q5_k<1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile_q5_k<2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile_q5_k<3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile_q5_k<4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

LS_AVX2 void tile_q6_k_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile_q6_k<1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile_q6_k<2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile_q6_k<3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile_q6_k<4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

}  // namespace ls::kernels::quant_detail
