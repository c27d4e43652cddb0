// Matrix products y = x W^T over the dot-product tiles, for every weight type. Rows of W are
// split across the thread pool; within a thread, blocks of rows stay in cache while every token
// of the chunk passes over them (the weights are read from memory once per chunk), and each
// tile (float weights: 4 rows x 6 tokens on AVX-512, 4 x 2 on AVX2) shares its loads. Quantized
// weights take activations quantized once per call into the caller's scratch, as llama.cpp does
// (and BF16 weights with bf16_activations take them rounded to BF16, bf16_dot.h). Decode hands
// each thread's whole row range to one tile call (the kernels group rows themselves).
#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/bf16_dot.h"
#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "kernels/quant.h"

namespace ls::kernels {

namespace {

constexpr std::size_t kTileRows = 4;          // threads split rows in multiples of this
constexpr std::size_t kTileTokens = 12;       // tokens per float tile call during prefill (the
                                              // kernels take 6 or 2 at a time)
constexpr std::size_t kQuantTileTokens = 16;  // quantized (the VNNI Q8_0 tile takes 16 at once)
                                              // and BF16 x BF16
constexpr std::size_t kBlockRows = 64;        // rows kept in cache while all tokens pass

}  // namespace

void matmul(const TensorView& w, std::span<const float> x, int n_tokens, std::span<float> y,
            ThreadPool& pool, MatmulScratch& scratch) {
  if (w.shape.size() != 2)
    fail("matmul: weight '{}' must be 2-D, got {}", w.name, shape_str(w.shape));
  const auto rows = static_cast<std::size_t>(w.shape[0]);
  const auto cols = static_cast<std::size_t>(w.shape[1]);
  const auto t_count = static_cast<std::size_t>(n_tokens);
  if (x.size() < t_count * cols || y.size() < t_count * rows)
    fail("matmul: '{}' {} needs x of {} and y of {} floats, got {} and {}", w.name,
         shape_str(w.shape), t_count * cols, t_count * rows, x.size(), y.size());
  const std::size_t w_stride = w.row_bytes();
  const bool quantized = dtype_is_quantized(w.dtype);

  // Quantized weights: quantize every activation row once, before the threads start; BF16
  // weights with bf16_activations: round them to BF16 likewise.
  DType act = DType::F32;
  std::size_t xq_stride = 0;
  const bool bf16_act = w.bf16_activations;
  if (bf16_act) {
    if (w.dtype != DType::BF16 || w.interleaved != 0)
      fail("matmul: '{}' {} is marked for BF16 activations, which only plain BF16 rows take",
           w.name, dtype_name(w.dtype));
    xq_stride = cols * sizeof(std::uint16_t);
    if (scratch.xq.size() < t_count * xq_stride) scratch.xq.resize(t_count * xq_stride);
    for (std::size_t t = 0; t < t_count; ++t)
      round_to_bf16(&x[t * cols], reinterpret_cast<std::uint16_t*>(&scratch.xq[t * xq_stride]),
                    cols);
  } else if (quantized) {
    act = dot_activation_type(w.dtype);
    xq_stride = dtype_bytes(act, static_cast<std::int64_t>(cols));
    if (scratch.xq.size() < t_count * xq_stride) scratch.xq.resize(t_count * xq_stride);
    for (std::size_t t = 0; t < t_count; ++t)
      quantize_activations(act, &x[t * cols], &scratch.xq[t * xq_stride], cols);
  }
  const std::uint8_t* xq = scratch.xq.data();

  if (w.interleaved != 0) {  // groups of 8 rows: each thread takes whole groups
    if (w.interleaved != kInterleave || !can_interleave(w.dtype, w.shape[0], w.shape[1]))
      fail("matmul: '{}' {} {} is marked interleaved by {}, which its kernels do not support",
           w.name, dtype_name(w.dtype), shape_str(w.shape), w.interleaved);
    // Each activation block's scale and sum, once per product (every group reuses them).
    scratch.act_blocks.resize(t_count * (cols / 32));
    prepare_act_blocks(xq, xq_stride, n_tokens, cols, scratch.act_blocks.data());
    const ActBlock* xb = scratch.act_blocks.data();
    pool.parallel_for(
        rows,
        [&](std::size_t begin, std::size_t end) {
          dot_interleaved_prepared(w.dtype, w.data + begin * w_stride,
                                   static_cast<int>((end - begin) / kInterleave), xq, xq_stride,
                                   xb, n_tokens, cols, &y[begin], 1, rows);
        },
        kInterleave);
    return;
  }

  // One tile call: rows [r0, r0 + nr) against tokens [t0, t0 + nt), out[r * out_stride + t].
  const auto tile = [&](std::size_t r0, std::size_t nr, std::size_t t0, std::size_t nt, float* out,
                        std::size_t out_stride) {
    const std::uint8_t* wr = w.data + r0 * w_stride;
    if (bf16_act)
      bf16_dot_tile(reinterpret_cast<const std::uint16_t*>(wr), cols, static_cast<int>(nr),
                    reinterpret_cast<const std::uint16_t*>(xq + t0 * xq_stride), cols,
                    static_cast<int>(nt), cols, out, out_stride);
    else if (quantized)
      dot_quantized_tile(w.dtype, wr, w_stride, static_cast<int>(nr), xq + t0 * xq_stride,
                         xq_stride, static_cast<int>(nt), cols, out, out_stride);
    else
      dot_tile(w.dtype, wr, w_stride, static_cast<int>(nr), &x[t0 * cols], cols,
               static_cast<int>(nt), cols, out, out_stride);
  };
  pool.parallel_for(
      rows,
      [&](std::size_t begin, std::size_t end) {
        if (t_count == 1) {  // decode: the thread's whole range in one call, straight into y
          tile(begin, end - begin, 0, 1, &y[begin], 1);
          return;
        }
        const std::size_t tt = quantized || bf16_act ? kQuantTileTokens : kTileTokens;
        float buf[kBlockRows * kQuantTileTokens];
        for (std::size_t b0 = begin; b0 < end; b0 += kBlockRows) {
          const std::size_t nr = std::min(end - b0, kBlockRows);
          for (std::size_t t0 = 0; t0 < t_count; t0 += tt) {
            const std::size_t nt = std::min(tt, t_count - t0);
            tile(b0, nr, t0, nt, buf, tt);
            for (std::size_t r = 0; r < nr; ++r)
              for (std::size_t t = 0; t < nt; ++t) y[(t0 + t) * rows + b0 + r] = buf[r * tt + t];
          }
        }
      },
      kTileRows);
}

void row_to_f32(const TensorView& w, std::int64_t row, std::span<float> out) {
  const auto cols = static_cast<std::size_t>(w.shape.back());
  if (out.size() < cols) fail("row_to_f32: '{}' row needs {} floats", w.name, cols);
  if (w.interleaved != 0) {  // the row back in the file's layout, then as usual
    thread_local std::vector<std::uint8_t> bytes;
    bytes.resize(w.row_bytes());
    const std::size_t g = static_cast<std::size_t>(row) / kInterleave;
    deinterleave_row(w.dtype, w.data + g * kInterleave * w.row_bytes(), cols,
                     static_cast<int>(row % kInterleave), bytes.data());
    dequantize_row(w.dtype, bytes.data(), out.data(), cols);
    return;
  }
  dequantize_row(w.dtype, w.row(row), out.data(), cols);
}

void tensor_to_f32(const TensorView& t, std::span<float> out) {
  TensorView flat = t;
  flat.shape = {1, t.numel()};
  row_to_f32(flat, 0, out);
}

}  // namespace ls::kernels
