// The K-quant formats beyond Q4_K / Q6_K: Q5_K, Q3_K and Q2_K. Block -> float32 (the definition
// of each format) and float32 -> block with GGML's reference searches without an importance
// matrix (the scale/min grid search of make_qkx2_quants for Q5_K and Q2_K, the coordinate descent
// of make_q3_quants for Q3_K), written anew from their description.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

namespace ls::kernels::quant_detail {
namespace {

int nearest(float v) {  // round half to even, as GGML's nearest_int
  return static_cast<int>(std::nearbyint(v));
}

// Sub-block fit with a scale s >= 0 and an offset m <= 0 for levels 0..nmax: start from the
// min/max grid, then for k = 0..nstep the inverse scale (rmin + rdelta k + nmax) / (max - min),
// solve weighted least squares for s, m on its levels (m forced to 0 if it comes out positive:
// then s = sum w l x / sum w l^2) and keep it when its weighted error (squared, or absolute with
// mad) is smaller. Returns s; *neg_min = -m.
float fit_scale_min(int n, int nmax, const float* x, const float* w, std::uint8_t* L,
                    float* neg_min, float rmin, float rdelta, int nstep, bool mad) {
  float lo = x[0], hi = x[0], sw = w[0], swx = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sw += w[i];
    swx += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) {
    std::fill(L, L + n, 0);
    *neg_min = -lo;
    return 0.0f;
  }
  const auto err_of = [mad](float diff) { return mad ? std::fabs(diff) : diff * diff; };
  float iscale = nmax / (hi - lo);
  float scale = 1 / iscale, min = lo, best = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<std::uint8_t>(std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax));
    best += w[i] * err_of(scale * L[i] + min - x[i]);
  }
  std::uint8_t trial[32];
  for (int k = 0; k <= nstep; ++k) {
    iscale = (rmin + rdelta * k + nmax) / (hi - lo);
    float sl = 0, sll = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
      trial[i] = static_cast<std::uint8_t>(l);
      sl += w[i] * l;
      sll += w[i] * l * l;
      sxl += w[i] * l * x[i];
    }
    const float det = sw * sll - sl * sl;
    if (!(det > 0)) continue;
    float s = (sw * sxl - swx * sl) / det;
    float m = (sll * swx - sl * sxl) / det;
    if (m > 0) {
      m = 0;
      s = sxl / sll;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) err += w[i] * err_of(s * trial[i] + m - x[i]);
    if (err < best) {
      std::memcpy(L, trial, static_cast<std::size_t>(n));
      best = err;
      scale = s;
      min = m;
    }
  }
  *neg_min = -min;
  return scale;
}

// Q3_K sub-block fit, symmetric levels -nmax..nmax-1 with weights x^2: start from the grid where
// the signed value of largest magnitude maps to -nmax, then up to 5 passes that move each level
// to round(x * S_ll / S_xl) of the others when that raises S_xl^2 / S_ll. L gets level + nmax.
float fit_scale_q3(const float* x, std::int8_t* L) {
  constexpr int kN = 16, kMax = 4;
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
  const float iscale = -kMax / max;
  float sxl = 0, sll = 0;
  for (int i = 0; i < kN; ++i) {
    const int l = std::clamp(nearest(iscale * x[i]), -kMax, kMax - 1);
    L[i] = static_cast<std::int8_t>(l);
    const float w = x[i] * x[i];
    sxl += w * x[i] * l;
    sll += w * l * l;
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < kN; ++i) {
      const float w = x[i] * x[i];
      float slx = sxl - w * x[i] * L[i];
      if (slx <= 0) continue;
      float sl2 = sll - w * L[i] * L[i];
      const int nl = std::clamp(nearest(x[i] * sl2 / slx), -kMax, kMax - 1);
      if (nl == L[i]) continue;
      slx += w * x[i] * nl;
      sl2 += w * nl * nl;
      if (sl2 > 0 && slx * slx * sll > sxl * sxl * sl2) {
        L[i] = static_cast<std::int8_t>(nl);
        sxl = slx;
        sll = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < kN; ++i) L[i] = static_cast<std::int8_t>(L[i] + kMax);
  return sxl / sll;
}

// 6-bit scale and min of sub-block j of the 12 packed bytes (the Q4_K packing).
void pack_scale_min(std::uint8_t* s, int j, int ls, int lm) {
  if (j < 4) {
    s[j] = static_cast<std::uint8_t>(ls);
    s[j + 4] = static_cast<std::uint8_t>(lm);
  } else {
    s[j + 4] = static_cast<std::uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
    s[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
    s[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* y) {
  std::uint8_t L[256];
  float scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float s2 = 0, w[32];
    for (int i = 0; i < 32; ++i) s2 += xs[i] * xs[i];
    const float rms = std::sqrt(s2 / 32);
    for (int i = 0; i < 32; ++i) w[i] = rms + std::fabs(xs[i]);
    scales[j] = fit_scale_min(32, 31, xs, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(y->scales, 0, sizeof y->scales);
  for (int j = 0; j < 8; ++j)
    // As GGML: the rounded value is kept as a byte, then limited to 63.
    pack_scale_min(y->scales, j, std::min(63, nearest(inv_scale * scales[j]) & 0xFF),
                   std::min(63, nearest(inv_min * mins[j]) & 0xFF));
  y->d = f32_to_f16(max_scale / 63.0f);
  y->dmin = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(y->d), dmin = f16_to_f32(y->dmin);
  for (int j = 0; j < 8; ++j) {  // the levels again, under the scales as stored
    int sc, m;
    q4_k_scale_min(y->scales, j, &sc, &m);
    const float ds = d * sc;
    if (ds == 0.0f) continue;
    const float dm = dmin * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] =
          static_cast<std::uint8_t>(std::clamp(nearest((x[32 * j + i] + dm) / ds), 0, 31));
  }
  std::memset(y->qh, 0, sizeof y->qh);
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l) {
      const int a = L[64 * g + l], b = L[64 * g + 32 + l];
      y->qs[32 * g + l] = static_cast<std::uint8_t>((a & 0x0F) | ((b & 0x0F) << 4));
      y->qh[l] |= static_cast<std::uint8_t>(((a >> 4) << (2 * g)) | ((b >> 4) << (2 * g + 1)));
    }
}

// Levels 0..3 of element e = 128h + 32j + l in bits 2j of byte 32h + l (Q2_K and Q3_K).
void pack_2bit(const std::uint8_t* L, std::uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const std::uint8_t* q = L + 128 * h + l;
      qs[32 * h + l] = static_cast<std::uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
    }
}

int q3_k_scale(const std::uint8_t* s, int j) {  // 6-bit scale of sub-block j, minus 32
  const int lo = j < 8 ? s[j] & 0x0F : s[j - 8] >> 4;
  return (lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

void quantize_q3_k(const float* x, BlockQ3_K* y) {
  std::int8_t L[256];
  float scales[16], max_scale = 0, amax = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = fit_scale_q3(x + 16 * j, L + 16 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::memset(y, 0, sizeof *y);
  if (max_scale != 0.0f) {  // the sub-block scale of largest magnitude maps to -32
    const float iscale = -32.0f / max_scale;
    for (int j = 0; j < 16; ++j) {
      const int l = std::clamp(nearest(iscale * scales[j]), -32, 31) + 32;
      if (j < 8)
        y->scales[j] = static_cast<std::uint8_t>(l & 0x0F);
      else
        y->scales[j - 8] |= static_cast<std::uint8_t>((l & 0x0F) << 4);
      y->scales[8 + j % 4] |= static_cast<std::uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    y->d = f32_to_f16(1 / iscale);
  }
  const float d = f16_to_f32(y->d);
  for (int j = 0; j < 16; ++j) {
    const float ds = d * q3_k_scale(y->scales, j);
    if (ds == 0.0f) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<std::int8_t>(std::clamp(nearest(x[16 * j + i] / ds), -4, 3) + 4);
  }
  std::uint8_t low[256];
  for (int e = 0; e < 256; ++e) {
    if (L[e] > 3) y->hmask[e % 32] |= static_cast<std::uint8_t>(1 << (e / 32));
    low[e] = static_cast<std::uint8_t>(L[e] & 3);
  }
  pack_2bit(low, y->qs);
}

void quantize_q2_k(const float* x, BlockQ2_K* y) {
  std::uint8_t L[256];
  float scales[16], mins[16], max_scale = 0, max_min = 0;
  for (int j = 0; j < 16; ++j) {
    float w[16];
    for (int i = 0; i < 16; ++i) w[i] = std::fabs(x[16 * j + i]);
    scales[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  std::memset(y, 0, sizeof *y);
  if (max_scale > 0) {  // 4-bit scales and mins of two f16 super-scales
    const float iscale = 15.0f / max_scale;
    for (int j = 0; j < 16; ++j)
      y->scales[j] = static_cast<std::uint8_t>(nearest(iscale * scales[j]));
    y->d = f32_to_f16(max_scale / 15.0f);
  }
  if (max_min > 0) {
    const float iscale = 15.0f / max_min;
    for (int j = 0; j < 16; ++j)
      y->scales[j] |= static_cast<std::uint8_t>(nearest(iscale * mins[j]) << 4);
    y->dmin = f32_to_f16(max_min / 15.0f);
  }
  const float d = f16_to_f32(y->d), dmin = f16_to_f32(y->dmin);
  for (int j = 0; j < 16; ++j) {
    const float ds = d * (y->scales[j] & 0x0F);
    if (ds == 0.0f) continue;
    const float dm = dmin * (y->scales[j] >> 4);
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] =
          static_cast<std::uint8_t>(std::clamp(nearest((x[16 * j + i] + dm) / ds), 0, 3));
  }
  pack_2bit(L, y->qs);
}

void dequantize_q5_k(const std::uint8_t* b, float* y) {
  BlockQ5_K blk;
  std::memcpy(&blk, b, sizeof blk);
  const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    q4_k_scale_min(blk.scales, j, &sc, &m);
    const float ds = d * sc, dm = dmin * m;
    const int g = j / 2, h = j % 2;
    for (int l = 0; l < 32; ++l) {
      const int q = ((blk.qs[32 * g + l] >> (4 * h)) & 0x0F) | (((blk.qh[l] >> j) & 1) << 4);
      y[32 * j + l] = ds * q - dm;
    }
  }
}

// Element e = 128h + 32j + l: 2-bit level from byte 32h + l, bits 2j.
int level_2bit(const std::uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
}

void dequantize_q3_k(const std::uint8_t* b, float* y) {
  BlockQ3_K blk;
  std::memcpy(&blk, b, sizeof blk);
  const float d = f16_to_f32(blk.d);
  for (int e = 0; e < 256; ++e) {
    const float ds = d * q3_k_scale(blk.scales, e / 16);
    const int q = level_2bit(blk.qs, e) - (((blk.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
    y[e] = ds * q;
  }
}

void dequantize_q2_k(const std::uint8_t* b, float* y) {
  BlockQ2_K blk;
  std::memcpy(&blk, b, sizeof blk);
  const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
  for (int e = 0; e < 256; ++e) {
    const std::uint8_t s = blk.scales[e / 16];
    y[e] = d * (s & 0x0F) * level_2bit(blk.qs, e) - dmin * (s >> 4);
  }
}

}  // namespace

void quantize_block_kq(DType t, const float* x, std::uint8_t* out) {
  switch (t) {
    case DType::Q5_K: {
      BlockQ5_K blk;
      quantize_q5_k(x, &blk);
      std::memcpy(out, &blk, sizeof blk);
      return;
    }
    case DType::Q3_K: {
      BlockQ3_K blk;
      quantize_q3_k(x, &blk);
      std::memcpy(out, &blk, sizeof blk);
      return;
    }
    case DType::Q2_K: {
      BlockQ2_K blk;
      quantize_q2_k(x, &blk);
      std::memcpy(out, &blk, sizeof blk);
      return;
    }
    default:
      fail("quantize_block_kq: expected Q5_K, Q3_K or Q2_K, got {}", dtype_name(t));
  }
}

void dequantize_block_kq(DType t, const std::uint8_t* in, float* y) {
  switch (t) {
    case DType::Q5_K:
      return dequantize_q5_k(in, y);
    case DType::Q3_K:
      return dequantize_q3_k(in, y);
    case DType::Q2_K:
      return dequantize_q2_k(in, y);
    default:
      fail("dequantize_block_kq: expected Q5_K, Q3_K or Q2_K, got {}", dtype_name(t));
  }
}

}  // namespace ls::kernels::quant_detail
