// Internal to the interleaved kernels: their arguments in one struct and the two compiled
// variants of interleave_simd.inc (AVX2 maddubs/madd, AVX-512 VNNI vpdpbusd), chosen in
// interleave.cpp. Both give the bits of the scalar reference there, dot_interleaved_scalar's bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/interleave.h"

namespace ls::kernels {

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
  int prefetch_groups;  // groups from w on that decode may prefetch (>= n_groups: the matrix's
                        // next groups, which the thread is likely to take next)
};

void interleaved_avx2(const InterleavedArgs& a);  // CPUs with AVX2, FMA and F16C
void interleaved_vnni(const InterleavedArgs& a);  // and AVX-512 VNNI + VL

}  // namespace ls::kernels
