// The k-quants, float32 -> block: GGML's reference searches without an importance matrix (the
// scale/min grid search of make_qkx2_quants for Q4_K, Q5_K and Q2_K, make_qx_quants for Q6_K, the
// coordinate descent of make_q3_quants for Q3_K), written anew from their description. The
// formats' definitions (block -> float32) are quant/kquants.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant/detail.h"

namespace ls::kernels::quant_detail {
namespace {

int nearest(float v) {  // round half to even, as GGML's nearest_int
  return static_cast<int>(std::nearbyint(v));
}

// Q4_K sub-block fit: find scale s >= 0 and offset m <= 0 minimizing sum_i w_i (s*L_i + m - x_i)^2
// with L_i in 0..15. Start from the min/max grid, then try 21 nearby grids (inverse scales
// (15 - 1 + 0.1k) / range) and solve the weighted least squares for s and m on each, keeping
// the best. This is the idea of llama.cpp's make_qkx2_quants (same parameters), written anew.
float fit_scale_min_q4_k(const float* x, const float* w, std::uint8_t* L, float* neg_min) {
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

void quantize_q4_k(const float* x, BlockQ4_K* y) {
  std::uint8_t L[256];
  float scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float s2 = 0, w[32];
    for (int i = 0; i < 32; ++i) s2 += xs[i] * xs[i];
    const float rms = std::sqrt(s2 / 32);
    for (int i = 0; i < 32; ++i) w[i] = rms + std::fabs(xs[i]);  // favour large weights
    scales[j] = fit_scale_min_q4_k(xs, w, L + 32 * j, &mins[j]);
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

}  // namespace

void quantize_row_q2_k(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ2_K blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_q2_k(x + 256 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void quantize_row_q3_k(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ3_K blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_q3_k(x + 256 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void quantize_row_q4_k(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ4_K blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_q4_k(x + 256 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void quantize_row_q5_k(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ5_K blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_q5_k(x + 256 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void quantize_row_q6_k(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ6_K blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_q6_k(x + 256 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

}  // namespace ls::kernels::quant_detail
