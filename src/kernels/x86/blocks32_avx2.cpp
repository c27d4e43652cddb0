// AVX2 tiles of Q8_0 and Q4_0 against Q8_0 activations (chosen at run time; compiled with
// per-function target attributes so the rest of the build stays baseline x86-64). They follow the
// chunked accumulation model of quant/detail.h exactly, so they return the bits of the scalar
// reference, dot_q8_0_scalar / dot_q4_0_scalar (quant/blocks32_dot.cpp). Integer products use
// maddubs (unsigned x signed bytes -> int16 pairs) and madd, as llama.cpp does.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

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

}  // namespace

LS_AVX2 void tile_q8_0_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile_32<BlockQ8_0, 1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile_32<BlockQ8_0, 2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile_32<BlockQ8_0, 3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile_32<BlockQ8_0, 4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

// Preparing the activations pays off over many rows; a few rows (single dots) skip it.
LS_AVX2 void tile_q4_0_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      if (n_rows >= 2) return tile_q4_0<1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
      return tile_32<BlockQ4_0, 1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      if (n_rows >= 2) return tile_q4_0<2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
      return tile_32<BlockQ4_0, 2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      if (n_rows >= 2) return tile_q4_0<3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
      return tile_32<BlockQ4_0, 3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      if (n_rows >= 2) return tile_q4_0<4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
      return tile_32<BlockQ4_0, 4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

}  // namespace ls::kernels::quant_detail
