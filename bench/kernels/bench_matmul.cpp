// bench_matmul: the whole matrix product (kernels::matmul) at Qwen2.5-0.5B's MLP shapes for every
// weight type, on one thread: decode (1 token; GB/s of weight bytes) and prefill (64 tokens;
// GFLOP/s, 2 flops per multiply-add). Compare decode with bench_quant's read-bandwidth line and
// prefill with the core's peak (AVX2: 2 FMA x 8 lanes x 2 flops per cycle).
//   build/bench/kernels/bench_matmul [--benchmark_filter=BF16]
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/aligned.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace {

const ls::DType kTypes[] = {ls::DType::F32,  ls::DType::F16,  ls::DType::BF16, ls::DType::Q8_0,
                            ls::DType::Q4_0, ls::DType::Q4_K, ls::DType::Q6_K};

// A random [rows, cols] weight matrix stored as `type`.
std::vector<std::uint8_t> make_weights(ls::DType type, std::size_t rows, std::size_t cols) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 0.05f);
  std::vector<float> row(cols);
  const std::size_t rb = ls::dtype_bytes(type, static_cast<std::int64_t>(cols));
  std::vector<std::uint8_t> w(rows * rb);
  for (std::size_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = nd(rng);
    std::uint8_t* out = &w[r * rb];
    if (ls::dtype_is_quantized(type)) {
      ls::kernels::quantize_row(type, row.data(), out, cols);
    } else {
      for (std::size_t i = 0; i < cols; ++i) {
        if (type == ls::DType::F32) {
          std::memcpy(out + 4 * i, &row[i], 4);
        } else {
          const std::uint16_t h =
              type == ls::DType::BF16 ? ls::f32_to_bf16(row[i]) : ls::f32_to_f16(row[i]);
          std::memcpy(out + 2 * i, &h, 2);
        }
      }
    }
  }
  return w;
}

// range(0): type index, or 7 for BF16 with BF16 activations (TensorView::bf16_activations);
// range(1): tokens; range(2): 0 = [4864, 896] (gate/up), 1 = [896, 4864].
void BM_matmul(benchmark::State& state) {
  const bool bf16_act = state.range(0) == 7;
  const ls::DType type = bf16_act ? ls::DType::BF16 : kTypes[state.range(0)];
  const int tokens = static_cast<int>(state.range(1));
  const std::size_t rows = state.range(2) == 0 ? 4864 : 896;
  const std::size_t cols = state.range(2) == 0 ? 896 : 4864;
  if (cols % ls::dtype_block_elems(type) != 0) {
    state.SkipWithError("row length is not a whole number of blocks");
    return;
  }
  const auto w = make_weights(type, rows, cols);
  ls::TensorView tv{
      "w", type, {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)}, w.data()};
  tv.bf16_activations = bf16_act;
  ls::AlignedVector<float> x(static_cast<std::size_t>(tokens) * cols, 0.5f),
      y(static_cast<std::size_t>(tokens) * rows);
  ls::ThreadPool pool(1);
  ls::kernels::MatmulScratch scratch;
  for (auto _ : state) {
    ls::kernels::matmul(tv, x, tokens, y, pool, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(ls::dtype_name(type)) + (bf16_act ? " x BF16" : ""));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w.size()),
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(rows * cols) * tokens * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_matmul)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {1, 64}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
