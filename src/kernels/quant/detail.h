// Internals of the quantized formats (not part of the public interface): the accumulation models
// that every implementation of a dot product follows, so that scalar, AVX2 and AVX-512 forms give
// the same bits, and the scalar functions of each block type (quant/blocks32*.cpp,
// quant/kquants*.cpp) that quant/traits.cpp lists per type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quant.h"

namespace ls::kernels::quant_detail {

// A block copied out of the row (rows need no alignment), and an f16 field read as a float.
template <typename Block>
inline Block load_block(const std::uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

inline float f16_field(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// ---- 32-element blocks (Q8_0 activations) -----------------------------------------------------

// Accumulation model of Q8_0 and Q4_0 weights (the chunked model): block b contributes the exact
// integer sum s_b = sum_i qw[i] * qx[i] and the scale c_b = d_w * d_x (float product of the two
// f16 scales). Chunks of 8 blocks are processed at a time; block b of a chunk goes to float lane
// kLane[type][b % 8]:
//   lane = fma(float(s_b), c_b, lane)
// A ragged last chunk is padded with s = 0, c = 0 (fma(0, 0, lane) == lane). The result is the
// fixed tree ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). The lane of a block is whatever
// the AVX2 reduction produces most cheaply (natural order for Q8_0, even/odd split for Q4_0).
constexpr int q8_0_lane(int b) {
  return b;
}
constexpr int q4_0_lane(int b) {
  return (b & 1) * 4 + (b >> 1);
}

inline float sum_lanes(const float l[8]) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// Accumulation model of Q5_0, IQ4_NL (signed levels) and Q4_1, Q5_1 (unsigned levels plus a
// minimum) weights (the levels model; quant/blocks32_dot.cpp, x86/blocks32_levels_avx2.cpp).
// Block b gives the exact integer sums s_b = sum_i qw[i] * qx[i] and (Q4_1, Q5_1)
// t_b = sum_i qx[i]; qw is the level (Q5_0: q - 16, IQ4_NL: kIq4nlValues[q], Q4_1/Q5_1: q). In
// block order, b into float lane b % 8:
//   lane = fma(float(s_b), d_w * d_x, lane);  then (Q4_1, Q5_1) lane = fma(float(t_b), m_w * d_x,
//   lane)
// Nothing happens for blocks past the row (no padding). The result is sum_lanes (the tree above).
// The levels of one block of those formats, in element order (quant/blocks32.cpp).
template <DType kType>  // Q4_1, Q5_0, Q5_1, IQ4_NL
void blocks32_levels(const std::uint8_t* block, int q[32]);

// ---- k-quants: 256-element super-blocks (Q8_K activations) ------------------------------------

// Accumulation model of every k-quant: per block, exact integer sums isum (sum over sub-blocks of
// scale * sum q * x) and msum (Q4_K, Q5_K, Q2_K: sum of min * the activation sums of the
// sub-block), then in block order
//   a = fma(float(isum), d_x * d_w, a);  m = fma(float(msum), d_x * dmin_w, m)
// and the result a - m (Q6_K, Q3_K: a; their levels are signed).

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K (or Q5_K) block, as GGML packs them.
inline void q4_k_scale_min(const std::uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The scalar quantizer of one Q8_K activation block (x86/activations_avx2.cpp falls back to it).
void quantize_block_q8_k(const float* x, BlockQ8_K* y);

// ---- The scalar functions of each type (the rows of quant/traits.cpp) -------------------------
// Rows of nb blocks; `out` / `in` need no alignment. quantize_row_*: float32 -> blocks (GGML's
// rules); dequantize_row_*: the definition of the format; dot_*_scalar: the accumulation model
// executed bit for bit; dot_*_ref: the same exact integer block sums, scaled and summed in double.
#define LS_QUANT_FORMAT(name)                                                  \
  void quantize_row_##name(const float* x, std::uint8_t* out, std::size_t nb); \
  void dequantize_row_##name(const std::uint8_t* in, float* y, std::size_t nb)
#define LS_QUANT_DOT(name)                                                                  \
  float dot_##name##_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb); \
  double dot_##name##_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb)

// quant/blocks32.cpp, quant/blocks32_dot.cpp
LS_QUANT_FORMAT(q8_0);
LS_QUANT_FORMAT(q4_0);
LS_QUANT_FORMAT(q4_1);
LS_QUANT_FORMAT(q5_0);
LS_QUANT_FORMAT(q5_1);
LS_QUANT_FORMAT(iq4_nl);
LS_QUANT_DOT(q8_0);
LS_QUANT_DOT(q4_0);
LS_QUANT_DOT(q4_1);
LS_QUANT_DOT(q5_0);
LS_QUANT_DOT(q5_1);
LS_QUANT_DOT(iq4_nl);
// quant/kquants.cpp, quant/kquants_dot.cpp
LS_QUANT_FORMAT(q2_k);
LS_QUANT_FORMAT(q3_k);
LS_QUANT_FORMAT(q4_k);
LS_QUANT_FORMAT(q5_k);
LS_QUANT_FORMAT(q6_k);
LS_QUANT_FORMAT(q8_k);
LS_QUANT_DOT(q2_k);
LS_QUANT_DOT(q3_k);
LS_QUANT_DOT(q4_k);
LS_QUANT_DOT(q5_k);
LS_QUANT_DOT(q6_k);

#undef LS_QUANT_FORMAT
#undef LS_QUANT_DOT

// The implementation quant.cpp chose (CPU features and LS_QUANT_SIMD), for the other kernels
// that dispatch the same way (interleave.cpp).
bool simd_avx2();
bool simd_vnni();

}  // namespace ls::kernels::quant_detail
