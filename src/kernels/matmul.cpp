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
  DType act = DType::F32;      // the activation type of quantized weights
  std::uint8_t* xq = nullptr;  // prepared activations (reserve_form), or null: x as it is
  std::size_t xq_stride = 0;
  ActBlock* xb = nullptr;    // interleaved Q8_0-activation weights
  const float* x = nullptr;  // the input, [t_count, cols]
  std::size_t t_count = 0;
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

// Points a job at its form's buffers, sized for t_count rows: quantized activations for block
// formats (and each Q8_0 block's scale and sum for interleaved weights, which every group
// reuses), BF16-rounded ones for bf16_activations. Float weights read x itself: no buffer.
void reserve_form(Job& j, std::size_t t_count, PreparedActivations& f) {
  if (j.bf16_act)
    j.xq_stride = j.cols * sizeof(std::uint16_t);
  else if (j.quantized)
    j.xq_stride = dtype_bytes(j.act, static_cast<std::int64_t>(j.cols));
  else
    return;
  if (f.xq.size() < t_count * j.xq_stride) f.xq.resize(t_count * j.xq_stride);
  j.xq = f.xq.data();
  if (j.w->interleaved != 0 && j.act == DType::Q8_0) {  // (K-quant blocks take Q8_K as it is)
    f.act_blocks.resize(t_count * (j.cols / 32));
    j.xb = f.act_blocks.data();
  }
}

// Activation row t in the job's form.
void prepare_row(const Job& j, const float* x, std::size_t t) {
  const float* xr = x + t * j.cols;
  std::uint8_t* out = j.xq + t * j.xq_stride;
  if (j.bf16_act) {
    round_to_bf16(xr, reinterpret_cast<std::uint16_t*>(out), j.cols);
    return;
  }
  quantize_activations(j.act, xr, out, j.cols);
  if (j.xb != nullptr) prepare_act_blocks(out, j.xq_stride, 1, j.cols, j.xb + t * (j.cols / 32));
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

// The input, produced and prepared a token's row at a time (prologue(u) for each of `units`
// rows), then rows [0, total) of the jobs laid end to end, split over the pool in multiples of
// `grain`. The prologue runs on all the threads before any reads its rows when there are
// several (the caller alone kept the others waiting: alternating runs, 2 threads, pp128 Q4_K
// 508 -> 521 tok/s, pp1024 Q4_0 540 -> 556); on the caller alone for a few rows, since the
// parallel pass costs more than it saves for decode's single row (its extra round trips between
// the cores of the EPYC VM, ~0.3 us each: pool trace, Q4_K decode, ffn_down's loop +8.5 us for
// 6.8 us less of silu and quantization before it).
void run_jobs(const Job* jobs, std::size_t n, std::size_t total, std::size_t grain,
              std::size_t units, const std::function<void(std::size_t)>& prologue,
              ThreadPool& pool) {
  constexpr std::size_t kParallelPrologueRows = 4;
  const bool serial_prologue = units < kParallelPrologueRows;
  if (serial_prologue)
    for (std::size_t u = 0; u < units; ++u) prologue(u);
  pool.parallel_for(
      total,
      [&](std::size_t begin, std::size_t end) {
        std::size_t offset = 0;  // the first row of job i among all jobs' rows
        for (std::size_t i = 0; i < n && offset < end; offset += jobs[i].rows, ++i) {
          const std::size_t b = std::max(begin, offset), e = std::min(end, offset + jobs[i].rows);
          if (b < e) run_rows(jobs[i], jobs[i].x, jobs[i].t_count, b - offset, e - offset);
        }
      },
      grain, serial_prologue ? 0 : units, prologue);
}

// Interleaved weights split in pairs of groups (16 rows) where every product but the last starts
// on one: the multi-token VNNI kernels take two groups at once, and a thread's odd last group
// runs the slower one-group kernel.
std::size_t pair_grain(const Job* jobs, std::size_t n, std::size_t grain) {
  if (grain != kInterleave) return grain;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (jobs[i].rows % (2 * kInterleave) != 0) return grain;
  return 2 * kInterleave;
}

}  // namespace

void matmul(const TensorView& w, std::span<const float> x, int n_tokens, std::span<float> y,
            ThreadPool& pool, MatmulScratch& scratch, const InputProducer* produce) {
  const MatmulProduct p{&w, y};
  matmul_set({&p, 1}, x, n_tokens, pool, scratch, produce);
}

void matmul_set(std::span<const MatmulProduct> products, std::span<const float> x, int n_tokens,
                ThreadPool& pool, MatmulScratch& scratch, const InputProducer* produce) {
  const auto t_count = static_cast<std::size_t>(n_tokens);
  constexpr std::size_t kMaxProducts = 4;
  if (products.empty()) return;
  // One product at a time (the producer runs with the first).
  const auto one_by_one = [&] {
    for (std::size_t i = 0; i < products.size(); ++i)
      matmul(*products[i].w, x, n_tokens, products[i].y, pool, scratch, i == 0 ? produce : nullptr);
  };
  if (products.size() > kMaxProducts) return one_by_one();
  Job jobs[kMaxProducts];
  // Threads split rows in multiples of the grain (whole groups for interleaved weights), so
  // every product but the last must start on one, or the products go one at a time.
  std::size_t grain = kTileRows, total = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    jobs[i] = check_product(*products[i].w, x.size(), t_count, products[i].y);
    jobs[i].x = x.data();
    jobs[i].t_count = t_count;
    if (jobs[i].cols != jobs[0].cols)
      fail("matmul: '{}' has {} columns and '{}' {}: the products of one input need the same",
           jobs[0].w->name, jobs[0].cols, jobs[i].w->name, jobs[i].cols);
    if (jobs[i].w->interleaved != 0) grain = kInterleave;
  }
  grain = pair_grain(jobs, products.size(), grain);
  for (std::size_t i = 0; i + 1 < products.size(); ++i)
    if (jobs[i].rows % grain != 0) return one_by_one();
  if (scratch.forms.size() < products.size()) scratch.forms.resize(products.size());
  const Job* forms[kMaxProducts];  // the first job of each form that has buffers to fill
  std::size_t n_forms = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    total += jobs[i].rows;
    std::size_t same = 0;
    while (same < i && !same_form(jobs[same], jobs[i])) ++same;
    if (same == i) {
      reserve_form(jobs[i], t_count, scratch.forms[i]);
      if (jobs[i].xq != nullptr) forms[n_forms++] = &jobs[i];
    } else {
      jobs[i].xq = jobs[same].xq;
      jobs[i].xq_stride = jobs[same].xq_stride;
      jobs[i].xb = jobs[same].xb;
    }
  }
  const std::size_t units = n_forms > 0 || produce != nullptr ? t_count : 0;
  const std::function<void(std::size_t)> prologue = [&](std::size_t t) {
    if (produce != nullptr) (*produce)(t);
    for (std::size_t f = 0; f < n_forms; ++f) prepare_row(*forms[f], x.data(), t);
  };
  run_jobs(jobs, products.size(), total, grain, units, prologue, pool);
}

void matmul_grouped(std::span<const GroupedProduct> products, ThreadPool& pool,
                    MatmulScratch& scratch) {
  const std::size_t n = products.size();
  if (n == 0) return;
  // Reused by the calling thread from call to call. The workers must see the caller's: named
  // through references (a lambda naming a thread_local reads its own thread's).
  thread_local std::vector<Job> caller_jobs;
  thread_local std::vector<std::size_t> caller_first_unit;
  std::vector<Job>& jobs = caller_jobs;
  std::vector<std::size_t>& first_unit = caller_first_unit;  // product i's rows: [first, next)
  jobs.resize(n);
  first_unit.resize(n + 1);
  std::size_t grain = kTileRows, total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const GroupedProduct& p = products[i];
    jobs[i] = check_product(*p.w, p.x.size(), static_cast<std::size_t>(p.n_tokens), p.y);
    jobs[i].x = p.x.data();
    jobs[i].t_count = static_cast<std::size_t>(p.n_tokens);
    if (jobs[i].w->interleaved != 0) grain = kInterleave;
  }
  grain = pair_grain(jobs.data(), n, grain);
  // Threads split rows in multiples of the grain: every product but the last must start on one.
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (jobs[i].rows % grain != 0) {
      for (const GroupedProduct& p : products)
        matmul(*p.w, p.x, p.n_tokens, p.y, pool, scratch, p.produce);
      return;
    }
  if (scratch.forms.size() < n) scratch.forms.resize(n);
  first_unit[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    reserve_form(jobs[i], static_cast<std::size_t>(products[i].n_tokens), scratch.forms[i]);
    total += jobs[i].rows;
    first_unit[i + 1] = first_unit[i] + static_cast<std::size_t>(products[i].n_tokens);
  }
  const std::size_t units = first_unit[n];
  const std::function<void(std::size_t)> prologue = [&](std::size_t u) {
    const auto i = static_cast<std::size_t>(
        std::upper_bound(first_unit.begin(), first_unit.end(), u) - first_unit.begin() - 1);
    const std::size_t t = u - first_unit[i];
    if (products[i].produce != nullptr) (*products[i].produce)(t);
    if (jobs[i].xq != nullptr) prepare_row(jobs[i], products[i].x.data(), t);
  };
  run_jobs(jobs.data(), n, total, grain, units, prologue, pool);
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
