// GGML's block-quantized formats and the dot products over them (the layouts: quant/blocks.h;
// per type, its functions: quant/traits.h). Weights are quantized offline (quantize_row);
// activations are quantized on the fly to Q8_0 or Q8_K so each block's dot product is an integer
// sum, scaled once in float, as llama.cpp does. Every SIMD routine (x86/) has a scalar reference
// (quant/) beside it; quant.cpp checks arguments and chooses the implementation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/quant/blocks.h"

namespace ls::kernels {

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
// them with the SIMD ones; they give the same bits, see quant/detail.h).
float dot_quantized_scalar(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                           std::size_t n);
void quantize_activations_scalar(DType act, const float* x, std::uint8_t* out, std::size_t n);

// Which implementation runs: "avx512vnni (Q8_0 tiles), avx2", "avx2" or "scalar"
// (LS_QUANT_SIMD=scalar forces the scalar path, LS_QUANT_SIMD=avx2 the AVX2 one, for tests and
// comparisons).
const char* quant_simd_name();

}  // namespace ls::kernels
