// The entry points of quant.h: argument checks, then each type's functions from its row of the
// traits table (quant/traits.h), and the run-time choice between the scalar functions (quant/)
// and the x86 kernels (x86/), which give the same bits.
#include "kernels/quant.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "kernels/quant/detail.h"
#include "kernels/quant/traits.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels {
namespace {

using namespace quant_detail;

constexpr const char* kWeightTypes =
    "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";

void check_row(DType type, std::size_t n, const char* what) {
  const std::size_t block = dtype_block_elems(type);
  if (n % block != 0)
    fail("{}: {} stores elements in blocks of {}, but the row has {} elements", what,
         dtype_name(type), block, n);
}

// Checks a dot product's arguments; returns the weight type's row.
const QuantTraits& check_dot(DType weight, std::size_t n, const char* what) {
  const QuantTraits* q = find_quant_traits(weight);
  if (q == nullptr || !q->is_weight())
    fail("{}: expected a weight block format ({}), got {}", what, kWeightTypes, dtype_name(weight));
  const std::size_t block = dtype_block_elems(weight);
  if (n % block != 0)
    fail("{}: {} weights come in blocks of {}, but the row has {} elements", what,
         dtype_name(weight), block, n);
  return *q;
}

const QuantTraits& check_activation(DType act, std::size_t n, const char* what) {
  const QuantTraits* q = find_quant_traits(act);
  if (q == nullptr || !q->is_activation())
    fail("{}: expected an activation format (Q8_0 or Q8_K), got {}", what, dtype_name(act));
  const std::size_t block = dtype_block_elems(act);
  if (n % block != 0)
    fail("{}: {} activations come in blocks of {}, but the row has {} elements", what,
         dtype_name(act), block, n);
  return *q;
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

// The AVX2 tiles, tokens in groups of up to 4: each weight block is loaded and unpacked once per
// group.
void tile_avx2(const QuantTraits& q, const std::uint8_t* w, std::size_t w_stride, int n_rows,
               const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n, float* out,
               std::size_t out_stride) {
  const std::size_t nb = n / dtype_block_elems(q.type);
  for (int t0 = 0; t0 < n_tok; t0 += 4) {
    const int nt = n_tok - t0 < 4 ? n_tok - t0 : 4;
    const std::uint8_t* xrows[4];
    for (int t = 0; t < nt; ++t) xrows[t] = xq + (t0 + t) * x_stride;
    q.tile_avx2(w, w_stride, n_rows, xrows, nt, nb, out + t0, out_stride);
  }
}

// Q8_0 tiles of 2 or more tokens take the VNNI kernel where there is one: it transposes each
// weight chunk once for all tokens, which does not pay for a single token. Q4_K, Q5_K, Q6_K, Q5_0,
// Q5_1 and Q4_1 rows take their AVX-512 tiles of 8 rows on the same CPUs for 2 or more tokens.
void tile_simd(const QuantTraits& q, const std::uint8_t* w, std::size_t w_stride, int n_rows,
               const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n, float* out,
               std::size_t out_stride) {
  if (q.tile_vnni != nullptr && n_tok >= 2 && use_vnni()) {
    q.tile_vnni(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
    return;
  }
  // Not decode: one token reads 8 rows side by side (8 short streams) for little work per byte,
  // which even with the next group prefetched ran 1.4-1.8x slower than the AVX2 tile's single
  // stream, row after row (Q6_K, 1.5B shape, AMD EPYC Zen 4: 11-12 against 16-21 tok/s).
  if (q.rows8_avx512 != nullptr && n_rows >= 8 && n_tok >= 2 && use_vnni()) {
    const int done = q.rows8_avx512(w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
    w += done * w_stride;
    out += done * out_stride;
    n_rows -= done;
    if (n_rows == 0) return;
  }
  tile_avx2(q, w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
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

void quantize_row(DType type, const float* x, std::uint8_t* out, std::size_t n) {
  const QuantTraits* q = find_quant_traits(type);
  if (q == nullptr)
    fail("quantize_row: expected a block format ({}, Q8_K), got {}", kWeightTypes,
         dtype_name(type));
  check_row(type, n, "quantize_row");
  q->quantize(x, out, n / dtype_block_elems(type));
}

void dequantize_row(DType type, const std::uint8_t* in, float* out, std::size_t n) {
  check_row(type, n, "dequantize_row");
  if (type == DType::F32) {
    std::memcpy(out, in, n * sizeof(float));
    return;
  }
  if (type == DType::F16 || type == DType::BF16) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, in + 2 * i, 2);
      out[i] = type == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    return;
  }
  const QuantTraits* q = find_quant_traits(type);
  if (q != nullptr) q->dequantize(in, out, n / dtype_block_elems(type));
}

DType dot_activation_type(DType weight) {
  const QuantTraits* q = find_quant_traits(weight);
  if (q == nullptr || !q->is_weight())
    fail("dot_activation_type: expected a weight block format ({}), got {}", kWeightTypes,
         dtype_name(weight));
  return q->activation;
}

float dot_quantized_scalar(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                           std::size_t n) {
  const QuantTraits& q = check_dot(weight, n, "dot_quantized");
  return q.dot_scalar(w, xq, n / dtype_block_elems(weight));
}

double dot_quantized_ref(DType weight, const std::uint8_t* w, const std::uint8_t* xq,
                         std::size_t n) {
  const QuantTraits& q = check_dot(weight, n, "dot_quantized_ref");
  return q.dot_ref(w, xq, n / dtype_block_elems(weight));
}

float dot_quantized(DType weight, const std::uint8_t* w, const std::uint8_t* xq, std::size_t n) {
  if (!use_avx2()) return dot_quantized_scalar(weight, w, xq, n);
  const QuantTraits& q = check_dot(weight, n, "dot_quantized");
  float out;
  tile_avx2(q, w, 0, 1, xq, 0, 1, n, &out, 1);
  return out;
}

void dot_quantized_tile(DType weight, const std::uint8_t* w, std::size_t w_stride, int n_rows,
                        const std::uint8_t* xq, std::size_t x_stride, int n_tok, std::size_t n,
                        float* out, std::size_t out_stride) {
  const QuantTraits& q = check_dot(weight, n, "dot_quantized_tile");
  if (n_rows < 0 || n_tok < 0)
    fail("dot_quantized_tile: expected non-negative rows and tokens, got {} x {}", n_rows, n_tok);
  if (use_avx2()) {
    tile_simd(q, w, w_stride, n_rows, xq, x_stride, n_tok, n, out, out_stride);
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
  const QuantTraits& q = check_activation(act, n, "quantize_activations");
  if (use_avx2())
    q.quantize_avx2(x, out, n / dtype_block_elems(act));
  else
    q.quantize(x, out, n / dtype_block_elems(act));
}

const char* quant_simd_name() {
  return use_vnni()   ? "avx512vnni (Q8_0, Q5_0, Q5_1, Q4_1 tiles; Q4_K, Q5_K, Q6_K), avx2"
         : use_avx2() ? "avx2"
                      : "scalar";
}

}  // namespace ls::kernels
