// Dot products between one weight row (F32, BF16 or F16) and a float32 activation vector: the
// inner loop of every matrix product. Each has a plain scalar reference (the definition) and a
// SIMD version chosen at run time for the CPU (Highway dynamic dispatch: AVX-512, AVX2, SSE4,
// scalar). The SIMD version sums in a fixed order, so a given CPU always gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ls::kernels {

float dot_f32(const float* w, const float* x, std::size_t n);
float dot_bf16(const std::uint16_t* w, const float* x, std::size_t n);
float dot_f16(const std::uint16_t* w, const float* x, std::size_t n);

// Tile form for matrix products with float weights (F32, BF16, F16): out[r * out_stride + t *
// tok_stride] = dot(w row r, x row t) for r < n_rows, t < n_tok; w rows are w_stride bytes apart,
// x rows x_stride floats apart. One accumulator per (row, token) pair, so every output has the
// same bits whatever the tile shape (prefill, decode and batching agree).
void dot_tile(DType type, const std::uint8_t* w, std::size_t w_stride, int n_rows, const float* x,
              std::size_t x_stride, int n_tok, std::size_t n, float* out, std::size_t out_stride,
              std::size_t tok_stride = 1);

// Scalar references: a double-precision sum of exact float products, the "true" value.
double dot_f32_ref(const float* w, const float* x, std::size_t n);
double dot_bf16_ref(const std::uint16_t* w, const float* x, std::size_t n);
double dot_f16_ref(const std::uint16_t* w, const float* x, std::size_t n);

// The SIMD target Highway chose on this CPU, e.g. "AVX3" (AVX-512) or "AVX2".
const char* simd_target_name();

}  // namespace ls::kernels
