// Internals of the x86 quantized kernels: the CPU checks, the entry points of each type's AVX2 and
// AVX-512 kernels (the ISA columns of quant/traits.cpp), and the small AVX2 helpers they share.
// Each kernel follows an accumulation model of quant/detail.h, so it returns the bits of its
// scalar reference there (quant/blocks32_dot.cpp, quant/kquants_dot.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "kernels/cpu_info.h"
#include "kernels/quant.h"
#include "kernels/quant/detail.h"

namespace ls::kernels::quant_detail {

// CPU checks: AVX2 + FMA + F16C (x86/activations_avx2.cpp); AVX-512 VNNI + VL + BW
// (x86/blocks32_q8_0_vnni.cpp).
bool avx2_supported();
bool avx512_vnni_supported();

// AVX2 activation quantizers, nb blocks: the bytes of quantize_row_q8_0 / quantize_row_q8_k
// (x86/activations_avx2.cpp).
void quantize_row_q8_0_avx2(const float* x, std::uint8_t* out, std::size_t nb);
void quantize_row_q8_k_avx2(const float* x, std::uint8_t* out, std::size_t nb);

// AVX2 tiles, one per weight type: out[r * out_stride + t] = dot(w row r, xrows[t]) for
// r < n_rows (rows w_stride bytes apart) and t < n_tok = 1..4, nb blocks per row; each weight block
// is unpacked once for the n_tok tokens. x86/blocks32_avx2.cpp (Q8_0, Q4_0: the chunked model),
// x86/blocks32_levels_avx2.cpp (Q4_1, Q5_0, Q5_1, IQ4_NL: the levels model),
// x86/kquants_avx2.cpp (the k-quants).
#define LS_AVX2_TILE(name)                                                                         \
  void tile_##name##_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,                 \
                          const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out, \
                          std::size_t out_stride)
LS_AVX2_TILE(q8_0);
LS_AVX2_TILE(q4_0);
LS_AVX2_TILE(q4_1);
LS_AVX2_TILE(q5_0);
LS_AVX2_TILE(q5_1);
LS_AVX2_TILE(iq4_nl);
LS_AVX2_TILE(q2_k);
LS_AVX2_TILE(q3_k);
LS_AVX2_TILE(q4_k);
LS_AVX2_TILE(q5_k);
LS_AVX2_TILE(q6_k);
#undef LS_AVX2_TILE

// AVX-512 VNNI Q8_0 x Q8_0 tiles (x86/blocks32_q8_0_vnni.cpp), any number of rows and tokens
// (n elements a row); only called where avx512_vnni_supported(). Same bits as the AVX2 tile.
void dot_tile_q8_0_vnni(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                        const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        float* out, std::size_t out_stride);

// AVX-512 row-group tiles for the first n_rows / 8 * 8 rows, whose count they return (the caller
// does the rest); only called where avx512_vnni_supported() (every such CPU has avx512bw). Same
// bits as the AVX2 tiles. x86/blocks32_avx512.cpp (Q4_1, Q5_0, Q5_1),
// x86/kquants_q4_q5_avx512.cpp (Q4_K, Q5_K), x86/kquants_q6_avx512.cpp (Q6_K).
#define LS_AVX512_ROWS8(name)                                                           \
  int dot_tile_##name##_avx512(const std::uint8_t* w, std::size_t w_stride, int n_rows, \
                               const std::uint8_t* xq, std::size_t x_stride, int n_tok, \
                               std::size_t n, float* out, std::size_t out_stride)
LS_AVX512_ROWS8(q4_1);
LS_AVX512_ROWS8(q5_0);
LS_AVX512_ROWS8(q5_1);
LS_AVX512_ROWS8(q4_k);
LS_AVX512_ROWS8(q5_k);
LS_AVX512_ROWS8(q6_k);
#undef LS_AVX512_ROWS8

// One block-interleaved group of 8 Q4_K, Q5_K or Q6_K rows (interleave.h: block b of row l at
// (8 b + l) * block bytes from `group`) against n_tok = 1..8 Q8_K activation rows (xrows[t]),
// nb blocks per row: out[l * out_stride + t]. The AVX-512BW tiles above read in another order:
// the same bits.
#define LS_AVX512_GROUP(name)                                                             \
  void group_##name##_avx512(const std::uint8_t* group, const std::uint8_t* const* xrows, \
                             int n_tok, std::size_t nb, float* out, std::size_t out_stride)
LS_AVX512_GROUP(q4_k);
LS_AVX512_GROUP(q5_k);
LS_AVX512_GROUP(q6_k);
#undef LS_AVX512_GROUP

// Small AVX2 helpers shared by the x86 quantized kernels (callers carry the
// same target or a superset of it).
#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))
// The AVX-512 quantized kernels' target (x86/*_avx512.cpp, x86/*_vnni.cpp): every CPU use_vnni()
// admits has it.
#define LS_AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

LS_AVX2 inline float hsum_tree(__m256 v) {  // ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7))
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// The f16 scale at the start of a Q8_0/Q4_0 block.
inline std::uint16_t f16_at(const std::uint8_t* block) {
  std::uint16_t d;
  std::memcpy(&d, block, 2);
  return d;
}

// Eight f16 scales of consecutive blocks (stride B bytes) as float lanes, in the lane order of
// the format: natural for Q8_0, [b0 b2 b4 b6 | b1 b3 b5 b7] for Q4_0 (kEvenOdd).
template <std::size_t B, bool kEvenOdd>
LS_AVX2 inline __m256 gather_scales(const std::uint8_t* p) {
  auto d = [p](int b) { return std::uint64_t{f16_at(p + b * B)}; };
  std::uint64_t a, b;
  if constexpr (kEvenOdd) {
    a = d(0) | d(2) << 16 | d(4) << 32 | d(6) << 48;
    b = d(1) | d(3) << 16 | d(5) << 32 | d(7) << 48;
  } else {
    a = d(0) | d(1) << 16 | d(2) << 32 | d(3) << 48;
    b = d(4) | d(5) << 16 | d(6) << 32 | d(7) << 48;
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(b), static_cast<long long>(a)));
}

// One line of a decode stream, into L2 or L1 as decode_prefetch_to_l2() chose for this CPU.
inline void prefetch_decode(const void* p) {
  static const bool l2 = decode_prefetch_to_l2();
  if (l2)
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T2);
  else
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

LS_AVX2 inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
// Decode's software prefetch over a stream of weight blocks: each block asks for the bytes
// decode_ahead_bytes() further on (interleave_simd.inc explains why a distance in bytes), which
// the kernel reaches a few blocks later (cpu_info.h says how far on each CPU).
// The lines of [p + ahead, + bytes), into L2 or L1 (prefetch_decode).
inline void prefetch_ahead(const std::uint8_t* p, std::size_t ahead, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 64) prefetch_decode(p + ahead + i);
}

LS_AVX2 inline __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
LS_AVX2 inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

// The 12 packed scale bytes of a Q4_K/Q5_K block (see q4_k_scale_min) as bytes
// [sc0..sc7, m0..m7]: low 6 bits of bytes 0-7, and the nibbles of bytes 8-11 plus the top 2 bits
// of bytes 0-7 for sub-blocks 4-7.
LS_AVX2 inline __m128i k_scales_mins(const std::uint8_t* scales) {
  std::uint32_t u[3];
  std::memcpy(u, scales, 12);
  constexpr std::uint32_t k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x03030303;
  return _mm_set_epi32(
      static_cast<int>(((u[2] >> 4) & k4) | (((u[1] >> 6) & k2) << 4)), static_cast<int>(u[1] & k6),
      static_cast<int>((u[2] & k4) | (((u[0] >> 6) & k2) << 4)), static_cast<int>(u[0] & k6));
}

// Lane r of the result = the sum of the 8 int32 lanes of v[r]: the exact block sums of 8 rows
// in one vector (the row-group tiles).
LS_AVX2 inline __m256i hsum8_i32(const __m256i* v) {
  const __m256i a01 = _mm256_hadd_epi32(v[0], v[1]), a23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i a45 = _mm256_hadd_epi32(v[4], v[5]), a67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i b0 = _mm256_hadd_epi32(a01, a23), b1 = _mm256_hadd_epi32(a45, a67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(b0, b1, 0x20),
                          _mm256_permute2x128_si256(b0, b1, 0x31));
}

// The f16 at byte `at` of 8 blocks `stride` bytes apart (one per row) as 8 float lanes.
LS_AVX2 inline __m256 gather_f16x8(const std::uint8_t* p, std::size_t stride, std::size_t at) {
  alignas(16) std::uint16_t h[8];
  for (int r = 0; r < 8; ++r) std::memcpy(&h[r], p + r * stride + at, 2);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// out[r * out_stride] = lane r of v, for the 8 rows of a row group.
LS_AVX2 inline void store_rows8(__m256 v, float* out, std::size_t out_stride) {
  alignas(32) float l[8];
  _mm256_store_ps(l, v);
  for (int r = 0; r < 8; ++r) out[r * out_stride] = l[r];
}

// The float part of the Q4_K row-group tiles for block b of 8 rows (w0: the block of the first
// row, rows w_stride apart) and T tokens: lane r of a[t] / m[t] is row r's running sum, updated
// with tile_q4_k's fma per block from the rows' exact sums isum[t][r] and msum[t][r] (8 int32
// partials each).
template <int T>
LS_AVX2 inline void k_rows8_block(const std::uint8_t* w0, std::size_t w_stride,
                                  const std::uint8_t* const* xrows, std::size_t b,
                                  const __m256i (*isum)[8], const __m256i (*msum)[8], __m256* a,
                                  __m256* m) {
  const __m256 dw = gather_f16x8(w0, w_stride, offsetof(BlockQ4_K, d));
  const __m256 dminw = gather_f16x8(w0, w_stride, offsetof(BlockQ4_K, dmin));
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    float dx;
    std::memcpy(&dx, xrows[t] + b * sizeof(BlockQ8_K), 4);
    const __m256 vdx = _mm256_set1_ps(dx);
    a[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8_i32(isum[t])), _mm256_mul_ps(vdx, dw), a[t]);
    m[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8_i32(msum[t])), _mm256_mul_ps(vdx, dminw), m[t]);
  }
}

// Runs a row-group tile over the whole groups of 8 rows of [0, n_rows) for n_tok activation rows,
// kMaxTok tokens per call (tiles[nt - 1] takes nt). Decode does not come here (quant.cpp's
// tile_simd). Returns the number of rows done (n_rows / 8 * 8); the caller does the rest.
using RowGroupTile = void (*)(const std::uint8_t* w, std::size_t w_stride,
                              const std::uint8_t* const* xrows, std::size_t nb, float* out,
                              std::size_t out_stride);
template <int kMaxTok>
inline int run_row_groups(const RowGroupTile* tiles, const std::uint8_t* w, std::size_t w_stride,
                          int n_rows, const std::uint8_t* xq, std::size_t x_stride, int n_tok,
                          std::size_t nb, float* out, std::size_t out_stride) {
  const int full = n_rows / 8 * 8;
  const std::uint8_t* xrows[kMaxTok];
  for (int t0 = 0; t0 < n_tok; t0 += kMaxTok) {
    const int nt = n_tok - t0 < kMaxTok ? n_tok - t0 : kMaxTok;
    for (int t = 0; t < nt; ++t) xrows[t] = xq + (t0 + t) * x_stride;
    for (int r = 0; r < full; r += 8) {
      tiles[nt - 1](w + r * w_stride, w_stride, xrows, nb, out + r * out_stride + t0, out_stride);
    }
  }
  return full;
}

}  // namespace ls::kernels::quant_detail
