// Quantized dot products: the scalar implementations (bit-exact executions of the accumulation
// model in quant_internal.h, so the AVX2 path must reproduce them), the double-precision
// reference, argument checks, and the run-time choice between scalar and AVX2.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

namespace ls::kernels {
namespace {

using namespace quant_detail;

template <typename Block>
Block load_block(const std::uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

// Exact integer sum of one 32-element block pair.
int block_sum_q8_0(const BlockQ8_0& w, const BlockQ8_0& x) {
  int s = 0;
  for (int j = 0; j < 32; ++j) s += w.qs[j] * x.qs[j];
  return s;
}
int block_sum_q4_0(const BlockQ4_0& w, const BlockQ8_0& x) {
  int s = 0;
  for (int j = 0; j < 16; ++j)
    s += ((w.qs[j] & 0x0F) - 8) * x.qs[j] + ((w.qs[j] >> 4) - 8) * x.qs[j + 16];
  return s;
}

// Exact integer sums of one 256-element block pair: isum (scaled by d) and msum (by dmin).
void block_sums_q4_k(const BlockQ4_K& w, const BlockQ8_K& x, int* isum, int* msum) {
  int is = 0, ms = 0;
  for (int g = 0; g < 4; ++g) {
    int sc0, m0, sc1, m1;
    q4_k_scale_min(w.scales, 2 * g, &sc0, &m0);
    q4_k_scale_min(w.scales, 2 * g + 1, &sc1, &m1);
    int s0 = 0, s1 = 0;
    for (int l = 0; l < 32; ++l) {
      s0 += (w.qs[32 * g + l] & 0x0F) * x.qs[64 * g + l];
      s1 += (w.qs[32 * g + l] >> 4) * x.qs[64 * g + 32 + l];
    }
    is += sc0 * s0 + sc1 * s1;
    ms +=
        m0 * (x.bsums[4 * g] + x.bsums[4 * g + 1]) + m1 * (x.bsums[4 * g + 2] + x.bsums[4 * g + 3]);
  }
  *isum = is;
  *msum = ms;
}
int block_sum_q6_k(const BlockQ6_K& w, const BlockQ8_K& x) {
  int total = 0;
  for (int h = 0; h < 2; ++h) {
    const std::uint8_t* ql = w.ql + 64 * h;
    const std::uint8_t* qh = w.qh + 32 * h;
    const std::int8_t* y = x.qs + 128 * h;
    int sub[8] = {};
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      sub[s] += (((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32) * y[l];
      sub[s + 2] += (((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32) * y[l + 32];
      sub[s + 4] += (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * y[l + 64];
      sub[s + 6] += (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * y[l + 96];
    }
    for (int j = 0; j < 8; ++j) total += w.scales[8 * h + j] * sub[j];
  }
  return total;
}

template <typename WBlock, int (*kSum)(const WBlock&, const BlockQ8_0&), int (*kLane)(int)>
float dot_32_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  float lanes[8] = {};
  for (std::size_t c = 0; c < nb; c += 8) {
    for (int k = 0; k < 8; ++k) {
      float s = 0.0f, scale = 0.0f;  // padding past the last block
      if (c + k < nb) {
        const auto wb = load_block<WBlock>(w + (c + k) * sizeof(WBlock));
        const auto xb = load_block<BlockQ8_0>(xq + (c + k) * sizeof(BlockQ8_0));
        s = static_cast<float>(kSum(wb, xb));
        scale = f16_to_f32(wb.d) * f16_to_f32(xb.d);
      }
      float& lane = lanes[kLane(k)];
      lane = std::fma(s, scale, lane);
    }
  }
  return sum_lanes(lanes);
}

float dot_q4_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  float a = 0.0f, m = 0.0f;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<BlockQ4_K>(w + b * sizeof(BlockQ4_K));
    const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
    int isum, msum;
    block_sums_q4_k(wb, xb, &isum, &msum);
    a = std::fma(static_cast<float>(isum), xb.d * f16_to_f32(wb.d), a);
    m = std::fma(static_cast<float>(msum), xb.d * f16_to_f32(wb.dmin), m);
  }
  return a - m;
}

float dot_q6_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  float a = 0.0f;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<BlockQ6_K>(w + b * sizeof(BlockQ6_K));
    const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
    a = std::fma(static_cast<float>(block_sum_q6_k(wb, xb)), xb.d * f16_to_f32(wb.d), a);
  }
  return a;
}

// Checks a dot product's arguments; returns the number of blocks.
std::size_t check_dot(DType weight, std::size_t n, const char* what) {
  if (weight != DType::Q8_0 && weight != DType::Q4_0 && weight != DType::Q4_K &&
      weight != DType::Q6_K && !is_more(weight))
    fail(
        "{}: expected a weight block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, "
        "Q4_K, Q5_K, Q6_K), got {}",
        what, dtype_name(weight));
  const std::size_t block = dtype_block_elems(weight);
  if (n % block != 0)
    fail("{}: {} weights come in blocks of {}, but the row has {} elements", what,
         dtype_name(weight), block, n);
  return n / block;
}

void check_activation(DType act, std::size_t n, const char* what) {
  if (act != DType::Q8_0 && act != DType::Q8_K)
    fail("{}: expected an activation format (Q8_0 or Q8_K), got {}", what, dtype_name(act));
  const std::size_t block = dtype_block_elems(act);
  if (n % block != 0)
    fail("{}: {} activations come in blocks of {}, but the row has {} elements", what,
         dtype_name(act), block, n);
}

// LS_QUANT_SIMD=scalar forces the scalar path, LS_QUANT_SIMD=avx2 the AVX2 one on CPUs with
// AVX-512 VNNI (for tests and comparisons; all give the same bits).
std::string_view quant_simd_env() {
  const char* env = std::getenv("LS_QUANT_SIMD");
  return env == nullptr ? "" : env;
}

bool use_avx2() {
  static const bool chosen = quant_simd_env() != "scalar" && avx2_supported();
  return chosen;
}

bool use_vnni() {
  static const bool chosen = use_avx2() && quant_simd_env() != "avx2" && avx512_vnni_supported();
  return chosen;
}

// Q8_0 tiles of 2 or more tokens take the VNNI kernel where there is one: it transposes each
// weight chunk once for all tokens, which does not pay for a single token. Q4_K, Q5_K, Q6_K, Q5_0,
// Q5_1 and Q4_1 rows take their AVX-512 tiles of 8 rows on the same CPUs for 2 or more tokens.
void tile_simd(DType weight, const std::uint8_t* w, std::size_t w_stride, int n_rows,
               const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n, float* out,
               std::size_t out_stride) {
  if (weight == DType::Q8_0 && n_tok >= 2 && use_vnni()) {
    dot_tile_q8_0_vnni(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
    return;
  }
  // Not decode: one token reads 8 rows side by side (8 short streams) for little work per byte,
  // which even with the next group prefetched ran 1.4-1.8x slower than the AVX2 tile's single
  // stream, row after row (Q6_K, 1.5B shape, AMD EPYC Zen 4: 11-12 against 16-21 tok/s).
  const bool row_groups = weight == DType::Q4_K || weight == DType::Q5_K || weight == DType::Q6_K ||
                          weight == DType::Q5_0 || weight == DType::Q5_1 || weight == DType::Q4_1;
  if (row_groups && n_rows >= 8 && n_tok >= 2 && use_vnni()) {  // groups of 8, then the rest
    const int done =
        weight == DType::Q4_K
            ? dot_tile_q4_k_avx512(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride)
        : weight == DType::Q5_K
            ? dot_tile_q5_k_avx512(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride)
        : weight == DType::Q6_K
            ? dot_tile_q6_k_avx512(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride)
            : dot_tile_32_avx512(weight, w, w_stride, n_rows, xq, x_stride, n_tok, n, out,
                                 out_stride);
    w += done * w_stride;
    out += done * out_stride;
    n_rows -= done;
    if (n_rows == 0) return;
  }
  dot_tile_avx2(weight, w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
}

}  // namespace

namespace quant_detail {
bool simd_avx2() {
  return use_avx2();
}
bool simd_vnni() {
  return use_vnni();
}
}  // namespace quant_detail

float dot_quantized_scalar(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                           std::size_t n) {
  const std::size_t nb = check_dot(weight, n, "dot_quantized");
  if (is_more(weight)) return dot_more_scalar(weight, w, xq, nb);
  switch (weight) {
    case DType::Q8_0:
      return dot_32_scalar<BlockQ8_0, block_sum_q8_0, q8_0_lane>(w, xq, nb);
    case DType::Q4_0:
      return dot_32_scalar<BlockQ4_0, block_sum_q4_0, q4_0_lane>(w, xq, nb);
    case DType::Q4_K:
      return dot_q4_k_scalar(w, xq, nb);
    default:
      return dot_q6_k_scalar(w, xq, nb);
  }
}

double dot_quantized_ref(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                         std::size_t n) {
  const std::size_t nb = check_dot(weight, n, "dot_quantized_ref");
  if (is_more(weight)) return dot_more_ref(weight, w, xq, nb);
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    switch (weight) {
      case DType::Q8_0: {
        const auto wb = load_block<BlockQ8_0>(w + b * sizeof(BlockQ8_0));
        const auto xb = load_block<BlockQ8_0>(xq + b * sizeof(BlockQ8_0));
        sum += double{f16_to_f32(wb.d)} * f16_to_f32(xb.d) * block_sum_q8_0(wb, xb);
        break;
      }
      case DType::Q4_0: {
        const auto wb = load_block<BlockQ4_0>(w + b * sizeof(BlockQ4_0));
        const auto xb = load_block<BlockQ8_0>(xq + b * sizeof(BlockQ8_0));
        sum += double{f16_to_f32(wb.d)} * f16_to_f32(xb.d) * block_sum_q4_0(wb, xb);
        break;
      }
      case DType::Q4_K: {
        const auto wb = load_block<BlockQ4_K>(w + b * sizeof(BlockQ4_K));
        const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
        int isum, msum;
        block_sums_q4_k(wb, xb, &isum, &msum);
        sum +=
            double{xb.d} * (double{f16_to_f32(wb.d)} * isum - double{f16_to_f32(wb.dmin)} * msum);
        break;
      }
      default: {
        const auto wb = load_block<BlockQ6_K>(w + b * sizeof(BlockQ6_K));
        const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
        sum += double{xb.d} * f16_to_f32(wb.d) * block_sum_q6_k(wb, xb);
        break;
      }
    }
  }
  return sum;
}

float dot_quantized(DType weight, const std::uint8_t* w, const std::uint8_t* xq, std::size_t n) {
  if (!use_avx2()) return dot_quantized_scalar(weight, w, xq, n);
  check_dot(weight, n, "dot_quantized");
  float out;
  dot_tile_avx2(weight, w, 0, 1, xq, 0, 1, n, &out, 1);
  return out;
}

void dot_quantized_tile(DType weight, const std::uint8_t* w, std::size_t w_stride, int n_rows,
                        const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        float* out, std::size_t out_stride) {
  check_dot(weight, n, "dot_quantized_tile");
  if (n_rows < 0 || n_tok < 0)
    fail("dot_quantized_tile: expected non-negative rows and tokens, got {} x {}", n_rows, n_tok);
  if (use_avx2()) {
    tile_simd(weight, w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
    return;
  }
  for (int r = 0; r < n_rows; ++r)
    for (int t = 0; t < n_tok; ++t)
      out[r * out_stride + t] =
          dot_quantized_scalar(weight, w + r * w_stride, xq + t * x_stride, n);
}

void quantize_activations_scalar(DType act, const float* x, std::uint8_t* out, std::size_t n) {
  check_activation(act, n, "quantize_activations");
  quantize_row(act, x, out, n);
}

void quantize_activations(DType act, const float* x, std::uint8_t* out, std::size_t n) {
  check_activation(act, n, "quantize_activations");
  if (use_avx2())
    quantize_activations_avx2(act, x, out, n);
  else
    quantize_row(act, x, out, n);
}

const char* quant_simd_name() {
  return use_vnni()   ? "avx512vnni (Q8_0, Q5_0, Q5_1, Q4_1 tiles; Q4_K, Q5_K, Q6_K), avx2"
         : use_avx2() ? "avx2"
                      : "scalar";
}

}  // namespace ls::kernels
