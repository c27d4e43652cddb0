// Internal to bf16_dot: the two SIMD paths (x86/bf16_dot_avx512.cpp, x86/bf16_dot_avx2.cpp) and the
// final tree sum of the 16 lanes that all paths share.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ls::kernels::bf16_detail {

// lane j + lane j+8, then j + j+4, j + j+2, j + j+1 (plain float adds).
inline float sum_tree16(const float* acc) {
  float t8[8], t4[4];
  for (int j = 0; j < 8; ++j) t8[j] = acc[j + 8] + acc[j];
  for (int j = 0; j < 4; ++j) t4[j] = t8[j + 4] + t8[j];
  return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

// round_to_bf16 (bf16_dot.h) 8 at a time with the same integer steps as f32_to_bf16.
void round_to_bf16_avx2(const float* x, std::uint16_t* out, std::size_t n);

void tile_avx512bf16(const std::uint16_t* w, std::size_t w_stride, int n_rows,
                     const std::uint16_t* x, std::size_t x_stride, int n_tok, std::size_t n,
                     float* out, std::size_t out_stride);
void tile_avx2(const std::uint16_t* w, std::size_t w_stride, int n_rows, const std::uint16_t* x,
               std::size_t x_stride, int n_tok, std::size_t n, float* out, std::size_t out_stride);

}  // namespace ls::kernels::bf16_detail
