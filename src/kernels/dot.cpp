// Highway implementations of the dot products, compiled once per SIMD target and dispatched at
// run time. The single dot is dot-inl.h's (shared with attention); the summation order depends
// only on n and the vector width.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dot.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/dot-inl.h"

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu_info.h"
#include "kernels/dot.h"

#include <cstdlib>
#include <string_view>

HWY_BEFORE_NAMESPACE();
namespace ls::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A tile of dot products: R weight rows against T activation rows, one vector accumulator per
// (row, token) pair, summed over the elements in order. Each pair's arithmetic is the same
// whatever R and T are, so a tile's results equal single dots bit for bit; the tile only shares
// loads (each weight vector is widened once for T tokens, each x vector loaded once for R rows).
// `ahead` (decode's rows, one at a time): each vector of weights also asks for the bytes that far
// on in the stream (cpu_info.h's decode_ahead_bytes), which only warms the cache.
template <int R, int T, typename W>
HWY_INLINE void tile_impl(const W* HWY_RESTRICT w, size_t w_stride, const float* HWY_RESTRICT x,
                          size_t x_stride, size_t n, float* HWY_RESTRICT out, size_t out_stride,
                          size_t tok_stride, size_t ahead = 0) {
  static_assert(R >= 1 && R <= 4 && T >= 1 && T <= 6);
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const size_t lanes = hn::Lanes(df);
  // Named accumulators (not an array) so that the compiler keeps all of them in registers.
  V a00 = hn::Zero(df), a01 = a00, a02 = a00, a03 = a00, a04 = a00, a05 = a00, a10 = a00, a11 = a00,
    a12 = a00, a13 = a00, a14 = a00, a15 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00,
    a24 = a00, a25 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00, a34 = a00, a35 = a00;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    if (ahead != 0) __builtin_prefetch(reinterpret_cast<const char*>(w + i) + ahead);
    const V x0 = hn::LoadU(df, x + i);
    const V x1 = T > 1 ? hn::LoadU(df, x + x_stride + i) : x0;
    const V x2 = T > 2 ? hn::LoadU(df, x + 2 * x_stride + i) : x0;
    const V x3 = T > 3 ? hn::LoadU(df, x + 3 * x_stride + i) : x0;
    const V x4 = T > 4 ? hn::LoadU(df, x + 4 * x_stride + i) : x0;
    const V x5 = T > 5 ? hn::LoadU(df, x + 5 * x_stride + i) : x0;
    // One weight row against the T tokens.
    const auto row = [&](const W* wr, V& s0, V& s1, V& s2, V& s3, V& s4, V& s5) HWY_ATTR {
      const V wv = load_weights(df, wr + i);
      s0 = hn::MulAdd(wv, x0, s0);
      if constexpr (T > 1) s1 = hn::MulAdd(wv, x1, s1);
      if constexpr (T > 2) s2 = hn::MulAdd(wv, x2, s2);
      if constexpr (T > 3) s3 = hn::MulAdd(wv, x3, s3);
      if constexpr (T > 4) s4 = hn::MulAdd(wv, x4, s4);
      if constexpr (T > 5) s5 = hn::MulAdd(wv, x5, s5);
    };
    row(w, a00, a01, a02, a03, a04, a05);
    if constexpr (R > 1) row(w + w_stride, a10, a11, a12, a13, a14, a15);
    if constexpr (R > 2) row(w + 2 * w_stride, a20, a21, a22, a23, a24, a25);
    if constexpr (R > 3) row(w + 3 * w_stride, a30, a31, a32, a33, a34, a35);
  }
  const V acc[4][6] = {{a00, a01, a02, a03, a04, a05},
                       {a10, a11, a12, a13, a14, a15},
                       {a20, a21, a22, a23, a24, a25},
                       {a30, a31, a32, a33, a34, a35}};
  // The lane sums: of kSumsAtOnce accumulators at a time while there are that many (in a full
  // tile), with the tree SumOfLanes uses, so the bits are the same either way.
  float sums[4 * 6];
  int done = 0;
  if constexpr (kSumsAtOnce > 0 && R * T >= kSumsAtOnce) {
    V list[R * T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) list[r * T + t] = acc[r][t];
    for (; done + kSumsAtOnce <= R * T; done += kSumsAtOnce)
      sum_lanes_of_each(df, list + done, sums + done);
  }
  for (int j = done; j < R * T; ++j) sums[j] = hn::GetLane(hn::SumOfLanes(df, acc[j / T][j % T]));
  if (i == n) {  // no elements past the last whole vector (every matrix of the model)
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[r * out_stride + t * tok_stride] = sums[r * T + t] + 0.0f;
    return;
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float tail = 0.0f;
      for (size_t j = i; j < n; ++j) tail += to_f32(w[r * w_stride + j]) * x[t * x_stride + j];
      out[r * out_stride + t * tok_stride] = sums[r * T + t] + tail;
    }
  }
}

// Tokens per tile: 6 where there are 32 vector registers (AVX-512: 24 accumulators, 6
// activation vectors and 1 weight vector; each weight vector widened once for 6 tokens), else 2
// (AVX2's 16: 8 accumulators).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kTileT = 6;
#else
constexpr int kTileT = 2;
#endif

using TileFn = void (*)(const void*, size_t, const float*, size_t, size_t, float*, size_t, size_t);
template <int R, int T, typename W>
void tile_fn(const void* w, size_t w_stride, const float* x, size_t x_stride, size_t n, float* out,
             size_t out_stride, size_t tok_stride) {
  tile_impl<R, T>(static_cast<const W*>(w), w_stride, x, x_stride, n, out, out_stride, tok_stride);
}
template <typename W>
constexpr TileFn kTiles[4][6] = {
    {tile_fn<1, 1, W>, tile_fn<1, 2, W>, tile_fn<1, 3, W>, tile_fn<1, 4, W>, tile_fn<1, 5, W>,
     tile_fn<1, 6, W>},
    {tile_fn<2, 1, W>, tile_fn<2, 2, W>, tile_fn<2, 3, W>, tile_fn<2, 4, W>, tile_fn<2, 5, W>,
     tile_fn<2, 6, W>},
    {tile_fn<3, 1, W>, tile_fn<3, 2, W>, tile_fn<3, 3, W>, tile_fn<3, 4, W>, tile_fn<3, 5, W>,
     tile_fn<3, 6, W>},
    {tile_fn<4, 1, W>, tile_fn<4, 2, W>, tile_fn<4, 3, W>, tile_fn<4, 4, W>, tile_fn<4, 5, W>,
     tile_fn<4, 6, W>},
};

template <typename W>
void tile_dispatch(const W* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
                   size_t n, float* out, size_t out_stride, size_t tok_stride) {
  if (toks == 1) {
    // Decode streams the matrix once, one row after another: a single sequential stream per
    // thread, which the hardware prefetchers follow too. 4 rows side by side (4 short
    // streams) needed software prefetching and still read 15-35% slower on an AMD EPYC Zen 4
    // (F16 decode 23 against 28 tok/s, BF16 24-25 against 31-42; 2 rows side by side without
    // prefetching, 17-21).
    // Each vector also asks for the bytes decode_ahead_bytes() on, as the quantized kernels do
    // (AMD EPYC Zen 5, 0.5B shape, 2 threads, medians of 3 alternating runs: BF16 decode 52.0 ->
    // 54.2 tok/s, 74 -> 79% of the roofline; F16 46.4 -> 53.4, 69 -> 78%).
    const size_t ahead = decode_ahead_bytes();
    for (int r = 0; r < rows; ++r)
      tile_impl<1, 1>(w + static_cast<size_t>(r) * w_stride, w_stride, x, x_stride, n,
                      out + static_cast<size_t>(r) * out_stride, out_stride, tok_stride, ahead);
    return;
  }
  // Several tokens: kTileT of them at a time while every group of 4 rows passes, so that their
  // activations (21 KiB for 896-wide rows) stay in L1 and the weights come from L2, where the
  // caller keeps its block of rows (AMD EPYC Zen 5, BF16 896 x 896 and 4864 x 896 products of
  // 128 tokens, 2 threads: 71-77% -> 79-80% of the FMA peak; 896 x 4864, whose 6 rows of x
  // fill L2 instead, 76-78% -> 78-81%). Rows in the outer loop read x from L2 for each group.
  // The last two groups share what is left evenly: 8 tokens as 4 + 4 rather than 6 + 2, whose
  // narrow tiles widen each weight vector for 2 tokens (64 x 896 BF16 rows against 8 tokens:
  // 72-82% -> 83-84% of the FMA peak).
  for (int t0 = 0, nt = 0; t0 < toks; t0 += nt) {
    const int left = toks - t0;
    nt = left <= kTileT ? left : left < 2 * kTileT ? (left + 1) / 2 : kTileT;
    for (int r0 = 0; r0 < rows; r0 += 4) {
      const int nr = rows - r0 < 4 ? rows - r0 : 4;
      kTiles<W>[nr - 1][nt - 1](w + static_cast<size_t>(r0) * w_stride, w_stride,
                                x + static_cast<size_t>(t0) * x_stride, x_stride, n,
                                out + static_cast<size_t>(r0) * out_stride + t0 * tok_stride,
                                out_stride, tok_stride);
    }
  }
}

void TileF32(const void* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
             size_t n, float* out, size_t out_stride, size_t tok_stride) {
  tile_dispatch(static_cast<const float*>(w), w_stride, rows, x, x_stride, toks, n, out, out_stride,
                tok_stride);
}
void TileBF16(const void* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
              size_t n, float* out, size_t out_stride, size_t tok_stride) {
  tile_dispatch(static_cast<const hwy::bfloat16_t*>(w), w_stride, rows, x, x_stride, toks, n, out,
                out_stride, tok_stride);
}
void TileF16(const void* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
             size_t n, float* out, size_t out_stride, size_t tok_stride) {
  tile_dispatch(static_cast<const hwy::float16_t*>(w), w_stride, rows, x, x_stride, toks, n, out,
                out_stride, tok_stride);
}

float DotF32(const float* w, const float* x, size_t n) {
  return dot_impl(w, x, n);
}
float DotBF16(const uint16_t* w, const float* x, size_t n) {
  return dot_impl(reinterpret_cast<const hwy::bfloat16_t*>(w), x, n);
}
float DotF16(const uint16_t* w, const float* x, size_t n) {
  return dot_impl(reinterpret_cast<const hwy::float16_t*>(w), x, n);
}

}  // namespace ls::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ls::kernels {

HWY_EXPORT(DotF32);
HWY_EXPORT(DotBF16);
HWY_EXPORT(DotF16);
HWY_EXPORT(TileF32);
HWY_EXPORT(TileBF16);
HWY_EXPORT(TileF16);

namespace {
// LS_FLOAT_SIMD=avx2 caps the float kernels at AVX2 on CPUs that have AVX-512, so that a test's
// recorded float results (whose bits depend on the vector width) are the same on every x86-64
// machine of the project's fleet. Read once, before the first dispatch.
const bool g_float_simd_capped = [] {
  const char* env = std::getenv("LS_FLOAT_SIMD");
  if (env == nullptr || std::string_view(env) != "avx2") return false;
  hwy::DisableTargets(HWY_AVX2 - 1);  // every target better than AVX2 has a lower bit
  return true;
}();
}  // namespace

float dot_f32(const float* w, const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotF32)(w, x, n);
}
float dot_bf16(const std::uint16_t* w, const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotBF16)(w, x, n);
}
float dot_f16(const std::uint16_t* w, const float* x, std::size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotF16)(w, x, n);
}

void dot_tile(DType type, const std::uint8_t* w, std::size_t w_stride, int n_rows, const float* x,
              std::size_t x_stride, int n_tok, std::size_t n, float* out, std::size_t out_stride,
              std::size_t tok_stride) {
  const std::size_t ws = w_stride / dtype_size(type);  // in elements
  switch (type) {
    case DType::F32:
      return HWY_DYNAMIC_DISPATCH(TileF32)(w, ws, n_rows, x, x_stride, n_tok, n, out, out_stride,
                                           tok_stride);
    case DType::BF16:
      return HWY_DYNAMIC_DISPATCH(TileBF16)(w, ws, n_rows, x, x_stride, n_tok, n, out, out_stride,
                                            tok_stride);
    case DType::F16:
      return HWY_DYNAMIC_DISPATCH(TileF16)(w, ws, n_rows, x, x_stride, n_tok, n, out, out_stride,
                                           tok_stride);
    default:
      fail("dot_tile: {} is not a float type", dtype_name(type));
  }
}

double dot_f32_ref(const float* w, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(w[i]) * x[i];
  return s;
}
double dot_bf16_ref(const std::uint16_t* w, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(ls::bf16_to_f32(w[i])) * x[i];
  return s;
}
double dot_f16_ref(const std::uint16_t* w, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(ls::f16_to_f32(w[i])) * x[i];
  return s;
}

const char* simd_target_name() {
  // Highway orders targets best-first by bit value: the lowest supported, compiled bit wins.
  const std::int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(targets & -targets);
}

}  // namespace ls::kernels
#endif  // HWY_ONCE
