// bench_matmul: the whole matrix product (kernels::matmul) at Qwen2.5-0.5B's MLP shapes (and a
// Qwen3-30B-A3B expert's) for every
// weight type, on one thread: decode (1 token; GB/s of weight bytes) and prefill (64 tokens;
// GFLOP/s, 2 flops per multiply-add). Compare decode with bench_quant's read-bandwidth line and
// prefill with the core's peak (AVX2: 2 FMA x 8 lanes x 2 flops per cycle). Also decode attention
// of one KV head, its cache in cache (warm) and coming from memory (cold), as decode meets it.
//   build/bench/kernels/bench_matmul [--benchmark_filter=BF16]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "core/aligned.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
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
// range(1): tokens; range(2): 0 = [4864, 896] (gate/up), 1 = [896, 4864], 2 = [768, 2048] and
// 3 = [2048, 768] (a Qwen3-30B-A3B expert's gate/up and down).
void BM_matmul(benchmark::State& state) {
  const bool bf16_act = state.range(0) == 7;
  const ls::DType type = bf16_act ? ls::DType::BF16 : kTypes[state.range(0)];
  const int tokens = static_cast<int>(state.range(1));
  constexpr std::size_t kShapes[4][2] = {{4864, 896}, {896, 4864}, {768, 2048}, {2048, 768}};
  const std::size_t rows = kShapes[state.range(2)][0];
  const std::size_t cols = kShapes[state.range(2)][1];
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
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {1, 64}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond);

// Decode attention of one KV head's query group at Qwen2.5-0.5B's shape (7 query heads, head
// dim 64) over n_ctx cached positions of an F32 cache whose rows hold that head alone (256 bytes,
// contiguous, as model/kv_cache.h keeps them): GB/s of the K and V bytes read. Arg: n_ctx.
void BM_attend_group(benchmark::State& state) {
  const auto n_ctx = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kGroup = 7, kHd = 64, kRowBytes = kHd * sizeof(float);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> k(n_ctx * kHd), v(n_ctx * kHd), q(kGroup * kHd), out(kGroup * kHd);
  for (auto* buf : {&k, &v, &q})
    for (auto& x : *buf) x = nd(rng);
  const std::uint8_t* kb = reinterpret_cast<const std::uint8_t*>(k.data());
  const std::uint8_t* vb = reinterpret_cast<const std::uint8_t*>(v.data());
  const ls::kernels::KvRows kr{&kb, n_ctx, kRowBytes, 0}, vr{&vb, n_ctx, kRowBytes, 0};
  std::vector<float> scratch(kGroup * (n_ctx + 2 * kHd));
  for (auto _ : state) {
    ls::kernels::attend_group(q.data(), kGroup, kr, vr, ls::DType::F32, n_ctx, kHd, 0.125f,
                              scratch.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * n_ctx * kRowBytes));
}
BENCHMARK(BM_attend_group)->Arg(128)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);

// A paged cache of n_ctx positions of random floats in blocks of 16 positions (block_bytes
// each), the block table KvRows reads, and one query group of Qwen2.5-0.5B's shape (7 heads of
// 64) with its output and scratch: what the cold attention benchmarks share.
struct PagedAttendInput {
  static constexpr std::size_t kGroup = 7, kHd = 64, kBlockRows = 16;
  std::vector<float> cache, q, out, scratch;
  std::vector<const std::uint8_t*> blocks;
  PagedAttendInput(std::size_t n_ctx, std::size_t block_bytes)
      : q(kGroup * kHd), out(kGroup * kHd), scratch(kGroup * (n_ctx + 2 * kHd)) {
    const std::size_t n_blocks = (n_ctx + kBlockRows - 1) / kBlockRows;
    cache.resize(n_blocks * block_bytes / sizeof(float));
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0, 1);
    for (auto* buf : {&cache, &q})
      for (auto& x : *buf) x = nd(rng);
    for (std::size_t b = 0; b < n_blocks; ++b)
      blocks.push_back(reinterpret_cast<const std::uint8_t*>(cache.data()) + b * block_bytes);
  }
  // One attend_group call over the rows kr and vr (offsets into every block).
  void attend(std::size_t n_ctx, std::size_t row_bytes, std::size_t k_offset,
              std::size_t v_offset) {
    const ls::kernels::KvRows kr{blocks.data(), kBlockRows, row_bytes, k_offset},
        vr{blocks.data(), kBlockRows, row_bytes, v_offset};
    ls::kernels::attend_group(q.data(), kGroup, kr, vr, ls::DType::F32, n_ctx, kHd, 0.125f,
                              scratch.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
};

// The same over a cache of 48 layers, one after another as decode meets them, laid out as
// model/kv_cache.h's blocks ([block][layer][k|v][16 positions][row]): each layer's keys and
// values come from memory, 16 positions from each block. Args: n_ctx, heads per row (1: this
// cache's layout; 2: rows of both KV heads side by side, the layout before, whose every other
// 256 bytes belong to the other head's thread).
void BM_attend_group_cold(benchmark::State& state) {
  using P = PagedAttendInput;
  const auto n_ctx = static_cast<std::size_t>(state.range(0));
  const auto heads = static_cast<std::size_t>(state.range(1));
  constexpr std::size_t kLayers = 48;
  const std::size_t row_bytes = heads * P::kHd * sizeof(float);
  const std::size_t side_bytes = P::kBlockRows * row_bytes;
  P in(n_ctx, kLayers * 2 * side_bytes);
  std::size_t layer = 0;
  for (auto _ : state) {
    in.attend(n_ctx, row_bytes, 2 * layer * side_bytes, (2 * layer + 1) * side_bytes);
    layer = (layer + 1) % kLayers;
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * 2 * n_ctx * P::kHd * sizeof(float)));
}
BENCHMARK(BM_attend_group_cold)->Args({1024, 1})->Args({1024, 2})->Unit(benchmark::kMicrosecond);

// One layer's attention as decode meets it: the cache of every layer behind it evicted by reading
// 96 MiB (decode streams every weight between two visits of a layer's cache), outside the timing.
// The call alone is timed (manual time: PauseTiming/ResumeTiming added 3-4 us of CPU time to
// every iteration on the EPYC VM, more than half the warm kernel's time at 256 positions).
// Prefetching every row up front, prefetching the value rows beside the keys, or reading them
// all with loads first did not shorten it there.
// Args: n_ctx.
void BM_attend_group_dram(benchmark::State& state) {
  using P = PagedAttendInput;
  const auto n_ctx = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kLayers = 24, kHeads = 2;  // each head's rows one run per block
  const std::size_t row_bytes = P::kHd * sizeof(float);
  const std::size_t side_bytes = kHeads * P::kBlockRows * row_bytes;
  P in(n_ctx, kLayers * 2 * side_bytes);
  std::vector<float> evict(std::size_t{24} << 20);
  float sink = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < evict.size(); i += 16) sink += evict[i];
    const auto t0 = std::chrono::steady_clock::now();
    in.attend(n_ctx, row_bytes, 0, side_bytes);  // layer 0, head 0
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * 2 * n_ctx * P::kHd * sizeof(float)));
}
BENCHMARK(BM_attend_group_dram)
    ->Arg(256)
    ->Arg(1024)
    ->Iterations(2000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
