// The element-wise and small reductions of a transformer layer, over plain float32 arrays:
// RMSNorm, rotary position embedding (NeoX rotate-half layout), softmax, SiLU-and-multiply and
// attention of one query head over a KV cache. Written as the reference formulas in plain
// loops; the compiler vectorizes them and they are a small share of the time (matmul dominates).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"

namespace ls::kernels {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]  (the sum of squares in double)
void rmsnorm(const float* x, const float* w, std::size_t n, float eps, float* out);

// Angles for one position: cos/sin[i] = cos/sin(pos * inv_freq[i]) * factor for each pair i
// (inv_freq[i] = theta^(-2i/head_dim) by default; YaRN blends them and sets the factor),
// computed in double and rounded once.
void rope_angles(std::size_t pos, std::span<const double> inv_freq, double factor, float* cos_out,
                 float* sin_out);

// Rotates each of n_heads vectors of head_dim in place: x1' = x1 cos - x2 sin,
// x2' = x2 cos + x1 sin, with x1 the first half and x2 the second half (rotate_half).
void rope_neox(float* x, std::size_t n_heads, std::size_t head_dim, const float* cos,
               const float* sin);

// In place: x = exp(x - max) / sum, with exp_f32 (exp.h) and the sum in double
// (softmax_sum_parts). -inf entries get probability 0. softmax is vectorized (softmax.cpp),
// softmax_plain its reference.
void softmax(std::span<float> x);
void softmax_plain(std::span<float> x);
// The sum that normalizes softmax: double-precision partial sums, element i into part[i % 8] in
// index order (vector lanes: one addition chain each instead of one for all), then added as a
// tree. Both softmax and softmax_plain sum this way, so they agree bit for bit.
constexpr std::size_t kSoftmaxParts = 8;
inline double softmax_sum_parts(const double* part) {
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)), with exp_f32 (exp.h).
// silu_mul is vectorized (silu.cpp), silu_mul_plain its reference.
void silu_mul(const float* gate, const float* up, std::size_t n, float* out);
void silu_mul_plain(const float* gate, const float* up, std::size_t n, float* out);

// Greedy decoding's argmax in two vector passes (argmax.cpp): max_not_nan = the largest of
// x[0, n) that is not NaN (-inf when there is none), first_equal = the first i with x[i] == v
// (n when there is none; -0 equals +0).
float max_not_nan(const float* x, std::size_t n);
// How many of x[0, n) are NaN or +inf (no ordering, no softmax) and how many are -inf (removed
// tokens), by their bits, in vectors: the decoding stages' input checks.
void count_special(const float* x, std::size_t n, std::size_t* nan_or_inf, std::size_t* neg_inf);
std::size_t first_equal(const float* x, std::size_t n, float v);
// out[i] = float(double(x[i]) / t), the bits of that division, in vectors (divide.cpp); out
// may be x.
void divide_to_float(const float* x, std::size_t n, double t, float* out);

// The rows of one layer's keys (or values) of a KV cache kept in blocks of positions: row p
// starts at blocks[p / block_rows] + offset + (p % block_rows) * row_bytes. A contiguous cache is
// one block of n_ctx rows.
struct KvRows {
  const std::uint8_t* const* blocks;
  std::size_t block_rows;
  std::size_t row_bytes;
  std::size_t offset;
  const std::uint8_t* row(std::size_t p) const {
    return blocks[p / block_rows] + offset + (p % block_rows) * row_bytes;
  }
};

// Attention of the `group` query heads that share one KV head, over positions [0, n_ctx) of
// the cache rows `k` and `v` (each row starting at that KV head's head_dim elements of F32, F16
// or BF16): out_g = softmax(q_g . K^T * scale) V for each head g. Each key and value row is
// read (and widened) once for the whole group, in position order whatever the blocks. q and
// out hold group * head_dim floats; scratch holds group * (n_ctx + 2 * head_dim) floats.
void attend_group(const float* q, std::size_t group, const KvRows& k, const KvRows& v,
                  DType cache_type, std::size_t n_ctx, std::size_t head_dim, float scale,
                  float* scratch, float* out);
// The same in plain loops (each key row widened into scratch, then dot_f32): the reference the
// vectorized attend_group (attention.cpp) equals bit for bit on every CPU.
void attend_group_plain(const float* q, std::size_t group, const KvRows& k, const KvRows& v,
                        DType cache_type, std::size_t n_ctx, std::size_t head_dim, float scale,
                        float* scratch, float* out);

// Converts n float32 values to a cache row of type F32, F16 or BF16 (round to nearest even).
void store_row(const float* x, std::size_t n, DType type, std::uint8_t* out);

}  // namespace ls::kernels
