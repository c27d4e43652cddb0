// The BF16 x BF16 dot (bf16_dot.h): its scalar definition, the activation rounding, and the
// choice of path at run time (AVX512_BF16, else AVX2, else scalar; LS_BF16_SIMD=avx2|scalar
// caps it, so that every path can be run on one machine).
#include "kernels/bf16_dot.h"

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "core/dtype.h"
#include "kernels/cpu_info.h"
#include "kernels/x86/bf16_dot_simd.h"

namespace ls::kernels {

namespace {

float flush_denormal(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}

// a * b + c rounded once, denormal inputs read as zero; a result that is tiny before rounding
// (x86 detects underflow before rounding) becomes a zero of its sign.
float fma_daz_ftz(float a, float b, float c) {
  a = flush_denormal(a), b = flush_denormal(b), c = flush_denormal(c);
  const float r = std::fma(a, b, c);
  const double exact = std::fma(static_cast<double>(a), static_cast<double>(b),
                                static_cast<double>(c));  // exact enough near FLT_MIN
  if (std::fabs(r) < FLT_MIN || (std::fabs(r) == FLT_MIN && std::fabs(exact) < FLT_MIN))
    return std::copysign(0.0f, r);
  return r;
}

std::string_view bf16_simd_env() {
  const char* env = std::getenv("LS_BF16_SIMD");
  return env == nullptr ? "" : env;
}

bool has_feature(const char* name) {
  for (const auto& f : cpu_features())
    if (f == name) return true;
  return false;
}

bool cpu_has_avx512bf16() {
  static const bool ok = has_feature("avx512bf16") && has_feature("avx512bw");
  return ok;
}
bool cpu_has_avx2() {
  static const bool ok = has_feature("avx2") && has_feature("fma");
  return ok;
}

void tile_scalar(const std::uint16_t* w, std::size_t w_stride, int n_rows, const std::uint16_t* x,
                 std::size_t x_stride, int n_tok, std::size_t n, float* out,
                 std::size_t out_stride) {
  for (int r = 0; r < n_rows; ++r)
    for (int t = 0; t < n_tok; ++t)
      out[r * out_stride + t] = bf16_dot_scalar(w + r * w_stride, x + t * x_stride, n);
}

}  // namespace

void round_to_bf16(const float* x, std::uint16_t* out, std::size_t n) {
  if (std::string_view(bf16_dot_kernel()) != "scalar")
    return bf16_detail::round_to_bf16_avx2(x, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

float bf16_dot_scalar(const std::uint16_t* w, const std::uint16_t* x, std::size_t n) {
  float acc[16] = {};
  for (std::size_t i = 0; i < n; i += 32) {
    for (std::size_t j = 0; j < 16; ++j) {
      for (const std::size_t k : {i + 2 * j + 1, i + 2 * j}) {  // the odd element first
        const float a = k < n ? bf16_to_f32(w[k]) : 0.0f;
        const float b = k < n ? bf16_to_f32(x[k]) : 0.0f;
        acc[j] = fma_daz_ftz(a, b, acc[j]);
      }
    }
  }
  return bf16_detail::sum_tree16(acc);
}

const char* bf16_dot_kernel() {
  static const char* chosen = [] {
    const std::string_view env = bf16_simd_env();
    if (env == "scalar") return "scalar";
    if (env != "avx2" && cpu_has_avx512bf16()) return "avx512bf16";
    return cpu_has_avx2() ? "avx2" : "scalar";
  }();
  return chosen;
}

bool bf16_dot_tile_with(const char* kernel, const std::uint16_t* w, std::size_t w_stride,
                        int n_rows, const std::uint16_t* x, std::size_t x_stride, int n_tok,
                        std::size_t n, float* out, std::size_t out_stride) {
  const std::string_view k = kernel;
  if (k == "avx512bf16" && cpu_has_avx512bf16())
    bf16_detail::tile_avx512bf16(w, w_stride, n_rows, x, x_stride, n_tok, n, out, out_stride);
  else if (k == "avx2" && cpu_has_avx2())
    bf16_detail::tile_avx2(w, w_stride, n_rows, x, x_stride, n_tok, n, out, out_stride);
  else if (k == "scalar")
    tile_scalar(w, w_stride, n_rows, x, x_stride, n_tok, n, out, out_stride);
  else
    return false;
  return true;
}

void bf16_dot_tile(const std::uint16_t* w, std::size_t w_stride, int n_rows, const std::uint16_t* x,
                   std::size_t x_stride, int n_tok, std::size_t n, float* out,
                   std::size_t out_stride) {
  bf16_dot_tile_with(bf16_dot_kernel(), w, w_stride, n_rows, x, x_stride, n_tok, n, out,
                     out_stride);
}

}  // namespace ls::kernels
