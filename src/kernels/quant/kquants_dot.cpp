// Scalar dot products of the formats added after the first four (Q5_0, Q5_1, Q4_1, IQ4_NL with
// Q8_0 activations; Q5_K, Q3_K, Q2_K with Q8_K): bit-exact executions of the accumulation models
// written in quant_internal.h, which the AVX2 tiles reproduce, and the double-precision
// references (the same exact integer block sums, scaled and summed in double).
#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

namespace ls::kernels::quant_detail {
namespace {

float f16_field(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

bool has_min(DType t) {
  return t == DType::Q5_1 || t == DType::Q4_1;
}

// Exact integer sums of one 32-element block pair: s = sum qw * qx, t = sum qx.
void block_sums_32(DType t, const std::uint8_t* w, const std::uint8_t* x, int* s, int* tx) {
  int q[32];
  levels_32(t, w, q);
  const auto* qx = reinterpret_cast<const std::int8_t*>(x + 2);
  int a = 0, b = 0;
  for (int e = 0; e < 32; ++e) {
    a += q[e] * qx[e];
    b += qx[e];
  }
  *s = a;
  *tx = b;
}

float dot_32_scalar(DType t, const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(t), bx = sizeof(BlockQ8_0);
  const bool min = has_min(t);
  float lanes[8] = {};
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    const std::uint8_t* xb = xq + b * bx;
    int s, tx;
    block_sums_32(t, wb, xb, &s, &tx);
    const float dx = f16_field(xb);
    float& lane = lanes[b % 8];
    lane = std::fma(static_cast<float>(s), f16_field(wb) * dx, lane);
    if (min) lane = std::fma(static_cast<float>(tx), f16_field(wb + 2) * dx, lane);
  }
  return sum_lanes(lanes);
}

double dot_32_ref(DType t, const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(t), bx = sizeof(BlockQ8_0);
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    const std::uint8_t* xb = xq + b * bx;
    int s, tx;
    block_sums_32(t, wb, xb, &s, &tx);
    const double dx = f16_field(xb);
    sum += double{f16_field(wb)} * dx * s;
    if (has_min(t)) sum += double{f16_field(wb + 2)} * dx * tx;
  }
  return sum;
}

// Exact integer sums of one K-quant block pair: isum (scaled by d) and msum (by dmin; 0 for Q3_K).
void block_sums_k(DType t, const std::uint8_t* w, const BlockQ8_K& x, int* isum, int* msum) {
  int is = 0, ms = 0;
  if (t == DType::Q5_K) {
    BlockQ5_K b;
    std::memcpy(&b, w, sizeof b);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(b.scales, j, &sc, &m);
      const int g = j / 2, h = j % 2;
      int s = 0;
      for (int l = 0; l < 32; ++l) {
        const int q = ((b.qs[32 * g + l] >> (4 * h)) & 0x0F) | (((b.qh[l] >> j) & 1) << 4);
        s += q * x.qs[32 * j + l];
      }
      is += sc * s;
      ms += m * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
    }
  } else {
    // Q3_K and Q2_K: 16 sub-blocks of 16; element e = 128h + 32j + l has its 2 low bits in
    // byte 32h + l of qs at bit 2j.
    const std::size_t qs_at = t == DType::Q3_K ? offsetof(BlockQ3_K, qs) : offsetof(BlockQ2_K, qs);
    const std::uint8_t* qs = w + qs_at;
    for (int k = 0; k < 16; ++k) {
      int s = 0;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * k + i;
        int q = (qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
        if (t == DType::Q3_K && ((w[e % 32] >> (e / 32)) & 1) == 0) q -= 4;  // hmask first
        s += q * x.qs[e];
      }
      if (t == DType::Q3_K) {
        const std::uint8_t* sc = w + offsetof(BlockQ3_K, scales);
        const int lo = k < 8 ? sc[k] & 0x0F : sc[k - 8] >> 4;
        is += ((lo | (((sc[8 + k % 4] >> (2 * (k / 4))) & 3) << 4)) - 32) * s;
      } else {
        const std::uint8_t sm = w[offsetof(BlockQ2_K, scales) + k];
        is += (sm & 0x0F) * s;
        ms += (sm >> 4) * x.bsums[k];
      }
    }
  }
  *isum = is;
  *msum = ms;
}

// Where a K-quant block keeps its f16 d and dmin.
std::size_t d_at(DType t) {
  return t == DType::Q5_K ? 0 : t == DType::Q3_K ? offsetof(BlockQ3_K, d) : offsetof(BlockQ2_K, d);
}

float dot_k_scalar(DType t, const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(t);
  float a = 0.0f, m = 0.0f;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    BlockQ8_K xb;
    std::memcpy(&xb, xq + b * sizeof xb, sizeof xb);
    int isum, msum;
    block_sums_k(t, wb, xb, &isum, &msum);
    a = std::fma(static_cast<float>(isum), xb.d * f16_field(wb + d_at(t)), a);
    if (t != DType::Q3_K)
      m = std::fma(static_cast<float>(msum), xb.d * f16_field(wb + d_at(t) + 2), m);
  }
  return t == DType::Q3_K ? a : a - m;
}

double dot_k_ref(DType t, const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(t);
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    BlockQ8_K xb;
    std::memcpy(&xb, xq + b * sizeof xb, sizeof xb);
    int isum, msum;
    block_sums_k(t, wb, xb, &isum, &msum);
    double v = double{f16_field(wb + d_at(t))} * isum;
    if (t != DType::Q3_K) v -= double{f16_field(wb + d_at(t) + 2)} * msum;
    sum += double{xb.d} * v;
  }
  return sum;
}

}  // namespace

float dot_more_scalar(DType t, const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  if (is_32_more(t)) return dot_32_scalar(t, w, xq, nb);
  if (is_k_more(t)) return dot_k_scalar(t, w, xq, nb);
  fail("dot_more_scalar: {} is not one of the added formats", dtype_name(t));
}

double dot_more_ref(DType t, const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  if (is_32_more(t)) return dot_32_ref(t, w, xq, nb);
  if (is_k_more(t)) return dot_k_ref(t, w, xq, nb);
  fail("dot_more_ref: {} is not one of the added formats", dtype_name(t));
}

}  // namespace ls::kernels::quant_detail
