// The 32-element block formats: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL. Block -> float32 (the
// definition of each format), float32 -> block with GGML's reference rules (quantize_row_q8_0_ref
// etc.; IQ4_NL: the scale search llama-quantize runs without an importance matrix), so that files
// match llama.cpp's byte for byte, and the levels of the levels-model formats (shared by their
// dequantizers and scalar dot products, quant/blocks32_dot.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant/detail.h"

namespace ls::kernels::quant_detail {
namespace {

void quantize_q8_0(const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = f32_to_f16(d);
  for (int j = 0; j < 32; ++j) y->qs[j] = static_cast<std::int8_t>(std::round(x[j] * id));
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

std::uint16_t u16_at(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

std::uint32_t u32_at(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Byte j of qs holds element j (low nibble) and j + 16 (high nibble); bit e of qh (5-bit formats)
// is bit 4 of element e.
void nibbles(const std::uint8_t* qs, int q[32]) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0F;
    q[j + 16] = qs[j] >> 4;
  }
}

void add_fifth_bits(std::uint32_t qh, int q[32]) {
  for (int e = 0; e < 32; ++e) q[e] |= static_cast<int>((qh >> e) & 1u) << 4;
}

void pack_nibbles(const int q[32], std::uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<std::uint8_t>((q[j] & 0x0F) | (q[j + 16] << 4));
}

std::uint32_t pack_fifth_bits(const int q[32]) {
  std::uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) qh |= static_cast<std::uint32_t>((q[e] >> 4) & 1) << e;
  return qh;
}

// Q5_0: the signed value of largest magnitude maps to level -16 (d = max / -16); levels are
// trunc(x / d + 16.5), at most 31.
void quantize_q5_0(const float* x, std::uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int q[32];
  for (int j = 0; j < 32; ++j)
    q[j] = std::min(31, static_cast<int>(static_cast<std::int8_t>(x[j] * id + 16.5f)));
  const std::uint16_t d16 = f32_to_f16(d);
  const std::uint32_t qh = pack_fifth_bits(q);
  std::memcpy(out, &d16, 2);
  std::memcpy(out + 2, &qh, 4);
  pack_nibbles(q, out + 6);
}

// Q4_1 / Q5_1: min m = the smallest value, d = (max - min) / (2^bits - 1); levels are
// trunc((x - min) / d + 0.5) (Q4_1: at most 15).
void quantize_min_format(const float* x, std::uint8_t* out, bool five) {
  float min = x[0], max = x[0];
  for (int j = 1; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / (five ? 31 : 15);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int q[32];
  for (int j = 0; j < 32; ++j) {
    const float v = (x[j] - min) * id + 0.5f;
    q[j] = five ? static_cast<int>(static_cast<std::uint8_t>(v))
                : std::min(15, static_cast<int>(static_cast<std::int8_t>(v)));
  }
  const std::uint16_t d16 = f32_to_f16(d), m16 = f32_to_f16(min);
  std::memcpy(out, &d16, 2);
  std::memcpy(out + 2, &m16, 2);
  if (five) {
    const std::uint32_t qh = pack_fifth_bits(q);
    std::memcpy(out + 4, &qh, 4);
  }
  pack_nibbles(q, out + (five ? 8 : 4));
}

// The index of the table value nearest to v (ties to the larger one), by bisection as GGML does.
int nearest_iq4nl(float v) {
  const std::int8_t* k = kIq4nlValues;
  if (v <= k[0]) return 0;
  if (v >= k[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < k[mid])
      hi = mid;
    else
      lo = mid;
  }
  return v - k[hi - 1] < k[hi] - v ? hi - 1 : hi;
}

// IQ4_NL, as llama-quantize writes it without an importance matrix (weights x^2): start from the
// scale that maps the signed value of largest magnitude to +127, refine it by least squares on
// the chosen levels, then try the 15 inverse scales (k - 127) / max, k = -7..7, keeping the
// least-squares scale of the best one; the levels are finally the nearest under that float scale.
void quantize_iq4_nl(const float* x, std::uint8_t* out) {
  std::memset(out, 0, sizeof(BlockIQ4_NL));
  float amax = 0.0f, max = 0.0f, w[32];
  for (int j = 0; j < 32; ++j) {
    w[j] = x[j] * x[j];
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  float d = 0.0f;
  if (amax >= 1e-15f) {
    const float k0 = kIq4nlValues[0];
    d = -max / k0;
    float id = 1 / d, sqx = 0, sq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIq4nlValues[nearest_iq4nl(id * x[j])];
      sqx += w[j] * q * x[j];
      sq2 += w[j] * q * q;
    }
    d = sqx / sq2;
    float best = d * sqx;
    for (int t = -7; t <= 7; ++t) {
      id = (static_cast<float>(t) + k0) / max;
      sqx = sq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const float q = kIq4nlValues[nearest_iq4nl(id * x[j])];
        sqx += w[j] * q * x[j];
        sq2 += w[j] * q * q;
      }
      if (sq2 > 0 && sqx * sqx > best * sq2) {
        d = sqx / sq2;
        best = d * sqx;
      }
    }
  }
  const std::uint16_t d16 = f32_to_f16(d);
  std::memcpy(out, &d16, 2);
  const float id = d != 0.0f ? 1 / d : 0.0f;
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = nearest_iq4nl(id * x[j]);
  pack_nibbles(q, out + 2);
}

// value = d * level (Q5_0, IQ4_NL), d * level + m (Q4_1, Q5_1): one float product, one sum.
template <DType kType>
void dequantize_levels_block(const std::uint8_t* in, float* y) {
  int q[32];
  blocks32_levels<kType>(in, q);
  const float d = f16_to_f32(u16_at(in));
  if (kType == DType::Q5_1 || kType == DType::Q4_1) {
    const float m = f16_to_f32(u16_at(in + 2));
    for (int e = 0; e < 32; ++e) y[e] = static_cast<float>(q[e]) * d + m;
  } else {
    for (int e = 0; e < 32; ++e) y[e] = static_cast<float>(q[e]) * d;
  }
}

}  // namespace

template <DType kType>
void blocks32_levels(const std::uint8_t* b, int q[32]) {
  static_assert(kType == DType::Q5_0 || kType == DType::Q5_1 || kType == DType::Q4_1 ||
                kType == DType::IQ4_NL);
  if constexpr (kType == DType::Q5_0) {
    nibbles(b + 6, q);
    add_fifth_bits(u32_at(b + 2), q);
    for (int e = 0; e < 32; ++e) q[e] -= 16;
  } else if constexpr (kType == DType::Q5_1) {
    nibbles(b + 8, q);
    add_fifth_bits(u32_at(b + 4), q);
  } else if constexpr (kType == DType::Q4_1) {
    nibbles(b + 4, q);
  } else {
    nibbles(b + 2, q);
    for (int e = 0; e < 32; ++e) q[e] = kIq4nlValues[q[e]];
  }
}
template void blocks32_levels<DType::Q4_1>(const std::uint8_t* b, int q[32]);
template void blocks32_levels<DType::Q5_0>(const std::uint8_t* b, int q[32]);
template void blocks32_levels<DType::Q5_1>(const std::uint8_t* b, int q[32]);
template void blocks32_levels<DType::IQ4_NL>(const std::uint8_t* b, int q[32]);

// ---- Rows -------------------------------------------------------------------------------------

void quantize_row_q8_0(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ8_0 blk;  // built in an aligned local, then copied: `out` has no alignment guarantee
    quantize_q8_0(x + 32 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void dequantize_row_q8_0(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b, y += 32) {
    BlockQ8_0 blk;
    std::memcpy(&blk, in + b * sizeof blk, sizeof blk);
    const float d = f16_to_f32(blk.d);
    for (int j = 0; j < 32; ++j) y[j] = blk.qs[j] * d;
  }
}

void quantize_row_q4_0(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    BlockQ4_0 blk;
    quantize_q4_0(x + 32 * b, &blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

void dequantize_row_q4_0(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b, y += 32) {
    BlockQ4_0 blk;
    std::memcpy(&blk, in + b * sizeof blk, sizeof blk);
    const float d = f16_to_f32(blk.d);
    for (int j = 0; j < 16; ++j) {
      y[j] = ((blk.qs[j] & 0x0F) - 8) * d;
      y[j + 16] = ((blk.qs[j] >> 4) - 8) * d;
    }
  }
}

void quantize_row_q4_1(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b)
    quantize_min_format(x + 32 * b, out + b * sizeof(BlockQ4_1), false);
}

void dequantize_row_q4_1(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b)
    dequantize_levels_block<DType::Q4_1>(in + b * sizeof(BlockQ4_1), y + 32 * b);
}

void quantize_row_q5_0(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) quantize_q5_0(x + 32 * b, out + b * sizeof(BlockQ5_0));
}

void dequantize_row_q5_0(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b)
    dequantize_levels_block<DType::Q5_0>(in + b * sizeof(BlockQ5_0), y + 32 * b);
}

void quantize_row_q5_1(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b)
    quantize_min_format(x + 32 * b, out + b * sizeof(BlockQ5_1), true);
}

void dequantize_row_q5_1(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b)
    dequantize_levels_block<DType::Q5_1>(in + b * sizeof(BlockQ5_1), y + 32 * b);
}

void quantize_row_iq4_nl(const float* x, std::uint8_t* out, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) quantize_iq4_nl(x + 32 * b, out + b * sizeof(BlockIQ4_NL));
}

void dequantize_row_iq4_nl(const std::uint8_t* in, float* y, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b)
    dequantize_levels_block<DType::IQ4_NL>(in + b * sizeof(BlockIQ4_NL), y + 32 * b);
}

}  // namespace ls::kernels::quant_detail
