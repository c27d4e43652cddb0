// The interleaved layouts of weight rows (interleave.h): Q8_0 / Q4_0 / Q5_0 / Q5_1 / IQ4_NL words
// and Q4_K / Q5_K / Q6_K blocks; repacking to them and back, the scalar reference of their dot
// products (deinterleave, then dot_quantized_scalar: the same bits by construction) and the
// run-time choice of the AVX2, AVX-512 VNNI or AVX-512BW kernels.
#include "kernels/interleave.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant/traits.h"
#include "kernels/x86/interleave_simd.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels {
namespace {

constexpr std::size_t kScaleBytes = 2 * kInterleave;  // the 8 f16 scales of a block-group

using quant_detail::Interleaving;

// How the type's rows are interleaved (its row of quant/traits.h).
Interleaving interleaving(DType type) {
  const quant_detail::QuantTraits* q = quant_detail::find_quant_traits(type);
  return q == nullptr ? Interleaving::kNone : q->interleaving;
}

// Q4_K, Q5_K and Q6_K rows: interleaved by whole blocks.
bool k_blocks(DType type) {
  return interleaving(type) == Interleaving::kWholeBlocks;
}

// K-quant blocks only where their AVX-512BW group kernels run (elsewhere the file's rows are read
// one after another, which their AVX2 kernels do best).
bool interleavable(DType type) {
  const Interleaving i = interleaving(type);
  return i == Interleaving::kWords ||
         (i == Interleaving::kWholeBlocks && quant_detail::simd_vnni());
}

void check_type(DType type, const char* what) {
  if (!interleavable(type))
    fail(
        "{}: only Q8_0, Q4_0, Q5_0, Q5_1 and IQ4_NL rows (and Q4_K, Q5_K, Q6_K on AVX-512 CPUs) "
        "are "
        "interleaved, got {}",
        what, dtype_name(type));
}

// Block b of row l of a K-quant group, from the group's start.
std::size_t k_block_offset(DType type, std::size_t b, int l) {
  return (b * kInterleave + static_cast<std::size_t>(l)) * dtype_block_bytes(type);
}

// Where a block of the file's layout and a block-group of the interleaved one keep their parts.
struct Parts {
  std::size_t min = 0, qh = 0, qs;  // offsets in the file's block (min, qh: 0 when absent)
  std::size_t g_min = 0, g_masks = 0, g_words;  // offsets in the block-group
  int words;                                    // 32-bit words of weights per row and block
};
Parts parts(DType type) {
  switch (type) {
    case DType::Q8_0:
      return {0, 0, 2, 0, 0, kScaleBytes, 8};
    case DType::Q4_0:
    case DType::IQ4_NL:  // Q4_0's bytes, the nibbles indexing kIq4nlValues
      return {0, 0, 2, 0, 0, kScaleBytes, 4};
    case DType::Q5_0:
      return {0, offsetof(BlockQ5_0, qh), offsetof(BlockQ5_0, qs), 0, 16, 48, 4};
    default:  // Q5_1
      return {
          offsetof(BlockQ5_1, m), offsetof(BlockQ5_1, qh), offsetof(BlockQ5_1, qs), 16, 32, 64, 4};
  }
}

// The high-bit masks of a Q5 block-group: for word k, the mask of half 0 has bit 4l + j = element
// 4k + j's high bit of row l (the low nibbles of the word), that of half 1 element 16 + 4k + j's.
void pack_masks(const std::uint32_t qh[kInterleave], std::uint8_t* out) {
  for (int k = 0; k < 4; ++k)
    for (int half = 0; half < 2; ++half) {
      std::uint32_t m = 0;
      for (int l = 0; l < kInterleave; ++l) m |= ((qh[l] >> (16 * half + 4 * k)) & 0xFu) << (4 * l);
      std::memcpy(out + q5_mask_offset(k, half), &m, 4);
    }
}
std::uint32_t unpack_mask(const std::uint8_t* masks, int lane) {
  std::uint32_t qh = 0;
  for (int k = 0; k < 4; ++k)
    for (int half = 0; half < 2; ++half) {
      std::uint32_t m;
      std::memcpy(&m, masks + q5_mask_offset(k, half), 4);
      qh |= ((m >> (4 * lane)) & 0xFu) << (16 * half + 4 * k);
    }
  return qh;
}

// K-quant groups through the AVX-512BW group kernels: 8 groups (64 rows) at a time stay in cache
// while every token passes over them, 8 tokens per kernel call. One token writes straight into
// out; more go through a small buffer (the kernels' output has tokens side by side).
void dot_k_groups(DType type, const std::uint8_t* w, int n_groups, const std::uint8_t* xq,
                  std::size_t x_stride, int n_tok, std::size_t n, float* out,
                  std::size_t row_stride, std::size_t tok_stride) {
  const std::size_t nb = n / 256, group_bytes = kInterleave * nb * dtype_block_bytes(type);
  const quant_detail::GroupTileFn group_tile = quant_detail::find_quant_traits(type)->group_avx512;
  constexpr int kGroupBlock = 8, kTok = 8;
  for (int g0 = 0; g0 < n_groups; g0 += kGroupBlock) {
    const int g1 = std::min(n_groups, g0 + kGroupBlock);
    for (int t0 = 0; t0 < n_tok; t0 += kTok) {
      const int nt = std::min(kTok, n_tok - t0);
      const std::uint8_t* xrows[kTok];
      for (int t = 0; t < nt; ++t) xrows[t] = xq + static_cast<std::size_t>(t0 + t) * x_stride;
      for (int g = g0; g < g1; ++g) {
        const std::uint8_t* group = w + static_cast<std::size_t>(g) * group_bytes;
        float* o = out + static_cast<std::size_t>(g) * kInterleave * row_stride + t0 * tok_stride;
        float buf[kInterleave * kTok];
        const bool direct = nt == 1;
        float* dst = direct ? o : buf;
        const std::size_t dst_stride = direct ? row_stride : kTok;
        group_tile(group, xrows, nt, nb, dst, dst_stride);
        if (!direct)
          for (int l = 0; l < kInterleave; ++l)
            for (int t = 0; t < nt; ++t) o[l * row_stride + t * tok_stride] = buf[l * kTok + t];
      }
    }
  }
}

}  // namespace

bool can_interleave(DType type, std::int64_t rows, std::int64_t cols) {
  return interleavable(type) && rows > 0 && rows % kInterleave == 0 && cols > 0 &&
         cols % static_cast<std::int64_t>(dtype_block_elems(type)) == 0;
}

void interleave_rows(DType type, const std::uint8_t* src, std::size_t rows, std::size_t cols,
                     std::uint8_t* dst) {
  check_type(type, "interleave_rows");
  if (!can_interleave(type, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)))
    fail(
        "interleave_rows: a {} matrix of {} x {} has no interleaved layout (rows must be a "
        "multiple of {})",
        dtype_name(type), rows, cols, kInterleave);
  const std::size_t bb = dtype_block_bytes(type), nb = cols / dtype_block_elems(type);
  const std::size_t row_bytes = nb * bb, gb = kInterleave * bb;
  if (k_blocks(type)) {
    for (std::size_t g = 0; g < rows / kInterleave; ++g)
      for (int l = 0; l < kInterleave; ++l)
        for (std::size_t b = 0; b < nb; ++b)
          std::memcpy(dst + g * kInterleave * row_bytes + k_block_offset(type, b, l),
                      src + (g * kInterleave + l) * row_bytes + b * bb, bb);
    return;
  }
  const Parts p = parts(type);
  for (std::size_t g = 0; g < rows / kInterleave; ++g) {
    std::uint8_t* out = dst + g * kInterleave * row_bytes;
    for (std::size_t b = 0; b < nb; ++b, out += gb) {
      std::uint32_t qh[kInterleave];
      for (int l = 0; l < kInterleave; ++l) {
        const std::uint8_t* blk = src + (g * kInterleave + l) * row_bytes + b * bb;
        std::memcpy(out + 2 * l, blk, 2);
        if (p.min != 0) std::memcpy(out + p.g_min + 2 * l, blk + p.min, 2);
        if (p.qh != 0) std::memcpy(&qh[l], blk + p.qh, 4);
        for (int k = 0; k < p.words; ++k)
          std::memcpy(out + p.g_words + 32 * k + 4 * l, blk + p.qs + 4 * k, 4);
      }
      if (p.qh != 0) pack_masks(qh, out + p.g_masks);
    }
  }
}

void deinterleave_row(DType type, const std::uint8_t* group, std::size_t cols, int lane,
                      std::uint8_t* out) {
  check_type(type, "deinterleave_row");
  if (lane < 0 || lane >= kInterleave)
    fail("deinterleave_row: lane {} is outside 0..{}", lane, kInterleave - 1);
  const std::size_t bb = dtype_block_bytes(type), nb = cols / dtype_block_elems(type);
  const std::size_t gb = kInterleave * bb;
  if (k_blocks(type)) {
    for (std::size_t b = 0; b < nb; ++b)
      std::memcpy(out + b * bb, group + k_block_offset(type, b, lane), bb);
    return;
  }
  const Parts p = parts(type);
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* in = group + b * gb;
    std::uint8_t* blk = out + b * bb;
    std::memcpy(blk, in + 2 * lane, 2);
    if (p.min != 0) std::memcpy(blk + p.min, in + p.g_min + 2 * lane, 2);
    if (p.qh != 0) {
      const std::uint32_t qh = unpack_mask(in + p.g_masks, lane);
      std::memcpy(blk + p.qh, &qh, 4);
    }
    for (int k = 0; k < p.words; ++k)
      std::memcpy(blk + p.qs + 4 * k, in + p.g_words + 32 * k + 4 * lane, 4);
  }
}

void dot_interleaved_scalar(DType type, const std::uint8_t* w, int n_groups, const std::uint8_t* xq,
                            std::size_t x_stride, int n_tok, std::size_t n, float* out,
                            std::size_t row_stride, std::size_t tok_stride) {
  check_type(type, "dot_interleaved");
  const std::size_t row_bytes = dtype_bytes(type, static_cast<std::int64_t>(n));
  thread_local std::vector<std::uint8_t> row;
  if (row.size() < row_bytes) row.resize(row_bytes);
  for (int g = 0; g < n_groups; ++g)
    for (int l = 0; l < kInterleave; ++l) {
      deinterleave_row(type, w + g * kInterleave * row_bytes, n, l, row.data());
      const std::size_t r = static_cast<std::size_t>(g * kInterleave + l);
      for (int t = 0; t < n_tok; ++t)
        out[r * row_stride + t * tok_stride] =
            dot_quantized_scalar(type, row.data(), xq + t * x_stride, n);
    }
}

void prepare_act_blocks(const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        ActBlock* xb) {
  const std::size_t nb = n / 32;
  for (int t = 0; t < n_tok; ++t)
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* blk = xq + t * x_stride + b * sizeof(BlockQ8_0);
      std::int32_t sum = 0;
      for (int i = 0; i < 32; ++i) sum += static_cast<std::int8_t>(blk[2 + i]);
      xb[t * nb + b] = {f16_to_f32(quant_detail::f16_at(blk)), sum};
    }
}

void dot_interleaved(DType type, const std::uint8_t* w, int n_groups, const std::uint8_t* xq,
                     std::size_t x_stride, int n_tok, std::size_t n, float* out,
                     std::size_t row_stride, std::size_t tok_stride) {
  if (k_blocks(type)) {  // Q8_K activations: no Q8_0 blocks to prepare
    dot_interleaved_prepared(type, w, n_groups, xq, x_stride, nullptr, n_tok, n, out, row_stride,
                             tok_stride);
    return;
  }
  thread_local std::vector<ActBlock> xb;
  const std::size_t need = n / 32 * static_cast<std::size_t>(std::max(n_tok, 0));
  if (xb.size() < need) xb.resize(need);
  prepare_act_blocks(xq, x_stride, n_tok, n, xb.data());
  dot_interleaved_prepared(type, w, n_groups, xq, x_stride, xb.data(), n_tok, n, out, row_stride,
                           tok_stride);
}

void dot_interleaved_prepared(DType type, const std::uint8_t* w, int n_groups,
                              const std::uint8_t* xq, std::size_t x_stride, const ActBlock* xb,
                              int n_tok, std::size_t n, float* out, std::size_t row_stride,
                              std::size_t tok_stride, int prefetch_groups) {
  check_type(type, "dot_interleaved");
  if (n % dtype_block_elems(type) != 0)
    fail("dot_interleaved: {} rows come in blocks of {}, got {} elements", dtype_name(type),
         dtype_block_elems(type), n);
  if (n_groups < 0 || n_tok < 0)
    fail("dot_interleaved: expected non-negative groups and tokens, got {} x {}", n_groups, n_tok);
  if (!quant_detail::simd_avx2()) {
    dot_interleaved_scalar(type, w, n_groups, xq, x_stride, n_tok, n, out, row_stride, tok_stride);
    return;
  }
  if (k_blocks(type)) {
    dot_k_groups(type, w, n_groups, xq, x_stride, n_tok, n, out, row_stride, tok_stride);
    return;
  }
  const InterleavedArgs a{type,     w,          n_groups,   xq,
                          x_stride, xb,         n_tok,      n,
                          out,      row_stride, tok_stride, std::max(prefetch_groups, n_groups)};
  if (quant_detail::simd_vnni())
    interleaved_vnni(a);
  else if (quant_detail::simd_avx2())
    interleaved_avx2(a);
}

}  // namespace ls::kernels
