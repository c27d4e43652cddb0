// GGML's block-quantized formats (the layouts GGUF files store, byte for byte) and the dot
// products over them. Weights are quantized offline (quantize_row); activations are quantized
// on the fly to Q8_0 or Q8_K so each block's dot product is an integer sum, scaled once in
// float, as llama.cpp does. Every SIMD routine has a scalar reference beside it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ls::kernels {

// 32 weights: value[i] = d * qs[i].
struct BlockQ8_0 {
  std::uint16_t d;  // f16 scale
  std::int8_t qs[32];
};
// 32 weights: byte j holds element j (low nibble) and element j + 16 (high nibble);
// value = d * (nibble - 8).
struct BlockQ4_0 {
  std::uint16_t d;  // f16 scale
  std::uint8_t qs[16];
};
// 256 weights in 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min packed in `scales`;
// value = d * scale_j * nibble - dmin * min_j. qs: 4 groups of 32 bytes; group g holds sub-block
// 2g in its low nibbles and sub-block 2g + 1 in its high nibbles.
struct BlockQ4_K {
  std::uint16_t d;     // f16 super-block scale of the scales
  std::uint16_t dmin;  // f16 super-block scale of the mins
  std::uint8_t scales[12];
  std::uint8_t qs[128];
};
// 256 weights in 16 sub-blocks of 16, each with an int8 scale; 6-bit values from 4 low bits in
// ql and 2 high bits in qh; value = d * scales[j] * (q - 32).
struct BlockQ6_K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint16_t d;  // f16
};
// Activations for the K-quant dot products: value[i] = d * qs[i]; bsums[j] = sum of qs over
// elements 16j .. 16j + 15 (lets the Q4_K minimum term be applied per sub-block).
struct BlockQ8_K {
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};

// 32 weights: value = d * q + m with q in 0..15 (nibbles laid out as Q4_0's).
struct BlockQ4_1 {
  std::uint16_t d;  // f16 scale
  std::uint16_t m;  // f16 minimum (added)
  std::uint8_t qs[16];
};
// 32 weights: q = nibble | (bit j of qh) << 4 for element j (nibbles laid out as Q4_0's);
// value = d * (q - 16).
struct BlockQ5_0 {
  std::uint16_t d;  // f16 scale
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
// 32 weights: q as Q5_0's, value = d * q + m.
struct BlockQ5_1 {
  std::uint16_t d;  // f16 scale
  std::uint16_t m;  // f16 minimum (added)
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
// 32 weights: value = d * kIq4nlValues[nibble] (nibbles laid out as Q4_0's).
struct BlockIQ4_NL {
  std::uint16_t d;  // f16 scale
  std::uint8_t qs[16];
};
inline constexpr std::int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};
// 256 weights as Q4_K's, with a fifth bit per weight: sub-block 2g + h (h = 0, 1) takes bit
// 2g + h of qh[l] for its element l; value = d * scale_j * q - dmin * min_j, q in 0..31.
struct BlockQ5_K {
  std::uint16_t d;     // f16 super-block scale of the scales
  std::uint16_t dmin;  // f16 super-block scale of the mins
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};
// 256 weights in 16 sub-blocks of 16 with 6-bit scales (stored + 32); element e = 128h + 32j + l
// (l < 32) has low bits (qs[32h + l] >> 2j) & 3 and high bit (hmask[l] >> (4h + j)) & 1;
// value = d * (scale - 32) * (low + 4 * high - 4).
struct BlockQ3_K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  std::uint16_t d;  // f16
};
// 256 weights in 16 sub-blocks of 16; scales[j] holds sub-block j's 4-bit scale (low nibble) and
// 4-bit min (high); element e = 128h + 32j + l has q = (qs[32h + l] >> 2j) & 3, sub-block e / 16;
// value = d * scale * q - dmin * min.
struct BlockQ2_K {
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  std::uint16_t d;     // f16 super-block scale of the scales
  std::uint16_t dmin;  // f16 super-block scale of the mins
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 &&
              sizeof(BlockIQ4_NL) == 18 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ3_K) == 110 &&
              sizeof(BlockQ2_K) == 84);

// Weights: float32 -> block format (round to nearest; n a multiple of the block size).
// Throws for non-block dtypes or a ragged n.
void quantize_row(DType type, const float* x, std::uint8_t* out, std::size_t n);
// The definition of each format: block format -> float32 (also F32/F16/BF16 rows).
void dequantize_row(DType type, const std::uint8_t* in, float* out, std::size_t n);

// The activation format the dot product of a weight type consumes: Q8_0 for the 32-element
// formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), Q8_K for the K-quants.
DType dot_activation_type(DType weight);
// Activations float32 -> Q8_0 or Q8_K (SIMD; bit-identical to quantize_row of that type).
void quantize_activations(DType act, const float* x, std::uint8_t* out, std::size_t n);

// sum_i w[i] * x[i] over n elements of one weight row (block format) and one quantized
// activation row (its dot_activation_type). Integer products inside a block, float across
// blocks in a fixed order: the same bits on a given CPU whatever the caller.
float dot_quantized(DType weight, const std::uint8_t* w, const std::uint8_t* xq, std::size_t n);
// Scalar reference of the same sum (exact integer block sums, double across blocks).
double dot_quantized_ref(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                         std::size_t n);

// Tile form for matrix products: out[r * out_stride + t] = dot(w row r, x row t) for
// r < n_rows, t < n_tok. Rows are w_stride bytes apart, activation rows x_stride bytes apart.
// Each output equals dot_quantized of the same pair bit for bit (tiles only reuse loads).
// Speed: tokens are taken 4 at a time (each weight block is unpacked once per group) and the
// activation side is prepared once per call (Q4_0: rearranged rows and sums; Q8_0: scales), so
// pass many rows per call (e.g. a thread's whole share for decode, blocks of ~64 rows that
// stay in L2 for prefill). Per-thread scratch grows to the largest row seen, then is reused.
void dot_quantized_tile(DType weight, const std::uint8_t* w, std::size_t w_stride, int n_rows,
                        const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        float* out, std::size_t out_stride);

// The scalar implementations whatever the CPU and LS_QUANT_SIMD (tests and benchmarks compare
// them with the SIMD ones; they give the same bits, see quant_internal.h).
float dot_quantized_scalar(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                           std::size_t n);
void quantize_activations_scalar(DType act, const float* x, std::uint8_t* out, std::size_t n);

// Which implementation runs: "avx512vnni (Q8_0 tiles), avx2", "avx2" or "scalar"
// (LS_QUANT_SIMD=scalar forces the scalar path, LS_QUANT_SIMD=avx2 the AVX2 one, for tests and
// comparisons).
const char* quant_simd_name();

}  // namespace ls::kernels
