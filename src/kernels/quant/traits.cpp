// The block formats themselves: float32 -> block quantizers (GGML's reference rules for Q8_0,
// Q4_0 and Q8_K, so files match llama.cpp's byte for byte; a weighted least-squares search for
// the K-quants) and block -> float32 dequantizers, which are the definition of each format.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

namespace ls::kernels {
namespace {

using quant_detail::q4_k_scale_min;

// Round half to even (GGML's nearest_int; the default floating-point rounding mode).
int nearest(float v) {
  return static_cast<int>(std::nearbyint(v));
}

void check_row(DType type, std::size_t n, const char* what) {
  const std::size_t block = dtype_block_elems(type);
  if (n % block != 0)
    fail("{}: {} stores elements in blocks of {}, but the row has {} elements", what,
         dtype_name(type), block, n);
}

void quantize_q4_0(const float* x, BlockQ4_0* y) {
  // The signed value of largest magnitude maps to -8, so the full range -8..7 is used.
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = f32_to_f16(d);
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>(static_cast<std::int8_t>(x[j] * id + 8.5f)));
    const int hi = std::min(15, static_cast<int>(static_cast<std::int8_t>(x[j + 16] * id + 8.5f)));
    y->qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

// Q4_K sub-block fit: find scale s >= 0 and offset m <= 0 minimizing sum_i w_i (s*L_i + m - x_i)^2
// with L_i in 0..15. Start from the min/max grid, then try 21 nearby grids (inverse scales
// (15 - 1 + 0.1k) / range) and solve the weighted least squares for s and m on each, keeping
// the best. This is the idea of llama.cpp's make_qkx2_quants (same parameters), written anew.
float fit_scale_min(const float* x, const float* w, std::uint8_t* L, float* neg_min) {
  constexpr int kN = 32, kMax = 15;
  float lo = x[0], hi = x[0], sw = 0, swx = 0;
  for (int i = 0; i < kN; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sw += w[i];
    swx += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) {
    std::fill(L, L + kN, 0);
    *neg_min = -lo;
    return 0.0f;
  }
  float iscale = kMax / (hi - lo);
  float scale = 1 / iscale, min = lo, best = 0;
  for (int i = 0; i < kN; ++i) {
    L[i] = static_cast<std::uint8_t>(std::clamp(nearest(iscale * (x[i] - lo)), 0, kMax));
    const float diff = scale * L[i] + min - x[i];
    best += w[i] * diff * diff;
  }
  std::uint8_t trial[kN];
  for (int step = 0; step <= 20; ++step) {
    iscale = (-1.0f + 0.1f * step + kMax) / (hi - lo);
    float sl = 0, sll = 0, sxl = 0;
    for (int i = 0; i < kN; ++i) {
      const int l = std::clamp(nearest(iscale * (x[i] - lo)), 0, kMax);
      trial[i] = static_cast<std::uint8_t>(l);
      sl += w[i] * l;
      sll += w[i] * l * l;
      sxl += w[i] * l * x[i];
    }
    const float det = sw * sll - sl * sl;
    if (det <= 0) continue;
    float s = (sw * sxl - swx * sl) / det;
    float m = (sll * swx - sl * sxl) / det;
    if (m > 0) {  // the offset must not be positive (it is stored as a subtracted min)
      m = 0;
      s = sxl / sll;
    }
    float err = 0;
    for (int i = 0; i < kN; ++i) {
      const float diff = s * trial[i] + m - x[i];
      err += w[i] * diff * diff;
    }
    if (err < best) {
      std::memcpy(L, trial, kN);
      best = err;
      scale = s;
      min = m;
    }
  }
  *neg_min = -min;
  return scale;
}

void quantize_q4_k(const float* x, BlockQ4_K* y) {
  std::uint8_t L[256];
  float scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float s2 = 0, w[32];
    for (int i = 0; i < 32; ++i) s2 += xs[i] * xs[i];
    const float rms = std::sqrt(s2 / 32);
    for (int i = 0; i < 32; ++i) w[i] = rms + std::fabs(xs[i]);  // favour large weights
    scales[j] = fit_scale_min(xs, w, L + 32 * j, &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  // Scales and mins become 6-bit multiples of two f16 super-scales.
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(y->scales, 0, sizeof y->scales);
  for (int j = 0; j < 8; ++j) {
    const int ls = std::min(63, nearest(inv_scale * scales[j]));
    const int lm = std::min(63, nearest(inv_min * mins[j]));
    if (j < 4) {
      y->scales[j] = static_cast<std::uint8_t>(ls);
      y->scales[j + 4] = static_cast<std::uint8_t>(lm);
    } else {
      y->scales[j + 4] = static_cast<std::uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
      y->scales[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
      y->scales[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
    }
  }
  y->d = f32_to_f16(max_scale / 63.0f);
  y->dmin = f32_to_f16(max_min / 63.0f);
  // Re-quantize against the scales as stored (rounded to 6 bits and f16).
  const float d = f16_to_f32(y->d), dmin = f16_to_f32(y->dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    q4_k_scale_min(y->scales, j, &sc, &m);
    const float ds = d * sc;
    if (ds == 0.0f) continue;
    const float dm = dmin * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] =
          static_cast<std::uint8_t>(std::clamp(nearest((x[32 * j + i] + dm) / ds), 0, 15));
  }
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l)
      y->qs[32 * g + l] = static_cast<std::uint8_t>(L[64 * g + l] | (L[64 * g + 32 + l] << 4));
}

// Q6_K sub-block fit: symmetric levels -32..31 for 16 values, weights x^2; tries 19 inverse
// scales around -32/max and keeps the one with the best least-squares fit (llama.cpp's
// make_qx_quants with rmse_type 1, written anew). Returns the scale; L gets level + 32.
float fit_scale_symmetric(const float* x, std::uint8_t* L) {
  constexpr int kN = 16, kMax = 32;
  float amax = 0, max = 0;
  for (int i = 0; i < kN; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-15f) {
    std::fill(L, L + kN, 0);
    return 0.0f;
  }
  auto level = [&](float iscale, int i) {
    return std::clamp(nearest(iscale * x[i]), -kMax, kMax - 1);
  };
  float iscale = -kMax / max, sxl = 0, sll = 0;
  for (int i = 0; i < kN; ++i) {
    const int l = level(iscale, i);
    L[i] = static_cast<std::uint8_t>(l + kMax);
    const float w = x[i] * x[i];
    sxl += w * x[i] * l;
    sll += w * l * l;
  }
  float scale = sll != 0 ? sxl / sll : 0.0f;
  float best = scale * sxl;
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    iscale = -(kMax + 0.1f * k) / max;
    sxl = sll = 0;
    for (int i = 0; i < kN; ++i) {
      const int l = level(iscale, i);
      const float w = x[i] * x[i];
      sxl += w * x[i] * l;
      sll += w * l * l;
    }
    if (sll > 0 && sxl * sxl > best * sll) {
      for (int i = 0; i < kN; ++i) L[i] = static_cast<std::uint8_t>(level(iscale, i) + kMax);
      scale = sxl / sll;
      best = scale * sxl;
    }
  }
  return scale;
}

void quantize_q6_k(const float* x, BlockQ6_K* y) {
  std::uint8_t L[256];
  float scales[16], max_scale = 0, max_abs = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = fit_scale_symmetric(x + 16 * j, L + 16 * j);
    if (std::fabs(scales[j]) > max_abs) {
      max_abs = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::memset(y, 0, sizeof *y);
  if (max_abs < 1e-15f) return;  // all zero: d = 0
  // The sub-block scale of largest magnitude maps to -128 (int8 scales, f16 super-scale).
  const float iscale = -128.0f / max_scale;
  y->d = f32_to_f16(1 / iscale);
  for (int j = 0; j < 16; ++j)
    y->scales[j] = static_cast<std::int8_t>(std::min(127, nearest(iscale * scales[j])));
  const float d = f16_to_f32(y->d);
  for (int j = 0; j < 16; ++j) {
    const float ds = d * y->scales[j];
    if (ds == 0.0f) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] =
          static_cast<std::uint8_t>(std::clamp(nearest(x[16 * j + i] / ds), -32, 31) + 32);
  }
  // Per half of 128: ql byte l holds elements l (low) and l + 64 (high), byte l + 32 holds l + 32
  // and l + 96; qh byte l holds the top 2 bits of l, l + 32, l + 64, l + 96.
  for (int h = 0; h < 2; ++h) {
    const std::uint8_t* q = L + 128 * h;
    std::uint8_t* ql = y->ql + 64 * h;
    std::uint8_t* qh = y->qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<std::uint8_t>((q[l] & 0x0F) | ((q[l + 64] & 0x0F) << 4));
      ql[l + 32] = static_cast<std::uint8_t>((q[l + 32] & 0x0F) | ((q[l + 96] & 0x0F) << 4));
      qh[l] = static_cast<std::uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                        ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
    }
  }
}

void dequantize_q4_k(const BlockQ4_K* b, float* y) {
  const float d = f16_to_f32(b->d), dmin = f16_to_f32(b->dmin);
  for (int g = 0; g < 4; ++g) {
    int sc0, m0, sc1, m1;
    q4_k_scale_min(b->scales, 2 * g, &sc0, &m0);
    q4_k_scale_min(b->scales, 2 * g + 1, &sc1, &m1);
    const float d0 = d * sc0, n0 = dmin * m0, d1 = d * sc1, n1 = dmin * m1;
    for (int l = 0; l < 32; ++l) {
      y[64 * g + l] = d0 * (b->qs[32 * g + l] & 0x0F) - n0;
      y[64 * g + 32 + l] = d1 * (b->qs[32 * g + l] >> 4) - n1;
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int h = 0; h < 2; ++h) {
    const std::uint8_t* ql = b->ql + 64 * h;
    const std::uint8_t* qh = b->qh + 32 * h;
    const std::int8_t* sc = b->scales + 8 * h;
    float* o = y + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      const int q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      o[l] = d * sc[s] * q1;
      o[l + 32] = d * sc[s + 2] * q2;
      o[l + 64] = d * sc[s + 4] * q3;
      o[l + 96] = d * sc[s + 6] * q4;
    }
  }
}

}  // namespace

namespace quant_detail {

void quantize_block_q8_0(const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = f32_to_f16(d);
  for (int j = 0; j < 32; ++j) y->qs[j] = static_cast<std::int8_t>(std::round(x[j] * id));
}

void quantize_block_q8_k(const float* x, BlockQ8_K* y) {
  // GGML maps the signed value of largest magnitude to -127 (symmetric range, first such value).
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 256; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    std::memset(y, 0, sizeof *y);
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < 256; ++j)
    y->qs[j] = static_cast<std::int8_t>(std::min(127, nearest(iscale * x[j])));
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += y->qs[16 * j + i];
    y->bsums[j] = static_cast<std::int16_t>(sum);
  }
  y->d = 1 / iscale;
}

}  // namespace quant_detail

void quantize_row(DType type, const float* x, std::uint8_t* out, std::size_t n) {
  if (!dtype_is_quantized(type))
    fail(
        "quantize_row: expected a block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, "
        "Q3_K, Q4_K, Q5_K, Q6_K, Q8_K), got {}",
        dtype_name(type));
  check_row(type, n, "quantize_row");
  const std::size_t nb = n / dtype_block_elems(type);
  const std::size_t bb = dtype_block_bytes(type);
  for (std::size_t b = 0; b < nb; ++b) {
    const float* xb = x + b * dtype_block_elems(type);
    std::uint8_t* ob = out + b * bb;
    // Build each block in an aligned local, then copy: `out` has no alignment guarantee.
    switch (type) {
      case DType::Q8_0: {
        BlockQ8_0 blk;
        quant_detail::quantize_block_q8_0(xb, &blk);
        std::memcpy(ob, &blk, sizeof blk);
        break;
      }
      case DType::Q4_0: {
        BlockQ4_0 blk;
        quantize_q4_0(xb, &blk);
        std::memcpy(ob, &blk, sizeof blk);
        break;
      }
      case DType::Q4_K: {
        BlockQ4_K blk;
        quantize_q4_k(xb, &blk);
        std::memcpy(ob, &blk, sizeof blk);
        break;
      }
      case DType::Q6_K: {
        BlockQ6_K blk;
        quantize_q6_k(xb, &blk);
        std::memcpy(ob, &blk, sizeof blk);
        break;
      }
      case DType::Q8_K: {
        BlockQ8_K blk;
        quant_detail::quantize_block_q8_k(xb, &blk);
        std::memcpy(ob, &blk, sizeof blk);
        break;
      }
      case DType::Q5_0:
      case DType::Q5_1:
      case DType::Q4_1:
      case DType::IQ4_NL:
        quant_detail::quantize_block_32(type, xb, ob);
        break;
      case DType::Q5_K:
      case DType::Q3_K:
      case DType::Q2_K:
        quant_detail::quantize_block_kq(type, xb, ob);
        break;
      default:
        break;
    }
  }
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
  const std::size_t nb = n / dtype_block_elems(type);
  const std::size_t bb = dtype_block_bytes(type);
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* ib = in + b * bb;
    float* y = out + b * dtype_block_elems(type);
    switch (type) {
      case DType::Q8_0: {
        BlockQ8_0 blk;
        std::memcpy(&blk, ib, sizeof blk);
        const float d = f16_to_f32(blk.d);
        for (int j = 0; j < 32; ++j) y[j] = blk.qs[j] * d;
        break;
      }
      case DType::Q4_0: {
        BlockQ4_0 blk;
        std::memcpy(&blk, ib, sizeof blk);
        const float d = f16_to_f32(blk.d);
        for (int j = 0; j < 16; ++j) {
          y[j] = ((blk.qs[j] & 0x0F) - 8) * d;
          y[j + 16] = ((blk.qs[j] >> 4) - 8) * d;
        }
        break;
      }
      case DType::Q4_K: {
        BlockQ4_K blk;
        std::memcpy(&blk, ib, sizeof blk);
        dequantize_q4_k(&blk, y);
        break;
      }
      case DType::Q6_K: {
        BlockQ6_K blk;
        std::memcpy(&blk, ib, sizeof blk);
        dequantize_q6_k(&blk, y);
        break;
      }
      case DType::Q8_K: {
        BlockQ8_K blk;
        std::memcpy(&blk, ib, sizeof blk);
        for (int j = 0; j < 256; ++j) y[j] = blk.d * blk.qs[j];
        break;
      }
      case DType::Q5_0:
      case DType::Q5_1:
      case DType::Q4_1:
      case DType::IQ4_NL:
        quant_detail::dequantize_block_32(type, ib, y);
        break;
      case DType::Q5_K:
      case DType::Q3_K:
      case DType::Q2_K:
        quant_detail::dequantize_block_kq(type, ib, y);
        break;
      default:
        break;
    }
  }
}

DType dot_activation_type(DType weight) {
  switch (weight) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q4_1:
    case DType::IQ4_NL:
      return DType::Q8_0;
    case DType::Q4_K:
    case DType::Q6_K:
    case DType::Q5_K:
    case DType::Q3_K:
    case DType::Q2_K:
      return DType::Q8_K;
    default:
      fail(
          "dot_activation_type: expected a weight block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
          "IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), got {}",
          dtype_name(weight));
  }
}

}  // namespace ls::kernels
