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
template <int R, int T, typename W>
HWY_INLINE void tile_impl(const W* HWY_RESTRICT w, size_t w_stride, const float* HWY_RESTRICT x,
                          size_t x_stride, size_t n, float* HWY_RESTRICT out, size_t out_stride) {
  static_assert(R >= 1 && R <= 4 && T >= 1 && T <= 2);
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  // Named accumulators (not an array) so that the compiler keeps all of them in registers.
  auto a00 = hn::Zero(df), a01 = hn::Zero(df), a10 = hn::Zero(df), a11 = hn::Zero(df);
  auto a20 = hn::Zero(df), a21 = hn::Zero(df), a30 = hn::Zero(df), a31 = hn::Zero(df);
  const W* w1 = w + w_stride;
  const W* w2 = w + 2 * w_stride;
  const W* w3 = w + 3 * w_stride;
  const float* x1 = x + x_stride;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x0v = hn::LoadU(df, x + i);
    const auto x1v = T > 1 ? hn::LoadU(df, x1 + i) : x0v;
    const auto w0v = load_weights(df, w + i);
    a00 = hn::MulAdd(w0v, x0v, a00);
    if constexpr (T > 1) a01 = hn::MulAdd(w0v, x1v, a01);
    if constexpr (R > 1) {
      const auto w1v = load_weights(df, w1 + i);
      a10 = hn::MulAdd(w1v, x0v, a10);
      if constexpr (T > 1) a11 = hn::MulAdd(w1v, x1v, a11);
    }
    if constexpr (R > 2) {
      const auto w2v = load_weights(df, w2 + i);
      a20 = hn::MulAdd(w2v, x0v, a20);
      if constexpr (T > 1) a21 = hn::MulAdd(w2v, x1v, a21);
    }
    if constexpr (R > 3) {
      const auto w3v = load_weights(df, w3 + i);
      a30 = hn::MulAdd(w3v, x0v, a30);
      if constexpr (T > 1) a31 = hn::MulAdd(w3v, x1v, a31);
    }
  }
  const decltype(a00) acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float tail = 0.0f;
      for (size_t j = i; j < n; ++j) tail += to_f32(w[r * w_stride + j]) * x[t * x_stride + j];
      out[r * out_stride + t] = hn::GetLane(hn::SumOfLanes(df, acc[r][t])) + tail;
    }
  }
}

template <typename W>
void tile_dispatch(const W* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
                   size_t n, float* out, size_t out_stride) {
  // Up to 4 rows x 2 tokens per call: 8 accumulators, 2 activation and 1 weight vector fit the
  // 16 registers of AVX2.
  for (int r0 = 0; r0 < rows; r0 += 4) {
    const int nr = rows - r0 < 4 ? rows - r0 : 4;
    const W* wr = w + static_cast<size_t>(r0) * w_stride;
    if (toks == 1 && r0 + 32 < rows) {
      // Decode streams the matrix once: ask for the rows 8 tiles (32 rows) ahead now.
      const char* ahead = reinterpret_cast<const char*>(wr + 32 * w_stride);
      const size_t bytes = 4 * w_stride * sizeof(W);
      for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(ahead + b);
    }
    for (int t0 = 0; t0 < toks; t0 += 2) {
      const float* xt = x + static_cast<size_t>(t0) * x_stride;
      float* o = out + static_cast<size_t>(r0) * out_stride + t0;
      const bool two = toks - t0 >= 2;
      switch (nr * 2 + (two ? 1 : 0)) {
        case 2:
          tile_impl<1, 1>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        case 3:
          tile_impl<1, 2>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        case 4:
          tile_impl<2, 1>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        case 5:
          tile_impl<2, 2>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        case 6:
          tile_impl<3, 1>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        case 7:
          tile_impl<3, 2>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        case 8:
          tile_impl<4, 1>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
        default:
          tile_impl<4, 2>(wr, w_stride, xt, x_stride, n, o, out_stride);
          break;
      }
    }
  }
}

void TileF32(const void* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
             size_t n, float* out, size_t out_stride) {
  tile_dispatch(static_cast<const float*>(w), w_stride, rows, x, x_stride, toks, n, out,
                out_stride);
}
void TileBF16(const void* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
              size_t n, float* out, size_t out_stride) {
  tile_dispatch(static_cast<const hwy::bfloat16_t*>(w), w_stride, rows, x, x_stride, toks, n, out,
                out_stride);
}
void TileF16(const void* w, size_t w_stride, int rows, const float* x, size_t x_stride, int toks,
             size_t n, float* out, size_t out_stride) {
  tile_dispatch(static_cast<const hwy::float16_t*>(w), w_stride, rows, x, x_stride, toks, n, out,
                out_stride);
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
              std::size_t x_stride, int n_tok, std::size_t n, float* out, std::size_t out_stride) {
  const std::size_t ws = w_stride / dtype_size(type);  // in elements
  switch (type) {
    case DType::F32:
      return HWY_DYNAMIC_DISPATCH(TileF32)(w, ws, n_rows, x, x_stride, n_tok, n, out, out_stride);
    case DType::BF16:
      return HWY_DYNAMIC_DISPATCH(TileBF16)(w, ws, n_rows, x, x_stride, n_tok, n, out, out_stride);
    case DType::F16:
      return HWY_DYNAMIC_DISPATCH(TileF16)(w, ws, n_rows, x, x_stride, n_tok, n, out, out_stride);
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
