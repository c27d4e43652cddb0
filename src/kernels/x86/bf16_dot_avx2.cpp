// The BF16 x BF16 dot (bf16_dot.h; its scalar definition: bf16_dot_scalar, bf16_dot.cpp) on CPUs
// with AVX2 and FMA but no AVX512_BF16, with the same bits as vdpbf16ps: the 16 lanes of the
// definition are two 8-lane registers (lanes 0-7, 8-15), each 16-element load splits into its odd
// and even elements widened to float32 (exact), and two FMAs per register take the odd, then the
// even products. MXCSR's DAZ and FTZ bits are set around the accumulation so that every FMA reads
// denormals as zero and flushes denormal results, as vdpbf16ps does; they are restored before the
// final (unflushed) tree sum.
#include <immintrin.h>

#include <algorithm>

#include "core/dtype.h"
#include "kernels/x86/bf16_dot_simd.h"

#define LS_AVX2 __attribute__((target("avx2,fma")))

namespace ls::kernels::bf16_detail {
namespace {

constexpr unsigned kDazFtz = 0x8040;  // MXCSR bit 15 flush to zero, bit 6 denormals are zero

struct Split {
  __m256 odd, even;
};
// 16 BF16 elements: the odd ones (high halves of the 32-bit words) and the even ones as floats.
LS_AVX2 inline Split split16(const std::uint16_t* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return {_mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(0xffff0000u))),
          _mm256_castsi256_ps(_mm256_slli_epi32(v, 16))};
}

// acc[r][t][0..16) += the chunks of 32 elements in [0, n) (n a multiple of 32). Not inlined:
// the call keeps the compiler from moving this arithmetic across the MXCSR writes around it.
template <int R, int T>
LS_AVX2 __attribute__((noinline)) void accumulate(const std::uint16_t* w, std::size_t ws,
                                                  const std::uint16_t* x, std::size_t xs,
                                                  std::size_t n, float (*acc)[T][16]) {
  for (int half = 0; half < 2; ++half) {  // lanes 0-7, then 8-15
    __m256 a[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) a[r][t] = _mm256_loadu_ps(acc[r][t] + 8 * half);
    for (std::size_t i = 16 * half; i < n; i += 32) {
      Split xv[T];
      for (int t = 0; t < T; ++t) xv[t] = split16(x + t * xs + i);
      for (int r = 0; r < R; ++r) {
        const Split wv = split16(w + r * ws + i);
        for (int t = 0; t < T; ++t) {
          a[r][t] = _mm256_fmadd_ps(wv.odd, xv[t].odd, a[r][t]);
          a[r][t] = _mm256_fmadd_ps(wv.even, xv[t].even, a[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) _mm256_storeu_ps(acc[r][t] + 8 * half, a[r][t]);
  }
}

template <int R, int T>
void tile(const std::uint16_t* w, std::size_t ws, const std::uint16_t* x, std::size_t xs,
          std::size_t n, float* out, std::size_t os) {
  float acc[R][T][16] = {};
  const std::size_t whole = n / 32 * 32;
  // The last, partial chunk zero-padded, as the definition says.
  std::uint16_t wpad[R][32] = {}, xpad[T][32] = {};
  for (int r = 0; r < R; ++r) std::copy(w + r * ws + whole, w + r * ws + n, wpad[r]);
  for (int t = 0; t < T; ++t) std::copy(x + t * xs + whole, x + t * xs + n, xpad[t]);
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | kDazFtz);
  accumulate<R, T>(w, ws, x, xs, whole, acc);
  if (whole < n) accumulate<R, T>(&wpad[0][0], 32, &xpad[0][0], 32, 32, acc);
  _mm_setcsr(csr);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) out[r * os + t] = sum_tree16(acc[r][t]);
}

}  // namespace

LS_AVX2 void round_to_bf16_avx2(const float* x, std::uint16_t* out, std::size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);  // NaN: quieted
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    // 8 results in the low 16 bits of 32-bit lanes -> 8 packed halves.
    const __m256i packed = _mm256_packus_epi32(r, r);  // lanes 0-3 | 0-3 | 4-7 | 4-7
    const __m128i lo = _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), lo);
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

void tile_avx2(const std::uint16_t* w, std::size_t w_stride, int n_rows, const std::uint16_t* x,
               std::size_t x_stride, int n_tok, std::size_t n, float* out, std::size_t out_stride) {
  for (int r0 = 0; r0 < n_rows; r0 += 2) {
    const std::uint16_t* wr = w + static_cast<std::size_t>(r0) * w_stride;
    for (int t0 = 0; t0 < n_tok; t0 += 2) {
      const std::uint16_t* xt = x + static_cast<std::size_t>(t0) * x_stride;
      float* o = out + static_cast<std::size_t>(r0) * out_stride + t0;
      const bool two_rows = n_rows - r0 >= 2, two_toks = n_tok - t0 >= 2;
      if (two_rows && two_toks)
        tile<2, 2>(wr, w_stride, xt, x_stride, n, o, out_stride);
      else if (two_rows)
        tile<2, 1>(wr, w_stride, xt, x_stride, n, o, out_stride);
      else if (two_toks)
        tile<1, 2>(wr, w_stride, xt, x_stride, n, o, out_stride);
      else
        tile<1, 1>(wr, w_stride, xt, x_stride, n, o, out_stride);
    }
  }
}

}  // namespace ls::kernels::bf16_detail
