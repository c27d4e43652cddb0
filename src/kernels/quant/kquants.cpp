// The k-quant formats (256-element super-blocks: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) block -> float32,
// which is the definition of each format, and the Q8_K activations they dot against (GGML's
// reference quantizer: files and activations match llama.cpp's byte for byte). The weight
// quantizers (float32 -> block searches) are quant/kquants_quantize.cpp.
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

int q3_k_scale(const std::uint8_t* s, int j) {  // 6-bit scale of sub-block j, minus 32
  const int lo = j < 8 ? s[j] & 0x0F : s[j - 8] >> 4;
  return (lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
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

void quantize_row_q8_k(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ8_K blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_block_q8_k(x + 256 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void dequantize_row_q8_k(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b, y += 256) {
    BlockQ8_K blk;
    std::memcpy(&blk, in + b * sizeof blk, sizeof blk);
    for (int j = 0; j < 256; ++j) y[j] = blk.d * blk.qs[j];
  }
}

void dequantize_row_q4_k(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ4_K blk;
    std::memcpy(&blk, in + b * sizeof blk, sizeof blk);
    dequantize_q4_k(&blk, y + 256 * b);
  }
}

void dequantize_row_q6_k(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ6_K blk;
    std::memcpy(&blk, in + b * sizeof blk, sizeof blk);
    dequantize_q6_k(&blk, y + 256 * b);
  }
}

void dequantize_row_q5_k(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) dequantize_q5_k(in + b * sizeof(BlockQ5_K), y + 256 * b);
}

void dequantize_row_q3_k(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) dequantize_q3_k(in + b * sizeof(BlockQ3_K), y + 256 * b);
}

void dequantize_row_q2_k(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) dequantize_q2_k(in + b * sizeof(BlockQ2_K), y + 256 * b);
}

}  // namespace ls::kernels::quant_detail
