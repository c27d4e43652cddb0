// Single-thread throughput of the quantized kernels: matrix-vector products (decode) in GB/s of
// weight bytes at Qwen2.5-0.5B shapes (4864 x 896 stays in L2/L3; 151936 x 896, the tied
// lm_head, streams from memory), 4 x 4 tiles (prefill) in multiply-adds per second, and the
// activation quantizers; a single-thread read-bandwidth probe gives the ceiling in the same run,
// and the lm_head's product split over 2 threads sits beside the 2-thread probe, as do decode's
// loops over the 24 layers' matrices (BM_layers_threads).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/huge_page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/bandwidth.h"
#include "kernels/interleave.h"
#include "kernels/quant.h"

namespace {

using ls::DType;
namespace k = ls::kernels;

// Random blocks with sane f16 scales (quantizing 136M floats with the K-quant search would take
// minutes; the kernels' speed does not depend on how the bytes were chosen).
std::vector<std::uint8_t> random_weights(DType t, std::size_t rows, std::size_t cols) {
  const std::size_t bytes = ls::dtype_bytes(t, static_cast<std::int64_t>(rows * cols));
  std::vector<std::uint8_t> w(bytes);
  std::mt19937_64 rng(7);
  for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(&w[i], &v, 8);
  }
  const std::size_t bb = ls::dtype_block_bytes(t);
  const std::uint16_t d = ls::f32_to_f16(0.01f);
  // Where each format keeps its f16 scales: d (and dmin or m right after it).
  std::size_t at = 0, count = 1;
  if (t == DType::Q6_K) at = 208;
  if (t == DType::Q3_K) at = 108;
  if (t == DType::Q2_K) at = 80, count = 2;
  if (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q4_1 || t == DType::Q5_1) count = 2;
  for (std::size_t off = 0; off < bytes; off += bb)
    for (std::size_t k = 0; k < count; ++k) std::memcpy(&w[off + at + 2 * k], &d, 2);
  return w;
}

std::vector<std::uint8_t> activations(DType weight, std::size_t cols, int tokens) {
  const DType a = k::dot_activation_type(weight);
  const std::size_t xb = ls::dtype_bytes(a, static_cast<std::int64_t>(cols));
  std::vector<std::uint8_t> xq(xb * tokens);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(cols);
  for (int t = 0; t < tokens; ++t) {
    for (auto& v : x) v = nd(rng);
    k::quantize_activations(a, x.data(), xq.data() + t * xb, cols);
  }
  return xq;
}

DType type_arg(std::int64_t i) {
  constexpr DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K,
                              DType::Q5_0, DType::Q5_1, DType::Q4_1, DType::IQ4_NL,
                              DType::Q5_K, DType::Q3_K, DType::Q2_K};
  return kTypes[i];
}

// A row-major matrix of type index range(0), range(1) x range(2), with `tokens` quantized
// activation rows and the output: what the row-major benchmarks share.
struct RowMajorProduct {
  DType type;
  std::size_t rows, cols, row_bytes, x_bytes;
  int tokens;
  std::vector<std::uint8_t> w, xq;
  std::vector<float> y;
  RowMajorProduct(const benchmark::State& state, int n_tokens)
      : type(type_arg(state.range(0))),
        rows(static_cast<std::size_t>(state.range(1))),
        cols(static_cast<std::size_t>(state.range(2))),
        tokens(n_tokens),
        w(random_weights(type, rows, cols)),
        xq(activations(type, cols, n_tokens)),
        y(rows * static_cast<std::size_t>(n_tokens)) {
    row_bytes = w.size() / rows;
    x_bytes = xq.size() / static_cast<std::size_t>(n_tokens);
  }
  // Rows [r, r + n) against every token, out[row * tokens + token].
  void tile(std::size_t r, std::size_t n) {
    k::dot_quantized_tile(type, &w[r * row_bytes], row_bytes, static_cast<int>(n), xq.data(),
                          x_bytes, tokens, cols, &y[r * static_cast<std::size_t>(tokens)],
                          static_cast<std::size_t>(tokens));
  }
  // Weight bytes per iteration, and the label.
  void report(benchmark::State& state) const {
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.size()));
    state.SetLabel(std::string(ls::dtype_name(type)) + " " + k::quant_simd_name());
  }
};

// Decode: one activation row against the whole matrix, as matmul calls it (one tile call over
// many rows). Args: type index, rows, cols.
void BM_matvec(benchmark::State& state) {
  RowMajorProduct p(state, 1);
  for (auto _ : state) {
    p.tile(0, p.rows);
    benchmark::DoNotOptimize(p.y.data());
    benchmark::ClobberMemory();
  }
  p.report(state);
}

// The same through dot_quantized, one call per row (per-call overhead included).
void BM_matvec_rowcalls(benchmark::State& state) {
  RowMajorProduct p(state, 1);
  for (auto _ : state) {
    for (std::size_t r = 0; r < p.rows; ++r)
      p.y[r] = k::dot_quantized(p.type, &p.w[r * p.row_bytes], p.xq.data(), p.cols);
    benchmark::DoNotOptimize(p.y.data());
    benchmark::ClobberMemory();
  }
  p.report(state);
}

// Decode as a caller with small row tiles would do it (one call per range(3) rows: the per-call
// setup counts).
void BM_matvec_tiles(benchmark::State& state) {
  RowMajorProduct p(state, 1);
  const auto per_call = static_cast<std::size_t>(state.range(3));
  for (auto _ : state) {
    for (std::size_t r = 0; r < p.rows; r += per_call) p.tile(r, std::min(per_call, p.rows - r));
    benchmark::DoNotOptimize(p.y.data());
    benchmark::ClobberMemory();
  }
  p.report(state);
}

// Prefill: `tokens` activation rows against the whole matrix. Items = multiply-adds.
void BM_tile(benchmark::State& state) {
  RowMajorProduct p(state, static_cast<int>(state.range(3)));
  // One call per block of 64 rows (a thread's share of the matrix is split like this).
  for (auto _ : state) {
    for (std::size_t r = 0; r < p.rows; r += 64) p.tile(r, std::min<std::size_t>(64, p.rows - r));
    benchmark::DoNotOptimize(p.y.data());
  }
  state.SetItemsProcessed(
      static_cast<std::int64_t>(state.iterations() * p.rows * p.cols * state.range(3)));
  p.report(state);
}

// The interleaved layout (kernels/interleave.h, what the model repacks Q8_0/Q4_0 matrices to at
// load): decode (tokens 1) and prefill tiles. Args: type index (0 or 1), rows, cols, tokens.
void BM_interleaved(benchmark::State& state) {
  const DType t = type_arg(state.range(0));
  const auto rows = static_cast<std::size_t>(state.range(1));
  const auto cols = static_cast<std::size_t>(state.range(2));
  const int tokens = static_cast<int>(state.range(3));
  const auto w = random_weights(t, rows, cols);
  ls::HugePageBuffer wi(w.size());  // as the model keeps them (model/repack.cpp)
  k::interleave_rows(t, w.data(), rows, cols, wi.data());
  const auto xq = activations(t, cols, tokens);
  const std::size_t xb = xq.size() / tokens;
  std::vector<float> y(rows * tokens);
  for (auto _ : state) {
    k::dot_interleaved(t, wi.data(), static_cast<int>(rows / 8), xq.data(), xb, tokens, cols,
                       y.data(), 1, rows);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows * cols * tokens));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.size()));
  state.SetLabel(std::string(ls::dtype_name(t)) + " interleaved " + k::quant_simd_name());
}

// The same product split over a pool's threads as the model's matmul splits it (run_rows in
// kernels/matmul.cpp): decode's rate with every core streaming, against
// BM_read_bandwidth_threads. Args: type index, rows, cols, threads.
void BM_interleaved_threads(benchmark::State& state) {
  const DType t = type_arg(state.range(0));
  const auto rows = static_cast<std::size_t>(state.range(1));
  const auto cols = static_cast<std::size_t>(state.range(2));
  ls::ThreadPool pool(static_cast<int>(state.range(3)));
  const auto w = random_weights(t, rows, cols);
  ls::HugePageBuffer wi(w.size());
  k::interleave_rows(t, w.data(), rows, cols, wi.data());
  const auto xq = activations(t, cols, 1);
  std::vector<k::ActBlock> xb(cols / 32);
  k::prepare_act_blocks(xq.data(), xq.size(), 1, cols, xb.data());
  const std::size_t group_bytes = w.size() / (rows / 8);
  const int n_groups = static_cast<int>(rows / 8);
  std::vector<float> y(rows);
  for (auto _ : state) {
    pool.parallel_for(static_cast<std::size_t>(n_groups), [&](std::size_t g0, std::size_t g1) {
      k::dot_interleaved_prepared(t, wi.data() + g0 * group_bytes, static_cast<int>(g1 - g0),
                                  xq.data(), xq.size(), xb.data(), 1, cols, &y[g0 * 8], 1, rows,
                                  n_groups - static_cast<int>(g0));
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.size()));
  state.SetLabel(std::string(ls::dtype_name(t)) + " interleaved, " +
                 std::to_string(state.range(3)) + " threads");
}

// Decode's matrix products for the 24 layers of the 0.5B shape, as the loops the model runs (q k v
// as one, o, gate and up as one, down), each layer's weights interleaved in one huge-page buffer
// as the model keeps them, split over a pool: the products' rate in decode's pattern of short
// loops, beside BM_interleaved_threads' one long loop. Counter "busy": the share of the loops'
// time the threads spend in the kernel (the rest: hand-overs and waiting for the other thread).
// Args: type index, threads, which loops (bits 0-3: qkv, o, gate+up, down).
void BM_layers_threads(benchmark::State& state) {
  const DType t = type_arg(state.range(0));
  ls::ThreadPool pool(static_cast<int>(state.range(1)));
  constexpr int kLayers = 24;
  struct Loop {
    std::size_t rows, cols;
  };
  const Loop all[] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}};
  std::vector<Loop> loops;
  for (int i = 0; i < 4; ++i)
    if ((state.range(2) >> i & 1) != 0) loops.push_back(all[i]);
  std::size_t layer_bytes = 0;
  for (const Loop& l : loops)
    layer_bytes += ls::dtype_bytes(t, static_cast<std::int64_t>(l.rows * l.cols));
  ls::HugePageBuffer wi(layer_bytes * kLayers);
  std::size_t at = 0;
  for (int i = 0; i < kLayers; ++i)
    for (const Loop& l : loops) {
      const auto w = random_weights(t, l.rows, l.cols);
      k::interleave_rows(t, w.data(), l.rows, l.cols, wi.data() + at);
      at += w.size();
    }
  const auto x896 = activations(t, 896, 1), x4864 = activations(t, 4864, 1);
  std::vector<k::ActBlock> b896(896 / 32), b4864(4864 / 32);
  k::prepare_act_blocks(x896.data(), x896.size(), 1, 896, b896.data());
  k::prepare_act_blocks(x4864.data(), x4864.size(), 1, 4864, b4864.data());
  std::vector<float> y(9728);
  using Clock = std::chrono::steady_clock;
  std::atomic<std::int64_t> busy_ns{0};
  std::int64_t loop_ns = 0;
  for (auto _ : state) {
    const std::uint8_t* w = wi.data();
    for (int i = 0; i < kLayers; ++i)
      for (const Loop& l : loops) {
        const auto& xq = l.cols == 896 ? x896 : x4864;
        const k::ActBlock* xb = l.cols == 896 ? b896.data() : b4864.data();
        const std::size_t group_bytes = ls::dtype_bytes(t, static_cast<std::int64_t>(8 * l.cols));
        const int n_groups = static_cast<int>(l.rows / 8);
        const auto t0 = Clock::now();
        pool.parallel_for(
            l.rows,
            [&](std::size_t r0, std::size_t r1) {
              const auto p0 = Clock::now();
              const auto g0 = static_cast<int>(r0 / 8);
              k::dot_interleaved_prepared(t, w + g0 * group_bytes, static_cast<int>((r1 - r0) / 8),
                                          xq.data(), xq.size(), xb, 1, l.cols, &y[r0], 1, l.rows,
                                          n_groups - g0);
              busy_ns += std::chrono::nanoseconds(Clock::now() - p0).count();
            },
            8);
        loop_ns += std::chrono::nanoseconds(Clock::now() - t0).count();
        w += group_bytes * static_cast<std::size_t>(n_groups);
      }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["busy"] =
      static_cast<double>(busy_ns.load()) / static_cast<double>(loop_ns * state.range(1));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * layer_bytes * kLayers));
  state.SetLabel(std::string(ls::dtype_name(t)) + " 24 layers, " + std::to_string(state.range(1)) +
                 " threads");
}

void BM_quantize_activations(benchmark::State& state) {
  const DType a = state.range(0) == 0 ? DType::Q8_0 : DType::Q8_K;
  const std::size_t n = 4864;
  std::vector<float> x(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 1);
  for (auto& v : x) v = nd(rng);
  std::vector<std::uint8_t> q(ls::dtype_bytes(a, static_cast<std::int64_t>(n)));
  for (auto _ : state) {
    k::quantize_activations(a, x.data(), q.data(), n);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetLabel(std::string(ls::dtype_name(a)) + " " + k::quant_simd_name());
}

void BM_read_bandwidth_1thread(benchmark::State& state) {
  ls::ThreadPool pool(1);
  double gbs = 0;
  for (auto _ : state) gbs = k::measure_read_bandwidth(pool, std::size_t{512} << 20, 3).gb_per_s;
  state.counters["GB/s"] = gbs;
}

void BM_read_bandwidth_threads(benchmark::State& state) {
  ls::ThreadPool pool(static_cast<int>(state.range(0)));
  double gbs = 0;
  for (auto _ : state) gbs = k::measure_read_bandwidth(pool, std::size_t{1} << 30, 3).gb_per_s;
  state.counters["GB/s"] = gbs;
}

// 0 Q8_0, 1 Q4_0, 2 Q4_K, 3 Q6_K, 4 Q5_0, 5 Q5_1, 6 Q4_1, 7 IQ4_NL, 8 Q5_K, 9 Q3_K, 10 Q2_K.
// K-quants need cols % 256 == 0, so they run the transposed shapes (896 x 4864, and 27986 x 4864 ~
// the lm_head's 136M weights).
BENCHMARK(BM_matvec)
    ->Args({0, 4864, 896})
    ->Args({1, 4864, 896})
    ->Args({4, 4864, 896})
    ->Args({5, 4864, 896})
    ->Args({6, 4864, 896})
    ->Args({7, 4864, 896})
    ->Args({8, 896, 4864})
    ->Args({9, 896, 4864})
    ->Args({10, 896, 4864})
    ->Args({2, 896, 4864})
    ->Args({3, 896, 4864})
    ->Args({0, 151936, 896})
    ->Args({1, 151936, 896})
    ->Args({2, 27986, 4864})
    ->Args({3, 27986, 4864})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_rowcalls)
    ->Args({0, 4864, 896})
    ->Args({1, 4864, 896})
    ->Args({2, 896, 4864})
    ->Args({3, 896, 4864})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec_tiles)
    ->Args({0, 4864, 896, 4})
    ->Args({1, 4864, 896, 4})
    ->Args({2, 896, 4864, 4})
    ->Args({3, 896, 4864, 4})
    ->Args({0, 4864, 896, 16})
    ->Args({1, 4864, 896, 16})
    ->Args({1, 4864, 896, 64})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tile)
    ->Args({0, 4864, 896, 16})
    ->Args({1, 4864, 896, 16})
    ->Args({4, 4864, 896, 16})
    ->Args({6, 4864, 896, 16})
    ->Args({8, 896, 4864, 16})
    ->Args({10, 896, 4864, 16})
    ->Args({2, 896, 4864, 16})
    ->Args({3, 896, 4864, 16})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_interleaved)
    ->Args({0, 512, 896, 1})  // in L2: the kernel's own rate
    ->Args({1, 512, 896, 1})
    ->Args({4, 512, 896, 1})
    ->Args({5, 512, 896, 1})
    ->Args({7, 512, 896, 1})
    ->Args({2, 64, 4864, 1})  // K-quants in L2
    ->Args({8, 64, 4864, 1})
    ->Args({3, 64, 4864, 1})
    ->Args({0, 4864, 896, 1})
    ->Args({1, 4864, 896, 1})
    ->Args({0, 151936, 896, 1})
    ->Args({1, 151936, 896, 1})
    ->Args({0, 4864, 896, 16})
    ->Args({1, 4864, 896, 16})
    ->Args({2, 27984, 4864, 1})  // K-quants: blocks of 8 rows side by side (AVX-512 CPUs)
    ->Args({8, 27984, 4864, 1})
    ->Args({3, 27984, 4864, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_quantize_activations)->Arg(0)->Arg(1);
BENCHMARK(BM_interleaved_threads)
    ->Args({0, 151936, 896, 2})
    ->Args({1, 151936, 896, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_layers_threads)
    ->Args({0, 2, 15})
    ->Args({1, 2, 15})
    ->Args({1, 2, 4})  // gate and up alone
    ->Args({1, 2, 8})  // down alone
    ->Args({1, 1, 15})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_bandwidth_1thread)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_bandwidth_threads)->Arg(2)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
