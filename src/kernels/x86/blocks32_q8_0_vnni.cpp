// Q8_0 x Q8_0 tiles for several tokens with AVX-512 VNNI (vpdpbusd on 256-bit vectors; chosen at
// run time on CPUs with avx512vnni and avx512vl). The AVX2 tile spends most of its time in the
// shuffles that add up each block's eight partial sums, once per token. Here a chunk of 8
// weight blocks is transposed once (32-bit lane b of vector k = bytes 4k..4k+3 of block b), and
// each token's activations the same way once per call, so that 8 vpdpbusd leave lane b = the
// whole sum of block b: no reduction per token. vpdpbusd multiplies unsigned by signed bytes and
// adds straight into int32, so with w + 128 as the unsigned side
//   sum(w * x) = sum((w + 128) * x) - 128 * sum(x)
// holds exactly. Block sums are the same integers as the AVX2 and scalar paths, and the float
// part (scales, fma into lane-ordered accumulators, the final tree sum) is the AVX2 tile's, so
// the bits match the scalar reference, dot_q8_0_scalar (quant/blocks32_dot.cpp; quant_tests check
// it).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

constexpr std::size_t kB = sizeof(BlockQ8_0);  // 34 bytes: f16 scale + 32 int8

struct alignas(32) ChunkT {  // one chunk transposed: v[k] lane b = bytes 4k..4k+3 of block b
  __m256i v[8];
};
struct alignas(32) Lanes8 {
  __m256 f;
  __m256i i;
};

// The 8x8 transpose of 32-bit elements: out[k] lane b = block b's element k.
LS_AVX512VNNI inline void transpose_chunk(const std::uint8_t* c, __m256i* out) {
  __m256i r[8], t[8], u[8];
  for (int b = 0; b < 8; ++b) r[b] = load256(c + b * kB + 2);
  for (int p = 0; p < 8; p += 2) {
    t[p] = _mm256_unpacklo_epi32(r[p], r[p + 1]);
    t[p + 1] = _mm256_unpackhi_epi32(r[p], r[p + 1]);
  }
  for (int q = 0; q < 8; q += 4) {
    u[q] = _mm256_unpacklo_epi64(t[q], t[q + 2]);
    u[q + 1] = _mm256_unpackhi_epi64(t[q], t[q + 2]);
    u[q + 2] = _mm256_unpacklo_epi64(t[q + 1], t[q + 3]);
    u[q + 3] = _mm256_unpackhi_epi64(t[q + 1], t[q + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
    out[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
  }
}

template <int T>
LS_AVX512VNNI void tile_q8_0_vnni(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                                  const std::uint8_t* const* xrows, std::size_t nb, float* out,
                                  std::size_t out_stride) {
  const std::size_t full = nb / 8 * 8, left = nb - full, chunks = (nb + 7) / 8;
  alignas(32) std::uint8_t wpad[8 * kB], xpad[8 * kB];
  if (left > 0) std::memset(wpad, 0, sizeof wpad);  // zero blocks add nothing
  // Per call: each token's chunks transposed, their scales and 128 * sum(x) per block.
  thread_local std::vector<ChunkT> xt;
  thread_local std::vector<Lanes8> xs;
  if (xt.size() < chunks * T) xt.resize(chunks * T), xs.resize(chunks * T);
  const __m256i k128 = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int t = 0; t < T; ++t)
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::uint8_t* xc = xrows[t] + c * 8 * kB;
      if (c * 8 == full) {
        std::memset(xpad, 0, sizeof xpad);
        std::memcpy(xpad, xc, left * kB);
        xc = xpad;
      }
      ChunkT& ct = xt[t * chunks + c];
      transpose_chunk(xc, ct.v);
      __m256i off = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) off = _mm256_dpbusd_epi32(off, k128, ct.v[k]);
      xs[t * chunks + c] = {gather_scales<kB, false>(xc), off};
    }
  for (int r = 0; r < n_rows; ++r) {
    const std::uint8_t* wr = w + r * w_stride;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::uint8_t* wc = wr + c * 8 * kB;
      // The same chunk two rows ahead: the tile is fast enough to wait on memory otherwise.
      for (std::size_t line = 0; line < 8 * kB; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(wc + 2 * w_stride + line), _MM_HINT_T0);
      if (c * 8 == full) {
        std::memcpy(wpad, wc, left * kB);
        wc = wpad;
      }
      __m256i wt[8];
      transpose_chunk(wc, wt);
      for (int k = 0; k < 8; ++k) wt[k] = _mm256_xor_si256(wt[k], k128);  // w + 128, unsigned
      const __m256 dw = gather_scales<kB, false>(wc);
      for (int t = 0; t < T; ++t) {
        const ChunkT& x = xt[t * chunks + c];
        // Two chains of four: vpdpbusd's latency is hidden behind the other tokens' chains.
        __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wt[0], x.v[0]);
        __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wt[1], x.v[1]);
        for (int k = 2; k < 8; k += 2) {
          s0 = _mm256_dpbusd_epi32(s0, wt[k], x.v[k]);
          s1 = _mm256_dpbusd_epi32(s1, wt[k + 1], x.v[k + 1]);
        }
        const Lanes8& xl = xs[t * chunks + c];
        const __m256i sums = _mm256_sub_epi32(_mm256_add_epi32(s0, s1), xl.i);
        const __m256 scale = _mm256_mul_ps(dw, xl.f);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc[t]);
      }
    }
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = hsum_tree(acc[t]);
  }
}

}  // namespace

bool avx512_vnni_supported() {
  static const bool ok = __builtin_cpu_supports("avx512vnni") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  return ok;
}

void dot_tile_q8_0_vnni(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                        const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        float* out, std::size_t out_stride) {
  using Tile = void (*)(const std::uint8_t*, std::size_t, int, const std::uint8_t* const*,
                        std::size_t, float*, std::size_t);
  static constexpr Tile kTiles[16] = {
      tile_q8_0_vnni<1>,  tile_q8_0_vnni<2>,  tile_q8_0_vnni<3>,  tile_q8_0_vnni<4>,
      tile_q8_0_vnni<5>,  tile_q8_0_vnni<6>,  tile_q8_0_vnni<7>,  tile_q8_0_vnni<8>,
      tile_q8_0_vnni<9>,  tile_q8_0_vnni<10>, tile_q8_0_vnni<11>, tile_q8_0_vnni<12>,
      tile_q8_0_vnni<13>, tile_q8_0_vnni<14>, tile_q8_0_vnni<15>, tile_q8_0_vnni<16>};
  // Up to 16 tokens per pass (AVX-512 has 32 vector registers: 16 accumulators, the chunk's 8
  // weight vectors and the chains): each weight chunk is transposed once per pass.
  const std::uint8_t* xrows[16];
  for (int t0 = 0; t0 < n_tok; t0 += 16) {
    const int nt = std::min(n_tok - t0, 16);
    for (int t = 0; t < nt; ++t) xrows[t] = xq + (t0 + t) * x_stride;
    kTiles[nt - 1](w, w_stride, n_rows, xrows, n / 32, out + t0, out_stride);
  }
}

}  // namespace ls::kernels::quant_detail
