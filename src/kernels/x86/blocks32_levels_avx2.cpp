// AVX2 tiles of the 32-element formats Q4_1, Q5_0, Q5_1 and IQ4_NL against Q8_0 activations,
// following their levels accumulation model in quant/detail.h exactly (same bits as the scalar
// references, dot_q5_0_scalar etc. in quant/blocks32_dot.cpp): each weight block is unpacked to 32
// int8 levels once per group of tokens, multiplied with maddubs/madd, 8 blocks reduced to one
// vector of block sums, then one fma per lane; the activations' scales and (Q4_1, Q5_1) block sums
// are prepared once per call.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

constexpr std::size_t kBX = sizeof(BlockQ8_0);

// 32 bytes, 0x10 where bit e of qh is set (byte e), else 0.
LS_AVX2 inline __m256i fifth_bits(const std::uint8_t* qh_at) {
  std::uint32_t qh;
  std::memcpy(&qh, qh_at, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(qh)),
      _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Elements 0..15 (low nibbles) | 16..31 (high nibbles).
LS_AVX2 inline __m256i nibbles(const std::uint8_t* qs) {
  const __m128i q = load128(qs);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

// Per format: block bytes, where the scale / min / bits are, and the 32 levels as int8.
struct Q5_0F {
  static constexpr std::size_t kB = sizeof(BlockQ5_0);
  static constexpr bool kSigned = true, kMin = false;
  LS_AVX2 static __m256i levels(const std::uint8_t* b) {
    const __m256i q = _mm256_or_si256(nibbles(b + 6), fifth_bits(b + 2));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(16));
  }
};
struct Q5_1F {
  static constexpr std::size_t kB = sizeof(BlockQ5_1);
  static constexpr bool kSigned = false, kMin = true;
  LS_AVX2 static __m256i levels(const std::uint8_t* b) {
    return _mm256_or_si256(nibbles(b + 8), fifth_bits(b + 4));
  }
};
struct Q4_1F {
  static constexpr std::size_t kB = sizeof(BlockQ4_1);
  static constexpr bool kSigned = false, kMin = true;
  LS_AVX2 static __m256i levels(const std::uint8_t* b) { return nibbles(b + 4); }
};
struct IQ4_NLF {
  static constexpr std::size_t kB = sizeof(BlockIQ4_NL);
  static constexpr bool kSigned = true, kMin = false;
  LS_AVX2 static __m256i levels(const std::uint8_t* b) {
    const __m256i table = _mm256_broadcastsi128_si256(load128(kIq4nlValues));
    return _mm256_shuffle_epi8(table, nibbles(b + 2));
  }
};

// 8 int32 partial sums of levels q times one activation block.
template <class F>
LS_AVX2 inline __m256i partial(__m256i q, const std::uint8_t* xblock) {
  const __m256i x = load256(xblock + 2);
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (F::kSigned)  // |q| * (x with q's sign): maddubs wants its first operand unsigned
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q)),
                             ones);
  else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), ones);
}

// Block sums of 8 blocks for T tokens, lane b = block b.
template <class F, int T>
LS_AVX2 inline void chunk_sums(const std::uint8_t* w, const std::uint8_t* const* x, __m256i* sums) {
  __m256i h[T], x0123[T];
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const __m256i q0 = F::levels(w + 2 * p * F::kB), q1 = F::levels(w + (2 * p + 1) * F::kB);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const std::uint8_t* x0 = x[t] + 2 * p * kBX;
      const __m256i v = _mm256_hadd_epi32(partial<F>(q0, x0), partial<F>(q1, x0 + kBX));
      if (p == 0 || p == 2) h[t] = v;
      if (p == 1) x0123[t] = _mm256_hadd_epi32(h[t], v);
      if (p == 3) {
        // x0123 = [b0lo b1lo b2lo b3lo | b0hi b1hi b2hi b3hi], x4567 likewise for blocks 4..7.
        const __m256i x4567 = _mm256_hadd_epi32(h[t], v);
        sums[t] = _mm256_add_epi32(_mm256_blend_epi32(x0123[t], x4567, 0xF0),
                                   _mm256_permute2x128_si256(x0123[t], x4567, 0x21));
      }
    }
  }
}

template <class F, int T>
LS_AVX2 void tile(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                  const std::uint8_t* const* xrows, std::size_t nb, float* out,
                  std::size_t out_stride) {
  const std::size_t chunks = (nb + 7) / 8, full = nb / 8;
  // The activation side, once per call: per token, the f16 scale of every block as a float and
  // (Q4_1, Q5_1) the float of its integer sum; scratch reused from call to call.
  thread_local std::vector<float> prep;
  if (prep.size() < 16 * chunks * T) prep.resize(16 * chunks * T);
  float* dxs[T];
  float* txs[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    dxs[t] = prep.data() + 16 * chunks * t;  // (no operator[]: empty for an empty row)
    txs[t] = dxs[t] + 8 * chunks;
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* xb = xrows[t] + b * kBX;
      dxs[t][b] = _cvtsh_ss(f16_at(xb));
      if constexpr (F::kMin) {
        int s = 0;
        for (int e = 0; e < 32; ++e) s += static_cast<std::int8_t>(xb[2 + e]);
        txs[t][b] = static_cast<float>(s);
      }
    }
  }
  for (int r = 0; r < n_rows; ++r) {
    const std::uint8_t* wr = w + r * w_stride;
    __m256 acc[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (std::size_t c = 0; c < full; ++c) {
      const std::uint8_t* wc = wr + c * 8 * F::kB;
      const std::uint8_t* xc[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) xc[t] = xrows[t] + c * 8 * kBX;
      __m256i sums[T];
      chunk_sums<F, T>(wc, xc, sums);
      const __m256 dw = gather_scales<F::kB, false>(wc);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 dx = _mm256_loadu_ps(dxs[t] + 8 * c);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[t]), _mm256_mul_ps(dw, dx), acc[t]);
        if constexpr (F::kMin) {
          const __m256 mw = gather_scales<F::kB, false>(wc + 2);
          acc[t] = _mm256_fmadd_ps(_mm256_loadu_ps(txs[t] + 8 * c), _mm256_mul_ps(mw, dx), acc[t]);
        }
      }
    }
    if (full == chunks) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) out[r * out_stride + t] = hsum_tree(acc[t]);
      continue;
    }
    // The ragged last chunk, block by block into the lanes (no padding: the model skips them).
    alignas(32) float lanes[T][8];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) _mm256_store_ps(lanes[t], acc[t]);
    for (std::size_t b = full * 8; b < nb; ++b) {
      const std::uint8_t* wb = wr + b * F::kB;
      const __m256i q = F::levels(wb);
      const float dw = _cvtsh_ss(f16_at(wb));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int s = hsum_i32(partial<F>(q, xrows[t] + b * kBX));
        float& lane = lanes[t][b % 8];
        lane = std::fma(static_cast<float>(s), dw * dxs[t][b], lane);
        if constexpr (F::kMin)
          lane = std::fma(txs[t][b], _cvtsh_ss(f16_at(wb + 2)) * dxs[t][b], lane);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) out[r * out_stride + t] = sum_lanes(lanes[t]);
  }
}

template <class F>
LS_AVX2 void tile_n(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                    const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                    std::size_t out_stride) {
  switch (n_tok) {
    case 1:
      return tile<F, 1>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 2:
      return tile<F, 2>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    case 3:
      return tile<F, 3>(w, w_stride, n_rows, xrows, nb, out, out_stride);
    default:
      return tile<F, 4>(w, w_stride, n_rows, xrows, nb, out, out_stride);
  }
}

}  // namespace

void tile_q4_1_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                    const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                    std::size_t out_stride) {
  tile_n<Q4_1F>(w, w_stride, n_rows, xrows, n_tok, nb, out, out_stride);
}

void tile_q5_0_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                    const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                    std::size_t out_stride) {
  tile_n<Q5_0F>(w, w_stride, n_rows, xrows, n_tok, nb, out, out_stride);
}

void tile_q5_1_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                    const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                    std::size_t out_stride) {
  tile_n<Q5_1F>(w, w_stride, n_rows, xrows, n_tok, nb, out, out_stride);
}

void tile_iq4_nl_avx2(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                      const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                      std::size_t out_stride) {
  tile_n<IQ4_NLF>(w, w_stride, n_rows, xrows, n_tok, nb, out, out_stride);
}

}  // namespace ls::kernels::quant_detail
