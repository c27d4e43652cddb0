// Plain-loop implementations of the small transformer ops (see ops.h for the formulas);
// attend_group itself is attention.cpp's (vectorized), attend_group_plain its reference here;
// likewise softmax (softmax.cpp) and softmax_plain, silu_mul (silu.cpp) and silu_mul_plain.
#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/dot.h"
#include "kernels/exp.h"

namespace ls::kernels {

void rmsnorm(const float* x, const float* w, std::size_t n, float eps, float* out) {
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] * inv * w[i];
}

void rope_angles(std::size_t pos, std::span<const double> inv_freq, double factor, float* cos_out,
                 float* sin_out) {
  for (std::size_t i = 0; i < inv_freq.size(); ++i) {
    const double angle = static_cast<double>(pos) * inv_freq[i];
    cos_out[i] = static_cast<float>(std::cos(angle) * factor);
    sin_out[i] = static_cast<float>(std::sin(angle) * factor);
  }
}

void rope_neox(float* x, std::size_t n_heads, std::size_t head_dim, const float* cos,
               const float* sin) {
  const std::size_t half = head_dim / 2;
  for (std::size_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (std::size_t i = 0; i < half; ++i) {
      const float x1 = v[i], x2 = v[i + half];
      v[i] = x1 * cos[i] - x2 * sin[i];
      v[i + half] = x2 * cos[i] + x1 * sin[i];
    }
  }
}

void softmax_plain(std::span<float> x) {
  if (x.empty()) return;
  const float mx = *std::max_element(x.begin(), x.end());
  if (mx == -std::numeric_limits<float>::infinity()) {  // nothing allowed: uniform would lie
    std::fill(x.begin(), x.end(), 0.0f);
    return;
  }
  for (float& v : x) v = exp_f32(v - mx);
  double part[kSoftmaxParts] = {};  // element i adds into part[i % kSoftmaxParts], in order
  for (std::size_t i = 0; i < x.size(); ++i) part[i % kSoftmaxParts] += x[i];
  const auto inv = static_cast<float>(1.0 / softmax_sum_parts(part));
  for (float& v : x) v *= inv;
}

void silu_mul_plain(const float* gate, const float* up, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + exp_f32(-g)) * up[i];
  }
}

namespace {

// One cache row as float32: F32 rows are used in place, F16/BF16 rows widened into buf.
const float* load_row(const std::uint8_t* row, DType type, std::size_t n, float* buf) {
  if (type == DType::F32) return reinterpret_cast<const float*>(row);
  const auto* h = reinterpret_cast<const std::uint16_t*>(row);
  if (type == DType::BF16)
    for (std::size_t i = 0; i < n; ++i) buf[i] = bf16_to_f32(h[i]);
  else
    for (std::size_t i = 0; i < n; ++i) buf[i] = f16_to_f32(h[i]);
  return buf;
}

}  // namespace

void attend_group_plain(const float* q, std::size_t group, const KvRows& k_rows,
                        const KvRows& v_rows, DType cache_type, std::size_t n_ctx,
                        std::size_t head_dim, float scale, float* scratch, float* out) {
  float* scores = scratch;                // [group][n_ctx]
  float* kbuf = scratch + group * n_ctx;  // [head_dim]
  float* vbuf = kbuf + head_dim;          // [head_dim]
  for (std::size_t p = 0; p < n_ctx; ++p) {
    const float* k = load_row(k_rows.row(p), cache_type, head_dim, kbuf);
    for (std::size_t g = 0; g < group; ++g)
      scores[g * n_ctx + p] = dot_f32(k, q + g * head_dim, head_dim) * scale;
  }
  for (std::size_t g = 0; g < group; ++g) softmax_plain({scores + g * n_ctx, n_ctx});
  std::fill(out, out + group * head_dim, 0.0f);
  for (std::size_t p = 0; p < n_ctx; ++p) {
    const float* v = load_row(v_rows.row(p), cache_type, head_dim, vbuf);
    for (std::size_t g = 0; g < group; ++g) {
      const float a = scores[g * n_ctx + p];
      float* o = out + g * head_dim;
      for (std::size_t i = 0; i < head_dim; ++i) o[i] += a * v[i];
    }
  }
}

void store_row(const float* x, std::size_t n, DType type, std::uint8_t* out) {
  if (type == DType::F32) {
    std::memcpy(out, x, n * sizeof(float));
    return;
  }
  auto* h = reinterpret_cast<std::uint16_t*>(out);
  if (type == DType::BF16)
    for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(x[i]);
  else
    for (std::size_t i = 0; i < n; ++i) h[i] = f32_to_f16(x[i]);
}

}  // namespace ls::kernels
