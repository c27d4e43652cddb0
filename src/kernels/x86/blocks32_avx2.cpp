// AVX2 quantized dot products and tiles (chosen at run time; compiled with per-function target
// attributes so the rest of the build stays baseline x86-64). They follow the accumulation model
// of quant_internal.h exactly, so they return the scalar path's bits. Integer products use
// maddubs (unsigned x signed bytes -> int16 pairs) and madd, as llama.cpp does.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/quant.h"
#include "kernels/quant_internal.h"

namespace ls::kernels::quant_detail {
namespace {

// [low 16 bytes from a | low 16 bytes from b]
LS_AVX2 inline __m256i load2x128(const void* a, const void* b) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(load128(a)), load128(b), 1);
}

struct alignas(32) Lanes8 {  // a vector in a std::vector (no attribute-dropping warning)
  __m256 v;
};

// ---- Q8_0 x Q8_0: one chunk of 8 blocks for 1 weight row and T activation rows ----------------

// Block sums of 8 blocks, lane b = block b. v[b] holds 8 int32 partial sums of block b.
LS_AVX2 inline __m256i reduce8(__m256i x0123, __m256i x4567) {
  // x0123 = [b0lo b1lo b2lo b3lo | b0hi b1hi b2hi b3hi], x4567 likewise for blocks 4..7.
  const __m256i t = _mm256_blend_epi32(x0123, x4567, 0xF0);
  const __m256i u = _mm256_permute2x128_si256(x0123, x4567, 0x21);
  return _mm256_add_epi32(t, u);
}

LS_AVX2 inline __m256i q8_0_partial(__m256i aw, __m256i w, const std::uint8_t* xblock) {
  const __m256i x = load256(xblock + 2);
  const __m256i ones = _mm256_set1_epi16(1);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w)), ones);
}

// Blocks reduced as they come (h = the pair just done, x0123 = blocks 0..3) so that 4 tokens
// fit in the 16 vector registers.
template <int T>
LS_AVX2 void chunk_q8_0(const std::uint8_t* w, const std::uint8_t* const* x, __m256i* sums) {
  constexpr std::size_t B = sizeof(BlockQ8_0);
  __m256i h[T], x0123[T];
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const std::uint8_t* w0 = w + 2 * p * B;
    const __m256i q0 = load256(w0 + 2), q1 = load256(w0 + B + 2);
    const __m256i a0 = _mm256_sign_epi8(q0, q0), a1 = _mm256_sign_epi8(q1, q1);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const std::uint8_t* x0 = x[t] + 2 * p * B;
      const __m256i v = _mm256_hadd_epi32(q8_0_partial(a0, q0, x0), q8_0_partial(a1, q1, x0 + B));
      if (p == 0 || p == 2) h[t] = v;
      if (p == 1) x0123[t] = _mm256_hadd_epi32(h[t], v);
      if (p == 3) sums[t] = reduce8(x0123[t], _mm256_hadd_epi32(h[t], v));
    }
  }
}

// ---- Q4_0 x Q8_0: lanes [b0 b2 b4 b6 | b1 b3 b5 b7] ------------------------------------------

// Blocks b and b+1 for T tokens: out[t] = [4 partial sums of b | 4 of b+1].
template <int T>
LS_AVX2 inline void pair_q4_0(const std::uint8_t* w, const std::uint8_t* const* x, int b,
                              __m256i* out) {
  constexpr std::size_t B = sizeof(BlockQ4_0), BX = sizeof(BlockQ8_0);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m8 = _mm256_set1_epi8(8);
  const __m256i ones = _mm256_set1_epi16(1);
  // Blocks b and b+1 side by side: lo = elements 0..15 of each, hi = elements 16..31.
  const __m256i q = load2x128(w + b * B + 2, w + (b + 1) * B + 2);
  const __m256i lo = _mm256_and_si256(q, m4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const std::uint8_t* x0 = x[t] + b * BX + 2;
    const std::uint8_t* x1 = x[t] + (b + 1) * BX + 2;
    const __m256i ylo = load2x128(x0, x1), yhi = load2x128(x0 + 16, x1 + 16);
    // (q - 8) * y as q * y - 8 * y: the nibbles stay unsigned, as maddubs wants.
    const __m256i p =
        _mm256_add_epi16(_mm256_maddubs_epi16(lo, ylo), _mm256_maddubs_epi16(hi, yhi));
    const __m256i c =
        _mm256_add_epi16(_mm256_maddubs_epi16(m8, ylo), _mm256_maddubs_epi16(m8, yhi));
    out[t] = _mm256_madd_epi16(_mm256_sub_epi16(p, c), ones);
  }
}

// Lanes come out as [b0 b2 b4 b6 | b1 b3 b5 b7] (q4_0_lane).
template <int T>
LS_AVX2 void chunk_q4_0(const std::uint8_t* w, const std::uint8_t* const* x, __m256i* sums) {
  __m256i p[T], q[T], g[T];
  pair_q4_0<T>(w, x, 0, p);
  pair_q4_0<T>(w, x, 2, q);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) g[t] = _mm256_hadd_epi32(p[t], q[t]);
  pair_q4_0<T>(w, x, 4, p);
  pair_q4_0<T>(w, x, 6, q);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) sums[t] = _mm256_hadd_epi32(g[t], _mm256_hadd_epi32(p[t], q[t]));
}

// Copies len < 8 * 34 bytes with 16-byte moves, never touching memory past src + len (the last
// move overlaps the previous one). len >= 16 always holds here (one block is 18 or 34 bytes).
LS_AVX2 inline void copy_small(std::uint8_t* dst, const std::uint8_t* src, std::size_t len) {
  std::size_t i = 0;
  for (; i + 16 <= len; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), load128(src + i));
  if (i < len)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + len - 16), load128(src + len - 16));
}

// Zeroes n bytes (a multiple of 16) with vector stores. GCC turns a zeroing loop (or a memset)
// into `rep stos`, whose start-up cost dominates a single dot product; the empty asm hides
// that the stored value is zero.
LS_AVX2 inline void zero16(std::uint8_t* dst, std::size_t n) {
  __m128i z = _mm_setzero_si128();
  asm("" : "+x"(z));
  for (std::size_t i = 0; i < n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), z);
}

// Rows x tokens of a 32-element format, T tokens at a time (T <= 4), chunks of 8 blocks. The
// ragged last chunk runs on copies padded with zero blocks (sum 0, scale 0: fma(0, 0, lane) ==
// lane), as the model says; the activation copies are made once per call.
template <typename WBlock, int T>
LS_AVX2 void tile_32(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                     const std::uint8_t* const* xrows, std::size_t nb, float* out,
                     std::size_t out_stride) {
  constexpr bool kQ4 = sizeof(WBlock) == sizeof(BlockQ4_0);
  constexpr std::size_t B = sizeof(WBlock), BX = sizeof(BlockQ8_0);
  const std::size_t full = nb / 8 * 8, left = nb - full;
  alignas(32) std::uint8_t wpad[8 * B], xpad[T][8 * BX];
  const std::uint8_t* xtail[T];
  if (left > 0) {
    zero16(wpad, sizeof wpad);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      zero16(xpad[t], sizeof xpad[t]);
      copy_small(xpad[t], xrows[t] + full * BX, left * BX);
      xtail[t] = xpad[t];
    }
  }
  // The activation scales of every chunk as floats in lane order, once per call when several
  // rows will use them (a single dot gathers them as it goes: no per-call setup).
  const std::size_t chunks = (nb + 7) / 8;
  const bool keep = n_rows >= 4;
  thread_local std::vector<Lanes8> xscales;
  if (keep) {
    if (xscales.size() < chunks * T) xscales.resize(chunks * T);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
      for (std::size_t c = 0; c < chunks; ++c)
        xscales[t * chunks + c].v =
            gather_scales<BX, kQ4>(c * 8 == full ? xtail[t] : xrows[t] + c * 8 * BX);
  }
  for (int r = 0; r < n_rows; ++r) {
    const std::uint8_t* wr = w + r * w_stride;
    __m256 acc[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (std::size_t c = 0; c < nb; c += 8) {
      const std::uint8_t* wc = wr + c * B;
      const std::uint8_t* xc[T];
      if (c == full) {
        copy_small(wpad, wc, left * B);
        wc = wpad;
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) xc[t] = xtail[t];
      } else {
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) xc[t] = xrows[t] + c * BX;
      }
      __m256i sums[T];
      if constexpr (kQ4)
        chunk_q4_0<T>(wc, xc, sums);
      else
        chunk_q8_0<T>(wc, xc, sums);
      const __m256 dw = gather_scales<B, kQ4>(wc);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256 dx = keep ? xscales[t * chunks + c / 8].v : gather_scales<BX, kQ4>(xc[t]);
        const __m256 scale = _mm256_mul_ps(dw, dx);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[t]), scale, acc[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = hsum_tree(acc[t]);
  }
}

// ---- Q4_0 with prepared activations (the decode and prefill path) ----------------------------

// One chunk of 8 activation blocks rearranged for Q4_0 once per call, so each weight row costs
// only its own loads: y[2p], y[2p + 1] = elements 0..15 / 16..31 of blocks 2p and 2p + 1 side by
// side (the layout the nibble unpacking produces), corr = 8 * (sum of each block's values) and
// scale = each block's f16 scale, both in the Q4_0 lane order. Blocks past the row are zeros.
struct alignas(32) ChunkQ4 {
  __m256i y[8];
  __m256i corr;
  __m256 scale;
};

LS_AVX2 void prepare_q4_0(const std::uint8_t* x, std::size_t nb, ChunkQ4* out) {
  constexpr std::size_t BX = sizeof(BlockQ8_0);
  const __m256i m8 = _mm256_set1_epi8(8), ones = _mm256_set1_epi16(1);
  alignas(32) std::uint8_t pad[8 * BX];
  for (std::size_t c = 0; c < nb; c += 8) {
    const std::uint8_t* xc = x + c * BX;
    if (nb - c < 8) {  // the ragged last chunk: zero blocks after the row's end
      zero16(pad, sizeof pad);
      copy_small(pad, xc, (nb - c) * BX);
      xc = pad;
    }
    ChunkQ4& ch = out[c / 8];
    __m256i u[4];
#pragma GCC unroll 8
    for (int p = 0; p < 4; ++p) {
      const std::uint8_t* x0 = xc + 2 * p * BX + 2;
      const std::uint8_t* x1 = x0 + BX;
      ch.y[2 * p] = load2x128(x0, x1);
      ch.y[2 * p + 1] = load2x128(x0 + 16, x1 + 16);
      const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(m8, ch.y[2 * p]),
                                         _mm256_maddubs_epi16(m8, ch.y[2 * p + 1]));
      u[p] = _mm256_madd_epi16(s, ones);
    }
    // The same reduction as the weight side, so the lanes line up: [b0 b2 b4 b6 | b1 b3 b5 b7].
    ch.corr = _mm256_hadd_epi32(_mm256_hadd_epi32(u[0], u[1]), _mm256_hadd_epi32(u[2], u[3]));
    ch.scale = gather_scales<BX, true>(xc);
  }
}

template <int T>
LS_AVX2 void tile_q4_0(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                       const std::uint8_t* const* xrows, std::size_t nb, float* out,
                       std::size_t out_stride) {
  constexpr std::size_t B = sizeof(BlockQ4_0);
  const std::size_t chunks = (nb + 7) / 8, full = nb / 8 * 8, left = nb - full;
  // Scratch reused from call to call: no allocation once a thread has seen its largest row.
  thread_local std::vector<ChunkQ4> scratch;
  if (scratch.size() < chunks * T) scratch.resize(chunks * T);
  const ChunkQ4* prep[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    prepare_q4_0(xrows[t], nb, &scratch[t * chunks]);
    prep[t] = &scratch[t * chunks];
  }
  alignas(32) std::uint8_t wpad[8 * B];
  if (left > 0) zero16(wpad, sizeof wpad);
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  for (int r = 0; r < n_rows; ++r) {
    const std::uint8_t* wr = w + r * w_stride;
    __m256 acc[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::uint8_t* wc = wr + c * 8 * B;
      if (c * 8 == full) {
        copy_small(wpad, wc, left * B);
        wc = wpad;
      }
      // Pairs of blocks 0..3 of the chunk; the block sums are reduced as they come (a = pairs
      // 0+1, b = pairs 2+3) so that 4 tokens fit in the 16 vector registers.
      __m256i a[T], b[T];
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m256i q = load2x128(wc + 2 * p * B + 2, wc + (2 * p + 1) * B + 2);
        const __m256i lo = _mm256_and_si256(q, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const ChunkQ4& ch = prep[t][c];
          const __m256i u =
              _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo, ch.y[2 * p]),
                                                 _mm256_maddubs_epi16(hi, ch.y[2 * p + 1])),
                                ones);
          if (p == 0) a[t] = u;
          if (p == 1) a[t] = _mm256_hadd_epi32(a[t], u);
          if (p == 2) b[t] = u;
          if (p == 3) b[t] = _mm256_hadd_epi32(b[t], u);
        }
      }
      const __m256 dw = gather_scales<B, true>(wc);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const ChunkQ4& ch = prep[t][c];
        const __m256i sums = _mm256_sub_epi32(_mm256_hadd_epi32(a[t], b[t]), ch.corr);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, ch.scale), acc[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = hsum_tree(acc[t]);
  }
}

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

template <int T>
LS_AVX2 void tile_t(DType weight, const std::uint8_t* w, std::size_t w_stride, int n_rows,
                    const std::uint8_t* const* xrows, std::size_t n, float* out,
                    std::size_t out_stride) {
  const std::size_t nb = n / dtype_block_elems(weight);
  switch (weight) {
    case DType::Q8_0:
      return tile_32<BlockQ8_0, T>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case DType::Q4_0:
      // Preparing the activations pays off over many rows; a few rows (single dots) skip it.
      if (n_rows >= 2) return tile_q4_0<T>(w, w_stride, n_rows, xrows, nb, out, out_stride);
      return tile_32<BlockQ4_0, T>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case DType::Q4_K:
      return tile_q4_k_grouped<T>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q4_1:
    case DType::IQ4_NL:
      return tile_32_more_avx2(weight, w, w_stride, n_rows, xrows, T, nb, out, out_stride);
    case DType::Q5_K:
    case DType::Q3_K:
    case DType::Q2_K:
      return tile_k_more_avx2(weight, w, w_stride, n_rows, xrows, T, nb, out, out_stride);
    default:
      return tile_q6_k<T>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

}  // namespace

void dot_tile_avx2(DType weight, const std::uint8_t* w, std::size_t w_stride, int n_rows,
                   const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                   float* out, std::size_t out_stride) {
  // Tokens in groups of up to 4: each weight block is loaded and unpacked once per group.
  for (int t0 = 0; t0 < n_tok; t0 += 4) {
    const int nt = n_tok - t0 < 4 ? n_tok - t0 : 4;
    const std::uint8_t* xrows[4];
    for (int t = 0; t < nt; ++t) xrows[t] = xq + (t0 + t) * x_stride;
    float* o = out + t0;
    switch (nt) {
      case 1:
        tile_t<1>(weight, w, w_stride, n_rows, xrows, n, o, out_stride);
        break;
      case 2:
        tile_t<2>(weight, w, w_stride, n_rows, xrows, n, o, out_stride);
        break;
      case 3:
        tile_t<3>(weight, w, w_stride, n_rows, xrows, n, o, out_stride);
        break;
      default:
        tile_t<4>(weight, w, w_stride, n_rows, xrows, n, o, out_stride);
        break;
    }
  }
}

}  // namespace ls::kernels::quant_detail
