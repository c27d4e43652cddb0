// Weight rows interleaved in groups of 8 for the decode kernels (Q8_0, Q4_0, Q5_0, Q5_1, IQ4_NL;
// K-quant blocks below). In the
// file's layout each 32-weight block needs a horizontal sum of its products; interleaved, 32-bit
// lane l of a vector holds 4 weights of row l, so one vpdpbusd (or maddubs + madd) per 4 columns
// leaves lane l = the exact integer sum of row l's block: no shuffles per block. Same bytes as
// the file (repacked once at load, the mapped original released), same bits as dot_quantized.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ls::kernels {

// Rows per group. A group of 8 rows stores, for block b = 0 .. nb-1 in turn:
//   8 f16 scales (row 0 .. 7 of block b); Q5_1: then its 8 f16 minimums; Q5_0/Q5_1: then 8
//   32-bit masks of the high bits (for word k, half 0: bit 4l + j = row l's bit 4k + j, half 1:
//   its bit 16 + 4k + j, i.e. the high bits of the weights word k holds in its low / high
//   nibbles), at q5_mask_offset(k, half);
//   then the block's weights as 32-bit words, word k of row l at 32k + 4l after the parts above
//   (Q8_0: k < 8, the int8 weights 4k .. 4k+3; Q4_0, Q5_*: k < 4, the packed bytes 4k .. 4k+3,
//   i.e. weights 4k..4k+3 in their low nibbles and 16+4k .. 16+4k+3 in their high ones).
// A block-group is 8 blocks' bytes (Q8_0: 272, Q4_0 and IQ4_NL: 144, Q5_0: 176, Q5_1: 192), so a
// group is 8 rows' bytes.
// Q4_K, Q5_K and Q6_K (on CPUs with AVX-512 VNNI, where their 8-row AVX-512BW kernels run) keep
// their blocks whole: a group stores block b of rows 0 .. 7, then block b + 1 of rows 0 .. 7, and
// so on. Their kernels read 8 rows at a time; in the file's layout that is 8 streams a row apart,
// which one core reads at a fraction of the speed of one stream.
constexpr int kInterleave = 8;

// Where a Q5 block-group's masks keep word k's mask of half 0 / 1 (bytes from the first mask):
// words 2i and 2i + 1 side by side for each half, so that one 64-bit load is the byte mask of a
// 512-bit vector holding both words (interleave_simd.inc; read through general registers, two
// 32-bit masks shifted and or-ed cost Q5_0 25% of its speed in L2 on a Zen 5).
constexpr std::size_t q5_mask_offset(int k, int half) {
  return static_cast<std::size_t>(16 * (k / 2) + 8 * half + 4 * (k % 2));
}

// Whether a [rows, cols] matrix of this type has an interleaved layout (Q8_0, Q4_0, Q5_0, Q5_1,
// IQ4_NL, and Q4_K, Q5_K, Q6_K where the CPU has AVX-512 VNNI; rows a multiple of 8, cols a whole
// number of blocks).
bool can_interleave(DType type, std::int64_t rows, std::int64_t cols);

// src: rows x cols in the file's layout -> dst: the interleaved layout (the same byte count).
void interleave_rows(DType type, const std::uint8_t* src, std::size_t rows, std::size_t cols,
                     std::uint8_t* dst);
// Row `lane` (0..7) of the group at `group` back in the file's layout (row bytes at `out`).
void deinterleave_row(DType type, const std::uint8_t* group, std::size_t cols, int lane,
                      std::uint8_t* out);

// out[r * row_stride + t * tok_stride] = dot_quantized(row r, activation row t) for the rows of
// groups [0, n_groups) starting at w (groups 8 * row bytes apart) and tokens [0, n_tok) of xq
// (rows x_stride bytes apart, in dot_activation_type). Bit-identical to dot_quantized.
void dot_interleaved(DType type, const std::uint8_t* w, int n_groups, const std::uint8_t* xq,
                     std::size_t x_stride, int n_tok, std::size_t n, float* out,
                     std::size_t row_stride, std::size_t tok_stride);

// One activation block's scale (as float) and the sum of its 32 int8 values: what every group's
// kernel reuses (the sum turns into the offset of unsigned weights). matmul prepares them once
// per product, before its threads start.
struct ActBlock {
  float d;
  std::int32_t sum;
};

// xb[t * nb + b] for the n_tok rows of Q8_0 activations at xq (nb = n / 32 blocks each).
void prepare_act_blocks(const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        ActBlock* xb);

// dot_interleaved with the activation blocks already prepared (xb as prepare_act_blocks fills;
// K-quants, whose activations are Q8_K, take none: xb may be null).
// prefetch_groups: how many groups from w on belong to the matrix (n_groups when negative);
// decode prefetches ahead up to there, across the end of this call's rows.
void dot_interleaved_prepared(DType type, const std::uint8_t* w, int n_groups,
                              const std::uint8_t* xq, std::size_t x_stride, const ActBlock* xb,
                              int n_tok, std::size_t n, float* out, std::size_t row_stride,
                              std::size_t tok_stride, int prefetch_groups = -1);

// The scalar path of the same products (deinterleaves each row; tests compare with it).
void dot_interleaved_scalar(DType type, const std::uint8_t* w, int n_groups, const std::uint8_t* xq,
                            std::size_t x_stride, int n_tok, std::size_t n, float* out,
                            std::size_t row_stride, std::size_t tok_stride);

}  // namespace ls::kernels
