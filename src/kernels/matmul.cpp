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

// One product as the threads see it: the weight, its output and its prepared activations.
struct Job {
  const TensorView* w = nullptr;
  float* y = nullptr;
  std::size_t rows = 0, cols = 0;
  bool quantized = false, bf16_act = false;
  DType act = DType::F32;  // the activation type of quantized weights
  const std::uint8_t* xq = nullptr;
  std::size_t xq_stride = 0;
  const ActBlock* xb = nullptr;  // interleaved weights
};

Job check_product(const TensorView& w, std::size_t x_size, std::size_t t_count,
                  std::span<float> y) {
  if (w.shape.size() != 2)
    fail("matmul: weight '{}' must be 2-D, got {}", w.name, shape_str(w.shape));
  Job j;
  j.w = &w;
  j.y = y.data();
  j.rows = static_cast<std::size_t>(w.shape[0]);
  j.cols = static_cast<std::size_t>(w.shape[1]);
  if (x_size < t_count * j.cols || y.size() < t_count * j.rows)
    fail("matmul: '{}' {} needs x of {} and y of {} floats, got {} and {}", w.name,
         shape_str(w.shape), t_count * j.cols, t_count * j.rows, x_size, y.size());
  j.quantized = dtype_is_quantized(w.dtype);
  j.bf16_act = w.bf16_activations;
  if (j.bf16_act && (w.dtype != DType::BF16 || w.interleaved != 0))
    fail("matmul: '{}' {} is marked for BF16 activations, which only plain BF16 rows take", w.name,
         dtype_name(w.dtype));
  if (j.quantized && !j.bf16_act) j.act = dot_activation_type(w.dtype);
  if (w.interleaved != 0 &&
      (w.interleaved != kInterleave || !can_interleave(w.dtype, w.shape[0], w.shape[1])))
    fail("matmul: '{}' {} {} is marked interleaved by {}, which its kernels do not support", w.name,
         dtype_name(w.dtype), shape_str(w.shape), w.interleaved);
  return j;
}

bool same_form(const Job& a, const Job& b) {
  return a.cols == b.cols && a.bf16_act == b.bf16_act && a.quantized == b.quantized &&
         a.act == b.act && (a.w->interleaved != 0) == (b.w->interleaved != 0);
}

// Quantized weights: every activation row quantized once, before the threads start; BF16 weights
// with bf16_activations: rounded to BF16 likewise; interleaved weights: each activation block's
// scale and sum as well (every group reuses them).
void prepare(Job& j, std::span<const float> x, std::size_t t_count, PreparedActivations& f) {
  if (j.bf16_act) {
    j.xq_stride = j.cols * sizeof(std::uint16_t);
    if (f.xq.size() < t_count * j.xq_stride) f.xq.resize(t_count * j.xq_stride);
    for (std::size_t t = 0; t < t_count; ++t)
      round_to_bf16(&x[t * j.cols], reinterpret_cast<std::uint16_t*>(&f.xq[t * j.xq_stride]),
                    j.cols);
  } else if (j.quantized) {
    j.xq_stride = dtype_bytes(j.act, static_cast<std::int64_t>(j.cols));
    if (f.xq.size() < t_count * j.xq_stride) f.xq.resize(t_count * j.xq_stride);
    for (std::size_t t = 0; t < t_count; ++t)
      quantize_activations(j.act, &x[t * j.cols], &f.xq[t * j.xq_stride], j.cols);
  }
  j.xq = f.xq.data();
  if (j.w->interleaved != 0 && j.act == DType::Q8_0) {  // (K-quant blocks take Q8_K as it is)
    f.act_blocks.resize(t_count * (j.cols / 32));
    prepare_act_blocks(j.xq, j.xq_stride, static_cast<int>(t_count), j.cols, f.act_blocks.data());
    j.xb = f.act_blocks.data();
  }
}

// Rows [begin, end) of one product, on the calling thread.
void run_rows(const Job& j, const float* x, std::size_t t_count, std::size_t begin,
              std::size_t end) {
  const TensorView& w = *j.w;
  const std::size_t w_stride = w.row_bytes(), cols = j.cols, rows = j.rows;
  if (w.interleaved != 0) {  // groups of 8 rows: the range holds whole groups
    dot_interleaved_prepared(w.dtype, w.data + begin * w_stride,
                             static_cast<int>((end - begin) / kInterleave), j.xq, j.xq_stride, j.xb,
                             static_cast<int>(t_count), cols, &j.y[begin], 1, rows,
                             static_cast<int>((rows - begin) / kInterleave));
    return;
  }
  // One tile call: rows [r0, r0 + nr) against tokens [t0, t0 + nt), out[r * out_stride + t].
  const auto tile = [&](std::size_t r0, std::size_t nr, std::size_t t0, std::size_t nt, float* out,
                        std::size_t out_stride) {
    const std::uint8_t* wr = w.data + r0 * w_stride;
    if (j.bf16_act)
      bf16_dot_tile(reinterpret_cast<const std::uint16_t*>(wr), cols, static_cast<int>(nr),
                    reinterpret_cast<const std::uint16_t*>(j.xq + t0 * j.xq_stride), cols,
                    static_cast<int>(nt), cols, out, out_stride);
    else if (j.quantized)
      dot_quantized_tile(w.dtype, wr, w_stride, static_cast<int>(nr), j.xq + t0 * j.xq_stride,
                         j.xq_stride, static_cast<int>(nt), cols, out, out_stride);
    else
      dot_tile(w.dtype, wr, w_stride, static_cast<int>(nr), &x[t0 * cols], cols,
               static_cast<int>(nt), cols, out, out_stride);
  };
  if (t_count == 1) {  // decode: the thread's whole range in one call, straight into y
    tile(begin, end - begin, 0, 1, &j.y[begin], 1);
    return;
  }
  const bool in_place = !j.quantized && !j.bf16_act;  // float tiles write y with a token stride
  const std::size_t tt = in_place ? kTileTokens : kQuantTileTokens;
  float buf[kBlockRows * kQuantTileTokens];
  for (std::size_t b0 = begin; b0 < end; b0 += kBlockRows) {
    const std::size_t nr = std::min(end - b0, kBlockRows);
    for (std::size_t t0 = 0; t0 < t_count; t0 += tt) {
      const std::size_t nt = std::min(tt, t_count - t0);
      if (in_place) {
        dot_tile(w.dtype, w.data + b0 * w_stride, w_stride, static_cast<int>(nr), &x[t0 * cols],
                 cols, static_cast<int>(nt), cols, &j.y[t0 * rows + b0], 1, rows);
        continue;
      }
      tile(b0, nr, t0, nt, buf, tt);
      for (std::size_t t = 0; t < nt; ++t) {  // each token's outputs: one run of y
        float* yt = &j.y[(t0 + t) * rows + b0];
        for (std::size_t r = 0; r < nr; ++r) yt[r] = buf[r * tt + t];
      }
    }
  }
}

}  // namespace

void matmul(const TensorView& w, std::span<const float> x, int n_tokens, std::span<float> y,
            ThreadPool& pool, MatmulScratch& scratch) {
  const MatmulProduct p{&w, y};
  matmul_set({&p, 1}, x, n_tokens, pool, scratch);
}

void matmul_set(std::span<const MatmulProduct> products, std::span<const float> x, int n_tokens,
                ThreadPool& pool, MatmulScratch& scratch) {
  const auto t_count = static_cast<std::size_t>(n_tokens);
  constexpr std::size_t kMaxProducts = 4;
  if (products.empty()) return;
  if (products.size() > kMaxProducts) {
    for (const MatmulProduct& p : products) matmul(*p.w, x, n_tokens, p.y, pool, scratch);
    return;
  }
  Job jobs[kMaxProducts];
  // Threads split rows in multiples of the grain (whole groups for interleaved weights), so
  // every product but the last must start on one, or the products go one at a time.
  std::size_t grain = kTileRows, total = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    jobs[i] = check_product(*products[i].w, x.size(), t_count, products[i].y);
    if (jobs[i].w->interleaved != 0) grain = kInterleave;
  }
  for (std::size_t i = 0; i + 1 < products.size(); ++i)
    if (jobs[i].rows % grain != 0) {
      for (const MatmulProduct& p : products) matmul(*p.w, x, n_tokens, p.y, pool, scratch);
      return;
    }
  if (scratch.forms.size() < products.size()) scratch.forms.resize(products.size());
  for (std::size_t i = 0; i < products.size(); ++i) {
    total += jobs[i].rows;
    std::size_t same = 0;
    while (same < i && !same_form(jobs[same], jobs[i])) ++same;
    if (same == i) {
      prepare(jobs[i], x, t_count, scratch.forms[i]);
    } else {
      jobs[i].xq = jobs[same].xq;
      jobs[i].xq_stride = jobs[same].xq_stride;
      jobs[i].xb = jobs[same].xb;
    }
  }
  const std::size_t n = products.size();
  pool.parallel_for(
      total,
      [&](std::size_t begin, std::size_t end) {
        std::size_t offset = 0;  // the first row of product i among all products' rows
        for (std::size_t i = 0; i < n && offset < end; offset += jobs[i].rows, ++i) {
          const std::size_t b = std::max(begin, offset), e = std::min(end, offset + jobs[i].rows);
          if (b < e) run_rows(jobs[i], x.data(), t_count, b - offset, e - offset);
        }
      },
      grain);
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
