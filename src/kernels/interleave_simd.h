// Internal to the interleaved kernels: their arguments in one struct and the two compiled
// variants of interleave_simd.inc (AVX2 maddubs/madd, AVX-512 VNNI vpdpbusd), chosen in
// interleave.cpp. Both give dot_interleaved_scalar's bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ls::kernels {

// One activation block's scale (as float) and the sum of its 32 int8 values, prepared once per
// call by the caller (the kernels turn the sum into the offset of unsigned weights).
struct ActBlock {
  float d;
  std::int32_t sum;
};

struct InterleavedArgs {
  DType type;
  const std::uint8_t* w;  // the first group; groups 8 * row bytes apart
  int n_groups;
  const std::uint8_t* xq;  // Q8_0 activation rows, x_stride bytes apart
  std::size_t x_stride;
  const ActBlock* xb;  // [n_tok][n / 32]
  int n_tok;
  std::size_t n;  // columns
  float* out;     // out[r * row_stride + t * tok_stride]
  std::size_t row_stride;
  std::size_t tok_stride;
};

// xb[t * nb + b] for the n_tok rows of Q8_0 activations at xq (nb = n / 32 blocks each).
void prepare_act_blocks(const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        ActBlock* xb);

void interleaved_avx2(const InterleavedArgs& a);  // CPUs with AVX2, FMA and F16C
void interleaved_vnni(const InterleavedArgs& a);  // and AVX-512 VNNI + VL

}  // namespace ls::kernels
