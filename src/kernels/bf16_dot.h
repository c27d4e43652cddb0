// BF16 weights times activations rounded to BF16, summed in float32: the arithmetic of the
// AVX512_BF16 instruction vdpbf16ps, which llama.cpp (BF16 files) and torch (bf16 matmuls) rely
// on. It multiplies twice as many pairs per instruction as widening the weights to float32 does
// (dot.h), at the cost of the activations' precision: 8 significant bits instead of 24. The
// model takes this path only when asked (LoadOptions::bf16_activations, --bf16-activations).
//
// The definition, which every path gives bit for bit (bf16_dot_scalar spells it out): the
// elements in chunks of 32, the last one zero-padded. Lane j (0..15) of 16 float32 accumulators
// takes element 2j+1, then element 2j, of each chunk, each as one fused multiply-add that reads
// denormal inputs as zero and flushes a denormal result to zero (vdpbf16ps's "DAZ in, FTZ out").
// Then the lanes are summed as a tree without flushing: lane j + lane j+8, then j + j+4, j + j+2,
// j + j+1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ls::kernels {

// out[i] = x[i] rounded to the nearest BF16, ties to even (core/dtype.h's f32_to_bf16).
void round_to_bf16(const float* x, std::uint16_t* out, std::size_t n);

// The definition above, one element at a time.
float bf16_dot_scalar(const std::uint16_t* w, const std::uint16_t* x, std::size_t n);

// out[r * out_stride + t] = bf16_dot(w row r, x row t) for r < n_rows, t < n_tok. w rows are
// w_stride BF16 elements apart, x rows x_stride. Runs the best path of this CPU.
void bf16_dot_tile(const std::uint16_t* w, std::size_t w_stride, int n_rows, const std::uint16_t* x,
                   std::size_t x_stride, int n_tok, std::size_t n, float* out,
                   std::size_t out_stride);

// The paths by name, for tests and reports: "avx512bf16" (vdpbf16ps), "avx2" (FMAs on the odd
// and even elements with MXCSR's DAZ and FTZ set), "scalar". bf16_dot_kernel() is the one
// bf16_dot_tile runs; bf16_dot_tile_with runs a given one (false if this CPU lacks it).
const char* bf16_dot_kernel();
bool bf16_dot_tile_with(const char* kernel, const std::uint16_t* w, std::size_t w_stride,
                        int n_rows, const std::uint16_t* x, std::size_t x_stride, int n_tok,
                        std::size_t n, float* out, std::size_t out_stride);

}  // namespace ls::kernels
