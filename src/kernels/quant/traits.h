// One row per GGML block type: its family, the activation format its dot product consumes, and
// the functions that implement it, scalar and per ISA (null where there is none). The element and
// byte counts of a block are core's (dtype_block_elems, dtype_block_bytes: core/dtype.cpp's
// table); everything that varies by block type in the kernels is looked up here (quant.cpp,
// interleave.cpp, the tests) rather than switched over.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ls::kernels::quant_detail {

enum class QuantFamily : std::uint8_t {
  kBlocks32,  // 32 elements a block, f16 scales: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL
  kKQuants,   // 256-element super-blocks of 16 or 32-element sub-blocks: Q2_K .. Q6_K, Q8_K
};

// Rows of nb blocks (pointers need no alignment).
using QuantizeRowFn = void (*)(const float* x, std::uint8_t* out, std::size_t nb);
using DequantizeRowFn = void (*)(const std::uint8_t* in, float* y, std::size_t nb);
using DotScalarFn = float (*)(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb);
using DotRefFn = double (*)(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb);
// x86/quant_x86.h has the contracts of the tiles.
using Avx2TileFn = void (*)(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* const* xrows, int n_tok, std::size_t nb, float* out,
                            std::size_t out_stride);
using VnniTileFn = void (*)(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                            float* out, std::size_t out_stride);
using Rows8TileFn = int (*)(const std::uint8_t* w, std::size_t w_stride, int n_rows,
                            const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                            float* out, std::size_t out_stride);

using GroupTileFn = void (*)(const std::uint8_t* group, const std::uint8_t* const* xrows, int n_tok,
                             std::size_t nb, float* out, std::size_t out_stride);

// How interleave.h regroups a type's rows for decode (kNone: read in the file's layout).
enum class Interleaving : std::uint8_t {
  kNone,
  kWords,        // 32-bit words of 8 rows side by side (the 32-element formats but Q4_1)
  kWholeBlocks,  // block b of 8 rows, then b + 1 (Q4_K, Q5_K, Q6_K; AVX-512 CPUs only)
};

struct QuantTraits {
  DType type;
  QuantFamily family;
  DType activation;  // what its dot product consumes: Q8_0 or Q8_K (those two: themselves)
  // Scalar (quant/): the definitions and references.
  QuantizeRowFn quantize;
  DequantizeRowFn dequantize;
  DotScalarFn dot_scalar;  // null for Q8_K (activations only)
  DotRefFn dot_ref;
  // x86 (x86/): the same bytes / bits.
  QuantizeRowFn quantize_avx2;  // the activation formats' quantizer
  Avx2TileFn tile_avx2;         // every weight type, 1..4 tokens
  VnniTileFn tile_vnni;         // AVX-512 VNNI, whole tiles of 2 or more tokens (Q8_0)
  Rows8TileFn rows8_avx512;     // AVX-512, groups of 8 rows for 2 or more tokens
  Interleaving interleaving;
  GroupTileFn group_avx512;  // kWholeBlocks: one interleaved group of 8 rows, 1..8 tokens

  bool is_weight() const { return dot_scalar != nullptr; }
  bool is_activation() const { return activation == type; }
};

// The row of a block type; null for F32, F16 and BF16.
const QuantTraits* find_quant_traits(DType t);

}  // namespace ls::kernels::quant_detail
